//! Every Rust snippet in `README.md` and `docs/` is code that builds: the
//! line before its fence says how.
//! - `<!-- compiled: async -->` / `<!-- compiled: sync -->`: host-test's
//!   build script compiles it against the host crate, in an `async fn` or
//!   a `fn` (host-test/build.rs).
//! - `<!-- verbatim: PATH -->`: it is PATH's own code, line for line
//!   (indentation aside), and PATH is built by the test command — the way
//!   component code, which only builds for wasm, is kept honest.

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("a readable docs directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Each ```` ```rust ```` block: its line, the marker line before it, its code.
fn rust_blocks(text: &str) -> Vec<(usize, String, Vec<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "```rust" {
            let marker = if i > 0 {
                lines[i - 1].trim().to_string()
            } else {
                String::new()
            };
            let mut end = i + 1;
            while end < lines.len() && lines[end].trim() != "```" {
                end += 1;
            }
            let code = lines[i + 1..end.min(lines.len())]
                .iter()
                .map(|l| l.to_string())
                .collect();
            blocks.push((i + 1, marker, code));
            i = end;
        }
        i += 1;
    }
    blocks
}

/// Whether `code`'s lines appear, one after another, in `source`
/// (each line compared without its leading and trailing space).
fn contains_lines(source: &str, code: &[String]) -> bool {
    let source: Vec<&str> = source.lines().map(str::trim).collect();
    let code: Vec<&str> = code.iter().map(|l| l.trim()).collect();
    !code.is_empty() && source.windows(code.len()).any(|w| w == code.as_slice())
}

fn check(document: &Path, problems: &mut Vec<String>) {
    let text = fs::read_to_string(document).expect("a readable document");
    let name = document
        .strip_prefix(root())
        .unwrap_or(document)
        .display()
        .to_string();
    for (line, marker, code) in rust_blocks(&text) {
        let place = format!("{name}:{line}");
        if marker == "<!-- compiled: async -->" || marker == "<!-- compiled: sync -->" {
            continue;
        }
        let Some(path) = marker
            .strip_prefix("<!-- verbatim: ")
            .and_then(|m| m.strip_suffix(" -->"))
        else {
            problems.push(format!(
                "{place}: a Rust snippet no test builds: mark it `<!-- compiled: async -->`, \
                 `<!-- compiled: sync -->` or `<!-- verbatim: PATH -->`"
            ));
            continue;
        };
        match fs::read_to_string(root().join(path)) {
            Err(e) => problems.push(format!("{place}: {path}: {e}")),
            Ok(source) if !contains_lines(&source, &code) => problems.push(format!(
                "{place}: the snippet is no longer {path}'s code, line for line"
            )),
            Ok(_) => {}
        }
    }
}

#[test]
fn every_rust_snippet_is_built() {
    let mut problems = Vec::new();
    for document in documents() {
        check(&document, &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn verbatim_lines_are_found_in_order_only() {
    let source = "fn a() {\n    let x = 1;\n    let y = 2;\n}\n";
    let code = |lines: &[&str]| lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(contains_lines(source, &code(&["let x = 1;", "let y = 2;"])));
    assert!(!contains_lines(
        source,
        &code(&["let y = 2;", "let x = 1;"])
    ));
    assert!(!contains_lines(source, &code(&[])));
}

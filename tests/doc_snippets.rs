//! Every Rust snippet in `README.md` and `docs/` is code that builds: the
//! line before its fence says how.
//! - `<!-- compiled: async -->` / `<!-- compiled: sync -->`: host-test's
//!   build script compiles it against the host crate, in an `async fn` or
//!   a `fn` (host-test/build.rs).
//! - `<!-- verbatim: PATH -->`: it is PATH's own code, line for line
//!   (indentation aside), and PATH is built by the test command — the way
//!   component code, which only builds for wasm, is kept honest.

#[path = "support/documents.rs"]
mod documents;

use documents::{rust_blocks, RustBlock};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
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
    for RustBlock { line, marker, code } in rust_blocks(&text) {
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
    for document in documents::documents(&root()) {
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

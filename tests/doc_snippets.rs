//! Every Rust snippet in `README.md` and `docs/` is code that builds: the
//! line before its fence says how.
//! - `<!-- compiled: async -->` / `<!-- compiled: sync -->`: host-test's
//!   build script compiles it against the host crate, in an `async fn` or
//!   a `fn` (host-test/build.rs).
//! - `<!-- verbatim: PATH -->`: it is PATH's own code, line for line
//!   (indentation aside), and PATH is built by the test command — the way
//!   component code, which only builds for wasm, is kept honest. A TOML or
//!   WIT block may carry the same marker, and is checked the same way.
//!
//! The shell blocks of the author's documents (docs/authors.md,
//! docs/gate.md, the README's blocks that run wkg or wac) are commands the
//! test command runs exactly as printed: each carries
//! `<!-- run: SCENARIO -->`, which scripts/doc_blocks.py extracts and
//! scripts/check_fetch_by_name.sh runs.

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

/// The scenarios scripts/doc_blocks.py runs blocks in.
const SCENARIOS: [&str; 4] = ["repository", "author", "gate", "gate-composed"];

/// TOML and WIT blocks marked verbatim are their file's lines.
fn check_verbatim_files(document: &Path, problems: &mut Vec<String>) {
    let text = fs::read_to_string(document).expect("a readable document");
    for language in ["toml", "wit"] {
        for block in documents::fenced_blocks(&text, language) {
            let Some(path) = block
                .marker
                .strip_prefix("<!-- verbatim: ")
                .and_then(|m| m.strip_suffix(" -->"))
            else {
                continue;
            };
            let place = format!("{}:{}", document.display(), block.line);
            match fs::read_to_string(root().join(path)) {
                Err(e) => problems.push(format!("{place}: {path}: {e}")),
                Ok(source) if !contains_lines(&source, &block.code) => problems.push(format!(
                    "{place}: the block is no longer {path}'s lines, in order"
                )),
                Ok(_) => {}
            }
        }
    }
}

/// Whether a document's shell blocks must all run (`run` markers): the
/// author's documents whole, and the README's blocks that fetch or plug.
fn must_run(document: &str, code: &[String]) -> bool {
    match document {
        "docs/authors.md" | "docs/gate.md" => true,
        "README.md" => code.iter().any(|l| {
            let l = l.trim_start();
            l.starts_with("wkg ") || l.starts_with("wac ")
        }),
        _ => false,
    }
}

fn check_shell_blocks(document: &Path, problems: &mut Vec<String>) -> usize {
    let text = fs::read_to_string(document).expect("a readable document");
    let name = document
        .strip_prefix(root())
        .unwrap_or(document)
        .display()
        .to_string();
    let mut marked = 0;
    for block in documents::fenced_blocks(&text, "sh") {
        let place = format!("{name}:{}", block.line);
        let scenario = block
            .marker
            .strip_prefix("<!-- run: ")
            .and_then(|m| m.strip_suffix(" -->"));
        match scenario {
            Some(s) if SCENARIOS.contains(&s) => marked += 1,
            Some(s) => problems.push(format!(
                "{place}: unknown scenario `{s}` (scripts/doc_blocks.py runs {SCENARIOS:?})"
            )),
            None if must_run(&name, &block.code) => problems.push(format!(
                "{place}: a shell block of the author's documents that no test runs: \
                 mark it `<!-- run: SCENARIO -->` (scripts/doc_blocks.py)"
            )),
            None => {}
        }
    }
    marked
}

#[test]
fn every_author_command_is_run() {
    let mut problems = Vec::new();
    let mut marked = 0;
    for document in documents::documents(&root()) {
        check_verbatim_files(&document, &mut problems);
        marked += check_shell_blocks(&document, &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // authors.md's three, the README's one, the gate's four.
    assert!(marked >= 8, "only {marked} shell blocks are marked to run");
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

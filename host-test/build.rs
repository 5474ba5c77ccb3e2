//! The Rust snippets a reader copies from `README.md` and `docs/` are
//! compiled with the integration suite: each block marked
//! `<!-- compiled: async -->` or `<!-- compiled: sync -->` on the line
//! before its fence becomes the body of a function in
//! `$OUT_DIR/doc_snippets.rs`, which `tests/integration/doc_snippets.rs`
//! includes. A snippet that no longer compiles against the host crate
//! breaks the build, inside a module named for the document and line.
//! (`tests/doc_snippets.rs` in the root crate checks that every block is
//! marked, and that a `<!-- verbatim: PATH -->` block is PATH's code.)

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    println!("cargo:rerun-if-changed=../README.md");
    println!("cargo:rerun-if-changed=../docs");
    let mut out = String::new();
    for document in documents(&root) {
        let text = fs::read_to_string(&document).expect("a readable document");
        let name = document
            .strip_prefix(&root)
            .expect("under the root")
            .display()
            .to_string();
        for snippet in compiled_snippets(&text) {
            write_snippet(&mut out, &name, &snippet);
        }
    }
    let path = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("doc_snippets.rs");
    fs::write(path, out).expect("write doc_snippets.rs");
}

/// `README.md` and every `.md` under `docs/`, sorted.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
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

struct Snippet {
    /// The fence's line, 1-based.
    line: usize,
    asynchronous: bool,
    code: String,
}

fn compiled_snippets(text: &str) -> Vec<Snippet> {
    let lines: Vec<&str> = text.lines().collect();
    let mut snippets = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let marker = lines[i].trim();
        let asynchronous = match marker {
            "<!-- compiled: async -->" => true,
            "<!-- compiled: sync -->" => false,
            _ => {
                i += 1;
                continue;
            }
        };
        let fence = i + 1;
        let mut end = fence + 1;
        while end < lines.len() && lines[end].trim() != "```" {
            end += 1;
        }
        snippets.push(Snippet {
            line: fence + 1,
            asynchronous,
            code: lines[fence + 1..end.min(lines.len())].join("\n"),
        });
        i = end;
    }
    snippets
}

/// One function per snippet, taking what the documents' prose names
/// (`runtime`, `client`, `config`, `options`, `body`) as arguments.
fn write_snippet(out: &mut String, document: &str, snippet: &Snippet) {
    let module: String = format!("{document}_{}", snippet.line)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    let (keyword, client) = if snippet.asynchronous {
        ("async fn", "s3_lease_host::Client")
    } else {
        ("fn", "s3_lease_host::blocking::Client")
    };
    writeln!(out, "/// {document}, line {}", snippet.line).unwrap();
    writeln!(out, "#[allow(unused, unreachable_code, clippy::all)]").unwrap();
    writeln!(out, "mod {module} {{").unwrap();
    writeln!(out, "    use super::placeholders::*;").unwrap();
    writeln!(
        out,
        "    pub {keyword} snippet(runtime: s3_lease_host::Runtime, client: {client}, \
         config: s3_lease_host::StoreConfig, options: s3_lease_host::AcquireOptions, \
         body: Vec<u8>) -> anyhow::Result<()> {{"
    )
    .unwrap();
    writeln!(out, "{}", snippet.code).unwrap();
    writeln!(out, "        Ok(())\n    }}\n}}").unwrap();
}

//! The Rust snippets a reader copies from `README.md` and `docs/` are
//! compiled with the integration suite: each block marked
//! `<!-- compiled: async -->` or `<!-- compiled: sync -->` on the line
//! before its fence becomes the body of a function in
//! `$OUT_DIR/doc_snippets.rs`, which `tests/integration/doc_snippets.rs`
//! includes. A snippet that no longer compiles against the host crate
//! breaks the build, inside a module named for the document and line.
//! (`tests/doc_snippets.rs` in the root crate checks that every block is
//! marked, and that a `<!-- verbatim: PATH -->` block is PATH's code.)

#[path = "../tests/support/documents.rs"]
mod documents;

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    println!("cargo:rerun-if-changed=../README.md");
    println!("cargo:rerun-if-changed=../docs");
    println!("cargo:rerun-if-changed=../tests/support/documents.rs");
    let mut out = String::new();
    for document in documents::documents(&root) {
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

/// A snippet to compile: a block marked `compiled`.
struct Snippet {
    /// The fence's line, 1-based.
    line: usize,
    asynchronous: bool,
    code: String,
}

fn compiled_snippets(text: &str) -> Vec<Snippet> {
    documents::rust_blocks(text)
        .into_iter()
        .filter_map(|block| {
            let asynchronous = match block.marker.as_str() {
                "<!-- compiled: async -->" => true,
                "<!-- compiled: sync -->" => false,
                _ => return None,
            };
            Some(Snippet {
                line: block.line,
                asynchronous,
                code: block.code.join("\n"),
            })
        })
        .collect()
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

//! The reader's documents and their Rust snippets, as the documentation
//! checks see them: shared by `tests/doc_links.rs`, `tests/doc_snippets.rs`
//! and host-test's build script (which compiles the snippets), each
//! including this file by path.

// Each includer uses part of it.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

/// `README.md` and every `.md` file under `docs/`, below `root`, sorted.
pub fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
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

/// A fenced block of a document (a ```` ```rust ```` one, or another
/// language's: `fenced_blocks`).
pub struct RustBlock {
    /// The opening fence's line, 1-based.
    pub line: usize,
    /// The line before the fence, trimmed: where a block says how it is
    /// built (`<!-- compiled: async -->`, `<!-- verbatim: PATH -->`).
    pub marker: String,
    pub code: Vec<String>,
}

pub fn rust_blocks(text: &str) -> Vec<RustBlock> {
    fenced_blocks(text, "rust")
}

/// The blocks fenced as ```` ```LANGUAGE ```` (`sh`, `toml`, `wit`, ...),
/// with the same fields as a Rust block's.
pub fn fenced_blocks(text: &str, language: &str) -> Vec<RustBlock> {
    let fence = format!("```{language}");
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == fence {
            let marker = if i > 0 { lines[i - 1].trim() } else { "" };
            let mut end = i + 1;
            while end < lines.len() && lines[end].trim() != "```" {
                end += 1;
            }
            blocks.push(RustBlock {
                line: i + 1,
                marker: marker.to_string(),
                code: lines[i + 1..end.min(lines.len())]
                    .iter()
                    .map(|l| l.to_string())
                    .collect(),
            });
            i = end;
        }
        i += 1;
    }
    blocks
}

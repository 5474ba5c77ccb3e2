//! The host crate's floor plan, read from its sources: every `crate::…`
//! path (grouped imports expanded, `super::` resolved, names re-exported
//! by `lib.rs` followed to the module that defines them; unit-test modules
//! and comments left out). No two modules import each other, directly or
//! around a circle; no module imports one on a floor above its own; the
//! engine (`engine/`: wasmtime, the component, its HTTP) imports nothing
//! outside itself; and nothing but `lib.rs` stands on `lib.rs`.
//!
//! The floors, bottom up:
//! 1. `engine::*`: runs the component; knows nothing of the crate's API.
//! 2. the vocabulary: the public data types, the error, the stats.
//! 3. the boundary: configuration, credentials, and the one typed seam
//!    into the component (`component`: the calls in the crate's types, the
//!    only module that speaks the generated bindings). A module this test
//!    does not name stands here.
//! 4. the shared room: the instance pool and the one call path (with the
//!    credential refresher and the store's name) that every API piece uses.
//! 5. the API: client, leases, their scheduler, electors, close, blocking.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const VOCABULARY: &[&str] = &["types", "error", "stats", "random"];
const SHARED: &[&str] = &["pool", "calls", "held", "observe"];
const API: &[&str] = &[
    "client",
    "acquiring",
    "lease",
    "keeper",
    "elector",
    "closing",
    "blocking_impl",
];

/// The floor of a node (see the module's doc), 1 at the bottom.
fn floor(node: &str) -> u8 {
    if node.starts_with("engine::") || node == "engine" {
        1
    } else if VOCABULARY.contains(&node) {
        2
    } else if SHARED.contains(&node) {
        4
    } else if API.contains(&node) {
        5
    } else if node == "lib" {
        6
    } else {
        3
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code, comments and test-only items dropped: an inline
/// `#[cfg(test)] mod … {` and all after it (unit tests come last), and the
/// line after any other `#[cfg(test)]` (`mod tests;`, a test-only import).
fn code(text: &str) -> String {
    let mut out = Vec::new();
    let mut lines = text.lines().map(|l| l.split("//").next().unwrap_or(""));
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            match lines.next() {
                Some(next) if next.trim_start().starts_with("mod ") && next.contains('{') => break,
                _ => continue,
            }
        }
        out.push(line);
    }
    out.join("\n")
}

/// The module a file is, as a path (`engine::raw`, `client`,
/// `credentials::refresh`; `engine/mod.rs` is `engine`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The node a module path stands for: `engine::<module>` for the
/// engine's, the top-level module for every other.
fn node_of(path: &[String]) -> Option<String> {
    match path {
        [engine, module, ..] if engine == "engine" => Some(format!("engine::{module}")),
        [top, ..] => Some(top.clone()),
        [] => None,
    }
}

/// Expands a use tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    match tree.find('{') {
        None => {
            if !tree.is_empty() {
                out.push(format!("{prefix}{tree}"));
            }
        }
        Some(open) => {
            let head = &tree[..open];
            let close = tree.rfind('}').unwrap_or(tree.len());
            let inner = &tree[open + 1..close];
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&inner[start..i], &format!("{prefix}{head}"), out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            expand(&inner[start..], &format!("{prefix}{head}"), out);
        }
    }
}

/// Every path after `crate::` or `super::` in `code`, groups expanded,
/// `super::` resolved against `module`.
fn crate_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (marker, base) in [
        ("crate::", Vec::new()),
        ("super::", module[..module.len().saturating_sub(1)].to_vec()),
    ] {
        let mut rest = code;
        while let Some(at) = rest.find(marker) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + marker.len()..];
            // `$crate::`, `super::super::` and the like are not ours to read.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
                continue;
            }
            let mut depth = 0;
            let end = rest
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '{' => depth += 1,
                        '}' if depth > 0 => depth -= 1,
                        _ => {}
                    }
                    depth == 0 && !(c.is_alphanumeric() || matches!(c, '_' | ':' | '{' | '}'))
                })
                .map_or(rest.len(), |(i, _)| i);
            // Inside a group the tree may span lines: take up to its brace.
            let tree = if rest[..end].contains('{') && !rest[..end].contains('}') {
                let close = rest.find('}').map_or(rest.len(), |i| i + 1);
                &rest[..close]
            } else {
                &rest[..end]
            };
            let mut paths = Vec::new();
            expand(&tree.replace(['\n', ' '], ""), "", &mut paths);
            for path in paths {
                let mut full = base.clone();
                full.extend(
                    path.split("::")
                        .filter(|p| !p.is_empty() && *p != "self")
                        .map(str::to_string),
                );
                out.push(full);
            }
        }
    }
    out
}

/// What `lib.rs` re-exports: a name, and the path it stands for.
fn reexports(lib: &str) -> BTreeMap<String, Vec<String>> {
    let mut names = BTreeMap::new();
    for path in crate_paths(
        &code(lib)
            .replace("pub use crate::", "pub use ")
            .replace("pub(crate) use ", "pub use ")
            .replace("pub use ", "pub use crate::"),
        &[],
    ) {
        if let Some(name) = path.last() {
            names.insert(name.clone(), path.clone());
        }
    }
    names
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    let names = reexports(&lib);
    let modules: BTreeSet<Vec<String>> = files
        .iter()
        .map(|f| module_of(f.strip_prefix(&src).unwrap()))
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_of(file.strip_prefix(&src).unwrap());
        if module == ["lib"] || module.iter().any(|p| p == "tests") {
            continue;
        }
        let from = node_of(&module).unwrap();
        let text = fs::read_to_string(file).unwrap();
        for path in crate_paths(&code(&text), &module) {
            // A re-exported name stands for the module that defines it; a
            // name of lib.rs's own (not a module, not re-exported) is lib.
            let path = match path.split_first() {
                Some((first, rest)) if !modules.iter().any(|m| m.first() == Some(first)) => {
                    let mut resolved = names
                        .get(first)
                        .cloned()
                        .unwrap_or_else(|| vec!["lib".to_string()]);
                    resolved.extend(rest.iter().cloned());
                    resolved
                }
                _ => path,
            };
            if let Some(to) = node_of(&path).filter(|to| *to != from) {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
        edges.entry(from).or_default();
    }
    edges
}

/// A circle of imports, if there is one.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|start| visit(start, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_of_the_host_imports_around_a_circle() {
    let edges = graph();
    assert!(edges.len() > 15, "too few modules read: {edges:?}");
    if let Some(cycle) = find_cycle(&edges) {
        panic!("an import cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn no_module_of_the_host_imports_one_on_a_floor_above_it() {
    let edges = graph();
    let mut upward = Vec::new();
    for (from, tos) in &edges {
        for to in tos {
            if to == "lib" {
                upward.push(format!("{from} -> lib (a name of lib.rs's own)"));
            } else if from.starts_with("engine::") && !to.starts_with("engine::") {
                upward.push(format!("{from} -> {to} (the engine stands on itself)"));
            } else if floor(to) > floor(from) {
                upward.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run up:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_checker_sees_circles_groups_and_super() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    edges.entry("c".into()).or_default().insert("a".into());
    assert!(find_cycle(&edges).is_some());
    edges.get_mut("c").unwrap().clear();
    assert!(find_cycle(&edges).is_none());
    let module = vec!["engine".to_string(), "runtime".to_string()];
    let paths = crate_paths(
        "use crate::{error::Error, engine::{raw::Raw, state}};\n\
         use super::http::{\n    A,\n    B,\n};\nlet x = crate::Client::new();\n\
         let y = $crate::z;",
        &module,
    );
    let nodes: Vec<String> = paths.iter().filter_map(|p| node_of(p)).collect();
    assert_eq!(
        nodes,
        [
            "error",
            "engine::raw",
            "engine::state",
            "Client",
            "engine::http",
            "engine::http"
        ]
    );
    assert_eq!(
        code(
            "#[cfg(test)]\nmod tests;\nuse crate::a;\n#[cfg(test)]\nmod tests {\nuse crate::b;\n}"
        ),
        "use crate::a;"
    );
    assert_eq!(
        reexports("pub use client::{Client, ClientOptions};\npub use engine::raw::RawInstance;")
            ["RawInstance"],
        ["engine", "raw", "RawInstance"]
    );
}

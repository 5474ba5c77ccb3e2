//! The core reads bottom-up: no two modules of `src/` import each other,
//! directly or around a circle, and neither strategy uses the other. Read
//! from the sources (every `crate::…` path, grouped imports included, test
//! modules, the stores' test models and the test-only `testing` tree left
//! out), so a new import that
//! closes a circle fails here, not in a reviewer's head.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Nodes: top-level modules, and each strategy (`strategy::epoch`,
/// `strategy::single_object`) on its own.
fn node_of(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    match parts.as_slice() {
        ["strategy", strategy, ..] => Some(format!("strategy::{strategy}")),
        [top, ..] if !matches!(*top, "prelude" | "bindings" | "testing" | "self" | "super") => {
            Some((*top).to_string())
        }
        _ => None,
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

/// The file's code before its unit tests, comments dropped.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module path named after `crate::`, `{a, b::c}` groups expanded.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let item = item.trim();
                if !item.is_empty() {
                    out.push(item.to_string());
                }
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            out.push(rest[..end].to_string());
        }
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().with_extension("");
        let module = rel.to_string_lossy().replace('/', "::");
        // A store's test model (`stores::<store>::model`, built with the
        // `testing` feature only) is test support, as `testing` is.
        let is_test = module
            .split("::")
            .any(|p| p == "tests" || p.starts_with("test") || p == "model");
        let Some(from) = node_of(&module).filter(|_| !is_test) else {
            continue;
        };
        if from == "lib" || from == "main" {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        for path in crate_paths(&code(&text)) {
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
fn no_module_of_the_core_imports_around_a_circle() {
    let edges = graph();
    assert!(edges.len() > 20, "too few modules read: {edges:?}");
    if let Some(cycle) = find_cycle(&edges) {
        panic!("an import cycle: {}", cycle.join(" -> "));
    }
}

#[test]
fn neither_strategy_uses_the_other_and_the_error_enum_is_below_them() {
    let edges = graph();
    let uses = |a: &str, b: &str| edges.get(a).is_some_and(|e| e.contains(b));
    assert!(!uses("strategy::epoch", "strategy::single_object"));
    assert!(!uses("strategy::single_object", "strategy::epoch"));
    for low in [
        "error",
        "lock_object",
        "capability",
        "limits",
        "config",
        "lease",
    ] {
        for high in [
            "protocol",
            "strategy::epoch",
            "strategy::single_object",
            "client",
        ] {
            assert!(!uses(low, high), "{low} imports {high}, a layer above it");
        }
    }
}

#[test]
fn the_checker_sees_a_circle() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    edges.entry("c".into()).or_default().insert("a".into());
    assert!(find_cycle(&edges).is_some());
    edges.get_mut("c").unwrap().clear();
    assert!(find_cycle(&edges).is_none());
    assert_eq!(
        crate_paths("use crate::{error::Error, s3::{Method}};\nlet x = crate::lease::Lease;"),
        vec!["error::Error", "s3::{Method", "lease::Lease"]
    );
}

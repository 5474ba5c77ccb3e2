//! What `wac plug` made: one component, WASI imports only.

use super::composed;
use compose_test::tools;
use host_test::instance::component_path;
use wasmtime::component::Component;
use wasmtime::Engine;

#[test]
fn the_composed_function_imports_only_wasi_and_exports_the_handler() {
    let composed = composed();
    let engine = Engine::default();
    let component = Component::from_file(&engine, &composed.path).expect("a valid component");
    let ty = component.component_type();
    let imports: Vec<String> = ty.imports(&engine).map(|(n, _)| n.to_string()).collect();
    let exports: Vec<String> = ty.exports(&engine).map(|(n, _)| n.to_string()).collect();
    for name in &imports {
        assert!(
            name.starts_with("wasi:"),
            "non-WASI import {name}: {imports:?}"
        );
    }
    for needed in ["wasi:http/outgoing-handler@", "wasi:cli/environment@"] {
        assert!(imports.iter().any(|i| i.starts_with(needed)), "{imports:?}");
    }
    assert_eq!(exports.len(), 1, "{exports:?}");
    assert!(
        exports[0].starts_with("wasi:http/incoming-handler@0.2."),
        "{exports:?}"
    );
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    println!(
        "composed: {} bytes (function {} + s3-lease {}); imports: {imports:?}",
        composed.bytes,
        size(&tools::http_function()),
        size(&component_path()),
    );
}

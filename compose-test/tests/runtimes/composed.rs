//! What `wac plug` made, for each build: one component, WASI imports only,
//! exporting that WASI version's HTTP handler.

use super::{composed, Build};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

/// Checks `build`'s composed component and returns its imports.
fn imports_only_wasi_and_exports_the_handler(
    build: Build,
    needed: &[&str],
    handler: &str,
) -> Vec<String> {
    let composed = composed(build);
    let mut config = Config::new();
    config.wasm_component_model_async(true);
    let engine = Engine::new(&config).expect("engine");
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
    for needed in needed {
        assert!(imports.iter().any(|i| i.starts_with(needed)), "{imports:?}");
    }
    assert_eq!(exports.len(), 1, "{exports:?}");
    assert!(exports[0].starts_with(handler), "{exports:?}");
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    println!(
        "composed ({}): {} bytes (function {} + s3-lease {}); imports: {imports:?}",
        build.name(),
        composed.bytes,
        size(&composed.function),
        size(&composed.component),
    );
    imports
}

#[test]
fn the_composed_function_imports_only_wasi_and_exports_the_handler() {
    let _ = imports_only_wasi_and_exports_the_handler(
        Build::Wasip2,
        &[
            "wasi:http/outgoing-handler@0.2.",
            "wasi:cli/environment@0.2.",
        ],
        "wasi:http/incoming-handler@0.2.",
    );
}

#[test]
fn the_composed_wasi_0_3_function_takes_http_clocks_and_randomness_from_wasi_0_3() {
    let imports = imports_only_wasi_and_exports_the_handler(
        Build::Wasip3,
        &["wasi:http/client@0.3.0", "wasi:cli/environment@0.3.0"],
        "wasi:http/handler@0.3.0",
    );
    // HTTP, clocks and randomness are WASI 0.3's alone. Rust's std for
    // wasm32-wasip2 (the function is a std crate; s3-lease is no_std)
    // still imports WASI 0.2's environment, stdio, exit and streams;
    // `wasmtime serve` supplies them beside 0.3's (measured here: served).
    for name in imports.iter().filter(|n| !n.ends_with("@0.3.0")) {
        assert!(
            ["wasi:cli/", "wasi:io/"]
                .iter()
                .any(|p| name.starts_with(p)),
            "a WASI 0.2 import the 0.3 build does not expect: {name}"
        );
    }
}

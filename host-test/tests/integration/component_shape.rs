//! The built component is what the contract says: it exports the lease
//! interface and imports nothing but WASI.

use super::harness;
use host_test::instance::component_path;
use wasmtime::component::Component;

#[test]
fn exports_the_lease_interface_and_imports_only_wasi() {
    let engine = harness().engine();
    let component = Component::from_file(engine, component_path()).expect("load");
    let ty = component.component_type();
    let imports: Vec<String> = ty
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    let exports: Vec<String> = ty
        .exports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    assert!(!imports.is_empty());
    for name in &imports {
        assert!(
            name.starts_with("wasi:"),
            "non-WASI import {name}; all: {imports:?}"
        );
    }
    assert!(
        imports
            .iter()
            .any(|n| n.starts_with("wasi:http/outgoing-handler@0.2")),
        "{imports:?}"
    );
    assert!(
        exports.contains(&"s3-lease:lease/lease@0.3.0".to_string()),
        "{exports:?}"
    );
    assert!(
        exports.contains(&"s3-lease:lease/types@0.3.0".to_string()),
        "{exports:?}"
    );
    let size = std::fs::metadata(component_path())
        .expect("component file")
        .len();
    println!("component: {size} bytes; imports: {imports:?}; exports: {exports:?}");
}

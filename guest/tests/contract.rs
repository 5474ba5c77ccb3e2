//! The crate is versioned with the contract its bindings are made from:
//! `s3-lease-guest` X.Y.Z imports `s3-lease:lease@X.Y.Z`, so an author
//! who picks the crate's version picks the contract's, and the component
//! fetched by that version (`s3-lease:lock@X.Y.Z`) fills its import.

use std::fs;
use std::path::Path;

fn repository_file(path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The version in `package s3-lease:lease@VERSION;`.
fn contract_version() -> String {
    repository_file("wit/lease.wit")
        .lines()
        .find_map(|line| {
            line.trim()
                .strip_prefix("package s3-lease:lease@")?
                .strip_suffix(';')
                .map(str::to_string)
        })
        .expect("wit/lease.wit names its package and version")
}

#[test]
fn the_crate_is_versioned_with_the_contract() {
    assert_eq!(
        env!("CARGO_PKG_VERSION"),
        contract_version(),
        "guest/Cargo.toml's version is not the contract's (wit/lease.wit): \
         the crate is published under the contract's version"
    );
}

#[test]
fn the_bindings_import_the_contract_at_its_version() {
    let bindings = repository_file("guest/src/bindings.rs");
    let version = contract_version();
    let imports: Vec<&str> = bindings
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("import s3-lease:lease/"))
        .collect();
    assert_eq!(imports.len(), 2, "one import per build: {imports:?}");
    for import in imports {
        assert!(
            import.ends_with(&format!("@{version};")),
            "{import} is not the contract's version {version}"
        );
    }
}

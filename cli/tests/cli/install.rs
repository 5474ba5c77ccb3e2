//! One-step install: a binary built without `S3LEASE_COMPONENT` builds and
//! embeds the component itself (`host/build.rs`), byte for byte the one
//! `scripts/setup.sh` builds.

use crate::support::bin;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::process::Command;

/// `s3-lease version --json`, loading what the binary carries (no
/// `S3LEASE_COMPONENT` at run time).
fn version() -> Value {
    let out = Command::new(bin())
        .args(["version", "--json"])
        .env_remove("S3LEASE_COMPONENT")
        .output()
        .expect("run s3-lease version");
    assert!(out.status.success(), "s3-lease version failed: {out:?}");
    serde_json::from_slice(&out.stdout).expect("version --json prints JSON")
}

#[test]
fn version_names_the_component_the_binary_carries() {
    let v = version();
    let component = &v["component"];
    assert_eq!(component["source"], "embedded");
    assert!(component["bytes"].as_u64().unwrap_or(0) > 100_000, "{v}");
    let sha = component["sha256"].as_str().unwrap_or_default();
    assert!(
        sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
        "{v}"
    );
    assert!(component["origin"].is_string(), "{v}");
    // The command line carries the WASI 0.2 build, and says so.
    assert_eq!(component["build"], "WASI 0.2", "{v}");
}

/// `S3LEASE_COMPONENT` may name the WASI 0.3 build: the command line runs
/// it too (the host loads either), and `version` says which it loaded.
#[test]
fn version_says_which_build_s3lease_component_names() {
    let p3 = host_test::instance::component_p3_path();
    let out = Command::new(bin())
        .args(["version", "--json"])
        .env("S3LEASE_COMPONENT", &p3)
        .output()
        .expect("run s3-lease version");
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["component"]["build"], "WASI 0.3", "{v}");
}

/// Run by `scripts/test.sh` after building the binary without
/// `S3LEASE_COMPONENT`, with `S3LEASE_SETUP_COMPONENT` naming setup.sh's file.
#[test]
#[ignore = "needs a binary built without S3LEASE_COMPONENT (scripts/test.sh runs it)"]
fn a_binary_built_in_one_step_embeds_setup_shs_component() {
    let setup = std::env::var_os("S3LEASE_SETUP_COMPONENT")
        .expect("S3LEASE_SETUP_COMPONENT names the component setup.sh built");
    let expected = std::fs::read(&setup).expect("read setup.sh's component");
    let v = version();
    let origin = v["component"]["origin"].as_str().unwrap_or_default();
    assert!(
        origin.starts_with("built here, shrunk"),
        "the binary did not build (and shrink) its own component: {v}"
    );
    let sha: String = Sha256::digest(&expected)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(v["component"]["sha256"], sha.as_str(), "{v}");
    assert_eq!(v["component"]["bytes"], expected.len());
    println!(
        "one-step install: the embedded component is setup.sh's ({} bytes, sha256 {sha})",
        expected.len()
    );
}

//! Where the tools and built components are. `scripts/setup.sh` installs
//! and builds all of them; each can be overridden by an environment variable.

use std::path::{Path, PathBuf};

pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The path in `var`, else `relative` to the workspace root; it must exist.
fn existing(var: &str, relative: &str, what: &str) -> PathBuf {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(relative));
    assert!(
        path.exists(),
        "{what} not found at {} (set {var}, or run scripts/setup.sh, which installs and builds it)",
        path.display()
    );
    path
}

/// wac-cli, installed by setup.sh into the project's `.tools/`.
pub fn wac() -> PathBuf {
    existing("S3LEASE_WAC", ".tools/bin/wac", "wac (wac-cli)")
}

/// The example function, built by setup.sh like the s3-lease component.
pub fn http_function() -> PathBuf {
    existing(
        "S3LEASE_HTTP_FUNCTION",
        "target/wasm32-wasip2/release/http_function.wasm",
        "the http-function component",
    )
}

/// The example function's WASI 0.3 build (`--features wasip3`), copied
/// aside by setup.sh.
pub fn http_function_p3() -> PathBuf {
    existing(
        "S3LEASE_HTTP_FUNCTION_P3",
        "target/wasm32-wasip2/release/http_function_p3.wasm",
        "the http-function component's WASI 0.3 build",
    )
}

/// The lease gate (`gate/`) and the function behind it in its tests
/// (`examples/gate-downstream`), each build (`p3`: WASI 0.3), built by
/// setup.sh.
pub fn gate(p3: bool) -> PathBuf {
    built(
        "S3LEASE_GATE",
        "s3_lease_gate",
        p3,
        "the lease gate component",
    )
}

pub fn gate_downstream(p3: bool) -> PathBuf {
    built(
        "S3LEASE_GATE_DOWNSTREAM",
        "gate_downstream",
        p3,
        "the gate-downstream component",
    )
}

/// `VAR` (or `VAR_P3`), else the release file `stem.wasm` (or `stem_p3.wasm`).
fn built(var: &str, stem: &str, p3: bool, what: &str) -> PathBuf {
    let suffix = if p3 { "_p3" } else { "" };
    existing(
        &format!("{var}{}", suffix.to_uppercase()),
        &format!("target/wasm32-wasip2/release/{stem}{suffix}.wasm"),
        &format!("{what}{}", if p3 { " (WASI 0.3 build)" } else { "" }),
    )
}

/// The Node example's directory.
pub fn node_example() -> PathBuf {
    workspace_root().join("examples/node")
}

/// jco, from the Node example's pinned `node_modules` (npm ci, by setup.sh).
pub fn jco() -> PathBuf {
    existing(
        "S3LEASE_JCO",
        "examples/node/node_modules/.bin/jco",
        "jco (examples/node/node_modules)",
    )
}

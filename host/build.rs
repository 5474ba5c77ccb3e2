//! Embeds the release component in the host library, so the `s3-lease`
//! binary is one file and `cargo install --locked --path cli` is one step.
//!
//! - `S3LEASE_COMPONENT` names a built component (the README's scripts set
//!   it): that file is embedded as it is.
//! - Otherwise, a packaged crate (as a registry has it) carries the
//!   release component in `component/s3_lease.wasm`, beside the SHA-256
//!   it was packed with (`component/s3_lease.wasm.sha256`, written by
//!   `scripts/package.sh`): it is embedded if its bytes match, and the
//!   build fails if they do not.
//! - Otherwise, when this crate sits in the s3-lease workspace, the
//!   component is built here with the command `scripts/setup.sh` runs (same
//!   profile, same lock file), in a target directory of its own (a nested
//!   cargo may not wait on the outer one's lock), and shrunk with
//!   `scripts/optimize_component.py` when wasm-opt is found. The bytes then
//!   equal setup.sh's (`scripts/test.sh` checks it).
//! - Without either, the host loads a component from a path at run time
//!   (`ComponentSource::Path`).
//!
//! The provenance (`S3LEASE_EMBEDDED_ORIGIN`) is compiled in so
//! `s3-lease version` can say which component a binary carries.

use std::path::{Path, PathBuf};
use std::process::Command;

/// binaryen's wasm-opt as setup.sh installs it (npm `binaryen@132.0.0`).
const WASM_OPT_IN_TOOLS: &str = ".tools/node_modules/.bin/wasm-opt";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(s3lease_embedded)");
    println!("cargo::rerun-if-env-changed=S3LEASE_COMPONENT");
    println!("cargo::rerun-if-env-changed=S3LEASE_WASM_OPT");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let (bytes, origin) = match std::env::var_os("S3LEASE_COMPONENT") {
        Some(path) => {
            let path = PathBuf::from(path);
            println!("cargo::rerun-if-changed={}", path.display());
            match std::fs::read(&path) {
                Ok(bytes) => (bytes, format!("given: {}", path.display())),
                Err(e) => {
                    return warn(&format!(
                        "S3LEASE_COMPONENT={} cannot be read ({e}): no component embedded",
                        path.display()
                    ))
                }
            }
        }
        None => match packaged_component() {
            Some(packaged) => packaged,
            None => match build_component(&out) {
                Ok(built) => built,
                Err(why) => return warn(&format!("no component embedded: {why}")),
            },
        },
    };
    if !bytes.starts_with(b"\0asm") {
        return warn("the component is not a wasm file: no component embedded");
    }
    std::fs::write(out.join("s3_lease.wasm"), &bytes).expect("write OUT_DIR/s3_lease.wasm");
    println!("cargo::rustc-env=S3LEASE_EMBEDDED_ORIGIN={origin}");
    println!("cargo::rustc-cfg=s3lease_embedded");
}

fn warn(message: &str) {
    println!("cargo::warning={message}");
}

/// The component a packaged crate carries, checked against the SHA-256 it
/// was packed with; `None` outside a package.
fn packaged_component() -> Option<(Vec<u8>, String)> {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?).join("component");
    let (wasm, sum) = (dir.join("s3_lease.wasm"), dir.join("s3_lease.wasm.sha256"));
    println!("cargo::rerun-if-changed={}", wasm.display());
    println!("cargo::rerun-if-changed={}", sum.display());
    let bytes = std::fs::read(&wasm).ok()?;
    let expected = std::fs::read_to_string(&sum).unwrap_or_default();
    let actual = sha256_hex(&bytes);
    // A package whose component is not the one it was packed with must
    // not build into anything.
    assert!(
        expected.trim() == actual,
        "{} has SHA-256 {actual}, but the package says {}: the package is damaged",
        wasm.display(),
        expected.trim()
    );
    Some((bytes, format!("packaged, SHA-256 {actual}")))
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Builds the component from the workspace this crate belongs to; returns
/// its bytes and how they were made.
fn build_component(out: &Path) -> Result<(Vec<u8>, String), String> {
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").ok_or("no CARGO_MANIFEST_DIR")?);
    let root = manifest_dir
        .parent()
        .filter(|root| root.join("wit/lease.wit").is_file() && root.join("src/lib.rs").is_file())
        .ok_or(
            "this host crate is not inside the s3-lease workspace, so it cannot build the \
             component; set S3LEASE_COMPONENT to a built one",
        )?;
    for watched in [
        "src",
        "wit",
        "Cargo.toml",
        "Cargo.lock",
        "scripts/optimize_component.py",
    ] {
        println!("cargo::rerun-if-changed={}", root.join(watched).display());
    }
    // OUT_DIR is <target>[/<triple>]/<profile>/build/<crate>-<hash>/out.
    let target_dir = out
        .ancestors()
        .nth(4)
        .ok_or("OUT_DIR is not inside a target directory")?
        .join("s3-lease-component");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(root)
        .args([
            "rustc",
            "--locked",
            "-p",
            "s3-lease",
            "--lib",
            "--crate-type",
            "cdylib",
        ])
        .args(["--target", "wasm32-wasip2", "--release", "--target-dir"])
        .arg(&target_dir);
    // What cargo tells a build script about the host build must not leak into
    // a wasm build: rustflags, the target, the profile, features.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let host_only = name.starts_with("CARGO_FEATURE_")
            || name.starts_with("CARGO_CFG_")
            || name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_PROFILE_")
            || name.starts_with("CARGO_BUILD_")
            || name.starts_with("CARGO_TARGET_")
            || matches!(
                &*name,
                "CARGO_ENCODED_RUSTFLAGS"
                    | "RUSTFLAGS"
                    | "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_MANIFEST_LINKS"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "TARGET"
                    | "HOST"
                    | "PROFILE"
                    | "OPT_LEVEL"
                    | "DEBUG"
                    | "OUT_DIR"
                    | "NUM_JOBS"
                    | "RUSTC_WORKSPACE_WRAPPER"
                    | "S3LEASE_COMPONENT"
            );
        if host_only {
            build.env_remove(&*name);
        }
    }
    let status = build.status().map_err(|e| format!("running cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building the component failed ({status}); is the target installed? \
             rustup target add wasm32-wasip2"
        ));
    }
    let built = target_dir.join("wasm32-wasip2/release/s3_lease.wasm");
    let origin = match wasm_opt(root) {
        Ok(wasm_opt) => {
            let status = Command::new("python3")
                .arg(root.join("scripts/optimize_component.py"))
                .arg(&built)
                .arg(&wasm_opt)
                .status();
            match status {
                Ok(s) if s.success() => format!("built here, shrunk by {}", wasm_opt.display()),
                _ => {
                    warn("optimize_component.py failed: the component is embedded unshrunk");
                    "built here, not shrunk (optimize_component.py failed)".to_string()
                }
            }
        }
        Err(tried) => {
            warn(&format!(
                "no wasm-opt found ({tried}): the embedded component is about 50 KB larger \
                 than scripts/setup.sh's (npm install binaryen@132.0.0, or set S3LEASE_WASM_OPT)"
            ));
            "built here, not shrunk (no wasm-opt)".to_string()
        }
    };
    let bytes = std::fs::read(&built).map_err(|e| format!("reading {}: {e}", built.display()))?;
    Ok((bytes, origin))
}

/// The wasm-opt setup.sh uses, else one the user names or has on PATH;
/// `Err` says why none ran.
fn wasm_opt(root: &Path) -> Result<PathBuf, String> {
    let candidates = [
        std::env::var_os("S3LEASE_WASM_OPT").map(PathBuf::from),
        Some(root.join(WASM_OPT_IN_TOOLS)),
        Some(PathBuf::from("wasm-opt")),
    ];
    let mut tried = Vec::new();
    for path in candidates.into_iter().flatten() {
        match Command::new(&path).arg("--version").output() {
            Ok(out) if out.status.success() => return Ok(path),
            Ok(out) => tried.push(format!(
                "{}: {} {}",
                path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => tried.push(format!("{}: {e}", path.display())),
        }
    }
    Err(tried.join("; "))
}

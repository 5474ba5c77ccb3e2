//! Embeds the release component in the host library when it has been built,
//! so the `s3-lease` binary is one file. Without it, the host loads the
//! component from a path (`ComponentSource::Path`, `S3LEASE_COMPONENT`).

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(s3lease_embedded)");
    println!("cargo::rerun-if-env-changed=S3LEASE_COMPONENT");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let candidate = match std::env::var_os("S3LEASE_COMPONENT") {
        Some(path) => PathBuf::from(path),
        // OUT_DIR is <target>/<profile>/build/<crate>-<hash>/out.
        None => match out.ancestors().nth(4) {
            Some(target) => target.join("wasm32-wasip2/release/s3_lease.wasm"),
            None => return,
        },
    };
    println!("cargo::rerun-if-changed={}", candidate.display());
    let embedded = out.join("s3_lease.wasm");
    match std::fs::read(&candidate) {
        Ok(bytes) if bytes.starts_with(b"\0asm") => {
            std::fs::write(&embedded, bytes).expect("write OUT_DIR/s3_lease.wasm");
            println!("cargo::rustc-cfg=s3lease_embedded");
        }
        _ => {
            println!(
                "cargo::warning=no s3-lease component at {}: the host will load one from a path \
                 (build it first with: cargo build -p s3-lease --lib --target wasm32-wasip2 --release)",
                candidate.display()
            );
        }
    }
}

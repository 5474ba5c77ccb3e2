//! `s3-lease version`: this binary's version and the component it carries,
//! so a deployed binary can be matched to a build (sha256 of the component
//! `scripts/setup.sh` built, or the one `cargo install` built itself).

use crate::out::say;
use s3_lease_host::{ComponentSource, Runtime, RuntimeOptions};
use sha2::{Digest, Sha256};

/// Which build the component is ("WASI 0.2" or "WASI 0.3"), as the host
/// finds it when it loads it (through the compile cache, so only the first
/// `version` after an upgrade compiles). The embedded one is the WASI 0.2
/// build: one lock call at a time per process is all the command line
/// makes, and that build is the smaller and the faster to instantiate
/// (docs/wasi-0.3.md).
fn build() -> Result<&'static str, String> {
    Runtime::with_options(RuntimeOptions::default())
        .map(|runtime| runtime.build().name())
        .map_err(|e| format!("{e:#}"))
}

/// The component this binary loads, as `version` reports it.
struct Carried {
    /// "embedded" or "S3LEASE_COMPONENT" (which then overrides the embedded one).
    source: &'static str,
    bytes: Option<usize>,
    sha256: Option<String>,
    origin: Option<String>,
}

fn carried() -> Carried {
    if let Some(path) = std::env::var_os("S3LEASE_COMPONENT") {
        let read = std::fs::read(&path).ok();
        return Carried {
            source: "S3LEASE_COMPONENT",
            bytes: read.as_ref().map(Vec::len),
            sha256: read.as_deref().map(sha256_hex),
            origin: Some(format!("file {}", std::path::Path::new(&path).display())),
        };
    }
    let embedded = ComponentSource::embedded_bytes();
    Carried {
        source: "embedded",
        bytes: embedded.map(<[u8]>::len),
        sha256: embedded.map(sha256_hex),
        origin: ComponentSource::embedded_origin().map(str::to_string),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn print(json: bool) -> i32 {
    let version = env!("CARGO_PKG_VERSION");
    let c = carried();
    let build = c.bytes.map(|_| build());
    if json {
        let value = serde_json::json!({
            "version": version,
            "component": {
                "source": c.source,
                "bytes": c.bytes,
                "sha256": c.sha256,
                "origin": c.origin,
                "build": build.as_ref().and_then(|b| b.as_ref().ok()),
            },
        });
        say!("{value}");
        return 0;
    }
    say!("s3-lease {version}");
    match (c.bytes, c.sha256) {
        (Some(bytes), Some(sha)) => {
            say!("component: {} ({bytes} bytes, sha256 {sha})", c.source);
            if let Some(origin) = c.origin {
                say!("component origin: {origin}");
            }
            match build {
                Some(Ok(build)) => say!("component build: {build}"),
                Some(Err(e)) => say!("component build: unknown (it does not load: {e})"),
                None => {}
            }
        }
        _ => say!(
            "component: none ({}); set S3LEASE_COMPONENT to a built one",
            c.origin
                .unwrap_or_else(|| "not embedded in this build".into())
        ),
    }
    0
}

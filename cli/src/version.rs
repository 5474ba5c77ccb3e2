//! `s3-lease version`: this binary's version and the component it carries,
//! so a deployed binary can be matched to a build (sha256 of the component
//! `scripts/setup.sh` built, or the one `cargo install` built itself).

use crate::out::say;
use crate::precompile;
use s3_lease_host::{ComponentSource, Runtime};
use sha2::{Digest, Sha256};

/// Which build the component is ("WASI 0.2" or "WASI 0.3"), as the host
/// finds it when it loads it (as every command loads it: the precompiled
/// component, else the compile cache, so only the first `version` after an
/// upgrade compiles), and how it was loaded. The embedded one is the WASI
/// 0.2 build: one lock call at a time per process is all the command line
/// makes, and that build is the smaller and the faster to instantiate
/// (docs/wasi-0.3.md).
fn build() -> Result<Loaded, String> {
    let runtime =
        Runtime::with_options(precompile::runtime_options()).map_err(|e| format!("{e:#}"))?;
    let report = runtime.load_report();
    Ok(Loaded {
        build: runtime.build().name(),
        how: precompile::outcome_name(report.cache),
        precompiled_refused: report.precompiled_refused.map(|why| why.to_string()),
        ms: report.elapsed.as_secs_f64() * 1000.0,
    })
}

/// What loading the component found.
struct Loaded {
    build: &'static str,
    /// "precompiled", "cache hit", "compiled (...)".
    how: &'static str,
    /// Why the precompiled file (`precompile::path`) was passed over.
    precompiled_refused: Option<String>,
    ms: f64,
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
    let loaded = build.as_ref().and_then(|b| b.as_ref().ok());
    let precompiled = precompile::path().map(|p| p.display().to_string());
    if json {
        let value = serde_json::json!({
            "version": version,
            "component": {
                "source": c.source,
                "bytes": c.bytes,
                "sha256": c.sha256,
                "origin": c.origin,
                "build": loaded.map(|l| l.build),
                "load": loaded.map(|l| l.how),
                "load_ms": loaded.map(|l| (l.ms * 10.0).round() / 10.0),
                "precompiled": precompiled,
                "precompiled_refused": loaded.and_then(|l| l.precompiled_refused.as_deref()),
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
                Some(Ok(loaded)) => {
                    say!("component build: {}", loaded.build);
                    say!("component load: {} in {:.1} ms", loaded.how, loaded.ms);
                    match (&precompiled, &loaded.precompiled_refused) {
                        (Some(path), Some(why)) => {
                            say!("precompiled component: {path} (not used: {why})")
                        }
                        (Some(path), None) => say!("precompiled component: {path}"),
                        (None, _) => {
                            say!("precompiled component: none (S3LEASE_PRECOMPILED is empty)")
                        }
                    }
                }
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

//! `s3-lease precompile`: the component compiled ahead of time for this
//! machine, written beside the binary (`<binary>.cwasm`), so every later
//! command loads it in milliseconds instead of compiling it (about half a
//! second) when no compile cache has it yet: a cold start, a fresh
//! container, a Lambda-style sandbox. The host checks the file before it
//! runs it and falls back to the cache, then to compiling, when it fails a
//! check (docs/embedding.md, "Precompiled components").

use crate::exit::{self, Failure};
use crate::out::say;
use s3_lease_host::{precompile, CacheOutcome, ComponentSource, Runtime, RuntimeOptions};
use std::path::PathBuf;

/// Where a precompiled component is looked for: `S3LEASE_PRECOMPILED` when
/// set (empty: none), else beside this binary.
pub fn path() -> Option<PathBuf> {
    match std::env::var_os("S3LEASE_PRECOMPILED") {
        Some(path) if path.is_empty() => None,
        Some(path) => Some(path.into()),
        None => beside_the_binary(),
    }
}

/// `<this executable's path>.cwasm` (`/usr/local/bin/s3-lease.cwasm`): the
/// path the kernel ran, symbolic links resolved, so a link on PATH finds
/// the file beside the binary it points to.
fn beside_the_binary() -> Option<PathBuf> {
    let mut exe = std::env::current_exe().ok()?.into_os_string();
    exe.push(".cwasm");
    Some(exe.into())
}

/// How every command loads the component: the host's defaults, with the
/// precompiled component looked for where [`path`] says.
pub fn runtime_options() -> RuntimeOptions {
    let mut options = RuntimeOptions::default();
    options.precompiled = path();
    options
}

/// How the component was loaded, as `version` says it.
pub fn outcome_name(outcome: CacheOutcome) -> &'static str {
    match outcome {
        CacheOutcome::Precompiled => "precompiled",
        CacheOutcome::Hit => "cache hit",
        CacheOutcome::Miss => "compiled (now cached)",
        CacheOutcome::Rebuilt => "compiled (a damaged cache file replaced)",
        CacheOutcome::Disabled => "compiled (no cache)",
        CacheOutcome::Untrusted => {
            "compiled (the cache file or its directory is writable by others or owned by another user: not used)"
        }
        _ => "compiled",
    }
}

/// Writes the precompiled component to `out` (default: beside the binary),
/// then loads it back as every command will, so a file that this binary
/// would not use is never left behind as if it were good.
pub fn run(out: Option<PathBuf>, json: bool) -> Result<i32, Failure> {
    let out = match out.or_else(beside_the_binary) {
        Some(out) => out,
        None => {
            return Err(Failure::new(
                exit::USAGE,
                "the path of this binary is not known: give --out PATH",
            ))
        }
    };
    let source = ComponentSource::from_env();
    let bytes = precompile(&source, &out).map_err(|e| {
        // The file could not be written (the host's error says "writing
        // PATH: ..."), or compiling failed: a component that does not load.
        let message = format!("{e:#}");
        let code = if message.starts_with(&format!("writing {}:", out.display())) {
            exit::CANT_CREATE
        } else {
            exit::INTERNAL
        };
        Failure::new(code, message)
    })?;
    let mut check = RuntimeOptions::default().source(source);
    check.precompiled = Some(out.clone());
    check.cache = s3_lease_host::CompileCache::Off;
    let report = Runtime::with_options(check)
        .map_err(|e| Failure::new(exit::INTERNAL, format!("{e:#}")))?
        .load_report();
    if let Some(why) = report.precompiled_refused {
        let _ = std::fs::remove_file(&out);
        return Err(Failure::new(
            exit::CANT_CREATE,
            format!(
                "{} was written but does not load back ({why}); removed it",
                out.display()
            ),
        ));
    }
    if json {
        say!(
            "{}",
            serde_json::json!({"precompiled": out.display().to_string(), "bytes": bytes})
        );
    } else {
        say!("precompiled: {} ({bytes} bytes)", out.display());
    }
    Ok(0)
}

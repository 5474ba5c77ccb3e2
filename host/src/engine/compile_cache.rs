//! Compiled components on disk, so a process after the first starts in
//! milliseconds rather than the ~100 ms Cranelift needs.
//!
//! A cache file is `MAGIC`, the SHA-256 of the payload, then the payload
//! that `Engine::precompile_component` produced. It is named after the
//! component's SHA-256 and the engine's compatibility hash (wasmtime version
//! and settings), so another component or another wasmtime never finds it.
//! `Component::deserialize` trusts its input; we only hand it payloads whose
//! checksum matches, and a file that fails any check is compiled again and
//! replaced. (The checksum catches corruption, not an attacker: the cache
//! directory must be writable only by its user, like any executable cache.)

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

const MAGIC: &[u8] = b"s3-lease compiled component v1\n";

/// Where compiled components are kept.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum CompileCache {
    /// Compile every time.
    Off,
    /// Keep them in this directory (created when missing).
    Dir(PathBuf),
}

/// What loading found, for reports and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheOutcome {
    /// No cache configured: compiled.
    Disabled,
    /// Loaded from the cache.
    Hit,
    /// Not cached yet: compiled and stored.
    Miss,
    /// A cache file failed its checks: compiled and replaced.
    Rebuilt,
}

impl CompileCache {
    /// `S3LEASE_CACHE_DIR`, else `$XDG_CACHE_HOME/s3-lease`, else
    /// `~/.cache/s3-lease`; off when none is known or `S3LEASE_CACHE_DIR` is empty.
    pub fn from_env() -> Self {
        let var = |name| std::env::var_os(name).map(PathBuf::from);
        match var("S3LEASE_CACHE_DIR") {
            Some(dir) if dir.as_os_str().is_empty() => CompileCache::Off,
            Some(dir) => CompileCache::Dir(dir),
            None => match var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache"))) {
                Some(base) => CompileCache::Dir(base.join("s3-lease")),
                None => CompileCache::Off,
            },
        }
    }

    /// The component compiled for `engine`, from the cache when a sound
    /// copy is there.
    pub fn load(&self, engine: &Engine, wasm: &[u8]) -> Result<(Component, CacheOutcome)> {
        let CompileCache::Dir(dir) = self else {
            return Ok((compile(engine, wasm)?, CacheOutcome::Disabled));
        };
        let path = dir.join(file_name(engine, wasm));
        let outcome = match std::fs::read(&path) {
            Ok(file) => match verified_payload(&file) {
                // SAFETY: the payload is byte for byte what `precompile_component`
                // wrote for this engine's settings (checked by SHA-256 above),
                // and wasmtime checks its own header and version again.
                Some(payload) => match unsafe { Component::deserialize(engine, payload) } {
                    Ok(component) => return Ok((component, CacheOutcome::Hit)),
                    Err(_) => CacheOutcome::Rebuilt,
                },
                None => CacheOutcome::Rebuilt,
            },
            Err(_) => CacheOutcome::Miss,
        };
        let payload = engine
            .precompile_component(wasm)
            .map_err(anyhow::Error::from)
            .context("compiling the s3-lease component")?;
        // A cache we cannot write is not an error: the component still loads.
        let _ = store(dir, &path, &payload);
        // SAFETY: produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &payload) }
            .map_err(anyhow::Error::from)
            .context("loading the component just compiled")?;
        Ok((component, outcome))
    }
}

fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component> {
    Component::new(engine, wasm)
        .map_err(anyhow::Error::from)
        .context("compiling the s3-lease component")
}

fn file_name(engine: &Engine, wasm: &[u8]) -> String {
    let mut engine_hash = std::collections::hash_map::DefaultHasher::new();
    engine
        .precompile_compatibility_hash()
        .hash(&mut engine_hash);
    let component = Sha256::digest(wasm);
    format!(
        "{}-{:016x}.cwasm",
        hex(&component[..16]),
        engine_hash.finish()
    )
}

fn verified_payload(file: &[u8]) -> Option<&[u8]> {
    let rest = file.strip_prefix(MAGIC)?;
    let (sum, payload) = rest.split_at_checked(32)?;
    (Sha256::digest(payload).as_slice() == sum).then_some(payload)
}

/// Writes through a temporary file and a rename, so a reader never sees a
/// half-written file (two processes may compile at once; either result is good).
fn store(dir: &Path, path: &Path, payload: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.{}.tmp", std::process::id(), unique()));
    let mut file = Vec::with_capacity(MAGIC.len() + 32 + payload.len());
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&Sha256::digest(payload));
    file.extend_from_slice(payload);
    std::fs::write(&tmp, file)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_intact_payload_is_handed_to_wasmtime() {
        let payload = b"compiled";
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&Sha256::digest(payload));
        file.extend_from_slice(payload);
        assert_eq!(verified_payload(&file), Some(&payload[..]));

        let mut flipped = file.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(verified_payload(&flipped), None);
        assert_eq!(verified_payload(&file[..MAGIC.len() + 10]), None);
        assert_eq!(verified_payload(b"\0asm foreign"), None);
        assert_eq!(verified_payload(b""), None);
    }
}

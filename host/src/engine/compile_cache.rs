//! Compiled components on disk, so a process after the first starts in
//! milliseconds rather than the ~100 ms Cranelift needs.
//!
//! A compiled file (a cache file, or a precompiled component shipped beside
//! a binary: see `precompiled`) is `MAGIC`, the SHA-256 of the component it
//! was compiled from, the SHA-256 of the payload, then the payload that
//! `Engine::precompile_component` produced. A cache file is also named
//! after the component's SHA-256 and the engine's compatibility hash
//! (wasmtime version and settings), so another component or another
//! wasmtime never finds it; the component's hash inside is what keeps a
//! precompiled file, which has no such name, to its own component.
//! `Component::deserialize` trusts its input, and runs the machine code it
//! is given. So a cache file is read only when it and its directory are
//! owned by this process's user (or root) and writable by no one else,
//! checked on the open descriptors (`trusted_file`): anything else is a
//! miss that is compiled and never written back (`CacheOutcome::Untrusted`:
//! another user's file is left as it is). A trusted file's payload is
//! handed over only when its checksum matches; one that fails is compiled
//! again and replaced. (The checksum catches corruption, not an attacker:
//! the owner and mode checks keep other users out.)

use crate::engine::trusted_file::{self, Refused};
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

/// v2: the component's SHA-256 inside (v1 files are compiled again once).
const MAGIC: &[u8] = b"s3-lease compiled component v2\n";

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
    /// The cache file or its directory may be written by another user
    /// (group or world writable), or is owned by one: the file was not
    /// read, and nothing was written there. Compiled.
    Untrusted,
    /// Loaded from a precompiled file (`RuntimeOptions::precompiled`); the
    /// cache was not consulted.
    Precompiled,
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
        let component_sha = component_sha256(wasm);
        let name = file_name(engine, &component_sha);
        let outcome = match trusted_file::read_in(dir, &name) {
            Ok(file) => match verified_payload(&file, &component_sha) {
                // SAFETY: the payload is byte for byte what `precompile_component`
                // wrote for this component (checked by SHA-256 above; the file
                // name carries this engine's compatibility hash), it was read
                // from a file and directory only this user or root can write,
                // and wasmtime checks its own header, version and settings again.
                Ok(payload) => match unsafe { Component::deserialize(engine, payload) } {
                    Ok(component) => return Ok((component, CacheOutcome::Hit)),
                    Err(_) => CacheOutcome::Rebuilt,
                },
                Err(_) => CacheOutcome::Rebuilt,
            },
            Err(Refused::Unprotected) => CacheOutcome::Untrusted,
            Err(Refused::Missing | Refused::Unreadable) => CacheOutcome::Miss,
        };
        let payload = engine
            .precompile_component(wasm)
            .map_err(anyhow::Error::from)
            .context("compiling the s3-lease component")?;
        // A cache we cannot write is not an error: the component still
        // loads. One we do not trust is not written to: another user's
        // file stays as it is, and a file written into a directory others
        // may write could be swapped for theirs.
        if outcome != CacheOutcome::Untrusted {
            let _ = trusted_file::create_dir(dir).and_then(|()| {
                write_atomically(&dir.join(&name), &encode(&component_sha, &payload))
            });
        }
        // SAFETY: produced just now by this engine.
        let component = unsafe { Component::deserialize(engine, &payload) }
            .map_err(anyhow::Error::from)
            .context("loading the component just compiled")?;
        Ok((component, outcome))
    }
}

/// The one engine configuration: the runtime loads with it and
/// [`crate::precompile`] compiles for it, so a precompiled file always
/// matches the engine that loads it (wasmtime checks the settings too).
pub(crate) fn engine() -> Result<Engine> {
    // The async ABI on, so either build compiles (it changes nothing
    // for the WASI 0.2 build's code).
    let mut config = wasmtime::Config::new();
    config.wasm_component_model_async(true);
    Ok(Engine::new(&config)?)
}

pub(crate) fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component> {
    Component::new(engine, wasm)
        .map_err(anyhow::Error::from)
        .context("compiling the s3-lease component")
}

pub(crate) fn component_sha256(wasm: &[u8]) -> [u8; 32] {
    Sha256::digest(wasm).into()
}

fn file_name(engine: &Engine, component_sha: &[u8; 32]) -> String {
    let mut engine_hash = std::collections::hash_map::DefaultHasher::new();
    engine
        .precompile_compatibility_hash()
        .hash(&mut engine_hash);
    format!(
        "{}-{:016x}.cwasm",
        hex(&component_sha[..16]),
        engine_hash.finish()
    )
}

/// Why a compiled file's payload is not handed to wasmtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unsound {
    /// Not a compiled file of ours, or cut short, or its checksum fails.
    Corrupt,
    /// Sound, but compiled from another component.
    OtherComponent,
}

/// A compiled file's bytes: what [`verified_payload`] accepts.
pub(crate) fn encode(component_sha: &[u8; 32], payload: &[u8]) -> Vec<u8> {
    let mut file = Vec::with_capacity(MAGIC.len() + 64 + payload.len());
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(component_sha);
    file.extend_from_slice(&Sha256::digest(payload));
    file.extend_from_slice(payload);
    file
}

/// The payload of a compiled file made from the component whose SHA-256 is
/// `component_sha`, when the file is intact.
pub(crate) fn verified_payload<'f>(
    file: &'f [u8],
    component_sha: &[u8; 32],
) -> Result<&'f [u8], Unsound> {
    let rest = file.strip_prefix(MAGIC).ok_or(Unsound::Corrupt)?;
    let (made_from, rest) = rest.split_at_checked(32).ok_or(Unsound::Corrupt)?;
    let (sum, payload) = rest.split_at_checked(32).ok_or(Unsound::Corrupt)?;
    if Sha256::digest(payload).as_slice() != sum {
        return Err(Unsound::Corrupt);
    }
    if made_from != component_sha {
        return Err(Unsound::OtherComponent);
    }
    Ok(payload)
}

/// Writes through a temporary file in the same directory and a rename, so
/// a reader never sees a half-written file (two processes may compile at
/// once; either result is good). Writable by its owner only from the
/// moment it exists, whatever the umask (a file that others could open for
/// writing, even for an instant, could be changed through that handle
/// later; a precompiled file that others may write is refused when
/// loaded), and readable by all once written (mode 0644), so the users of
/// a binary installed by root can load the file beside it.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        name.unwrap_or_default(),
        std::process::id(),
        unique()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    owner_only(&mut options);
    let written = options
        .open(&tmp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            readable_by_all(&file)
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    written.inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(unix)]
fn owner_only(options: &mut std::fs::OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    options.mode(0o600);
}

#[cfg(unix)]
fn readable_by_all(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn owner_only(_: &mut std::fs::OpenOptions) {}

#[cfg(not(unix))]
fn readable_by_all(_: &std::fs::File) -> std::io::Result<()> {
    Ok(())
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
    fn only_an_intact_payload_of_this_component_is_handed_to_wasmtime() {
        let payload = b"compiled";
        let ours = component_sha256(b"\0asm ours");
        let file = encode(&ours, payload);
        assert_eq!(verified_payload(&file, &ours), Ok(&payload[..]));
        let theirs = component_sha256(b"\0asm theirs");
        assert_eq!(
            verified_payload(&file, &theirs),
            Err(Unsound::OtherComponent)
        );

        let mut flipped = file.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(verified_payload(&flipped, &ours), Err(Unsound::Corrupt));
        for bad in [
            &file[..MAGIC.len() + 10],
            &file[..MAGIC.len() + 40],
            b"\0asm foreign",
            b"",
        ] {
            assert_eq!(verified_payload(bad, &ours), Err(Unsound::Corrupt));
        }
    }
}

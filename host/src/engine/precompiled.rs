//! Precompiled components: the component compiled ahead of time for this
//! machine's target, in a file shipped beside the binary, so a process that
//! starts with no compile cache loads it in milliseconds instead of
//! compiling it (about half a second).
//!
//! The file is a compiled file in the compile cache's format (see
//! `compile_cache`): the SHA-256 of the component it was made from, the
//! SHA-256 of the payload, the payload. Loading it hands machine code to
//! wasmtime to run, so a file is only loaded when all of these hold, and
//! any failure is not an error, only a reason to fall back (to the cache,
//! then to compiling), reported in the `LoadReport`:
//! - it is as protected as the binary: on unix, owned by the process's
//!   effective user or by root, and writable by nobody else (no group or
//!   world write bit), checked on the open file, not on its name;
//! - its payload checksum matches (a file cut short or damaged);
//! - it was made from the very component this runtime loads;
//! - wasmtime accepts it: same wasmtime version, same engine settings
//!   (`compile_cache::engine`, the one configuration both sides use), and a
//!   target whose CPU features this machine has.

use crate::engine::compile_cache::{
    component_sha256, encode, verified_payload, write_atomically, Unsound,
};
use crate::engine::source::ComponentSource;
use crate::engine::trusted_file::{self, Refused};
use anyhow::{Context, Result};
use std::fmt;
use std::path::Path;
use wasmtime::component::Component;
use wasmtime::Engine;

/// Why a configured precompiled file was not loaded (the component was
/// then loaded from the compile cache, or compiled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrecompiledRefused {
    /// No file at that path.
    Missing,
    /// The file could not be read (permissions, not a regular file).
    Unreadable,
    /// Writable by its group or by others, or owned by a user other than
    /// this process's effective user and root: it could hold code that the
    /// binary's owner never made.
    Unprotected,
    /// Not a precompiled component, cut short, or its checksum fails.
    Corrupt,
    /// Made from another component than the one this runtime loads.
    OtherComponent,
    /// wasmtime refused it: made by another wasmtime version, with other
    /// settings, or for CPU features this machine lacks.
    Incompatible,
}

impl fmt::Display for PrecompiledRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PrecompiledRefused::Missing => "no such file",
            PrecompiledRefused::Unreadable => "cannot be read",
            PrecompiledRefused::Unprotected => {
                "writable by others than its owner, or owned by another user"
            }
            PrecompiledRefused::Corrupt => "not a sound precompiled component",
            PrecompiledRefused::OtherComponent => "made from another component",
            PrecompiledRefused::Incompatible => {
                "made by another wasmtime, settings or CPU (wasmtime refused it)"
            }
        })
    }
}

/// The component `wasm`, compiled for `engine`, from the precompiled file
/// at `path`, when it passes every check (see the module's doc).
pub(crate) fn load(
    engine: &Engine,
    wasm: &[u8],
    path: &Path,
) -> Result<Component, PrecompiledRefused> {
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => PrecompiledRefused::Missing,
        _ => PrecompiledRefused::Unreadable,
    })?;
    // Checked on the open file, not on its name: what is checked is what
    // is read, even if the name is pointed elsewhere meanwhile. (Nothing is
    // ever written beside it, and a file put there by another user is
    // refused for its owner, so its directory is not checked.)
    let bytes = trusted_file::read_open(file).map_err(|refused| match refused {
        Refused::Missing | Refused::Unreadable => PrecompiledRefused::Unreadable,
        Refused::Unprotected => PrecompiledRefused::Unprotected,
    })?;
    let payload =
        verified_payload(&bytes, &component_sha256(wasm)).map_err(|unsound| match unsound {
            Unsound::Corrupt => PrecompiledRefused::Corrupt,
            Unsound::OtherComponent => PrecompiledRefused::OtherComponent,
        })?;
    // SAFETY: `deserialize` runs the machine code it is given. This payload
    // comes from a file writable only by this process's user or root (the
    // users who could replace the binary itself), is byte for byte what
    // `precompile_component` wrote (SHA-256), was made from this very
    // component (its SHA-256 inside), and wasmtime checks its own header:
    // its version, the engine's settings and the CPU features it needs.
    unsafe { Component::deserialize(engine, payload) }.map_err(|_| PrecompiledRefused::Incompatible)
}

/// Compiles `source` for this machine with the runtime's own engine
/// settings and writes it to `out` as a precompiled component (through a
/// temporary file beside it and a rename, mode 0644 on unix), for
/// [`crate::RuntimeOptions::precompiled`]. Returns the file's size.
pub fn precompile(source: &ComponentSource, out: &Path) -> Result<u64> {
    let engine = crate::engine::compile_cache::engine()?;
    let wasm = source.bytes()?;
    let payload = engine
        .precompile_component(&wasm)
        .map_err(anyhow::Error::from)
        .context("compiling the s3-lease component")?;
    let file = encode(&component_sha256(&wasm), &payload);
    write_atomically(out, &file).with_context(|| format!("writing {}", out.display()))?;
    Ok(file.len() as u64)
}

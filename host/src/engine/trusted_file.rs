//! Files whose bytes become machine code (a compile cache file, a
//! precompiled component): read only when no one but this process's user
//! (or root) could have written them.
//!
//! The rule, on unix: the file and the directory it is read from are each
//! owned by the effective user or by root, and writable by no one else (no
//! group or world write bit; a sticky world-writable directory such as
//! `/tmp` is refused too: anyone may create a file there under the name we
//! look for). Each is checked on its open descriptor (`fstat`), and the
//! file is opened relative to the directory's descriptor, so what is
//! checked is what is read, even if a name is pointed elsewhere meanwhile.
//! Ancestors of the directory are not checked: whoever can replace them
//! can as well replace the binary's own environment.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No such file (the directory is trusted).
    Missing,
    /// It could not be opened or read (permissions, not a regular file).
    Unreadable,
    /// The file or its directory may be written by another user, or is
    /// owned by one.
    Unprotected,
}

/// Owned by the effective user or root, and writable by no one else.
#[cfg(unix)]
pub(crate) fn protected(meta: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let euid = rustix::process::geteuid().as_raw();
    meta.mode() & 0o022 == 0 && (meta.uid() == euid || meta.uid() == 0)
}

/// No owner or mode bits to read here: the checksums and wasmtime's checks
/// still apply, and the directory must be protected like the binary's.
#[cfg(not(unix))]
pub(crate) fn protected(_: &Metadata) -> bool {
    true
}

/// The open `file`'s bytes, if it is a regular file protected as above.
pub(crate) fn read_open(mut file: File) -> Result<Vec<u8>, Refused> {
    let meta = file.metadata().map_err(|_| Refused::Unreadable)?;
    if !meta.is_file() {
        return Err(Refused::Unreadable);
    }
    if !protected(&meta) {
        return Err(Refused::Unprotected);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)
        .map_err(|_| Refused::Unreadable)?;
    Ok(bytes)
}

/// The bytes of `name` in `dir`, when both are protected; `Missing` when
/// the directory is and the file is not there.
#[cfg(unix)]
pub(crate) fn read_in(dir: &Path, name: &str) -> Result<Vec<u8>, Refused> {
    use rustix::fs::{openat, Mode, OFlags};
    let dir = File::open(dir).map_err(|_| Refused::Unreadable)?;
    let meta = dir.metadata().map_err(|_| Refused::Unreadable)?;
    if !meta.is_dir() {
        return Err(Refused::Unreadable);
    }
    if !protected(&meta) {
        return Err(Refused::Unprotected);
    }
    // No symbolic link is followed at the last step: nothing of ours makes
    // one there.
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NOCTTY;
    let file = openat(&dir, name, flags, Mode::empty()).map_err(|e| match e {
        rustix::io::Errno::NOENT => Refused::Missing,
        _ => Refused::Unreadable,
    })?;
    read_open(File::from(file))
}

#[cfg(not(unix))]
pub(crate) fn read_in(dir: &Path, name: &str) -> Result<Vec<u8>, Refused> {
    let file = File::open(dir.join(name)).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Refused::Missing,
        _ => Refused::Unreadable,
    })?;
    read_open(file)
}

/// Creates `dir` (and missing parents) readable and writable by its owner
/// only, whatever the umask: a directory created group-writable would be
/// refused by [`read_in`] ever after.
pub(crate) fn create_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

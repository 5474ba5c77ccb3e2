//! The on-disk compile cache: a miss compiles and stores, a hit loads, and
//! a corrupt or foreign file is rebuilt, never trusted.

use s3_lease_host::{CacheOutcome, CompileCache, ComponentSource, Runtime, RuntimeOptions};
use std::path::{Path, PathBuf};

fn load(dir: &Path) -> CacheOutcome {
    let runtime = Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::from_env())
            .cache(CompileCache::Dir(dir.to_path_buf())),
    )
    .expect("the component loads whatever the cache holds");
    runtime.load_report().cache
}

fn the_one_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

#[test]
fn corrupt_or_foreign_cache_files_are_rebuilt() {
    let dir = std::env::temp_dir().join(format!("s3lease-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(load(&dir), CacheOutcome::Miss);
    assert_eq!(load(&dir), CacheOutcome::Hit);
    let file = the_one_file(&dir);
    let good = std::fs::read(&file).unwrap();

    // One flipped byte deep in the compiled code.
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    std::fs::write(&file, &flipped).unwrap();
    assert_eq!(load(&dir), CacheOutcome::Rebuilt);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        good,
        "replaced by a sound copy"
    );

    // Truncated, empty, and someone else's file under our name.
    for bad in [&good[..good.len() / 3], &b""[..], &b"\x7fELF not ours"[..]] {
        std::fs::write(&file, bad).unwrap();
        assert_eq!(load(&dir), CacheOutcome::Rebuilt);
    }
    assert_eq!(load(&dir), CacheOutcome::Hit);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The component `var` names (set by scripts/setup.sh).
#[cfg(unix)]
fn component_at(var: &str) -> Vec<u8> {
    let path = std::env::var_os(var).unwrap_or_else(|| panic!("{var}: run scripts/setup.sh"));
    std::fs::read(path).unwrap()
}

#[cfg(unix)]
fn load_bytes(dir: &Path, wasm: &[u8]) -> Runtime {
    Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::Bytes(wasm.to_vec()))
            .cache(CompileCache::Dir(dir.to_path_buf())),
    )
    .expect("the component loads whatever the cache holds")
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `nobody`'s uid and gid (65534 on Linux), for the owner checks.
#[cfg(unix)]
const NOBODY: u32 = 65534;

#[cfg(unix)]
fn euid_is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Someone else's code under our name: the WASI 0.3 build's compiled code,
/// wrapped as a cache file of the WASI 0.2 component (its name, its hash
/// inside, a matching checksum), in a directory anyone may write, owned by
/// `nobody` and writable by all. Loading the 0.2 component must neither
/// run it nor overwrite it; each flaw alone (a world-writable directory,
/// even a sticky one like /tmp; a group-writable one; a file owned by
/// another user; a file its group may write) is refused the same way; our
/// own protected file is a hit.
#[cfg(unix)]
#[test]
fn a_cache_file_or_directory_another_user_could_write_is_never_run_nor_overwritten() {
    use sha2::{Digest, Sha256};
    use std::os::unix::fs::MetadataExt;
    let p2 = component_at("S3LEASE_COMPONENT");
    let p3 = component_at("S3LEASE_COMPONENT_P3");
    let root = std::env::temp_dir().join(format!("s3lease-cache-trust-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);

    // The 0.2 component's cache file name, from a load into a scratch
    // directory; the 0.3 build's compiled code, from another.
    let ours = root.join("ours");
    assert_eq!(
        load_bytes(&ours, &p2).load_report().cache,
        CacheOutcome::Miss
    );
    let good_file = the_one_file(&ours);
    let name = good_file.file_name().unwrap().to_owned();
    let good = std::fs::read(&good_file).unwrap();
    let theirs = root.join("theirs");
    load_bytes(&theirs, &p3);
    let mut forged = std::fs::read(the_one_file(&theirs)).unwrap();
    let magic = b"s3-lease compiled component v2\n".len();
    forged[magic..magic + 32].copy_from_slice(&Sha256::digest(&p2));

    // Is the forgery sound but for its owner and mode? In a protected
    // directory, as our own file, it would be run (the cache's trust is
    // its owner: the checksum is no signature).
    let trusted = root.join("trusted-forgery");
    std::fs::create_dir_all(&trusted).unwrap();
    set_mode(&trusted, 0o755);
    std::fs::write(trusted.join(&name), &forged).unwrap();
    set_mode(&trusted.join(&name), 0o644);
    let runtime = load_bytes(&trusted, &p2);
    assert_eq!(runtime.load_report().cache, CacheOutcome::Hit);
    assert_eq!(
        runtime.build().name(),
        "WASI 0.3",
        "the forgery is what runs when trusted"
    );

    let attempt = |label: &str, dir_mode: u32, file_owner: Option<u32>, file_mode: u32| {
        let dir = root.join(label);
        std::fs::create_dir_all(&dir).unwrap();
        set_mode(&dir, dir_mode);
        let file = dir.join(&name);
        std::fs::write(&file, &forged).unwrap();
        set_mode(&file, file_mode);
        if let Some(uid) = file_owner {
            std::os::unix::fs::chown(&file, Some(uid), Some(uid)).unwrap();
        }
        let before = std::fs::metadata(&file).unwrap();
        let runtime = load_bytes(&dir, &p2);
        let report = runtime.load_report();
        assert_eq!(report.cache, CacheOutcome::Untrusted, "{label}: {report:?}");
        assert_eq!(runtime.build().name(), "WASI 0.2", "{label}: its code ran");
        let after = std::fs::metadata(&file).unwrap();
        assert_eq!(
            std::fs::read(&file).unwrap(),
            forged,
            "{label}: overwritten"
        );
        assert_eq!(
            (after.ino(), after.uid(), after.mode()),
            (before.ino(), before.uid(), before.mode()),
            "{label}: replaced"
        );
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(names.len(), 1, "{label}: something was written beside it");
    };
    if euid_is_root() {
        attempt("as-found", 0o777, Some(NOBODY), 0o666);
        attempt("nobodys-file", 0o755, Some(NOBODY), 0o644);
    } else {
        eprintln!("not root: the files owned by another user are not tried");
    }
    attempt("world-writable-dir", 0o1777, None, 0o644);
    attempt("group-writable-dir", 0o775, None, 0o644);
    attempt("group-writable-file", 0o755, None, 0o664);

    // Our own file in our own directory still loads, and a directory the
    // cache creates is created for its owner only, whatever the umask.
    assert_eq!(
        load_bytes(&ours, &p2).load_report().cache,
        CacheOutcome::Hit
    );
    assert_eq!(std::fs::read(&good_file).unwrap(), good);
    let created = root.join("created/deeper");
    // (This binary's other tests check no mode that the umask decides.)
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o002));
    let runtime = load_bytes(&created, &p2);
    rustix::process::umask(old);
    assert_eq!(runtime.load_report().cache, CacheOutcome::Miss);
    let mode = std::fs::metadata(&created).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
    assert_eq!(
        load_bytes(&created, &p2).load_report().cache,
        CacheOutcome::Hit
    );
    let _ = std::fs::remove_dir_all(&root);
}

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

//! Precompiled components: one made by `precompile` loads with the cache
//! off; a damaged one, one made from another component, one made by an
//! engine with other settings, and (unix) one that others may write are
//! passed over for compiling, reported, and never an error.

use s3_lease_host::{
    precompile, CacheOutcome, CompileCache, ComponentSource, LoadReport, PrecompiledRefused,
    Runtime, RuntimeOptions,
};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("s3lease-precompiled-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn component() -> Vec<u8> {
    let source = ComponentSource::from_env();
    match &source {
        ComponentSource::Path(path) => std::fs::read(path).unwrap(),
        _ => ComponentSource::embedded_bytes()
            .expect("S3LEASE_COMPONENT or an embedded component")
            .to_vec(),
    }
}

/// The component loaded with the cache off and `file` as its precompiled
/// component: it always loads.
fn load(file: &Path) -> LoadReport {
    Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::Bytes(component()))
            .cache(CompileCache::Off)
            .precompiled(file),
    )
    .expect("the component loads whatever the precompiled file holds")
    .load_report()
}

fn compiled_because(file: &Path, why: PrecompiledRefused) {
    let report = load(file);
    assert_eq!(report.cache, CacheOutcome::Disabled, "{report:?}");
    assert_eq!(report.precompiled_refused, Some(why), "{report:?}");
}

#[test]
fn a_precompiled_component_loads_with_the_cache_off() {
    let file = scratch("good.cwasm");
    let size = precompile(&ComponentSource::Bytes(component()), &file).unwrap();
    assert_eq!(std::fs::metadata(&file).unwrap().len(), size);
    let report = load(&file);
    assert_eq!(report.cache, CacheOutcome::Precompiled, "{report:?}");
    assert_eq!(report.precompiled_refused, None);
    // And it runs: the linker took it, and its build is known.
    let runtime = Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::Bytes(component()))
            .cache(CompileCache::Off)
            .precompiled(&file),
    )
    .unwrap();
    assert_eq!(runtime.build().name(), "WASI 0.2");
}

#[test]
fn a_missing_or_damaged_precompiled_component_is_compiled_instead() {
    compiled_because(&scratch("absent.cwasm"), PrecompiledRefused::Missing);

    let file = scratch("damaged.cwasm");
    precompile(&ComponentSource::Bytes(component()), &file).unwrap();
    let good = std::fs::read(&file).unwrap();
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    for bad in [
        &flipped[..],
        &good[..good.len() / 3],
        &b""[..],
        &b"\x7fELF not ours"[..],
    ] {
        std::fs::write(&file, bad).unwrap();
        compiled_because(&file, PrecompiledRefused::Corrupt);
    }
}

/// The component with a custom section added: valid, and another hash.
fn another_component() -> Vec<u8> {
    let mut wasm = component();
    let name = b"s3-lease-test";
    let data = b"another component";
    wasm.push(0); // a custom section
    wasm.push((1 + name.len() + data.len()) as u8);
    wasm.push(name.len() as u8);
    wasm.extend_from_slice(name);
    wasm.extend_from_slice(data);
    wasm
}

#[test]
fn a_precompiled_component_made_from_another_component_is_not_loaded() {
    let file = scratch("other-component.cwasm");
    precompile(&ComponentSource::Bytes(another_component()), &file).unwrap();
    compiled_because(&file, PrecompiledRefused::OtherComponent);
}

/// The format, written here by hand around a payload from an engine with
/// other settings: wasmtime's own check refuses it.
#[test]
fn a_precompiled_component_from_other_engine_settings_is_not_loaded() {
    let wasm = component();
    let mut config = wasmtime::Config::new();
    config.wasm_component_model_async(true);
    config.memory_reservation(1 << 24);
    let other = wasmtime::Engine::new(&config).unwrap();
    let payload = other.precompile_component(&wasm).unwrap();
    let mut bytes = b"s3-lease compiled component v2\n".to_vec();
    bytes.extend_from_slice(&Sha256::digest(&wasm));
    bytes.extend_from_slice(&Sha256::digest(&payload));
    bytes.extend_from_slice(&payload);
    let file = scratch("other-engine.cwasm");
    std::fs::write(&file, &bytes).unwrap();
    // Written here, so the umask decides its mode: make it as `precompile`
    // makes it, or it is refused for that.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    compiled_because(&file, PrecompiledRefused::Incompatible);
}

#[cfg(unix)]
#[test]
fn a_precompiled_component_others_may_write_is_not_loaded() {
    use std::os::unix::fs::PermissionsExt;
    let file = scratch("writable.cwasm");
    precompile(&ComponentSource::Bytes(component()), &file).unwrap();
    let mode = |file: &Path| std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o644, "written readable, owner-writable only");
    for loose in [0o666, 0o664, 0o646] {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(loose)).unwrap();
        compiled_because(&file, PrecompiledRefused::Unprotected);
    }
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(load(&file).cache, CacheOutcome::Precompiled);
}

/// A refused precompiled file still leaves the compile cache in use.
#[test]
fn the_cache_is_the_next_fallback() {
    let dir = scratch("cache-dir");
    let _ = std::fs::remove_dir_all(&dir);
    let with_cache = || {
        Runtime::with_options(
            RuntimeOptions::default()
                .source(ComponentSource::Bytes(component()))
                .cache(CompileCache::Dir(dir.clone()))
                .precompiled(scratch("absent-too.cwasm")),
        )
        .unwrap()
        .load_report()
    };
    assert_eq!(with_cache().cache, CacheOutcome::Miss);
    let report = with_cache();
    assert_eq!(report.cache, CacheOutcome::Hit);
    assert_eq!(
        report.precompiled_refused,
        Some(PrecompiledRefused::Missing)
    );
}

//! `s3-lease precompile`: the component compiled ahead of time, used by
//! every command that finds it (`S3LEASE_PRECOMPILED`, else beside the
//! binary), and passed over, never an error, when it fails a check.

use crate::support::{code, text, Scene};
use serde_json::Value;
use std::path::Path;

/// `version --json` as the scene runs it, with `file` as the precompiled
/// component and the compile cache off.
fn load(scene: &Scene, file: &Path) -> Value {
    let out = scene
        .cmd(&["version", "--json"])
        .env("S3LEASE_PRECOMPILED", file)
        .env("S3LEASE_CACHE_DIR", "")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout).unwrap()["component"].clone()
}

/// `acquire KEY` with `file` as the precompiled component and `cache` as an
/// empty compile cache directory: whether the component came from the
/// precompiled file shows in the cache, which is only written when the
/// component was compiled.
fn acquire_leaves_the_cache_empty(scene: &Scene, file: &Path, key: &str) -> bool {
    let cache = scene.path(&format!("cache-{key}"));
    std::fs::create_dir_all(&cache).unwrap();
    let out = scene
        .cmd(&["acquire", key, "--ttl", "30s"])
        .env("S3LEASE_PRECOMPILED", file)
        .env("S3LEASE_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lease: Value = serde_json::from_slice(&out.stdout).expect("the lease as JSON");
    assert!(lease["token"].is_number(), "{lease}");
    std::fs::read_dir(&cache).unwrap().next().is_none()
}

#[test]
fn commands_load_the_precompiled_component_and_pass_over_a_tampered_one() {
    let scene = Scene::new("precompiled");
    let file = scene.path("s3-lease.cwasm");
    let out = scene.run(&["precompile", "--out", file.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(file.to_str().unwrap()),
        "{}",
        text(&out.stdout)
    );

    let component = load(&scene, &file);
    assert_eq!(component["load"], "precompiled", "{component}");
    assert_eq!(component["precompiled"], file.to_str().unwrap());
    assert!(component["precompiled_refused"].is_null(), "{component}");
    assert!(
        acquire_leaves_the_cache_empty(&scene, &file, "sound"),
        "acquire compiled the component instead of loading the precompiled one"
    );

    // One flipped byte in the compiled code: commands still work, compiling.
    let mut bytes = std::fs::read(&file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();
    let component = load(&scene, &file);
    assert_eq!(component["load"], "compiled (no cache)", "{component}");
    assert_eq!(
        component["precompiled_refused"], "not a sound precompiled component",
        "{component}"
    );
    assert!(!acquire_leaves_the_cache_empty(&scene, &file, "tampered"));
}

#[cfg(unix)]
#[test]
fn a_precompiled_component_others_may_write_is_passed_over() {
    use std::os::unix::fs::PermissionsExt;
    let scene = Scene::new("precompiled-writable");
    let file = scene.path("s3-lease.cwasm");
    let out = scene.run(&["precompile", "--out", file.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let component = load(&scene, &file);
    assert_eq!(component["load"], "compiled (no cache)", "{component}");
    assert!(
        component["precompiled_refused"]
            .as_str()
            .is_some_and(|why| why.starts_with("writable by others")),
        "{component}"
    );
    assert!(!acquire_leaves_the_cache_empty(&scene, &file, "writable"));
}

/// With `S3LEASE_PRECOMPILED` unset, `precompile` writes beside the binary
/// and every command loads it from there (a link to, or copy of, the
/// binary in the scene's directory, so the shared one is left alone).
#[test]
fn the_default_place_is_beside_the_binary() {
    let scene = Scene::new("precompiled-default");
    let binary = scene.path("s3-lease");
    if std::fs::hard_link(crate::support::bin(), &binary).is_err() {
        std::fs::copy(crate::support::bin(), &binary).unwrap();
    }
    // The scene's command, run from that binary.
    let cmd = |args: &[&str]| {
        let scene_cmd = scene.cmd(args);
        let mut c = std::process::Command::new(&binary);
        c.args(scene_cmd.get_args());
        crate::support::with_env_of(&mut c, &scene_cmd);
        c.env_remove("S3LEASE_PRECOMPILED");
        c
    };
    let out = cmd(&["precompile"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let beside = scene.path("s3-lease.cwasm");
    assert!(beside.is_file(), "{}", text(&out.stdout));

    let cache = scene.path("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let out = cmd(&["version", "--json"])
        .env("S3LEASE_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["component"]["load"], "precompiled", "{v}");
    assert_eq!(v["component"]["precompiled"], beside.to_str().unwrap());
    let out = cmd(&["acquire", "beside", "--ttl", "30s"])
        .env("S3LEASE_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(
        std::fs::read_dir(&cache).unwrap().next().is_none(),
        "acquire compiled the component instead of loading the file beside it"
    );
}

//! `s3-lease --store gcs --bucket B`: processes take turns on a key in a
//! Google Cloud Storage bucket (fake-gcs-server, behind the fixture's front
//! that enforces the DELETE precondition the fake ignores), reached through
//! `STORAGE_EMULATOR_HOST` as Google's client libraries reach an emulator
//! (no credential); scripts acquire, renew and release through JSON;
//! fenced writes refuse a stale holder; an elector runs its command as
//! leader; `preflight` passes through the
//! front and fails on the bare fake (exit 81), whose ignored delete
//! condition it names.

use crate::support::{code, text, Scene};
use crate::turns::turns_on_a_fresh_key;
use host_test::fake_gcs;
use std::process::Command;

/// `s3-lease ARGS` on the test bucket at `url` (the front, or the bare
/// fake), no AWS settings.
fn on_gcs_at(scene: &Scene, url: &str, args: &[&str]) -> Command {
    let gcs = fake_gcs::endpoint();
    let mut c = scene.on_store(
        args,
        &[
            ("S3LEASE_STORE", "gcs"),
            ("S3LEASE_BUCKET", &gcs.bucket),
            ("STORAGE_EMULATOR_HOST", url),
        ],
    );
    c.env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_REGION")
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY");
    c
}

fn on_gcs(scene: &Scene, args: &[&str]) -> Command {
    on_gcs_at(scene, &fake_gcs::endpoint().url, args)
}

#[test]
fn processes_take_turns_on_a_gcs_key_without_overlap_and_with_tokens_one_to_n() {
    let scene = Scene::new("gcs-turns");
    // The helper's 4 s ttl is GCS's shortest: `run`'s leader renews every
    // second there (a sixth of it would write faster than GCS takes).
    turns_on_a_fresh_key(&scene, 3, 3, |args| on_gcs(&scene, args));
}

/// `--store gcs` on the command line works as `S3LEASE_STORE=gcs` does; a
/// script's lease goes out and back as JSON; a ttl under GCS's floor (4 s)
/// is refused before any request (exit 78, a configuration error).
#[test]
fn scripts_acquire_renew_and_release_a_gcs_lease_through_json() {
    let scene = Scene::new("gcs-acquire");
    let out = on_gcs(&scene, &["--store", "gcs", "acquire", "k", "--ttl", "30s"])
        .env_remove("S3LEASE_STORE")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lease: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(lease["token"], 1, "{lease}");
    let lease_file = scene.path("lease.json");
    std::fs::write(&lease_file, &out.stdout).unwrap();
    let lease_arg = lease_file.to_str().unwrap();
    let out = on_gcs(&scene, &["acquire", "k", "--ttl", "30s"])
        .output()
        .unwrap();
    assert_ne!(code(&out), 0, "held: {}", text(&out.stdout));
    let out = on_gcs(&scene, &["renew", "--lease", lease_arg])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    std::fs::write(&lease_file, &out.stdout).unwrap();
    let out = on_gcs(&scene, &["release", "--lease", lease_arg])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let out = on_gcs(&scene, &["--json", "status", "k"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&status[0]["token"], &status[0]["live"]),
        (&1.into(), &false.into()),
        "{status}"
    );
    let out = on_gcs(&scene, &["acquire", "k", "--ttl", "2s"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 78, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("ttl-ms 2000"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_elector_on_gcs_runs_its_command_as_leader() {
    let scene = Scene::new("gcs-elect");
    let out = on_gcs(
        &scene,
        &[
            "elect",
            "leader",
            "--ttl",
            "4s",
            "--",
            "sh",
            "-c",
            r#"echo "leader $S3LEASE_TOKEN""#,
        ],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "leader 1");
}

#[test]
fn the_preflight_passes_the_fake_behind_its_front_and_fails_it_bare() {
    let scene = Scene::new("gcs-preflight");
    let out = on_gcs(&scene, &["preflight"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let table = text(&out.stdout);
    println!("s3-lease --store gcs preflight on fake-gcs-server (front):\n{table}");
    assert!(table.contains("this configuration:  safe"), "{table}");
    let bare = &fake_gcs::endpoint().bare_url;
    let out = on_gcs_at(&scene, bare, &["--json", "preflight"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 81, "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let delete = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["capability"] == "if-match-delete")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (&delete["verdict"], &delete["silent"]),
        (&"fail".into(), &true.into()),
        "{report}"
    );
    assert_eq!(report["config_safe"], false, "{report}");
}

/// `s3-lease fenced` on GCS: a holder's write carries its token in the
/// object's metadata, a newer holder's write (from inside `run`) fences the
/// older lease out of both put and delete (exit 80), and `fenced get`
/// reads the body and token back.
#[test]
fn fenced_writes_on_gcs_refuse_a_stale_holder() {
    let scene = Scene::new("gcs-fenced");
    let with_input = |args: &[&str], input: &str| {
        use std::io::Write;
        use std::process::Stdio;
        let mut child = on_gcs(&scene, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = on_gcs(&scene, &["acquire", "k", "--ttl", "30s"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lease_file = scene.path("lease-1.json");
    std::fs::write(&lease_file, &out.stdout).unwrap();
    let lease_1 = lease_file.to_str().unwrap();
    let out = with_input(
        &["--json", "fenced", "put", "data", "--lease", lease_1],
        "one",
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let put: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(put["token"], 1, "{put}");
    let out = on_gcs(&scene, &["release", "--lease", lease_1])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));

    // The newer holder writes from inside `run` (its lease handed over in
    // the environment); the older one is refused, writing and deleting.
    let out = on_gcs(
        &scene,
        &[
            "run",
            "k",
            "--",
            "sh",
            "-c",
            "printf two | s3-lease fenced put data",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let out = with_input(&["fenced", "put", "data", "--lease", lease_1], "stale");
    assert_eq!(code(&out), 80, "{}", text(&out.stderr));
    let out = on_gcs(&scene, &["fenced", "delete", "data", "--lease", lease_1])
        .output()
        .unwrap();
    assert_eq!(code(&out), 80, "{}", text(&out.stderr));
    let out = on_gcs(&scene, &["--json", "fenced", "get", "data"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (got["body"].as_str(), got["token"].as_u64()),
        (Some("two"), Some(2)),
        "{got}"
    );
}

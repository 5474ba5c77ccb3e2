//! Exit codes, JSON output and error messages.

use crate::support::{code, text, Scene};
use serde_json::Value;

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(bytes)))
}

#[test]
fn run_passes_the_commands_status_and_environment_through() {
    let scene = Scene::new("status");
    let out = scene.run(&[
        "run",
        "k",
        "--holder",
        "me",
        "--",
        "sh",
        "-c",
        r#"echo "$S3LEASE_KEY $S3LEASE_TOKEN $S3LEASE_HOLDER"; exit 3"#,
    ]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "k 1 me");
    let out = scene.run(&["run", "k", "--", "no-such-command-s3lease"]);
    assert_eq!(code(&out), 127, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cannot start"),
        "{}",
        text(&out.stderr)
    );
    let state = scene.status("k");
    assert_eq!(
        state["live"], false,
        "released after a failed start: {state}"
    );
}

#[test]
fn scripts_acquire_renew_release_and_write_fenced_through_json() {
    let scene = Scene::new("script");
    let out = scene.run(&["acquire", "k", "--ttl", "60s", "--holder", "script-a"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let first = text(&out.stdout);
    assert_eq!(json(first.as_bytes())["token"], 1);

    // Held: one attempt, or a wait that runs out, exit 75 naming the holder.
    let out = scene.run(&["acquire", "k", "--holder", "script-b"]);
    assert_eq!(code(&out), 75);
    assert!(
        text(&out.stderr).contains("script-a"),
        "{}",
        text(&out.stderr)
    );
    let out = scene.run(&[
        "run", "k", "--wait", "1s", "--holder", "script-b", "--", "true",
    ]);
    assert_eq!(code(&out), 75);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("held by script-a"), "{stderr}");
    assert!(
        stderr.contains("waiting for k"),
        "a line while waiting: {stderr}"
    );
    let out = scene.run(&["--quiet", "run", "k", "--wait", "1s", "--", "true"]);
    assert_eq!(code(&out), 75);
    assert!(
        !text(&out.stderr).contains("waiting for"),
        "{}",
        text(&out.stderr)
    );

    let out = scene.run_with_input(&["renew"], &first);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let renewed = text(&out.stdout);
    let out = scene.run_with_input(&["renew"], &first);
    assert_eq!(
        code(&out),
        79,
        "a spent lease is lost: {}",
        text(&out.stderr)
    );

    // An altered lease is refused before any request.
    let mut forged = json(renewed.as_bytes());
    forged["token"] = 99.into();
    let out = scene.run_with_input(&["renew"], &forged.to_string());
    assert_eq!(code(&out), 65, "{}", text(&out.stderr));
    let out = scene.run_with_input(&["renew"], "not json");
    assert_eq!(code(&out), 65, "{}", text(&out.stderr));

    std::fs::write(scene.path("lease-1"), &renewed).unwrap();
    let lease_1 = scene.path("lease-1").display().to_string();
    let out = scene.run_with_input(
        &[
            "--json",
            "fenced",
            "put",
            "data",
            "--lease",
            &lease_1,
            "--content-type",
            "text/plain",
        ],
        "one",
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(json(&out.stdout)["token"], 1);
    let out = scene.run(&["release", "--lease", &lease_1]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));

    // A newer holder writes; the older lease is fenced out (exit 80).
    // `run` hands its command the lease: a nested `s3-lease fenced put` uses it.
    let out = scene.run(&[
        "run",
        "k",
        "--",
        "sh",
        "-c",
        "printf two | s3-lease fenced put data",
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let out = scene.run_with_input(&["fenced", "put", "data", "--lease", &lease_1], "stale");
    assert_eq!(code(&out), 80, "{}", text(&out.stderr));
    let out = scene.run(&["--json", "fenced", "get", "data"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let got = json(&out.stdout);
    assert_eq!(
        (got["body"].as_str(), got["token"].as_u64()),
        (Some("two"), Some(2)),
        "{got}"
    );
    let out = scene.run(&["fenced", "get", "data"]);
    assert_eq!(out.stdout, b"two");
    let out = scene.run(&["fenced", "get", "absent"]);
    assert_eq!(code(&out), 66);

    let out = scene.run(&["--json", "status", "k", "never"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let all = json(&out.stdout);
    assert_eq!(
        (all[0]["token"].as_u64(), all[0]["live"].as_bool()),
        (Some(2), Some(false)),
        "{all}"
    );
    assert_eq!(all[1]["token"], Value::Null);
    let out = scene.run(&["status", "k"]);
    let table = text(&out.stdout);
    assert!(
        table.starts_with("KEY") && table.contains("HOLDER") && table.contains("TOKEN"),
        "{table}"
    );
}

#[test]
fn bad_flags_and_missing_credentials_say_what_is_wrong() {
    let scene = Scene::new("errors");
    let out = scene.run(&["status", "k", "--no-such-flag"]);
    assert_eq!(code(&out), 64);
    assert!(
        text(&out.stderr).contains("--no-such-flag"),
        "{}",
        text(&out.stderr)
    );
    let out = scene.run(&["run", "k"]);
    assert_eq!(
        code(&out),
        64,
        "run without a command: {}",
        text(&out.stderr)
    );
    let out = scene.run(&["run", "k", "--ttl", "soon", "--", "true"]);
    assert_eq!(code(&out), 64);
    assert!(text(&out.stderr).contains("soon"), "{}", text(&out.stderr));

    let out = scene
        .cmd(&["status", "k"])
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .output()
        .unwrap();
    assert_eq!(code(&out), 78);
    assert!(
        text(&out.stderr).contains("AWS_SECRET_ACCESS_KEY"),
        "{}",
        text(&out.stderr)
    );
    let out = scene
        .cmd(&["--json", "status", "k"])
        .env_remove("S3LEASE_BUCKET")
        .output()
        .unwrap();
    assert_eq!(code(&out), 78);
    let error = json(&out.stderr);
    assert_eq!(error["exit_code"], 78);
    assert!(
        error["error"].as_str().unwrap().contains("bucket"),
        "{error}"
    );

    let out = scene
        .cmd(&["status", "k"])
        .env("AWS_SECRET_ACCESS_KEY", "wrong-secret-s3lease")
        .output()
        .unwrap();
    assert_eq!(code(&out), 77, "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("wrong-secret-s3lease"),
        "secrets never appear"
    );
}

/// Every argument and flag of every command says what it is in `--help`,
/// and `acquire` promises no renewal it does not make.
#[test]
fn help_describes_every_argument_and_flag() {
    let commands: [&[&str]; 12] = [
        &["run"],
        &["elect"],
        &["acquire"],
        &["renew"],
        &["release"],
        &["status"],
        &["fenced", "put"],
        &["fenced", "get"],
        &["fenced", "delete"],
        &["preflight"],
        &["version"],
        &[],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.push("--help");
        let out = std::process::Command::new(crate::support::bin())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{args:?}");
        let help = text(&out.stdout);
        let bare: Vec<&str> = help
            .lines()
            .filter(|line| {
                let t = line.trim();
                let named = t.starts_with('<') || t.starts_with('[') || t.starts_with('-');
                // A name alone on its line: no description follows it.
                let alone = t
                    .split_whitespace()
                    .all(|w| w.starts_with(['<', '[', '-']) || w.ends_with(','));
                line.starts_with("  ") && named && alone
            })
            .collect();
        assert!(
            bare.is_empty(),
            "{args:?}: no description for {bare:?}\n{help}"
        );
    }
    let out = std::process::Command::new(crate::support::bin())
        .args(["acquire", "--help"])
        .output()
        .unwrap();
    let help = text(&out.stdout);
    assert!(!help.contains("renewed every ttl/6 while held"), "{help}");
}

//! `s3-lease --store dynamodb --table T`: processes take turns on a key in
//! a DynamoDB table (dynalite), `status` and `preflight` read the table, and
//! what only S3 can do is refused with exit 78 before any request.

use crate::support::{code, text, Scene};
use host_test::dynalite;
use std::collections::BTreeMap;
use std::process::Command;

/// `s3-lease ARGS` on `table`, with the scene's prefix and cache.
fn on_table(scene: &Scene, table: &str, args: &[&str]) -> Command {
    let mut c = scene.cmd(args);
    c.env("S3LEASE_STORE", "dynamodb")
        .env("S3LEASE_TABLE", table)
        .env("AWS_ENDPOINT_URL_DYNAMODB", &dynalite::shared().url)
        .env("AWS_ACCESS_KEY_ID", &dynalite::shared().access_key_id)
        .env(
            "AWS_SECRET_ACCESS_KEY",
            &dynalite::shared().secret_access_key,
        )
        .env_remove("S3LEASE_BUCKET");
    c
}

#[test]
fn processes_take_turns_on_a_dynamodb_key_without_overlap_and_with_tokens_one_to_n() {
    const PROCESSES: usize = 3;
    const RUNS_EACH: usize = 4;
    let scene = Scene::new("dynamodb-turns");
    let table = dynalite::shared().fresh_table("cli-turns").unwrap();
    let job = r#"echo "$S3LEASE_TOKEN start $(date +%s%N)" >> "$SCENE/log"; sleep 0.05; echo "$S3LEASE_TOKEN end $(date +%s%N)" >> "$SCENE/log""#;
    std::thread::scope(|s| {
        for p in 0..PROCESSES {
            let (scene, table) = (&scene, &table);
            s.spawn(move || {
                for _ in 0..RUNS_EACH {
                    let holder = format!("worker-{p}");
                    let out = on_table(
                        scene,
                        table,
                        &[
                            "run", "turns", "--ttl", "4s", "--quiet", "--holder", &holder, "--",
                            "sh", "-c", job,
                        ],
                    )
                    .output()
                    .unwrap();
                    assert_eq!(code(&out), 0, "worker {p}: {}", text(&out.stderr));
                }
            });
        }
    });
    let mut runs: BTreeMap<u64, (u128, u128)> = BTreeMap::new();
    for line in std::fs::read_to_string(scene.path("log")).unwrap().lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [token, what, at] = parts[..] else {
            panic!("bad line {line:?}")
        };
        let entry = runs.entry(token.parse().unwrap()).or_default();
        match what {
            "start" => entry.0 = at.parse().unwrap(),
            _ => entry.1 = at.parse().unwrap(),
        }
    }
    let tokens: Vec<u64> = runs.keys().copied().collect();
    assert_eq!(
        tokens,
        (1..=(PROCESSES * RUNS_EACH) as u64).collect::<Vec<_>>()
    );
    let mut by_start: Vec<(u128, u128, u64)> =
        runs.iter().map(|(t, (s, e))| (*s, *e, *t)).collect();
    by_start.sort();
    for pair in by_start.windows(2) {
        assert!(
            pair[1].0 >= pair[0].1,
            "token {} started before {} ended",
            pair[1].2,
            pair[0].2
        );
        assert!(pair[1].2 > pair[0].2, "tokens rise in the order runs start");
    }

    let out = on_table(&scene, &table, &["--json", "status", "turns"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        status[0]["token"],
        (PROCESSES * RUNS_EACH) as u64,
        "{status}"
    );
    assert_eq!(status[0]["live"], false, "released: {status}");
}

#[test]
fn the_preflight_checks_the_table_and_what_only_s3_does_is_refused() {
    let scene = Scene::new("dynamodb-refusals");
    let table = dynalite::shared().fresh_table("cli-preflight").unwrap();
    let out = on_table(&scene, &table, &["--json", "preflight"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdict = |name: &str| {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["capability"] == name)
            .map(|r| r["verdict"].as_str().unwrap().to_string())
    };
    assert_eq!(
        verdict("table-key-schema").as_deref(),
        Some("pass"),
        "{report}"
    );
    assert_eq!(verdict("if-match-put").as_deref(), Some("pass"), "{report}");
    assert_eq!(
        verdict("payload-hash"),
        None,
        "not a DynamoDB capability: {report}"
    );

    let refused = |args: &[&str], says: &str| {
        let out = on_table(&scene, &table, args).output().unwrap();
        assert_eq!(code(&out), 78, "{args:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    };
    refused(&["fenced", "get", "data"], "DynamoDB table");
    refused(
        &["--strategy", "epoch-objects", "status", "k"],
        "single-object",
    );
    refused(&["--expiry-clock", "server", "status", "k"], "observed");
    let out = on_table(&scene, &table, &["status", "k"])
        .env_remove("S3LEASE_TABLE")
        .output()
        .unwrap();
    assert_eq!(code(&out), 78, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--table"),
        "{}",
        text(&out.stderr)
    );
    let out = on_table(&scene, "no-such-table", &["status", "k"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 78, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no such DynamoDB table"),
        "{}",
        text(&out.stderr)
    );
}

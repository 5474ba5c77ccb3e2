//! The formats another client shares with `s3-lease`: the lease JSON that
//! `acquire` prints and `renew` and `release` read, against its example in
//! docs/command-line.md; and one lock object shared with a client of the
//! plain single-object design (`scripts/design_client.py`, boto3, which
//! knows only `expires_at` and `token`) under `--expiry-clock holder`, as
//! docs/protocol.md says to run beside such a client.

use super::support::*;
use host_test::env_or_workspace_path;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The block of `document` marked `<!-- checked: NAME -->`.
fn checked_block(document: &str, name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(document);
    let text = std::fs::read_to_string(&path).unwrap();
    let marker = format!("<!-- checked: {name} -->");
    let after = text
        .split_once(&marker)
        .unwrap_or_else(|| panic!("{document} has no block marked {marker}"))
        .1;
    let body = after.trim_start().split_once('\n').unwrap().1;
    body.split_once("\n```").unwrap().0.to_string()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `s3-lease acquire` prints one line of JSON with the fields, types and
/// relations of the document's example; `renew` reads it back and prints
/// another such line, `release` reads that.
#[test]
fn the_lease_json_is_the_documents() {
    let scene = Scene::new("lease-json");
    let shown: Value = serde_json::from_str(&checked_block("docs/command-line.md", "lease"))
        .expect("the document's lease is JSON");
    let before = now_ms();
    let out = scene.run(&[
        "acquire",
        "nightly-report",
        "--ttl",
        "30s",
        "--holder",
        "vm/530",
        "--metadata",
        "10.0.0.7:8080",
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    assert_eq!(printed.lines().count(), 1, "one line: {printed}");
    let renewed = scene.run_with_input(&["renew"], &printed);
    assert_eq!(code(&renewed), 0, "{}", text(&renewed.stderr));
    for line in [printed.clone(), text(&renewed.stdout)] {
        let lease: Value = serde_json::from_str(&line).unwrap();
        let (lease, shown) = (lease.as_object().unwrap(), shown.as_object().unwrap());
        let names = |o: &serde_json::Map<String, Value>| o.keys().cloned().collect::<Vec<_>>();
        assert_eq!(names(lease), names(shown), "the fields: {line}");
        for (name, value) in lease {
            assert_eq!(kind(value), kind(&shown[name]), "{name}: {line}");
        }
        for l in [lease, shown] {
            // A write's time plus the ttl: the grant's, or a later renew's.
            let ms = |name: &str| l[name].as_u64().unwrap();
            let written_at_ms = ms("expires_at_ms") - ms("ttl_ms");
            if l == shown || line == printed {
                assert_eq!(written_at_ms, ms("acquired_at_ms"), "a grant: {l:?}");
            } else {
                assert!(written_at_ms >= ms("acquired_at_ms"), "a renew: {l:?}");
            }
            let seal = l["seal"].as_str().unwrap();
            assert!(
                seal.len() == 35
                    && seal.starts_with("v3.")
                    && seal[3..].bytes().all(|b| b.is_ascii_hexdigit()),
                "{seal}"
            );
            let etag = l["etag"].as_str().unwrap();
            assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
        }
        assert_eq!(lease["key"], "nightly-report");
        assert_eq!(lease["holder_id"], "vm/530");
        assert_eq!(lease["metadata"], "10.0.0.7:8080");
        assert_eq!(lease["ttl_ms"], 30_000);
        assert!(lease["acquired_at_ms"].as_u64().unwrap() >= before);
    }
    let released = scene.run_with_input(&["release"], &text(&renewed.stdout));
    assert_eq!(code(&released), 0, "{}", text(&released.stderr));
    // The lock object holds what the lease says, on the lease's terms.
    let state = scene.status("nightly-report");
    assert_eq!(
        (state["live"].as_bool(), state["token"].as_u64()),
        (Some(false), Some(1))
    );
}

const SETUP_HINT: &str = "run `source scripts/setup.sh` (it installs .venv with boto3), \
     or point S3LEASE_PYTHON at a python that has boto3";

/// `scripts/design_client.py ARGS` on the scene's bucket: its JSON lines.
fn design_client(scene: &Scene, key: &str, args: &[&str]) -> Vec<Value> {
    let e = &scene.endpoint;
    let python = env_or_workspace_path("S3LEASE_PYTHON", ".venv/bin/python");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/design_client.py");
    let out = Command::new(&python)
        .arg(&script)
        .args(["--endpoint", &e.url, "--region", &e.region])
        .args(["--bucket", &e.bucket])
        .args(["--key", &format!("{}{key}", scene.prefix)])
        .args(args)
        .env("AWS_ACCESS_KEY_ID", &e.access_key_id)
        .env("AWS_SECRET_ACCESS_KEY", &e.secret_access_key)
        .env(
            "AWS_SESSION_TOKEN",
            e.session_token.as_deref().unwrap_or(""),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|err| panic!("cannot run {} ({err}); {SETUP_HINT}", python.display()));
    let stderr = text(&out.stderr);
    assert!(
        out.status.success(),
        "design client: {stderr}; {SETUP_HINT}"
    );
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A grant that arrives past `expires_at_ms` (the one it took over) by at
/// most this: the waiter looks again soon after the expiry it read.
const PROMPT_MS: u64 = 2_500;

/// Under `--expiry-clock holder`, each side waits out a lease the other
/// abandoned (a holder that crashed) until its `expires_at`, takes it
/// promptly after, and takes the next token.
#[test]
fn beside_a_plain_design_client_each_waits_out_the_others_abandoned_lease() {
    let scene = Scene::new("plain-design");
    let key = "shared";

    // The plain client takes the key and abandons it: a 4 s lease.
    let design = design_client(&scene, key, &["--threads", "1", "--ttl", "4", "--abandon"]);
    assert_eq!(design.len(), 1, "{design:?}");
    let abandoned_until_ms = (design[0]["expires_at"].as_f64().unwrap() * 1000.0) as u64;
    let design_token = design[0]["token"].as_u64().unwrap();
    let out = scene.run(&[
        "--expiry-clock",
        "holder",
        "acquire",
        key,
        "--ttl",
        "4s",
        "--wait",
        "20s",
        "--holder",
        "cli",
    ]);
    let granted_ms = now_ms();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lease: Value = serde_json::from_slice(&out.stdout).unwrap();
    let acquired_at_ms = lease["acquired_at_ms"].as_u64().unwrap();
    assert_eq!(lease["token"].as_u64(), Some(design_token + 1), "{lease}");
    assert!(
        acquired_at_ms > abandoned_until_ms,
        "taken at {acquired_at_ms}, before the plain client's expires_at {abandoned_until_ms}"
    );
    assert!(
        granted_ms <= abandoned_until_ms + PROMPT_MS,
        "taken {} ms after the plain client's lease expired",
        granted_ms - abandoned_until_ms
    );

    // Now `s3-lease` abandons its lease (`acquire` exits holding it), and
    // the plain client, judging by `expires_at` alone, waits it out.
    let expires_at_ms = lease["expires_at_ms"].as_u64().unwrap();
    let grants = design_client(
        &scene,
        key,
        &[
            "--threads",
            "1",
            "--ttl",
            "4",
            "--duration",
            "6",
            "--renew-chance",
            "0",
            "--backoff-min",
            "20",
            "--backoff-max",
            "50",
        ],
    );
    let first = grants.first().expect("the plain client never took the key");
    let taken_ms = (first["acquired"].as_f64().unwrap() * 1000.0) as u64;
    assert_eq!(first["token"].as_u64(), Some(design_token + 2), "{first}");
    assert!(
        taken_ms > expires_at_ms,
        "the plain client took s3-lease's lease at {taken_ms}, before its expires_at {expires_at_ms}"
    );
    assert!(
        taken_ms <= expires_at_ms + PROMPT_MS,
        "the plain client took it {} ms after it expired",
        taken_ms - expires_at_ms
    );
    let last = grants.last().unwrap();
    let state = scene.status(key);
    assert_eq!(state["token"], last["token"], "{state}");
    assert_eq!(state["live"], false, "{state}");
}

/// Both sides contend, alive, for one key: `s3-lease run` (each run's
/// command records when it ran and its token) and two threads of the
/// plain client. No two holders at once, tokens rising across both.
#[test]
fn beside_a_plain_design_client_runs_and_grants_take_turns() {
    let scene = Scene::new("plain-turns");
    let key = "turns";
    let log = scene.path("runs");
    let contend = Duration::from_secs(6);
    let start_at = now_ms() + 1_500;
    // Each run's start and end, by the shell's pid, in microseconds.
    let script = format!(
        "echo \"start $$ $(date +%s%6N) $S3LEASE_TOKEN\" >> {log}; sleep 0.05; \
         echo \"end $$ $(date +%s%6N)\" >> {log}",
        log = log.display()
    );
    let runners: Vec<_> = (0..2)
        .map(|n| {
            let mut cmd = scene.cmd(&[
                "--expiry-clock",
                "holder",
                "run",
                key,
                "--ttl",
                "3s",
                "--wait",
                "20s",
                "--holder",
                &format!("cli-{n}"),
                "--quiet",
                "--",
                "sh",
                "-c",
                &script,
            ]);
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
            let until = start_at + contend.as_millis() as u64;
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(start_at.saturating_sub(now_ms())));
                let mut runs = 0;
                while now_ms() < until {
                    let out = cmd.output().unwrap();
                    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
                    runs += 1;
                }
                runs
            })
        })
        .collect();
    let design = design_client(
        &scene,
        key,
        &[
            "--threads",
            "2",
            "--ttl",
            "3",
            "--duration",
            &contend.as_secs().to_string(),
            "--start-at",
            &format!("{}", start_at as f64 / 1000.0),
            "--hold-min",
            "20",
            "--hold-max",
            "60",
            "--backoff-min",
            "50",
            "--backoff-max",
            "150",
        ],
    );
    let cli_runs: usize = runners.into_iter().map(|r| r.join().unwrap()).sum();

    // Every command's run (microseconds) and every plain grant.
    let mut runs = Vec::new();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let lines: Vec<Vec<&str>> = logged
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    for start in lines.iter().filter(|f| f[0] == "start") {
        let end = lines
            .iter()
            .find(|f| f[0] == "end" && f[1] == start[1])
            .unwrap_or_else(|| panic!("no end for {start:?}"));
        runs.push(Run {
            who: runs.len(),
            token: Some(start[3].parse().unwrap()),
            start: start[2].parse().unwrap(),
            end: end[2].parse().unwrap(),
        });
    }
    let from_cli = runs.len();
    for g in &design {
        assert_eq!(g["release"], "ok", "{g}");
        let us = |name: &str| (g[name].as_f64().unwrap() * 1e6) as u64;
        runs.push(Run {
            who: runs.len(),
            token: g["token"].as_u64(),
            start: us("acquired"),
            end: us("released"),
        });
    }
    println!(
        "plain-turns: {from_cli} s3-lease runs ({cli_runs} commands), {} plain grants",
        design.len()
    );
    assert_eq!(from_cli, cli_runs, "every run's command ran once");
    assert!(
        from_cli > 0 && !design.is_empty(),
        "both sides held the key"
    );
    let violations = turn_violations(&runs);
    assert!(violations.is_empty(), "{violations:#?}");
}

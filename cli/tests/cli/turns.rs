//! Four processes take turns on one key through `s3-lease run`; and the
//! turn-taking the Azure and DynamoDB tests share.

use crate::support::{code, text, turn_violations, Run, Scene};
use std::collections::BTreeMap;
use std::process::Command;

const PROCESSES: usize = 4;
const RUNS_EACH: usize = 13;

/// `processes` threads each `s3-lease run turns` `runs_each` times in a
/// row (ttl 4 s), through `command` (the store's settings), every run
/// succeeding. Each run appends `TOKEN start NANOS` and `TOKEN end NANOS`
/// to the scene's log (appends of short lines are atomic), holding `hold`
/// seconds between. Returns the runs (times in µs, so the checker's
/// messages read in ms), sorted by start.
pub fn take_turns(
    scene: &Scene,
    processes: usize,
    runs_each: usize,
    hold: &str,
    command: impl Fn(&[&str]) -> Command + Sync,
) -> Vec<Run> {
    let job = format!(
        r#"echo "$S3LEASE_TOKEN start $(date +%s%N)" >> "$SCENE/log"; sleep {hold}; echo "$S3LEASE_TOKEN end $(date +%s%N)" >> "$SCENE/log""#
    );
    std::thread::scope(|s| {
        for p in 0..processes {
            let (command, job) = (&command, &job);
            s.spawn(move || {
                for _ in 0..runs_each {
                    let holder = format!("worker-{p}");
                    let out = command(&[
                        "run", "turns", "--ttl", "4s", "--quiet", "--holder", &holder, "--", "sh",
                        "-c", job,
                    ])
                    .output()
                    .unwrap();
                    assert_eq!(code(&out), 0, "worker {p}: {}", text(&out.stderr));
                }
            });
        }
    });

    let mut runs: BTreeMap<u64, (Option<u64>, Option<u64>)> = BTreeMap::new();
    for line in std::fs::read_to_string(scene.path("log")).unwrap().lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [token, what, at] = parts[..] else {
            panic!("bad line {line:?}")
        };
        let entry = runs.entry(token.parse().unwrap()).or_default();
        let at: u64 = at.parse().unwrap();
        match what {
            "start" => assert!(entry.0.replace(at).is_none(), "token {token} started twice"),
            "end" => assert!(entry.1.replace(at).is_none(), "token {token} ended twice"),
            other => panic!("bad line {other}"),
        }
    }
    let mut by_start: Vec<Run> = runs
        .iter()
        .map(|(&token, (start, end))| Run {
            // The log does not say which worker ran it.
            who: 0,
            token: Some(token),
            // Rounded outwards: an overlap of any ns still shows.
            start: start.unwrap() / 1_000,
            end: end.unwrap().div_ceil(1_000),
        })
        .collect();
    by_start.sort_by_key(|r| r.start);
    by_start
}

/// Every run ended before the next started, with a higher token; the
/// tokens are 1 to N; `status` (through `command`) then reads the last
/// token, released.
pub fn turns_on_a_fresh_key(
    scene: &Scene,
    processes: usize,
    runs_each: usize,
    command: impl Fn(&[&str]) -> Command + Sync,
) {
    // With the grant log on (`--audit`): `audit verify` then proves the
    // turns from the store alone.
    let audited = |args: &[&str]| {
        let mut all = vec!["--audit"];
        all.extend_from_slice(args);
        command(&all)
    };
    let runs = take_turns(scene, processes, runs_each, "0.05", audited);
    let n = (processes * runs_each) as u64;
    let mut tokens: Vec<u64> = runs.iter().filter_map(|r| r.token).collect();
    tokens.sort();
    assert_eq!(tokens, (1..=n).collect::<Vec<_>>());
    assert_eq!(turn_violations(&runs), vec![], "{runs:?}");
    let out = command(&["--json", "status", "turns"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status[0]["token"], n, "{status}");
    assert_eq!(status[0]["live"], false, "released: {status}");
    let out = command(&["audit", "verify", "turns"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        text(&out.stdout).contains("proven"),
        "{}",
        text(&out.stdout)
    );
    let out = command(&["--json", "audit", "turns"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let log: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ends: Vec<_> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["token"].as_u64().unwrap(), e["ended"].as_str().unwrap()))
        .collect();
    assert_eq!(ends, (1..=n).map(|t| (t, "released")).collect::<Vec<_>>());
}

/// Sorted by start, every run must end before the next starts, with a
/// higher token.
#[test]
fn four_processes_take_turns_without_overlap_and_with_rising_tokens() {
    let scene = Scene::new("turns");
    let audited = |args: &[&str]| {
        let mut all = vec!["--audit"];
        all.extend_from_slice(args);
        scene.cmd(&all)
    };
    let runs = take_turns(&scene, PROCESSES, RUNS_EACH, "0.03", audited);
    assert_eq!(
        runs.len(),
        PROCESSES * RUNS_EACH,
        "every run has a token of its own"
    );
    assert_eq!(turn_violations(&runs), vec![], "{runs:?}");
    // The grant log proves the same from the store alone.
    let out = scene.cmd(&["audit", "verify", "turns"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    println!(
        "{} runs by {PROCESSES} processes: no overlap, tokens {:?} .. {:?} rising",
        runs.len(),
        runs[0].token,
        runs[runs.len() - 1].token
    );
}

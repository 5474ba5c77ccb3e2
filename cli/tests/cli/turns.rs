//! Four processes take turns on one key through `s3-lease run`; and the
//! turn-taking the Azure and DynamoDB tests share.

use crate::support::{code, text, Scene};
use std::collections::BTreeMap;
use std::process::Command;

const PROCESSES: usize = 4;
const RUNS_EACH: usize = 13;

/// `processes` threads each `s3-lease run turns` `runs_each` times in a
/// row (ttl 4 s), through `command` (the store's settings), every run
/// succeeding. Each run appends `TOKEN start NANOS` and `TOKEN end NANOS`
/// to the scene's log (appends of short lines are atomic), holding `hold`
/// seconds between. Returns the runs as (start, end, token), sorted by
/// start.
pub fn take_turns(
    scene: &Scene,
    processes: usize,
    runs_each: usize,
    hold: &str,
    command: impl Fn(&[&str]) -> Command + Sync,
) -> Vec<(u128, u128, u64)> {
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

    let mut runs: BTreeMap<u64, (Option<u128>, Option<u128>)> = BTreeMap::new();
    for line in std::fs::read_to_string(scene.path("log")).unwrap().lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [token, what, at] = parts[..] else {
            panic!("bad line {line:?}")
        };
        let entry = runs.entry(token.parse().unwrap()).or_default();
        let at: u128 = at.parse().unwrap();
        match what {
            "start" => assert!(entry.0.replace(at).is_none(), "token {token} started twice"),
            "end" => assert!(entry.1.replace(at).is_none(), "token {token} ended twice"),
            other => panic!("bad line {other}"),
        }
    }
    let mut by_start: Vec<(u128, u128, u64)> = runs
        .iter()
        .map(|(token, (start, end))| (start.unwrap(), end.unwrap(), *token))
        .collect();
    by_start.sort();
    by_start
}

/// Sorted by start, every run must end before the next starts, with a
/// higher token.
#[test]
fn four_processes_take_turns_without_overlap_and_with_rising_tokens() {
    let scene = Scene::new("turns");
    let by_start = take_turns(&scene, PROCESSES, RUNS_EACH, "0.03", |args| scene.cmd(args));
    assert_eq!(
        by_start.len(),
        PROCESSES * RUNS_EACH,
        "every run has a token of its own"
    );
    for pair in by_start.windows(2) {
        let ((_, end, token), (next_start, _, next_token)) = (pair[0], pair[1]);
        assert!(
            next_start >= end,
            "token {next_token} started {} µs before token {token} ended",
            (end - next_start) / 1000
        );
        assert!(
            next_token > token,
            "token {next_token} ran after token {token}"
        );
    }
    println!(
        "{} runs by {PROCESSES} processes: no overlap, tokens {} .. {} rising",
        by_start.len(),
        by_start[0].2,
        by_start[by_start.len() - 1].2
    );
}

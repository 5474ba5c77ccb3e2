//! `s3-lease run KEY --limit N` and `--fair` against SeaweedFS, judged from
//! the commands' own start and end times: never more than N at once, every
//! run ran, fair waiters ran in the order they started, and a waiter killed
//! in the queue delays the others by at most its ttl.

use crate::support::{code, text, wait_for, Scene};
use std::process::{Child, Output};
use std::time::{Duration, Instant};

/// Each run appends `HOLDER TOKEN start|end NANOS` to the scene's log.
const JOB: &str = r#"echo "$S3LEASE_HOLDER $S3LEASE_TOKEN start $(date +%s%N)" >> "$SCENE/log"; sleep "$HOLD"; echo "$S3LEASE_HOLDER $S3LEASE_TOKEN end $(date +%s%N)" >> "$SCENE/log""#;

#[derive(Debug, Clone)]
struct Run {
    holder: String,
    token: u64,
    start: u128,
    end: u128,
}

fn runs(scene: &Scene) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let log = std::fs::read_to_string(scene.path("log")).unwrap_or_default();
    for line in log.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [holder, token, what, at] = parts[..] else {
            panic!("bad line {line:?}")
        };
        let (token, at): (u64, u128) = (token.parse().unwrap(), at.parse().unwrap());
        match what {
            "start" => runs.push(Run {
                holder: holder.into(),
                token,
                start: at,
                end: 0,
            }),
            "end" => {
                let run = runs
                    .iter_mut()
                    .find(|r| r.token == token)
                    .expect("an end without a start");
                run.end = at;
            }
            other => panic!("bad line {other}"),
        }
    }
    runs.sort_by_key(|r| r.start);
    runs
}

/// The most runs in progress at any instant.
fn most_at_once(runs: &[Run]) -> usize {
    let mut edges: Vec<(u128, i32)> = runs
        .iter()
        .flat_map(|r| [(r.start, 1), (r.end, -1)])
        .collect();
    // An end before a start at the same instant.
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

fn spawn_run(scene: &Scene, key: &str, holder: &str, extra: &[&str], hold: &str) -> Child {
    let mut args = vec!["run", key, "--holder", holder];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "-c", JOB]);
    let mut cmd = scene.cmd(&args);
    cmd.env("HOLD", hold)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd.spawn().unwrap()
}

fn finish(child: Child, who: &str) -> Output {
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{who}: {}", text(&out.stderr));
    out
}

#[test]
fn twelve_runs_with_limit_three_never_exceed_three_at_once_and_all_run() {
    let scene = Scene::new("semaphore-12");
    let started = Instant::now();
    let children: Vec<(String, Child)> = (0..12)
        .map(|i| {
            let holder = format!("job-{i:02}");
            let child = spawn_run(
                &scene,
                "backups",
                &holder,
                &["--limit", "3", "--ttl", "10s"],
                "1",
            );
            (holder, child)
        })
        .collect();
    for (holder, child) in children {
        finish(child, &holder);
    }
    let runs = runs(&scene);
    assert_eq!(runs.len(), 12, "every run ran: {runs:?}");
    assert!(
        runs.iter().all(|r| r.end > r.start),
        "every run ended: {runs:?}"
    );
    let most = most_at_once(&runs);
    assert!(most <= 3, "{most} commands ran at once: {runs:?}");
    let mut tokens: Vec<u64> = runs.iter().map(|r| r.token).collect();
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens.len(), 12, "each run had a token of its own");
    println!(
        "12 runs of 1 s with --limit 3: at most {most} at once, all done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Starts `n` fair waiters at least 200 ms apart, each holding 1 s;
/// returns them in the order they started. "Started" is when a waiter's
/// place (or slot) shows in `status`: a process that starts slowly on a
/// busy machine has not asked yet, and fairness is by the order of asking.
fn fair_waiters(scene: &Scene, key: &str, n: usize, ttl: &str) -> Vec<(String, Child)> {
    (0..n)
        .map(|i| {
            let holder = format!("w{i}");
            let asked = Instant::now();
            let child = spawn_run(scene, key, &holder, &["--fair", "--ttl", ttl], "1");
            wait_for(Duration::from_secs(10), &format!("{holder} to ask"), || {
                let log = std::fs::read_to_string(scene.path("log")).unwrap_or_default();
                let status = scene.status(key).to_string();
                status.contains(&format!("\"{holder}\"")) || log.contains(&format!("{holder} "))
            });
            std::thread::sleep(Duration::from_millis(200).saturating_sub(asked.elapsed()));
            (holder, child)
        })
        .collect()
}

#[test]
fn fair_waiters_run_in_the_order_they_started() {
    let scene = Scene::new("fair-8");
    let t0 = Instant::now();
    let waiters = fair_waiters(&scene, "deploy", 8, "3s");
    for (holder, child) in waiters {
        finish(child, &holder);
    }
    let runs = runs(&scene);
    let order: Vec<&str> = runs.iter().map(|r| r.holder.as_str()).collect();
    let want: Vec<String> = (0..8).map(|i| format!("w{i}")).collect();
    assert_eq!(order, want, "runs in start order");
    assert_eq!(most_at_once(&runs), 1);
    // The last asked at least 1.4 s after the first began and waited for
    // 7 holds of 1 s, plus each handover: a poll (a tenth of the ttl,
    // 300 ms) and a process start. Slack: 0.6 s per handover.
    let last = &runs[7];
    let first_start = runs[0].start;
    let waited_s = (last.start - first_start) as f64 / 1e9 - 1.4;
    assert!(
        waited_s <= 7.0 + 7.0 * 0.6,
        "the last waited {waited_s:.1} s"
    );
    println!(
        "8 fair waiters 200 ms apart, 1 s each: in start order; the last waited {waited_s:.2} s \
         (7 holds of 1 s before it); all done in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn a_waiter_killed_in_the_queue_delays_the_others_by_at_most_its_ttl() {
    let scene = Scene::new("fair-killed");
    let ttl_s = 3.0;
    let mut waiters = fair_waiters(&scene, "deploy", 5, "3s");
    // w2 dies (SIGKILL: no leaving the queue) while it waits, behind w1.
    assert!(runs(&scene).len() <= 2, "w2 has not run yet");
    let (_, mut killed) = waiters.remove(2);
    killed.kill().unwrap();
    let _ = killed.wait();
    let killed_at = Instant::now();
    for (holder, child) in waiters {
        finish(child, &holder);
    }
    let runs = runs(&scene);
    let order: Vec<&str> = runs.iter().map(|r| r.holder.as_str()).collect();
    assert_eq!(
        order,
        ["w0", "w1", "w3", "w4"],
        "the others, in start order"
    );
    // The handover from w1 to w3 waits for w2's place to expire: at most
    // its ttl after it was last renewed, plus the server clock's slack
    // (2 s) and whole-second dates (1 s), plus a poll.
    let gap_s = (runs[2].start - runs[1].end) as f64 / 1e9;
    assert!(
        gap_s <= ttl_s + 3.0 + 0.5,
        "w3 started {gap_s:.1} s after w1 ended"
    );
    println!(
        "a waiter killed mid-queue: the next handover took {gap_s:.2} s (ttl 3 s); \
         the rest took {:.1} s after the kill",
        killed_at.elapsed().as_secs_f64()
    );
}

#[test]
fn status_shows_every_holder_and_the_queue_in_order_and_waiters_say_their_place() {
    let scene = Scene::new("semaphore-status");
    let a = spawn_run(
        &scene,
        "pool",
        "holder-a",
        &["--limit", "2", "--fair", "--ttl", "4s"],
        "4",
    );
    let b = spawn_run(
        &scene,
        "pool",
        "holder-b",
        &["--limit", "2", "--fair", "--ttl", "4s"],
        "4",
    );
    wait_for(Duration::from_secs(10), "two holders", || {
        runs(&scene).len() == 2
    });
    let c = spawn_run(
        &scene,
        "pool",
        "waiter-c",
        &["--limit", "2", "--fair", "--ttl", "4s"],
        "0",
    );
    std::thread::sleep(Duration::from_millis(600));
    let d = spawn_run(
        &scene,
        "pool",
        "waiter-d",
        &["--limit", "2", "--fair", "--ttl", "4s"],
        "0",
    );
    std::thread::sleep(Duration::from_millis(800));
    let status = scene.status("pool");
    let sem = &status["semaphore"];
    assert_eq!(sem["limit"], 2, "{status}");
    let holders: Vec<&str> = sem["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["holder_id"].as_str().unwrap())
        .collect();
    let queue: Vec<&str> = sem["queue"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["holder_id"].as_str().unwrap())
        .collect();
    assert_eq!(holders.len(), 2, "{status}");
    assert!(holders.contains(&"holder-a") && holders.contains(&"holder-b"));
    assert_eq!(queue, ["waiter-c", "waiter-d"], "{status}");
    let table = scene.run(&["status", "pool"]);
    let table = text(&table.stdout);
    assert!(table.contains("2 of 2 slots held, 2 waiting"), "{table}");
    assert!(
        table.contains("queue 1") && table.contains("waiter-c"),
        "{table}"
    );
    println!("{table}");
    // Another limit is refused while they hold, naming both.
    let out = scene.run(&["acquire", "pool", "--limit", "3"]);
    assert_eq!(code(&out), 64, "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("admits 2") && err.contains("asked for 3"),
        "{err}"
    );
    for (who, child) in [("a", a), ("b", b)] {
        finish(child, who);
    }
    let c = finish(c, "c");
    let d = finish(d, "d");
    assert!(
        text(&c.stderr).contains("place 1 in the queue"),
        "{}",
        text(&c.stderr)
    );
    assert!(
        text(&d.stderr).contains("place 2 in the queue"),
        "{}",
        text(&d.stderr)
    );
}

#[test]
fn acquire_with_a_limit_prints_slot_leases_that_renew_and_release() {
    let scene = Scene::new("semaphore-acquire");
    let mut leases = Vec::new();
    for h in ["a", "b"] {
        let out = scene.run(&["acquire", "k", "--limit", "2", "--holder", h]);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        leases.push(text(&out.stdout));
    }
    let out = scene.run(&["acquire", "k", "--limit", "2", "--holder", "c"]);
    assert_eq!(code(&out), 75, "no free slot: {}", text(&out.stderr));
    let renewed = scene.run_with_input(&["renew"], &leases[0]);
    assert_eq!(code(&renewed), 0, "{}", text(&renewed.stderr));
    let released = scene.run_with_input(&["release"], &text(&renewed.stdout));
    assert_eq!(code(&released), 0, "{}", text(&released.stderr));
    let out = scene.run(&["acquire", "k", "--limit", "2", "--holder", "c"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lease: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(lease["token"], 3);
    // b's slot is still b's.
    let out = scene.run_with_input(&["renew"], &leases[1]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
}

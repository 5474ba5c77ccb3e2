//! Holders that die, locks taken away, signals, and elections.

use crate::support::{code, signal, take_behind_its_back, text, wait_for, Scene};
use std::time::{Duration, Instant};

// Not shorter: SeaweedFS serves a key's requests slowly while other tests
// race on theirs, and a holder whose renews stall past half the ttl steps
// down (correctly) and fails the test for the wrong reason.
const TTL: &str = "4s";
const TTL_MS: u64 = 4_000;

fn token_of(scene: &Scene, key: &str) -> Option<u64> {
    let state = scene.status(key);
    state["live"]
        .as_bool()
        .unwrap()
        .then(|| state["token"].as_u64().unwrap())
}

/// SIGKILL leaves the lease to expire: the next `run` gets it within the
/// ttl plus slack (the newcomer judges expiry by its own observation, plus
/// the store's whole-second dates), with a higher token.
#[test]
fn a_holder_killed_with_sigkill_is_followed_within_the_ttl() {
    let scene = Scene::new("sigkill");
    let mut holder = scene.spawn(&[
        "run",
        "k",
        "--ttl",
        TTL,
        "--",
        "sh",
        "-c",
        r#"echo $$ > "$SCENE/pid"; exec sleep 60"#,
    ]);
    let started = Instant::now();
    while token_of(&scene, "k").is_none() {
        if started.elapsed() > Duration::from_secs(30) || holder.try_wait().unwrap().is_some() {
            let _ = holder.kill();
            let out = holder.wait_with_output().unwrap();
            panic!("no first holder ({}): {}", out.status, text(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let first = token_of(&scene, "k").unwrap();
    signal(&holder, 9);
    holder.wait().unwrap();
    let killed = Instant::now();
    // Its command is orphaned, not ours to keep.
    let orphan = std::fs::read_to_string(scene.path("pid")).unwrap();
    let _ = std::process::Command::new("kill")
        .arg(orphan.trim())
        .status();

    let out = scene.run(&[
        "run",
        "k",
        "--ttl",
        TTL,
        "--",
        "sh",
        "-c",
        "echo $S3LEASE_TOKEN",
    ]);
    let waited = killed.elapsed();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let second: u64 = text(&out.stdout).trim().parse().unwrap();
    assert!(second > first, "token {second} after {first}");
    let slack = Duration::from_millis(4_000);
    assert!(
        waited <= Duration::from_millis(TTL_MS) + slack,
        "followed after {waited:?}, ttl {TTL_MS} ms"
    );
    println!("SIGKILLed holder (token {first}) followed after {waited:?} with token {second}");
}

/// The lock object rewritten behind the holder's back: its next renew
/// (every ttl/6) fails its If-Match, and the command gets SIGTERM.
#[test]
fn a_command_whose_lock_is_taken_gets_sigterm_within_the_renew_period() {
    let scene = Scene::new("taken");
    let job = r#"trap 'echo TERM > "$SCENE/term"; exit 143' TERM; touch "$SCENE/ready"; while :; do sleep 0.02; done"#;
    let holder = scene.spawn(&["run", "k", "--ttl", TTL, "--", "sh", "-c", job]);
    wait_for(Duration::from_secs(30), "the command", || {
        scene.path("ready").exists()
    });

    take_behind_its_back(&scene, "k");
    let taken = Instant::now();
    let renew_period = Duration::from_millis(TTL_MS / 6);
    wait_for(
        renew_period + Duration::from_millis(1_500),
        "SIGTERM",
        || scene.path("term").exists(),
    );
    let after = taken.elapsed();
    let out = holder.wait_with_output().unwrap();
    assert_eq!(
        code(&out),
        79,
        "exit code for a lost lock: {}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("lost the lock"),
        "{}",
        text(&out.stderr)
    );
    println!("lock rewritten: SIGTERM after {after:?} (renew period {renew_period:?})");
}

/// SIGTERM to `s3-lease run` goes to the command; `run` exits with the
/// command's status and releases the lock.
#[test]
fn sigterm_is_forwarded_and_the_lock_released() {
    let scene = Scene::new("forward");
    let job = r#"trap 'exit 42' TERM; touch "$SCENE/ready"; while :; do sleep 0.02; done"#;
    let holder = scene.spawn(&["run", "k", "--ttl", "30s", "--", "sh", "-c", job]);
    wait_for(Duration::from_secs(30), "the command", || {
        scene.path("ready").exists()
    });
    signal(&holder, 15);
    let out = holder.wait_with_output().unwrap();
    assert_eq!(code(&out), 42, "{}", text(&out.stderr));
    assert_eq!(token_of(&scene, "k"), None, "released on exit");
}

/// `elect` runs the command while leading; when the lock is taken away
/// (rewritten behind its back) the command is stopped, and once the other
/// lease has expired `elect` leads again with a higher token and runs the
/// command again. `elect --watch` sees each change.
#[test]
fn elect_runs_the_command_each_term_and_watch_reports_changes() {
    let scene = Scene::new("elect");
    let watch = scene.spawn(&["--json", "elect", "k", "--watch", "--every", "100ms"]);
    let job = r#"echo "$S3LEASE_TOKEN" >> "$SCENE/terms"; while :; do sleep 0.02; done"#;
    let elect = scene.spawn(&["elect", "k", "--ttl", TTL, "--", "sh", "-c", job]);
    let terms = || {
        std::fs::read_to_string(scene.path("terms"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.parse::<u64>().unwrap())
            .collect::<Vec<_>>()
    };
    wait_for(Duration::from_secs(30), "the first term", || {
        terms().len() == 1
    });
    // Long enough for the watcher (every 100 ms) to see the first term.
    std::thread::sleep(Duration::from_millis(500));
    let intruder = take_behind_its_back(&scene, "k");
    wait_for(Duration::from_secs(15), "the second term", || {
        terms().len() == 2
    });
    let t = terms();
    assert!(
        t[1] > intruder && intruder > t[0],
        "terms {t:?}, intruder {intruder}"
    );

    // Long enough for the watcher to see the second term too.
    std::thread::sleep(Duration::from_millis(500));
    signal(&elect, 15);
    let out = elect.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(stderr.contains("campaigning again"), "{stderr}");
    wait_for(Duration::from_secs(5), "the release", || {
        token_of(&scene, "k").is_none()
    });
    std::thread::sleep(Duration::from_millis(300));
    signal(&watch, 15);
    let out = watch.wait_with_output().unwrap();
    assert_eq!(code(&out), 0);
    let seen: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let live_tokens: Vec<u64> = seen
        .iter()
        .filter(|v| v["live"] == true)
        .map(|v| v["token"].as_u64().unwrap())
        .collect();
    assert!(
        live_tokens.contains(&t[0]) && live_tokens.contains(&t[1]),
        "{seen:?}"
    );
    assert!(
        live_tokens.windows(2).all(|w| w[0] < w[1]),
        "{live_tokens:?}"
    );
    assert_eq!(seen.last().unwrap()["live"], false, "{seen:?}");
}

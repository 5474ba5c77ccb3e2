//! An independent client of the single-object design and the component
//! contend for one lock object.
//!
//! `scripts/design_client.py` is a boto3 client written from the design
//! alone: it reads only `expires_at` and `token`, writes only those two, and
//! knows nothing of this crate (not its signer, not its extra fields). Three
//! of its threads and three component instances race for the same key at
//! the same time. Every side records, per grant, its token and the interval
//! it believed it held the lock, taken conservatively on this machine's wall
//! clock: from after the winning reply to before the release is sent. With a
//! ttl far above the hold times, expiry never decides anything, so the
//! conditional writes alone must keep the holders apart.

use super::rng::{seeded, Rng};
use super::*;
use host_test::env_or_workspace_path;
use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DESIGN_THREADS: usize = 3;
const INSTANCES: usize = 3;
/// How long both sides contend.
const CONTEND: Duration = Duration::from_secs(8);
/// Time for Python to import boto3 and build its clients before the start.
const STARTUP: Duration = Duration::from_millis(1500);
const TTL_MS: u64 = 5_000;
const HOLD_MS: (u64, u64) = (20, 100);
const BACKOFF_MS: (u64, u64) = (5, 30);

fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn sleep_until(wall_seconds: f64) {
    let wait = wall_seconds - now_seconds();
    if wait > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(wait));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Design,
    Component,
}

/// One grant as its holder saw it.
#[derive(Debug, Clone)]
struct Grant {
    side: Side,
    holder: String,
    token: u64,
    /// Believed held from `start` to `end` (wall clock, seconds).
    start: f64,
    end: f64,
}

const SETUP_HINT: &str = "run `source scripts/setup.sh` (it installs .venv with boto3), \
     or point S3LEASE_PYTHON at a python that has boto3";

/// Runs the design client against `object` and returns its grants; panics
/// with its stderr if it failed.
fn design_client(object: &str, start_at: f64, seed: u64) -> Vec<Grant> {
    let e = endpoint();
    let python = env_or_workspace_path("S3LEASE_PYTHON", ".venv/bin/python");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/design_client.py");
    let mut cmd = Command::new(&python);
    cmd.arg(&script)
        .args(["--endpoint", &e.url])
        .args(["--region", &e.region])
        .args(["--bucket", &e.bucket])
        .args(["--key", object])
        .args(["--threads", &DESIGN_THREADS.to_string()])
        .args(["--duration", &CONTEND.as_secs_f64().to_string()])
        .args(["--start-at", &start_at.to_string()])
        .args(["--ttl", &(TTL_MS as f64 / 1000.0).to_string()])
        .args(["--hold-min", &HOLD_MS.0.to_string()])
        .args(["--hold-max", &HOLD_MS.1.to_string()])
        .args(["--backoff-min", &BACKOFF_MS.0.to_string()])
        .args(["--backoff-max", &BACKOFF_MS.1.to_string()])
        .args(["--seed", &seed.to_string()])
        // Keys through the environment, not the command line.
        .env("AWS_ACCESS_KEY_ID", &e.access_key_id)
        .env("AWS_SECRET_ACCESS_KEY", &e.secret_access_key)
        .env(
            "AWS_SESSION_TOKEN",
            e.session_token.as_deref().unwrap_or(""),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    assert!(
        matches!(e.addressing, s3_lease::config::Addressing::Path),
        "the design client speaks path-style addressing only"
    );
    let child = cmd
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run {} ({err}); {SETUP_HINT}", python.display()));
    let out = child.wait_with_output().expect("design client output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stderr}");
    assert!(
        out.status.success(),
        "{} {} failed ({}); {SETUP_HINT}\n{stderr}",
        python.display(),
        script.display(),
        out.status
    );
    String::from_utf8(out.stdout)
        .expect("utf-8 output")
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("design client line {line:?}: {err}"));
            assert_eq!(v["release"], "ok", "design client grant {line}");
            assert!(v.get("renew_error").is_none(), "design client grant {line}");
            Grant {
                side: Side::Design,
                holder: format!("design-{}", v["thread"]),
                token: v["token"].as_u64().expect("token"),
                start: v["acquired"].as_f64().expect("acquired"),
                end: v["released"].as_f64().expect("released"),
            }
        })
        .collect()
}

/// One component instance contending from `start_at` for `CONTEND`;
/// failures go to `errors` (a panic here would hide the other side's log).
fn component_contender(
    prefix: &str,
    n: usize,
    start_at: f64,
    mut rng: Rng,
    errors: &Mutex<Vec<String>>,
) -> Vec<Grant> {
    let holder = format!("component-{n}");
    let options = named(TTL_MS, &holder);
    let mut i = opened(prefix);
    let mut grants = Vec::new();
    let fail = |what: String| errors.lock().unwrap().push(format!("{holder}: {what}"));
    sleep_until(start_at);
    let deadline = Instant::now() + CONTEND;
    while Instant::now() < deadline {
        let mut lease = match i.try_acquire("lock", &options) {
            Ok(Ok(Some(lease))) => lease,
            Ok(Ok(None)) => {
                std::thread::sleep(Duration::from_millis(rng.range(BACKOFF_MS.0, BACKOFF_MS.1)));
                continue;
            }
            other => {
                fail(format!("try-acquire: {other:?}"));
                std::thread::sleep(Duration::from_millis(BACKOFF_MS.1));
                continue;
            }
        };
        let start = now_seconds();
        let hold = Duration::from_millis(rng.range(HOLD_MS.0, HOLD_MS.1));
        if rng.chance(0.5) {
            std::thread::sleep(hold / 2);
            match i.renew(&lease) {
                Ok(Ok(renewed)) => {
                    assert_eq!(renewed.token, lease.token, "renew keeps the token");
                    lease = renewed;
                }
                other => fail(format!("renew of token {}: {other:?}", lease.token)),
            }
            std::thread::sleep(hold / 2);
        } else {
            std::thread::sleep(hold);
        }
        let end = now_seconds();
        if let Err(e) = i
            .release(&lease)
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| format!("{e:?}")))
        {
            fail(format!("release of token {}: {e}", lease.token));
        }
        grants.push(Grant {
            side: Side::Component,
            holder: holder.clone(),
            token: lease.token,
            start,
            end,
        });
        std::thread::sleep(Duration::from_millis(rng.range(BACKOFF_MS.0, BACKOFF_MS.1)));
    }
    grants
}

#[test]
fn an_independent_design_client_and_the_component_share_one_lock_object() {
    let prefix = fresh_prefix("interop");
    let object = format!("{prefix}lock");
    let mut rng = seeded("interop");
    // The server and the compiled component first, so that both sides
    // really start together.
    let _ = (endpoint(), harness());
    let began = Instant::now();
    // Both sides start together, once the Python side had time to load.
    let start_at = now_seconds() + STARTUP.as_secs_f64();
    let errors = Arc::new(Mutex::new(Vec::new()));

    let components: Vec<_> = (0..INSTANCES)
        .map(|n| {
            let (prefix, errors) = (prefix.clone(), errors.clone());
            let rng = Rng::new(rng.next_u64());
            std::thread::spawn(move || component_contender(&prefix, n, start_at, rng, &errors))
        })
        .collect();
    let design = design_client(&object, start_at, rng.next_u64());
    let mut grants: Vec<Grant> = design.clone();
    for t in components {
        grants.extend(t.join().expect("component thread"));
    }
    let elapsed = began.elapsed();
    let errors = errors.lock().unwrap().clone();
    assert!(errors.is_empty(), "component errors: {errors:#?}");

    grants.sort_by(|a, b| a.start.total_cmp(&b.start));
    let count = |side| grants.iter().filter(|g| g.side == side).count();
    let handovers = |from, to| {
        grants
            .windows(2)
            .filter(|w| w[0].side == from && w[1].side == to)
            .count()
    };
    println!(
        "interop: {} grants in {elapsed:.1?} (design client {}, component {}); \
         handovers design->component {}, component->design {}",
        grants.len(),
        count(Side::Design),
        count(Side::Component),
        handovers(Side::Design, Side::Component),
        handovers(Side::Component, Side::Design),
    );

    // Tokens: unique across both sides, and rising in grant order.
    let unique: HashSet<u64> = grants.iter().map(|g| g.token).collect();
    assert_eq!(unique.len(), grants.len(), "a token was granted twice");
    for w in grants.windows(2) {
        assert!(
            w[0].token < w[1].token,
            "tokens out of grant order: {:?} then {:?}",
            w[0],
            w[1]
        );
        // Mutual exclusion: no two believed intervals overlap.
        assert!(
            w[0].end <= w[1].start,
            "two holders at once: {:?} and {:?}",
            w[0],
            w[1]
        );
    }
    // Both count the same way: token 1 on the fresh key, then + 1 a grant,
    // whoever read the previous one. A gap would be a grant nobody saw.
    let tokens: Vec<u64> = grants.iter().map(|g| g.token).collect();
    let expected: Vec<u64> = (1..=grants.len() as u64).collect();
    assert_eq!(tokens, expected, "tokens are not 1, 2, 3, ...");

    // Both won, and each took the lock over from the other: each read what
    // the other wrote.
    assert!(count(Side::Design) > 0, "the design client never won");
    assert!(count(Side::Component) > 0, "the component never won");
    assert!(handovers(Side::Design, Side::Component) > 0);
    assert!(handovers(Side::Component, Side::Design) > 0);

    // The component reads the final object, whoever wrote it: released, the
    // last token, and no holder when the design client (which records none)
    // released last.
    let last = grants.last().unwrap();
    let mut i = opened(&prefix);
    let seen = i.inspect("lock").unwrap().unwrap().expect("lock object");
    let holder = match last.side {
        Side::Design => "",
        Side::Component => last.holder.as_str(),
    };
    assert_eq!(
        (
            seen.token,
            seen.holder_id.as_str(),
            seen.live,
            seen.expires_at_ms
        ),
        (last.token, holder, false, 0)
    );
    assert!(
        elapsed < Duration::from_secs(20),
        "took {elapsed:?}, over 20 s"
    );
}

//! `--serve` (status, health, Prometheus metrics) and `--log-format json`,
//! scraped as an orchestrator and a monitoring system would, through a
//! failover with a real network cut (a loopback fault proxy).

use crate::support::{signal, text, wait_for, Scene};
use host_test::fault_proxy::{Fault, FaultProxy};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const TTL: &str = "4s";
/// `elect`'s renew deadline is half the ttl.
const RENEW_DEADLINE: Duration = Duration::from_secs(2);

/// `GET path` on `addr`: (status, body).
pub(crate) fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to --serve");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("read the reply");
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = reply
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// One sample of the exposition text: `name{labels} value`.
pub(crate) fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?;
        rest.strip_prefix(' ')?.trim().parse().ok()
    })
}

/// The sum of every sample of a metric (all label sets).
fn total(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The address `--serve 127.0.0.1:0` bound, from its line on stderr.
pub(crate) fn served_at(stderr: &Path, child: &mut Child) -> String {
    let started = Instant::now();
    loop {
        let log = std::fs::read_to_string(stderr).unwrap_or_default();
        if let Some(at) = log.split("on http://").nth(1) {
            return at
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .trim_end_matches('"')
                .to_string();
        }
        if started.elapsed() > Duration::from_secs(30) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("no --serve line: {log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A child killed when the test ends, panicking or not.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn elector(scene: &Scene, who: &str, endpoint: Option<&str>) -> (Reaped, String) {
    let err = scene.path(&format!("{who}.err"));
    let mut cmd = scene.cmd(&[
        "elect",
        "k",
        "--ttl",
        TTL,
        "--holder",
        who,
        "--serve",
        "127.0.0.1:0",
        "--",
        "sleep",
        "1000",
    ]);
    if let Some(url) = endpoint {
        cmd.env("AWS_ENDPOINT_URL", url);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = cmd.spawn().unwrap();
    let addr = served_at(&err, &mut child);
    (Reaped(child), addr)
}

pub(crate) fn metrics(addr: &str) -> String {
    let (status, body) = get(addr, "/metrics");
    assert_eq!(status, 200, "{body}");
    body
}

pub(crate) const LEADER: &str = "s3lease_leader{key=\"k\"}";
pub(crate) const TOKEN: &str = "s3lease_fencing_token{key=\"k\"}";
const CHANGES: &str = "s3lease_leadership_changes_total{key=\"k\"}";
const ACQUIRED: &str = "s3lease_acquire_duration_seconds_count{key=\"k\"}";
const RENEWED: &str = "s3lease_renew_duration_seconds_count{key=\"k\"}";

/// A leads through a proxy, B follows; A's network goes silent. A's leader
/// gauge drops to 0 at its renew deadline and its health to 503; B's gauge
/// rises to 1 with a higher token, and the counters moved on both.
#[test]
fn metrics_and_health_follow_a_failover_when_the_leaders_store_goes_silent() {
    let scene = Scene::new("serve-failover");
    let proxy = FaultProxy::in_front_of(&scene.endpoint.url).unwrap();
    let (mut a, a_addr) = elector(&scene, "a", Some(&proxy.url()));
    wait_for(Duration::from_secs(30), "a leads", || {
        sample(&metrics(&a_addr), LEADER) == Some(1.0)
    });
    let (mut b, b_addr) = elector(&scene, "b", None);
    let a_token = sample(&metrics(&a_addr), TOKEN).expect("a's token");
    wait_for(Duration::from_secs(30), "b sees a lead", || {
        sample(&metrics(&b_addr), TOKEN) == Some(a_token)
    });
    assert_eq!(sample(&metrics(&b_addr), LEADER), Some(0.0));
    assert_eq!(get(&a_addr, "/healthz").0, 200);
    assert_eq!(get(&b_addr, "/healthz").0, 200);
    let (status, body) = get(&a_addr, "/status");
    let a_status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (status, &a_status["role"], &a_status["holder_id"]),
        (200, &Value::from("leader"), &Value::from("a")),
        "{body}"
    );
    assert_eq!(a_status["token"].as_f64(), Some(a_token), "{body}");
    wait_for(Duration::from_secs(10), "a renews", || {
        sample(&metrics(&a_addr), RENEWED) >= Some(1.0)
    });
    let a_before = metrics(&a_addr);
    let b_before = metrics(&b_addr);
    let a_requests = total(&a_before, "s3lease_requests_total");
    let b_requests = total(&b_before, "s3lease_requests_total");
    assert!(
        a_requests >= 2.0 && b_requests >= 1.0,
        "{a_before}\n{b_before}"
    );

    proxy.set(Fault::Silent);
    let cut = Instant::now();
    let stepped_down = wait_for(
        RENEW_DEADLINE + Duration::from_secs(2),
        "a's gauge drops",
        || sample(&metrics(&a_addr), LEADER) == Some(0.0),
    );
    let unhealthy = wait_for(
        RENEW_DEADLINE + Duration::from_secs(4),
        "a's health turns 503",
        || get(&a_addr, "/healthz").0 == 503,
    );
    let (_, why) = get(&a_addr, "/healthz");
    assert!(why.contains("unhealthy"), "{why}");
    wait_for(Duration::from_secs(15), "b leads", || {
        sample(&metrics(&b_addr), LEADER) == Some(1.0)
    });
    let b_led = cut.elapsed();
    let a_after = metrics(&a_addr);
    let b_after = metrics(&b_addr);
    assert_eq!(
        sample(&a_after, CHANGES),
        Some(2.0),
        "became, then stopped: {a_after}"
    );
    assert_eq!(sample(&b_after, CHANGES), Some(1.0), "{b_after}");
    assert!(sample(&b_after, TOKEN) > Some(a_token), "{b_after}");
    assert_eq!(sample(&b_after, ACQUIRED), Some(1.0), "{b_after}");
    assert!(
        total(&b_after, "s3lease_requests_total") > b_requests,
        "{b_after}"
    );
    assert!(
        a_after.contains("outcome=\"error\"") || a_after.contains("outcome=\"412\""),
        "a's cut-off requests are counted as failed: {a_after}"
    );
    assert_eq!(get(&b_addr, "/healthz").0, 200);
    proxy.set(Fault::Pass);
    wait_for(Duration::from_secs(10), "a's health back to 200", || {
        get(&a_addr, "/healthz").0 == 200
    });
    let inf = "s3lease_acquire_duration_seconds_bucket{le=\"+Inf\",key=\"k\"}";
    assert_eq!(sample(&b_after, inf), Some(1.0), "{b_after}");
    println!(
        "--serve: after the cut, a's gauge 0 at {stepped_down:?} (renew deadline {RENEW_DEADLINE:?}), its health 503 at {:?}, b's gauge 1 at {:?}; tokens {a_token} -> {:?}",
        stepped_down + unhealthy,
        b_led,
        sample(&b_after, TOKEN)
    );
    for child in [&mut a, &mut b] {
        signal(&child.0, libc::SIGTERM);
        let _ = child.0.wait();
    }
}

/// `--log-format json`: every progress line is one JSON object with the
/// event, key, holder, token and the human message.
#[test]
fn json_log_lines_carry_event_key_holder_and_token() {
    let scene = Scene::new("json-log");
    let out = scene
        .cmd(&[
            "--log-format",
            "json",
            "run",
            "k",
            "--ttl",
            TTL,
            "--holder",
            "me",
            "--",
            "true",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stderr)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let events: Vec<&str> = lines.iter().filter_map(|l| l["event"].as_str()).collect();
    assert!(
        events.contains(&"acquired") && events.contains(&"released"),
        "{events:?}"
    );
    for line in &lines {
        assert_eq!(line["key"], "k", "{line}");
        assert_eq!(line["holder"], "me", "{line}");
        assert!(
            line["ts"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{line}"
        );
        assert!(line["message"].is_string(), "{line}");
    }
    let acquired = lines.iter().find(|l| l["event"] == "acquired").unwrap();
    assert!(
        acquired["token"].as_u64().is_some_and(|t| t >= 1),
        "{acquired}"
    );
}

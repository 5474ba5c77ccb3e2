//! The host's failed requests on stderr: an `acquire --wait` against an
//! endpoint that is down says so while it waits, naming the endpoint, in
//! text and in `--log-format json`; `-q` keeps them back.

use crate::support::{code, text, Scene};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A loopback endpoint nothing listens on (a port bound, then let go).
fn closed_endpoint() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", listener.local_addr().unwrap())
}

/// Starts `acquire k --wait 3s` against `url`, reads its first stderr line,
/// checks it is still waiting then, and returns every line and the exit code.
fn acquire_on(scene: &Scene, url: &str, extra: &[&str]) -> (Vec<String>, bool, i32) {
    let mut args = extra.to_vec();
    args.extend(["--endpoint", url, "acquire", "k", "--wait", "3s"]);
    let mut child: Child = scene
        .cmd(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().expect("a line").unwrap();
    // Still waiting when the first line came (the wait is 3 s).
    let while_waiting =
        child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(2);
    let mut all = vec![first];
    all.extend(lines.map(Result::unwrap));
    let status = child.wait().unwrap();
    (all, while_waiting, status.code().unwrap_or(-1))
}

#[test]
fn a_waiting_acquire_says_each_failed_request_naming_the_endpoint() {
    let scene = Scene::new("request-log");
    let url = closed_endpoint();
    let (lines, while_waiting, exit) = acquire_on(&scene, &url, &[]);
    assert!(while_waiting, "{lines:#?}");
    assert_eq!(exit, 69, "{lines:#?}");
    let (requests, last) = lines.split_at(lines.len() - 1);
    // One a second at most, over a 3 s wait: 2 or more.
    assert!(requests.len() >= 2, "{lines:#?}");
    for line in requests {
        assert!(line.starts_with("s3-lease: acquire k: "), "{line}");
        assert!(line.contains(&format!("to {url} failed")), "{line}");
    }
    assert!(
        last[0].contains(&url),
        "the final error names the endpoint: {lines:#?}"
    );
}

#[test]
fn json_request_lines_carry_the_call_and_the_endpoint() {
    let scene = Scene::new("request-log-json");
    let url = closed_endpoint();
    let (lines, while_waiting, exit) = acquire_on(&scene, &url, &["--log-format", "json"]);
    assert!(while_waiting, "{lines:#?}");
    assert_eq!(exit, 69, "{lines:#?}");
    let parsed: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let requests: Vec<&Value> = parsed.iter().filter(|l| l["event"] == "request").collect();
    assert!(requests.len() >= 2, "{parsed:#?}");
    for line in &requests {
        assert_eq!(line["op"], "acquire", "{line}");
        assert_eq!(line["key"], "k", "{line}");
        assert_eq!(line["store"], "S3", "{line}");
        assert_eq!(line["endpoint"], url.as_str(), "{line}");
        assert_eq!(line["level"], "warn", "{line}");
        assert!(line["error"].is_string(), "{line}");
        assert!(line["operation"].is_string(), "{line}");
        assert!(line["elapsed_ms"].is_u64(), "{line}");
        assert!(
            line["ts"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{line}"
        );
        assert!(
            line["message"].as_str().is_some_and(|m| m.contains(&url)),
            "{line}"
        );
    }
    let last = parsed.last().unwrap();
    assert_eq!(last["event"], "error", "{last}");
    assert!(
        last["error"].as_str().is_some_and(|e| e.contains(&url)),
        "{last}"
    );
}

#[test]
fn quiet_keeps_the_failed_requests_back() {
    let scene = Scene::new("request-log-quiet");
    let url = closed_endpoint();
    let out = scene
        .cmd(&["-q", "--endpoint", &url, "acquire", "k", "--wait", "1s"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 69);
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "only the error: {stderr}");
    assert!(stderr.contains(&url), "{stderr}");
}

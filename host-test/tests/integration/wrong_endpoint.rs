//! An endpoint that is not the configured store (the shared SeaweedFS's
//! filer or master port, any web server that answers a bare 404) is a
//! configuration error at the first request: every call ends with
//! `invalid-config` on `endpoint`, naming it, and nothing is written there.
//! On S3, and on DynamoDB and Azure Blob stores too.

use super::*;
use host_test::aws_fakes::http::{self, Request, Response};
use host_test::bindings::Error as E;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Well inside an acquire's timeout: the call did not wait on the error.
const AT_ONCE: Duration = Duration::from_secs(10);

/// A web server that answers every request `404 page not found` (what
/// SeaweedFS's master, like any Go server, sends), and the methods it saw.
fn bare_404_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let url = http::serve(Arc::new(move |r: Request| {
        log.lock().unwrap().push(r.method.clone());
        Response::new(404, "text/plain; charset=utf-8", "404 page not found\n")
    }))
    .expect("serve");
    (url, seen)
}

/// The error is the wrong endpoint's, naming `url` and saying it is
/// `not` the store's.
fn assert_wrong_endpoint<T: std::fmt::Debug>(
    call: &str,
    url: &str,
    not: &str,
    r: anyhow::Result<Result<T, E>>,
) {
    match expect_err(r) {
        E::InvalidConfig(c) => {
            assert_eq!(c.field, "endpoint", "{call}: {c:?}");
            assert!(c.reason.starts_with(url), "{call}: {}", c.reason);
            assert!(c.reason.contains(not), "{call}: {}", c.reason);
        }
        other => panic!("{call}: expected invalid-config endpoint, got {other:?}"),
    }
}

/// Every call at `url` ends at once with the wrong endpoint's error.
fn every_call_refused(url: &str, prefix: &str) {
    let mut config = endpoint().config(prefix);
    *config.endpoint_mut() = url.to_string();
    every_call_refused_with(&config, "not an S3 endpoint");
}

fn every_call_refused_with(config: &host_test::bindings::Config, not: &str) {
    let url = config.endpoint();
    let mut i = opened_with(config);
    let started = Instant::now();
    let try_once = i.try_acquire("k", &options(30_000));
    assert_wrong_endpoint("try-acquire", url, not, try_once);
    let waited = i.acquire("k", &options(30_000), 30_000);
    assert_wrong_endpoint("acquire", url, not, waited);
    assert_wrong_endpoint("inspect", url, not, i.inspect("k"));
    assert_wrong_endpoint("preflight", url, not, i.preflight());
    assert!(started.elapsed() < AT_ONCE, "{:?}", started.elapsed());
}

#[test]
fn a_server_that_answers_a_bare_404_is_refused_before_anything_is_written() {
    let (url, seen) = bare_404_server();
    every_call_refused(&url, &fresh_prefix("bare-404"));
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|m| m == "GET"), "{seen:?}");
    // One request per call, none retried (an acquire's deadline included).
    assert_eq!(seen.len(), 4, "{seen:?}");
}

#[test]
fn a_dynamodb_or_azure_store_at_a_bare_404_is_refused_at_its_first_request() {
    let (url, seen) = bare_404_server();
    let prefix = fresh_prefix("bare-404-stores");
    let mut dynamodb = host_test::dynalite::shared().config("s3lease-table", &prefix);
    *dynamodb.endpoint_mut() = url.clone();
    every_call_refused_with(&dynamodb, "not a DynamoDB endpoint");
    let mut azure = host_test::azurite::shared().config(&prefix);
    *azure.endpoint_mut() = url.clone();
    every_call_refused_with(&azure, "not an Azure Blob endpoint");
    // One request per call, none retried: nothing written.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 8, "{seen:?}");
    assert!(seen.iter().all(|m| m == "GET" || m == "POST"), "{seen:?}");
    assert_eq!(seen.iter().filter(|m| *m == "GET").count(), 4, "{seen:?}");
}

/// A GET of `path` on `url` by hand: its status.
fn status_of(url: &str, path: &str) -> u16 {
    let authority = url.strip_prefix("http://").unwrap();
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {reply:?}"))
}

#[test]
fn seaweedfs_s_filer_and_master_ports_are_refused() {
    let Some((filer, master)) = server::shared_filer_and_master() else {
        eprintln!("skipped: the tests run against an endpoint from the environment");
        return;
    };
    let prefix = fresh_prefix("wrong-port");
    every_call_refused(&filer, &prefix);
    every_call_refused(&master, &prefix);
    // The filer takes a plain PUT (201): the seal key was never sent to it.
    let seal_key = format!("/{}/{prefix}.s3-lease-seal-key", endpoint().bucket);
    assert_eq!(status_of(&filer, &seal_key), 404, "{seal_key}");
}

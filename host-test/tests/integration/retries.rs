//! Retries on purpose, through the host crate against SeaweedFS: a request
//! the store (or a proxy in front of it) timed out, S3's 400
//! `RequestTimeout` or a 408, is transient. A held lease renews on through
//! one (the renew reads the lock object back and writes again), and an
//! acquire waits on through one.

use super::{acquire_options as options, endpoint, fresh_prefix, harness};
use host_test::hooks::Fault;
use s3_lease_host::blocking::Client;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn request_timeout() -> Fault {
    Fault::Respond {
        status: 400,
        content_type: "application/xml",
        body: "<Error><Code>RequestTimeout</Code><Message>Your socket connection to the server \
               was not read from or written to within the timeout period.</Message></Error>"
            .into(),
    }
}

fn proxy_408() -> Fault {
    Fault::Respond {
        status: 408,
        content_type: "text/html",
        body: "<html><body><h1>408 Request Time-out</h1></body></html>".into(),
    }
}

/// A client whose requests go through hooks, on a fresh prefix.
fn hooked(test: &str) -> (Client, host_test::hooks::Hooks, String) {
    let prefix = fresh_prefix(test);
    let config = endpoint().host_config(&prefix).unwrap();
    let (client_options, hooks, _) = harness().test_client_options();
    let client = Client::connect_with(harness().runtime(), &config, client_options).unwrap();
    (client, hooks, prefix)
}

#[test]
fn a_held_lease_renews_on_through_a_request_the_store_timed_out() {
    for (name, timeout) in [
        ("400", request_timeout as fn() -> Fault),
        ("408", proxy_408),
    ] {
        let (a, hooks, prefix) = hooked("renew-timed-out");
        let guard = a
            .try_acquire("k", &options(2_000))
            .unwrap()
            .expect("granted");
        // The first renew's write is answered as timed out, unapplied.
        let object = format!("{prefix}k");
        let answered = Arc::new(AtomicBool::new(false));
        hooks.add_rule(move |request: &mut http::request::Parts| {
            let write =
                request.method == http::Method::PUT && request.uri.path().ends_with(&object);
            (write && !answered.swap(true, Ordering::SeqCst)).then(timeout)
        });
        hooks.take_requests();
        // Past the ttl: held only if the renews after the timeout went on.
        std::thread::sleep(Duration::from_millis(3_000));
        let log = hooks.requests();
        assert!(
            guard.is_held(),
            "{name}: ended by a request the store timed out: {:?}; requests {log:#?}",
            guard.lost()
        );
        let statuses: Vec<_> = log
            .iter()
            .filter(|r| r.method == "PUT")
            .map(|r| r.status)
            .collect();
        assert_eq!(
            statuses.first(),
            Some(&Some(timeout_status(name))),
            "{log:#?}"
        );
        assert!(
            statuses.contains(&Some(200)),
            "{name}: renewed after it: {log:#?}"
        );
        drop(guard);
    }
}

fn timeout_status(name: &str) -> u16 {
    name.parse().unwrap()
}

#[test]
fn acquire_waits_on_through_a_request_the_store_timed_out() {
    for timeout in [request_timeout(), proxy_408()] {
        let (a, hooks, _) = hooked("acquire-timed-out");
        hooks.inject(timeout);
        let guard = a
            .acquire("k", &options(5_000), Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("gave up on a timed-out request: {e}"));
        assert_eq!(guard.token(), 1);
        assert!(hooks.requests()[0]
            .status
            .is_some_and(|s| s == 400 || s == 408));
    }
}

//! A request the store (or a proxy before it) timed out: S3's 400
//! `RequestTimeout`, GCS's or a load balancer's 408. It is transient, as a
//! 5xx is: a renew so answered reads the lock object back and goes on, a
//! wait goes on waiting, and a write that did land is recognised.

use super::*;
use crate::error::S3Error;
use crate::stores::s3::S3Response;

fn request_timeout() -> S3Response {
    crate::testing::response(
        400,
        &[("content-type", "application/xml")],
        "<Error><Code>RequestTimeout</Code><Message>Your socket connection to the server was \
         not read from or written to within the timeout period.</Message></Error>",
    )
}

fn load_balancer_408() -> S3Response {
    crate::testing::response(
        408,
        &[("content-type", "text/html")],
        "<html><body><h1>408 Request Time-out</h1></body></html>",
    )
}

#[test]
fn a_request_the_store_timed_out_is_transient_and_no_other_400_is() {
    let e = |status: u16, code: &str| {
        Error::S3(S3Error {
            status,
            code: code.into(),
            ..S3Error::default()
        })
    };
    assert!(e(400, "RequestTimeout").is_transient());
    assert!(e(408, "").is_transient());
    assert!(e(408, "Http408").is_transient());
    assert!(!e(400, "InvalidArgument").is_transient());
    assert!(!e(400, "").is_transient());
    assert!(request_timeout().into_error().is_transient());
    assert!(load_balancer_408().into_error().is_transient());
    assert!(crate::protocol::is_ambiguous(&request_timeout()));
    assert!(crate::protocol::is_ambiguous(&load_balancer_408()));
    assert!(!crate::protocol::is_ambiguous(&crate::testing::response(
        400,
        &[],
        "<Error><Code>InvalidArgument</Code></Error>"
    )));
}

/// The renew's write is answered with a timeout and was not applied: read
/// back, the object is still the lease's, so it is written again.
#[test]
fn a_renew_answered_with_a_timeout_reads_back_and_renews() {
    for timeout in [request_timeout(), load_balancer_408()] {
        for mut c in both() {
            let what = format!("{:?} {}", c.config.strategy, timeout.status);
            let mut io = io();
            let lease = granted(&mut c, &mut io, "a");
            io.advance(1_000);
            let mut first = true;
            let renewed = {
                let mut timing_out = Intercept::new(&mut io, |request, _| {
                    (request.method == Method::Put && std::mem::take(&mut first))
                        .then(|| Ok(timeout.clone()))
                });
                c.rewrite(&mut timing_out, lease.clone(), false).ready()
            };
            let renewed = renewed.unwrap_or_else(|e| panic!("{what}: {e:?}"));
            assert_eq!(renewed.token, lease.token, "{what}");
        }
    }
}

/// A proxy's 408 after the store applied the write: the read-back finds
/// the write's own id.
#[test]
fn a_write_that_landed_behind_a_timeout_is_recognised() {
    for mut c in both() {
        let what = format!("{:?}", c.config.strategy);
        let mut io = io();
        let mut first = true;
        let lease = {
            let mut landed_then_408 = Intercept::new(&mut io, |request, io: &mut ModelIo| {
                (request.method == Method::Put
                    && request.object_key == "locks/k"
                    && std::mem::take(&mut first))
                .then(|| {
                    io.send(request).ready().unwrap();
                    Ok(load_balancer_408())
                })
            });
            match c
                .try_acquire(&mut landed_then_408, "k", &grant("a"))
                .ready()
            {
                Ok(AcquireOutcome::Granted(l)) => l,
                other => panic!("{what}: {other:?}"),
            }
        };
        assert_eq!(lease.token, 1, "{what}");
    }
}

/// `acquire` rides out a read the store timed out, within its wait.
#[test]
fn acquire_goes_on_waiting_after_a_timed_out_request() {
    for timeout in [request_timeout(), load_balancer_408()] {
        for mut c in both() {
            let what = format!("{:?} {}", c.config.strategy, timeout.status);
            let mut io = io();
            let mut first = true;
            let mut timing_out = Intercept::new(&mut io, |request, _| {
                (request.method == Method::Get
                    && !request.object_key.ends_with("seal-key")
                    && std::mem::take(&mut first))
                .then(|| Ok(timeout.clone()))
            });
            let lease = c
                .acquire(&mut timing_out, "k", &grant("a"), 10_000)
                .ready()
                .unwrap_or_else(|e| panic!("{what}: {e:?}"));
            assert_eq!(lease.token, 1, "{what}");
        }
    }
}

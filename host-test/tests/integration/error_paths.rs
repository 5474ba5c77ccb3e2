//! Every method that can fail returns its own error, whole, and nothing of it
//! outlives the call. (Each export lowers its error through wit-bindgen's
//! generated code; this test was written against the hand-written relay
//! that once shared one lowering, and stays as the check that no method
//! loses a field or leaves an error behind for the next call.)

use super::*;
use host_test::bindings::{
    ElectorConfig, ElectorEvent, Error as E, FenceOptions, Role, StopReason,
};
use host_test::hooks::Fault;

/// An S3 error reply whose status, message and request id name the call
/// it was meant for: a status per call, none of which a call retries.
fn deny(i: &Instance, call: &str, status: u16) {
    i.hooks.take_requests();
    i.hooks.inject(Fault::Respond {
        status,
        content_type: "application/xml",
        body: format!(
            "<Error><Code>RelayTest</Code><Message>denied {call}</Message>\
             <RequestId>relay-{call}</RequestId></Error>"
        ),
    });
}

/// The error is `deny`'s for this call, field by field. A HEAD reply has no
/// body to carry the code, message and request id; its status still names the call.
fn assert_denied<T: std::fmt::Debug>(
    r: anyhow::Result<Result<T, E>>,
    i: &Instance,
    call: &str,
    status: u16,
) {
    let e = match expect_err(r) {
        E::S3(e) | E::AccessDenied(e) => e,
        other => panic!("{call}: expected an s3 error, got {other:?}"),
    };
    assert_eq!(e.status, status, "{call}: {e:?}");
    let first = i
        .hooks
        .take_requests()
        .into_iter()
        .next()
        .expect("a request");
    if first.method != "HEAD" {
        assert_eq!(e.code, "RelayTest", "{call}: {e:?}");
        assert_eq!(e.message, format!("denied {call}"), "{call}: {e:?}");
        assert_eq!(e.request_id, format!("relay-{call}"), "{call}: {e:?}");
    }
}

#[test]
fn each_method_returns_its_own_error_and_the_next_call_is_clean() {
    let prefix = fresh_prefix("error-paths");
    let mut i = opened(&prefix);
    let lease = i
        .try_acquire("k", &options(60_000))
        .unwrap()
        .unwrap()
        .unwrap();
    let object = format!("{prefix}data/x");
    let reject_equal = FenceOptions {
        reject_equal_token: true,
    };

    // Each call fails on its first request, then the same call succeeds.
    deny(&i, "try-acquire", 400);
    assert_denied(
        i.try_acquire("other", &options(1_000)),
        &i,
        "try-acquire",
        400,
    );
    assert!(i
        .try_acquire("k", &options(1_000))
        .unwrap()
        .unwrap()
        .is_none());

    deny(&i, "acquire", 405);
    assert_denied(
        i.acquire("other", &options(1_000), 5_000),
        &i,
        "acquire",
        405,
    );
    let other = i.acquire("other", &options(1_000), 5_000).unwrap().unwrap();
    assert_eq!(other.token, 1);

    deny(&i, "renew", 406);
    assert_denied(i.renew(&lease), &i, "renew", 406);
    let lease = i.renew(&lease).unwrap().unwrap();

    deny(&i, "inspect", 410);
    assert_denied(i.inspect("k"), &i, "inspect", 410);
    let state = i.inspect("k").unwrap().unwrap().expect("held");
    assert_eq!(state.token, lease.token);

    deny(&i, "fenced-put", 411);
    assert_denied(
        i.fenced_put(&lease, &object, b"v1", "text/plain"),
        &i,
        "fenced-put",
        411,
    );
    i.fenced_put(&lease, &object, b"v1", "text/plain")
        .unwrap()
        .unwrap();

    deny(&i, "fenced-put-with", 413);
    assert_denied(
        i.fenced_put_with(&lease, &object, b"v2", "text/plain", reject_equal),
        &i,
        "fenced-put-with",
        413,
    );
    // The equal token is refused as asked: a `fenced` error, lowered whole.
    match expect_err(i.fenced_put_with(&lease, &object, b"v2", "text/plain", reject_equal)) {
        E::Fenced(f) => {
            assert_eq!((f.our_token, f.stored_token), (lease.token, lease.token));
            assert_eq!(f.object_key, object);
        }
        other => panic!("expected fenced, got {other:?}"),
    }

    deny(&i, "fenced-get", 414);
    assert_denied(i.fenced_get(&object), &i, "fenced-get", 414);
    let got = i.fenced_get(&object).unwrap().unwrap().expect("written");
    assert_eq!(got.body, b"v1");

    deny(&i, "fenced-delete", 415);
    assert_denied(i.fenced_delete(&lease, &object), &i, "fenced-delete", 415);
    i.fenced_delete(&lease, &object).unwrap().unwrap();

    // The preflight records other statuses as findings; 403 stops it.
    deny(&i, "preflight", 403);
    assert_denied(i.preflight(), &i, "preflight", 403);

    // `release` is the shared path's own method: after all of the above it
    // still answers for itself, twice.
    deny(&i, "release", 418);
    assert_denied(i.release(&lease), &i, "release", 418);
    i.release(&lease).unwrap().unwrap();
    i.release(&other).unwrap().unwrap();
    assert!(i.inspect("k").unwrap().unwrap().is_some_and(|s| !s.live));
}

/// `elector.resign` returns its own error, whole, through its own
/// generated lowering (once the relay's hardest case: it has no client).
#[test]
fn resign_returns_its_own_error_and_the_next_call_is_clean() {
    let prefix = fresh_prefix("error-paths-resign");
    let mut i = opened(&prefix);
    let config = ElectorConfig {
        key: "e".into(),
        lease_duration_ms: 60_000,
        renew_deadline_ms: 40_000,
        retry_period_ms: 10_000,
        holder_id: Some("a".into()),
        metadata: None,
    };
    let elector = i.elector(&config).unwrap().unwrap();
    let first = i.step(elector).unwrap();
    assert!(matches!(first.role, Role::Leader(_)), "{first:?}");

    deny(&i, "resign", 421);
    assert_denied(i.resign(elector), &i, "resign", 421);
    // It stopped leading all the same (its lease runs out by itself), and
    // what follows is clean.
    i.resign(elector).unwrap().unwrap();
    let next = i.step(elector).unwrap();
    assert!(
        next.events
            .contains(&ElectorEvent::StoppedLeading(StopReason::Resigned)),
        "{next:?}"
    );
    assert_eq!(next.last_error, None);
    assert!(i.inspect("e").unwrap().unwrap().is_some_and(|s| s.live));
    i.drop_elector(elector).unwrap();
}

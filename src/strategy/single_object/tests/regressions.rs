//! The single-object strategy's and the driver's safety regressions, one
//! test each: altered leases and lowered tokens are refused, a renew seals
//! afresh, an implausible clock writes nothing, a late grant is no lease, a
//! skewed clock is corrected once. Each failed on the code before its fix.

use super::*;
use crate::ready::Ready;
use crate::stores::s3::model::http_date;
use crate::testing::intercept::slow_put_replies;

fn renew(s: &mut ModelIo, lease: &Lease) -> Result<Lease, Error> {
    driver::run(
        s,
        RewriteOwn::renew(lease.clone(), "locks/k".into(), seal(), wid()),
    )
    .ready()
}

fn release(s: &mut ModelIo, lease: &Lease) -> Result<Lease, Error> {
    driver::run(
        s,
        RewriteOwn::release(lease.clone(), "locks/k".into(), seal(), wid()),
    )
    .ready()
}

#[test]
fn a_lowered_token_is_refused_and_tokens_never_repeat() {
    let mut s = store();
    for _ in 0..3 {
        let l = granted(try_acquire(&mut s, "a"));
        release(&mut s, &l).unwrap();
    }
    let third = granted(try_acquire(&mut s, "a"));
    assert_eq!(third.token, 4);
    s.take_requests();
    // The reproduced attack: lower the token, renew, release, take again.
    let forged = Lease {
        token: 1,
        ..third.clone()
    };
    let r = renew(&mut s, &forged);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    let r = release(&mut s, &forged);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    assert!(s.take_requests().is_empty(), "nothing is sent");
    assert_eq!(record(&s, "locks/k").token, 4);
    release(&mut s, &third).unwrap();
    assert_eq!(granted(try_acquire(&mut s, "b")).token, 5);
}

#[test]
fn altered_fields_never_reach_the_lock_object() {
    let mut s = store();
    let lease = granted(try_acquire(&mut s, "a"));
    let altered = [
        Lease {
            metadata: "x".repeat(100_000),
            ..lease.clone()
        },
        Lease {
            acquired_at_ms: u64::MAX,
            ..lease.clone()
        },
        Lease {
            holder_id: "someone else".into(),
            ..lease.clone()
        },
        Lease {
            expires_at_ms: u64::MAX,
            ..lease.clone()
        },
        Lease {
            ttl_ms: 7 * 24 * 3600 * 1000,
            ..lease.clone()
        },
        Lease {
            seal: String::new(),
            ..lease.clone()
        },
    ];
    s.take_requests();
    for a in altered {
        let r = renew(&mut s, &a);
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    }
    assert!(s.take_requests().is_empty());
    // The object is still readable and still ours.
    assert_eq!(record(&s, "locks/k").holder_id, "a");
    renew(&mut s, &lease).unwrap();
}

#[test]
fn a_renewed_lease_is_sealed_afresh_and_the_older_copy_renews_the_same_grant() {
    let mut s = store();
    let lease = granted(try_acquire(&mut s, "a"));
    s.advance(1_000);
    let renewed = renew(&mut s, &lease).unwrap();
    assert_ne!(renewed.seal, lease.seal);
    // The lock object holds this grant at a newer etag, written by the
    // holder: the older copy goes on from it (a renew retried as a new
    // call after its write landed unanswered is this case).
    let again = renew(&mut s, &lease).unwrap();
    assert_eq!((again.token, again.holder_id.as_str()), (1, "a"));
    renew(&mut s, &renewed).unwrap();
    // Once the key is granted again, neither copy renews.
    s.advance(11_000);
    let next = granted(acquire_as_b(&mut s).unwrap());
    assert_eq!(next.token, 2);
    for old in [&lease, &renewed, &again] {
        assert!(matches!(renew(&mut s, old), Err(Error::Lost { .. })));
    }
}

#[test]
fn an_implausible_wall_clock_writes_nothing() {
    let mut s = store();
    s.clock_offset_ms = 200_000_000_000_000;
    let r = acquire_as_b(&mut s);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    assert!(s.store.objects.is_empty());
}

#[test]
fn a_grant_whose_reply_arrives_after_its_expiry_is_no_lease() {
    let mut s = store();
    // The reply to the create takes longer than the ttl.
    let op = TryAcquire::new(
        "k".into(),
        "locks/k".into(),
        grant("a"),
        seal(),
        judge(),
        wid(),
    );
    let outcome = driver::run(&mut slow_put_replies(&mut s, 10_001), op)
        .ready()
        .unwrap();
    assert_eq!(outcome, AcquireOutcome::Held(None));
}

fn skewed_reply(server_ms: u64) -> S3Response {
    S3Response {
        status: 403,
        headers: vec![("date".into(), http_date(server_ms))],
        body: b"<Error><Code>RequestTimeTooSkewed</Code><Message>The difference between the request time and the current time is too large.</Message></Error>".to_vec(),
        body_too_large: None,
    }
}

#[test]
fn a_skewed_clock_is_corrected_once_then_reported_as_clock_skew() {
    let mut s = store();
    // Refused once: the driver adopts the server's Date and sends again.
    s.scripted.push_back(skewed_reply(START_MS));
    let lease = granted(try_acquire(&mut s, "a"));
    assert_eq!(lease.token, 1);
    assert_eq!(count(&mut s), 3, "GET refused, GET again, PUT");
    // Refused twice: a typed error that says so, never access-denied.
    s.scripted.push_back(skewed_reply(START_MS));
    s.scripted.push_back(skewed_reply(START_MS));
    let r = driver::run(&mut s, Inspect::new("k".into(), "locks/k".into(), judge())).ready();
    assert!(matches!(r, Err(Error::ClockSkewed(_))), "{r:?}");
}

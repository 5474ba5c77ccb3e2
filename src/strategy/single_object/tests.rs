//! The single-object strategy against the in-memory S3 model (AWS's
//! answers: 404 to If-Match on a missing key, MD5 ETags) with a fake clock.
//! Fast and exhaustive about branches; the same behaviour is checked against
//! a real S3 server by host-test.

use super::*;
use crate::driver::{self, Io};
use crate::error::Error;
use crate::lease::{Grant, Lease};
use crate::limits::MAX_REREADS;
use crate::lock_object::LockRecord;
use crate::protocol::{AcquireOutcome, Operation, Step};
use crate::ready::Ready;
use crate::stores::s3::model::MissingIfMatch;
use crate::stores::s3::{Method, S3Response};
use crate::testing::model_io::ModelIo;

/// 2023-11-14T22:13:20Z.
const START_MS: u64 = 1_700_000_000_000;

fn store() -> ModelIo {
    ModelIo::new(START_MS)
}

fn reply(status: u16) -> S3Response {
    S3Response {
        status,
        ..Default::default()
    }
}

fn record(s: &ModelIo, key: &str) -> LockRecord {
    LockRecord::from_json(&s.store.objects[key].body).unwrap()
}

/// The seal of this file's one lock, as any client of the bucket makes it.
fn seal() -> crate::seal::LockSeal {
    crate::testing::sealer("bucket").for_lock("single-object:locks/k".into())
}

/// The design's rule, which these tests were written for.
fn judge() -> crate::expiry::Judge {
    crate::expiry::Judge::holder()
}

fn wid() -> String {
    crate::testing::write_id()
}

fn grant(holder: &str) -> Grant {
    Grant::new(10_000, holder.into(), "meta".into()).unwrap()
}

fn try_acquire(s: &mut ModelIo, holder: &str) -> AcquireOutcome {
    driver::run(
        s,
        TryAcquire::new(
            "k".into(),
            "locks/k".into(),
            grant(holder),
            seal(),
            judge(),
            wid(),
        ),
    )
    .ready()
    .unwrap()
}

fn acquire_as_b(s: &mut ModelIo) -> Result<AcquireOutcome, Error> {
    driver::run(
        s,
        TryAcquire::new(
            "k".into(),
            "locks/k".into(),
            grant("b"),
            seal(),
            judge(),
            wid(),
        ),
    )
    .ready()
}

fn granted(outcome: AcquireOutcome) -> Lease {
    match outcome {
        AcquireOutcome::Granted(l) => l,
        other => panic!("expected a grant, got {other:?}"),
    }
}

/// A renew or release of `lease` by a client that did not write it.
fn rewrite(lease: Lease, release: bool) -> RewriteOwn {
    if release {
        RewriteOwn::release(lease, "locks/k".into(), seal(), wid())
    } else {
        RewriteOwn::renew(lease, "locks/k".into(), seal(), wid())
    }
}

fn count(s: &mut ModelIo) -> usize {
    s.take_requests().len()
}

#[test]
fn first_grant_creates_with_if_none_match_in_two_requests() {
    let mut s = store();
    let lease = granted(try_acquire(&mut s, "a"));
    assert_eq!(lease.token, 1);
    assert_eq!(lease.expires_at_ms, s.now_ms() + 10_000);
    assert_eq!(
        s.requests[1].headers[0],
        ("if-none-match".into(), "*".into())
    );
    assert_eq!(count(&mut s), 2);
    let r = record(&s, "locks/k");
    assert_eq!(
        (r.token, r.holder_id.as_str(), r.metadata.as_str()),
        (1, "a", "meta")
    );
}

#[test]
fn a_live_lease_is_not_taken_and_costs_one_read() {
    let mut s = store();
    granted(try_acquire(&mut s, "a"));
    count(&mut s);
    match try_acquire(&mut s, "b") {
        AcquireOutcome::Held(Some(state)) => {
            assert_eq!(state.record.holder_id, "a");
            assert!(state.live);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(count(&mut s), 1);
}

#[test]
fn renew_keeps_the_token_and_release_lets_the_next_in_with_token_plus_one() {
    let mut s = store();
    let lease = granted(try_acquire(&mut s, "a"));
    count(&mut s);
    s.advance(5_000);
    // The client that wrote the lease's object knows its token: one PUT.
    let renewed = driver::run(
        &mut s,
        RewriteOwn::renew(lease.clone(), "locks/k".into(), seal(), wid()).token_known(),
    )
    .ready()
    .unwrap();
    assert_eq!(count(&mut s), 1);
    assert_eq!(renewed.token, lease.token);
    assert_eq!(renewed.expires_at_ms, s.now_ms() + 10_000);
    assert_ne!(renewed.etag, lease.etag);

    // Any other client checks the token first: GET, then PUT.
    driver::run(
        &mut s,
        RewriteOwn::release(renewed, "locks/k".into(), seal(), wid()),
    )
    .ready()
    .unwrap();
    assert_eq!(
        s.take_requests()
            .iter()
            .map(|r| r.method)
            .collect::<Vec<_>>(),
        [Method::Get, Method::Put]
    );
    assert_eq!(record(&s, "locks/k").expires_at_ms, 0);
    assert_eq!(record(&s, "locks/k").token, 1);

    let next = granted(try_acquire(&mut s, "b"));
    assert_eq!(next.token, 2);
    assert_eq!(s.requests[1].headers[0].0, "if-match");
}

#[test]
fn an_expired_lease_is_taken_over_with_token_plus_one_and_the_old_holder_has_lost() {
    let mut s = store();
    let old = granted(try_acquire(&mut s, "a"));
    s.advance(10_001);
    let new = granted(try_acquire(&mut s, "b"));
    assert_eq!(new.token, old.token + 1);
    count(&mut s);
    match driver::run(
        &mut s,
        RewriteOwn::renew(old.clone(), "locks/k".into(), seal(), wid()).token_known(),
    )
    .ready()
    {
        Err(Error::Lost {
            token,
            current: Some(c),
            ..
        }) => {
            assert_eq!(token, old.token);
            assert_eq!(
                (c.record.holder_id.as_str(), c.record.token),
                ("b", new.token)
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        count(&mut s),
        2,
        "the failed write and the read that names the new holder"
    );
    // Without the token known, the read comes first, and finds the same.
    let unknown = driver::run(
        &mut s,
        RewriteOwn::renew(old.clone(), "locks/k".into(), seal(), wid()),
    )
    .ready();
    assert!(
        matches!(&unknown, Err(Error::Lost { current: Some(c), .. }) if c.record.token == new.token),
        "{unknown:?}"
    );
    assert_eq!(count(&mut s), 1, "the read alone: nothing written");
    assert!(matches!(
        driver::run(
            &mut s,
            RewriteOwn::release(old, "locks/k".into(), seal(), wid())
        )
        .ready(),
        Err(Error::Lost { .. })
    ));
    assert_eq!(
        record(&s, "locks/k").holder_id,
        "b",
        "a stale release changes nothing"
    );
}

#[test]
fn the_same_holder_id_reclaims_its_live_lease_with_a_new_token() {
    let mut s = store();
    let first = granted(try_acquire(&mut s, "a"));
    let again = granted(try_acquire(&mut s, "a"));
    assert_eq!(again.token, first.token + 1);
}

#[test]
fn of_two_racing_writers_exactly_one_wins() {
    let mut s = store();
    let mut a = TryAcquire::new(
        "k".into(),
        "locks/k".into(),
        grant("a"),
        seal(),
        judge(),
        wid(),
    );
    let mut b = TryAcquire::new(
        "k".into(),
        "locks/k".into(),
        grant("b"),
        seal(),
        judge(),
        wid(),
    );
    let now = s.now_ms();
    let (Step::Send(ra), Step::Send(rb)) = (a.start(now), b.start(now)) else {
        panic!()
    };
    let (read_a, read_b) = (s.store.handle(&ra), s.store.handle(&rb));
    let (Step::Send(wa), Step::Send(wb)) = (a.on_response(read_a, now), b.on_response(read_b, now))
    else {
        panic!()
    };
    let (put_a, put_b) = (s.store.handle(&wa), s.store.handle(&wb));
    let (Step::Done(Ok(oa)), Step::Done(Ok(ob))) =
        (a.on_response(put_a, now), b.on_response(put_b, now))
    else {
        panic!()
    };
    assert!(matches!(oa, AcquireOutcome::Granted(_)));
    assert_eq!(ob, AcquireOutcome::Held(None));
}

#[test]
fn a_409_rereads_and_retries_a_bounded_number_of_times() {
    let mut s = store();
    s.store.conflicts = 1;
    let lease = granted(try_acquire(&mut s, "a"));
    assert_eq!(lease.token, 1);
    assert_eq!(count(&mut s), 4, "GET, PUT(409), GET, PUT");

    // A key that stays busy: every create is answered 409.
    s.store.objects.clear();
    s.store.conflicts = MAX_REREADS + 1;
    let result = driver::run(
        &mut s,
        TryAcquire::new(
            "k".into(),
            "locks/k".into(),
            grant("b"),
            seal(),
            judge(),
            wid(),
        ),
    )
    .ready();
    assert!(matches!(result, Err(Error::Conflict(_))), "{result:?}");
    assert_eq!(count(&mut s), 2 * (MAX_REREADS as usize + 1));
    assert_eq!(s.store.conflicts, 0);
}

#[test]
fn renew_retries_after_a_409_while_the_object_is_still_ours() {
    let mut s = store();
    let lease = granted(try_acquire(&mut s, "a"));
    count(&mut s);
    // A busy key: the write gets a 409; the object read next is still ours.
    s.store.conflicts = 1;
    let renewed = driver::run(
        &mut s,
        RewriteOwn::renew(lease.clone(), "locks/k".into(), seal(), wid()).token_known(),
    )
    .ready()
    .unwrap();
    assert_eq!(renewed.token, lease.token);
    assert_eq!(count(&mut s), 3);
}

#[test]
fn a_vanished_lock_object_means_lost() {
    // AWS answers the If-Match PUT 404, SeaweedFS 412: lost either way.
    for missing_if_match in [MissingIfMatch::NotFound, MissingIfMatch::PreconditionFailed] {
        let mut s = store();
        s.store.missing_if_match = missing_if_match;
        let lease = granted(try_acquire(&mut s, "a"));
        s.store.objects.clear();
        assert!(matches!(
            driver::run(
                &mut s,
                RewriteOwn::renew(lease, "locks/k".into(), seal(), wid())
            )
            .ready(),
            Err(Error::Lost { current: None, .. })
        ));
    }
}

#[test]
fn corrupt_objects_are_reported_and_left_untouched() {
    for body in [
        &b"\xff\x00binary"[..],
        br#"{"expires_at": 1}"#,
        br#"{"expires_at": "x", "token": 1}"#,
    ] {
        let mut s = store();
        s.store.put_object("locks/k", body);
        let result = driver::run(
            &mut s,
            TryAcquire::new(
                "k".into(),
                "locks/k".into(),
                grant("a"),
                seal(),
                judge(),
                wid(),
            ),
        )
        .ready();
        assert!(
            matches!(result, Err(Error::CorruptLockObject { ref object_key, .. }) if object_key == "locks/k"),
            "{result:?}"
        );
        assert_eq!(
            s.store.objects["locks/k"].body, body,
            "nothing is overwritten"
        );
        assert_eq!(count(&mut s), 1);
    }
    let mut s = store();
    s.store.put_object("locks/k", &vec![b' '; 10 * 1024 * 1024]);
    let result = driver::run(&mut s, Inspect::new("k".into(), "locks/k".into(), judge())).ready();
    assert!(
        matches!(result, Err(Error::CorruptLockObject { ref reason, .. }) if reason.contains("10485760 bytes")),
        "{result:?}"
    );
}

#[test]
fn a_token_at_its_maximum_is_refused_not_wrapped() {
    let mut s = store();
    let body = format!(r#"{{"expires_at": 0, "token": {}}}"#, u64::MAX);
    s.store.put_object("locks/k", body.as_bytes());
    let result = driver::run(
        &mut s,
        TryAcquire::new(
            "k".into(),
            "locks/k".into(),
            grant("a"),
            seal(),
            judge(),
            wid(),
        ),
    )
    .ready();
    assert!(
        matches!(result, Err(Error::CorruptLockObject { .. })),
        "{result:?}"
    );
}

#[test]
fn inspect_reads_one_object() {
    let mut s = store();
    assert_eq!(
        driver::run(&mut s, Inspect::new("k".into(), "locks/k".into(), judge()))
            .ready()
            .unwrap(),
        None
    );
    let lease = granted(try_acquire(&mut s, "a"));
    count(&mut s);
    let state = driver::run(&mut s, Inspect::new("k".into(), "locks/k".into(), judge()))
        .ready()
        .unwrap()
        .unwrap();
    assert_eq!(count(&mut s), 1);
    assert_eq!(
        (state.record.token, state.etag.as_str(), state.live),
        (lease.token, lease.etag.as_str(), true)
    );
    s.advance(10_001);
    let state = driver::run(&mut s, Inspect::new("k".into(), "locks/k".into(), judge()))
        .ready()
        .unwrap()
        .unwrap();
    assert!(!state.live);
}

#[test]
fn no_such_bucket_and_access_denied_are_typed() {
    let mut s = store();
    // Not modelled by the store: canned replies.
    s.scripted.push_back(S3Response {
        status: 404,
        body: b"<Error><Code>NoSuchBucket</Code><RequestId>r9</RequestId></Error>".to_vec(),
        ..Default::default()
    });
    let result = driver::run(&mut s, Inspect::new("k".into(), "locks/k".into(), judge())).ready();
    assert!(
        matches!(result, Err(Error::NoSuchBucket(ref e)) if e.request_id == "r9"),
        "{result:?}"
    );
    s.scripted.push_back(reply(403));
    let result = driver::run(
        &mut s,
        TryAcquire::new(
            "k".into(),
            "locks/k".into(),
            grant("a"),
            seal(),
            judge(),
            wid(),
        ),
    )
    .ready();
    assert!(matches!(result, Err(Error::AccessDenied(_))), "{result:?}");
}

#[test]
fn acquire_waits_out_the_holder_then_takes_over() {
    let mut s = store();
    let first = granted(try_acquire(&mut s, "a"));
    let lease = driver::acquire(
        &mut (),
        &mut s,
        "k",
        60_000,
        async |_: &mut (), s: &mut ModelIo| acquire_as_b(s),
    )
    .ready()
    .unwrap();
    assert_eq!(lease.token, first.token + 1);
    let now = s.now_ms();
    assert!(now > first.expires_at_ms);
    assert!(
        now < first.expires_at_ms + 200,
        "woke promptly after the expiry"
    );
}

#[test]
fn acquire_times_out_naming_the_holder() {
    let mut s = store();
    granted(try_acquire(&mut s, "a"));
    match driver::acquire(
        &mut (),
        &mut s,
        "k",
        3_000,
        async |_: &mut (), s: &mut ModelIo| acquire_as_b(s),
    )
    .ready()
    {
        Err(Error::Timeout {
            waited_ms,
            holder: Some(h),
            ..
        }) => {
            assert_eq!(h.record.holder_id, "a");
            assert!(waited_ms >= 3_000);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_lease_without_an_etag_is_refused_before_any_request() {
    let mut s = store();
    let lease = granted(try_acquire(&mut s, "a"));
    count(&mut s);
    for bad in [
        Lease {
            etag: String::new(),
            ..lease.clone()
        },
        Lease {
            etag: "  ".into(),
            ..lease.clone()
        },
        Lease { ttl_ms: 0, ..lease },
    ] {
        assert!(matches!(
            driver::run(
                &mut s,
                RewriteOwn::renew(bad.clone(), "locks/k".into(), seal(), wid())
            )
            .ready(),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            driver::run(
                &mut s,
                RewriteOwn::release(bad, "locks/k".into(), seal(), wid())
            )
            .ready(),
            Err(Error::InvalidArgument(_))
        ));
    }
    assert_eq!(count(&mut s), 0);
}

/// A lease sealed by someone who read the seal key, naming the stored
/// object's etag with another token, or naming a semaphore's object: the
/// read before the write refuses it, and nothing is written.
#[test]
fn a_rewrite_checks_the_stored_token_before_writing_it() {
    let mut s = store();
    let lease = granted(try_acquire(&mut s, "a"));
    driver::run(
        &mut s,
        RewriteOwn::release(lease, "locks/k".into(), seal(), wid()).token_known(),
    )
    .ready()
    .unwrap();
    let lease = granted(try_acquire(&mut s, "a"));
    assert_eq!(lease.token, 2);
    count(&mut s);
    let lower = seal().seal(Lease {
        token: 1,
        ..lease.clone()
    });
    for release in [false, true] {
        let op = rewrite(lower.clone(), release);
        match driver::run(&mut s, op).ready() {
            Err(Error::InvalidArgument(reason)) => {
                assert!(
                    reason.contains("token 1") && reason.contains("token 2"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            s.take_requests()
                .iter()
                .map(|r| r.method)
                .collect::<Vec<_>>(),
            [Method::Get],
            "one read, nothing written"
        );
    }
    assert_eq!(record(&s, "locks/k").token, 2);

    // A semaphore's object, whose counter the lease names.
    let semaphore =
        br#"{"expires_at":0.0,"holder":"","holders":[],"limit":2,"queue":[],"token":2,"ttl_ms":0}"#;
    let etag = s.store.put_object("locks/k", semaphore);
    let on_semaphore = seal().seal(Lease { etag, ..lease });
    let refused = driver::run(&mut s, rewrite(on_semaphore, false)).ready();
    assert!(
        matches!(&refused, Err(Error::InvalidArgument(r)) if r.contains("semaphore")),
        "{refused:?}"
    );
    assert_eq!(s.store.objects["locks/k"].body, semaphore);
}

mod regressions;
mod server_clock;

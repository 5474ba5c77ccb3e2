//! The protocol against an in-memory conditional store with a fake clock.
//! Fast and exhaustive about branches; the same behaviour is checked against
//! a real S3 server by host-test.

use super::*;
use crate::driver::{self, Io};
use std::collections::HashMap;

/// Conditional PUT semantics as S3 documents them (404 for If-Match on a
/// missing key), plus scripted replies to inject odd answers.
#[derive(Default)]
struct Store {
    objects: HashMap<String, (Vec<u8>, String)>,
    next_etag: u64,
    scripted: Vec<S3Response>,
    requests: Vec<S3Request>,
    now_ms: u64,
    monotonic_ms: u64,
}

impl Store {
    fn reply(status: u16) -> S3Response {
        S3Response {
            status,
            ..Default::default()
        }
    }

    fn apply(&mut self, r: &S3Request) -> S3Response {
        let current = self.objects.get(&r.object_key).cloned();
        let condition = |name: &str| {
            r.headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        match r.method {
            Method::Get => match current {
                None => Self::reply(404),
                Some((body, etag)) => S3Response {
                    status: 200,
                    headers: vec![("etag".into(), etag)],
                    body,
                    body_too_large: None,
                },
            },
            Method::Put => {
                if condition("if-none-match").is_some() && current.is_some() {
                    return Self::reply(412);
                }
                if let Some(want) = condition("if-match") {
                    match &current {
                        None => return Self::reply(404),
                        Some((_, etag)) if *etag != want => return Self::reply(412),
                        _ => {}
                    }
                }
                self.next_etag += 1;
                let etag = format!("\"e{}\"", self.next_etag);
                self.objects
                    .insert(r.object_key.clone(), (r.body.clone(), etag.clone()));
                S3Response {
                    status: 200,
                    headers: vec![("etag".into(), etag)],
                    ..Default::default()
                }
            }
            _ => Self::reply(405),
        }
    }

    fn record(&self, key: &str) -> LockRecord {
        LockRecord::from_json(&self.objects[key].0).unwrap()
    }
}

impl Io for Store {
    fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        self.requests.push(request.clone());
        if !self.scripted.is_empty() {
            return Ok(self.scripted.remove(0));
        }
        Ok(self.apply(request))
    }
    fn now_ms(&mut self) -> u64 {
        self.now_ms
    }
    fn monotonic_ms(&mut self) -> u64 {
        self.monotonic_ms
    }
    fn sleep_ms(&mut self, ms: u64) {
        self.now_ms += ms;
        self.monotonic_ms += ms;
    }
    fn random_u64(&mut self) -> u64 {
        7
    }
}

fn store() -> Store {
    Store {
        now_ms: 1_700_000_000_000,
        ..Default::default()
    }
}

fn grant(holder: &str) -> Grant {
    Grant::new(10_000, holder.into(), "meta".into()).unwrap()
}

fn try_acquire(s: &mut Store, holder: &str) -> AcquireOutcome {
    driver::run(
        s,
        TryAcquire::new("k".into(), "locks/k".into(), grant(holder)),
    )
    .unwrap()
}

fn acquire_as_b(s: &mut Store) -> Result<AcquireOutcome, Error> {
    driver::run(s, TryAcquire::new("k".into(), "locks/k".into(), grant("b")))
}

fn granted(outcome: AcquireOutcome) -> Lease {
    match outcome {
        AcquireOutcome::Granted(l) => l,
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn count(s: &mut Store) -> usize {
    std::mem::take(&mut s.requests).len()
}

#[test]
fn first_grant_creates_with_if_none_match_in_two_requests() {
    let mut s = store();
    let lease = granted(try_acquire(&mut s, "a"));
    assert_eq!(lease.token, 1);
    assert_eq!(lease.expires_at_ms, s.now_ms + 10_000);
    assert_eq!(
        s.requests[1].headers[0],
        ("if-none-match".into(), "*".into())
    );
    assert_eq!(count(&mut s), 2);
    let r = s.record("locks/k");
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
    s.now_ms += 5_000;
    let renewed = driver::run(&mut s, RewriteOwn::renew(lease.clone(), "locks/k".into())).unwrap();
    assert_eq!(count(&mut s), 1);
    assert_eq!(renewed.token, lease.token);
    assert_eq!(renewed.expires_at_ms, s.now_ms + 10_000);
    assert_ne!(renewed.etag, lease.etag);

    driver::run(&mut s, RewriteOwn::release(renewed, "locks/k".into())).unwrap();
    assert_eq!(count(&mut s), 1);
    assert_eq!(s.record("locks/k").expires_at_ms, 0);
    assert_eq!(s.record("locks/k").token, 1);

    let next = granted(try_acquire(&mut s, "b"));
    assert_eq!(next.token, 2);
    assert_eq!(s.requests[1].headers[0].0, "if-match");
}

#[test]
fn an_expired_lease_is_taken_over_with_token_plus_one_and_the_old_holder_has_lost() {
    let mut s = store();
    let old = granted(try_acquire(&mut s, "a"));
    s.now_ms += 10_001;
    let new = granted(try_acquire(&mut s, "b"));
    assert_eq!(new.token, old.token + 1);
    count(&mut s);
    match driver::run(&mut s, RewriteOwn::renew(old.clone(), "locks/k".into())) {
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
    assert!(matches!(
        driver::run(&mut s, RewriteOwn::release(old, "locks/k".into())),
        Err(Error::Lost { .. })
    ));
    assert_eq!(
        s.record("locks/k").holder_id,
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
    let mut a = TryAcquire::new("k".into(), "locks/k".into(), grant("a"));
    let mut b = TryAcquire::new("k".into(), "locks/k".into(), grant("b"));
    let now = s.now_ms;
    let (Step::Send(ra), Step::Send(rb)) = (a.start(now), b.start(now)) else {
        panic!()
    };
    let (read_a, read_b) = (s.apply(&ra), s.apply(&rb));
    let (Step::Send(wa), Step::Send(wb)) = (a.on_response(read_a, now), b.on_response(read_b, now))
    else {
        panic!()
    };
    let (put_a, put_b) = (s.apply(&wa), s.apply(&wb));
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
    s.scripted = vec![Store::reply(404), Store::reply(409)];
    let lease = granted(try_acquire(&mut s, "a"));
    assert_eq!(lease.token, 1);
    assert_eq!(count(&mut s), 4, "GET, PUT(409), GET, PUT");

    let conflict = S3Response {
        status: 409,
        body: b"<Error><Code>ConditionalRequestConflict</Code></Error>".to_vec(),
        ..Default::default()
    };
    s.scripted = (0..=MAX_REREADS)
        .flat_map(|_| [Store::reply(404), conflict.clone()])
        .collect();
    let result = driver::run(
        &mut s,
        TryAcquire::new("k".into(), "locks/k".into(), grant("b")),
    );
    assert!(matches!(result, Err(Error::Conflict(_))), "{result:?}");
    assert_eq!(count(&mut s), 2 * (MAX_REREADS as usize + 1));
}

#[test]
fn renew_retries_after_a_409_while_the_object_is_still_ours() {
    let mut s = store();
    let lease = granted(try_acquire(&mut s, "a"));
    count(&mut s);
    let ours = s.objects["locks/k"].clone();
    s.scripted = vec![
        Store::reply(409),
        S3Response {
            status: 200,
            headers: vec![("etag".into(), ours.1)],
            body: ours.0,
            body_too_large: None,
        },
    ];
    let renewed = driver::run(&mut s, RewriteOwn::renew(lease.clone(), "locks/k".into())).unwrap();
    assert_eq!(renewed.token, lease.token);
    assert_eq!(count(&mut s), 3);
}

#[test]
fn a_vanished_lock_object_means_lost() {
    let mut s = store();
    let lease = granted(try_acquire(&mut s, "a"));
    s.objects.clear();
    assert!(matches!(
        driver::run(&mut s, RewriteOwn::renew(lease, "locks/k".into())),
        Err(Error::Lost { current: None, .. })
    ));
}

#[test]
fn corrupt_objects_are_reported_and_left_untouched() {
    for body in [
        &b"\xff\x00binary"[..],
        br#"{"expires_at": 1}"#,
        br#"{"expires_at": "x", "token": 1}"#,
    ] {
        let mut s = store();
        s.objects
            .insert("locks/k".into(), (body.to_vec(), "\"x\"".into()));
        let result = driver::run(
            &mut s,
            TryAcquire::new("k".into(), "locks/k".into(), grant("a")),
        );
        assert!(
            matches!(result, Err(Error::CorruptLockObject { ref object_key, .. }) if object_key == "locks/k"),
            "{result:?}"
        );
        assert_eq!(s.objects["locks/k"].0, body, "nothing is overwritten");
        assert_eq!(count(&mut s), 1);
    }
    let mut s = store();
    s.scripted = vec![S3Response {
        status: 200,
        headers: vec![("etag".into(), "\"big\"".into())],
        body: Vec::new(),
        body_too_large: Some(10 * 1024 * 1024),
    }];
    let result = driver::run(&mut s, Inspect::new("k".into(), "locks/k".into()));
    assert!(
        matches!(result, Err(Error::CorruptLockObject { ref reason, .. }) if reason.contains("10485760 bytes")),
        "{result:?}"
    );
}

#[test]
fn a_token_at_its_maximum_is_refused_not_wrapped() {
    let mut s = store();
    let body = format!(r#"{{"expires_at": 0, "token": {}}}"#, u64::MAX);
    s.objects
        .insert("locks/k".into(), (body.into_bytes(), "\"x\"".into()));
    let result = driver::run(
        &mut s,
        TryAcquire::new("k".into(), "locks/k".into(), grant("a")),
    );
    assert!(
        matches!(result, Err(Error::CorruptLockObject { .. })),
        "{result:?}"
    );
}

#[test]
fn inspect_reads_one_object() {
    let mut s = store();
    assert_eq!(
        driver::run(&mut s, Inspect::new("k".into(), "locks/k".into())).unwrap(),
        None
    );
    let lease = granted(try_acquire(&mut s, "a"));
    count(&mut s);
    let state = driver::run(&mut s, Inspect::new("k".into(), "locks/k".into()))
        .unwrap()
        .unwrap();
    assert_eq!(count(&mut s), 1);
    assert_eq!(
        (state.record.token, state.etag.as_str(), state.live),
        (lease.token, lease.etag.as_str(), true)
    );
    s.now_ms += 10_001;
    let state = driver::run(&mut s, Inspect::new("k".into(), "locks/k".into()))
        .unwrap()
        .unwrap();
    assert!(!state.live);
}

#[test]
fn no_such_bucket_and_access_denied_are_typed() {
    let mut s = store();
    s.scripted = vec![S3Response {
        status: 404,
        body: b"<Error><Code>NoSuchBucket</Code><RequestId>r9</RequestId></Error>".to_vec(),
        ..Default::default()
    }];
    let result = driver::run(&mut s, Inspect::new("k".into(), "locks/k".into()));
    assert!(
        matches!(result, Err(Error::NoSuchBucket(ref e)) if e.request_id == "r9"),
        "{result:?}"
    );
    s.scripted = vec![Store::reply(403)];
    let result = driver::run(
        &mut s,
        TryAcquire::new("k".into(), "locks/k".into(), grant("a")),
    );
    assert!(matches!(result, Err(Error::AccessDenied(_))), "{result:?}");
}

#[test]
fn acquire_waits_out_the_holder_then_takes_over() {
    let mut s = store();
    let first = granted(try_acquire(&mut s, "a"));
    let lease = driver::acquire(&mut s, "k", 60_000, acquire_as_b).unwrap();
    assert_eq!(lease.token, first.token + 1);
    assert!(s.now_ms > first.expires_at_ms);
    assert!(
        s.now_ms < first.expires_at_ms + 200,
        "woke promptly after the expiry"
    );
}

#[test]
fn acquire_times_out_naming_the_holder() {
    let mut s = store();
    granted(try_acquire(&mut s, "a"));
    match driver::acquire(&mut s, "k", 3_000, acquire_as_b) {
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
fn arguments_are_checked() {
    assert!(Grant::new(0, "a".into(), String::new()).is_err());
    assert!(Grant::new(MAX_TTL_MS + 1, "a".into(), String::new()).is_err());
    assert!(Grant::new(1, String::new(), String::new()).is_err());
    assert!(Grant::new(1, "a".into(), "x".repeat(MAX_METADATA_BYTES + 1)).is_err());
    assert!(object_key("p/", "").is_err());
    assert!(object_key("p/", "a\u{0}b").is_err());
    assert!(object_key("p/", &"k".repeat(1023)).is_err());
    assert_eq!(object_key("p/", "k").unwrap(), "p/k");
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
            driver::run(&mut s, RewriteOwn::renew(bad.clone(), "locks/k".into())),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            driver::run(&mut s, RewriteOwn::release(bad, "locks/k".into())),
            Err(Error::InvalidArgument(_))
        ));
    }
    assert_eq!(count(&mut s), 0);
}

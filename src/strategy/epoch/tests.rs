//! The epoch-objects strategy against the in-memory S3 model, whose clock
//! is the server's: `Last-Modified` and `Date` in whole seconds, LIST with
//! prefix, start-after and pages, MD5 ETags, as S3 and SeaweedFS answer them.

use super::object::read_epoch;
use super::*;
use crate::driver::{self, Io};
use crate::error::Error;
use crate::lease::{Grant, Lease};
use crate::lock_object::{LockState, MAX_LOCK_OBJECT_BYTES};
use crate::protocol::{AcquireOutcome, Operation, Step};
use crate::ready::Ready;
use crate::stores::s3::model::S3Model;
use crate::stores::s3::{Method, S3Request, S3Response};
use crate::testing::intercept::Intercept;
use crate::testing::model_io::{ModelIo, StoreHook};

pub(super) const DIR: &str = "locks/k/";
/// 2023-11-14T22:13:20Z.
pub(super) const START_MS: u64 = 1_700_000_000_000;

pub(super) fn store() -> ModelIo {
    ModelIo::new(START_MS)
}

/// A client whose `hook` runs just before its next PUT reaches the store,
/// not before its next request: acquiring LISTs and GETs before it writes,
/// and the tests below sneak in right before the write.
pub(super) fn before_put(
    io: &mut ModelIo,
    hook: impl FnOnce(&mut S3Model) + 'static,
) -> Intercept<'_, ModelIo> {
    let mut hook: Option<StoreHook> = Some(Box::new(hook));
    Intercept::new(io, move |request, io: &mut ModelIo| {
        if request.method == Method::Put {
            if let Some(hook) = hook.take() {
                hook(&mut io.store);
            }
        }
        None
    })
}

/// The methods of the requests sent since the last call.
fn methods(s: &mut ModelIo) -> Vec<Method> {
    s.take_requests().into_iter().map(|r| r.method).collect()
}

fn epochs(s: &ModelIo) -> Vec<u64> {
    s.store
        .objects
        .keys()
        .filter_map(|k| parse_epoch_key(DIR, k))
        .collect()
}

fn record(s: &ModelIo, epoch: u64) -> EpochRecord {
    EpochRecord::from_json(&s.store.objects[&epoch_key(DIR, epoch)].body, epoch).unwrap()
}

/// The seal of this file's one lock, as any client of the bucket makes it.
pub(super) fn seal() -> crate::seal::LockSeal {
    crate::testing::sealer("bucket").for_lock("epoch-objects:locks/k".into())
}

/// The server's clock, the strategy's default.
pub(super) fn judge() -> crate::expiry::Judge {
    crate::expiry::Judge::new(crate::expiry::ExpiryClock::Server, None)
}

pub(super) fn wid() -> String {
    crate::testing::write_id()
}

pub(super) fn grant(holder: &str) -> Grant {
    Grant::new(10_000, holder.into(), "meta".into()).unwrap()
}

fn attempt(s: &mut impl Io, holder: &str, hint: u64) -> EpochOutcome {
    let op = EpochTryAcquire::new(
        "k".into(),
        DIR.into(),
        grant(holder),
        seal(),
        judge(),
        wid(),
        hint,
    );
    let (outcome, cleanup) = driver::run(s, op).ready().unwrap();
    driver::run(s, Cleanup::new(cleanup.clone()))
        .ready()
        .unwrap();
    (outcome, cleanup)
}

pub(super) fn granted(s: &mut impl Io, holder: &str) -> Lease {
    match attempt(s, holder, 0).0 {
        AcquireOutcome::Granted(l) => l,
        other => panic!("expected a grant, got {other:?}"),
    }
}

pub(super) fn held(s: &mut impl Io, holder: &str) -> Option<LockState> {
    match attempt(s, holder, 0).0 {
        AcquireOutcome::Held(h) => h,
        other => panic!("expected held, got {other:?}"),
    }
}

#[test]
fn keys_are_fixed_width_and_foreign_keys_are_ignored() {
    assert_eq!(
        epoch_key(DIR, 42),
        "locks/k/epoch-00000000000000000042.json"
    );
    assert_eq!(
        parse_epoch_key(DIR, &epoch_key(DIR, u64::MAX)),
        Some(u64::MAX)
    );
    for foreign in [
        "locks/k/epoch-42.json",
        "locks/k/epoch-0000000000000000004x.json",
        "locks/k/epoch-99999999999999999999.json",
        "locks/k/epoch-00000000000000000042.json.bak",
        "locks/k/other",
        "locks/kk/epoch-00000000000000000042.json",
    ] {
        assert_eq!(parse_epoch_key(DIR, foreign), None, "{foreign}");
    }
}

#[test]
fn first_grant_lists_creates_and_verifies_in_three_requests() {
    let mut s = store();
    let lease = granted(&mut s, "a");
    assert_eq!(lease.token, 1);
    assert_eq!(methods(&mut s), [Method::Get, Method::Put, Method::Get]);
    let record = record(&s, 1);
    assert_eq!((record.expired, record.validity_ms), (false, 10_000));
}

#[test]
fn a_live_epoch_holds_others_off_with_two_requests() {
    let mut s = store();
    granted(&mut s, "a");
    methods(&mut s);
    let h = held(&mut s, "b").expect("holder seen");
    assert_eq!((h.record.token, h.record.holder_id.as_str()), (1, "a"));
    assert!(h.live);
    assert_eq!(methods(&mut s), [Method::Get, Method::Get]);
}

#[test]
fn validity_is_judged_by_the_server_clock_not_the_readers() {
    let mut s = store();
    granted(&mut s, "a");
    // A reader whose clock is an hour ahead still sees the epoch live.
    s.clock_offset_ms += 3_600_000;
    assert!(held(&mut s, "b").is_some());
    // Only the server's time passing expires it: validity plus slack.
    s.store.advance(10_000 + crate::expiry::SERVER_SLACK_MS);
    assert!(held(&mut s, "b").is_some(), "at the limit it is still live");
    s.store.advance(1_000);
    assert_eq!(granted(&mut s, "b").token, 2);
}

#[test]
fn release_frees_the_key_at_once_and_tokens_keep_rising() {
    let mut s = store();
    let a = granted(&mut s, "a");
    methods(&mut s);
    driver::run(&mut s, EpochRewrite::release(a, DIR.into(), seal(), wid()))
        .ready()
        .unwrap();
    assert_eq!(
        methods(&mut s),
        [Method::Put, Method::Get],
        "PUT, then a LIST that finds no higher epoch"
    );
    assert!(record(&s, 1).expired);
    let b = granted(&mut s, "b");
    assert_eq!(b.token, 2);
    assert_eq!(
        methods(&mut s),
        [Method::Get, Method::Get, Method::Put, Method::Get],
        "LIST, GET, PUT, verifying LIST; nothing old enough to clean"
    );
}

#[test]
fn renew_moves_last_modified_and_late_renewals_are_lost() {
    let mut s = store();
    let a = granted(&mut s, "a");
    s.advance(8_000);
    let renewed = driver::run(
        &mut s,
        EpochRewrite::renew(a.clone(), DIR.into(), seal(), wid()),
    )
    .ready()
    .unwrap();
    assert_eq!(renewed.expires_at_ms, s.now_ms() + 10_000);
    assert_eq!(
        s.store.objects[&epoch_key(DIR, 1)].last_modified_ms,
        s.store.now_ms
    );
    // 8 s after the first grant's expiry: still live thanks to the renewal.
    s.advance(10_000);
    assert!(held(&mut s, "b").is_some());
    // Past the renewed lease's expiry, renew writes nothing and reports lost.
    s.advance(5_000);
    methods(&mut s);
    let late = driver::run(
        &mut s,
        EpochRewrite::renew(renewed, DIR.into(), seal(), wid()),
    )
    .ready();
    assert!(
        matches!(late, Err(Error::Lost { token: 1, .. })),
        "{late:?}"
    );
    assert!(methods(&mut s).is_empty());
}

#[test]
fn a_renew_whose_reply_comes_after_expiry_is_lost() {
    let mut s = store();
    let a = granted(&mut s, "a");
    s.advance(9_000);
    // The reply takes 2 s: the server may have judged us expired by then.
    s.before_send = Some(Box::new(|store: &mut S3Model| store.advance(2_000)));
    let r = driver::run(&mut s, EpochRewrite::renew(a, DIR.into(), seal(), wid())).ready();
    assert!(matches!(r, Err(Error::Lost { .. })), "{r:?}");
}

#[test]
fn a_rewritten_epoch_means_renew_and_release_are_lost_naming_the_holder() {
    let mut s = store();
    let a = granted(&mut s, "a");
    // Someone (an operator) rewrote our epoch object for another holder:
    // other bytes, so another ETag.
    let mut edited = record(&s, 1);
    edited.holder_id = "edited by an operator".into();
    let other = s.store.put_object(&epoch_key(DIR, 1), &edited.to_json());
    assert_ne!(other, a.etag);
    for op in [
        EpochRewrite::renew(a.clone(), DIR.into(), seal(), wid()),
        EpochRewrite::release(a.clone(), DIR.into(), seal(), wid()),
    ] {
        methods(&mut s);
        match driver::run(&mut s, op).ready() {
            Err(Error::Lost {
                token: 1,
                current: Some(c),
                ..
            }) => assert_eq!((c.record.token, &c.etag), (1, &other)),
            other => panic!("{other:?}"),
        }
        // The refused write, the read that finds our epoch not ours, then
        // the inspection that names who holds the key.
        assert_eq!(
            methods(&mut s),
            [Method::Put, Method::Get, Method::Get, Method::Get]
        );
    }
}

#[test]
fn our_epoch_rewritten_by_another_call_of_its_holder_is_adopted() {
    let mut s = store();
    let a = granted(&mut s, "a");
    s.advance(1_000);
    // A renew of ours, as another call wrote it (another write id): the
    // epoch object is this grant, at an etag the lease does not name.
    let mut ours = record(&s, 1);
    ours.write_id = wid();
    let landed = s.store.put_object(&epoch_key(DIR, 1), &ours.to_json());
    assert_ne!(landed, a.etag);
    methods(&mut s);
    let renewed = driver::run(
        &mut s,
        EpochRewrite::renew(a.clone(), DIR.into(), seal(), wid()),
    )
    .ready()
    .unwrap();
    assert_eq!(renewed.token, 1);
    assert_ne!(renewed.etag, landed, "written again from this call");
    // The refused write, the read that finds our grant, the write on it,
    // and the LIST past our epoch.
    assert_eq!(
        methods(&mut s),
        [Method::Put, Method::Get, Method::Put, Method::Get]
    );
    // Released, the epoch object is no grant of ours to go on from.
    driver::run(
        &mut s,
        EpochRewrite::release(renewed, DIR.into(), seal(), wid()),
    )
    .ready()
    .unwrap();
    let r = driver::run(&mut s, EpochRewrite::renew(a, DIR.into(), seal(), wid())).ready();
    assert!(matches!(r, Err(Error::Lost { .. })), "{r:?}");
}

#[test]
fn cleanup_keeps_the_prefix_small_over_many_handovers() {
    let mut s = store();
    for round in 1..=100u64 {
        let lease = granted(&mut s, &format!("h{round}"));
        assert_eq!(lease.token, round);
        driver::run(
            &mut s,
            EpochRewrite::release(lease, DIR.into(), seal(), wid()),
        )
        .ready()
        .unwrap();
        assert!(epochs(&s).len() <= KEEP_EPOCHS as usize, "{:?}", epochs(&s));
    }
    assert_eq!(epochs(&s), [99, 100]);
}

#[test]
fn a_re_created_old_epoch_is_not_a_grant() {
    let mut s = store();
    let a = granted(&mut s, "a");
    driver::run(&mut s, EpochRewrite::release(a, DIR.into(), seal(), wid()))
        .ready()
        .unwrap();
    // While our client decides to create epoch 2, others create 2 and 3
    // and cleanup deletes 2 again: our PUT succeeds, on a stale epoch.
    let others = |store: &mut S3Model| {
        let body = store.objects[&epoch_key(DIR, 1)].body.clone();
        for e in [2, 3] {
            store.put_object(&epoch_key(DIR, e), &body);
        }
        store.objects.remove(&epoch_key(DIR, 2));
    };
    assert_eq!(held(&mut before_put(&mut s, others), "late"), None);
}

#[test]
fn losing_the_create_race_is_held() {
    let mut s = store();
    let winner = |store: &mut S3Model| {
        store.put_object(&epoch_key(DIR, 1), b"{}");
    };
    assert_eq!(held(&mut before_put(&mut s, winner), "b"), None);
}

#[test]
fn a_hint_lists_from_just_below_it_and_falls_back_to_a_full_listing() {
    let mut s = store();
    for _ in 0..3 {
        let l = granted(&mut s, "a");
        driver::run(&mut s, EpochRewrite::release(l, DIR.into(), seal(), wid()))
            .ready()
            .unwrap();
    }
    methods(&mut s);
    assert!(matches!(attempt(&mut s, "b", 3).0, AcquireOutcome::Granted(ref l) if l.token == 4));
    let first = &s.requests[0];
    assert!(first
        .query
        .contains(&("start-after".into(), epoch_key(DIR, 1))));
    // A hint beyond everything listed (the prefix was wiped): the client
    // lists fully, then still never goes below what it saw.
    s.store.objects.clear();
    methods(&mut s);
    assert!(matches!(attempt(&mut s, "b", 9).0, AcquireOutcome::Granted(ref l) if l.token == 10));
    assert_eq!(methods(&mut s)[..2], [Method::Get, Method::Get]);
}

#[test]
fn inspect_reports_the_highest_epoch() {
    let mut s = store();
    assert_eq!(
        driver::run(
            &mut s,
            EpochInspect::new("k".into(), DIR.into(), judge(), 0)
        )
        .ready()
        .unwrap(),
        None
    );
    let a = granted(&mut s, "a");
    methods(&mut s);
    let state = driver::run(
        &mut s,
        EpochInspect::new("k".into(), DIR.into(), judge(), 0),
    )
    .ready()
    .unwrap()
    .unwrap();
    assert_eq!(methods(&mut s), [Method::Get, Method::Get]);
    assert_eq!((state.record.token, state.etag), (1, a.etag));
    assert!(state.live);
}

#[test]
fn foreign_keys_under_the_prefix_are_ignored_and_corrupt_epochs_are_typed() {
    let mut s = store();
    s.store.put_object("locks/k/epoch-garbage.json", b"x");
    assert_eq!(granted(&mut s, "a").token, 1);
    s.store
        .put_object(&epoch_key(DIR, 7), b"{\"expired\": \"no\"}");
    let op = EpochTryAcquire::new(
        "k".into(),
        DIR.into(),
        grant("b"),
        seal(),
        judge(),
        wid(),
        0,
    );
    match driver::run(&mut s, op).ready() {
        Err(Error::CorruptLockObject { object_key, reason }) => {
            assert_eq!(object_key, epoch_key(DIR, 7));
            assert!(reason.contains("\"expired\" must be a boolean"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn epoch_records_are_written_as_a_serde_json_value_wrote_them() {
    // Earlier versions serialized a `Value` (sorted keys): same bytes.
    let r = EpochRecord {
        expired: false,
        validity_ms: 60_000,
        token: 7,
        holder_id: "node \"a\"".into(),
        acquired_at_ms: 1_740_151_413_020,
        metadata: "10.0.0.1:8080".into(),
        write_id: "w1".into(),
    };
    let value = serde_json::json!({
        "expired": r.expired,
        "validity_ms": r.validity_ms,
        "token": r.token,
        "holder": r.holder_id,
        "acquired_at": r.acquired_at_ms as f64 / 1000.0,
        "metadata": r.metadata,
        "write": r.write_id,
    });
    assert_eq!(r.to_json(), value.to_string().into_bytes());
}

#[test]
fn epoch_records_refuse_each_kind_of_corruption() {
    let cases: &[(&[u8], &str)] = &[
        (b"nope", "not JSON"),
        (b"[]", "expected a JSON object"),
        (br#"{"validity_ms": 5}"#, "missing field \"expired\""),
        (br#"{"expired": false}"#, "missing field \"validity_ms\""),
        (br#"{"expired": false, "validity_ms": -1}"#, "validity_ms"),
        (
            br#"{"expired": false, "validity_ms": 5, "token": 8}"#,
            "\"token\" is 8, but the key names epoch 7",
        ),
        (
            br#"{"expired": false, "validity_ms": 5, "token": "7"}"#,
            "\"token\" is a string, but the key names epoch 7",
        ),
        (
            br#"{"expired": false, "validity_ms": 5, "holder": []}"#,
            "\"holder\" must be a string",
        ),
    ];
    for (body, want) in cases {
        let err = EpochRecord::from_json(body, 7).unwrap_err();
        assert!(
            err.contains(want),
            "{}: {err}",
            String::from_utf8_lossy(body)
        );
    }
    // The design's own minimal object is readable.
    let r = EpochRecord::from_json(br#"{"expired": false, "validity_ms": 60000}"#, 7).unwrap();
    assert_eq!((r.token, r.holder_id.as_str()), (7, ""));
}

#[test]
fn replies_without_server_time_or_with_garbage_listings_are_typed_errors() {
    let mut s = store();
    granted(&mut s, "a");
    let key = epoch_key(DIR, 1);
    let mut reply = s
        .store
        .handle(&S3Request::new(Method::Get, &key, MAX_LOCK_OBJECT_BYTES));
    reply.headers.retain(|(k, _)| k != "date");
    match read_epoch("k", DIR, 1, reply, START_MS, &judge()) {
        Err(Error::S3(e)) => assert!(e.message.contains("date"), "{}", e.message),
        other => panic!("{other:?}"),
    }
    let garbage = S3Response {
        status: 200,
        body: b"<html>hello</html>".to_vec(),
        ..Default::default()
    };
    let mut op = EpochTryAcquire::new(
        "k".into(),
        DIR.into(),
        grant("b"),
        seal(),
        judge(),
        wid(),
        0,
    );
    op.start(0);
    match op.on_response(garbage, 0) {
        Step::Done(Err(Error::S3(e))) => {
            assert!(
                e.message.contains("unreadable ListObjectsV2"),
                "{}",
                e.message
            )
        }
        other => panic!("{other:?}"),
    }
}

mod regressions;

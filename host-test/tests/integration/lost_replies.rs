//! Ambiguous replies against the real server: the write reaches SeaweedFS
//! and is applied, then its reply is dropped (`Fault::LoseReply`), so the
//! component sees a transport error for a write that landed. Every writing
//! call must then read back, recognise its own write id, and answer as if
//! the reply had come: try-acquire and acquire return the grant, renew
//! returns the renewed lease (no false `lost`), release frees the key at
//! once (no ghost lease), fenced writes report the write. Both strategies.

use super::*;
use host_test::bindings::{Config, Error as E, LockState, Strategy};
use host_test::hooks::{Fault, RequestRecord};
use std::time::{Duration, Instant};

/// The config of `strategy`; single-object as the default (no field set).
pub fn strategy_config(prefix: &str, strategy: Strategy) -> Config {
    let mut config = endpoint().config(prefix);
    config.strategy = match strategy {
        Strategy::SingleObject => None,
        Strategy::EpochObjects => Some(Strategy::EpochObjects),
    };
    config
}

/// `METHOD status` per request (`LIST` for ListObjectsV2, `-` for no
/// status: failed in transport before any reply).
pub fn shape(requests: &[RequestRecord]) -> Vec<String> {
    requests
        .iter()
        .map(|r| {
            let what = if r.path_and_query.contains("list-type=2") {
                "LIST"
            } else {
                r.method.as_str()
            };
            match r.status {
                Some(s) => format!("{what} {s}"),
                None => format!("{what} -"),
            }
        })
        .collect()
}

fn name(strategy: Strategy) -> &'static str {
    match strategy {
        Strategy::SingleObject => "single-object",
        Strategy::EpochObjects => "epoch-objects",
    }
}

/// Lets the next `n` requests through untouched, then loses the reply of
/// the one after: the write.
fn lose_reply_of_request(i: &Instance, n: usize) {
    for _ in 0..n {
        i.hooks.inject(Fault::Delay(Duration::ZERO));
    }
    i.hooks.inject(Fault::LoseReply);
}

fn no_faults_left(i: &Instance) {
    assert!(
        i.hooks.faults.lock().unwrap().is_empty(),
        "every injected fault was used"
    );
}

fn state(i: &mut Instance, key: &str) -> LockState {
    i.inspect(key)
        .expect("no trap")
        .expect("inspect")
        .expect("a lock state")
}

/// The request log of `i` since the last take, checked against `expected`
/// and printed.
fn expect_shape(i: &Instance, what: &str, expected: &[&str]) -> Vec<RequestRecord> {
    let log = i.hooks.take_requests();
    println!("{what}: {:?}", shape(&log));
    assert_eq!(shape(&log), expected, "{what}");
    assert!(log.iter().all(|r| r.payload_hash_ok), "{log:?}");
    log
}

/// The write whose reply is lost, and the shape of the whole call.
fn grant_shape(strategy: Strategy, fresh: bool) -> Vec<&'static str> {
    match (strategy, fresh) {
        // GET (absent), the key's token floor, PUT If-None-Match (lost),
        // GET: our write id.
        (Strategy::SingleObject, true) => vec!["GET 404", "PUT 200", "PUT 200", "GET 200"],
        // No read: this instance last read the released state, so it
        // writes at once, PUT If-Match on that ETag (lost); a full GET: our
        // write id.
        (Strategy::SingleObject, false) => vec!["PUT 200", "GET 200"],
        // LIST (empty), the key's token floor, PUT epoch 1 (lost), GET our
        // epoch, LIST: none newer.
        (Strategy::EpochObjects, true) => {
            vec!["LIST 200", "PUT 200", "PUT 200", "GET 200", "LIST 200"]
        }
        (Strategy::EpochObjects, false) => {
            vec!["LIST 200", "GET 304", "PUT 200", "GET 200", "LIST 200"]
        }
    }
}

/// Requests before the write of a grant (on a fresh key: the read, then
/// the key's token floor).
fn reads_before_grant(strategy: Strategy, fresh: bool) -> usize {
    match (strategy, fresh) {
        (Strategy::SingleObject, true) => 2,
        (Strategy::SingleObject, false) => 0,
        (Strategy::EpochObjects, true) => 2,
        (Strategy::EpochObjects, false) => 2,
    }
}

/// After a grant whose reply was lost: the caller holds it, everyone sees
/// it, nobody else gets it, and it renews and releases.
fn check_held(a: &mut Instance, b: &mut Instance, key: &str, lease: &Lease, holder: &str) {
    let seen = state(a, key);
    assert_eq!(
        (seen.holder_id.as_str(), seen.token, seen.live),
        (holder, lease.token, true),
        "the holder's own inspect"
    );
    assert_eq!(seen.etag, lease.etag, "the lease carries the stored etag");
    let seen = state(b, key);
    assert_eq!(
        (seen.holder_id.as_str(), seen.token, seen.live),
        (holder, lease.token, true),
        "another instance's inspect"
    );
    assert_eq!(
        try_acquire(b, key, &named(30_000, "other")),
        None,
        "another instance is refused"
    );
    let renewed = a.renew(lease).expect("no trap").expect("renew");
    assert_eq!(renewed.token, lease.token);
    assert_ne!(renewed.etag, lease.etag);
    a.release(&renewed).expect("no trap").expect("release");
    assert!(!state(b, key).live, "released");
    a.hooks.take_requests();
    b.hooks.take_requests();
}

fn lost_grant_reply(strategy: Strategy, with_timeout: bool) {
    let what = if with_timeout {
        "acquire"
    } else {
        "try-acquire"
    };
    let prefix = fresh_prefix(&format!("lost-{what}-{}", name(strategy)));
    let config = strategy_config(&prefix, strategy);
    let (mut a, mut b) = (opened_with(&config), opened_with(&config));
    // The seal key's requests come before the first grant's: not these.
    load_seal_key(&mut a);
    load_seal_key(&mut b);
    let grant = |i: &mut Instance, holder: &str| -> Lease {
        let options = named(30_000, holder);
        if with_timeout {
            i.acquire("k", &options, 5_000)
                .expect("no trap")
                .unwrap_or_else(|e| panic!("{what} after a lost reply: {e:?}"))
        } else {
            try_acquire(i, "k", &options)
                .unwrap_or_else(|| panic!("{what} after a lost reply found the key held"))
        }
    };

    // A fresh key: the create's reply is lost.
    lose_reply_of_request(&a, reads_before_grant(strategy, true));
    let lease = grant(&mut a, "a");
    no_faults_left(&a);
    let log = expect_shape(
        &a,
        &format!("{} {what}, fresh key, reply lost", name(strategy)),
        &grant_shape(strategy, true),
    );
    let write = &log[reads_before_grant(strategy, true)];
    assert_eq!(write.if_none_match.as_deref(), Some("*"), "{write:?}");
    assert_eq!(
        (lease.token, lease.holder_id.as_str()),
        (1, "a"),
        "{lease:?}"
    );
    check_held(&mut a, &mut b, "k", &lease, "a");

    // A released key: the takeover's reply is lost (single-object: an
    // If-Match overwrite; epoch-objects: the next epoch after a read).
    lose_reply_of_request(&b, reads_before_grant(strategy, false));
    let taken = grant(&mut b, "b");
    no_faults_left(&b);
    let log = expect_shape(
        &b,
        &format!("{} {what}, released key, reply lost", name(strategy)),
        &grant_shape(strategy, false),
    );
    let write = &log[reads_before_grant(strategy, false)];
    match strategy {
        Strategy::SingleObject => assert!(write.if_match.is_some(), "{write:?}"),
        Strategy::EpochObjects => assert_eq!(write.if_none_match.as_deref(), Some("*")),
    }
    assert_eq!(
        (taken.token, taken.holder_id.as_str()),
        (2, "b"),
        "{taken:?}"
    );
    check_held(&mut b, &mut a, "k", &taken, "b");
}

#[test]
fn try_acquire_single_object_recognises_its_grant_after_a_lost_reply() {
    lost_grant_reply(Strategy::SingleObject, false);
}

#[test]
fn try_acquire_epoch_objects_recognises_its_grant_after_a_lost_reply() {
    lost_grant_reply(Strategy::EpochObjects, false);
}

#[test]
fn acquire_single_object_recognises_its_grant_after_a_lost_reply() {
    lost_grant_reply(Strategy::SingleObject, true);
}

#[test]
fn acquire_epoch_objects_recognises_its_grant_after_a_lost_reply() {
    lost_grant_reply(Strategy::EpochObjects, true);
}

/// What renew and release send when the write's reply is lost: the write,
/// a read that finds our write id, and (epoch-objects) the LIST that finds
/// no newer epoch.
fn rewrite_lost_shape(strategy: Strategy) -> Vec<&'static str> {
    match strategy {
        Strategy::SingleObject => vec!["PUT 200", "GET 200"],
        Strategy::EpochObjects => vec!["PUT 200", "GET 200", "LIST 200"],
    }
}

fn rewrite_shape(strategy: Strategy) -> Vec<&'static str> {
    match strategy {
        Strategy::SingleObject => vec!["PUT 200"],
        Strategy::EpochObjects => vec!["PUT 200", "LIST 200"],
    }
}

fn lost_renew_reply(strategy: Strategy) {
    let prefix = fresh_prefix(&format!("lost-renew-{}", name(strategy)));
    let config = strategy_config(&prefix, strategy);
    let (mut a, mut b) = (opened_with(&config), opened_with(&config));
    let lease = try_acquire(&mut a, "k", &named(30_000, "a")).expect("a free key");
    a.hooks.take_requests();
    std::thread::sleep(Duration::from_millis(20));

    a.hooks.inject(Fault::LoseReply);
    let renewed = a
        .renew(&lease)
        .expect("no trap")
        .unwrap_or_else(|e| panic!("renew after a lost reply: {e:?}"));
    no_faults_left(&a);
    let log = expect_shape(
        &a,
        &format!("{} renew, reply lost", name(strategy)),
        &rewrite_lost_shape(strategy),
    );
    assert_eq!(log[0].if_match.as_deref(), Some(lease.etag.as_str()));
    assert_eq!(renewed.token, lease.token);
    assert_eq!(renewed.holder_id, "a");
    assert_ne!(renewed.etag, lease.etag, "the lease carries the new etag");
    assert!(renewed.expires_at_ms > lease.expires_at_ms, "{renewed:?}");

    // Everyone sees the renewed object, and it is the one the lease names.
    let seen = state(&mut b, "k");
    assert_eq!(
        (seen.holder_id.as_str(), seen.token, seen.live),
        ("a", lease.token, true)
    );
    assert_eq!(seen.etag, renewed.etag);
    b.hooks.take_requests();

    // Renewing the returned lease works: no false `lost`.
    let again = a
        .renew(&renewed)
        .expect("no trap")
        .unwrap_or_else(|e| panic!("renew of the lease a lost reply returned: {e:?}"));
    let log = expect_shape(
        &a,
        &format!("{} renew of that lease", name(strategy)),
        &rewrite_shape(strategy),
    );
    assert_eq!(log[0].if_match.as_deref(), Some(renewed.etag.as_str()));
    assert_eq!(again.token, lease.token);

    // The lease from before the lost renew names the same grant, which
    // the lock object still holds: it renews that grant (as a renew sent
    // again as a new call does), and the key stays a's.
    let from_older = a
        .renew(&lease)
        .expect("no trap")
        .unwrap_or_else(|e| panic!("the grant's older lease: {e:?}"));
    assert_eq!(from_older.token, lease.token);
    assert_eq!(try_acquire(&mut b, "k", &named(30_000, "b")), None);
    a.release(&again).expect("no trap").expect("release");
}

#[test]
fn renew_single_object_returns_the_renewed_lease_after_a_lost_reply() {
    lost_renew_reply(Strategy::SingleObject);
}

#[test]
fn renew_epoch_objects_returns_the_renewed_lease_after_a_lost_reply() {
    lost_renew_reply(Strategy::EpochObjects);
}

fn lost_release_reply(strategy: Strategy) {
    let prefix = fresh_prefix(&format!("lost-release-{}", name(strategy)));
    let config = strategy_config(&prefix, strategy);
    let (mut a, mut b) = (opened_with(&config), opened_with(&config));
    // A long ttl: a ghost lease would block the key for 30 s.
    let lease = try_acquire(&mut a, "k", &named(30_000, "a")).expect("a free key");
    a.hooks.take_requests();

    a.hooks.inject(Fault::LoseReply);
    a.release(&lease)
        .expect("no trap")
        .unwrap_or_else(|e| panic!("release after a lost reply: {e:?}"));
    no_faults_left(&a);
    let log = expect_shape(
        &a,
        &format!("{} release, reply lost", name(strategy)),
        &rewrite_lost_shape(strategy),
    );
    assert_eq!(log[0].if_match.as_deref(), Some(lease.etag.as_str()));

    let seen = state(&mut b, "k");
    assert_eq!(
        (seen.token, seen.live, seen.expires_at_ms),
        (1, false, 0),
        "released: {seen:?}"
    );
    let started = Instant::now();
    let taken = try_acquire(&mut b, "k", &named(30_000, "b")).expect("the key is free at once");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!((taken.token, taken.holder_id.as_str()), (2, "b"));
    let seen = state(&mut a, "k");
    assert_eq!(
        (seen.holder_id.as_str(), seen.token, seen.live),
        ("b", 2, true)
    );
    // The released lease is spent.
    assert!(matches!(expect_err(a.renew(&lease)), E::Lost(_)));
    b.release(&taken).expect("no trap").expect("release");
}

#[test]
fn release_single_object_frees_the_key_at_once_after_a_lost_reply() {
    lost_release_reply(Strategy::SingleObject);
}

#[test]
fn release_epoch_objects_frees_the_key_at_once_after_a_lost_reply() {
    lost_release_reply(Strategy::EpochObjects);
}

fn lost_fenced_replies(strategy: Strategy) {
    let prefix = fresh_prefix(&format!("lost-fenced-{}", name(strategy)));
    let config = strategy_config(&prefix, strategy);
    let (mut a, mut b) = (opened_with(&config), opened_with(&config));
    let object = format!("{prefix}data/state");
    let lease = try_acquire(&mut a, "k", &named(30_000, "a")).expect("a free key");
    a.hooks.take_requests();
    let get = |i: &mut Instance| {
        i.fenced_get(&object)
            .expect("no trap")
            .unwrap_or_else(|e| panic!("fenced get: {e:?}"))
    };

    // Create: HEAD (absent), PUT If-None-Match (lost), HEAD: our write id.
    lose_reply_of_request(&a, 1);
    let written = a
        .fenced_put(&lease, &object, b"first", "text/plain")
        .expect("no trap")
        .unwrap_or_else(|e| panic!("fenced put after a lost reply: {e:?}"));
    no_faults_left(&a);
    let log = expect_shape(
        &a,
        &format!("{} fenced-put (create), reply lost", name(strategy)),
        &["HEAD 404", "PUT 200", "HEAD 200"],
    );
    assert_eq!(log[1].if_none_match.as_deref(), Some("*"));
    assert_eq!(
        (
            written.object_key.as_str(),
            written.token,
            written.previous_token
        ),
        (object.as_str(), lease.token, None)
    );
    let stored = get(&mut b).expect("the write is there");
    assert_eq!(
        (
            stored.body.as_slice(),
            stored.token,
            stored.content_type.as_str()
        ),
        (&b"first"[..], lease.token, "text/plain")
    );
    assert_eq!(stored.etag, written.etag);

    // Overwrite: HEAD, PUT If-Match (lost), HEAD: our write id.
    lose_reply_of_request(&a, 1);
    let written = a
        .fenced_put(&lease, &object, b"second", "text/plain")
        .expect("no trap")
        .unwrap_or_else(|e| panic!("fenced put over an object after a lost reply: {e:?}"));
    no_faults_left(&a);
    let log = expect_shape(
        &a,
        &format!("{} fenced-put (overwrite), reply lost", name(strategy)),
        &["HEAD 200", "PUT 200", "HEAD 200"],
    );
    assert_eq!(log[1].if_match.as_deref(), Some(stored.etag.as_str()));
    assert_eq!(
        (written.token, written.previous_token),
        (lease.token, Some(lease.token))
    );
    let stored = get(&mut b).expect("the write is there");
    assert_eq!(
        (stored.body.as_slice(), stored.token),
        (&b"second"[..], lease.token)
    );
    assert_eq!(stored.etag, written.etag);

    // Delete: HEAD, PUT tombstone If-Match (lost), HEAD: our write id.
    lose_reply_of_request(&a, 1);
    a.fenced_delete(&lease, &object)
        .expect("no trap")
        .unwrap_or_else(|e| panic!("fenced delete after a lost reply: {e:?}"));
    no_faults_left(&a);
    let log = expect_shape(
        &a,
        &format!("{} fenced-delete, reply lost", name(strategy)),
        &["HEAD 200", "PUT 200", "HEAD 200"],
    );
    assert_eq!(log[1].if_match.as_deref(), Some(stored.etag.as_str()));
    assert_eq!(get(&mut b), None, "deleted: a tombstone reads as absent");
    assert_eq!(get(&mut a), None);

    // The tombstone keeps the token: the same grant may write again.
    let again = a
        .fenced_put(&lease, &object, b"third", "text/plain")
        .expect("no trap")
        .expect("fenced put over our own tombstone");
    assert_eq!(again.previous_token, Some(lease.token));
    a.release(&lease).expect("no trap").expect("release");
}

#[test]
fn fenced_writes_single_object_report_the_write_after_a_lost_reply() {
    lost_fenced_replies(Strategy::SingleObject);
}

#[test]
fn fenced_writes_epoch_objects_report_the_write_after_a_lost_reply() {
    lost_fenced_replies(Strategy::EpochObjects);
}

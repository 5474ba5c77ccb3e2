//! Fenced writes: each object records the token of the grant that wrote it,
//! so a holder paused past its lease is refused by S3 itself, equal tokens are
//! a holder's own retry (unless rejected), and every operation costs what the
//! contract says. Concurrent writers are in `fencing_history.rs`.

use super::*;
use host_test::bindings::exports::s3_lease::lease::types::Fenced;
use host_test::bindings::{Error as E, FenceOptions, FencedObject, FencedWrite};
use host_test::hooks::{Fault, RequestRecord};
use std::time::Duration;

/// `n` leases on `key` with tokens rising by one: acquired and released in
/// turn. Fenced writes do not need a live lease, so all stay usable.
pub fn leases(i: &mut Instance, key: &str, n: usize) -> Vec<Lease> {
    (0..n)
        .map(|_| {
            let lease = try_acquire(i, key, &options(60_000)).expect("a released key is free");
            i.release(&lease).expect("no trap").expect("release");
            lease
        })
        .collect()
}

pub fn put(i: &mut Instance, lease: &Lease, object: &str, body: &[u8]) -> FencedWrite {
    i.fenced_put(lease, object, body, "text/plain")
        .expect("no trap")
        .unwrap_or_else(|e| panic!("fenced put of {object} with token {}: {e:?}", lease.token))
}

fn delete(i: &mut Instance, lease: &Lease, object: &str) {
    i.fenced_delete(lease, object)
        .expect("no trap")
        .unwrap_or_else(|e| {
            panic!(
                "fenced delete of {object} with token {}: {e:?}",
                lease.token
            )
        })
}

fn get(i: &mut Instance, object: &str) -> Option<FencedObject> {
    i.fenced_get(object)
        .expect("no trap")
        .unwrap_or_else(|e| panic!("fenced get of {object}: {e:?}"))
}

fn fenced<T: std::fmt::Debug>(r: anyhow::Result<Result<T, E>>) -> Fenced {
    match expect_err(r) {
        E::Fenced(f) => f,
        other => panic!("expected fenced, got {other:?}"),
    }
}

fn shape(requests: &[RequestRecord]) -> Vec<(&str, Option<u16>)> {
    requests
        .iter()
        .map(|r| (r.method.as_str(), r.status))
        .collect()
}

#[test]
fn a_holder_paused_past_its_lease_cannot_write_delete_or_recreate_anything() {
    let prefix = fresh_prefix("fence-paused");
    let obj = |name: &str| format!("{prefix}data/{name}");
    let (mut a, mut b) = (opened(&prefix), opened(&prefix));

    let old = try_acquire(&mut a, "k", &named(1_500, "a")).expect("free key");
    let w = put(&mut a, &old, &obj("pre"), b"pre by a");
    assert_eq!(
        (w.object_key.as_str(), w.token, w.previous_token),
        (obj("pre").as_str(), old.token, None)
    );
    put(&mut a, &old, &obj("shared"), b"shared by a");

    // A stalls (a GC pause, a frozen VM) past its ttl and B takes over: the
    // case fencing tokens exist for, since A still believes it leads.
    // (`acquire` waits as long as the server's clock says a's lease lives.)
    let new = b
        .acquire("k", &named(30_000, "b"), 10_000)
        .unwrap()
        .expect("expired lease is taken over");
    assert_eq!(new.token, old.token + 1);
    let w = put(&mut b, &new, &obj("shared"), b"shared by b");
    assert_eq!((w.token, w.previous_token), (new.token, Some(old.token)));
    let w = put(&mut b, &new, &obj("b-new"), b"b-new by b");
    assert_eq!((w.token, w.previous_token), (new.token, None));
    delete(&mut b, &new, &obj("pre"));

    // A wakes up and carries on with its old lease. Each write is refused on
    // the token B left, after one HEAD: no PUT of A's ever reaches S3.
    a.hooks.take_requests();
    for (op, name) in [
        ("put", "shared"),
        ("put", "b-new"),
        ("put", "pre"),
        ("delete", "shared"),
        ("delete", "b-new"),
    ] {
        let refused = match op {
            "put" => fenced(a.fenced_put(&old, &obj(name), b"stale by a", "text/plain")),
            _ => fenced(a.fenced_delete(&old, &obj(name))),
        };
        assert_eq!(
            refused,
            Fenced {
                object_key: obj(name),
                our_token: old.token,
                stored_token: new.token,
            },
            "{op} {name}"
        );
        let log = a.hooks.take_requests();
        assert_eq!(shape(&log), [("HEAD", Some(200))], "{op} {name}: {log:?}");
    }

    // B's state is intact; "pre" stays deleted (A could not recreate it).
    for name in ["shared", "b-new"] {
        let seen = get(&mut a, &obj(name)).expect("B's object");
        assert_eq!(seen.body, format!("{name} by b").into_bytes());
        assert_eq!(
            (seen.token, seen.content_type.as_str()),
            (new.token, "text/plain")
        );
    }
    assert_eq!(get(&mut a, &obj("pre")), None);
    // What deleted it is a tombstone, still in the bucket: it keeps B's token.
    let admin = endpoint().admin().unwrap();
    assert!(
        admin.get(&obj("pre")).unwrap().is_some(),
        "the tombstone stays"
    );
}

#[test]
fn equal_tokens_are_a_retry_unless_rejected_and_unfenced_objects_count_as_token_zero() {
    let prefix = fresh_prefix("fence-equal");
    let obj = |name: &str| format!("{prefix}data/{name}");
    let mut a = opened(&prefix);
    let [first, second]: [Lease; 2] = leases(&mut a, "k", 2).try_into().unwrap();
    assert_eq!(second.token, first.token + 1);
    let reject = FenceOptions {
        reject_equal_token: true,
    };

    // The same grant writes twice (a retry after a lost reply, say).
    let x = obj("x");
    let w1 = put(&mut a, &first, &x, b"one");
    let w2 = put(&mut a, &first, &x, b"two");
    assert_eq!(
        (w1.previous_token, w2.previous_token),
        (None, Some(first.token))
    );
    assert_ne!(w1.etag, w2.etag);
    // Unless equal tokens are rejected: then each grant writes at most once.
    let refused = fenced(a.fenced_put_with(&first, &x, b"three", "text/plain", reject));
    assert_eq!(
        refused,
        Fenced {
            object_key: x.clone(),
            our_token: first.token,
            stored_token: first.token,
        }
    );
    let seen = get(&mut a, &x).unwrap();
    assert_eq!((seen.body.as_slice(), seen.etag), (&b"two"[..], w2.etag));

    // A higher token overwrites (rejecting equal ones changes nothing there),
    // and from then on the lower one is refused.
    let w3 = a
        .fenced_put_with(&second, &x, b"four", "text/plain", reject)
        .unwrap()
        .unwrap();
    assert_eq!(
        (w3.token, w3.previous_token),
        (second.token, Some(first.token))
    );
    assert_eq!(
        fenced(a.fenced_put(&first, &x, b"five", "text/plain")).stored_token,
        second.token
    );

    // Equal tokens may delete, and the tombstone keeps the token: the same
    // grant may write again, but not when equal tokens are rejected.
    delete(&mut a, &second, &x);
    assert_eq!(get(&mut a, &x), None);
    let refused = fenced(a.fenced_put_with(&second, &x, b"six", "text/plain", reject));
    assert_eq!(refused.stored_token, second.token);
    // Deleting twice leaves tombstones of different bytes: were their etags
    // equal, a stale `If-Match` read before the first could pass the second.
    let admin = endpoint().admin().unwrap();
    let (_, first_tombstone) = admin.get(&x).unwrap().unwrap();
    delete(&mut a, &second, &x);
    let (_, second_tombstone) = admin.get(&x).unwrap().unwrap();
    assert_ne!(first_tombstone, second_tombstone);
    let w = put(&mut a, &second, &x, b"seven");
    assert_eq!(w.previous_token, Some(second.token));
    assert_eq!(get(&mut a, &x).unwrap().body, b"seven");

    // An object written by a plain PUT, with no token, reads as token 0 and
    // any grant replaces it.
    let plain = obj("plain");
    admin.put(&plain, b"no token").unwrap();
    let seen = get(&mut a, &plain).expect("a plain object is readable");
    assert_eq!((seen.token, seen.body.as_slice()), (0, &b"no token"[..]));
    let w = put(&mut a, &first, &plain, b"fenced now");
    assert_eq!((w.token, w.previous_token), (first.token, Some(0)));
    assert_eq!(get(&mut a, &plain).unwrap().token, first.token);

    // A grant of another lock key is not comparable, whatever its token.
    let other = leases(&mut a, "other", 3).pop().unwrap();
    assert!(other.token > second.token);
    match expect_err(a.fenced_put(&other, &x, b"foreign", "text/plain")) {
        E::InvalidArgument(_) => {}
        e => panic!("expected invalid-argument, got {e:?}"),
    }
    assert!(matches!(
        expect_err(a.fenced_delete(&other, &x)),
        E::InvalidArgument(_)
    ));
    assert_eq!(get(&mut a, &x).unwrap().body, b"seven", "left untouched");
}

#[test]
fn a_write_landing_between_our_read_and_our_write_sends_us_back_to_read() {
    let prefix = fresh_prefix("fence-race");
    let x = format!("{prefix}data/x");
    let (mut a, mut b) = (opened(&prefix), opened(&prefix));
    let [older, newer]: [Lease; 2] = leases(&mut a, "k", 2).try_into().unwrap();
    put(&mut a, &older, &x, b"zero");
    a.hooks.take_requests();

    // A's HEAD goes at once and its PUT waits a second; B writes meanwhile.
    a.hooks.inject(Fault::Delay(Duration::ZERO));
    a.hooks.inject(Fault::Delay(Duration::from_millis(1_000)));
    let a_hooks = a.hooks.clone();
    let slow = {
        let (older, x) = (older.clone(), x.clone());
        std::thread::spawn(move || {
            let r = a.fenced_put(&older, &x, b"stale", "text/plain");
            (a, r)
        })
    };
    while a_hooks.requests().len() < 2 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let w = put(&mut b, &newer, &x, b"newer");
    assert_eq!(w.previous_token, Some(older.token));

    // A's `If-Match` fails; it reads again and finds the newer token.
    let (a, r) = slow.join().unwrap();
    assert_eq!(
        fenced(r),
        Fenced {
            object_key: x.clone(),
            our_token: older.token,
            stored_token: newer.token,
        }
    );
    assert_eq!(
        shape(&a.hooks.take_requests()),
        [("HEAD", Some(200)), ("PUT", Some(412)), ("HEAD", Some(200))]
    );
    let seen = get(&mut b, &x).unwrap();
    assert_eq!(
        (seen.token, seen.body.as_slice()),
        (newer.token, &b"newer"[..])
    );
}

/// The requests since the last call, also kept in `sent`.
fn take(i: &Instance, sent: &mut Vec<RequestRecord>) -> Vec<RequestRecord> {
    let log = i.hooks.take_requests();
    sent.extend(log.iter().cloned());
    log
}

#[test]
fn each_fenced_operation_costs_what_the_contract_says() {
    let prefix = fresh_prefix("fence-counts");
    let x = format!("{prefix}data/x");
    let mut a = opened(&prefix);
    let [older, lease]: [Lease; 2] = leases(&mut a, "k", 2).try_into().unwrap();
    a.hooks.take_requests();
    let mut sent = Vec::new();

    let w1 = put(&mut a, &lease, &x, b"one");
    let log = take(&a, &mut sent);
    assert_eq!(
        shape(&log),
        [("HEAD", Some(404)), ("PUT", Some(200))],
        "fenced put creating the object"
    );
    assert_eq!(
        (log[1].if_none_match.as_deref(), log[1].if_match.as_deref()),
        (Some("*"), None)
    );

    let w2 = put(&mut a, &lease, &x, b"two");
    let log = take(&a, &mut sent);
    assert_eq!(
        shape(&log),
        [("HEAD", Some(200)), ("PUT", Some(200))],
        "fenced put overwriting"
    );
    assert_eq!(
        (log[1].if_none_match.as_deref(), log[1].if_match.as_deref()),
        (None, Some(w1.etag.as_str()))
    );

    assert_eq!(get(&mut a, &x).unwrap().etag, w2.etag);
    assert_eq!(
        shape(&take(&a, &mut sent)),
        [("GET", Some(200))],
        "fenced get"
    );

    fenced(a.fenced_put(&older, &x, b"stale", "text/plain"));
    assert_eq!(
        shape(&take(&a, &mut sent)),
        [("HEAD", Some(200))],
        "refused put"
    );

    delete(&mut a, &lease, &x);
    let log = take(&a, &mut sent);
    assert_eq!(
        shape(&log),
        [("HEAD", Some(200)), ("PUT", Some(200))],
        "fenced delete"
    );
    assert_eq!(log[1].if_match.as_deref(), Some(w2.etag.as_str()));

    assert_eq!(get(&mut a, &x), None);
    assert_eq!(
        shape(&take(&a, &mut sent)),
        [("GET", Some(200))],
        "fenced get of a tombstone"
    );
    assert_eq!(get(&mut a, &format!("{prefix}data/never")), None);
    assert_eq!(
        shape(&take(&a, &mut sent)),
        [("GET", Some(404))],
        "fenced get of an absent object"
    );

    assert_eq!(sent.len(), 10);
    for r in &sent {
        assert!(r.payload_hash_ok, "{r:?}");
    }
}

//! The epoch-objects strategy against the real server: contention, expiry on
//! the server's clock, release, renew, token monotonicity, cleanup, request
//! counts, fenced writes with epoch leases, and foreign objects under the
//! prefix.

use super::*;
use host_test::bindings::{Config, Error as E, Strategy};
use host_test::hooks::{Fault, RequestRecord};
use std::time::{Duration, Instant};

fn epoch_config(prefix: &str) -> Config {
    let mut config = endpoint().config(prefix);
    config.strategy = Some(Strategy::EpochObjects);
    config
}

fn epoch_instance(prefix: &str) -> Instance {
    opened_with(&epoch_config(prefix))
}

fn epoch_key(prefix: &str, key: &str, epoch: u64) -> String {
    format!("{prefix}{key}/epoch-{epoch:020}.json")
}

/// The epoch numbers stored under `<prefix><key>/`, listed by the admin.
fn stored_epochs(prefix: &str, key: &str) -> Vec<String> {
    let admin = endpoint().admin().unwrap();
    let dir = format!("{prefix}{key}/");
    let reply = admin
        .send(s3_lease::stores::s3::list_request(&dir, None))
        .expect("list");
    assert_eq!(reply.status, 200);
    s3_lease::stores::s3::parse_list(&reply.body).unwrap().keys
}

fn shape(requests: &[RequestRecord]) -> Vec<String> {
    requests
        .iter()
        .map(|r| {
            let list = r.path_and_query.contains("list-type=2");
            let what = if list { "LIST" } else { r.method.as_str() };
            format!("{what} {}", r.status.unwrap_or(0))
        })
        .collect()
}

#[test]
fn instances_race_rounds_with_one_winner_each_and_rising_epochs() {
    const INSTANCES: usize = 6;
    const ROUNDS: usize = 12;
    let prefix = fresh_prefix("epoch-race");
    let mut config = epoch_config(&prefix);
    config.request_timeout_ms = Some(60_000);
    let started = Instant::now();
    let race = super::contention::race(&config, INSTANCES, ROUNDS);
    let tokens = race.one_winner_a_round(ROUNDS);
    assert_eq!(tokens, (1..=ROUNDS as u64).collect::<Vec<_>>());
    assert!(stored_epochs(&prefix, "leader").len() <= 2);
    println!(
        "epoch-objects: {INSTANCES} instances x {ROUNDS} rounds in {:?}",
        started.elapsed()
    );
}

#[test]
fn expiry_is_judged_on_the_servers_clock_and_renew_and_release_work() {
    let prefix = fresh_prefix("epoch-life");
    let (mut a, mut b) = (epoch_instance(&prefix), epoch_instance(&prefix));
    // B's clock is 4 minutes ahead (S3 refuses signatures beyond 15): it
    // must not matter to the epoch's validity.
    b.skew_clock_ms(240_000);
    let lease = try_acquire(&mut a, "k", &named(1_000, "a")).expect("free");
    assert_eq!(lease.token, 1);
    assert_eq!(try_acquire(&mut b, "k", &named(1_000, "b")), None);

    // Renew within the ttl: still ours, same token.
    std::thread::sleep(Duration::from_millis(500));
    let renewed = a.renew(&lease).unwrap().expect("renew in time");
    assert_eq!(renewed.token, 1);

    // After validity plus 2 s of slack plus a second of truncation, B takes
    // over; A's renew is then refused without writing.
    let deadline = Instant::now() + Duration::from_secs(8);
    let taken = loop {
        if let Some(l) = try_acquire(&mut b, "k", &named(1_000, "b")) {
            break l;
        }
        assert!(Instant::now() < deadline, "never expired");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(taken.token, 2);
    a.hooks.take_requests();
    assert!(matches!(expect_err(a.renew(&renewed)), E::Lost(_)));
    assert!(
        a.hooks.take_requests().is_empty(),
        "a late renew writes nothing"
    );

    // Release frees the key at once, and the next epoch follows. The
    // released lease is spent: renewing it is lost, naming the epoch as read.
    b.release(&taken).unwrap().unwrap();
    match expect_err(b.renew(&taken)) {
        E::Lost(l) => {
            let current = l.current.expect("the holder is named");
            assert_eq!((current.token, current.live), (2, false));
        }
        other => panic!("{other:?}"),
    }
    let next = try_acquire(&mut a, "k", &named(30_000, "a")).expect("released");
    assert_eq!(next.token, 3);
    let seen = b.inspect("k").unwrap().unwrap().expect("state");
    assert_eq!(
        (seen.token, seen.holder_id.as_str(), seen.live),
        (3, "a", true)
    );
}

#[test]
fn each_operation_costs_what_the_contract_says() {
    let prefix = fresh_prefix("epoch-counts");
    let (mut a, mut b) = (epoch_instance(&prefix), epoch_instance(&prefix));
    let lease = try_acquire(&mut a, "k", &options(30_000)).unwrap();
    let log = a.hooks.take_requests();
    assert_eq!(
        shape(&log),
        ["GET 404", "PUT 200", "LIST 200", "PUT 200", "PUT 200", "LIST 200"],
        "the prefix's first client: the seal key (none, created), then the first grant \
         (the key's token floor, the first epoch)"
    );
    assert_eq!(log[1].if_none_match.as_deref(), Some("*"));
    assert_eq!(log[3].if_none_match.as_deref(), Some("*"));

    assert_eq!(try_acquire(&mut b, "k", &options(30_000)), None);
    assert_eq!(
        shape(&b.hooks.take_requests()),
        ["GET 200", "LIST 200", "GET 200"],
        "another client's first call: the seal key, then a held key"
    );

    let lease = a.renew(&lease).unwrap().unwrap();
    let log = a.hooks.take_requests();
    assert_eq!(
        shape(&log),
        ["PUT 200", "LIST 200"],
        "renew: write, then no newer epoch"
    );
    assert!(log[0].if_match.is_some());

    b.inspect("k").unwrap().unwrap();
    assert_eq!(
        shape(&b.hooks.take_requests()),
        ["LIST 200", "GET 200"],
        "inspect"
    );

    a.release(&lease).unwrap().unwrap();
    assert_eq!(
        shape(&a.hooks.take_requests()),
        ["PUT 200", "LIST 200"],
        "release"
    );

    let second = try_acquire(&mut b, "k", &options(30_000)).unwrap();
    assert_eq!(
        shape(&b.hooks.take_requests()),
        ["LIST 200", "GET 200", "PUT 200", "LIST 200"],
        "after a release: nothing old enough to clean yet"
    );
    b.release(&second).unwrap().unwrap();
    b.hooks.take_requests();
    try_acquire(&mut b, "k", &options(30_000)).unwrap();
    assert_eq!(
        shape(&b.hooks.take_requests()),
        ["LIST 200", "GET 200", "PUT 200", "LIST 200", "DELETE 204"],
        "the third grant deletes epoch 1"
    );
}

#[test]
fn cleanup_keeps_the_prefix_small_after_a_hundred_handovers() {
    let prefix = fresh_prefix("epoch-cleanup");
    let mut instances = [epoch_instance(&prefix), epoch_instance(&prefix)];
    let mut most = 0;
    for round in 0..100u64 {
        let i = &mut instances[(round % 2) as usize];
        let lease = try_acquire(i, "k", &options(30_000)).expect("released key");
        assert_eq!(lease.token, round + 1);
        i.release(&lease).unwrap().unwrap();
        if round % 10 == 9 {
            most = most.max(stored_epochs(&prefix, "k").len());
        }
    }
    let left = stored_epochs(&prefix, "k");
    assert_eq!(
        left,
        [epoch_key(&prefix, "k", 99), epoch_key(&prefix, "k", 100)]
    );
    assert!(
        most <= 2,
        "at most 2 epoch objects at any check, saw {most}"
    );
}

#[test]
fn a_paused_epoch_holder_is_fenced_by_its_successor() {
    let prefix = fresh_prefix("epoch-fence");
    let (mut a, mut b) = (epoch_instance(&prefix), epoch_instance(&prefix));
    let object = format!("{prefix}data/state");
    let old = try_acquire(&mut a, "k", &named(30_000, "a")).unwrap();
    a.fenced_put(&old, &object, b"a1", "text/plain")
        .unwrap()
        .unwrap();
    a.release(&old).unwrap().unwrap();
    let new = try_acquire(&mut b, "k", &named(30_000, "b")).unwrap();
    assert_eq!(new.token, old.token + 1);
    b.fenced_put(&new, &object, b"b1", "text/plain")
        .unwrap()
        .unwrap();
    match expect_err(a.fenced_put(&old, &object, b"a2", "text/plain")) {
        E::Fenced(f) => assert_eq!((f.our_token, f.stored_token), (old.token, new.token)),
        other => panic!("{other:?}"),
    }
    let stored = a.fenced_get(&object).unwrap().unwrap().unwrap();
    assert_eq!(
        (stored.body.as_slice(), stored.token),
        (&b"b1"[..], new.token)
    );
}

#[test]
fn foreign_and_corrupt_objects_under_the_prefix_never_trap() {
    let prefix = fresh_prefix("epoch-bad");
    let admin = endpoint().admin().unwrap();
    let mut i = epoch_instance(&prefix);
    // Foreign keys under the prefix are ignored.
    admin.put(&format!("{prefix}k/epoch-7.json"), b"x").unwrap();
    admin
        .put(&format!("{prefix}k/epoch-notanumber.json"), b"{}")
        .unwrap();
    admin
        .put(&format!("{prefix}k/readme.txt"), b"hello")
        .unwrap();
    assert_eq!(try_acquire(&mut i, "k", &options(30_000)).unwrap().token, 1);

    // A corrupt highest epoch is a typed error naming it, and stays as is.
    let corrupt = epoch_key(&prefix, "k", 5);
    admin.put(&corrupt, b"{\"expired\": \"maybe\"}").unwrap();
    match expect_err(i.try_acquire("k", &options(30_000))) {
        E::CorruptLockObject(c) => assert_eq!(c.object_key, corrupt),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        expect_err(i.inspect("k")),
        E::CorruptLockObject(_)
    ));
    assert_eq!(
        admin.get(&corrupt).unwrap().unwrap().0,
        b"{\"expired\": \"maybe\"}"
    );

    // An epoch object the design's plain clients write is understood.
    admin
        .put(
            &epoch_key(&prefix, "k", 6),
            b"{\"expired\": true, \"validity_ms\": 60000}",
        )
        .unwrap();
    assert_eq!(try_acquire(&mut i, "k", &options(30_000)).unwrap().token, 7);

    // A broken LIST page is an s3 error, then all is well.
    i.hooks.inject(Fault::Respond {
        status: 200,
        content_type: "application/xml",
        body: "<ListBucketResult><Contents><Key>".into(),
    });
    match expect_err(i.inspect("k")) {
        E::S3(e) => assert!(e.message.contains("ListObjectsV2"), "{e:?}"),
        other => panic!("{other:?}"),
    }
    // Garbage in place of one is no S3 store's: a configuration error.
    i.hooks.inject(Fault::Respond {
        status: 200,
        content_type: "application/xml",
        body: "<Nonsense><Key>".into(),
    });
    match expect_err(i.inspect("k")) {
        E::InvalidConfig(c) => assert_eq!(c.field, "endpoint", "{c:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(i.inspect("k").unwrap().unwrap().unwrap().token, 7);
}

#[test]
fn a_store_that_refuses_if_match_never_gets_a_write_without_a_condition() {
    let prefix = fresh_prefix("epoch-no-if-match");
    let mut a = epoch_instance(&prefix);
    let lease = try_acquire(&mut a, "k", &options(30_000)).unwrap();
    a.hooks.take_requests();
    // What a store without conditional overwrites answers.
    let not_implemented = || Fault::Respond {
        status: 501,
        content_type: "application/xml",
        body: "<Error><Code>NotImplemented</Code><Message>If-Match</Message></Error>".into(),
    };
    a.hooks.inject(not_implemented());
    match expect_err(a.renew(&lease)) {
        E::S3(e) => assert_eq!((e.status, e.code.as_str()), (501, "NotImplemented")),
        other => panic!("expected the store's 501, got {other:?}"),
    }
    a.hooks.inject(not_implemented());
    assert!(matches!(expect_err(a.release(&lease)), E::S3(_)));
    let log = a.hooks.take_requests();
    assert_eq!(shape(&log), ["PUT 501", "PUT 501"], "no fallback write");
    // The lease is still there, live, for its ttl; it renews once the store does.
    let seen = a.inspect("k").unwrap().unwrap().unwrap();
    assert_eq!((seen.token, seen.live), (1, true));
    a.renew(&lease).unwrap().unwrap();
}

/// On SeaweedFS, once: holder `h` took epoch 1, took the key again (epoch 2), and its saved epoch-1 lease
/// still renewed (same bytes, same MD5 etag, so `If-Match` passed). Now the
/// LIST after the write finds epoch 2.
#[test]
fn a_superseded_epoch_of_the_same_holder_never_renews() {
    let prefix = fresh_prefix("epoch-superseded");
    let mut h = epoch_instance(&prefix);
    let first = try_acquire(&mut h, "k", &named(30_000, "h")).unwrap();
    let second = try_acquire(&mut h, "k", &named(30_000, "h")).unwrap();
    assert_eq!((first.token, second.token), (1, 2));
    match expect_err(h.renew(&first)) {
        E::Lost(l) => assert_eq!(l.current.map(|c| c.token), Some(2)),
        other => panic!("expected lost, got {other:?}"),
    }
    assert!(matches!(expect_err(h.release(&first)), E::Lost(_)));
    assert_eq!(h.renew(&second).unwrap().unwrap().token, 2);
}

//! Semaphores and fair queues against the real server: what each call
//! costs in requests (counted at the host's wasi:http hook), and the host
//! crate's guard per slot.

use super::request_counts::{s, shape};
use super::{endpoint, fresh_prefix, harness, named, named_options, opened};
use host_test::bindings::{SlotAttempt, SlotOptions};
use s3_lease_host::blocking::{BlockingSlotGrant, Client};
use s3_lease_host::StoreConfig;
use std::time::Duration;

const TWO: SlotOptions = SlotOptions {
    limit: 2,
    fair: true,
};

#[test]
fn each_semaphore_call_costs_what_the_contract_says() {
    let prefix = fresh_prefix("semaphore-counts");
    let (mut a, mut b, mut w) = (opened(&prefix), opened(&prefix), opened(&prefix));
    let grant = |i: &mut host_test::instance::Instance, holder: &str| match i
        .try_acquire_slot("k", &named(30_000, holder), TWO)
        .unwrap()
        .unwrap()
    {
        SlotAttempt::Granted(lease) => lease,
        other => panic!("{holder}: {other:?}"),
    };
    // Each client's first call reads the seal key first (the prefix's
    // first client creates it: GET 404, PUT); the semaphore's first grant
    // writes the key's token floor before its object (one more PUT).
    let lease_a = grant(&mut a, "a");
    assert_eq!(
        shape(&a.hooks.take_requests()),
        [
            s("GET", 404),
            s("PUT", 200),
            s("GET", 404),
            s("PUT", 200),
            s("PUT", 200)
        ],
        "the seal key created, then a grant"
    );
    let lease_b = grant(&mut b, "b");
    assert_eq!(
        shape(&b.hooks.take_requests()),
        [s("GET", 200), s("GET", 200), s("PUT", 200)],
        "the seal key read, then a grant"
    );
    assert_eq!((lease_a.token, lease_b.token), (1, 2));

    let lease_b = b.renew(&lease_b).unwrap().unwrap();
    assert_eq!(
        shape(&b.hooks.take_requests()),
        [s("PUT", 200)],
        "renew after our own write"
    );
    let lease_a = a.renew(&lease_a).unwrap().unwrap();
    assert_eq!(
        shape(&a.hooks.take_requests()),
        [s("PUT", 412), s("GET", 200), s("PUT", 200)],
        "renew after another's write"
    );

    let joined = w
        .try_acquire_slot("k", &named(30_000, "w"), TWO)
        .unwrap()
        .unwrap();
    assert_eq!(joined, SlotAttempt::Queued(1));
    assert_eq!(
        shape(&w.hooks.take_requests()),
        [s("GET", 200), s("GET", 200), s("PUT", 200)],
        "the seal key read, then joining the queue"
    );
    // The first look reads our own write; later ones find it unchanged.
    for reply in [200, 304] {
        let looked = w
            .try_acquire_slot("k", &named(30_000, "w"), TWO)
            .unwrap()
            .unwrap();
        assert_eq!(looked, SlotAttempt::Queued(1));
        assert_eq!(
            shape(&w.hooks.take_requests()),
            [s("GET", reply)],
            "a look while in line"
        );
    }

    let sem = w.inspect_slots("k").unwrap().unwrap().unwrap();
    assert_eq!(
        shape(&w.hooks.take_requests()),
        [s("GET", 304)],
        "inspect-slots"
    );
    assert_eq!(sem.limit, 2);
    assert_eq!(
        sem.holders.iter().map(|h| h.token).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(sem.queue[0].holder_id, "w");

    a.release(&lease_a).unwrap().unwrap();
    assert_eq!(
        shape(&a.hooks.take_requests()),
        [s("PUT", 412), s("GET", 200), s("PUT", 200)],
        "release after another's write (w joined)"
    );
    let lease_w = grant(&mut w, "w");
    assert_eq!(
        shape(&w.hooks.take_requests()),
        [s("GET", 200), s("PUT", 200)]
    );
    assert_eq!(lease_w.token, 3);
    w.release(&lease_w).unwrap().unwrap();
    assert_eq!(
        shape(&w.hooks.take_requests()),
        [s("PUT", 200)],
        "release after our own write"
    );
    b.release(&lease_b).unwrap().unwrap();
    assert_eq!(
        shape(&b.hooks.take_requests()),
        [s("PUT", 412), s("GET", 200), s("PUT", 200)],
        "release after another's write"
    );
    w.leave_queue("k", "nobody").unwrap().unwrap();
    assert_eq!(
        shape(&w.hooks.take_requests()),
        [s("GET", 200)],
        "leaving without a place"
    );
}

fn client(prefix: &str) -> Client {
    let config: StoreConfig = endpoint().host_config(prefix).unwrap();
    Client::connect(harness().runtime(), &config).unwrap()
}

#[test]
fn a_guard_per_slot_renews_and_releases_on_drop() {
    let prefix = fresh_prefix("semaphore-guards");
    let c = client(&prefix);
    let three = s3_lease_host::SlotOptions::new(3);
    let guards: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|h| {
            c.acquire_slot("k", &named_options(1_500, h), three, Duration::from_secs(5))
                .unwrap()
        })
        .collect();
    let tokens: Vec<u64> = guards.iter().map(|g| g.token()).collect();
    assert_eq!(tokens, [1, 2, 3]);
    // Past twice the ttl: every slot renewed itself, none was given away.
    std::thread::sleep(Duration::from_millis(3_500));
    assert!(
        guards.iter().all(|g| g.is_held()),
        "{:?}",
        guards.iter().map(|g| g.lost()).collect::<Vec<_>>()
    );
    let full = c
        .try_acquire_slot("k", &named_options(1_500, "d"), three)
        .unwrap();
    assert!(
        matches!(full, BlockingSlotGrant::Full(Some(_))),
        "{}",
        describe(&full)
    );
    let mut guards = guards;
    drop(guards.remove(1));
    // A dropped guard releases from a thread of its own: b's entry is gone
    // well within the ttl (a lapsed entry would stay, not live).
    wait_for_entries(&c, Duration::from_millis(500), |sem| {
        !sem.holders.iter().any(|h| h.holder_id == "b")
    });
    let d = c
        .try_acquire_slot("k", &named_options(1_500, "d"), three)
        .unwrap();
    match d {
        BlockingSlotGrant::Granted(guard) => assert_eq!(guard.token(), 4),
        other => panic!("the dropped slot was released: {}", describe(&other)),
    }
    for g in guards {
        g.release().unwrap();
    }
}

/// Waits up to `limit` for the semaphore's entries to be as `ready` says.
fn wait_for_entries(
    c: &Client,
    limit: Duration,
    ready: impl Fn(&s3_lease_host::SemaphoreState) -> bool,
) {
    let started = std::time::Instant::now();
    loop {
        let sem = c.inspect_slots("k").unwrap().expect("a semaphore");
        if ready(&sem) {
            return;
        }
        assert!(started.elapsed() < limit, "{limit:?}: {sem:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What a slot attempt got, for messages (a guard has no `Debug`).
fn describe(grant: &BlockingSlotGrant) -> String {
    match grant {
        BlockingSlotGrant::Granted(guard) => format!("granted with token {}", guard.token()),
        BlockingSlotGrant::Queued { place } => format!("queued at place {place}"),
        BlockingSlotGrant::Full(seen) => format!("full: {seen:?}"),
        _ => "an answer of another kind".into(),
    }
}

/// A client of the product host crate whose requests the test counts.
fn counted_client(prefix: &str) -> (Client, host_test::hooks::Hooks) {
    let (options, hooks, _) = harness().test_client_options();
    let config: StoreConfig = endpoint().host_config(prefix).unwrap();
    let client = Client::connect_with(harness().runtime(), &config, options).unwrap();
    (client, hooks)
}

/// What a holder and a fair waiter cost the store per second, measured
/// over 6 s at a 3 s ttl: the holder renews as `s3-lease run` does (a
/// guard with a deadline of half the ttl renews every ttl/6); the waiter
/// looks every ttl/10 and renews its place every ttl/3.
#[test]
fn a_holder_and_a_waiter_cost_this_many_requests_per_second() {
    let prefix = fresh_prefix("semaphore-rates");
    let (holder, holder_hooks) = counted_client(&prefix);
    let (waiter, waiter_hooks) = counted_client(&prefix);
    let one = s3_lease_host::SlotOptions::new(1).fair(true);
    let ttl = Duration::from_secs(3);
    let as_run = |holder: &str| named_options(3_000, holder).deadline(ttl / 2);
    let guard = match holder.try_acquire_slot("k", &as_run("h"), one).unwrap() {
        BlockingSlotGrant::Granted(guard) => guard,
        other => panic!("{}", describe(&other)),
    };
    holder_hooks.take_requests();
    let window = Duration::from_secs(6);
    let waited = std::thread::scope(|s| {
        let w = s.spawn(|| {
            waiter
                .acquire_slot("k", &named_options(3_000, "w"), one, window)
                .map(|g| g.token())
                .map_err(|e| e.to_string())
        });
        std::thread::sleep(window);
        w.join().unwrap()
    });
    assert!(waited.is_err(), "the holder kept its slot: {waited:?}");
    // The waiter leaves the queue from a thread of its own once it gives
    // up: wait for that (read by a client whose requests are not counted).
    wait_for_entries(&client(&prefix), Duration::from_secs(1), |sem| {
        sem.queue.is_empty()
    });
    assert!(guard.is_held(), "{:?}", guard.lost());
    let per_s = |n: usize| n as f64 / window.as_secs_f64();
    let held = holder_hooks.take_requests();
    let looked = waiter_hooks.take_requests();
    let (gets, puts) = (
        looked.iter().filter(|r| r.method == "GET").count(),
        looked.iter().filter(|r| r.method == "PUT").count(),
    );
    println!(
        "at a 3 s ttl: a holder sends {:.2} requests/s ({} in 6 s), a fair waiter {:.2}/s ({gets} GETs, {puts} PUTs, \
         leaving included)",
        per_s(held.len()),
        held.len(),
        per_s(looked.len())
    );
    // Holder: a renew every 0.5 s, each 1 PUT (3 when the waiter wrote
    // the place since): 12 to 36 in 6 s.
    assert!((10..=40).contains(&held.len()), "holder: {held:?}");
    // Waiter: a look every 300 ms (+ up to 50 ms), a place renewal every
    // 1 s, joining and leaving: about 20 GETs and 8 PUTs in 6 s.
    assert!((14..=26).contains(&gets), "waiter GETs: {gets}");
    assert!((4..=12).contains(&puts), "waiter PUTs: {puts}");
    guard.release().unwrap();
}

/// A fair attempt at a slot without a holder id is refused before any
/// request. Its place would be queued under an id made up for that one
/// call and never returned: every retry queued one more place that nobody
/// could come back to or leave, ahead of the caller, so the slot freed for
/// it went to none of them. The waiting call still picks one id for its
/// whole wait.
#[test]
fn a_fair_attempt_without_a_holder_id_is_refused_and_queues_nothing() {
    let prefix = fresh_prefix("semaphore-fair-no-id");
    let (c, hooks) = counted_client(&prefix);
    let one = s3_lease_host::SlotOptions::new(1).fair(true);
    let holder = match c.try_acquire_slot("k", &named_options(3_000, "h"), one) {
        Ok(BlockingSlotGrant::Granted(guard)) => guard,
        Ok(other) => panic!("the slot was free: {}", describe(&other)),
        Err(e) => panic!("{e}"),
    };
    hooks.take_requests();
    let unnamed = super::acquire_options(3_000);
    for attempt in 0..3 {
        match c.try_acquire_slot("k", &unnamed, one) {
            Err(e) => {
                assert_eq!(e.kind(), s3_lease_host::ErrorKind::InvalidArgument, "{e}");
                assert!(e.to_string().contains("holder id"), "{e}");
            }
            Ok(grant) => panic!(
                "attempt {attempt}: a fair attempt without a holder id is refused, got {}",
                describe(&grant)
            ),
        }
    }
    let sent = hooks.take_requests();
    assert!(sent.is_empty(), "refused before any request: {sent:?}");
    let sem = c.inspect_slots("k").unwrap().expect("a semaphore");
    assert!(sem.queue.is_empty(), "no place queued: {sem:?}");
    holder.release().unwrap();
    let waited = c
        .acquire_slot("k", &unnamed, one, Duration::from_secs(5))
        .expect("a waiting call picks its own holder id");
    waited.release().unwrap();
}

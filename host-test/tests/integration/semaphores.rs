//! Semaphores and fair queues against the real server: what each call
//! costs in requests (counted at the host's wasi:http hook), and the host
//! crate's guard per slot.

use super::{endpoint, fresh_prefix, harness, named, opened};
use host_test::bindings::{SlotAttempt, SlotOptions};
use host_test::hooks::RequestRecord;
use s3_lease_host::{Client, S3Config};
use std::time::Duration;

fn shape(requests: &[RequestRecord]) -> Vec<(String, Option<u16>)> {
    requests
        .iter()
        .map(|r| (r.method.clone(), r.status))
        .collect()
}

fn s(method: &str, status: u16) -> (String, Option<u16>) {
    (method.to_string(), Some(status))
}

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
    let lease_a = grant(&mut a, "a");
    assert_eq!(
        shape(&a.hooks.take_requests()),
        [s("GET", 404), s("PUT", 200)],
        "a grant"
    );
    let lease_b = grant(&mut b, "b");
    assert_eq!(
        shape(&b.hooks.take_requests()),
        [s("GET", 200), s("PUT", 200)],
        "a grant"
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
        [s("GET", 200), s("PUT", 200)],
        "joining the queue"
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
    let config: S3Config = endpoint().host_config(prefix).unwrap();
    Client::connect(harness().runtime(), &config).unwrap()
}

#[test]
fn a_guard_per_slot_renews_and_releases_on_drop() {
    let prefix = fresh_prefix("semaphore-guards");
    let c = client(&prefix);
    let three = SlotOptions {
        limit: 3,
        fair: false,
    };
    let guards: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|h| {
            c.lock_slot("k", &named(1_500, h), three, Duration::from_secs(5))
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
    let full = c.try_acquire_slot("k", &named(1_500, "d"), three).unwrap();
    assert!(matches!(full, SlotAttempt::Full(Some(_))), "{full:?}");
    let mut guards = guards;
    drop(guards.remove(1));
    let d = c.try_acquire_slot("k", &named(1_500, "d"), three).unwrap();
    match d {
        SlotAttempt::Granted(lease) => assert_eq!(lease.token, 4),
        other => panic!("the dropped slot was released: {other:?}"),
    }
    for g in guards {
        g.release().unwrap();
    }
}

//! Grant, contention between two instances, renew, release, expiry, acquire.

use super::*;
use host_test::bindings::{Config, Error as E, ExpiryClock};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[test]
fn of_two_instances_racing_exactly_one_wins_and_the_loser_sees_the_holder() {
    let prefix = fresh_prefix("two");
    let barrier = Arc::new(Barrier::new(2));
    let racers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let (prefix, barrier) = (prefix.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut i = opened(&prefix);
                barrier.wait();
                let won = try_acquire(&mut i, "leader", &named(30_000, name));
                (i, won)
            })
        })
        .collect();
    let mut results: Vec<(Instance, Option<Lease>)> =
        racers.into_iter().map(|t| t.join().unwrap()).collect();
    let winners: Vec<&Lease> = results.iter().filter_map(|(_, w)| w.as_ref()).collect();
    assert_eq!(winners.len(), 1, "exactly one winner");
    let lease = winners[0].clone();
    assert_eq!(lease.token, 1);

    let loser = results
        .iter_mut()
        .find(|(_, w)| w.is_none())
        .map(|(i, _)| i)
        .unwrap();
    assert_eq!(try_acquire(loser, "leader", &named(30_000, "late")), None);
    let seen = loser
        .inspect("leader")
        .expect("no trap")
        .expect("inspect")
        .expect("state");
    assert_eq!(seen.holder_id, lease.holder_id);
    assert_eq!(seen.token, lease.token);
    assert_eq!(seen.expires_at_ms, lease.expires_at_ms);
    assert_eq!(seen.etag, lease.etag);
    assert_eq!(seen.metadata, format!("meta of {}", lease.holder_id));
    assert!(seen.live);
}

#[test]
fn renew_keeps_the_token_and_release_lets_another_in_at_once_with_the_next_token() {
    let prefix = fresh_prefix("renew-release");
    let (mut a, mut b) = (opened(&prefix), opened(&prefix));
    let lease = try_acquire(&mut a, "k", &options(30_000)).expect("free key");
    std::thread::sleep(Duration::from_millis(20));
    let renewed = a.renew(&lease).expect("no trap").expect("renew");
    assert_eq!(renewed.token, lease.token);
    assert!(renewed.expires_at_ms > lease.expires_at_ms);
    assert_ne!(renewed.etag, lease.etag);
    assert_eq!(
        b.inspect("k").unwrap().unwrap().unwrap().expires_at_ms,
        renewed.expires_at_ms
    );

    // The lease from before the renew names the same grant: renewing it
    // continues that grant (as a renew sent again after its write landed
    // unanswered must), never another's.
    let renewed = a.renew(&lease).expect("no trap").expect("the same grant");
    assert_eq!(renewed.token, lease.token);

    a.release(&renewed).expect("no trap").expect("release");
    let state = b.inspect("k").unwrap().unwrap().unwrap();
    assert!(!state.live);
    assert_eq!((state.expires_at_ms, state.token), (0, lease.token));
    let next = try_acquire(&mut b, "k", &options(30_000)).expect("released key is free at once");
    assert_eq!(next.token, lease.token + 1);
}

#[test]
fn a_holder_that_stops_renewing_loses_the_key_after_its_ttl() {
    let prefix = fresh_prefix("expiry");
    let (mut a, mut b) = (opened(&prefix), opened(&prefix));
    let ttl = 1_200;
    let old = try_acquire(&mut a, "k", &named(ttl, "a")).unwrap();
    assert_eq!(try_acquire(&mut b, "k", &named(ttl, "b")), None);
    // Waits as long as the server's clock (the default expiry clock) says
    // a's lease lives: its ttl plus 2 s, in whole seconds.
    let started = Instant::now();
    let new = b
        .acquire("k", &named(ttl, "b"), 10_000)
        .unwrap()
        .expect("expired lease is taken over");
    assert!(
        started.elapsed() >= Duration::from_millis(ttl),
        "not before the ttl"
    );
    assert_eq!(new.token, old.token + 1);

    match expect_err(a.renew(&old)) {
        E::Lost(l) => {
            assert_eq!(l.token, old.token);
            let current = l.current.expect("the new holder is named");
            assert_eq!(
                (current.holder_id.as_str(), current.token),
                ("b", new.token)
            );
        }
        other => panic!("expected lost, got {other:?}"),
    }
    assert!(matches!(expect_err(a.release(&old)), E::Lost(_)));
    assert_eq!(
        b.inspect("k").unwrap().unwrap().unwrap().holder_id,
        "b",
        "a stale release changed nothing"
    );
}

#[test]
fn acquire_waits_for_the_holder_to_expire_and_times_out_naming_it() {
    let prefix = fresh_prefix("acquire");
    let (mut a, mut b) = (opened(&prefix), opened(&prefix));
    let held = try_acquire(&mut a, "k", &named(1_000, "a")).unwrap();

    match expect_err(b.acquire("k", &named(1_000, "b"), 200)) {
        E::Timeout(t) => {
            assert!(t.waited_ms >= 200, "{t:?}");
            assert_eq!(t.holder.expect("holder named").holder_id, "a");
        }
        other => panic!("expected timeout, got {other:?}"),
    }

    let started = Instant::now();
    let lease = b
        .acquire("k", &named(1_000, "b"), 10_000)
        .expect("no trap")
        .expect("acquired after expiry");
    assert_eq!(lease.token, held.token + 1);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took over promptly: {:?}",
        started.elapsed()
    );
}

#[test]
fn a_skewed_clock_is_what_judges_expiry() {
    // Under the `holder` expiry clock (the single-object design's rule),
    // expires_at is compared with the reader's wall clock: a contender whose
    // clock runs ahead by more than the ttl takes over early. Fencing tokens
    // are what keep that safe; this pins the rule.
    let prefix = fresh_prefix("skew");
    let config = Config {
        expiry_clock: Some(ExpiryClock::Holder),
        ..endpoint().config(&prefix)
    };
    let (mut a, mut b) = (opened_with(&config), opened_with(&config));
    let old = try_acquire(&mut a, "k", &named(60_000, "a")).unwrap();
    b.skew_clock_ms(59_000);
    assert_eq!(try_acquire(&mut b, "k", &named(1_000, "b")), None);
    b.skew_clock_ms(61_000);
    let new = try_acquire(&mut b, "k", &named(1_000, "b")).expect("b's clock says a expired");
    assert_eq!(new.token, old.token + 1);
    assert!(
        matches!(expect_err(a.renew(&old)), E::Lost(_)),
        "and a finds out at its next renew"
    );
}

#[test]
fn under_the_default_server_clock_a_skewed_reader_waits() {
    let prefix = fresh_prefix("skew-server");
    let (mut a, mut b) = (opened(&prefix), opened(&prefix));
    try_acquire(&mut a, "k", &named(60_000, "a")).unwrap();
    b.skew_clock_ms(10 * 60_000);
    assert_eq!(
        try_acquire(&mut b, "k", &named(1_000, "b")),
        None,
        "ten minutes ahead changes nothing"
    );
    let seen = b.inspect("k").unwrap().unwrap().unwrap();
    assert!(seen.live && seen.expires_in_ms > 55_000, "{seen:?}");
}

/// A machine whose clock is 30 minutes off signs requests the server
/// refuses (403 `RequestTimeTooSkewed`). The client adopts the server's
/// `Date` for signing and sends again, once; lease times are untouched.
#[test]
fn a_clock_too_far_off_to_sign_is_corrected_from_the_servers_date() {
    let mut i = opened(&fresh_prefix("signing-skew"));
    i.skew_clock_ms(30 * 60 * 1000);
    let lease = try_acquire(&mut i, "k", &options(30_000)).expect("granted");
    let statuses: Vec<Option<u16>> = i.hooks.take_requests().iter().map(|r| r.status).collect();
    println!("signing-skew: statuses {statuses:?}");
    assert_eq!(
        statuses.first(),
        Some(&Some(403)),
        "the store refused the skewed signature"
    );
    assert_eq!(
        statuses.len(),
        6,
        "refused GET, then the seal key's GET and PUT, GET, the key's token floor, PUT: \
         {statuses:?}"
    );
    i.release(&lease).unwrap().unwrap();
    assert_eq!(
        i.hooks.take_requests().len(),
        1,
        "later requests are signed right"
    );
}

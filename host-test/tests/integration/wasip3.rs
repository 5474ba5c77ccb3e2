//! The WASI 0.3 build of the component (`--features wasip3`, world
//! `s3-lease:wasip3/s3-lease-async`) through the host crate, which loads
//! either build: it grants, renews, releases and inspects against the real
//! server, and calls made concurrently through one instance overlap in
//! time, because each suspends its task while its requests are in flight
//! and while `acquire` waits. (The suite's core cases run on this build
//! too: `scripts/test.sh` runs them a second time with `S3LEASE_COMPONENT`
//! naming it.)

use super::*;
use host_test::instance::component_p3_path;
use host_test::Harness;
use s3_lease_host::bindings::Config;
use s3_lease_host::Build;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The host crate's runtime, on the WASI 0.3 build.
fn harness_p3() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| Harness::load(&component_p3_path()).unwrap_or_else(|e| panic!("{e:#}")))
}

fn opened_p3(config: &Config) -> Instance {
    let mut instance = harness_p3().instance().expect("instantiate");
    instance
        .open(config)
        .expect("no trap")
        .expect("valid config");
    instance
}

#[test]
fn the_host_loads_either_build_and_says_which() {
    assert_eq!(harness().runtime().build(), Build::Wasip2);
    assert_eq!(harness_p3().runtime().build(), Build::Wasip3);
}

#[test]
fn the_wasip3_build_grants_renews_releases_and_inspects() {
    let mut i = opened_p3(&endpoint().config(&fresh_prefix("p3-basic")));
    assert_eq!(i.build(), Build::Wasip3);
    let first = i
        .try_acquire("k", &named(10_000, "a"))
        .expect("no trap")
        .expect("no error")
        .expect("granted");
    let held = i.try_acquire("k", &named(10_000, "b")).unwrap().unwrap();
    assert!(held.is_none(), "a live lease is held");
    let renewed = i.renew(&first).unwrap().expect("renewed");
    assert_eq!(renewed.token, first.token);
    let seen = i.inspect("k").unwrap().unwrap().expect("a lock");
    assert_eq!(seen.holder_id, "a");
    i.release(&renewed).unwrap().expect("released");
    let second = i
        .try_acquire("k", &named(10_000, "b"))
        .unwrap()
        .unwrap()
        .expect("granted after the release");
    assert!(second.token > first.token, "tokens rise");
}

#[test]
fn calls_through_one_wasip3_instance_run_at_the_same_time() {
    const CALLS: usize = 4;
    const HOLD_MS: u64 = 2_000;
    let config = endpoint().config(&fresh_prefix("p3-overlap"));
    let mut i = opened_p3(&config);
    // A holder of each key, then one waiter per key on a client of its
    // own, all in the one instance: each waiter's acquire waits out its
    // holder's ttl.
    for k in 0..CALLS {
        i.try_acquire(&format!("k{k}"), &named(HOLD_MS, "holder"))
            .unwrap()
            .unwrap()
            .expect("granted");
    }
    let waiters: Vec<_> = (0..CALLS)
        .map(|_| i.new_client(&config).unwrap().expect("valid config"))
        .collect();
    let options = named(HOLD_MS, "waiter");
    let started = Instant::now();
    let result = i
        .run_concurrent(async |accessor, api| {
            let c = api.client();
            let waits = waiters.iter().enumerate().map(|(k, &client)| {
                let (c, options) = (&c, options.clone());
                async move {
                    let begun = started.elapsed();
                    let lease = c
                        .call_acquire(accessor, client, format!("k{k}"), options, 30_000)
                        .await?
                        .expect("acquired after the holder's ttl");
                    wasmtime::Result::<_>::Ok((begun, started.elapsed(), lease.token))
                }
            });
            futures::future::try_join_all(waits).await
        })
        .expect("a WASI 0.3 instance")
        .expect("run")
        .expect("calls");
    let total = started.elapsed();
    let mut waited = Duration::ZERO;
    for (begun, ended, token) in &result {
        assert_eq!(*token, 2, "the waiter's grant follows the holder's");
        assert!(
            *ended - *begun >= Duration::from_millis(HOLD_MS),
            "each waited out its holder's ttl: {result:?}"
        );
        waited += *ended - *begun;
    }
    // Overlap: every call was still waiting when the last one began.
    let last_begun = result.iter().map(|r| r.0).max().expect("calls");
    let first_ended = result.iter().map(|r| r.1).min().expect("calls");
    println!("wasip3: {CALLS} acquires through one instance: {waited:?} of waiting in {total:?}");
    assert!(
        last_begun < first_ended,
        "the calls ran at the same time: {result:?}"
    );
    assert!(total < waited / 2, "{total:?} for {waited:?} of waits");
}

/// Calls on one client take turns (the WIT's `async-lease`): the second
/// waits for the first to return, and neither traps. The first wakes the
/// second, another task: a build without wit-bindgen's inter-task wakeup
/// trapped here.
#[test]
fn calls_on_one_wasip3_client_take_turns() {
    let mut i = opened_p3(&endpoint().config(&fresh_prefix("p3-turns")));
    let client = i.client_handle().expect("opened");
    let options = named(10_000, "a");
    let started = Instant::now();
    let spans = i
        .run_concurrent(async |accessor, api| {
            let c = api.client();
            let calls = (0..3).map(|k| {
                let (c, options) = (&c, options.clone());
                async move {
                    let granted = c
                        .call_try_acquire(accessor, client, format!("k{k}"), options)
                        .await?
                        .expect("no error");
                    assert!(granted.is_some(), "a free key is granted");
                    // A call that suspends for a while, holding the turn.
                    let seen = c
                        .call_acquire(accessor, client, format!("k{k}"), named(10_000, "b"), 300)
                        .await?;
                    assert!(matches!(seen, Err(LeaseError::Timeout(_))), "{seen:?}");
                    wasmtime::Result::<_>::Ok(started.elapsed())
                }
            });
            futures::future::try_join_all(calls).await
        })
        .expect("a WASI 0.3 instance")
        .expect("no trap")
        .expect("calls");
    // Three acquires of ~300 ms each, one after the other.
    let total = started.elapsed();
    assert!(total >= Duration::from_millis(900), "{total:?} {spans:?}");
}

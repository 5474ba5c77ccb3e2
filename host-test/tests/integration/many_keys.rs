//! Many keys, many instances: 8 instances take 100 keys in random orders,
//! each grant writing the key's fenced object and releasing. Every key must
//! behave on its own like the single-key contention test: tokens 1..=n in
//! grant order, holds that never overlap, and the fenced object left by the
//! last grant.

use super::rng::{seeded, Rng};
use super::*;
use host_test::bindings::FencedWrite;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

const KEYS: usize = 100;
const INSTANCES: usize = 8;
const TTL_MS: u64 = 10_000;
/// Rounds (each instance visiting every key once) stop once every key has
/// been granted this often, or at the deadline.
const MIN_GRANTS: usize = 3;
const DEADLINE: Duration = Duration::from_secs(40);

struct Grant {
    token: u64,
    holder: String,
    body: Vec<u8>,
    write: FencedWrite,
    /// try-acquire had returned: the key was ours from here...
    granted: Instant,
    /// ...until release was called.
    releasing: Instant,
}

fn key(k: usize) -> String {
    format!("key-{k:03}")
}

#[test]
fn eight_instances_on_a_hundred_keys_keep_each_keys_tokens_and_holds_in_order() {
    let mut rng = seeded("many_keys");
    let prefix = fresh_prefix("many-keys");
    let object = |k: usize| format!("{prefix}objects/{}", key(k));
    let grants: Mutex<Vec<Vec<Grant>>> = Mutex::new((0..KEYS).map(|_| Vec::new()).collect());
    // Collected, not panicked on, so one failure cannot hang the barrier.
    let errors = Mutex::new(Vec::<String>::new());
    let (busy, rounds) = (Mutex::new(0usize), Mutex::new(0usize));
    let (requests, lost_races) = (Mutex::new(0usize), Mutex::new(0usize));
    let barrier = Barrier::new(INSTANCES);
    let seeds: Vec<u64> = (0..INSTANCES).map(|_| rng.next_u64()).collect();
    let started = Instant::now();
    std::thread::scope(|s| {
        for (id, seed) in seeds.into_iter().enumerate() {
            let (grants, errors, busy, rounds, barrier) =
                (&grants, &errors, &busy, &rounds, &barrier);
            let (requests, lost_races) = (&requests, &lost_races);
            let object = &object;
            let mut config = endpoint().config(&prefix);
            // Two instances may race for one free key; SeaweedFS answers the
            // loser of such a race slowly.
            config.request_timeout_ms = Some(60_000);
            s.spawn(move || {
                let mut rng = Rng::new(seed);
                let mut i = opened_with(&config);
                let holder = format!("instance-{id}");
                let fail = |e: String| errors.lock().unwrap().push(format!("{holder}: {e}"));
                barrier.wait();
                loop {
                    let mut order: Vec<usize> = (0..KEYS).collect();
                    rng.shuffle(&mut order);
                    for k in order {
                        let asked = Instant::now();
                        let lease = match i.try_acquire(&key(k), &named(TTL_MS, &holder)) {
                            Ok(Ok(Some(lease))) => lease,
                            Ok(Ok(None)) => {
                                *busy.lock().unwrap() += 1;
                                continue;
                            }
                            other => {
                                fail(format!("try-acquire {}: {other:?}", key(k)));
                                continue;
                            }
                        };
                        let granted = Instant::now();
                        let body = format!("{} token {} by {holder}", key(k), lease.token);
                        let write =
                            match i.fenced_put(&lease, &object(k), body.as_bytes(), "text/plain") {
                                Ok(Ok(w)) => w,
                                other => {
                                    fail(format!("fenced put {}: {other:?}", object(k)));
                                    continue;
                                }
                            };
                        let releasing = Instant::now();
                        if let Err(e) = i
                            .release(&lease)
                            .map_err(|e| e.to_string())
                            .and_then(|r| r.map_err(|e| format!("{e:?}")))
                        {
                            fail(format!("release {} token {}: {e}", key(k), lease.token));
                        }
                        // Past the ttl, a successor may legitimately overlap.
                        if asked.elapsed() >= Duration::from_millis(TTL_MS) {
                            fail(format!("{} held for {:?}", key(k), asked.elapsed()));
                        }
                        if lease.holder_id != holder || lease.key != key(k) {
                            fail(format!("granted {lease:?}"));
                        }
                        grants.lock().unwrap()[k].push(Grant {
                            token: lease.token,
                            holder: holder.clone(),
                            body: body.into_bytes(),
                            write,
                            granted,
                            releasing,
                        });
                    }
                    *rounds.lock().unwrap() += 1;
                    let fewest = grants.lock().unwrap().iter().map(Vec::len).min();
                    if fewest >= Some(MIN_GRANTS) || started.elapsed() > DEADLINE {
                        break;
                    }
                }
                let sent = i.hooks.requests();
                if let Some(r) = sent.iter().find(|r| !r.payload_hash_ok) {
                    fail(format!("payload hash mismatch on {r:?}"));
                }
                *requests.lock().unwrap() += sent.len();
                *lost_races.lock().unwrap() += sent
                    .iter()
                    .filter(|r| r.method == "PUT" && matches!(r.status, Some(409 | 412)))
                    .count();
            });
        }
    });
    let elapsed = started.elapsed();

    let errors = errors.into_inner().unwrap();
    assert!(
        errors.is_empty(),
        "{} errors, first: {:?}",
        errors.len(),
        errors.first()
    );
    let mut grants = grants.into_inner().unwrap();
    let mut reader = opened(&prefix);
    for (k, grants) in grants.iter_mut().enumerate() {
        let name = key(k);
        assert!(!grants.is_empty(), "{name} was never granted");
        grants.sort_by_key(|g| g.granted);
        let tokens: Vec<u64> = grants.iter().map(|g| g.token).collect();
        let expected: Vec<u64> = (1..=grants.len() as u64).collect();
        assert_eq!(tokens, expected, "{name}: tokens in grant order");
        for pair in grants.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert!(
                a.releasing < b.granted,
                "{name}: token {} ({}) was granted while token {} ({}) was held",
                b.token,
                b.holder,
                a.token,
                a.holder
            );
        }
        // Every grant wrote over the one before it.
        for g in grants.iter() {
            let before = (g.token > 1).then(|| g.token - 1);
            assert_eq!(
                (g.write.token, g.write.previous_token),
                (g.token, before),
                "{name}: fenced write of token {}",
                g.token
            );
        }
        let last = grants.last().unwrap();
        let seen = reader
            .fenced_get(&object(k))
            .expect("no trap")
            .expect("fenced get")
            .unwrap_or_else(|| panic!("{name}: no fenced object"));
        assert_eq!(
            (seen.token, &seen.body, &seen.etag),
            (last.token, &last.body, &last.write.etag),
            "{name}: the object is the last grant's"
        );
    }
    let counts: Vec<usize> = grants.iter().map(Vec::len).collect();
    println!(
        "many_keys: {INSTANCES} instances, {KEYS} keys, {} rounds in all in {elapsed:.1?}: \
         {} grants (per key {}..={}), {} tries found the key held, \
         {} requests, {} conditional PUTs lost a race",
        rounds.into_inner().unwrap(),
        counts.iter().sum::<usize>(),
        counts.iter().min().unwrap(),
        counts.iter().max().unwrap(),
        busy.into_inner().unwrap(),
        requests.into_inner().unwrap(),
        lost_races.into_inner().unwrap(),
    );
}

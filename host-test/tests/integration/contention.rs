//! Many instances, one key, many rounds: exactly one winner a round, and
//! fencing tokens that strictly rise and never repeat across the whole run.

use super::*;
use std::sync::{Arc, Barrier, Mutex};

const INSTANCES: usize = 16;
const ROUNDS: usize = 50;

#[test]
fn sixteen_instances_race_fifty_rounds_with_one_winner_each_and_rising_tokens() {
    let prefix = fresh_prefix("race");
    let barrier = Arc::new(Barrier::new(INSTANCES));
    // (round, instance, token) of every grant.
    let grants = Arc::new(Mutex::new(Vec::<(usize, usize, u64)>::new()));
    // Errors are collected, not panicked on: a panicking racer would leave
    // the others waiting at the barrier forever.
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let started = std::time::Instant::now();
    let threads: Vec<_> = (0..INSTANCES)
        .map(|id| {
            let (prefix, barrier, grants, errors) = (
                prefix.clone(),
                barrier.clone(),
                grants.clone(),
                errors.clone(),
            );
            std::thread::spawn(move || {
                // SeaweedFS answers the losers of a 16-way race one by one,
                // about a second apart: allow for the last in line.
                let mut config = endpoint().config(&prefix);
                config.request_timeout_ms = Some(60_000);
                let mut i = opened_with(&config);
                let mut requests = 0;
                for round in 0..ROUNDS {
                    barrier.wait();
                    let won = match i.try_acquire("leader", &named(60_000, &format!("racer-{id}")))
                    {
                        Ok(Ok(won)) => won,
                        other => {
                            errors
                                .lock()
                                .unwrap()
                                .push(format!("round {round}, racer {id}: {other:?}"));
                            None
                        }
                    };
                    if let Some(lease) = &won {
                        grants.lock().unwrap().push((round, id, lease.token));
                    }
                    // Everyone has tried before the winner lets go.
                    barrier.wait();
                    if let Some(lease) = won {
                        if let Err(e) = i
                            .release(&lease)
                            .map_err(|e| e.to_string())
                            .and_then(|r| r.map_err(|e| format!("{e:?}")))
                        {
                            errors
                                .lock()
                                .unwrap()
                                .push(format!("round {round}, release by {id}: {e}"));
                        }
                    }
                    if id == 0 && round % 10 == 9 {
                        println!("round {} at {:?}", round + 1, started.elapsed());
                    }
                    barrier.wait();
                }
                for r in i.hooks.requests() {
                    if !r.payload_hash_ok {
                        errors
                            .lock()
                            .unwrap()
                            .push(format!("payload hash mismatch on {r:?}"));
                    }
                    requests += 1;
                }
                requests
            })
        })
        .collect();
    let requests: usize = threads
        .into_iter()
        .map(|t| t.join().expect("racer thread"))
        .sum();

    let errors = errors.lock().unwrap().clone();
    assert!(
        errors.is_empty(),
        "{} errors, first: {:?}",
        errors.len(),
        errors.first()
    );
    let grants = grants.lock().unwrap().clone();
    for round in 0..ROUNDS {
        let winners = grants.iter().filter(|g| g.0 == round).count();
        assert_eq!(winners, 1, "round {round} had {winners} winners");
    }
    let mut by_round = grants.clone();
    by_round.sort();
    let tokens: Vec<u64> = by_round.iter().map(|g| g.2).collect();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens rise strictly: {tokens:?}"
    );
    assert_eq!(tokens.first(), Some(&1));
    assert_eq!(
        tokens.last(),
        Some(&(ROUNDS as u64)),
        "no grant was lost or repeated"
    );
    println!(
        "{INSTANCES} instances x {ROUNDS} rounds: {requests} requests, {:.1} per instance-round",
        requests as f64 / (INSTANCES * ROUNDS) as f64
    );
}

//! Many instances, one key, many rounds: exactly one winner a round, and
//! fencing tokens that strictly rise and never repeat across the whole run.

use super::*;
use host_test::bindings::Config;
use std::sync::{Arc, Barrier, Mutex};

const INSTANCES: usize = 16;
const ROUNDS: usize = 50;

/// What a race recorded.
pub struct Race {
    /// (round, instance, token) of every grant.
    pub grants: Vec<(usize, usize, u64)>,
    /// Requests sent by all instances.
    pub requests: usize,
    /// Failed calls and payload-hash mismatches: none expected.
    pub errors: Vec<String>,
}

impl Race {
    /// Every round had exactly one winner, and the tokens, in round order,
    /// rise strictly; returns them.
    pub fn one_winner_a_round(&self, rounds: usize) -> Vec<u64> {
        assert!(
            self.errors.is_empty(),
            "{} errors, first: {:?}",
            self.errors.len(),
            self.errors.first()
        );
        for round in 0..rounds {
            let winners = self.grants.iter().filter(|g| g.0 == round).count();
            assert_eq!(winners, 1, "round {round} had {winners} winners");
        }
        let mut by_round = self.grants.clone();
        by_round.sort();
        let tokens: Vec<u64> = by_round.iter().map(|g| g.2).collect();
        assert!(
            tokens.windows(2).all(|w| w[0] < w[1]),
            "tokens rise strictly: {tokens:?}"
        );
        tokens
    }
}

/// `instances` instances opened on `config` race for one key, `rounds`
/// times: all try at once, then the winner releases. Errors are collected,
/// not panicked on: a panicking racer would leave the others waiting at the
/// barrier forever.
pub fn race(config: &Config, instances: usize, rounds: usize) -> Race {
    let barrier = Arc::new(Barrier::new(instances));
    let grants = Arc::new(Mutex::new(Vec::new()));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let started = std::time::Instant::now();
    let threads: Vec<_> = (0..instances)
        .map(|id| {
            let (config, barrier, grants, errors) = (
                config.clone(),
                barrier.clone(),
                grants.clone(),
                errors.clone(),
            );
            std::thread::spawn(move || {
                let mut i = opened_with(&config);
                for round in 0..rounds {
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
                let sent = i.hooks.requests();
                for r in sent.iter().filter(|r| !r.payload_hash_ok) {
                    errors
                        .lock()
                        .unwrap()
                        .push(format!("payload hash mismatch on {r:?}"));
                }
                sent.len()
            })
        })
        .collect();
    let requests = threads
        .into_iter()
        .map(|t| t.join().expect("racer thread"))
        .sum();
    let grants = grants.lock().unwrap().clone();
    let errors = errors.lock().unwrap().clone();
    Race {
        grants,
        requests,
        errors,
    }
}

#[test]
fn sixteen_instances_race_fifty_rounds_with_one_winner_each_and_rising_tokens() {
    // SeaweedFS answers the losers of a 16-way race one by one, about a
    // second apart: allow for the last in line.
    let mut config = endpoint().config(&fresh_prefix("race"));
    config.request_timeout_ms = Some(60_000);
    let race = race(&config, INSTANCES, ROUNDS);
    let tokens = race.one_winner_a_round(ROUNDS);
    let requests = race.requests;
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

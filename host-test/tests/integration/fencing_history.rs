//! Concurrent fenced writers with different tokens on one object, in hundreds
//! of random interleavings. Each run records a history (who, which token,
//! what, when, with what result) and the object's final state, and checks
//! them for linearizability against the fenced register's specification
//! (`s3_lease::testing::linearizability`): some order of the calls, each
//! taking effect at one instant between its call and its reply, gives every
//! call the result it got (a write applied only over an equal or lower
//! token, replacing the token it reports; a refusal naming the token then
//! stored) and leaves the object as it was found.

use super::fencing::leases;
use super::rng::{seeded, Rng};
use super::*;
use host_test::bindings::exports::s3_lease::lease::types::Fenced;
use host_test::bindings::{Error as E, FencedObject, FencedWrite};
use s3_lease::testing::linearizability::{
    check, FencedCall, FencedResult, FinalState, Operation, State,
};
use std::sync::atomic::AtomicUsize;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

const INTERLEAVINGS: usize = 240;
/// Interleavings in flight at once, each on its own object.
const IN_FLIGHT: usize = 12;
/// With at most 3 other writers of at most 3 steps, no more than 9 writes can
/// land between one writer's read and its write: fewer than the component's
/// 10 attempts, so `conflict` is never a legitimate outcome here.
const MAX_WRITERS: usize = 4;
/// Leases with distinct tokens that the writers pick from.
const POOL: usize = 6;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Put,
    Delete,
}

struct Step {
    delay_ms: u64,
    kind: Kind,
    body: Vec<u8>,
}

struct Plan {
    object: String,
    /// One writer each: its lease and its steps, in order.
    writers: Vec<(Lease, Vec<Step>)>,
}

#[derive(Debug)]
enum Outcome {
    Put(FencedWrite),
    Deleted,
    Fenced(Fenced),
    /// Anything else: a failure of the test run.
    Failed(String),
}

#[derive(Debug)]
struct Op {
    writer: usize,
    token: u64,
    kind: Kind,
    body: Vec<u8>,
    start: Instant,
    end: Instant,
    outcome: Outcome,
}

impl Op {
    fn accepted(&self) -> bool {
        matches!(self.outcome, Outcome::Put(_) | Outcome::Deleted)
    }
}

fn plan(rng: &mut Rng, index: usize, prefix: &str, pool: &[Lease]) -> Plan {
    let mut tokens: Vec<usize> = (0..pool.len()).collect();
    rng.shuffle(&mut tokens);
    let writers = rng.range(2, MAX_WRITERS as u64) as usize;
    let writers = tokens[..writers]
        .iter()
        .enumerate()
        .map(|(w, &p)| {
            let steps = (0..rng.range(1, 3))
                .map(|s| Step {
                    delay_ms: rng.range(0, 15),
                    kind: if rng.chance(0.2) {
                        Kind::Delete
                    } else {
                        Kind::Put
                    },
                    body: format!(
                        "interleaving {index} writer {w} step {s} token {}",
                        pool[p].token
                    )
                    .into_bytes(),
                })
                .collect();
            (pool[p].clone(), steps)
        })
        .collect();
    Plan {
        object: format!("{prefix}objects/{index}"),
        writers,
    }
}

/// Runs the writers of `plan` at once, one thread and instance each.
fn run(plan: &Plan, instances: &mut [Instance]) -> Vec<Op> {
    let barrier = Barrier::new(plan.writers.len());
    std::thread::scope(|s| {
        let threads: Vec<_> = plan
            .writers
            .iter()
            .zip(instances.iter_mut())
            .enumerate()
            .map(|(writer, ((lease, steps), i))| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let mut ops = Vec::new();
                    for step in steps {
                        std::thread::sleep(Duration::from_millis(step.delay_ms));
                        let start = Instant::now();
                        let outcome = match step.kind {
                            Kind::Put => {
                                match i.fenced_put(lease, &plan.object, &step.body, "text/plain") {
                                    Ok(Ok(w)) => Outcome::Put(w),
                                    Ok(Err(E::Fenced(f))) => Outcome::Fenced(f),
                                    other => Outcome::Failed(format!("{other:?}")),
                                }
                            }
                            Kind::Delete => match i.fenced_delete(lease, &plan.object) {
                                Ok(Ok(())) => Outcome::Deleted,
                                Ok(Err(E::Fenced(f))) => Outcome::Fenced(f),
                                other => Outcome::Failed(format!("{other:?}")),
                            },
                        };
                        ops.push(Op {
                            writer,
                            token: lease.token,
                            kind: step.kind,
                            body: step.body.clone(),
                            start,
                            end: Instant::now(),
                            outcome,
                        });
                    }
                    ops
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("writer thread"))
            .collect()
    })
}

/// What is wrong with one interleaving's history and final state: each
/// reply's own fields, then the whole, by the linearizability checker.
fn violations(
    object: &str,
    ops: &[Op],
    last: &Result<Option<FencedObject>, String>,
) -> Vec<String> {
    let mut bad = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match &op.outcome {
            Outcome::Failed(e) => bad.push(format!("#{i}: writer {} failed: {e}", op.writer)),
            Outcome::Put(w) => {
                if (w.object_key.as_str(), w.token) != (object, op.token) {
                    bad.push(format!("#{i}: writer {} got {w:?}", op.writer));
                }
            }
            Outcome::Deleted => {}
            Outcome::Fenced(f) => {
                if f.object_key != object || f.our_token != op.token {
                    bad.push(format!(
                        "#{i}: writer {} with token {} refused: {f:?}",
                        op.writer, op.token
                    ))
                }
            }
        }
    }
    // Each put's body is its own, so its index in `ops` names it.
    let final_state = match last {
        Err(e) => {
            bad.push(format!("final fenced get failed: {e}"));
            None
        }
        Ok(None) => Some(FinalState {
            token: None,
            value: None,
        }),
        Ok(Some(seen)) => {
            let writer = ops
                .iter()
                .position(|o| o.kind == Kind::Put && o.body == seen.body);
            match writer {
                None => {
                    bad.push(format!(
                        "ended with a body nobody wrote: {:?}",
                        String::from_utf8_lossy(&seen.body)
                    ));
                    None
                }
                Some(i) => {
                    // The object is what that write stored.
                    if let Outcome::Put(w) = &ops[i].outcome {
                        if w.etag != seen.etag {
                            bad.push(format!(
                                "ended with #{i}'s body but etag {}, not the {} it wrote",
                                seen.etag, w.etag
                            ));
                        }
                    }
                    Some(FinalState {
                        token: Some(seen.token),
                        value: Some(i as u64),
                    })
                }
            }
        }
    };
    let Some(t0) = ops.iter().map(|o| o.start).min() else {
        return bad;
    };
    let nanos = |t: Instant| (t - t0).as_nanos() as u64;
    let history: Vec<Operation> = ops
        .iter()
        .enumerate()
        .map(|(i, o)| Operation {
            client: o.writer,
            call: match o.kind {
                Kind::Put => FencedCall::Put {
                    token: o.token,
                    value: i as u64,
                },
                Kind::Delete => FencedCall::Delete { token: o.token },
            },
            result: match &o.outcome {
                Outcome::Put(w) => FencedResult::Written {
                    previous_token: w.previous_token,
                },
                // `fenced-delete` does not say what it replaced.
                Outcome::Deleted => FencedResult::Accepted,
                Outcome::Fenced(f) => FencedResult::Fenced {
                    stored_token: f.stored_token,
                },
                // Already a failure above; for the checker, a write that
                // may or may not have landed.
                Outcome::Failed(_) => FencedResult::Unknown,
            },
            start: nanos(o.start),
            end: nanos(o.end),
        })
        .collect();
    // Fresh objects; `fenced-put` and `fenced-delete` accept equal tokens.
    if let Err(v) = check(&history, false, State::Absent, final_state) {
        bad.push(format!("{v}(times in ns; values are indices of puts)"));
    }
    bad
}

#[test]
fn random_interleavings_of_fenced_writers_keep_the_highest_tokens_writes() {
    let mut rng = seeded("fencing_history");
    let prefix = fresh_prefix("fence-history");
    let pool = leases(&mut opened(&prefix), "k", POOL);
    let plans: Vec<Plan> = (0..INTERLEAVINGS)
        .map(|n| plan(&mut rng, n, &prefix, &pool))
        .collect();

    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let conflicts = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..IN_FLIGHT {
            s.spawn(|| {
                // SeaweedFS answers the losers of a conditional-write race on
                // one key about a second apart: allow for the last in line.
                let mut config = endpoint().config(&prefix);
                config.request_timeout_ms = Some(60_000);
                let mut instances: Vec<Instance> =
                    (0..MAX_WRITERS).map(|_| opened_with(&config)).collect();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    let Some(plan) = plans.get(n) else { break };
                    let ops = run(plan, &mut instances);
                    let last = match instances[0].fenced_get(&plan.object) {
                        Ok(Ok(seen)) => Ok(seen),
                        other => Err(format!("{other:?}")),
                    };
                    results.lock().unwrap().push((n, ops, last));
                }
                let lost_races = instances
                    .iter()
                    .flat_map(|i| i.hooks.requests())
                    .filter(|r| r.method == "PUT" && r.status == Some(412))
                    .count();
                conflicts.fetch_add(lost_races, Ordering::Relaxed);
            });
        }
    });
    let elapsed = started.elapsed();

    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|r| r.0);
    let (mut accepted, mut refused, mut with_refusal) = (0, 0, 0);
    let checking = Instant::now();
    for (n, ops, last) in &results {
        let bad = violations(&plans[*n].object, ops, last);
        if !bad.is_empty() {
            let t0 = ops.iter().map(|o| o.start).min().unwrap();
            let history: Vec<String> = ops
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    format!(
                        "  #{i}: writer {} token {} {:?} {:?}..{:?}: {:?}",
                        o.writer,
                        o.token,
                        o.kind,
                        o.start - t0,
                        o.end - t0,
                        o.outcome
                    )
                })
                .collect();
            panic!(
                "interleaving {n} ({}): {bad:#?}\nhistory:\n{}\nfinal: {last:?}",
                plans[*n].object,
                history.join("\n")
            );
        }
        accepted += ops.iter().filter(|o| o.accepted()).count();
        let r = ops
            .iter()
            .filter(|o| matches!(o.outcome, Outcome::Fenced(_)))
            .count();
        refused += r;
        with_refusal += usize::from(r > 0);
    }
    let checking = checking.elapsed();
    println!(
        "fencing_history: {} interleavings ({with_refusal} with a refusal) in {elapsed:.1?}, \
         checked in {checking:.1?}: \
         {accepted} writes accepted, {refused} fenced, {} conditional PUTs lost a race (412)",
        results.len(),
        conflicts.load(Ordering::Relaxed)
    );
    assert!(results.len() >= 200 && results.len() == INTERLEAVINGS);
    assert!(accepted > 0 && refused > 0, "both outcomes occurred");
}

/// The history check on made-up histories: it passes a sound one, and
/// catches what the checker is given (its own self-tests are in
/// `s3_lease::testing::linearizability`) and what it checks itself.
#[test]
fn the_history_check_catches_what_it_is_for() {
    let object = "objects/x";
    let t0 = Instant::now();
    let body = |token: u64, n: u64| format!("by {token}, write {n}").into_bytes();
    let put = |writer, token, n, (from, to): (u64, u64), outcome| Op {
        writer,
        token,
        kind: Kind::Put,
        body: body(token, n),
        start: t0 + Duration::from_millis(from),
        end: t0 + Duration::from_millis(to),
        outcome,
    };
    let delete = |writer, token, (from, to): (u64, u64), outcome| Op {
        kind: Kind::Delete,
        body: Vec::new(),
        ..put(writer, token, 0, (from, to), outcome)
    };
    let wrote = |token, n, previous_token| {
        Outcome::Put(FencedWrite {
            object_key: object.into(),
            etag: format!("etag-{token}-{n}"),
            token,
            previous_token,
        })
    };
    let refused = |our_token, stored_token| {
        Outcome::Fenced(Fenced {
            object_key: object.into(),
            our_token,
            stored_token,
        })
    };
    let left_by = |token: u64, n: u64| {
        Ok(Some(FencedObject {
            object_key: object.into(),
            body: body(token, n),
            content_type: "text/plain".into(),
            etag: format!("etag-{token}-{n}"),
            token,
        }))
    };
    let ok = |ops: &[Op], last| {
        let bad = violations(object, ops, &last);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    };
    let fails = |ops: &[Op], last, why: &str| {
        let bad = violations(object, ops, &last);
        assert!(bad.iter().any(|b| b.contains(why)), "{bad:#?}");
    };

    let sound = [
        put(0, 1, 0, (0, 10), wrote(1, 0, None)),
        put(1, 2, 0, (5, 20), wrote(2, 0, Some(1))),
        put(0, 1, 1, (21, 30), refused(1, 2)),
        delete(1, 2, (31, 40), Outcome::Deleted),
        put(0, 1, 2, (41, 50), refused(1, 2)),
    ];
    ok(&sound[..3], left_by(2, 0));
    ok(&sound, Ok(None));

    // Two creates that both found nothing, token 1 accepted after token 2:
    // each reply alone looked plausible to the checks this file had.
    let both_created = [
        put(0, 1, 0, (0, 7), wrote(1, 0, None)),
        put(1, 2, 0, (1, 5), wrote(2, 0, None)),
        put(1, 2, 1, (10, 15), wrote(2, 1, Some(1))),
    ];
    fails(&both_created, left_by(2, 1), "not linearizable");

    let stale = [
        put(1, 2, 0, (0, 10), wrote(2, 0, None)),
        put(0, 1, 0, (20, 30), wrote(1, 0, Some(2))),
    ];
    fails(&stale, left_by(1, 0), "not linearizable");

    let phantom = [
        put(0, 1, 0, (0, 10), wrote(1, 0, None)),
        put(0, 1, 1, (20, 30), refused(1, 3)),
    ];
    fails(&phantom, left_by(1, 0), "refused by token 3");

    let lost = [
        put(0, 1, 0, (0, 10), wrote(1, 0, None)),
        put(1, 2, 0, (20, 30), wrote(2, 0, Some(1))),
    ];
    fails(&lost, left_by(1, 0), "not linearizable");
    fails(&lost, Ok(None), "not linearizable");

    // What the checker is not given: the replies' own fields, the final
    // read's etag and body, failures.
    let wrong_token = [
        put(0, 1, 0, (0, 10), wrote(1, 0, None)),
        put(1, 2, 0, (20, 30), wrote(3, 0, Some(1))),
    ];
    fails(&wrong_token, left_by(2, 0), "#1: writer 1 got");
    let wrong_fence = [
        put(0, 2, 0, (0, 10), wrote(2, 0, None)),
        put(1, 1, 0, (20, 30), refused(3, 2)),
    ];
    fails(
        &wrong_fence,
        left_by(2, 0),
        "#1: writer 1 with token 1 refused",
    );
    let mut wrong_etag = left_by(2, 0);
    if let Ok(Some(seen)) = &mut wrong_etag {
        seen.etag = "etag-other".into();
    }
    fails(&lost, wrong_etag, "etag etag-other");
    let mut foreign = left_by(2, 0);
    if let Ok(Some(seen)) = &mut foreign {
        seen.body = b"by 2, write 9".to_vec();
    }
    fails(&lost, foreign, "a body nobody wrote");
    fails(&lost, Err("timeout".into()), "final fenced get failed");
    let failed = [
        put(0, 1, 0, (0, 10), wrote(1, 0, None)),
        put(1, 2, 0, (20, 30), Outcome::Failed("timeout".into())),
    ];
    fails(&failed, left_by(2, 0), "#1: writer 1 failed: timeout");
}

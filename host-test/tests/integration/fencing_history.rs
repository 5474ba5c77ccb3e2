//! Concurrent fenced writers with different tokens on one object, in hundreds
//! of random interleavings. Each run records a history (who, which token,
//! what, when, with what result) and checks it against what fencing promises:
//! a write is applied only over an equal or lower token, so in real time the
//! tokens of accepted writes never go down, a refusal always names a write
//! that really happened, and the object ends as the highest token left it.

use super::fencing::leases;
use super::rng::Rng;
use super::*;
use host_test::bindings::exports::s3_lease::lease::types::Fenced;
use host_test::bindings::{Error as E, FencedObject, FencedWrite};
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
                    kind: if rng.chance(1, 5) {
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

/// What is wrong with one interleaving's history and final state.
fn violations(
    object: &str,
    ops: &[Op],
    last: &Result<Option<FencedObject>, String>,
) -> Vec<String> {
    let mut bad = Vec::new();
    let accepted: Vec<&Op> = ops.iter().filter(|o| o.accepted()).collect();
    for op in ops {
        match &op.outcome {
            Outcome::Failed(e) => bad.push(format!("writer {} failed: {e}", op.writer)),
            Outcome::Put(w) => {
                if (w.object_key.as_str(), w.token) != (object, op.token) {
                    bad.push(format!("writer {} got {w:?}", op.writer));
                }
                match w.previous_token {
                    Some(p) if p > op.token => {
                        bad.push(format!("token {} written over {p}", op.token))
                    }
                    // What it replaced was written by a write of ours that
                    // had begun by then.
                    Some(p) => {
                        let wrote_p =
                            |o: &&Op| o.token == p && o.start < op.end && !std::ptr::eq(*o, op);
                        if !accepted.iter().any(wrote_p) {
                            bad.push(format!("token {} replaced {p}, never written", op.token))
                        }
                    }
                    // It created the object: nothing was written before it began.
                    None => {
                        if let Some(o) = accepted.iter().find(|o| o.end < op.start) {
                            bad.push(format!(
                                "token {} found no object after token {} wrote it",
                                op.token, o.token
                            ))
                        }
                    }
                }
            }
            Outcome::Deleted => {}
            Outcome::Fenced(f) => {
                if f.object_key != object || f.our_token != op.token || f.stored_token <= op.token {
                    bad.push(format!(
                        "writer {} with token {} refused: {f:?}",
                        op.writer, op.token
                    ))
                }
                // The newer token that refused it was really written, and
                // that write had begun before the refusal.
                if !accepted
                    .iter()
                    .any(|o| o.token == f.stored_token && o.start < op.end)
                {
                    bad.push(format!(
                        "refused by token {}, never written",
                        f.stored_token
                    ))
                }
            }
        }
    }
    // Real-time order: an accepted write that ended before another began
    // cannot carry a higher token.
    for x in &accepted {
        for y in &accepted {
            if x.end < y.start && x.token > y.token {
                bad.push(format!(
                    "token {} was accepted after token {} had been",
                    y.token, x.token
                ));
            }
        }
    }
    // The object is what the highest token's last write left.
    let Some(top) = accepted
        .iter()
        .filter(|o| Some(o.token) == accepted.iter().map(|o| o.token).max())
        .max_by_key(|o| o.start)
    else {
        bad.push("no write was accepted".into());
        return bad;
    };
    match (last, &top.outcome) {
        (Err(e), _) => bad.push(format!("final fenced get failed: {e}")),
        (Ok(None), Outcome::Deleted) => {}
        (Ok(Some(seen)), Outcome::Put(w))
            if (seen.token, &seen.body, &seen.etag) == (top.token, &top.body, &w.etag) => {}
        (Ok(seen), _) => bad.push(format!(
            "ended as {:?}, expected token {}'s {:?} of {:?}",
            seen.as_ref()
                .map(|s| (s.token, String::from_utf8_lossy(&s.body))),
            top.token,
            top.kind,
            String::from_utf8_lossy(&top.body)
        )),
    }
    bad
}

#[test]
fn random_interleavings_of_fenced_writers_keep_the_highest_tokens_writes() {
    let mut rng = Rng::seeded("fencing_history");
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
    for (n, ops, last) in &results {
        let bad = violations(&plans[*n].object, ops, last);
        if !bad.is_empty() {
            let t0 = ops.iter().map(|o| o.start).min().unwrap();
            let history: Vec<String> = ops
                .iter()
                .map(|o| {
                    format!(
                        "  writer {} token {} {:?} {:?}..{:?}: {:?}",
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
    println!(
        "fencing_history: {} interleavings ({with_refusal} with a refusal) in {elapsed:.1?}: \
         {accepted} writes accepted, {refused} fenced, {} conditional PUTs lost a race (412)",
        results.len(),
        conflicts.load(Ordering::Relaxed)
    );
    assert!(results.len() >= 200 && results.len() == INTERLEAVINGS);
    assert!(accepted > 0 && refused > 0, "both outcomes occurred");
}

/// The checker itself, on made-up histories: it must pass a sound one and
/// catch a stale write, a refusal by a token never written and a wrong end.
#[test]
fn the_history_checker_catches_what_it_is_for() {
    let object = "objects/x";
    let t0 = Instant::now();
    let op = |writer, token, (from, to): (u64, u64), outcome| Op {
        writer,
        token,
        kind: Kind::Put,
        body: format!("by {token}").into_bytes(),
        start: t0 + Duration::from_millis(from),
        end: t0 + Duration::from_millis(to),
        outcome,
    };
    let wrote = |token, previous_token| {
        Outcome::Put(FencedWrite {
            object_key: object.into(),
            etag: format!("etag-{token}"),
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
    let left_by = |token: u64| {
        Ok(Some(FencedObject {
            object_key: object.into(),
            body: format!("by {token}").into_bytes(),
            content_type: "text/plain".into(),
            etag: format!("etag-{token}"),
            token,
        }))
    };

    let sound = [
        op(0, 1, (0, 10), wrote(1, None)),
        op(1, 2, (5, 20), wrote(2, Some(1))),
        op(0, 1, (21, 30), refused(1, 2)),
    ];
    assert_eq!(
        violations(object, &sound, &left_by(2)),
        Vec::<String>::new()
    );

    let stale = [
        op(1, 2, (0, 10), wrote(2, None)),
        op(0, 1, (20, 30), wrote(1, Some(2))),
    ];
    assert!(violations(object, &stale, &left_by(1)).len() >= 2);

    let phantom = [
        op(0, 1, (0, 10), wrote(1, None)),
        op(0, 1, (20, 30), refused(1, 3)),
    ];
    assert_eq!(violations(object, &phantom, &left_by(1)).len(), 1);

    let lost = [
        op(0, 1, (0, 10), wrote(1, None)),
        op(1, 2, (20, 30), wrote(2, Some(1))),
    ];
    assert_eq!(violations(object, &lost, &left_by(1)).len(), 1);
    assert_eq!(violations(object, &lost, &Ok(None)).len(), 1);
}

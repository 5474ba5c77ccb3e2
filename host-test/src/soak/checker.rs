//! The soak's invariants, checked over a recorded [`History`]:
//!
//! - **tokens**: the tokens granted on a key are unique, and rise strictly
//!   in grant order (a grant whose step ended before another's began has
//!   the lower token);
//! - **leadership**: believed leadership of a key never overlaps, under
//!   the `server` and `observed` expiry clocks (`holder` assumes clocks
//!   in sync, which the soak breaks on purpose: its overlaps are counted,
//!   not failed);
//! - **fenced order**: every fenced object accepts writes in token order
//!   only: no accepted write replaced a higher token, and no acknowledged
//!   write with a lower token followed an acknowledged higher one; a
//!   refusal names a higher stored token;
//! - **no acknowledged write lost**: each object's final content is a
//!   write that can be last: none acknowledged with a higher token, none
//!   with its token acknowledged after it;
//! - **linearizable**: each object's history and final content pass the
//!   fenced register's linearizability checker
//!   (`s3_lease::testing::linearizability`);
//! - on semaphore keys ([`slots`]): slot tokens unique and rising in grant
//!   order; at no instant more believed slot terms than the key's limit;
//!   on fair keys, grants in queue order;
//! - and whatever the members saw on the spot (traps, the elector's
//!   contract, unexpected errors).

use super::history::{parse_body, FencedOp, FencedOutcome, Grant, History, Term, Violation};
use super::key_name;
use s3_lease::testing::linearizability::{
    self, FencedCall, FencedResult, FinalState, Operation, State, ViolationKind,
};
use std::collections::BTreeMap;
use std::time::Instant;

/// What the checks found.
#[derive(Debug, Default)]
pub struct Checked {
    pub violations: Vec<Violation>,
    /// Objects whose history went through the linearizability checker.
    pub objects: usize,
    /// Operations in those histories.
    pub object_ops: usize,
    /// Overlaps of believed leadership on keys whose clock does not
    /// promise none (`holder` under skew): reported, not failed.
    pub tolerated_overlaps: usize,
    /// Per semaphore key: the most believed slot terms seen at one instant.
    pub slot_max_holders: Vec<usize>,
    /// Grants on fair keys, each checked against the waiters ahead of it
    /// (see [`slots`]), and those of them made while a waiter that surely
    /// joined the queue first still waited with its place (allowed only
    /// while enough slots were free for both).
    pub fair_grants_checked: usize,
    pub fair_grants_past_a_waiter: usize,
    /// Waits on fair keys that joined the queue, and those of them that
    /// kept their place to the end (nothing crashed, paused or stalled them).
    pub fair_waits: usize,
    pub fair_waits_kept: usize,
}

fn v(invariant: &'static str, detail: String) -> Violation {
    Violation { invariant, detail }
}

/// Runs every check over `history`.
pub fn check(history: &History) -> Checked {
    let mut checked = Checked {
        violations: history.violations.clone(),
        ..Checked::default()
    };
    check_tokens(history, &mut checked.violations);
    check_overlaps(history, &mut checked);
    slots::check(history, &mut checked);
    let mut objects: BTreeMap<&str, Vec<&FencedOp>> = BTreeMap::new();
    for op in &history.fenced {
        objects.entry(op.object.as_str()).or_default().push(op);
    }
    for (object, mut ops) in objects {
        ops.sort_by_key(|o| o.start);
        let found = history.finals.iter().find(|f| f.object == object);
        let final_read = match found.map(|f| &f.found) {
            Some(Ok(found)) => Some(found.as_ref().map(|f| (f.token, f.body.as_slice()))),
            Some(Err(e)) => {
                checked
                    .violations
                    .push(v("final read", format!("{object}: {e}")));
                None
            }
            None => {
                checked
                    .violations
                    .push(v("final read", format!("{object}: never read")));
                None
            }
        };
        check_fenced_replies(object, &ops, &mut checked.violations);
        if let Some(final_read) = final_read {
            check_final(object, &ops, final_read, &mut checked.violations);
        }
        check_linearizable(history.t0, object, &ops, final_read, &mut checked);
    }
    checked
}

fn check_tokens(history: &History, out: &mut Vec<Violation>) {
    for k in 0..history.keys.len() {
        check_key_tokens(history.t0, &key_name(k), &history.grants, k, out);
    }
}

/// The tokens of key `k` (named `name`) among `grants`: unique, and
/// rising in grant order (a grant whose step ended before another's began
/// has the lower token).
fn check_key_tokens(t0: Instant, name: &str, grants: &[Grant], k: usize, out: &mut Vec<Violation>) {
    let mut grants: Vec<_> = grants.iter().filter(|g| g.key == k).collect();
    grants.sort_by_key(|g| g.step_start);
    let mut by_token: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, g) in grants.iter().enumerate() {
        by_token.entry(g.token).or_default().push(i);
    }
    for (token, who) in by_token.iter().filter(|(_, w)| w.len() > 1) {
        let names: Vec<String> = who
            .iter()
            .map(|&i| format!("process {} gen {}", grants[i].process, grants[i].generation))
            .collect();
        out.push(v(
            "tokens unique per key",
            format!(
                "{name}: token {token} granted {} times: {}",
                who.len(),
                names.join(", ")
            ),
        ));
    }
    for (i, a) in grants.iter().enumerate() {
        for b in &grants[i + 1..] {
            if a.step_end < b.step_start && b.token <= a.token {
                out.push(v(
                    "tokens rise in grant order",
                    format!(
                        "{name}: t{} granted to process {} at {} ms, then t{} to process {} at {} ms",
                        a.token,
                        a.process,
                        ms(t0, a.step_end),
                        b.token,
                        b.process,
                        ms(t0, b.step_start)
                    ),
                ));
            }
        }
    }
}

fn ms(t0: Instant, t: Instant) -> u128 {
    t.saturating_duration_since(t0).as_millis()
}

fn describe_term(t0: Instant, t: &Term) -> String {
    format!(
        "process {} gen {} t{} {}..{} ms (ended by {})",
        t.process,
        t.generation,
        t.token,
        ms(t0, t.start),
        ms(t0, t.end),
        t.ended_by
    )
}

fn check_overlaps(history: &History, checked: &mut Checked) {
    for (k, profile) in history.keys.iter().enumerate() {
        let mut terms: Vec<&Term> = history.terms.iter().filter(|t| t.key == k).collect();
        terms.sort_by_key(|t| t.start);
        for (i, a) in terms.iter().enumerate() {
            for b in terms[i + 1..].iter().take_while(|b| b.start < a.end) {
                if !profile.overlap_checked {
                    checked.tolerated_overlaps += 1;
                    continue;
                }
                checked.violations.push(v(
                    "leadership never overlaps",
                    format!(
                        "{} ({}): {} and {} both believed they led for {} ms",
                        key_name(k),
                        profile.name(),
                        describe_term(history.t0, a),
                        describe_term(history.t0, b),
                        a.end
                            .min(b.end)
                            .saturating_duration_since(b.start)
                            .as_millis()
                    ),
                ));
            }
        }
    }
}

fn describe_op(op: &FencedOp) -> String {
    let what = if op.delete { "delete" } else { "put" };
    let zombie = if op.zombie {
        " (after a pause, unstepped)"
    } else {
        ""
    };
    format!(
        "{what} value {} t{} by process {}{zombie} -> {:?}",
        op.value, op.token, op.process, op.outcome
    )
}

fn acked_accepted(op: &FencedOp) -> bool {
    op.outcome.accepted()
}

fn check_fenced_replies(object: &str, ops: &[&FencedOp], out: &mut Vec<Violation>) {
    for op in ops {
        match &op.outcome {
            FencedOutcome::Written {
                previous_token: Some(p),
                ..
            } if *p > op.token => out.push(v(
                "writes accepted in token order",
                format!("{object}: {} replaced a higher token", describe_op(op)),
            )),
            FencedOutcome::Fenced { stored_token, .. } if *stored_token <= op.token => out.push(v(
                "refusals name a higher token",
                format!("{object}: {}", describe_op(op)),
            )),
            _ => {}
        }
    }
    for (i, a) in ops.iter().enumerate().filter(|(_, o)| acked_accepted(o)) {
        for b in ops[i + 1..].iter().filter(|o| acked_accepted(o)) {
            if a.end < b.start && b.token < a.token {
                out.push(v(
                    "writes accepted in token order",
                    format!(
                        "{object}: {} was acknowledged, then {} was accepted after it",
                        describe_op(a),
                        describe_op(b)
                    ),
                ));
            }
        }
    }
}

/// Whether `c` can be the last write to take effect: no acknowledged
/// write has a higher token, and none with its token was acknowledged
/// after `c` was (an unacknowledged `c` may have landed late).
fn can_be_last(c: &FencedOp, ops: &[&FencedOp]) -> Result<(), String> {
    if matches!(c.outcome, FencedOutcome::Fenced { .. }) {
        return Err(format!("{} was refused", describe_op(c)));
    }
    for w in ops.iter().filter(|w| acked_accepted(w)) {
        if w.token > c.token {
            return Err(format!(
                "{} has a higher token than {}",
                describe_op(w),
                describe_op(c)
            ));
        }
        let c_acked = acked_accepted(c);
        if w.token == c.token && w.value != c.value && c_acked && c.end < w.start {
            return Err(format!(
                "{} was acknowledged after {}",
                describe_op(w),
                describe_op(c)
            ));
        }
    }
    Ok(())
}

/// The final content is a write that can be last: no acknowledged write lost.
fn check_final(
    object: &str,
    ops: &[&FencedOp],
    final_read: Option<(u64, &[u8])>,
    out: &mut Vec<Violation>,
) {
    let lost = |detail: String| v("no acknowledged write lost", format!("{object}: {detail}"));
    match final_read {
        Some((token, body)) => {
            let Some((body_token, value)) = parse_body(body) else {
                out.push(lost(format!(
                    "holds a body the soak did not write: {:?}",
                    String::from_utf8_lossy(body)
                )));
                return;
            };
            if body_token != token {
                out.push(lost(format!(
                    "the body says token {body_token}, the object's fencing token is {token}"
                )));
            }
            match ops.iter().find(|o| !o.delete && o.value == value) {
                None => out.push(lost(format!("holds value {value}, which no put wrote"))),
                Some(c) => {
                    if let Err(why) = can_be_last(c, ops) {
                        out.push(lost(format!("holds value {value}, but {why}")));
                    }
                }
            }
        }
        None => {
            if !ops.iter().any(|o| acked_accepted(o)) {
                return;
            }
            let deletes: Vec<&&FencedOp> = ops.iter().filter(|o| o.delete).collect();
            let reasons: Vec<String> = deletes
                .iter()
                .filter_map(|d| can_be_last(d, ops).err())
                .collect();
            let some_delete_fits = reasons.len() < deletes.len();
            if !some_delete_fits {
                out.push(lost(format!(
                    "is absent or deleted, but no delete can be the last write ({})",
                    if reasons.is_empty() {
                        "there was none".to_string()
                    } else {
                        reasons.join("; ")
                    }
                )));
            }
        }
    }
}

/// The object's history as the linearizability checker takes it; times in
/// microseconds since the start of the run.
pub fn operations(t0: Instant, ops: &[&FencedOp]) -> Vec<Operation> {
    let us = |t: Instant| t.saturating_duration_since(t0).as_micros() as u64;
    ops.iter()
        .map(|op| Operation {
            client: op.process,
            call: if op.delete {
                FencedCall::Delete { token: op.token }
            } else {
                FencedCall::Put {
                    token: op.token,
                    value: op.value,
                }
            },
            result: match &op.outcome {
                FencedOutcome::Written { previous_token, .. } => FencedResult::Written {
                    previous_token: *previous_token,
                },
                FencedOutcome::Deleted => FencedResult::Accepted,
                FencedOutcome::Fenced { stored_token, .. } => FencedResult::Fenced {
                    stored_token: *stored_token,
                },
                FencedOutcome::Unknown(_) => FencedResult::Unknown,
            },
            start: us(op.start),
            end: match op.outcome {
                FencedOutcome::Unknown(_) => u64::MAX,
                _ => us(op.end),
            },
        })
        .collect()
}

fn check_linearizable(
    t0: Instant,
    object: &str,
    ops: &[&FencedOp],
    final_read: Option<Option<(u64, &[u8])>>,
    checked: &mut Checked,
) {
    let final_state = final_read.map(|found| match found {
        None => FinalState {
            token: None,
            value: None,
        },
        Some((token, body)) => FinalState {
            token: Some(token),
            // A body the soak did not write is flagged by `check_final`;
            // here it matches no write.
            value: Some(parse_body(body).map_or(u64::MAX, |(_, value)| value)),
        },
    });
    let history = operations(t0, ops);
    checked.objects += 1;
    checked.object_ops += history.len();
    if let Err(e) = linearizability::check(&history, false, State::Absent, final_state) {
        let kind = match e.kind {
            ViolationKind::NotLinearizable => "not linearizable",
            ViolationKind::FinalState => "no order ends in the final content",
            ViolationKind::Malformed => "malformed history",
            ViolationKind::Inconclusive => "inconclusive search",
        };
        checked.violations.push(v(
            "linearizable",
            format!("{object}: {kind}:\n{}", e.explanation),
        ));
    }
}

mod slots;
#[cfg(test)]
mod tests;

//! The checkers: see the module above.

use super::{
    ms, violation as v, FencedOp, FencedOutcome, Found, Grant, History, KeySpec, Micros, Term,
    Violation, Wait,
};
use crate::testing::linearizability::{
    self, FencedCall, FencedResult, FinalState, Operation, State, ViolationKind,
};
use std::collections::BTreeMap;

/// What the checks found, and how much they looked at.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Checked {
    pub violations: Vec<Violation>,
    /// Objects whose history went through the linearizability checker,
    /// and the operations in them.
    pub objects: usize,
    pub object_ops: usize,
    /// Overlaps past the limit on keys whose clock rule was broken on
    /// purpose: counted, not failed.
    pub tolerated_overlaps: usize,
    /// Per key (in the order of `History::keys`): the most believed terms
    /// open at one instant.
    pub max_open: Vec<usize>,
    /// Grants on fair keys checked against the waiters ahead of them, and
    /// those made while a waiter that surely joined first still waited
    /// with its place (allowed while enough slots were free for both).
    pub fair_grants_checked: usize,
    pub fair_grants_past_a_waiter: usize,
    /// Waits on fair keys that joined the queue, and those that kept their
    /// place to the end.
    pub fair_waits: usize,
    pub fair_waits_kept: usize,
}

/// Runs every check over `history`.
pub fn check(history: &History) -> Checked {
    let mut checked = Checked {
        violations: history.violations.clone(),
        ..Checked::default()
    };
    for (k, spec) in history.keys.iter().enumerate() {
        let grants: Vec<&Grant> = history.grants.iter().filter(|g| g.key == k).collect();
        tokens(spec, &grants, &mut checked.violations);
        let terms: Vec<&Term> = history.terms.iter().filter(|t| t.key == k).collect();
        let max = exclusion(spec, &terms, &mut checked);
        checked.max_open.push(max);
        spent_leases(history, k, spec, &grants, &mut checked.violations);
        if spec.fair {
            let waits: Vec<&Wait> = history.waits.iter().filter(|w| w.key == k).collect();
            queue_order(spec, &waits, &terms, &mut checked);
        }
    }
    let mut objects: BTreeMap<&str, Vec<&FencedOp>> = BTreeMap::new();
    for op in &history.fenced {
        objects.entry(op.object.as_str()).or_default().push(op);
    }
    for (object, mut ops) in objects {
        ops.sort_by_key(|o| o.start);
        let found = history.finals.iter().find(|f| f.object == object);
        let final_read = match found.map(|f| &f.found) {
            Some(Ok(found)) => Some(found.as_ref()),
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
        fenced_replies(object, &ops, &mut checked.violations);
        if let Some(final_read) = final_read {
            final_content(object, &ops, final_read, &mut checked.violations);
        }
        linearizable(object, &ops, final_read, &mut checked);
    }
    checked
}

/// A key's tokens: unique, and rising in grant order (a grant answered
/// before another was sent has the lower token); with exact
/// acknowledgements, a key of limit 1 acknowledges them in rising order.
fn tokens(spec: &KeySpec, grants: &[&Grant], out: &mut Vec<Violation>) {
    let name = &spec.name;
    let mut by_token: BTreeMap<u64, Vec<&Grant>> = BTreeMap::new();
    for g in grants {
        by_token.entry(g.token).or_default().push(g);
    }
    for (token, same) in by_token.iter().filter(|(_, w)| w.len() > 1) {
        let names: Vec<String> = same
            .iter()
            .map(|g| format!("{} at {} ms", g.who, ms(g.acked)))
            .collect();
        out.push(v(
            "tokens unique per key",
            format!(
                "{name}: token {token} granted {} times: {}",
                same.len(),
                names.join(", ")
            ),
        ));
    }
    let mut by_sent = grants.to_vec();
    by_sent.sort_by_key(|g| g.sent);
    for (i, a) in by_sent.iter().enumerate() {
        for b in by_sent[i + 1..].iter().filter(|b| a.acked < b.sent) {
            if b.token <= a.token {
                out.push(v(
                    "tokens rise in grant order",
                    format!(
                        "{name}: t{} granted to {} at {} ms, then t{} to {} at {} ms",
                        a.token,
                        a.who,
                        ms(a.acked),
                        b.token,
                        b.who,
                        ms(b.sent)
                    ),
                ));
            }
        }
    }
    if spec.exact_acks && spec.limit == 1 {
        let mut by_ack = grants.to_vec();
        by_ack.sort_by_key(|g| (g.acked, g.token));
        for pair in by_ack.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if b.token < a.token {
                out.push(v(
                    "tokens rise in the order grants are acknowledged",
                    format!(
                        "{name}: t{} acknowledged to {} at {} ms after t{} to {} at {} ms",
                        b.token,
                        b.who,
                        ms(b.acked),
                        a.token,
                        a.who,
                        ms(a.acked)
                    ),
                ));
            }
        }
    }
}

fn describe_term(t: &Term) -> String {
    format!(
        "{} t{} {}..{} ms (ended by {})",
        t.who,
        t.token,
        ms(t.start),
        ms(t.end),
        t.ended_by
    )
}

/// Sweeps a key's terms in time order; flags each stretch with more than
/// `limit` open, once, naming the terms open when it began. Returns the
/// most open at once.
fn exclusion(spec: &KeySpec, terms: &[&Term], checked: &mut Checked) -> usize {
    // (instant, +1 start / -1 end); ends first at equal instants: a term
    // is [start, end).
    let mut events: Vec<(Micros, i8, usize)> = Vec::new();
    for (i, t) in terms.iter().enumerate() {
        if t.end > t.start {
            events.push((t.start, 1, i));
            events.push((t.end, -1, i));
        }
    }
    events.sort_by_key(|&(at, delta, _)| (at, delta));
    let mut open: Vec<usize> = Vec::new();
    let mut max = 0;
    let mut over = false;
    for (at, delta, i) in events {
        if delta < 0 {
            open.retain(|&o| o != i);
            over = open.len() > spec.limit as usize;
            continue;
        }
        open.push(i);
        max = max.max(open.len());
        if open.len() > spec.limit as usize && !over {
            over = true;
            if !spec.exclusion_checked {
                checked.tolerated_overlaps += 1;
                continue;
            }
            let who: Vec<String> = open.iter().map(|&o| describe_term(terms[o])).collect();
            checked.violations.push(v(
                "never more believed holders than the limit",
                format!(
                    "{} (limit {}): {} believed holders at {} ms: {}",
                    spec.name,
                    spec.limit,
                    open.len(),
                    ms(at),
                    who.join("; ")
                ),
            ));
        }
    }
    max
}

/// Spent leases never renew or release; on a key of limit 1, no renew or
/// release succeeds that was sent after a higher token was granted.
fn spent_leases(
    history: &History,
    k: usize,
    spec: &KeySpec,
    grants: &[&Grant],
    out: &mut Vec<Violation>,
) {
    for r in history.rewrites.iter().filter(|r| r.key == k) {
        let what = if r.release { "release" } else { "renew" };
        if let Some(why) = r.spent {
            out.push(v(
                "a spent lease never renews or releases",
                format!(
                    "{}: {}'s {what} of t{} sent at {} ms succeeded, but the lease was {why}",
                    spec.name,
                    r.who,
                    r.token,
                    ms(r.sent)
                ),
            ));
        }
        if spec.limit != 1 {
            continue;
        }
        if let Some(g) = grants
            .iter()
            .find(|g| g.token > r.token && g.acked < r.sent)
        {
            out.push(v(
                "a superseded lease never renews or releases",
                format!(
                    "{}: {}'s {what} of t{} sent at {} ms succeeded, but {} had been granted t{} at {} ms",
                    spec.name,
                    r.who,
                    r.token,
                    ms(r.sent),
                    g.who,
                    g.token,
                    ms(g.acked)
                ),
            ));
        }
    }
}

/// The fewest of `terms` open at any instant of `[from, to]`: counts only
/// fall at ends, so the candidates are `from` and the ends inside.
fn fewest_open(terms: &[&Term], from: Micros, to: Micros) -> usize {
    let open_at = |at: Micros| terms.iter().filter(|t| t.start <= at && at < t.end).count();
    let mut fewest = open_at(from);
    for t in terms.iter().filter(|t| from < t.end && t.end <= to) {
        fewest = fewest.min(open_at(t.end));
    }
    fewest
}

fn describe_wait(w: &Wait) -> String {
    let queued = w
        .first_queued
        .map_or("never queued".to_string(), |(_, at)| {
            format!("queued by {} ms", ms(at))
        });
    let granted = w
        .granted
        .map_or("not granted".to_string(), |(sent, _, token)| {
            format!("t{token} asked at {} ms", ms(sent))
        });
    format!(
        "{} (waited from {} ms, {queued}, place kept to {} ms, {granted})",
        w.who,
        ms(w.start),
        ms(w.kept_place_until)
    )
}

/// Grants on a fair key go to live waiters in the order they joined.
///
/// A waiter A *surely joined before* an attempt B if A's first `queued`
/// answer came before B's wait sent its first attempt; A *still waited
/// with its place* at B's grant if A kept its place until after B's grant
/// was answered, and A's own granting attempt was sent after that. The
/// contract grants the k-th live waiter (from 0) a slot only while more
/// than k are free, and a caller not in the queue only beyond every live
/// waiter. So if `w` such waiters were ahead of B, B's grant needed `w + 1`
/// free slots: at some instant within B's granting attempt, at most
/// `limit - w - 1` other believed terms were open. Believed terms are a
/// subset of what the store counts (a guard stops believing before any
/// clock may call the slot expired), so more than that throughout the
/// attempt is a grant out of queue order.
fn queue_order(spec: &KeySpec, waits: &[&Wait], terms: &[&Term], checked: &mut Checked) {
    for w in waits.iter().filter(|w| w.first_queued.is_some()) {
        checked.fair_waits += 1;
        if w.kept_place_until >= w.end {
            checked.fair_waits_kept += 1;
        }
    }
    for b in waits {
        let Some((sent, answered, token)) = b.granted else {
            continue;
        };
        checked.fair_grants_checked += 1;
        let ahead: Vec<&&Wait> = waits
            .iter()
            .filter(|a| {
                a.first_queued.is_some_and(|(_, q)| q < b.start)
                    && a.kept_place_until > answered
                    && a.granted.is_none_or(|(a_sent, _, _)| a_sent > answered)
            })
            .collect();
        if ahead.is_empty() {
            continue;
        }
        checked.fair_grants_past_a_waiter += 1;
        let others: Vec<&Term> = terms
            .iter()
            .filter(|t| !(t.who == b.who && t.token == token))
            .copied()
            .collect();
        let held = fewest_open(&others, sent, answered);
        if held + ahead.len() < spec.limit as usize {
            continue;
        }
        let detail = format!(
            "{}: {} was granted t{token} in {}..{} ms while {held} other holders believed \
             they held slots throughout and {} waiter(s) who joined the queue first still \
             waited with their place: {}",
            spec.name,
            describe_wait(b),
            ms(sent),
            ms(answered),
            ahead.len(),
            ahead
                .iter()
                .map(|a| describe_wait(a))
                .collect::<Vec<_>>()
                .join("; ")
        );
        checked
            .violations
            .push(v("slots go to waiters in queue order", detail));
    }
}

fn describe_op(op: &FencedOp) -> String {
    let what = if op.delete { "delete" } else { "put" };
    let zombie = if op.zombie { " (after a pause)" } else { "" };
    format!(
        "{what} value {} t{} by {}{zombie} -> {:?}",
        op.value, op.token, op.who, op.outcome
    )
}

fn fenced_replies(object: &str, ops: &[&FencedOp], out: &mut Vec<Violation>) {
    for op in ops {
        match &op.outcome {
            FencedOutcome::Written {
                previous_token: Some(p),
            } if *p > op.token => out.push(v(
                "writes accepted in token order",
                format!("{object}: {} replaced a higher token", describe_op(op)),
            )),
            FencedOutcome::Fenced { stored_token } if *stored_token <= op.token => out.push(v(
                "refusals name a higher token",
                format!("{object}: {}", describe_op(op)),
            )),
            _ => {}
        }
    }
    for (i, a) in ops.iter().enumerate().filter(|(_, o)| o.outcome.accepted()) {
        for b in ops[i + 1..].iter().filter(|o| o.outcome.accepted()) {
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
    if matches!(c.outcome, FencedOutcome::NotSent(_)) {
        return Err(format!("{} sent no write", describe_op(c)));
    }
    for w in ops.iter().filter(|w| w.outcome.accepted()) {
        if w.token > c.token {
            return Err(format!(
                "{} has a higher token than {}",
                describe_op(w),
                describe_op(c)
            ));
        }
        if w.token == c.token && w.value != c.value && c.outcome.accepted() && c.end < w.start {
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
fn final_content(object: &str, ops: &[&FencedOp], found: Option<&Found>, out: &mut Vec<Violation>) {
    let lost = |detail: String| v("no acknowledged write lost", format!("{object}: {detail}"));
    match found {
        Some(found) => {
            let Some(value) = found.value else {
                out.push(lost("holds a body the run did not write".into()));
                return;
            };
            if let Some(body_token) = found.body_token.filter(|&t| t != found.token) {
                out.push(lost(format!(
                    "the body says token {body_token}, the object's fencing token is {}",
                    found.token
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
            if !ops.iter().any(|o| o.outcome.accepted()) {
                return;
            }
            let deletes: Vec<&&FencedOp> = ops.iter().filter(|o| o.delete).collect();
            let reasons: Vec<String> = deletes
                .iter()
                .filter_map(|d| can_be_last(d, ops).err())
                .collect();
            if reasons.len() == deletes.len() {
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

/// An object's history as the linearizability checker takes it (calls
/// that sent no write left out: they changed nothing).
fn operations(ops: &[&FencedOp]) -> Vec<Operation> {
    ops.iter()
        .filter(|op| !matches!(op.outcome, FencedOutcome::NotSent(_)))
        .map(|op| Operation {
            client: op.who.actor,
            call: if op.delete {
                FencedCall::Delete { token: op.token }
            } else {
                FencedCall::Put {
                    token: op.token,
                    value: op.value,
                }
            },
            result: match &op.outcome {
                FencedOutcome::Written { previous_token } => FencedResult::Written {
                    previous_token: *previous_token,
                },
                FencedOutcome::Deleted => FencedResult::Accepted,
                FencedOutcome::Fenced { stored_token } => FencedResult::Fenced {
                    stored_token: *stored_token,
                },
                FencedOutcome::Unknown(_) | FencedOutcome::NotSent(_) => FencedResult::Unknown,
            },
            start: op.start,
            end: match op.outcome {
                FencedOutcome::Unknown(_) => u64::MAX,
                _ => op.end,
            },
        })
        .collect()
}

fn linearizable(
    object: &str,
    ops: &[&FencedOp],
    found: Option<Option<&Found>>,
    checked: &mut Checked,
) {
    let final_state = found.map(|found| match found {
        None => FinalState {
            token: None,
            value: None,
        },
        Some(f) => FinalState {
            token: Some(f.token),
            // A body the run did not write is flagged by `final_content`;
            // here it matches no write.
            value: Some(f.value.unwrap_or(u64::MAX)),
        },
    });
    let history = operations(ops);
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

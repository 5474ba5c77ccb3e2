//! The checks of semaphore keys, over the slot members' history:
//!
//! - **tokens**: a key's slot tokens are unique, and rise strictly in
//!   grant order (a grant whose attempt was answered before another's
//!   attempt was sent has the lower token): every grant takes the key's
//!   one counter;
//! - **limit**: at no instant do more believed slot terms of a key overlap
//!   than its limit (terms as [`Term`] describes them for slots: from the
//!   grant's answer to the last sample at which the guard said held);
//! - **queue order** (fair keys): grants go to live waiters in the order
//!   they joined. Precisely: a waiter A *surely joined before* an attempt
//!   B if A's first `queued` answer came before B's wait sent its first
//!   attempt; A *still waited with its place* at B's grant if A kept its
//!   place (`Wait::kept_place_until`: its process neither crashed nor
//!   paused, and its `queued` answers never came further apart than
//!   `KEEP_PLACE_GAP`, so it renewed its place in time) until after B's
//!   grant was answered, and A's own granting attempt was sent after that.
//!   The contract grants the k-th live waiter (from 0) a slot only while
//!   more than k are free, and a caller not in the queue only beyond every
//!   live waiter. So if `w` such waiters A were ahead of B, B's grant needed
//!   `w + 1` free slots: at some instant within B's granting attempt, at
//!   most `limit - w - 1` other believed terms were open. Believed terms
//!   are a subset of what the store counts (a guard stops believing long
//!   before any clock may call the slot expired), so more than that at
//!   every instant of the attempt is a grant out of queue order. Waiters
//!   whose process crashed, paused or stalled lose their place as the
//!   contract allows: they are not counted as ahead.
//!
//!   Two defects of the core that lost a live waiter's place were found
//!   by this check and fixed (`strategy/single_object/semaphore/plan.rs`,
//!   `acquire`): a waiter whose wall clock stepped back stopped renewing
//!   its place, and a waiter whose grant's reply was lost and whose re-read
//!   failed had its own live slot dropped by its next attempt. Such waiters
//!   count as ahead like any other; the unit tests below keep them.

use super::{check_key_tokens, describe_term, ms, v, Checked};
use crate::soak::history::{History, Term, Wait};
use crate::soak::slot_key_name;
use std::time::Instant;

pub fn check(history: &History, checked: &mut Checked) {
    for (j, profile) in history.slot_keys.iter().enumerate() {
        let name = format!("{} ({})", slot_key_name(j), profile.name());
        check_key_tokens(
            history.t0,
            &name,
            &history.slot_grants,
            j,
            &mut checked.violations,
        );
        let terms: Vec<&Term> = history.slot_terms.iter().filter(|t| t.key == j).collect();
        let max = check_limit(history.t0, &name, profile.limit, &terms, checked);
        checked.slot_max_holders.push(max);
        if profile.fair {
            let waits: Vec<&Wait> = history.waits.iter().filter(|w| w.key == j).collect();
            check_queue_order(history.t0, &name, profile.limit, &waits, &terms, checked);
        }
    }
}

/// Sweeps the terms in time order; flags each stretch with more than
/// `limit` open, once, naming the terms open when it began. Returns the
/// most open at once.
fn check_limit(
    t0: Instant,
    name: &str,
    limit: u32,
    terms: &[&Term],
    checked: &mut Checked,
) -> usize {
    // (instant, +1 start / -1 end); ends first at equal instants: a term
    // is [start, end).
    let mut events: Vec<(Instant, i8, usize)> = Vec::new();
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
            over = open.len() > limit as usize;
            continue;
        }
        open.push(i);
        max = max.max(open.len());
        if open.len() > limit as usize && !over {
            over = true;
            let who: Vec<String> = open.iter().map(|&o| describe_term(t0, terms[o])).collect();
            checked.violations.push(v(
                "slot holders within the limit",
                format!(
                    "{name}: {} believed slot holders at {} ms: {}",
                    open.len(),
                    ms(t0, at),
                    who.join("; ")
                ),
            ));
        }
    }
    max
}

/// The fewest of `terms` open at any instant of `[from, to]`: counts only
/// fall at ends, so the candidates are `from` and the ends inside.
fn fewest_open(terms: &[&Term], from: Instant, to: Instant) -> usize {
    let open_at = |at: Instant| terms.iter().filter(|t| t.start <= at && at < t.end).count();
    let mut fewest = open_at(from);
    for t in terms.iter().filter(|t| from < t.end && t.end <= to) {
        fewest = fewest.min(open_at(t.end));
    }
    fewest
}

fn describe_wait(t0: Instant, w: &Wait) -> String {
    let queued = w
        .first_queued
        .map_or("never queued".to_string(), |(_, at)| {
            format!("queued by {} ms", ms(t0, at))
        });
    let granted = w
        .granted
        .map_or("not granted".to_string(), |(sent, _, token)| {
            format!("t{token} asked at {} ms", ms(t0, sent))
        });
    let stepped = w.clock_stepped_back.map_or(String::new(), |at| {
        format!(", wall clock stepped back after {} ms", ms(t0, at))
    });
    let unclear = w.unclear_write.map_or(String::new(), |at| {
        format!(
            ", an attempt sent at {} ms failed after an unclear write",
            ms(t0, at)
        )
    });
    format!(
        "process {} gen {} (waited from {} ms, {queued}, place kept to {} ms{stepped}{unclear}, {granted})",
        w.process,
        w.generation,
        ms(t0, w.start),
        ms(t0, w.kept_place_until)
    )
}

fn check_queue_order(
    t0: Instant,
    name: &str,
    limit: u32,
    waits: &[&Wait],
    terms: &[&Term],
    checked: &mut Checked,
) {
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
            .filter(|t| {
                !(t.process == b.process && t.generation == b.generation && t.token == token)
            })
            .copied()
            .collect();
        let held = fewest_open(&others, sent, answered);
        if held + ahead.len() < limit as usize {
            continue;
        }
        let detail = format!(
            "{name}: {} was granted t{token} in {}..{} ms while {held} other holders believed \
             they held slots throughout and {} waiter(s) who joined the queue first still \
             waited with their place: {}",
            describe_wait(t0, b),
            ms(t0, sent),
            ms(t0, answered),
            ahead.len(),
            ahead
                .iter()
                .map(|a| describe_wait(t0, a))
                .collect::<Vec<_>>()
                .join("; ")
        );
        checked
            .violations
            .push(v("slots go to waiters in queue order", detail));
    }
}

#[cfg(test)]
mod tests;

//! The soak's record, judged by the checkers the simulation's runs are
//! judged by (`s3_lease::testing::history`): the record becomes that
//! history, its times microseconds since the run began.
//!
//! Keys, in order: the elected keys (`k0`, `k1`, ...: limit 1; overlaps on
//! `holder`, whose rule the soak's skewed clocks break on purpose, are
//! counted, not failed), then the semaphore keys (`s0`, ...). The soak
//! knows each grant only within a window (from the start of the step or
//! attempt that granted it to when its member first saw it), so only
//! grants whose windows do not overlap are ordered.

use super::history::{self, FencedOutcome as SoakOutcome, History};
use super::{key_name, slot_key_name};
use s3_lease::testing::history as common;
use std::time::Instant;

pub use common::Checked;

/// Runs every check over the soak's record.
pub fn check(record: &History) -> Checked {
    common::check(&as_common(record))
}

/// The soak's record as the common history.
pub fn as_common(record: &History) -> common::History {
    let t0 = record.t0;
    let us =
        |t: Instant| u64::try_from(t.saturating_duration_since(t0).as_micros()).unwrap_or(u64::MAX);
    let who = |process: usize, generation: u32| common::Who {
        actor: process,
        generation,
    };
    let mut keys: Vec<common::KeySpec> = record
        .keys
        .iter()
        .enumerate()
        .map(|(k, profile)| common::KeySpec {
            name: format!("{} ({})", key_name(k), profile.name()),
            limit: 1,
            fair: false,
            exclusion_checked: profile.overlap_checked,
            exact_acks: false,
        })
        .collect();
    let slots_from = keys.len();
    keys.extend(
        record
            .slot_keys
            .iter()
            .enumerate()
            .map(|(j, profile)| common::KeySpec {
                name: format!("{} ({})", slot_key_name(j), profile.name()),
                limit: profile.limit,
                fair: profile.fair,
                exclusion_checked: true,
                exact_acks: false,
            }),
    );
    let grant = |offset: usize, g: &history::Grant| common::Grant {
        key: offset + g.key,
        who: who(g.process, g.generation),
        token: g.token,
        sent: us(g.step_start),
        acked: us(g.step_end),
    };
    let term = |offset: usize, t: &history::Term| common::Term {
        key: offset + t.key,
        who: who(t.process, t.generation),
        token: t.token,
        start: us(t.start),
        end: us(t.end),
        ended_by: t.ended_by.clone(),
    };
    let mut out = common::History::new(keys);
    out.grants = record.grants.iter().map(|g| grant(0, g)).collect();
    out.grants
        .extend(record.slot_grants.iter().map(|g| grant(slots_from, g)));
    out.terms = record.terms.iter().map(|t| term(0, t)).collect();
    out.terms
        .extend(record.slot_terms.iter().map(|t| term(slots_from, t)));
    out.fenced = record
        .fenced
        .iter()
        .map(|op| common::FencedOp {
            object: op.object.clone(),
            who: who(op.process, op.generation),
            token: op.token,
            value: op.value,
            delete: op.delete,
            zombie: op.zombie,
            start: us(op.start),
            end: us(op.end),
            outcome: match &op.outcome {
                SoakOutcome::Written { previous_token, .. } => common::FencedOutcome::Written {
                    previous_token: *previous_token,
                },
                SoakOutcome::Deleted => common::FencedOutcome::Deleted,
                SoakOutcome::Fenced { stored_token, .. } => common::FencedOutcome::Fenced {
                    stored_token: *stored_token,
                },
                SoakOutcome::Unknown(why) => common::FencedOutcome::Unknown(why.clone()),
            },
        })
        .collect();
    out.finals = record
        .finals
        .iter()
        .map(|f| common::FinalRead {
            object: f.object.clone(),
            found: f.found.clone().map(|found| {
                found.map(|o| {
                    let named = history::parse_body(&o.body);
                    common::Found {
                        token: o.token,
                        value: named.map(|(_, value)| value),
                        body_token: named.map(|(token, _)| token),
                    }
                })
            }),
        })
        .collect();
    out.waits = record
        .waits
        .iter()
        .map(|w| common::Wait {
            key: slots_from + w.key,
            who: who(w.process, w.generation),
            start: us(w.start),
            first_queued: w.first_queued.map(|(a, b)| (us(a), us(b))),
            granted: w.granted.map(|(a, b, token)| (us(a), us(b), token)),
            kept_place_until: us(w.kept_place_until),
            end: us(w.end),
        })
        .collect();
    out.violations = record
        .violations
        .iter()
        .map(|v| common::violation(v.invariant, v.detail.clone()))
        .collect();
    out
}

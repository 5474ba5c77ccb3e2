//! From verdicts to advice: which strategies and expiry clocks each
//! capability is needed by, so which are safe on this store, and whether a
//! client configured one way may grant leases on it.
//!
//! The rule: a strategy or clock is safe when every capability it needs
//! passed and no capability failed silently. A store that answers 501 to a
//! condition it cannot evaluate loses only what needs that condition; a
//! store that ignores a condition (or calls a changed object unchanged)
//! cannot be trusted with any, since the lock rests on every condition it
//! sends being honoured.

use crate::prelude::*;

use super::{Capability, CapabilityResult, ClockOffset, Report, Verdict};
use crate::config::Strategy;
use crate::expiry::ExpiryClock;

const STRATEGIES: [Strategy; 2] = [Strategy::SingleObject, Strategy::EpochObjects];
const CLOCKS: [ExpiryClock; 3] = [
    ExpiryClock::Holder,
    ExpiryClock::Server,
    ExpiryClock::Observed,
];

/// Said in every report: what the race shows, and what it cannot.
pub fn atomicity_note() -> String {
    format!(
        "Raced {} concurrent writers per round, {} rounds of creates and {} of updates: a \
         store that lets two racing conditional writes both win fails concurrent-create or \
         concurrent-update. Passing shows no two winners in those rounds, not that none can \
         ever happen: race many clients on one key before trusting a store under heavy \
         contention (the integration suite's contention tests do).",
        super::RACE_WRITERS,
        super::RACE_ROUNDS,
        super::RACE_ROUNDS
    )
}

fn needed_by_strategy(c: Capability, s: Strategy) -> bool {
    match c {
        // Every first grant is a create-only write, and racing creates
        // must not both win.
        Capability::IfNoneMatchExisting | Capability::ConcurrentCreate => true,
        // single-object renews, releases and takes over by compare-and-swap;
        // epoch-objects only creates, and a LIST decides after each write.
        Capability::IfMatchPut | Capability::IfMatchMissingKey | Capability::ConcurrentUpdate => {
            s == Strategy::SingleObject
        }
        // epoch-objects finds the newest epoch, and checks for newer ones, by LIST.
        Capability::ListStartAfter => s == Strategy::EpochObjects,
        // Reported for table stores only: no lock item can be written
        // or read in a table of another key.
        Capability::TableKeySchema => true,
        _ => false,
    }
}

/// Blocks every strategy when it failed, but not when it is unknown: a
/// table's TTL on `token` could sweep a lock item and its counter, while
/// a TTL description that is refused (a narrower IAM
/// policy) says nothing against the table.
fn needed_unless_unknown(c: Capability) -> bool {
    c == Capability::TtlAttribute
}

fn needed_by_clock(c: Capability, clock: ExpiryClock) -> bool {
    match c {
        Capability::ServerDates => clock == ExpiryClock::Server,
        Capability::ClockOffset => clock == ExpiryClock::Holder,
        _ => false,
    }
}

fn blocks_strategy(r: &CapabilityResult, s: Strategy) -> bool {
    r.silent
        || (r.verdict != Verdict::Pass && needed_by_strategy(r.capability, s))
        || (r.verdict == Verdict::Fail && needed_unless_unknown(r.capability))
}

fn blocks_clock(r: &CapabilityResult, clock: ExpiryClock) -> bool {
    r.silent || (r.verdict != Verdict::Pass && needed_by_clock(r.capability, clock))
}

/// Whether a client may grant leases on the store the report describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Open,
    /// A capability the configuration needs failed: keep the answer.
    Closed(Box<CapabilityResult>),
    /// Only unknowns stand in the way (no reply, a 503): probe again later.
    Undecided(Box<CapabilityResult>),
}

/// What a report says of a configuration.
pub trait Verdicts {
    /// The first result that makes `strategy` with `clock` unsafe here.
    fn blocking(&self, strategy: Strategy, clock: ExpiryClock) -> Option<&CapabilityResult>;
    /// Whether a client configured so may grant leases here.
    fn gate(&self, strategy: Strategy, clock: ExpiryClock) -> Gate;
}

impl Verdicts for Report {
    fn blocking(&self, strategy: Strategy, clock: ExpiryClock) -> Option<&CapabilityResult> {
        self.results
            .iter()
            .find(|r| blocks_strategy(r, strategy) || blocks_clock(r, clock))
    }

    fn gate(&self, strategy: Strategy, clock: ExpiryClock) -> Gate {
        let decided = self
            .results
            .iter()
            .filter(|r| blocks_strategy(r, strategy) || blocks_clock(r, clock))
            .find(|r| r.verdict == Verdict::Fail);
        match (decided, self.blocking(strategy, clock)) {
            (Some(failed), _) => Gate::Closed(Box::new(failed.clone())),
            (None, Some(unknown)) => Gate::Undecided(Box::new(unknown.clone())),
            (None, None) => Gate::Open,
        }
    }
}

pub(super) fn report(
    results: Vec<CapabilityResult>,
    clock_offset: Option<ClockOffset>,
    strategy: Strategy,
    clock: ExpiryClock,
    mut notes: Vec<String>,
    requests: u32,
) -> Report {
    let safe_strategies: Vec<Strategy> = STRATEGIES
        .into_iter()
        .filter(|s| !results.iter().any(|r| blocks_strategy(r, *s)))
        .collect();
    let safe_expiry_clocks: Vec<ExpiryClock> = CLOCKS
        .into_iter()
        .filter(|c| !results.iter().any(|r| blocks_clock(r, *c)))
        // holder exists only for single-object.
        .filter(|c| *c != ExpiryClock::Holder || safe_strategies.contains(&Strategy::SingleObject))
        .collect();
    let recommended_strategy = if safe_strategies.contains(&strategy) {
        Some(strategy)
    } else {
        safe_strategies.first().copied()
    };
    let config_safe = safe_strategies.contains(&strategy) && safe_expiry_clocks.contains(&clock);

    let failed =
        |c: Capability, v: Verdict| results.iter().any(|r| r.capability == c && r.verdict == v);
    if safe_strategies.contains(&Strategy::EpochObjects)
        && failed(Capability::IfMatchPut, Verdict::Fail)
    {
        notes.push(
            "epoch-objects is safe here but cannot renew or release: renew and release send \
             If-Match, which this store does not evaluate, so a lease lapses after its ttl."
                .into(),
        );
    }
    if safe_expiry_clocks.contains(&ExpiryClock::Holder) {
        notes.push(
            "The holder expiry clock compares the wall clocks of holder and contender: only \
             this machine's was checked; every machine's must be as close."
                .into(),
        );
    }
    notes.push(atomicity_note());
    Report {
        results,
        clock_offset,
        safe_strategies,
        safe_expiry_clocks,
        recommended_strategy,
        config_safe,
        notes,
        requests,
    }
}

//! What a soak records: its share of the one history of lock users
//! (`s3_lease::testing::history`, judged by the checkers the simulation
//! is judged by), plus what only the report reads: the faults that hit
//! leaders and the members' counts.
//!
//! Keys, in the history's order: the elected keys (`k0`, `k1`, ...:
//! limit 1; overlaps on `holder`, whose rule the soak's skewed clocks
//! break on purpose, are counted, not failed), then the semaphore keys
//! (`s0`, ...). The soak knows each grant only within a window (from the
//! start of the step or attempt that granted it to when its member first
//! saw it), so only grants whose windows do not overlap are ordered.
//! Times are microseconds since the run's start (`Shared::us`).

pub use s3_lease::testing::history::{History, Micros, Violation};
use std::collections::BTreeMap;

/// A crash or pause of a process while it led a key.
#[derive(Debug, Clone)]
pub struct LeaderFault {
    pub key: usize,
    pub at: Micros,
    pub crash: bool,
}

/// Everything one member recorded.
#[derive(Debug, Default)]
pub struct Record {
    /// Its grants, believed terms, fenced calls, waits, and the
    /// violations it saw on the spot (a trap, an error that should not
    /// happen, events out of order).
    pub history: History,
    pub leader_faults: Vec<LeaderFault>,
    pub counts: Counts,
}

impl Record {
    /// Adds `other`'s record to this one.
    pub fn absorb(&mut self, other: Record) {
        let (h, o) = (&mut self.history, other.history);
        h.grants.extend(o.grants);
        h.terms.extend(o.terms);
        h.fenced.extend(o.fenced);
        h.waits.extend(o.waits);
        h.violations.extend(o.violations);
        self.leader_faults.extend(other.leader_faults);
        self.counts.add(&other.counts);
    }
}

/// What the members counted.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    /// Events the electors reported.
    pub events: u64,
    pub requests: u64,
    /// Fenced writes not made because their object's history was full.
    pub writes_skipped: u64,
    /// Errors the electors reported (`last_error`, sampled), by kind.
    pub step_errors: BTreeMap<&'static str, u64>,
    /// `try-acquire-slot` answers, by kind.
    pub granted: u64,
    pub queued: u64,
    pub full: u64,
    /// Attempts that failed (a fault's transport, 5xx, 409 or timeout error).
    pub failed: u64,
    /// Slots given back by the member (`release`), and how many of those
    /// releases failed (the slot then runs out).
    pub released: u64,
    pub release_failed: u64,
    /// Slots the guard said lost before the member meant to give them back.
    pub lost_taken: u64,
    pub lost_expired: u64,
    /// Grants the guard never said held (the answer came after its deadline).
    pub never_held: u64,
    /// Places given up on purpose (`--break slot-queue`).
    pub left_queue: u64,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        for (k, v) in &o.step_errors {
            *self.step_errors.entry(*k).or_default() += v;
        }
        let pairs = [
            (&mut self.events, o.events),
            (&mut self.requests, o.requests),
            (&mut self.writes_skipped, o.writes_skipped),
            (&mut self.granted, o.granted),
            (&mut self.queued, o.queued),
            (&mut self.full, o.full),
            (&mut self.failed, o.failed),
            (&mut self.released, o.released),
            (&mut self.release_failed, o.release_failed),
            (&mut self.lost_taken, o.lost_taken),
            (&mut self.lost_expired, o.lost_expired),
            (&mut self.never_held, o.never_held),
            (&mut self.left_queue, o.left_queue),
        ];
        for (mine, theirs) in pairs {
            *mine += theirs;
        }
    }
}

/// The body of a fenced write: who wrote it, with which token, and the
/// run-unique value that names the write.
pub fn body(process: usize, generation: u32, token: u64, value: u64) -> String {
    format!(
        "{{\"process\":{process},\"generation\":{generation},\"token\":{token},\"value\":{value}}}"
    )
}

/// (token, value) from a body written by [`body`].
pub fn parse_body(body: &[u8]) -> Option<(u64, u64)> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    Some((v.get("token")?.as_u64()?, v.get("value")?.as_u64()?))
}

/// `at` in microseconds since `t0` (0 before it).
pub fn micros_since(t0: std::time::Instant, at: std::time::Instant) -> Micros {
    u64::try_from(at.saturating_duration_since(t0).as_micros()).unwrap_or(u64::MAX)
}

//! When each elector acted as leader, on TRUE time, as its caller would
//! act on the step results; and the invariants over those stretches.

use super::super::checks::{violation, Violation};
use crate::elector::{Event, Role, Status};
use std::collections::BTreeMap;

/// How the caller of `step` decides it may act as leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// The contract: from a step that returns `Leader` until its
    /// `leading_until_ms` (a watchdog on the caller's own clock) or until a
    /// later returned step says otherwise, whichever comes first.
    Watchdog,
    /// No watchdog: leader from a step that returns `Leader` until a later
    /// step returns something else. What the host did before the deadline
    /// fix; a step blocked on a silent network keeps it "leading".
    LastStep,
}

/// A stretch of true time in which one elector acted as leader.
#[derive(Debug, Clone, Copy)]
pub struct Term {
    pub elector: usize,
    pub token: u64,
    pub start: u64,
    /// Exclusive. `u64::MAX` while open under `Caller::LastStep`.
    pub end: u64,
}

/// What the run learned from the terms.
#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    /// Tokens granted (`BecameLeader`), used or not.
    pub grants: u64,
    pub terms: u64,
    pub failovers: u64,
    pub overlaps: u64,
    pub worst_overlap_ms: u64,
}

#[derive(Debug)]
pub struct Acting {
    caller: Caller,
    terms: Vec<Term>,
    /// The term each elector may still be in (index into `terms`).
    open: BTreeMap<usize, usize>,
    /// Every token a `BecameLeader` reported, and to whom.
    granted: BTreeMap<u64, usize>,
}

impl Acting {
    pub fn new(caller: Caller) -> Self {
        Acting {
            caller,
            terms: Vec::new(),
            open: BTreeMap::new(),
            granted: BTreeMap::new(),
        }
    }

    pub fn caller(&self) -> Caller {
        self.caller
    }

    /// A step of `elector` returned `status` at true time `now`;
    /// `until` is its `leading_until_ms` as a true instant.
    pub fn stepped(
        &mut self,
        elector: usize,
        now: u64,
        status: &Status,
        until: Option<u64>,
    ) -> Result<(), Violation> {
        for event in &status.events {
            if let Event::BecameLeader(lease) = event {
                if let Some(first) = self.granted.insert(lease.token, elector) {
                    return Err(violation(
                        "a token is granted once",
                        format!(
                            "token {} to elector {first}, then to {elector}",
                            lease.token
                        ),
                    ));
                }
            }
        }
        let Role::Leader(lease) = &status.role else {
            self.stop(elector, now);
            return Ok(());
        };
        let end = match (self.caller, until) {
            (Caller::LastStep, _) => u64::MAX,
            (Caller::Watchdog, Some(until)) => until,
            (Caller::Watchdog, None) => {
                return Err(violation(
                    "a leader says until when",
                    format!("elector {elector} at {now}: {status:?}"),
                ))
            }
        };
        // Still in its term (its watchdog has not fired): the step moves
        // the watchdog. Otherwise a new term starts now.
        if let Some(&i) = self.open.get(&elector) {
            let term = &mut self.terms[i];
            if term.token == lease.token {
                if term.end > now {
                    term.end = end;
                    return Ok(());
                }
                // Safe or not, the contract says a lapsed lease does not
                // lead again (a re-grant has a new token): what a caller
                // that missed the step in between would rely on.
                if self.caller == Caller::Watchdog {
                    return Err(violation(
                        "leadership that lapsed does not come back",
                        format!("elector {elector} at {now}: {term:?}, then {status:?}"),
                    ));
                }
            }
        }
        if end > now {
            self.open.insert(elector, self.terms.len());
            self.terms.push(Term {
                elector,
                token: lease.token,
                start: now,
                end,
            });
        }
        Ok(())
    }

    /// `elector` stops acting at `now` (a step said so, it resigns, or it
    /// crashed).
    pub fn stop(&mut self, elector: usize, now: u64) {
        if let Some(i) = self.open.remove(&elector) {
            let term = &mut self.terms[i];
            term.end = term.end.min(now).max(term.start);
        }
    }

    /// Checks the terms once the run is over at `end`: no two electors act
    /// at once, and tokens rise from one leader to the next. Overlaps are
    /// counted (and the worst kept) before failing, so a run without the
    /// watchdog can report how bad it gets.
    pub fn check(&mut self, end: u64) -> (Summary, Result<(), Violation>) {
        for term in &mut self.terms {
            term.end = term.end.min(end.max(term.start));
        }
        let mut terms: Vec<Term> = self
            .terms
            .iter()
            .copied()
            .filter(|t| t.end > t.start)
            .collect();
        terms.sort_by_key(|t| (t.start, t.elector));
        let mut summary = Summary {
            grants: self.granted.len() as u64,
            terms: terms.len() as u64,
            ..Summary::default()
        };
        let mut result = Ok(());
        for (i, a) in terms.iter().enumerate() {
            for b in &terms[i + 1..] {
                if b.start >= a.end {
                    break;
                }
                if a.elector == b.elector {
                    continue;
                }
                let overlap = a.end.min(b.end) - b.start;
                summary.overlaps += 1;
                if overlap > summary.worst_overlap_ms {
                    summary.worst_overlap_ms = overlap;
                    result = Err(violation(
                        "one leader at a time",
                        format!("{overlap} ms of overlap: {a:?} and {b:?}"),
                    ));
                }
            }
        }
        for pair in terms.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if a.elector != b.elector {
                summary.failovers += 1;
            }
            let same_term = a.elector == b.elector && a.token == b.token;
            if !same_term && b.token <= a.token && result.is_ok() {
                result = Err(violation(
                    "tokens rise from leader to leader",
                    format!("{a:?} then {b:?}"),
                ));
            }
        }
        (summary, result)
    }
}

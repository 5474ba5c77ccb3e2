//! One history of what lock users did and believed, and one set of
//! checkers over it, for the deterministic simulation and the soak alike.
//!
//! A run records, per key: every grant (when its attempt was sent and when
//! it was answered), every stretch in which someone believed it held the
//! key (a *term*: from when the host's guard or elector first said so to
//! the last instant it did), the renewals and releases that succeeded, the
//! waits of fair waiters, and every fenced call with its outcome and the
//! objects' final contents. [`check`] then judges the whole history:
//!
//! - **tokens**: unique per key, and rising in grant order (a grant whose
//!   attempt was answered before another's was sent has the lower token);
//!   where a run knows each acknowledgement exactly, a key of limit 1 also
//!   acknowledges its tokens in rising order;
//! - **exclusion**: at no instant more believed terms of a key than its
//!   limit (1 for a lock or a leader);
//! - **spent leases**: a lease superseded or released never renews or
//!   releases again; on a key of limit 1, a renew or release that succeeds
//!   was sent before any higher token was granted;
//! - **queue order** (fair keys): grants go to live waiters in the order
//!   they joined (see `check::queue_order`);
//! - **fenced objects**: writes accepted in token order only, refusals
//!   naming a higher token, no acknowledged write lost, and each object's
//!   history linearizable (`testing::linearizability`);
//! - and whatever the recorder saw on the spot.
//!
//! Times are microseconds since the run began: virtual time in the
//! simulation, the monotonic clock in the soak.

mod check;
#[cfg(test)]
mod tests;

pub use check::{check, Checked};

use std::fmt;

/// Microseconds since the run began.
pub type Micros = u64;

/// Who did something: an actor (a process, a simulated client), and which
/// of its lives (a crashed actor restarts as a new generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Who {
    pub actor: usize,
    pub generation: u32,
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "actor {} gen {}", self.actor, self.generation)
    }
}

/// What a key promises, so the checkers know what to hold it to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpec {
    pub name: String,
    /// How many may hold it at once (1: a lock, or a leader).
    pub limit: u32,
    /// Waiters are served in queue order.
    pub fair: bool,
    /// Whether overlaps past the limit fail the run. Off only where the
    /// key's clock rule is broken on purpose (`holder` under skewed
    /// clocks): its overlaps are counted, not failed.
    pub exclusion_checked: bool,
    /// The run knows each grant's acknowledgement exactly (the
    /// simulation): on a key of limit 1 they must come in token order.
    pub exact_acks: bool,
}

/// A grant: its attempt was sent at `sent` and answered at `acked`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub key: usize,
    pub who: Who,
    pub token: u64,
    pub sent: Micros,
    pub acked: Micros,
}

/// A stretch `[start, end)` in which `who` believed it held `token` of a
/// key, as its host said (the guard's `is_held`, the elector's role).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub key: usize,
    pub who: Who,
    pub token: u64,
    pub start: Micros,
    pub end: Micros,
    pub ended_by: String,
}

/// A renew or release that succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub key: usize,
    pub who: Who,
    pub token: u64,
    pub sent: Micros,
    pub release: bool,
    /// The lease was already spent (superseded by its holder's own later
    /// grant, or released): it must never have succeeded.
    pub spent: Option<&'static str>,
}

/// What a fenced call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FencedOutcome {
    Written {
        previous_token: Option<u64>,
    },
    /// `fenced-delete` succeeded (it does not say what it replaced).
    Deleted,
    Fenced {
        stored_token: u64,
    },
    /// No clear answer (a transport error, a 5xx, a timeout, or the actor
    /// died during the call): it may land at any later time, or never.
    Unknown(String),
    /// Failed before any write of it went out (its read was refused or
    /// lost): it changed nothing, and is no operation on the object.
    NotSent(String),
}

impl FencedOutcome {
    pub fn accepted(&self) -> bool {
        matches!(self, FencedOutcome::Written { .. } | FencedOutcome::Deleted)
    }
}

/// One fenced put or delete, `[start, end]`. `value` is unique per put in
/// the run and is what a read of the object names it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedOp {
    pub object: String,
    pub who: Who,
    pub token: u64,
    pub value: u64,
    pub delete: bool,
    /// Written after a pause with the lease from before it.
    pub zombie: bool,
    pub start: Micros,
    pub end: Micros,
    pub outcome: FencedOutcome,
}

/// What an object held once the run was over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalRead {
    pub object: String,
    /// `None`: absent or a tombstone.
    pub found: Result<Option<Found>, String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The object's fencing token.
    pub token: u64,
    /// The put that wrote the body, by its value; `None`: a body no put
    /// of the run wrote.
    pub value: Option<u64>,
    /// The token the body itself names, where the run writes it there.
    pub body_token: Option<u64>,
}

/// One wait for a slot of a fair key: from its first attempt to its grant,
/// or to the waiter's crash or the end of the run. The waiter holds one id
/// for the whole wait, so it keeps one place in the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub key: usize,
    pub who: Who,
    /// When its first attempt was sent.
    pub start: Micros,
    /// The first attempt that answered `queued`: (sent, answered).
    pub first_queued: Option<(Micros, Micros)>,
    /// The attempt that answered `granted`: (sent, answered, token).
    pub granted: Option<(Micros, Micros, u64)>,
    /// Until when the waiter surely kept its place: nothing crashed,
    /// paused or stalled it, and it renewed its place in time. A waiter may
    /// lose its place after that, as the contract allows.
    pub kept_place_until: Micros,
    pub end: Micros,
}

/// An invariant broken, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub invariant: &'static str,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.invariant, self.detail)
    }
}

pub fn violation(invariant: &'static str, detail: String) -> Violation {
    Violation { invariant, detail }
}

/// Everything a run recorded.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub keys: Vec<KeySpec>,
    pub grants: Vec<Grant>,
    pub terms: Vec<Term>,
    pub rewrites: Vec<Rewrite>,
    pub fenced: Vec<FencedOp>,
    pub finals: Vec<FinalRead>,
    pub waits: Vec<Wait>,
    /// Seen on the spot by the recorder (a trap, a forged lease that went
    /// out, an error that should not happen).
    pub violations: Vec<Violation>,
}

impl History {
    pub fn new(keys: Vec<KeySpec>) -> Self {
        History {
            keys,
            ..History::default()
        }
    }

    /// The index of the key named `name`.
    pub fn key(&self, name: &str) -> Option<usize> {
        self.keys.iter().position(|k| k.name == name)
    }
}

/// `t` as milliseconds, for messages.
pub fn ms(t: Micros) -> String {
    format!("{}.{:03}", t / 1_000, t % 1_000)
}

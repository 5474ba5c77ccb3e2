//! What a soak records: grants, believed leadership, fenced writes and
//! their outcomes, the faults that hit leaders, the objects' final
//! contents. Times are the host's monotonic `Instant`s.

use std::time::Instant;

/// A grant as its member first saw it leading with the token.
#[derive(Debug, Clone)]
pub struct Grant {
    pub key: usize,
    pub process: usize,
    pub generation: u32,
    pub token: u64,
    /// It was granted between these: no earlier than the start of the step
    /// that granted it (its `leading-until` less the renew deadline), no
    /// later than the member first saw it.
    pub step_start: Instant,
    pub step_end: Instant,
}

/// A span in which one member believed it led one key with one token, as
/// the host elector reported it: from the first observation that it led
/// to the first of the last `leading-until` it observed (the product's
/// promise), the observation that it stopped leading, its process's
/// crash, or the end of the run.
#[derive(Debug, Clone)]
pub struct Term {
    pub key: usize,
    pub process: usize,
    pub generation: u32,
    pub token: u64,
    pub start: Instant,
    pub end: Instant,
    pub ended_by: String,
}

/// What a fenced call returned.
#[derive(Debug, Clone)]
pub enum FencedOutcome {
    Written {
        token: u64,
        etag: String,
        previous_token: Option<u64>,
    },
    /// `fenced-delete` succeeded (it does not say what it replaced).
    Deleted,
    Fenced {
        our_token: u64,
        stored_token: u64,
    },
    /// No clear answer (a transport error, a 5xx, a timeout, or the process
    /// died during the call): it may land at any later time, or never.
    Unknown(String),
}

impl FencedOutcome {
    pub fn accepted(&self) -> bool {
        matches!(self, FencedOutcome::Written { .. } | FencedOutcome::Deleted)
    }
}

#[derive(Debug, Clone)]
pub struct FencedOp {
    pub key: usize,
    pub object: String,
    pub process: usize,
    pub generation: u32,
    pub token: u64,
    /// Unique per write in the run, and inside the body: names what a read finds.
    pub value: u64,
    pub delete: bool,
    /// Written after a pause with the lease from before it, without stepping.
    pub zombie: bool,
    pub start: Instant,
    pub end: Instant,
    pub outcome: FencedOutcome,
}

/// A crash or pause of a process while it led a key.
#[derive(Debug, Clone)]
pub struct LeaderFault {
    pub key: usize,
    pub process: usize,
    pub at: Instant,
    pub crash: bool,
}

/// What `fenced-get` found in an object once the run was over.
#[derive(Debug, Clone)]
pub struct FinalRead {
    pub object: String,
    /// `None`: absent or a tombstone.
    pub found: Result<Option<FoundObject>, String>,
}

#[derive(Debug, Clone)]
pub struct FoundObject {
    pub body: Vec<u8>,
    pub etag: String,
    pub token: u64,
}

/// Everything one member (one process's elector on one key) recorded.
#[derive(Debug, Default)]
pub struct MemberRecord {
    pub grants: Vec<Grant>,
    pub terms: Vec<Term>,
    pub fenced: Vec<FencedOp>,
    pub leader_faults: Vec<LeaderFault>,
    /// Events the elector reported.
    pub events: u64,
    pub requests: u64,
    /// Fenced writes not made because their object was full.
    pub writes_skipped: u64,
    /// Errors the elector reported (`last_error`, sampled), by kind.
    pub step_errors: std::collections::BTreeMap<&'static str, u64>,
    /// Violations seen on the spot (a trap, an error that should not
    /// happen, events out of order).
    pub violations: Vec<Violation>,
}

/// The whole run's history.
#[derive(Debug)]
pub struct History {
    pub t0: Instant,
    pub t_end: Instant,
    pub keys: Vec<super::KeyProfile>,
    pub grants: Vec<Grant>,
    pub terms: Vec<Term>,
    pub fenced: Vec<FencedOp>,
    pub leader_faults: Vec<LeaderFault>,
    pub finals: Vec<FinalRead>,
    /// Seen on the spot by the members.
    pub violations: Vec<Violation>,
}

impl History {
    /// An empty history of a run over `keys` from `t0` to `t_end`.
    pub fn new(t0: Instant, t_end: Instant, keys: Vec<super::KeyProfile>) -> Self {
        History {
            t0,
            t_end,
            keys,
            grants: Vec::new(),
            terms: Vec::new(),
            fenced: Vec::new(),
            leader_faults: Vec::new(),
            finals: Vec::new(),
            violations: Vec::new(),
        }
    }
}

/// An invariant broken, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub invariant: &'static str,
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.invariant, self.detail)
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

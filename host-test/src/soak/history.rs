//! What a soak records: grants, believed leadership, fenced writes and
//! their outcomes, the faults that hit leaders, the objects' final
//! contents; on semaphore keys, slot grants, believed slot terms and the
//! waits of the queue. Times are the host's monotonic `Instant`s.

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
///
/// On a semaphore key, one slot member's belief that it holds a slot: from
/// the answer that granted it (when the slot's guard then said held) to
/// the last sample at which `LeaseGuard::is_held()` said held (samples are
/// [`super::slot_member`]'s `TICK` apart), cut at its process's crash.
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

/// One wait of one slot member for a slot of a semaphore key: from its
/// first attempt to its grant, or to its process's crash or the end of
/// the run. The member holds one id for the whole wait (a fresh one per
/// wait), so a fair waiter keeps one place in the queue.
#[derive(Debug, Clone)]
pub struct Wait {
    /// The semaphore key's index (`History::slot_keys`).
    pub key: usize,
    pub process: usize,
    pub generation: u32,
    /// When its first attempt was sent.
    pub start: Instant,
    /// The first attempt that answered `queued`: (sent, answered). The
    /// waiter was in the queue from no later than its answer.
    pub first_queued: Option<(Instant, Instant)>,
    /// The attempt that answered `granted`: (sent, answered, token).
    pub granted: Option<(Instant, Instant, u64)>,
    /// Until when the waiter surely kept its place: its process neither
    /// crashed nor paused, and no two of its `queued` answers (from the
    /// first) were sent more than `KEEP_PLACE_GAP` apart (a stalled or
    /// failing waiter may lose its place, as the contract allows). Up to
    /// the end of the wait when nothing broke it.
    pub kept_place_until: Instant,
    /// The earliest instant at which its process's wall clock may have
    /// stepped back during the wait, if it did: the waiter then judges its
    /// place's renewal not yet due, against the expiry it wrote on the old
    /// clock, and may lose the place (a defect of the core, since fixed).
    pub clock_stepped_back: Option<Instant>,
    /// When the first attempt was sent that failed after one of its writes
    /// got no clear answer (a lost reply, a timeout, a 5xx), if one did:
    /// that write may have granted the waiter a slot it does not know of,
    /// which its next attempt drops, sending it to the back of the queue
    /// (a defect of the core, since fixed).
    pub unclear_write: Option<Instant>,
    /// The end of the wait (its grant's answer, a crash, the end of the run).
    pub end: Instant,
}

/// What the slot members counted, summed over the run.
#[derive(Debug, Default, Clone)]
pub struct SlotCounts {
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

impl SlotCounts {
    pub fn add(&mut self, o: &SlotCounts) {
        self.granted += o.granted;
        self.queued += o.queued;
        self.full += o.full;
        self.failed += o.failed;
        self.released += o.released;
        self.release_failed += o.release_failed;
        self.lost_taken += o.lost_taken;
        self.lost_expired += o.lost_expired;
        self.never_held += o.never_held;
        self.left_queue += o.left_queue;
    }
}

/// Everything one slot member (one process's client on one semaphore
/// key) recorded. Its grants and terms use the semaphore key's index.
#[derive(Debug, Default)]
pub struct SlotRecord {
    pub grants: Vec<Grant>,
    pub terms: Vec<Term>,
    pub waits: Vec<Wait>,
    pub counts: SlotCounts,
    pub requests: u64,
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
    /// The semaphore keys, and what their slot members recorded: grants
    /// and believed terms (`key` is the semaphore key's index) and waits.
    pub slot_keys: Vec<super::SlotKeyProfile>,
    pub slot_grants: Vec<Grant>,
    pub slot_terms: Vec<Term>,
    pub waits: Vec<Wait>,
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
            slot_keys: Vec::new(),
            slot_grants: Vec::new(),
            slot_terms: Vec::new(),
            waits: Vec::new(),
            violations: Vec::new(),
        }
    }
}

/// An invariant broken, and what was seen: the checkers' own type.
pub use s3_lease::testing::history::Violation;

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

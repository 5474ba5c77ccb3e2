//! The crate's own types: what a caller passes and gets back. They are
//! ours, not the generated bindings', so a change of the component's
//! contract does not change them unless the caller would see it;
//! `#[non_exhaustive]` lets a minor release add a case or a field.

use s3_lease_keep::leadership;
use std::time::Duration;

/// The contract's names, defined once for the component's core, this
/// crate and the guest crate (`s3_lease_keep::vocabulary`): how a key's
/// lock lives in the store ([`Strategy`]), which clock decides that a lease
/// nobody released has expired ([`ExpiryClock`]), how bucket requests are
/// addressed ([`Addressing`]), what the store preflight checks
/// ([`Capability`]) and what a probe showed ([`Verdict`]). Each has
/// `name()` (the contract's, the command line's and JSON's), `from_name`
/// and `Display`.
pub use s3_lease_keep::vocabulary::{Addressing, Capability, ExpiryClock, Strategy, Verdict};

/// Why leadership ended: the leadership machine's
/// (`s3_lease_keep::leadership`), as the component's elector reports it.
pub use s3_lease_keep::leadership::StopReason;

/// The contract's plain records, defined once for the component's core,
/// this crate and the guest crate (`s3_lease_keep::records`): AWS keys
/// ([`Credentials`], `Debug` shows the key id only), an elector's
/// parameters ([`ElectorConfig`]), and what the preflight found of one
/// capability ([`CapabilityResult`]) and of the clocks ([`ClockOffset`]).
/// And what an accepted fenced write stored ([`FencedWrite`]).
pub use s3_lease_keep::records::{
    CapabilityResult, ClockOffset, Credentials, ElectorConfig, FencedWrite,
};

/// How to take a lock: its ttl, who holds it, what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AcquireOptions {
    /// How long a lease lasts without a renew (1 ms ..= 7 days).
    pub ttl: Duration,
    /// Who holds it; the same holder id takes over its own live lease.
    /// Default: one chosen per wait.
    pub holder_id: Option<String>,
    /// Up to 4 KiB kept in the lock object, for readers.
    pub metadata: Option<String>,
    /// A held lease counts as held for this long after the send of the
    /// write that granted or last renewed it, and renews every third of
    /// it (at most the ttl). Default: nine tenths of the ttl; a supervisor
    /// that needs time to stop what it runs passes less (`s3-lease run`
    /// passes half).
    pub deadline: Option<Duration>,
}

impl AcquireOptions {
    /// The ttl in the contract's milliseconds: the one place it is
    /// converted, for the request and for the waits paced by it.
    pub(crate) fn ttl_ms(&self) -> u64 {
        millis(self.ttl)
    }

    pub fn new(ttl: Duration) -> Self {
        AcquireOptions {
            ttl,
            holder_id: None,
            metadata: None,
            deadline: None,
        }
    }

    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    pub fn holder_id(mut self, holder_id: impl Into<String>) -> Self {
        self.holder_id = Some(holder_id.into());
        self
    }

    pub fn metadata(mut self, metadata: impl Into<String>) -> Self {
        self.metadata = Some(metadata.into());
        self
    }
}

/// A semaphore's slot options: how many may hold the key at once, and
/// whether waiters are served in the order they asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlotOptions {
    /// 1 ..= 64; every contender of a key passes the same.
    pub limit: u32,
    pub fair: bool,
}

impl SlotOptions {
    pub fn new(limit: u32) -> Self {
        SlotOptions { limit, fair: false }
    }

    /// Wait in the key's queue: slots go to live waiters in the order
    /// they joined.
    pub fn fair(mut self, fair: bool) -> Self {
        self.fair = fair;
        self
    }
}

/// A granted lease, as plain data: the record a holder keeps (a file, a
/// database, another process) and hands back to renew, release and fence
/// with. Sealed: an altered copy is refused before anything is written.
///
/// Its instants are the contract's milliseconds since the Unix epoch, not
/// `SystemTime`s: the seal covers them to the millisecond, so a record
/// kept and read back must carry them exactly as they came.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseRecord {
    /// The key as the caller named it.
    pub key: String,
    /// The fencing token: rises on every grant of the key, never reused.
    pub token: u64,
    pub holder_id: String,
    /// The lock object's entity tag after our last write.
    pub etag: String,
    /// When it lapses unless renewed (the holder's wall clock, ms since
    /// the Unix epoch).
    pub expires_at_ms: u64,
    /// When it was granted (the holder's wall clock).
    pub acquired_at_ms: u64,
    /// The ttl renewals extend it by.
    pub ttl: Duration,
    pub metadata: String,
    /// The seal (opaque).
    pub seal: String,
}

impl LeaseRecord {
    /// A record read back from where the caller kept it: `key`, `token`
    /// and `seal` here, the other fields by the `with_` methods, each as it
    /// was kept (the component checks the seal over all of them before
    /// using the record).
    pub fn new(key: impl Into<String>, token: u64, seal: impl Into<String>) -> Self {
        LeaseRecord {
            key: key.into(),
            token,
            holder_id: String::new(),
            etag: String::new(),
            expires_at_ms: 0,
            acquired_at_ms: 0,
            ttl: Duration::ZERO,
            metadata: String::new(),
            seal: seal.into(),
        }
    }

    /// The ttl in the contract's milliseconds: the one place it is
    /// converted, for the record sent back and for the lease's timing.
    pub(crate) fn ttl_ms(&self) -> u64 {
        millis(self.ttl)
    }

    pub fn with_holder_id(mut self, holder_id: impl Into<String>) -> Self {
        self.holder_id = holder_id.into();
        self
    }

    pub fn with_etag(mut self, etag: impl Into<String>) -> Self {
        self.etag = etag.into();
        self
    }

    pub fn with_expires_at_ms(mut self, expires_at_ms: u64) -> Self {
        self.expires_at_ms = expires_at_ms;
        self
    }

    pub fn with_acquired_at_ms(mut self, acquired_at_ms: u64) -> Self {
        self.acquired_at_ms = acquired_at_ms;
        self
    }

    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    pub fn with_metadata(mut self, metadata: impl Into<String>) -> Self {
        self.metadata = metadata.into();
        self
    }
}

/// A key's lock as read now. Its instants are milliseconds since the Unix
/// epoch as the lock object records them (a holder's wall clock, or the
/// store's), not `SystemTime`s: they are the object's own values, shown
/// and compared as written; `expires_in` is the duration a caller acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockState {
    pub key: String,
    /// `None` when the object records no holder (a client of the plain
    /// design wrote it, or a semaphore: see [`SemaphoreState`]).
    pub holder_id: Option<String>,
    /// The last token granted; `None` when the object records none.
    pub token: Option<u64>,
    /// 0 once released (the holder's wall clock, or the store's).
    pub expires_at_ms: u64,
    pub acquired_at_ms: Option<u64>,
    pub metadata: String,
    pub etag: String,
    /// Not released, and not expired by the client's expiry clock.
    pub live: bool,
    /// How long until the clock that judges `live` first calls it expired.
    pub expires_in: Duration,
}

/// One holder of a semaphore's slot, or one waiter in its queue. Its
/// instants are milliseconds since the Unix epoch as the semaphore's object
/// records them (see [`LockState`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlotEntry {
    pub holder_id: String,
    /// The slot's fencing token; `None` for a waiter.
    pub token: Option<u64>,
    pub expires_at_ms: u64,
    pub acquired_at_ms: u64,
    pub metadata: String,
    pub live: bool,
    pub expires_in: Duration,
}

/// A semaphore's holders and queue, as read now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SemaphoreState {
    pub lock: LockState,
    pub limit: u32,
    /// In the order granted.
    pub holders: Vec<SlotEntry>,
    /// In the order joined: the order slots go to live waiters.
    pub queue: Vec<SlotEntry>,
}

/// A fenced object as read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FencedObject {
    pub object_key: String,
    pub body: Vec<u8>,
    pub etag: String,
    pub content_type: String,
    /// The token of the write that stored it (`None`: written without one).
    pub token: Option<u64>,
}

/// How a fenced write treats a stored object with its own token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct FenceOptions {
    /// Refuse an object written under the same token too (strict `<`).
    pub reject_equal_token: bool,
}

impl FenceOptions {
    pub fn reject_equal_token(mut self, reject: bool) -> Self {
        self.reject_equal_token = reject;
        self
    }
}

/// Where an elector stands: the leadership machine's role
/// (`s3_lease_keep::leadership`) over the crate's lease record and lock
/// state. `Leader(record)`: it leads with this lease (fence what it writes
/// with its token); `Follower(seen)`: someone else leads (when known: the
/// state last read); `Candidate`: nobody is known to lead, or the last
/// attempt failed.
pub type Role = leadership::Role<LeaseRecord, LockState>;

/// What an elector saw, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElectionEvent {
    BecameLeader(LeaseRecord),
    StoppedLeading(StopReason),
    LeaderChanged(Option<LockState>),
    /// The elector could not go on (a bug: the component trapped); if it
    /// was leading, it no longer is.
    Failed(String),
}

// The leadership machine's events as the public type says them (it adds
// `Failed`, which only the host's driver can see).
impl From<leadership::Event<LeaseRecord, LockState>> for ElectionEvent {
    fn from(event: leadership::Event<LeaseRecord, LockState>) -> Self {
        match event {
            leadership::Event::BecameLeader(lease) => ElectionEvent::BecameLeader(lease),
            leadership::Event::StoppedLeading(reason) => ElectionEvent::StoppedLeading(reason),
            leadership::Event::LeaderChanged(seen) => ElectionEvent::LeaderChanged(seen),
        }
    }
}

/// What the store preflight found: the contract's record, defined once in
/// keep.
pub use s3_lease_keep::records::PreflightReport;

/// Whole milliseconds, as the contract counts time; "forever" past what a
/// `u64` holds. The one conversion of a `Duration` to the contract's
/// milliseconds.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

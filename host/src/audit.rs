//! The grant log as the host gives it (see the WIT's `audit`): a key's
//! grants, what `audit_verify` found, what `audit_prune` deleted. Every
//! instant here is the store's clock, in milliseconds since the Unix
//! epoch, as the log records it. `component`, the one seam, converts the
//! contract's records into these.

/// How a grant ended, as far as the store shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuditEnd {
    Released,
    /// Not released: a later grant took the key once it had expired.
    Expired,
    /// Not released: its own holder id took the key again.
    TakenOver,
    /// Still held, by the lock object as read now.
    Held,
    /// Nothing in the store says.
    Unknown,
}

impl AuditEnd {
    /// The contract's name: `released`, `expired`, `taken-over`, `held`,
    /// `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            AuditEnd::Released => "released",
            AuditEnd::Expired => "expired",
            AuditEnd::TakenOver => "taken-over",
            AuditEnd::Held => "held",
            AuditEnd::Unknown => "unknown",
        }
    }
}

/// One grant of a key, from its grant log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditEntry {
    pub token: u64,
    pub holder_id: String,
    pub ttl_ms: u64,
    /// The grant's write; `None` for a back-filled record.
    pub granted_at_ms: Option<u64>,
    pub ended: AuditEnd,
    pub ended_at_ms: Option<u64>,
    pub held_ms: Option<u64>,
    /// The holder, or the grantee that back-filled the record.
    pub written_by: String,
    pub backfilled: bool,
}

/// What a finding of `audit_verify` shows (`name()` gives the contract's
/// name, `token-repeated`, ...).
pub use s3_lease_keep::vocabulary::AuditFindingKind;

/// One thing `audit_verify` found, with its evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditFinding {
    pub kind: AuditFindingKind,
    pub token: u64,
    /// What was seen, with the store's times. Read from the store: escape
    /// it before it reaches a terminal.
    pub detail: String,
    /// The records or objects it rests on (full object keys).
    pub evidence: Vec<String>,
}

/// What `audit_verify` found of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditReport {
    pub key: String,
    pub first_token: u64,
    pub last_token: u64,
    pub grants: u64,
    pub backfilled: u64,
    /// Empty: the log proves no two holders overlapped.
    pub findings: Vec<AuditFinding>,
    /// Some finding shows two holders at once, or a token granted twice.
    pub overlapped: bool,
}

impl AuditReport {
    /// No finding: proven.
    pub fn proven(&self) -> bool {
        self.findings.is_empty()
    }
}

/// What `audit_prune` deleted: the records of tokens `first_token` up to
/// (not including) `below_token`, where the log now starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditPruned {
    pub first_token: u64,
    pub below_token: u64,
}

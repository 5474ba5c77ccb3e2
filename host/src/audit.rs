//! The grant log as the host gives it (see the WIT's `audit`): a key's
//! grants, what `audit_verify` found, what `audit_prune` deleted. Every
//! instant here is the store's clock, in milliseconds since the Unix
//! epoch, as the log records it.

use crate::engine::bindings::exports::s3_lease::lease::types as wit;

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

/// What a finding of `audit_verify` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuditFindingKind {
    TokenRepeated,
    MissedGrant,
    TakenWhileLive,
    OverLimit,
    UnexplainedGap,
    NotOnStoreClock,
    Unreadable,
    FencedUnknownToken,
    FencedTokenFell,
}

impl AuditFindingKind {
    /// The contract's name (`token-repeated`, ...).
    pub fn name(self) -> &'static str {
        match self {
            AuditFindingKind::TokenRepeated => "token-repeated",
            AuditFindingKind::MissedGrant => "missed-grant",
            AuditFindingKind::TakenWhileLive => "taken-while-live",
            AuditFindingKind::OverLimit => "over-limit",
            AuditFindingKind::UnexplainedGap => "unexplained-gap",
            AuditFindingKind::NotOnStoreClock => "not-on-store-clock",
            AuditFindingKind::Unreadable => "unreadable",
            AuditFindingKind::FencedUnknownToken => "fenced-unknown-token",
            AuditFindingKind::FencedTokenFell => "fenced-token-fell",
        }
    }
}

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

pub(crate) fn from_entry(e: wit::AuditEntry) -> AuditEntry {
    AuditEntry {
        token: e.token,
        holder_id: e.holder_id,
        ttl_ms: e.ttl_ms,
        granted_at_ms: e.granted_at_ms,
        ended: match e.ended {
            wit::AuditEnd::Released => AuditEnd::Released,
            wit::AuditEnd::Expired => AuditEnd::Expired,
            wit::AuditEnd::TakenOver => AuditEnd::TakenOver,
            wit::AuditEnd::Held => AuditEnd::Held,
            wit::AuditEnd::Unknown => AuditEnd::Unknown,
        },
        ended_at_ms: e.ended_at_ms,
        held_ms: e.held_ms,
        written_by: e.written_by,
        backfilled: e.backfilled,
    }
}

pub(crate) fn from_report(r: wit::AuditReport) -> AuditReport {
    AuditReport {
        key: r.key,
        first_token: r.first_token,
        last_token: r.last_token,
        grants: r.grants,
        backfilled: r.backfilled,
        overlapped: r.overlapped,
        findings: r
            .findings
            .into_iter()
            .map(|f| AuditFinding {
                kind: match f.kind {
                    wit::AuditFindingKind::TokenRepeated => AuditFindingKind::TokenRepeated,
                    wit::AuditFindingKind::MissedGrant => AuditFindingKind::MissedGrant,
                    wit::AuditFindingKind::TakenWhileLive => AuditFindingKind::TakenWhileLive,
                    wit::AuditFindingKind::OverLimit => AuditFindingKind::OverLimit,
                    wit::AuditFindingKind::UnexplainedGap => AuditFindingKind::UnexplainedGap,
                    wit::AuditFindingKind::NotOnStoreClock => AuditFindingKind::NotOnStoreClock,
                    wit::AuditFindingKind::Unreadable => AuditFindingKind::Unreadable,
                    wit::AuditFindingKind::FencedUnknownToken => {
                        AuditFindingKind::FencedUnknownToken
                    }
                    wit::AuditFindingKind::FencedTokenFell => AuditFindingKind::FencedTokenFell,
                },
                token: f.token,
                detail: f.detail,
                evidence: f.evidence,
            })
            .collect(),
    }
}

pub(crate) fn from_pruned(p: wit::AuditPruned) -> AuditPruned {
    AuditPruned {
        first_token: p.first_token,
        below_token: p.below_token,
    }
}

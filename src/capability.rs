//! What the store preflight reports on, below the error enum that carries a
//! failed capability (`Error::StoreUnsafe`): the capabilities a lock rests
//! on, a verdict on each, and the evidence. The probes that decide them are
//! `preflight`.

use crate::prelude::*;

/// What the preflight checks, in the order it reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Capability {
    /// `If-None-Match: *` on an existing key is refused (and accepted on a
    /// new one): how a first grant is made.
    IfNoneMatchExisting,
    /// `If-Match` with a wrong ETag is refused on PUT, the right one is
    /// accepted, and the ETag changes with the body: compare-and-swap.
    IfMatchPut,
    /// `If-Match` on a missing key is refused (AWS: 404, SeaweedFS: 412).
    IfMatchMissingKey,
    /// `If-Match` with a wrong ETag is refused on DELETE, the right one accepted.
    IfMatchDelete,
    /// Replies carry `Date`, reads carry `Last-Modified`, on one clock.
    ServerDates,
    /// LIST with `start-after` starts after that key.
    ListStartAfter,
    /// GET with `If-None-Match` answers 304 for the object's ETag, and the
    /// object for any other.
    ConditionalGet,
    /// A body whose `x-amz-content-sha256` does not match is refused.
    PayloadHash,
    /// This machine's wall clock against the store's `Date`.
    ClockOffset,
    /// DynamoDB: the table exists, keyed by one string partition key `key`.
    TableKeySchema,
    /// DynamoDB: the table's TTL cannot sweep a lock item (it is not on
    /// `token`, the one number they carry). Off, or on any other
    /// attribute, passes.
    TtlAttribute,
    /// Of writers racing to create one new key with `If-None-Match: *`,
    /// exactly one wins, round after round (see `preflight::race`).
    ConcurrentCreate,
    /// Of writers racing to update one key with `If-Match` on the same
    /// ETag, exactly one wins, round after round.
    ConcurrentUpdate,
}

impl Capability {
    /// What the S3 preflight probes, in its order.
    pub const S3_PROBES: [Capability; 9] = [
        Capability::IfNoneMatchExisting,
        Capability::IfMatchPut,
        Capability::IfMatchMissingKey,
        Capability::IfMatchDelete,
        Capability::ServerDates,
        Capability::ListStartAfter,
        Capability::ConditionalGet,
        Capability::PayloadHash,
        Capability::ClockOffset,
    ];

    /// The WIT name.
    pub fn name(self) -> &'static str {
        match self {
            Capability::IfNoneMatchExisting => "if-none-match-existing",
            Capability::IfMatchPut => "if-match-put",
            Capability::IfMatchMissingKey => "if-match-missing-key",
            Capability::IfMatchDelete => "if-match-delete",
            Capability::ServerDates => "server-dates",
            Capability::ListStartAfter => "list-start-after",
            Capability::ConditionalGet => "conditional-get",
            Capability::PayloadHash => "payload-hash",
            Capability::ClockOffset => "clock-offset",
            Capability::TableKeySchema => "table-key-schema",
            Capability::TtlAttribute => "ttl-attribute",
            Capability::ConcurrentCreate => "concurrent-create",
            Capability::ConcurrentUpdate => "concurrent-update",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// Not decided: no reply, an odd one, or its probe could not run.
    Unknown,
}

/// One capability's verdict and the evidence for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapabilityResult {
    pub capability: Capability,
    pub verdict: Verdict,
    /// The status of the reply that decided it; `None` when none did.
    pub status: Option<u16>,
    /// That reply's S3 error code; empty when it had none.
    pub code: String,
    /// What was seen, and what it means for a lock.
    pub detail: String,
    /// The store did what a condition forbade (or called a changed object
    /// unchanged): it breaks conditions without saying so, and no strategy
    /// is safe on it.
    pub silent: bool,
}

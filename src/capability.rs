//! What the store preflight reports on, below the error enum that carries a
//! failed capability (`Error::StoreUnsafe`): the capabilities a lock rests
//! on, a verdict on each, and the evidence. The probes that decide them are
//! `preflight`.

use crate::prelude::*;

/// What the preflight checks, and its verdicts: the contract's names,
/// defined once for the core, the host crate and the guest crate.
pub use s3_lease_keep::vocabulary::{Capability, Verdict};

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

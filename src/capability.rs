//! What the store preflight reports on, below the error enum that carries a
//! failed capability (`Error::StoreUnsafe`): the capabilities a lock rests
//! on, a verdict on each, and the evidence. The probes that decide them are
//! `preflight`.

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

/// One capability's verdict and the evidence for it: defined once for the
/// core, the host crate and the guest crate.
pub use s3_lease_keep::records::CapabilityResult;

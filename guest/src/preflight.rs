//! What `Client::preflight` found, as plain Rust: the contract's
//! `preflight-report`, a capability named as the WIT names it (as
//! `Error::StoreUnsafe` does), durations as `Duration`.

use crate::config::{ExpiryClock, Strategy};
use std::time::Duration;

/// The store's capabilities, probed with real requests, and which
/// strategies and expiry clocks are safe on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreflightReport {
    /// One per capability, in the contract's order.
    pub results: Vec<CapabilityResult>,
    /// This machine's wall clock minus the store's, when replies had dates.
    pub clock_offset: Option<ClockOffset>,
    pub safe_strategies: Vec<Strategy>,
    pub safe_expiry_clocks: Vec<ExpiryClock>,
    /// The configured strategy when safe, else the other when that is.
    pub recommended_strategy: Option<Strategy>,
    /// This client's strategy and expiry clock are both safe here.
    pub config_safe: bool,
    /// How many writers raced; scratch objects that could not be deleted.
    pub notes: Vec<String>,
    /// Requests sent.
    pub requests: u32,
}

/// One capability's verdict, with the reply that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapabilityResult {
    /// As the WIT names it: `if-match-put`, `concurrent-create`, ...
    pub capability: String,
    pub verdict: Verdict,
    /// HTTP status of the deciding reply; `None` when no reply decided.
    pub status: Option<u16>,
    /// Its error code; empty when it had none.
    pub code: String,
    /// What was seen and what it means for a lock.
    pub detail: String,
    /// The store did what a condition forbade without saying so: no
    /// strategy is safe on it.
    pub silent: bool,
}

/// What a probe showed: the contract's name.
pub use s3_lease_keep::vocabulary::Verdict;

/// From the `Date` of the replies: whole seconds, hence the uncertainty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockOffset {
    /// Positive: this machine is ahead of the store.
    pub offset_ms: i64,
    pub uncertainty: Duration,
}

//! Leader election as plain Rust: an elector's parameters and what one
//! step of it reports. The calls are `Client::elector`, `Elector::step` and
//! `Elector::resign` (each build's own file); these types are the
//! contract's `elector-config`, `step-result`, `role` and `elector-event`
//! with durations as `Duration`.

use crate::error::Error;
use crate::types::{Lease, LockState};
use std::time::Duration;

/// An elector's parameters: client-go's three durations, as the host
/// crate has them (defined once for both, with this crate's `with_`
/// setters and the host crate's plain ones). The component checks
/// `0 < retry_period < renew_deadline < lease_duration` and refuses others
/// with `Error::InvalidArgument`; durations are sent in whole milliseconds,
/// one beyond `u64` milliseconds as the largest (refused by the same rule).
pub use s3_lease_keep::records::ElectorConfig;

/// Where an elector stands after a step: the leadership machine's role
/// (`s3_lease_keep::leadership`) over this crate's lease and lock state.
/// `Leader(lease)`: it leads with this lease (pass its token to what it
/// writes, and stop acting as leader at [`Step::leading_until`]);
/// `Follower(seen)`: someone else leads, as last read (when known);
/// `Candidate`: nobody is known to lead, or the last attempt failed; it
/// keeps trying.
pub type Role = s3_lease_keep::leadership::Role<Lease, LockState>;

/// Why a leader stopped leading: the leadership machine's.
pub use s3_lease_keep::leadership::StopReason;

/// What happened since the previous step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElectorEvent {
    BecameLeader(Lease),
    StoppedLeading(StopReason),
    /// The leader as last read changed; `None`: nobody leads now.
    LeaderChanged(Option<LockState>),
}

/// What one step found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub role: Role,
    /// Since the previous step, in order.
    pub events: Vec<ElectorEvent>,
    /// Step again after this long (sooner is allowed).
    pub next_step_in: Duration,
    /// While leading: the instant on the component's monotonic clock
    /// (`wasi:clocks/monotonic-clock.now`, nanoseconds: compare with
    /// `Duration::from_nanos(now)`), at whole milliseconds, at which
    /// leadership ends
    /// unless a later step renews it. Stop acting as leader then, whether
    /// or not a later step has returned. `None` when not leading.
    pub leading_until: Option<Duration>,
    /// Why this step's attempt failed, if it did; the elector keeps trying,
    /// and a leader keeps leading until its deadline.
    pub last_error: Option<Error>,
}

impl Step {
    /// The lease while leading.
    pub fn leader(&self) -> Option<&Lease> {
        match &self.role {
            Role::Leader(lease) => Some(lease),
            Role::Follower(_) | Role::Candidate => None,
        }
    }
}

#[cfg(test)]
mod tests;

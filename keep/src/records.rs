//! The contract's plain records that the component's core, the host crate
//! and the guest crate read alike, defined once: AWS keys
//! ([`Credentials`]), one capability's preflight verdict
//! ([`CapabilityResult`]), the store's clock against ours
//! ([`ClockOffset`]), an elector's parameters ([`ElectorConfig`]), and
//! what a fenced write stored ([`FencedWrite`]) and a fenced read found
//! ([`FencedObject`]).
//! Each crate re-exports them under its own paths and converts them to
//! its generated twins with [`same_fields!`](crate::same_fields).

use crate::vocabulary::{Capability, ExpiryClock, Strategy, Verdict};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

/// AWS keys, as SigV4 signs with them. `Debug` shows the key
/// id only: never the secret or the session token.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    /// Set for temporary credentials (STS, roles).
    pub session_token: Option<String>,
}

impl Credentials {
    pub fn new(access_key_id: impl Into<String>, secret_access_key: impl Into<String>) -> Self {
        Credentials {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: None,
        }
    }

    /// With a session token (temporary credentials: STS, roles).
    pub fn with_session_token(mut self, token: impl Into<String>) -> Self {
        self.session_token = Some(token.into());
        self
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// One capability's verdict, and the evidence for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapabilityResult {
    pub capability: Capability,
    pub verdict: Verdict,
    /// The status of the reply that decided it; `None` when none did.
    pub status: Option<u16>,
    /// That reply's error code; empty when it had none.
    pub code: String,
    /// What was seen, and what it means for a lock.
    pub detail: String,
    /// The store did what a condition forbade (or called a changed object
    /// unchanged): it breaks conditions without saying so, and no strategy
    /// is safe on it.
    pub silent: bool,
}

/// This machine's wall clock minus the store's, as the preflight measured
/// it from the `Date` of its replies (whole seconds, hence the
/// uncertainty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockOffset {
    /// Positive: this machine is ahead (signed: a `Duration` cannot say
    /// which clock is ahead).
    pub offset_ms: i64,
    pub uncertainty_ms: u64,
}

impl ClockOffset {
    /// The largest offset the bounds allow, either way.
    pub fn worst_ms(&self) -> u64 {
        self.offset_ms
            .unsigned_abs()
            .saturating_add(self.uncertainty_ms)
    }
}

/// What the store preflight found (the contract's `preflight-report`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreflightReport {
    /// One per capability probed, in the order they were probed.
    pub results: Vec<CapabilityResult>,
    pub clock_offset: Option<ClockOffset>,
    pub safe_strategies: Vec<Strategy>,
    pub safe_expiry_clocks: Vec<ExpiryClock>,
    /// The configured strategy when it is safe, else the other one when
    /// that is, else none.
    pub recommended_strategy: Option<Strategy>,
    /// The configured strategy and expiry clock are both safe here.
    pub config_safe: bool,
    /// What no single instance can check, and scratch objects left behind.
    pub notes: Vec<String>,
    /// Requests the probes sent.
    pub requests: u32,
}

/// A store's error reply as people read it, after `status` (the status as
/// the caller shows it): ` AccessDenied: the message (request id X)`, each
/// part left out when the reply had none.
pub fn show_store_error(
    f: &mut fmt::Formatter<'_>,
    status: fmt::Arguments<'_>,
    code: &str,
    message: &str,
    request_id: &str,
) -> fmt::Result {
    f.write_fmt(status)?;
    if !code.is_empty() {
        write!(f, " {code}")?;
    }
    if !message.is_empty() {
        write!(f, ": {message}")?;
    }
    if !request_id.is_empty() {
        write!(f, " (request id {request_id})")?;
    }
    Ok(())
}

/// What a fenced write stored (the contract's `fenced-write`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedWrite {
    pub object_key: String,
    pub etag: String,
    /// The lease's token, now recorded on the object.
    pub token: u64,
    /// The token recorded before (0: a plain PUT); `None`: a new object.
    pub previous_token: Option<u64>,
}

/// An object written by a fenced write, as read now (the contract's
/// `fenced-object`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedObject {
    pub object_key: String,
    pub body: Vec<u8>,
    pub content_type: String,
    pub etag: String,
    /// The token of the write that stored this body; 0 for a plain PUT.
    pub token: u64,
}

/// An elector's parameters: client-go's three durations, which the
/// component checks as `0 < retry_period < renew_deadline <
/// lease_duration` (and refuses others as an invalid argument). They
/// travel as whole milliseconds; one beyond `u64` milliseconds as the
/// largest, refused by the same rule.
///
/// The setters come in two spellings, the same setters: the host crate's
/// (`lease_duration`, ...) and the guest crate's (`with_lease_duration`,
/// ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectorConfig {
    /// The key campaigned for (without the configured prefix).
    pub key: String,
    /// The ttl of the lease the leader holds and renews (default 15 s).
    pub lease_duration: Duration,
    /// Leadership ends this long after the last successful renew was
    /// *sent*, by the monotonic clock (default 10 s).
    pub renew_deadline: Duration,
    /// How often a leader renews and a follower looks (default 2 s).
    pub retry_period: Duration,
    /// Default: a random id, fresh for this elector.
    pub holder_id: Option<String>,
    /// Stored in the lock object for followers and operators.
    pub metadata: Option<String>,
}

impl ElectorConfig {
    /// `key` with client-go's defaults: 15 s lease, 10 s renew deadline,
    /// 2 s retry period.
    pub fn new(key: impl Into<String>) -> Self {
        ElectorConfig {
            key: key.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            holder_id: None,
            metadata: None,
        }
    }

    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
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

    pub fn with_lease_duration(self, d: Duration) -> Self {
        self.lease_duration(d)
    }

    pub fn with_renew_deadline(self, d: Duration) -> Self {
        self.renew_deadline(d)
    }

    pub fn with_retry_period(self, d: Duration) -> Self {
        self.retry_period(d)
    }

    pub fn with_holder_id(self, holder_id: impl Into<String>) -> Self {
        self.holder_id(holder_id)
    }

    pub fn with_metadata(self, metadata: impl Into<String>) -> Self {
        self.metadata(metadata)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_secret() {
        let keys = Credentials::new("AKID", "very-secret").with_session_token("session-secret");
        let shown = alloc::format!("{keys:?}");
        assert!(shown.contains("AKID"), "{shown}");
        assert!(!shown.contains("secret\""), "{shown}");
        assert!(!shown.contains("very-secret") && !shown.contains("session-secret"));
    }

    #[test]
    fn both_spellings_set_the_same_fields() {
        let d = Duration::from_millis;
        let host = ElectorConfig::new("k")
            .lease_duration(d(30))
            .renew_deadline(d(20))
            .retry_period(d(5))
            .holder_id("h")
            .metadata("m");
        let guest = ElectorConfig::new("k")
            .with_lease_duration(d(30))
            .with_renew_deadline(d(20))
            .with_retry_period(d(5))
            .with_holder_id("h")
            .with_metadata("m");
        assert_eq!(host, guest);
        assert_eq!(host.retry_period, d(5));
        assert_eq!(
            ElectorConfig::new("k").lease_duration,
            Duration::from_secs(15)
        );
    }

    #[test]
    fn the_worst_offset_is_either_way() {
        let o = |offset_ms, uncertainty_ms| ClockOffset {
            offset_ms,
            uncertainty_ms,
        };
        assert_eq!(o(-2_000, 500).worst_ms(), 2_500);
        assert_eq!(o(i64::MIN, u64::MAX).worst_ms(), u64::MAX);
    }
}

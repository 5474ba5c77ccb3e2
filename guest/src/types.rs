//! The contract's records, as plain Rust: what a grant, a lock and a fenced
//! object look like to a guest. Field for field the WIT records of
//! `s3-lease:lease/types` (`wit/lease.wit`), times in milliseconds as
//! there: `*_at_ms` are wall-clock instants since the Unix epoch.

use std::time::Duration;

/// A grant: proof that its holder held `key` as of `etag`. Sealed by the
/// component: pass it back exactly as a call returned it (a changed field
/// makes every call refuse it with `invalid-argument`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The key as the caller named it (without the configured prefix).
    pub key: String,
    /// The fencing token: rises on every grant of this key, never reused.
    pub token: u64,
    pub holder_id: String,
    /// The lock object's entity tag after the last write.
    pub etag: String,
    /// When the lease lapses unless renewed (the holder's wall clock).
    pub expires_at_ms: u64,
    /// When this grant was made (the holder's wall clock).
    pub acquired_at_ms: u64,
    /// The ttl renewals extend by.
    pub ttl_ms: u64,
    pub metadata: String,
    /// `v3.` and 32 hex digits; opaque.
    pub seal: String,
}

/// What a key's lock object says, as read now (`inspect`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockState {
    pub key: String,
    /// Empty when the writer recorded none.
    pub holder_id: String,
    /// The last token granted on this key.
    pub token: u64,
    /// 0 once released.
    pub expires_at_ms: u64,
    /// 0 when the object records none.
    pub acquired_at_ms: u64,
    pub metadata: String,
    pub etag: String,
    /// Not released and not expired by the client's expiry clock.
    pub live: bool,
    /// How long until the clock that judges `live` calls the lease
    /// expired; zero when not live. Wait by this, not by your own clock.
    pub expires_in: Duration,
}

/// What a fenced write stored, and an object written by one as read now
/// (`fenced_get`): defined once for the component, the host crate and this
/// crate.
pub use s3_lease_keep::records::{FencedObject, FencedWrite};

/// Per-call choices for acquiring: the ttl, and optionally who holds it and
/// what it tells others (both shown by `inspect`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How long a grant lives unless renewed: 1 ms to 7 days.
    pub ttl: Duration,
    /// Default: a random id, fresh for every call. An id that finds its own
    /// live lease on the key takes it over with a new token.
    pub holder_id: Option<String>,
    /// Free-form text stored in the lock object; at most 4096 bytes.
    pub metadata: Option<String>,
}

impl Options {
    /// A `ttl` and nothing else.
    pub fn ttl(ttl: Duration) -> Options {
        Options {
            ttl,
            holder_id: None,
            metadata: None,
        }
    }

    pub fn with_holder_id(mut self, holder_id: impl Into<String>) -> Options {
        self.holder_id = Some(holder_id.into());
        self
    }

    pub fn with_metadata(mut self, metadata: impl Into<String>) -> Options {
        self.metadata = Some(metadata.into());
        self
    }
}

/// Choices for one fenced write (`Held::fenced_put_with`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FenceOptions {
    /// Refuse the write (`Error::Fenced`) when the object's token equals
    /// the lease's, so each grant writes an object at most once. Default
    /// (false): equal tokens are accepted, so a holder may retry its write.
    pub reject_equal_token: bool,
}

impl FenceOptions {
    /// Each grant writes the object at most once.
    pub fn reject_equal_token() -> FenceOptions {
        FenceOptions {
            reject_equal_token: true,
        }
    }
}

/// Milliseconds for the contract, saturating: no `Duration` wraps around
/// or panics (the component refuses what is out of its range by name).
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_beyond_u64_milliseconds_saturate() {
        assert_eq!(millis(Duration::MAX), u64::MAX);
        assert_eq!(millis(Duration::from_millis(u64::MAX)), u64::MAX);
        assert_eq!(millis(Duration::from_micros(1_999)), 1);
        assert_eq!(millis(Duration::ZERO), 0);
    }

    #[test]
    fn fence_options_accept_equal_tokens_unless_asked() {
        assert!(!FenceOptions::default().reject_equal_token);
        assert!(FenceOptions::reject_equal_token().reject_equal_token);
    }
}

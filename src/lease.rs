//! What a grant is, below every operation that makes or rewrites one: the
//! lease a caller holds (`Lease`), the validated options of an acquire
//! (`Grant`), and where a key's lock object lives (`object_key`).

use crate::prelude::*;

use crate::error::Error;
use crate::limits::{
    MAX_HOLDER_ID_BYTES, MAX_METADATA_BYTES, MAX_OBJECT_KEY_BYTES, MAX_TTL_MS, MIN_TTL_MS,
};
use crate::lock_object::MAX_TIME_MS;

/// A grant (the WIT `lease` record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub key: String,
    pub token: u64,
    pub holder_id: String,
    pub etag: String,
    pub expires_at_ms: u64,
    pub acquired_at_ms: u64,
    pub ttl_ms: u64,
    pub metadata: String,
    /// Proof that a grant of this lock returned exactly these fields (see
    /// `seal`); renew, release and fenced writes refuse a lease without it.
    pub seal: String,
}

impl Lease {
    /// Refuses a lease that no grant returned, before it reaches a request.
    /// The etag is the whole safety of a rewrite: an empty `If-Match` may be
    /// ignored by a store, turning the compare-and-swap into a blind
    /// overwrite.
    pub fn check_as_returned(&self) -> Result<(), Error> {
        if self.etag.trim().is_empty() || self.token == 0 {
            return Err(Error::InvalidArgument(
                "lease has an empty etag or token 0; pass the lease as returned".into(),
            ));
        }
        if !(MIN_TTL_MS..=MAX_TTL_MS).contains(&self.ttl_ms) {
            return Err(Error::InvalidArgument(format!(
                "lease ttl-ms {} must be {MIN_TTL_MS} ..= {MAX_TTL_MS}",
                self.ttl_ms
            )));
        }
        Ok(())
    }
}

/// Validated acquire options with the holder id already chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub ttl_ms: u64,
    pub holder_id: String,
    pub metadata: String,
}

impl Grant {
    pub fn new(ttl_ms: u64, holder_id: String, metadata: String) -> Result<Self, Error> {
        if !(MIN_TTL_MS..=MAX_TTL_MS).contains(&ttl_ms) {
            return Err(Error::InvalidArgument(format!(
                "ttl-ms {ttl_ms} must be {MIN_TTL_MS} ..= {MAX_TTL_MS} (7 days)"
            )));
        }
        if holder_id.is_empty() || holder_id.len() > MAX_HOLDER_ID_BYTES {
            return Err(Error::InvalidArgument(format!(
                "holder-id must be 1 to {MAX_HOLDER_ID_BYTES} bytes"
            )));
        }
        if metadata.len() > MAX_METADATA_BYTES {
            return Err(Error::InvalidArgument(format!(
                "metadata is {} bytes; at most {MAX_METADATA_BYTES}",
                metadata.len()
            )));
        }
        Ok(Grant {
            ttl_ms,
            holder_id,
            metadata,
        })
    }
}

/// Refuses to write a lease whose times no reader could parse back (a wall
/// clock that reads past year 5138): the object would block the key as
/// `corrupt-lock-object` until someone deleted it by hand.
pub fn check_writable_time(expires_at_ms: u64) -> Result<(), Error> {
    if expires_at_ms >= MAX_TIME_MS {
        return Err(Error::InvalidArgument(format!(
            "this machine's wall clock is implausible (a lease would expire at {expires_at_ms} ms \
             since 1970); nothing was written"
        )));
    }
    Ok(())
}

/// Where a key's lock object lives: the configured prefix plus the key.
pub fn object_key(prefix: &str, key: &str) -> Result<String, Error> {
    if key.is_empty() {
        return Err(Error::InvalidArgument("key must not be empty".into()));
    }
    if key.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(format!(
            "key {key:?} contains control characters"
        )));
    }
    let full = format!("{prefix}{key}");
    if full.len() > MAX_OBJECT_KEY_BYTES {
        return Err(Error::InvalidArgument(format!(
            "object key is {} bytes with its prefix; at most {MAX_OBJECT_KEY_BYTES} are allowed",
            full.len()
        )));
    }
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked() {
        assert!(Grant::new(0, "a".into(), String::new()).is_err());
        assert!(Grant::new(MAX_TTL_MS + 1, "a".into(), String::new()).is_err());
        assert!(Grant::new(1, String::new(), String::new()).is_err());
        assert!(Grant::new(1, "a".into(), "x".repeat(MAX_METADATA_BYTES + 1)).is_err());
        assert!(object_key("p/", "").is_err());
        assert!(object_key("p/", "a\u{0}b").is_err());
        assert!(object_key("p/", &"k".repeat(1023)).is_err());
        assert_eq!(object_key("p/", "k").unwrap(), "p/k");
    }
}

//! What a grant is, below every operation that makes or rewrites one: the
//! lease a caller holds (`Lease`), the validated options of an acquire
//! (`Grant`), and where a key's lock object lives (`object_key`).

use crate::prelude::*;

use crate::error::Error;
use crate::limits::{
    MAX_HOLDER_ID_BYTES, MAX_METADATA_BYTES, MAX_OBJECT_KEY_BYTES, MAX_TTL_MS, MIN_TTL_MS,
};
use crate::lock_object::{MAX_LOCK_OBJECT_BYTES, MAX_TIME_MS};

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
        // What a grant could not have returned; renew and release would
        // write it into the lock object.
        if self.holder_id.is_empty() || self.holder_id.len() > MAX_HOLDER_ID_BYTES {
            return Err(Error::InvalidArgument(format!(
                "lease holder-id must be 1 to {MAX_HOLDER_ID_BYTES} bytes"
            )));
        }
        if self.metadata.len() > MAX_METADATA_BYTES {
            return Err(Error::InvalidArgument(format!(
                "lease metadata is {} bytes; at most {MAX_METADATA_BYTES}",
                self.metadata.len()
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
        // Operators read holder ids on terminals (`status`, waiting lines):
        // none may carry escape sequences or forge a line.
        if let Some(c) = holder_id.chars().find(|c| c.is_control()) {
            return Err(Error::InvalidArgument(format!(
                "holder-id must not contain control characters (it has {c:?})"
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

/// Refuses to write a lock or epoch object larger than any reader accepts
/// (`MAX_LOCK_OBJECT_BYTES`): it would block the key as
/// `corrupt-lock-object` until someone deleted it by hand.
pub fn check_writable_size(object_key: &str, body: &[u8]) -> Result<(), Error> {
    if body.len() > MAX_LOCK_OBJECT_BYTES {
        return Err(Error::InvalidArgument(format!(
            "{object_key:?} would be {} bytes, over the {MAX_LOCK_OBJECT_BYTES} a lock object \
             may be; nothing was written",
            body.len()
        )));
    }
    Ok(())
}

/// The name a key's token floor lives under, after the key prefix
/// (`strategy::floor` writes it): defined here, with the other names
/// s3-lease keeps, so checking a key needs nothing of the strategies.
pub const FLOOR_DIR: &str = ".s3-lease-floor/";

/// The folder of every key's grant log, after the key prefix (`audit`
/// writes it): defined here for the same reason.
pub const AUDIT_DIR_NAME: &str = ".s3-lease-audit/";

/// The name, under the key prefix, of the object that keeps the seal key
/// (see `seal::stored`). No lock key, epoch object or fenced object can
/// end with it (`object_key` refuses them), whatever the prefix.
pub const SEAL_KEY_OBJECT_NAME: &str = ".s3-lease-seal-key";

/// The object (or the store's item) that keeps the seal key of the clients
/// with `prefix`.
pub fn seal_key_object(prefix: &str) -> String {
    format!("{prefix}{SEAL_KEY_OBJECT_NAME}")
}

/// Where a key's lock object lives: the configured prefix plus the key.
/// Also checks the full keys of fenced objects (with no prefix).
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
    // The seal key's object of this prefix or any other: never written
    // as a lock or fenced object.
    if full.ends_with(SEAL_KEY_OBJECT_NAME) {
        return Err(Error::InvalidArgument(format!(
            "object key {full:?} ends with {SEAL_KEY_OBJECT_NAME:?}, which s3-lease keeps \
             for its seal key"
        )));
    }
    // The grant log's folder of this prefix or any other (see `audit`).
    if full.contains(AUDIT_DIR_NAME) {
        return Err(Error::InvalidArgument(format!(
            "object key {full:?} contains {AUDIT_DIR_NAME:?}, which s3-lease keeps for its \
             grant log"
        )));
    }
    // The keys' token floors (`strategy::floor`), under any prefix.
    let floors = FLOOR_DIR;
    if full.contains(floors) {
        return Err(Error::InvalidArgument(format!(
            "object key {full:?} contains {floors:?}, which s3-lease keeps for its keys' \
             token floors"
        )));
    }
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

    #[test]
    fn no_key_under_any_prefix_reaches_a_seal_key_object() {
        for prefix in ["", "p/", "locks-", "a/b/"] {
            let reserved = seal_key_object(prefix);
            assert!(reserved.ends_with(".s3-lease-seal-key"), "{reserved}");
            // This prefix's own, and any other prefix's.
            for (p, key) in [
                (prefix, SEAL_KEY_OBJECT_NAME.to_string()),
                ("", reserved.clone()),
                ("x", format!("y{reserved}")),
            ] {
                let refused = object_key(p, &key).unwrap_err();
                assert!(refused.to_string().contains("seal key"), "{refused}");
            }
        }
        // Near misses are keys like any other.
        for key in [
            ".s3-lease-seal-key/x",
            ".s3-lease-seal-keys",
            "s3-lease-seal-key.json",
        ] {
            object_key("p/", key).unwrap();
        }
    }

    #[test]
    fn a_holder_id_with_a_control_character_is_refused() {
        for bad in [
            "a\x1b]0;owned\x07",
            "x\x1b[2J",
            "two\nlines",
            "cr\r",
            "del\x7f",
            "c1\u{9b}",
        ] {
            assert!(
                matches!(
                    Grant::new(10_000, bad.into(), String::new()),
                    Err(Error::InvalidArgument(_))
                ),
                "{bad:?}"
            );
        }
        for good in ["vm-1/530/0123456789abcdef", "naïve ✓", "a b"] {
            Grant::new(10_000, good.into(), "free\ntext".into()).unwrap();
        }
    }

    #[test]
    fn a_lease_no_grant_could_return_is_refused() {
        let lease = Lease {
            key: "k".into(),
            token: 1,
            holder_id: "a".into(),
            etag: "\"e\"".into(),
            expires_at_ms: 2,
            acquired_at_ms: 1,
            ttl_ms: 1,
            metadata: String::new(),
            seal: String::new(),
        };
        lease.check_as_returned().unwrap();
        for bad in [
            Lease {
                metadata: "x".repeat(MAX_METADATA_BYTES + 1),
                ..lease.clone()
            },
            Lease {
                holder_id: "h".repeat(MAX_HOLDER_ID_BYTES + 1),
                ..lease.clone()
            },
            Lease {
                holder_id: String::new(),
                ..lease.clone()
            },
        ] {
            assert!(matches!(
                bad.check_as_returned(),
                Err(Error::InvalidArgument(_))
            ));
        }
        check_writable_size("k", &[b' '; MAX_LOCK_OBJECT_BYTES]).unwrap();
        assert!(check_writable_size("k", &[b' '; MAX_LOCK_OBJECT_BYTES + 1]).is_err());
    }
}

//! Leases a caller cannot alter by mistake, or pass to another lock.
//!
//! A lease is a record the caller holds and hands back to `renew`, `release`
//! and the fenced writes. Those operations write its token, holder and
//! metadata, so a changed copy (a token lowered to one already granted, a
//! metadata blob too large to read back, a lease of one lock handed to
//! another) would be written as the truth. Each lease therefore carries a
//! seal: an HMAC-SHA256 over every field and the lock it belongs to (the
//! strategy and the full lock object key). A lease whose seal does not
//! match is refused before any request.
//!
//! What keys it. The caller of this API is the program that holds the S3
//! credentials: anyone who can write the bucket can write lock objects
//! directly, with no lease at all. So the seal is not access control, and
//! it no longer derives from credentials (which rotate: a lease held across
//! a rotation of temporary keys, or stored by one process and renewed by
//! another with newer keys, must keep working). What it protects against:
//!
//! - Mistakes: a lease edited, truncated or stitched together by code or
//!   by hand (a token, the times, the holder, the metadata) is refused.
//! - Leases of another lock: the seal binds the strategy, the full object
//!   key (prefix included) and the bucket, so a lease is refused by a
//!   client of another key, prefix, strategy or bucket.
//! - With a configured seal key (`seal-key`), forgery: the key derives from
//!   that secret too, so only clients configured with the same seal key
//!   make or accept its leases. For leases that pass through hands (files,
//!   queues, other teams' services) the caller does not trust.
//!
//! Without a seal key, the key derives from the bucket alone under a domain
//! string of its own: anyone who knows the bucket name can compute it, and
//! every client of the bucket accepts the lease whatever its credentials.
//!
//! Why a seal and not a WIT resource or a read of the stored object: a sealed
//! record is plain data, so a caller can store it (a file, a database, an
//! environment variable) and renew it from another instance or process, and
//! checking it costs no request.
//!
//! Versions: `v1.` seals were keyed by the secret access key; `v2.` seals
//! (these) by the bucket and the optional seal key. A `v1.` lease is refused
//! with a message saying so, once, on upgrading: its holder acquires again
//! (its holder id takes over its own live lease, with a new token).

use crate::prelude::*;

/// The configured secret, defined with the rest of the config.
pub use crate::config::SealKey;
use crate::error::Error;
use crate::lease::Lease;
use crate::sigv4::{hex, hmac};
use core::fmt;

/// Bytes of the HMAC kept in a seal: 128 bits.
const SEAL_BYTES: usize = 16;
const SEAL_VERSION: &str = "v2.";
/// The prefix of the seals of s3-lease before 0.4's credential-free key.
const OLD_SEAL_VERSION: &str = "v1.";
/// The sealing key of one client. `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct Sealer {
    key: Vec<u8>,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sealer(<redacted>)")
    }
}

impl Sealer {
    /// Derives the key from the bucket, and from `seal_key` when one is
    /// configured; never from credentials, so leases survive a rotation.
    /// Each case has a domain string of its own.
    pub fn new(bucket: &str, seal_key: Option<&SealKey>) -> Self {
        let key = match seal_key {
            None => hmac(b"s3-lease lease seal v2: bucket key", bucket.as_bytes()),
            Some(secret) => hmac(
                secret.as_str().as_bytes(),
                format!("s3-lease lease seal v2: configured seal key\n{bucket}").as_bytes(),
            ),
        };
        Sealer { key }
    }

    /// The seal context of one lock: `lock` names the strategy and the full
    /// lock object key, so a lease of one lock is refused by another.
    pub fn for_lock(&self, lock: String) -> LockSeal {
        LockSeal {
            sealer: self.clone(),
            lock,
        }
    }
}

/// Seals and checks the leases of one lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockSeal {
    sealer: Sealer,
    lock: String,
}

impl LockSeal {
    /// The lease with its seal set.
    pub fn seal(&self, mut lease: Lease) -> Lease {
        lease.seal = self.compute(&lease);
        lease
    }

    /// Refuses a lease that no grant of this lock returned, or that was
    /// changed since, with `invalid-argument`.
    pub fn check(&self, lease: &Lease) -> Result<(), Error> {
        if lease.seal.starts_with(OLD_SEAL_VERSION) {
            return Err(Error::InvalidArgument(format!(
                "the lease of {:?} with token {} was sealed by an older version of s3-lease \
                 (a {OLD_SEAL_VERSION} seal, keyed by credentials), which this version no \
                 longer accepts: acquire the lock again (the same holder id takes over its \
                 own live lease, with a new token)",
                lease.key, lease.token
            )));
        }
        let want = self.compute(lease);
        if constant_time_eq(want.as_bytes(), lease.seal.as_bytes()) {
            return Ok(());
        }
        Err(Error::InvalidArgument(format!(
            "the lease of {:?} with token {} was altered, belongs to another lock or \
             bucket, or was sealed under another seal-key: pass a lease exactly as acquire, \
             renew or an elector returned it",
            lease.key, lease.token
        )))
    }

    fn compute(&self, l: &Lease) -> String {
        // Length-prefixed fields: no two different leases encode alike.
        let mut message = Vec::with_capacity(256 + l.metadata.len());
        for text in [&self.lock, &l.key, &l.holder_id, &l.etag, &l.metadata] {
            message.extend_from_slice(&(text.len() as u64).to_le_bytes());
            message.extend_from_slice(text.as_bytes());
        }
        for number in [l.token, l.expires_at_ms, l.acquired_at_ms, l.ttl_ms] {
            message.extend_from_slice(&number.to_le_bytes());
        }
        let mac = hmac(&self.sealer.key, &message);
        let kept = mac.get(..SEAL_BYTES).unwrap_or(&mac);
        format!("{SEAL_VERSION}{}", hex(kept))
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease() -> Lease {
        Lease {
            key: "k".into(),
            token: 3,
            holder_id: "a".into(),
            etag: "\"e\"".into(),
            expires_at_ms: 20_000,
            acquired_at_ms: 10_000,
            ttl_ms: 10_000,
            metadata: "m".into(),
            seal: String::new(),
        }
    }

    fn seal() -> LockSeal {
        Sealer::new("bucket", None).for_lock("single-object:locks/k".into())
    }

    fn keyed(key: &str, bucket: &str) -> LockSeal {
        Sealer::new(bucket, Some(&SealKey::new(key))).for_lock("single-object:locks/k".into())
    }

    #[test]
    fn a_sealed_lease_checks_and_any_changed_field_does_not() {
        let sealed = seal().seal(lease());
        assert!(sealed.seal.starts_with("v2.") && sealed.seal.len() == 3 + 32);
        seal().check(&sealed).unwrap();
        let altered: Vec<Lease> = vec![
            Lease {
                token: 1,
                ..sealed.clone()
            },
            Lease {
                key: "k2".into(),
                ..sealed.clone()
            },
            Lease {
                holder_id: "b".into(),
                ..sealed.clone()
            },
            Lease {
                etag: "\"f\"".into(),
                ..sealed.clone()
            },
            Lease {
                expires_at_ms: 99_999,
                ..sealed.clone()
            },
            Lease {
                acquired_at_ms: u64::MAX,
                ..sealed.clone()
            },
            Lease {
                ttl_ms: 1,
                ..sealed.clone()
            },
            Lease {
                metadata: "x".repeat(10_000),
                ..sealed.clone()
            },
            Lease {
                seal: String::new(),
                ..sealed.clone()
            },
            Lease {
                seal: "v2.".into(),
                ..sealed.clone()
            },
            Lease {
                seal: "v1.".into(),
                ..sealed.clone()
            },
        ];
        for a in altered {
            assert!(
                matches!(seal().check(&a), Err(Error::InvalidArgument(_))),
                "{a:?}"
            );
        }
    }

    #[test]
    fn seals_bind_the_lock_and_the_bucket_and_nothing_of_the_credentials() {
        let sealed = seal().seal(lease());
        let other_lock = Sealer::new("bucket", None).for_lock("epoch-objects:locks/k".into());
        let other_prefix = Sealer::new("bucket", None).for_lock("single-object:other/k".into());
        let other_bucket = Sealer::new("bucket2", None).for_lock("single-object:locks/k".into());
        for s in [other_lock, other_prefix, other_bucket] {
            assert!(s.check(&sealed).is_err());
        }
        // Any other client of the bucket and lock accepts it: the key takes
        // nothing from credentials.
        Sealer::new("bucket", None)
            .for_lock("single-object:locks/k".into())
            .check(&sealed)
            .unwrap();
    }

    #[test]
    fn a_seal_key_is_needed_to_accept_and_to_make_a_keyed_lease() {
        let sealed = keyed("shared", "bucket").seal(lease());
        keyed("shared", "bucket").check(&sealed).unwrap();
        for s in [keyed("other", "bucket"), keyed("shared", "bucket2"), seal()] {
            assert!(matches!(s.check(&sealed), Err(Error::InvalidArgument(_))));
        }
        // A lease sealed without a key is refused by a keyed client.
        let unkeyed = seal().seal(lease());
        assert!(keyed("shared", "bucket").check(&unkeyed).is_err());
        // No seal key makes the bucket-only key.
        assert!(keyed("", "bucket").check(&unkeyed).is_err());
    }

    #[test]
    fn an_old_seal_is_refused_with_a_message_that_says_so() {
        let old = Lease {
            seal: "v1.00112233445566778899aabbccddeeff".into(),
            ..lease()
        };
        match seal().check(&old) {
            Err(Error::InvalidArgument(reason)) => assert!(
                reason.contains("older version") && reason.contains("acquire the lock again"),
                "{reason}"
            ),
            other => panic!("expected invalid-argument, got {other:?}"),
        }
    }

    #[test]
    fn debug_never_shows_the_key() {
        let shown = format!(
            "{:?} {:?}",
            keyed("very-secret-seal-key", "bucket"),
            SealKey::new("very-secret-seal-key")
        );
        assert!(
            shown.contains("<redacted>") && !shown.contains("very-secret"),
            "{shown}"
        );
    }
}

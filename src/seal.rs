//! Leases a caller cannot forge or alter.
//!
//! A lease is a record the caller holds and hands back to `renew`, `release`
//! and the fenced writes. Those operations write its token, holder and
//! metadata, so a changed copy (a token lowered to one already granted, a
//! metadata blob too large to read back) would be written as the truth. Each
//! lease therefore carries a seal: an HMAC-SHA256 over every field and the
//! lock it belongs to, keyed by a key derived from the client's secret
//! access key and bucket. A lease whose seal does not match is refused
//! before any request.
//!
//! Why a seal and not a WIT resource or a read of the stored object: a sealed
//! record is plain data, so a caller can store it (a file, a database, an
//! environment variable) and renew it from another instance or process, and
//! checking it costs no request. The price is that the key follows the
//! credentials: a lease sealed under other credentials (rotated STS keys) is
//! refused, and its holder acquires again (its holder id takes over its own
//! live lease with a new token).

use crate::prelude::*;

use crate::error::Error;
use crate::protocol::Lease;
use crate::sigv4::{hex, hmac};
use core::fmt;

/// Bytes of the HMAC kept in a seal: 128 bits.
const SEAL_BYTES: usize = 16;
const SEAL_VERSION: &str = "v1.";

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
    /// Derives the key from the secret access key, so every instance with
    /// the same credentials and bucket accepts the same leases; the domain
    /// string keeps it apart from SigV4's own use of the secret.
    pub fn new(secret_access_key: &str, bucket: &str) -> Self {
        let domain = format!("s3-lease lease seal v1\n{bucket}");
        Sealer {
            key: hmac(secret_access_key.as_bytes(), domain.as_bytes()),
        }
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
        let want = self.compute(lease);
        if constant_time_eq(want.as_bytes(), lease.seal.as_bytes()) {
            return Ok(());
        }
        Err(Error::InvalidArgument(format!(
            "the lease of {:?} with token {} was altered, belongs to another lock, or was \
             sealed under other credentials: pass a lease exactly as acquire, renew or an \
             elector returned it",
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
        Sealer::new("secret", "bucket").for_lock("single-object:locks/k".into())
    }

    #[test]
    fn a_sealed_lease_checks_and_any_changed_field_does_not() {
        let sealed = seal().seal(lease());
        assert!(sealed.seal.starts_with("v1.") && sealed.seal.len() == 3 + 32);
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
    fn seals_bind_the_lock_the_bucket_and_the_credentials() {
        let sealed = seal().seal(lease());
        let other_lock = Sealer::new("secret", "bucket").for_lock("epoch-objects:locks/k".into());
        let other_bucket =
            Sealer::new("secret", "bucket2").for_lock("single-object:locks/k".into());
        let other_secret =
            Sealer::new("secret2", "bucket").for_lock("single-object:locks/k".into());
        for s in [other_lock, other_bucket, other_secret] {
            assert!(s.check(&sealed).is_err());
        }
        // Another client with the same credentials accepts it.
        Sealer::new("secret", "bucket")
            .for_lock("single-object:locks/k".into())
            .check(&sealed)
            .unwrap();
    }

    #[test]
    fn debug_never_shows_the_key() {
        let shown = format!("{:?}", seal());
        assert!(
            shown.contains("<redacted>") && !shown.contains("secret"),
            "{shown}"
        );
    }
}

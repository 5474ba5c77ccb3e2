//! Leases a caller cannot alter, forge, or pass to another lock.
//!
//! A lease is a record the caller holds and hands back to `renew`, `release`
//! and the fenced writes. Those operations write its holder, times and
//! metadata and fence with its token, so a changed copy (a lease of one
//! lock handed to another, a token raised to fence out the real holder)
//! would act as the truth. Each lease therefore carries a seal: an
//! HMAC-SHA256 over every field and the lock it belongs to (the strategy
//! and the full lock object key). A lease whose seal does not match is
//! refused before any request.
//!
//! What keys it, never credentials (which rotate: a lease held across a
//! rotation of temporary keys, or stored by one process and renewed by
//! another with newer keys, must keep working):
//!
//! - A configured `seal-key`: only clients configured with the same
//!   secret make or accept each other's leases.
//! - Otherwise a random 256-bit key kept in the store itself, in an object
//!   beside the locks (`stored`): created once, with `If-None-Match: *`,
//!   by the first client that needs it, and read once by every client.
//!   Forging a lease then takes read access to that object. Anyone with
//!   that access can read the lock objects too, and anyone who can write
//!   the bucket can write lock objects directly, with no lease at all.
//!
//! Both derive the sealing key under a domain string of their own, with
//! the seal scope (the bucket, or the store's own place), so a lease is refused
//! by a client of another bucket, prefix, strategy or lock.
//!
//! A seal is not the last line: whatever the seal, a renew or release
//! never writes a token below the stored one, nor an object over the cap
//! (see `strategy::single_object::RewriteOwn` and `lease`).
//!
//! Why a seal and not a WIT resource or a read of the stored object on
//! every call: a sealed record is plain data, so a caller can store it (a
//! file, a database, an environment variable) and renew it from another
//! instance or process, and checking it costs no request.
//!
//! Versions: `v1.` seals were keyed by the secret access key, `v2.` by
//! the bucket's name (which anyone could compute) and the optional seal
//! key; `v3.` seals (these) by the seal key or the stored key. Older ones
//! are refused with a message saying so, once, on upgrading: their holder
//! acquires again (its holder id takes over its own live lease, with a new
//! token).

use crate::prelude::*;

pub mod stored;

/// The configured secret, defined with the rest of the config.
pub use crate::config::SealKey;
use crate::error::Error;
use crate::lease::Lease;
use crate::sigv4::{hex, hmac};
use core::fmt;
pub use stored::{LoadSealKey, StoredKey};

/// Bytes of the HMAC kept in a seal: 128 bits.
const SEAL_BYTES: usize = 16;
const SEAL_VERSION: &str = "v3.";
/// The prefixes of older seals, and what keyed them.
const OLD_SEAL_VERSIONS: [(&str, &str); 2] = [
    ("v1.", "keyed by credentials"),
    (
        "v2.",
        "keyed by the bucket's name, which anyone could compute",
    ),
];

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
    /// The sealer of clients configured with `seal_key`, for `scope` (the
    /// bucket, or the store's place: see `Store::seal_scope`).
    pub fn configured(scope: &str, seal_key: &SealKey) -> Self {
        let key = hmac(
            seal_key.as_str().as_bytes(),
            format!("s3-lease lease seal v3: configured seal key\n{scope}").as_bytes(),
        );
        Sealer { key }
    }

    /// The sealer of clients without a seal key: the random key kept in
    /// the store.
    pub fn stored(scope: &str, key: &StoredKey) -> Self {
        let key = hmac(
            key.bytes(),
            format!("s3-lease lease seal v3: stored seal key\n{scope}").as_bytes(),
        );
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

    /// `check`, and that the lease is as a grant returns one
    /// (`Lease::check_as_returned`): what a renew or release checks first.
    pub fn check_returned(&self, lease: &Lease) -> Result<(), Error> {
        self.check(lease).and(lease.check_as_returned())
    }

    /// Refuses a lease that no grant of this lock returned, or that was
    /// changed since, with `invalid-argument`.
    pub fn check(&self, lease: &Lease) -> Result<(), Error> {
        if let Some((version, keyed)) = OLD_SEAL_VERSIONS
            .iter()
            .find(|(version, _)| lease.seal.starts_with(version))
        {
            return Err(Error::InvalidArgument(format!(
                "the lease of {:?} with token {} was sealed by an older version of s3-lease \
                 (a {version} seal, {keyed}), which this version no longer accepts: acquire \
                 the lock again (the same holder id takes over its own live lease, with a \
                 new token)",
                lease.key, lease.token
            )));
        }
        let want = self.compute(lease);
        if constant_time_eq(want.as_bytes(), lease.seal.as_bytes()) {
            return Ok(());
        }
        Err(Error::InvalidArgument(format!(
            "the lease of {:?} with token {} was altered, belongs to another lock or \
             bucket, or was sealed under another seal key: pass a lease exactly as acquire, \
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

    fn stored_key(byte: u8) -> StoredKey {
        StoredKey::from_bytes([byte; 32])
    }

    fn sealer(bucket: &str) -> Sealer {
        Sealer::stored(bucket, &stored_key(1))
    }

    fn seal() -> LockSeal {
        sealer("bucket").for_lock("single-object:locks/k".into())
    }

    fn keyed(key: &str, bucket: &str) -> LockSeal {
        Sealer::configured(bucket, &SealKey::new(key)).for_lock("single-object:locks/k".into())
    }

    #[test]
    fn a_sealed_lease_checks_and_any_changed_field_does_not() {
        let sealed = seal().seal(lease());
        assert!(sealed.seal.starts_with("v3.") && sealed.seal.len() == 3 + 32);
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
                seal: "v3.".into(),
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
    fn seals_bind_the_lock_the_bucket_and_the_stored_key_and_nothing_of_the_credentials() {
        let sealed = seal().seal(lease());
        let other_lock = sealer("bucket").for_lock("epoch-objects:locks/k".into());
        let other_prefix = sealer("bucket").for_lock("single-object:other/k".into());
        let other_bucket = sealer("bucket2").for_lock("single-object:locks/k".into());
        let other_key =
            Sealer::stored("bucket", &stored_key(2)).for_lock("single-object:locks/k".into());
        for s in [other_lock, other_prefix, other_bucket, other_key] {
            assert!(s.check(&sealed).is_err());
        }
        // Any other client with the bucket's stored key accepts it: the key
        // takes nothing from credentials.
        sealer("bucket")
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
        // A lease sealed with the stored key is refused by a keyed client.
        let unkeyed = seal().seal(lease());
        assert!(keyed("shared", "bucket").check(&unkeyed).is_err());
        // A configured key that happens to be the stored key's bytes is
        // still another key (a domain string of its own).
        let same_bytes = String::from_utf8(vec![1; 32]).unwrap();
        assert!(keyed(&same_bytes, "bucket").check(&unkeyed).is_err());
    }

    #[test]
    fn old_seals_are_refused_with_a_message_that_says_so() {
        for (version, why) in [("v1.", "credentials"), ("v2.", "bucket's name")] {
            let old = Lease {
                seal: format!("{version}00112233445566778899aabbccddeeff"),
                ..lease()
            };
            match seal().check(&old) {
                Err(Error::InvalidArgument(reason)) => assert!(
                    reason.contains("older version")
                        && reason.contains(version)
                        && reason.contains(why)
                        && reason.contains("acquire the lock again"),
                    "{reason}"
                ),
                other => panic!("expected invalid-argument, got {other:?}"),
            }
        }
    }

    #[test]
    fn debug_never_shows_a_key() {
        let shown = format!(
            "{:?} {:?} {:?} {:?}",
            keyed("very-secret-seal-key", "bucket"),
            SealKey::new("very-secret-seal-key"),
            seal(),
            stored_key(0xab),
        );
        assert!(
            shown.contains("<redacted>")
                && !shown.contains("very-secret")
                && !shown.contains("abab"),
            "{shown}"
        );
    }
}

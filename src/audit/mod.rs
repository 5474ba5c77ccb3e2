//! The grant log (opt-in: `ClientConfig::audit`): who held a key, and
//! when, kept in the store beside the locks, and a verifier that proves
//! from the store alone that no two holders overlapped.
//!
//! Every grant (a lock's, an epoch's, a semaphore slot's, an elector's
//! term) is followed by one **create-only** write of an immutable record,
//! named by key and zero-padded token (`names`); a release writes one more.
//! Renews write nothing. A grant record holds the grant (token, holder,
//! ttl, the store's times of its write) and what the grantee saw of the
//! key when it took over (`record::Previous`): the token it replaced, its
//! holder, released or not, and the store's times that show it had ended.
//! With the log on, a takeover of an unreleased lease also waits until the
//! store's own clock shows it over (`expiry::Judge::on_store_clock`), so
//! every takeover recorded is one `verify` can prove.
//!
//! - `write`: the grant's and release's records (and the back-fill of a
//!   predecessor that crashed before writing its own); a grantee whose
//!   record already exists for another grant has met a store that granted
//!   one token twice: `collision`.
//! - `read`: the records of a key, by token.
//! - `verify`: the proof, from the records and the lock object alone.
//! - `timeline`: the records as an operator reads them.
//! - `prune`: drops the records of grants before a time.
//! - `fenced`, `versions`: `verify --fenced`, the objects written under the
//!   key's lock and, on a versioned bucket, the order of their versions.
//!
//! Every time it uses is the store's (`Last-Modified`, as each store's
//! translation gives it, the replies' `Date`): no client clock is trusted.
//! The operations speak the protocol's requests, which `stores` turns into
//! each store's (a create-only PUT is `If-None-Match: *` on S3, and each
//! store's own create-only write elsewhere), as the stored seal key's
//! (`seal::stored`) are.

use crate::prelude::*;

pub mod fenced;
pub mod names;
pub mod prune;
pub mod read;
pub mod record;
pub mod timeline;
pub mod verify;
pub mod versions;
pub mod write;

#[cfg(test)]
mod tests;

pub use names::{check_key, log_dir, record_key, Kind, AUDIT_DIR_NAME};
pub use record::{Previous, PreviousHolder, Record, WriteTimes};
pub use write::{Backfill, Backfiller, GrantTrail, Pending, RecordGrant, RecordRelease, Recorded};

use crate::capability::{Capability, CapabilityResult, Verdict};
use crate::error::Error;

/// The error of a grantee whose record met another grant's record of the
/// same token: the store granted one token twice (both writers' conditions
/// passed). As a failed preflight would report it (`store-unsafe`, failing
/// silently), since that is what it shows of the store: no strategy is
/// safe on it, and the client grants nothing more (see `client`).
pub fn collision(key: &str, token: u64, created: bool, ours: &str, theirs: &Record) -> Error {
    let capability = if created {
        Capability::ConcurrentCreate
    } else {
        Capability::ConcurrentUpdate
    };
    Error::StoreUnsafe(Box::new(CapabilityResult {
        capability,
        verdict: Verdict::Fail,
        status: Some(412),
        code: "TokenCollision".into(),
        detail: format!(
            "token {token} of key {key:?} was granted twice: to {ours:?} (this grant, not \
             used) and to {:?} (whose record of it is in the grant log, written by {:?}); the \
             store let two conditional writes through where one should have failed",
            theirs.holder, theirs.written_by
        ),
        silent: true,
    }))
}

/// Whether `e` is a grantee's collision (`collision`).
pub fn is_collision(e: &Error) -> bool {
    matches!(e, Error::StoreUnsafe(r) if r.code == "TokenCollision")
}

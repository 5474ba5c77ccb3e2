//! The epoch-objects strategy as state machines, free of I/O: one object per
//! leader epoch, for stores that have `If-None-Match` but maybe no `If-Match`.
//!
//! A key's epochs live under `<prefix><key>/epoch-<20 digits>.json`; the
//! fixed width makes LIST order epoch order, and the epoch is the fencing
//! token. An epoch object is `{"expired", "validity_ms", "token", "holder",
//! "acquired_at", "metadata"}`.
//! - acquire: LIST the epochs, GET the highest; if absent, released or
//!   expired (or live but ours), PUT the next epoch with `If-None-Match: *`;
//!   then LIST once more past our epoch, since a slow client can re-create
//!   an epoch that cleanup had deleted (see `try_acquire`); then delete
//!   old epochs (best effort, see `Cleanup`).
//! - validity: the highest epoch is live until its `Last-Modified` plus
//!   `validity_ms` (plus `EXPIRY_SLACK_MS`), judged against the `Date` of the
//!   same reply: the server's clock, never the reader's.
//! - renew: rewrite our own epoch object (`If-Match`, or a plain PUT on a
//!   store without it), which moves `Last-Modified`. It counts only if the
//!   reply arrives before our lease ran out by our own clock, measured from
//!   the previous write; the server then cannot have judged it expired.
//! - release: rewrite our own epoch object as `"expired": true`.
//!
//! One file per operation: `try_acquire`, `renew_or_release` (one state
//! machine for both), `inspect`, `cleanup`; `lister` finds the epochs and
//! reads LIST pages; `object` names epoch objects and reads one.

mod cleanup;
mod inspect;
mod lister;
mod object;
mod renew_or_release;
mod try_acquire;

pub use cleanup::{Cleanup, KEEP_EPOCHS, MAX_CLEANUP_PER_GRANT};
pub use inspect::EpochInspect;
pub use lister::MAX_LIST_REQUESTS;
pub use object::{epoch_dir, epoch_key, parse_epoch_key, EpochRecord};
pub use renew_or_release::EpochRewrite;
pub use try_acquire::{EpochOutcome, EpochTryAcquire};

#[cfg(test)]
mod tests;

//! The single-object lease protocol as state machines, free of I/O.
//!
//! Each operation emits `S3Request`s and consumes `S3Response`s; a driver (the
//! wasi:http one in the component, an in-memory store in the tests) carries
//! them. Time comes in as an argument with every step.
//!
//! One JSON object per key holds `{expires_at, token, holder, ...}`:
//! - acquire: GET; if absent, PUT `If-None-Match: *` with token 1; if
//!   expired or released (or live but ours), PUT `If-Match: <etag>` with
//!   token + 1; if live and someone else's, give up.
//! - renew: PUT `If-Match: <our etag>`, same token, later expiry.
//! - release: PUT `If-Match: <our etag>`, same token, `expires_at` 0 (never
//!   DELETE: the token counter must survive).
//!
//! 412 means another writer won; 409 (ConditionalRequestConflict) and a 404
//! on an `If-Match` PUT mean the object changed under us: re-read and decide
//! again, a bounded number of times.
//!
//! One file per operation: `try_acquire`, `renew_or_release` (one state
//! machine for both), `inspect`; `object` reads and writes the lock object;
//! `semaphore` holds up to N holders (and a fair queue) in the same object.

mod inspect;
mod object;
mod renew_or_release;
pub mod semaphore;
mod try_acquire;

pub use inspect::Inspect;
pub(crate) use renew_or_release::released_state;
pub use renew_or_release::RewriteOwn;
pub use try_acquire::TryAcquire;

#[cfg(test)]
mod tests;

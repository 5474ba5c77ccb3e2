//! The locking strategies, side by side over the shared protocol layer
//! (`protocol`, `lease`, `limits`): each is a set of operations, one file
//! per operation (`try_acquire`, `renew_or_release`, `inspect`), plus the
//! objects it reads and writes.
//!
//! - `single_object`: one JSON object per key, rewritten with `If-Match`.
//! - `epoch`: one object per leader epoch, created with `If-None-Match`.
//!
//! Both write a key's token floor (`floor`) before creating its lock
//! object. Neither strategy uses the other. Inside one, `object` is lowest, then
//! (epoch) `cleanup` and `lister`, then `inspect`, then `try_acquire` and
//! `renew_or_release` (epoch's renew names the new holder through `inspect`).

pub mod epoch;
pub mod floor;
pub mod single_object;

//! Room to renew: a semaphore's object may hold at most
//! `MAX_LOCK_OBJECT_BYTES`, and a holder's renew, a release, or a waiter
//! keeping or leaving its place must always fit under it, whatever the
//! other clients wrote. Those writes keep what is there: they stamp the
//! entries of others (`written_at`) and rewrite their own entry's times
//! and write id, and those can be longer than what they replace.
//!
//! So every record is also measured at its widest: every entry stamped,
//! every time at the width of the latest time a record may hold, every
//! write id at the longest an operation draws, every waiter's token (0)
//! and the key's counter at the width of the largest token, and a
//! separator for every entry whichever list it is in. A write that only
//! keeps what is there never makes that measure larger, and a record is
//! never longer than its widest form. Hence the one rule: a write may not
//! widen the record past the cap. Only growth widens it (a join, a new
//! slot, a longer ttl or metadata), and growth is refused with an error
//! that says so; a record whose widest form fits leaves every keeping
//! write room, and so does every record such a write leaves behind.

use crate::lock_object::semaphore::{Entry, SemaphoreRecord};
use crate::lock_object::MAX_TIME_MS;

/// Writes one operation may try before giving up on a busy object: with
/// many holders renewing, a few 412s in a row are normal. Each write has
/// its own write id, so the record's widest form counts them.
pub const MAX_SEMAPHORE_ATTEMPTS: u32 = 8;

/// The widest time a record holds: every time written is below
/// `MAX_TIME_MS` (`99999999999.999`, 15 characters), and a stamp is a
/// whole second of an HTTP date (at most `253402300799.0`, 14).
const WIDEST_TIME_MS: u64 = MAX_TIME_MS - 1;

/// An operation's write ids: 16 hex digits, and `.n` for its n-th write
/// after the first, n at most `MAX_SEMAPHORE_ATTEMPTS`.
const WIDEST_WRITE_ID_BYTES: usize = 16 + 3;
const _: () = assert!(MAX_SEMAPHORE_ATTEMPTS < 100);

/// The length of `record`'s widest form (see the module comment).
pub fn widest_bytes(record: &SemaphoreRecord) -> usize {
    let widen = |e: &Entry, token: u64| Entry {
        token,
        expires_at_ms: WIDEST_TIME_MS,
        acquired_at_ms: WIDEST_TIME_MS,
        written_at_ms: Some(WIDEST_TIME_MS),
        write_id: "w".repeat(e.write_id.len().max(WIDEST_WRITE_ID_BYTES)),
        ..e.clone()
    };
    let widest = SemaphoreRecord {
        limit: record.limit,
        // A grant raises the counter; a waiter's grant moves its entry to
        // the holders with that token. Neither may widen the record.
        token: u64::MAX,
        holders: record.holders.iter().map(|e| widen(e, e.token)).collect(),
        queue: record.queue.iter().map(|e| widen(e, u64::MAX)).collect(),
    };
    // `[a,b]` and `[c]` have one separator; after c's grant, `[a,b,c]` and
    // `[]` have two. Count one for every entry.
    let lists = [&record.holders, &record.queue]
        .iter()
        .filter(|l| !l.is_empty())
        .count();
    widest.to_json().len() + lists
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(holder: &str, token: u64, at: Option<u64>) -> Entry {
        Entry {
            holder_id: holder.into(),
            token,
            expires_at_ms: 1_795_374_681_500,
            acquired_at_ms: 1_795_374_620_100,
            ttl_ms: 30_000,
            metadata: String::new(),
            write_id: "3c9e1f0a7b2d4e86".into(),
            written_at_ms: at,
        }
    }

    #[test]
    fn the_widest_form_is_never_shorter_than_the_record() {
        let shortest = SemaphoreRecord {
            limit: 2,
            token: 1,
            holders: vec![entry("a", 1, None)],
            queue: vec![entry("b", 0, Some(1_000))],
        };
        let longest = SemaphoreRecord {
            limit: 2,
            token: u64::MAX,
            holders: vec![Entry {
                expires_at_ms: WIDEST_TIME_MS,
                acquired_at_ms: WIDEST_TIME_MS,
                write_id: "3c9e1f0a7b2d4e86.8".into(),
                ..entry("a", u64::MAX, Some(253_402_300_799_000))
            }],
            queue: vec![entry("b", 0, None)],
        };
        for r in [shortest, longest] {
            assert!(widest_bytes(&r) >= r.to_json().len(), "{r:?}");
        }
    }
}

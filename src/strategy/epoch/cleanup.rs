//! Cleanup after a grant: which old epochs to delete (all but the newest
//! `KEEP_EPOCHS`, at most `MAX_CLEANUP_PER_GRANT` at a time) and the
//! operation that deletes them, best effort.

use crate::prelude::*;

use crate::lock_object::MAX_LOCK_OBJECT_BYTES;
use crate::protocol::{Operation, Step};
use crate::stores::s3::{Method, S3Request, S3Response};

/// Epochs kept by cleanup: the new one and the one it replaced.
pub const KEEP_EPOCHS: u64 = 2;
/// Old epochs deleted after one grant at most; the rest wait for the next.
pub const MAX_CLEANUP_PER_GRANT: usize = 16;

/// The smallest distinct `epochs` that pass `wanted`, ascending, at most
/// `MAX_CLEANUP_PER_GRANT`: picked one by one rather than sorted (a sort
/// instantiation costs the component kilobytes).
pub(super) fn oldest_distinct(epochs: &[u64], wanted: impl Fn(u64) -> bool) -> Vec<u64> {
    let mut old: Vec<u64> = Vec::new();
    while old.len() < MAX_CLEANUP_PER_GRANT {
        let above = old.last().copied();
        let next = epochs
            .iter()
            .copied()
            .filter(|&e| wanted(e) && above.is_none_or(|a| e > a))
            .min();
        match next {
            Some(e) => old.push(e),
            None => break,
        }
    }
    old
}

/// Deletes old epoch objects one by one, ignoring failures: cleanup keeps
/// listings short but is never needed for safety.
pub struct Cleanup {
    keys: Vec<String>,
}

impl Cleanup {
    pub fn new(mut keys: Vec<String>) -> Self {
        keys.reverse();
        Cleanup { keys }
    }

    fn next(&mut self) -> Step<()> {
        match self.keys.pop() {
            Some(key) => Step::Send(S3Request::new(Method::Delete, &key, MAX_LOCK_OBJECT_BYTES)),
            None => Step::Done(Ok(())),
        }
    }
}

impl Operation for Cleanup {
    type Output = ();
    fn start(&mut self, _now_ms: u64) -> Step<()> {
        self.next()
    }
    fn on_response(&mut self, _r: S3Response, _now_ms: u64) -> Step<()> {
        self.next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleanup_picks_the_oldest_distinct_epochs_as_a_sort_would() {
        let mut state = 7u64;
        for round in 0..300 {
            let len = round % 40;
            let epochs: Vec<u64> = (0..len)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (state >> 33) % 50
                })
                .collect();
            let wanted = |e: u64| e.saturating_add(KEEP_EPOCHS) <= 30;
            let mut sorted: Vec<u64> = epochs.iter().copied().filter(|&e| wanted(e)).collect();
            sorted.sort_unstable();
            sorted.dedup();
            sorted.truncate(MAX_CLEANUP_PER_GRANT);
            assert_eq!(oldest_distinct(&epochs, wanted), sorted, "{epochs:?}");
        }
    }
}

//! Semaphores and fair waiting on the single-object layout: up to `limit`
//! holders of one key, each with a slot and a token of its own from the
//! key's one counter, and an optional queue of waiters served in the order
//! they joined. All of it lives in the key's one lock object (see
//! `lock_object::semaphore`) and changes only by compare-and-swap.
//!
//! `plan` decides what to write from what was read; `op` is the state
//! machine that reads, writes and re-reads.

mod op;
mod plan;
mod room;

pub use op::{Finished, SemaphoreOp, SlotOutcome, MAX_SEMAPHORE_ATTEMPTS};
pub use plan::Wish;

#[cfg(test)]
mod tests;

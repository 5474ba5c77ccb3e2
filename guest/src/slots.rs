//! Semaphores and the fair queue as plain Rust: the contract's
//! `slot-options`, `slot` and `semaphore-state` (`SlotAttempt`, which
//! holds a `Held`, is the client's). The calls are
//! `Client::try_acquire_slot`, `acquire_slot`, `inspect_slots` and
//! `leave_queue` (each build's own file).

use crate::types::LockState;
use std::time::Duration;

/// How to wait for one of a key's slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotOptions {
    /// How many may hold the key at once: 1 ..= 64. Every contender must
    /// pass the same (a plain lock counts as 1), else
    /// `Error::LimitMismatch`.
    pub limit: u32,
    /// Wait in the key's queue: slots go to live waiters in the order they
    /// joined. A waiter keeps its place by attempting again within its ttl.
    pub fair: bool,
}

impl SlotOptions {
    /// Up to `limit` holders at once, not fair.
    pub fn limit(limit: u32) -> SlotOptions {
        SlotOptions { limit, fair: false }
    }

    /// Waits in the key's queue.
    pub fn fair(mut self) -> SlotOptions {
        self.fair = true;
        self
    }
}

/// One holder of a slot, or one waiter in the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    pub holder_id: String,
    /// The slot's fencing token; 0 for a waiter.
    pub token: u64,
    /// Its writer's wall clock.
    pub expires_at_ms: u64,
    /// When the slot was granted, or the waiter joined the queue.
    pub acquired_at_ms: u64,
    pub metadata: String,
    /// Not expired by the client's expiry clock.
    pub live: bool,
    /// As `LockState::expires_in`, for this entry alone.
    pub expires_in: Duration,
}

/// A semaphore's holders and queue, as read now (`Client::inspect_slots`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemaphoreState {
    /// The key's state as `Client::inspect` gives it.
    pub lock: LockState,
    pub limit: u32,
    /// In the order granted; expired ones kept until a writer drops them.
    pub holders: Vec<Slot>,
    /// In the order joined: the order slots go to live waiters.
    pub queue: Vec<Slot>,
}

#[cfg(test)]
mod tests;

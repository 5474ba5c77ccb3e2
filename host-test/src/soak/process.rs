//! One simulated process: what the plan does to it (crash, pause, clock
//! step) and how its member threads and request policies learn of it.
//!
//! A process is one instance of the component per key; a crash, a pause or
//! a clock step hits all of them at once. Shared through an `Arc`, as the
//! request policies that see every request live in the hooks.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Crash {
    pub at: Instant,
    pub restart_at: Instant,
}

#[derive(Default)]
pub struct Process {
    /// Bumped by each crash: a member or policy of an older generation is dead.
    generation: AtomicU32,
    crash: Mutex<Option<Crash>>,
    /// Armed by the plan: the process dies as its next request leaves
    /// (`kill_down_ms` later it restarts), so that request is in flight.
    kill_armed: AtomicBool,
    kill_down_ms: AtomicU64,
    /// (pause number, ms) of the latest pause between calls.
    pause: Mutex<Option<(u64, u64)>>,
    /// Armed by the plan: the next request stalls this long before it leaves.
    stall_armed_ms: AtomicU64,
    /// The wall-clock offset of every instance of the process.
    pub clock_offset_ms: AtomicI64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Process {
    pub fn with_offset(offset_ms: i64) -> Self {
        let p = Process::default();
        p.clock_offset_ms.store(offset_ms, Ordering::SeqCst);
        p
    }

    pub fn generation(&self) -> u32 {
        self.generation.load(Ordering::SeqCst)
    }

    pub fn last_crash(&self) -> Option<Crash> {
        *lock(&self.crash)
    }

    /// Kills the process now; it restarts after `down_ms`.
    pub fn crash_now(&self, down_ms: u64) -> Crash {
        let at = Instant::now();
        let crash = Crash {
            at,
            restart_at: at + Duration::from_millis(down_ms),
        };
        *lock(&self.crash) = Some(crash);
        self.generation.fetch_add(1, Ordering::SeqCst);
        crash
    }

    /// The process will die as its next request leaves.
    pub fn arm_kill(&self, down_ms: u64) {
        self.kill_down_ms.store(down_ms, Ordering::SeqCst);
        self.kill_armed.store(true, Ordering::SeqCst);
    }

    /// Takes the armed kill, if any: exactly one caller (a request, or the
    /// plan giving up waiting for one) gets it.
    pub fn take_kill(&self) -> Option<u64> {
        self.kill_armed
            .swap(false, Ordering::SeqCst)
            .then(|| self.kill_down_ms.load(Ordering::SeqCst))
    }

    pub fn pause(&self, ms: u64) {
        let mut p = lock(&self.pause);
        let n = p.map_or(1, |(n, _)| n + 1);
        *p = Some((n, ms));
    }

    pub fn latest_pause(&self) -> Option<(u64, u64)> {
        *lock(&self.pause)
    }

    pub fn arm_stall(&self, ms: u64) {
        self.stall_armed_ms.store(ms, Ordering::SeqCst);
    }

    pub fn take_stall(&self) -> Option<u64> {
        Some(self.stall_armed_ms.swap(0, Ordering::SeqCst)).filter(|&ms| ms > 0)
    }

    /// Disarms what no request took (at the end of the run).
    pub fn disarm(&self) -> (bool, bool) {
        (
            self.kill_armed.swap(false, Ordering::SeqCst),
            self.stall_armed_ms.swap(0, Ordering::SeqCst) > 0,
        )
    }
}

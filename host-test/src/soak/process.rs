//! One simulated process: what the plan does to it (crash, pause, clock
//! step) and how its member threads and request policies learn of it.
//!
//! A process is one client (instance of the component) and host elector
//! per key; a crash, a pause or a clock step hits all of them at once.
//! Shared through an `Arc`, as the request policies that see every request
//! live in the hooks, and the wall clocks of its instances read its offset.
//!
//! A pause stops the process's own threads (the member's) and holds every
//! request the process sends until it ends ([`Process::paused_for`], read
//! by the request policy); it cannot freeze the threads the host
//! `Elector` runs, whose watchdog goes on ending leadership on time, as a
//! resumed process's would at once (its monotonic clock ran on).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    /// When the latest pause began and ends: until then the process sends nothing.
    paused: Mutex<Option<(Instant, Instant)>>,
    /// Armed by the plan: the next request stalls this long before it leaves.
    stall_armed_ms: AtomicU64,
    /// The wall-clock offset of every instance of the process (their
    /// clocks read it, so a step hits them at once, mid-call too).
    pub clock_offset_ms: Arc<AtomicI64>,
}

/// A poisoned lock is still good: a panicked member thread is reported.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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

    /// For a member whose life ended with `crash`: sleeps until the process
    /// restarts (or the run ends) and says whether to start a new life.
    pub fn wait_for_restart(&self, crash: Option<Crash>, t_end: Instant) -> bool {
        let restart = crash.map_or_else(Instant::now, |c| c.restart_at);
        std::thread::sleep(restart.min(t_end).saturating_duration_since(Instant::now()));
        Instant::now() < t_end
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

    /// Stops the process for `ms`: its member sleeps, its requests wait.
    pub fn pause(&self, ms: u64) {
        let now = Instant::now();
        *lock(&self.paused) = Some((now, now + Duration::from_millis(ms)));
        let mut p = lock(&self.pause);
        let n = p.map_or(1, |(n, _)| n + 1);
        *p = Some((n, ms));
    }

    /// While paused: how long until the pause ends.
    pub fn paused_for(&self) -> Option<Duration> {
        let (_, until) = (*lock(&self.paused))?;
        Some(until.saturating_duration_since(Instant::now())).filter(|d| !d.is_zero())
    }

    pub fn latest_pause(&self) -> Option<(u64, u64)> {
        *lock(&self.pause)
    }

    /// When the latest pause began and ends (or ended).
    pub fn latest_pause_span(&self) -> Option<(Instant, Instant)> {
        *lock(&self.paused)
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

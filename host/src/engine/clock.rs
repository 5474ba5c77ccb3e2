//! The clock every deadline is judged on, in the host and for the
//! component: time since the machine booted, counting the time it spent
//! suspended.
//!
//! A laptop or a VM suspended for longer than a lease must resume knowing
//! the lease is over. std's `Instant` on Linux reads CLOCK_MONOTONIC, which
//! stops while the machine is suspended: a lease judged on it still looks
//! held after the resume, for as long as it had to go when the machine
//! slept, while the store has granted the key to someone else (the "two
//! leaders after a suspend" that lock clients keep shipping). So:
//! - Linux and Android: CLOCK_BOOTTIME (CLOCK_MONOTONIC plus the time
//!   suspended; slewed alike, never stepped);
//! - macOS and iOS: CLOCK_MONOTONIC, which counts sleep there (std's
//!   `Instant` reads CLOCK_UPTIME_RAW, which does not);
//! - elsewhere: std's `Instant` (on Windows it counts suspended time).
//!
//! Sleeping: tokio's timers and std's timed waits run on CLOCK_MONOTONIC,
//! so a sleep that spans a suspend wakes late by the time suspended. A wait
//! for a deadline ([`Clock::sleep_until`]) therefore sleeps at most
//! [`RESUME_CHECK`] at a time and reads this clock between: a deadline that
//! passed while the machine was suspended is acted on within
//! `RESUME_CHECK` of the resume. (A timerfd on CLOCK_BOOTTIME would wake at
//! once, but it costs a descriptor per waiter and needs tokio's IO driver
//! on whatever runtime a caller brings; ten wakes a second per waiter cost
//! less than either, and there are few waiters: a client's scheduler, an
//! elector, a caller awaiting a loss.)
//!
//! A [`Clock`] is this clock, or, for tests, this clock plus suspends the
//! test declares ([`Clock::resume_after`]), moving it forward as the
//! system's moves at a resume. A client reads one clock for everything:
//! its scheduler, its leases' guards, its electors and the monotonic clock
//! its instances give the component.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The longest a wait for a deadline oversleeps it after the machine
/// resumes from a suspend (see the module).
pub const RESUME_CHECK: Duration = Duration::from_millis(100);

/// An instant on a [`Clock`]: the time since the machine booted, suspends
/// included. Arithmetic saturates: adding any duration never panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(Duration);

impl Instant {
    /// The time from `earlier` to this instant; zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// `self + d`, or the clock's end for a `d` too long for it (no
    /// instant of a clock that started at boot comes near it).
    pub fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d))
    }

    /// `self - d`, or the clock's start.
    pub fn saturating_sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d))
    }

    /// The time since boot this instant is.
    pub fn since_boot(self) -> Duration {
        self.0
    }

    /// The instant `d` after boot.
    pub fn from_since_boot(d: Duration) -> Instant {
        Instant(d)
    }
}

/// The clock deadlines are judged on: the system's (see the module), or a
/// test's, which jumps forward when told the machine resumed. Cheap to
/// clone; clones of a test's clock move together.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// A test's clock: nanoseconds of suspends it declared.
    suspended_ns: Option<Arc<AtomicU64>>,
}

impl Clock {
    /// The system's clock, suspended time included.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// A clock that reads as the system's until [`Clock::resume_after`] is
    /// called on it or a clone of it: for tests of what happens when a
    /// machine resumes.
    pub fn for_tests() -> Clock {
        Clock {
            suspended_ns: Some(Arc::default()),
        }
    }

    /// For a clock made by [`Clock::for_tests`]: the machine was suspended
    /// for `d` and has just resumed. The clock jumps `d` forward, as the
    /// system's does at a resume, while std's and tokio's timers did not
    /// see `d` pass: what was due meanwhile is due now. False (and nothing
    /// changes) on the system's clock.
    pub fn resume_after(&self, d: Duration) -> bool {
        let Some(suspended) = &self.suspended_ns else {
            return false;
        };
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let _ = suspended.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |total| {
            Some(total.saturating_add(ns))
        });
        true
    }

    /// Now on this clock.
    pub fn now(&self) -> Instant {
        let suspended = self
            .suspended_ns
            .as_ref()
            .map_or(0, |ns| ns.load(Ordering::SeqCst));
        Instant(system_now().saturating_add(Duration::from_nanos(suspended)))
    }

    /// How long the machine has spent suspended since it booted, as far as
    /// this clock can tell (on Linux and Android, CLOCK_BOOTTIME less
    /// CLOCK_MONOTONIC; elsewhere only a test clock's declared suspends):
    /// what it grew by between two readings is the part of that interval
    /// the machine slept (to within microseconds: the two system clocks
    /// are read one after the other), which names a deadline missed across
    /// a suspend.
    pub fn asleep(&self) -> Duration {
        let declared = self
            .suspended_ns
            .as_ref()
            .map_or(0, |ns| ns.load(Ordering::SeqCst));
        system_asleep().saturating_add(Duration::from_nanos(declared))
    }

    /// Resolves once this clock has reached `deadline`, within
    /// [`RESUME_CHECK`] after a resume from a suspend that passed it.
    pub async fn sleep_until(&self, deadline: Instant) {
        loop {
            let left = deadline.saturating_duration_since(self.now());
            if left.is_zero() {
                return;
            }
            tokio::time::sleep(left.min(RESUME_CHECK)).await;
        }
    }

    /// Blocks the calling thread until this clock has reached `deadline`
    /// (as [`Clock::sleep_until`]).
    pub fn sleep_until_blocking(&self, deadline: Instant) {
        loop {
            let left = deadline.saturating_duration_since(self.now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(RESUME_CHECK));
        }
    }

    /// `at` as an instant of std's clock, read now: the std `Instant` at
    /// which `at` comes if the machine is not suspended before then. (For
    /// a caller comparing with `std::time::Instant::now()`: across a later
    /// suspend the two clocks part.)
    pub fn to_std(&self, at: Instant) -> std::time::Instant {
        let (now, std_now) = (self.now(), std::time::Instant::now());
        if at >= now {
            std_plus(std_now, at.saturating_duration_since(now))
        } else {
            let ago = now.saturating_duration_since(at);
            std_now.checked_sub(ago).unwrap_or(std_now)
        }
    }

    /// A std `Instant` (one read from std's clock, or one this crate
    /// returned) as an instant of this clock, read now.
    pub fn from_std(&self, at: std::time::Instant) -> Instant {
        let (std_now, now) = (std::time::Instant::now(), self.now());
        match at.checked_duration_since(std_now) {
            Some(ahead) => now.saturating_add(ahead),
            None => now.saturating_sub(std_now.saturating_duration_since(at)),
        }
    }
}

/// How far ahead a std instant is ever put: "never" to any lease or wait,
/// yet an instant every platform's clock holds (100 years overflows on
/// some).
const FOREVER: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// `at + d` on std's clock without the panic of `Instant + Duration` on
/// overflow: a `d` beyond thirty years counts as thirty years.
pub(crate) fn std_plus(at: std::time::Instant, d: Duration) -> std::time::Instant {
    at.checked_add(d.min(FOREVER)).unwrap_or(at)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn system_now() -> Duration {
    read(rustix::time::ClockId::Boottime)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn system_asleep() -> Duration {
    // Monotonic first: a suspend between the two readings only adds.
    let awake = read(rustix::time::ClockId::Monotonic);
    read(rustix::time::ClockId::Boottime).saturating_sub(awake)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn system_asleep() -> Duration {
    Duration::ZERO
}

#[cfg(any(target_os = "macos", target_os = "ios"))]
fn system_now() -> Duration {
    read(rustix::time::ClockId::Monotonic)
}

#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "ios"
))]
fn read(id: rustix::time::ClockId) -> Duration {
    let t = rustix::time::clock_gettime(id);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u32::try_from(t.tv_nsec).unwrap_or(0);
    Duration::new(secs, nanos.min(999_999_999))
}

#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "ios"
)))]
fn system_now() -> Duration {
    use std::sync::OnceLock;
    static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
    // From an origin a second back, so no reading is the clock's start.
    ORIGIN.get_or_init(std::time::Instant::now).elapsed() + Duration::from_secs(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_clock_runs_with_std_while_awake() {
        let clock = Clock::system();
        let (a, std_a) = (clock.now(), std::time::Instant::now());
        std::thread::sleep(Duration::from_millis(20));
        let (b, std_b) = (clock.now(), std::time::Instant::now());
        let ours = b.saturating_duration_since(a);
        let theirs = std_b.duration_since(std_a);
        assert!(
            ours.abs_diff(theirs) < Duration::from_millis(5),
            "{ours:?} {theirs:?}"
        );
        assert!(
            !clock.resume_after(Duration::from_secs(1)),
            "the system's clock moved"
        );
    }

    #[test]
    fn a_resume_moves_a_tests_clock_and_its_clones_forward() {
        let clock = Clock::for_tests();
        let clone = clock.clone();
        let before = clock.now();
        assert!(clone.resume_after(Duration::from_secs(60)));
        let jumped = clock.now().saturating_duration_since(before);
        assert!(jumped >= Duration::from_secs(60), "{jumped:?}");
        assert!(jumped < Duration::from_secs(61), "{jumped:?}");
        let other = Clock::for_tests();
        assert!(other.now().saturating_duration_since(before) < Duration::from_secs(1));
    }

    #[test]
    fn a_resume_adds_its_suspend_to_the_time_asleep() {
        let clock = Clock::for_tests();
        let before = clock.asleep();
        std::thread::sleep(Duration::from_millis(20));
        // Awake, the machine's sleep does not grow (the two clocks tick
        // together; a reading a few microseconds apart at most).
        let awake = clock.asleep().saturating_sub(before);
        assert!(awake < Duration::from_millis(5), "{awake:?}");
        clock.resume_after(Duration::from_secs(60));
        // (The two system clocks are read one after the other: their
        // difference wavers by microseconds.)
        let slept = clock.asleep().saturating_sub(before);
        assert!(slept > Duration::from_millis(59_990), "{slept:?}");
        assert!(slept < Duration::from_secs(61), "{slept:?}");
    }

    #[test]
    fn std_instants_map_both_ways() {
        let clock = Clock::system();
        let at = clock.now().saturating_add(Duration::from_secs(5));
        let std_at = clock.to_std(at);
        let left = std_at.saturating_duration_since(std::time::Instant::now());
        assert!(left > Duration::from_millis(4_900) && left <= Duration::from_secs(5));
        let back = clock.from_std(std_at);
        assert!(back.saturating_duration_since(at) < Duration::from_millis(5));
        assert!(at.saturating_duration_since(back) < Duration::from_millis(5));
        let past = clock.now().saturating_sub(Duration::from_secs(3));
        assert!(clock.to_std(past) < std::time::Instant::now());
        // Nothing overflows.
        let never = clock.now().saturating_add(Duration::MAX);
        assert!(clock.to_std(never) > std::time::Instant::now());
        assert!(clock.from_std(std_plus(std::time::Instant::now(), Duration::MAX)) > clock.now());
    }

    /// A resume 60 s long in 50 ms, on another thread: when it happened.
    fn resume_soon(clock: &Clock) -> std::thread::JoinHandle<std::time::Instant> {
        let waker = clock.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            waker.resume_after(Duration::from_secs(60));
            std::time::Instant::now()
        })
    }

    #[test]
    fn a_wait_for_a_deadline_wakes_within_a_check_of_a_resume_that_passed_it() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let clock = Clock::for_tests();
        let deadline = clock.now().saturating_add(Duration::from_secs(30));
        let resumed = resume_soon(&clock);
        runtime.block_on(clock.sleep_until(deadline));
        let woke = std::time::Instant::now();
        // Acted on at the resume, not 30 s later (a loaded machine is slow).
        let late = woke.saturating_duration_since(resumed.join().unwrap());
        assert!(late < Duration::from_secs(1), "{late:?}");
        // And blocking.
        let deadline = clock.now().saturating_add(Duration::from_secs(30));
        let resumed = resume_soon(&clock);
        clock.sleep_until_blocking(deadline);
        let late = std::time::Instant::now().saturating_duration_since(resumed.join().unwrap());
        assert!(late < Duration::from_secs(1), "{late:?}");
    }
}

//! `--wait` on the system's clock, suspended time included: a machine that
//! slept past the wait's end ends the wait when it wakes, not a sleep's
//! length later (std's `Instant` stops while the machine sleeps).

use s3_lease_host::clock::{Clock, Instant};
use std::time::Duration;

/// How often a waiting `run` says where it stands.
const WAIT_LINE_EVERY: Duration = Duration::from_secs(5);
/// When a waiting `run` first says it.
const FIRST_WAIT_LINE: Duration = Duration::from_millis(500);

/// One wait: when it began, when it ends (never, for a wait too long for
/// the clock to count), and when its next "waiting" line is due.
#[derive(Clone)]
pub(crate) struct WaitClock {
    clock: Clock,
    started: Instant,
    deadline: Option<Instant>,
    next_line: Instant,
}

impl WaitClock {
    /// A wait of `wait` (`None`: for ever) from now on `clock`.
    pub(crate) fn start(clock: Clock, wait: Option<Duration>) -> Self {
        let started = clock.now();
        let deadline = wait.and_then(|w| {
            started
                .since_boot()
                .checked_add(w)
                .map(Instant::from_since_boot)
        });
        WaitClock {
            clock,
            started,
            deadline,
            next_line: started.saturating_add(FIRST_WAIT_LINE),
        }
    }

    pub(crate) fn now(&self) -> Instant {
        self.clock.now()
    }

    /// How long the wait has lasted.
    pub(crate) fn waited(&self) -> Duration {
        self.now().saturating_duration_since(self.started)
    }

    /// Whether the wait's end has come by `now`.
    pub(crate) fn ran_out(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// `nap`, cut short to end at the wait's end.
    pub(crate) fn nap(&self, nap: Duration, now: Instant) -> Duration {
        match self.deadline {
            Some(d) => nap.min(d.saturating_duration_since(now)),
            None => nap,
        }
    }

    /// True (and the next one due later) when a "waiting" line is due at
    /// `now`: `FIRST_WAIT_LINE` after the wait began, then every
    /// `WAIT_LINE_EVERY`.
    pub(crate) fn line_due(&mut self, now: Instant) -> bool {
        if now >= self.next_line {
            self.next_line = now.saturating_add(WAIT_LINE_EVERY);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests;

//! A simulated process's clocks and what its threads wait for: plain
//! values the world keeps and the process's `Io` reads (`host`).

use super::START_MS;
use crate::error::Error;
use crate::stores::s3::S3Response;

/// A process's clocks as functions of true time `t` (ms since the start).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// Monotonic: its own origin, and a rate off by `ppm` millionths
    /// (never a jump); it stands still while the machine is suspended if
    /// it is blind to suspends (`asleep`).
    pub mono_origin: u64,
    pub ppm: i64,
    /// Wall: true time plus an offset, which jumps (`World::jump`).
    pub wall_offset_ms: i64,
    /// The machine's suspends, as the monotonic clock counts them.
    pub asleep: Asleep,
}

const MILLION: i128 = 1_000_000;

impl Clock {
    pub fn mono(&self, t: u64) -> u64 {
        let awake = t - self.asleep.uncounted(t);
        let drift = (i128::from(awake) * i128::from(self.ppm)).div_euclid(MILLION);
        (i128::from(self.mono_origin) + i128::from(awake) + drift) as u64
    }

    /// The first true instant at which the monotonic clock reads `m`.
    pub fn true_at(&self, m: u64) -> u64 {
        let since = i128::from(m.saturating_sub(self.mono_origin));
        let mut awake = (since * MILLION / (MILLION + i128::from(self.ppm))) as u64;
        let counted = |awake: u64| {
            let drift = (i128::from(awake) * i128::from(self.ppm)).div_euclid(MILLION);
            (i128::from(self.mono_origin) + i128::from(awake) + drift) as u64
        };
        while counted(awake) < m {
            awake += 1;
        }
        while awake > 0 && counted(awake - 1) >= m {
            awake -= 1;
        }
        self.asleep.true_of_awake(awake)
    }

    pub fn wall(&self, t: u64) -> u64 {
        (START_MS + t).saturating_add_signed(self.wall_offset_ms)
    }
}

/// What a process's monotonic clock makes of the machine's suspends: a
/// clock that counts them (CLOCK_BOOTTIME, the host's) runs on through
/// them, as through a pause; one blind to them (std's `Instant` on Linux)
/// stands still from a suspend's start to its end, and so reads the time
/// suspended short for ever after.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asleep {
    pub blind: bool,
    /// The suspends, `[from, until)` in true time, in order; the oldest
    /// are folded into `folded_ms` when there are more.
    spans: [(u64, u64); 8],
    len: usize,
    folded_ms: u64,
}

impl Asleep {
    /// No suspend yet, on a clock `blind` to suspends or not.
    pub fn new(blind: bool) -> Self {
        Asleep {
            blind,
            ..Asleep::default()
        }
    }

    /// Ms of true time before `t` that the monotonic clock did not count.
    pub fn uncounted(&self, t: u64) -> u64 {
        if !self.blind {
            return 0;
        }
        let spans = self.spans[..self.len].iter();
        self.folded_ms
            + spans
                .map(|&(from, until)| t.clamp(from, until) - from)
                .sum::<u64>()
    }

    /// The first true instant at which `awake` ms were counted.
    pub fn true_of_awake(&self, awake: u64) -> u64 {
        if !self.blind {
            return awake;
        }
        let mut frozen = self.folded_ms;
        for &(from, until) in &self.spans[..self.len] {
            if awake + frozen <= from {
                break;
            }
            frozen += until - from;
        }
        awake + frozen
    }

    /// The machine is suspended over `[from, until)`, after every earlier
    /// suspend ended.
    pub fn suspended(&mut self, from: u64, until: u64) {
        if self.len == self.spans.len() {
            let (oldest_from, oldest_until) = self.spans[0];
            self.folded_ms += oldest_until - oldest_from;
            self.spans.copy_within(1.., 0);
            self.len -= 1;
        }
        self.spans[self.len] = (from, until.max(from));
        self.len += 1;
    }
}

#[cfg(test)]
mod asleep_tests {
    use super::*;

    #[test]
    fn a_blind_clock_stands_still_while_suspended_and_a_counting_one_runs_on() {
        let clock = |blind| {
            let mut asleep = Asleep {
                blind,
                ..Asleep::default()
            };
            asleep.suspended(1_000, 4_000);
            asleep.suspended(10_000, 10_500);
            Clock {
                mono_origin: 7,
                ppm: 0,
                wall_offset_ms: 0,
                asleep,
            }
        };
        let (blind, counting) = (clock(true), clock(false));
        for t in [0, 999, 1_000, 2_500, 4_000, 9_999, 10_200, 10_500, 20_000] {
            assert_eq!(counting.mono(t), 7 + t);
            assert_eq!(counting.true_at(counting.mono(t)), t);
        }
        assert_eq!(blind.mono(999), 7 + 999);
        assert_eq!(blind.mono(2_500), 7 + 1_000, "stands still");
        assert_eq!(blind.mono(4_000), 7 + 1_000);
        assert_eq!(blind.mono(5_000), 7 + 2_000, "short by the suspend");
        assert_eq!(blind.mono(20_000), 7 + 20_000 - 3_500);
        // A deadline read before the suspend comes the suspend later.
        assert_eq!(blind.true_at(7 + 1_500), 4_500);
        assert_eq!(blind.true_at(7 + 1_000), 1_000, "its first instant");
        assert_eq!(blind.true_at(7 + 500), 500);
        assert_eq!(blind.true_at(blind.mono(20_000)), 20_000);
    }
}

/// What a process waits for, and what came of it.
#[derive(Debug, Default)]
pub struct Waiting {
    /// The ticket of the send or sleep the process is suspended on.
    pub ticket: Option<u64>,
    /// Set when the world resumes the process: that ticket is over.
    pub done: Option<u64>,
    /// A send's outcome, once its reply came (or failed to).
    pub outcome: Option<Result<S3Response, Error>>,
}

/// Which of a process's threads waits: its calls, or its credential
/// refresher (which runs beside them, as the host's thread does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    Calls,
    Refresher,
}

//! Whether this process could act when a claim was lost. The supervision
//! looks at the claim every `POLL`; a look that comes far later than that
//! ends a stall: the process was stopped (SIGSTOP, Ctrl-Z: a SIGCONT came
//! since, its handler run by whichever thread resumes first), or not
//! stopped but starved of CPU or wedged. A deadline that passed in a stall
//! of at least half the claim's deadline (the time a renew has to
//! succeed: at least one renew that was due could not even be sent) is
//! the stall's doing; one that passed while we looked on time, or in a
//! shorter stall (a loaded machine's hiccup), is the store's: its renews
//! failed or hung (a network cut), however soon the guardian acted on it.
//!
//! Looks are timed on the host's clock, which counts the time the machine
//! spent suspended (`s3_lease_host::clock`): a suspend is a stall too, and
//! one that the machine's sleep took most of is named as a suspend
//! (`Clock::asleep` grew by it), not as a starved process.

use crate::duration::show;
use s3_lease_host::clock::{Clock, Instant};
use std::time::Duration;

/// The shortest gap between two looks that is a stall (they come every
/// `POLL`, 25 ms; a loaded machine stretches that by tens of ms).
pub const STALL_MIN: Duration = Duration::from_millis(250);

/// A stall that a look ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub lasted: Duration,
    /// A SIGCONT came during it: the process had been stopped.
    pub stopped: bool,
    /// How much of it the machine spent suspended.
    pub suspended: Duration,
}

impl Stall {
    /// `s3-lease could not act for 3.2s (it was stopped: SIGSTOP or Ctrl-Z)`.
    /// `the machine was suspended for 1m0s (s3-lease could not act for
    /// 1m0s)` when the machine's sleep took at least half of it.
    pub fn describe(&self) -> String {
        if self.suspended >= self.lasted / 2 {
            return format!(
                "the machine was suspended for {} (s3-lease could not act for {})",
                show(self.suspended),
                show(self.lasted)
            );
        }
        let how = if self.stopped {
            "it was stopped: SIGSTOP or Ctrl-Z"
        } else {
            "not stopped: starved of CPU or wedged"
        };
        format!("s3-lease could not act for {} ({how})", show(self.lasted))
    }
}

/// The supervision's looks, each at a time read off a [`Clock`].
pub struct Looks {
    clock: Clock,
    last: Instant,
    /// The machine's time asleep at the last look.
    asleep: Duration,
    /// A gap at least this long is a stall.
    stall: Duration,
}

impl Looks {
    /// Looks from now at a claim held `deadline` after each renew.
    pub fn new(clock: Clock, deadline: Duration) -> Looks {
        Looks {
            last: clock.now(),
            asleep: clock.asleep(),
            clock,
            stall: STALL_MIN.max(deadline / 2),
        }
    }

    /// A look now, `continued` if a SIGCONT came since the last one
    /// (`signals::take_continued`): the stall it ends, if the last look was
    /// a stall ago.
    pub fn look(&mut self, continued: bool) -> Option<Stall> {
        let (now, asleep) = (self.clock.now(), self.clock.asleep());
        let lasted = now.saturating_duration_since(self.last);
        let suspended = asleep.saturating_sub(self.asleep).min(lasted);
        (self.last, self.asleep) = (now, asleep);
        (lasted >= self.stall).then_some(Stall {
            lasted,
            stopped: continued,
            suspended,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stall of `lasted_ms`, `suspended_ms` of it asleep.
    fn stall(lasted_ms: u64, suspended_ms: u64, stopped: bool) -> Stall {
        Stall {
            lasted: Duration::from_millis(lasted_ms),
            stopped,
            suspended: Duration::from_millis(suspended_ms),
        }
    }

    #[test]
    fn only_a_late_look_ends_a_stall_and_a_sigcont_says_it_was_a_stop() {
        // A 2 s deadline: gaps of 1 s and more are stalls.
        let clock = Clock::for_tests();
        let mut looks = Looks::new(clock.clone(), Duration::from_secs(2));
        assert_eq!(looks.look(false), None);
        // A loaded machine's hiccup: the store's renews are to blame.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(looks.look(false), None);
        // A SIGCONT between two looks on time is no stall.
        assert_eq!(looks.look(true), None);
        // However short the deadline, a stall is at least STALL_MIN.
        let mut short = Looks::new(clock.clone(), Duration::from_millis(100));
        assert_eq!(short.look(false), None);
        let starved = stall(1_200, 0, false);
        assert!(starved.describe().contains("starved"), "{starved:?}");
        let stopped = stall(3_000, 0, true);
        assert!(stopped.describe().contains("stopped: SIGSTOP"));
        // A suspend the machine slept through: named as one, however the
        // process was doing.
        clock.resume_after(Duration::from_secs(60));
        let suspended = looks.look(false).unwrap();
        assert!(suspended.lasted >= Duration::from_secs(60), "{suspended:?}");
        // (Time asleep is read off two system clocks one after the other:
        // it wavers by microseconds.)
        assert!(
            suspended.suspended > Duration::from_millis(59_990),
            "{suspended:?}"
        );
        let said = suspended.describe();
        assert!(
            said.starts_with("the machine was suspended for 1m00s")
                || said.starts_with("the machine was suspended for 60.0s"),
            "{said}"
        );
        assert!(short.look(false).is_some());
        // A stall the machine slept through only a part of is the
        // process's own.
        assert!(stall(3_000, 1_000, false).describe().contains("starved"));
    }
}

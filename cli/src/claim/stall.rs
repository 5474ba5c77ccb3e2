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

use crate::duration::show;
use std::time::{Duration, Instant};

/// The shortest gap between two looks that is a stall (they come every
/// `POLL`, 25 ms; a loaded machine stretches that by tens of ms).
pub const STALL_MIN: Duration = Duration::from_millis(250);

/// A stall that a look ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    pub lasted: Duration,
    /// A SIGCONT came during it: the process had been stopped.
    pub stopped: bool,
}

impl Stall {
    /// `s3-lease could not act for 3.2s (it was stopped: SIGSTOP or Ctrl-Z)`.
    pub fn describe(&self) -> String {
        let how = if self.stopped {
            "it was stopped: SIGSTOP or Ctrl-Z"
        } else {
            "not stopped: starved of CPU or wedged"
        };
        format!("s3-lease could not act for {} ({how})", show(self.lasted))
    }
}

/// The supervision's looks, time passed in.
pub struct Looks {
    last: Instant,
    /// A gap at least this long is a stall.
    stall: Duration,
}

impl Looks {
    /// Looks from `now` at a claim held `deadline` after each renew.
    pub fn new(now: Instant, deadline: Duration) -> Looks {
        Looks {
            last: now,
            stall: STALL_MIN.max(deadline / 2),
        }
    }

    /// A look at `now`, `continued` if a SIGCONT came since the last one
    /// (`signals::take_continued`): the stall it ends, if the last look was
    /// a stall ago.
    pub fn look(&mut self, now: Instant, continued: bool) -> Option<Stall> {
        let lasted = now.saturating_duration_since(self.last);
        self.last = now;
        (lasted >= self.stall).then_some(Stall {
            lasted,
            stopped: continued,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_late_look_ends_a_stall_and_a_sigcont_says_it_was_a_stop() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // A 2 s deadline: gaps of 1 s and more are stalls.
        let mut looks = Looks::new(t0, Duration::from_secs(2));
        assert_eq!(looks.look(at(25), false), None);
        assert_eq!(looks.look(at(200), false), None);
        // A loaded machine's hiccup: the store's renews are to blame.
        assert_eq!(looks.look(at(900), false), None);
        let starved = looks.look(at(2_100), false).unwrap();
        assert_eq!(starved.lasted, Duration::from_millis(1_200));
        assert!(!starved.stopped);
        assert!(starved.describe().contains("starved"), "{starved:?}");
        // A SIGCONT during the gap: stopped.
        let stopped = looks.look(at(5_100), true).unwrap();
        assert!(stopped.stopped);
        assert!(stopped.describe().contains("stopped: SIGSTOP"));
        // A SIGCONT between two looks on time is no stall.
        assert_eq!(looks.look(at(5_125), true), None);
        // An instant earlier than the last look is no stall either.
        assert_eq!(looks.look(at(100), false), None);
        // However short the deadline, a stall is at least STALL_MIN.
        let mut looks = Looks::new(t0, Duration::from_millis(100));
        assert_eq!(looks.look(at(200), false), None);
        assert!(looks.look(at(200) + STALL_MIN, false).is_some());
    }
}

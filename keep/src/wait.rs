//! Waiting for a lock or a slot: when to try again, and when to give up.
//!
//! One schedule for every waiter: the component's own `acquire` (which
//! waits inside one call), and hosts that wait between calls (so that a
//! waiting acquire holds nothing of theirs while it waits). Attempts back
//! off exponentially with jitter, but wake just after a holder's known
//! expiry; a waiter with a place in a fair queue looks at a steady pace
//! instead; and the wait never runs past its timeout: the last pause is cut
//! to end at it, and then one last attempt is made.

/// First and largest pause between attempts.
pub const BACKOFF_FIRST_MS: u64 = 25;
pub const BACKOFF_MAX_MS: u64 = 2_000;

/// The pause before attempt `attempt + 1`: exponential with jitter in the
/// upper half, but no later than just after a holder's known expiry, so a
/// waiter takes over promptly without everyone hammering the key at once.
pub fn backoff_ms(attempt: u32, random: u64, until_expiry_ms: Option<u64>) -> u64 {
    let cap = BACKOFF_FIRST_MS
        .saturating_mul(1u64 << attempt.min(16))
        .min(BACKOFF_MAX_MS);
    let delay = cap / 2 + random % (cap / 2 + 1);
    match until_expiry_ms {
        Some(t) if t < delay => t + 1 + random % (BACKOFF_FIRST_MS + 1),
        _ => delay,
    }
}

/// How often a fair waiter looks at the queue: a tenth of its ttl, within
/// 50 ms ..= 1 s. Each look is one conditional GET (a 304 while nothing
/// changed); the handover to the head of the queue waits at most this
/// long after a holder releases.
pub fn fair_poll_ms(ttl_ms: u64) -> u64 {
    (ttl_ms / 10).clamp(50, 1_000)
}

/// What an attempt that did not grant found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// Held by others; their lease can expire in this long, when known.
    Held { expires_in_ms: Option<u64> },
    /// We have a place in a fair queue: look again at the fair pace.
    Queued,
    /// Nothing decided (a transient error, our own place rewritten):
    /// back off and try again.
    Undecided,
}

/// One wait, from its first attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    started_ms: u64,
    timeout_ms: u64,
    attempt: u32,
}

impl Wait {
    /// A wait of at most `timeout_ms` from `now_ms` (its first attempt
    /// is made at once, whatever the timeout).
    pub fn new(now_ms: u64, timeout_ms: u64) -> Wait {
        Wait {
            started_ms: now_ms,
            timeout_ms,
            attempt: 0,
        }
    }

    /// How long it has waited at `now_ms`.
    pub fn waited_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.started_ms)
    }

    /// Whether the wait is over at `now_ms`.
    pub fn is_over(&self, now_ms: u64) -> bool {
        self.waited_ms(now_ms) >= self.timeout_ms
    }

    /// After an attempt at `now_ms` that `missed`, with the wait not
    /// over: how long to pause before the next attempt (never past the
    /// timeout). `random` jitters the backoff; `poll_ms` is a queued
    /// waiter's pace.
    pub fn pause_ms(&mut self, missed: Missed, now_ms: u64, random: u64, poll_ms: u64) -> u64 {
        let left = self.timeout_ms.saturating_sub(self.waited_ms(now_ms));
        let pause = match missed {
            Missed::Queued => poll_ms,
            Missed::Held { expires_in_ms } => backoff_ms(self.attempt, random, expires_in_ms),
            Missed::Undecided => backoff_ms(self.attempt, random, None),
        };
        self.attempt = self.attempt.saturating_add(1);
        pause.min(left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_caps() {
        for attempt in 0..40 {
            for random in [0, 1, 7, 999, u64::MAX] {
                let d = backoff_ms(attempt, random, None);
                let cap = (BACKOFF_FIRST_MS << attempt.min(16)).min(BACKOFF_MAX_MS);
                assert!(
                    d >= cap / 2 && d <= cap,
                    "attempt {attempt}: {d} vs cap {cap}"
                );
            }
        }
    }

    #[test]
    fn backoff_wakes_just_after_a_known_expiry() {
        let d = backoff_ms(10, 3, Some(100));
        assert!((101..=101 + BACKOFF_FIRST_MS).contains(&d), "{d}");
        // A far expiry does not stretch the pause.
        assert!(backoff_ms(0, 3, Some(60_000)) <= BACKOFF_FIRST_MS);
    }

    /// The timeout is an upper bound: no pause runs past it, and once it
    /// has passed there is no next attempt.
    #[test]
    fn never_waits_past_its_timeout() {
        let mut w = Wait::new(1_000, 1_000);
        let mut now = 1_000;
        let held = Missed::Held {
            expires_in_ms: Some(30_000),
        };
        while !w.is_over(now) {
            now += w.pause_ms(held, now, 12345, 100);
            assert!(now <= 2_000);
        }
        assert_eq!(now, 2_000);
        // A timeout of 0: one attempt, then over.
        assert!(Wait::new(5, 0).is_over(5));
    }

    #[test]
    fn a_queued_waiter_looks_at_the_fair_pace() {
        let mut w = Wait::new(0, 10_000);
        assert_eq!(w.pause_ms(Missed::Queued, 0, 1, 300), 300);
        assert_eq!(fair_poll_ms(3_000), 300);
        assert_eq!(fair_poll_ms(100), 50);
        assert_eq!(fair_poll_ms(60_000), 1_000);
    }
}

//! A held lease, as its holder must judge it: on its own monotonic clock,
//! from when the write that granted or last renewed it was *sent*.
//!
//! The lease on the store runs its ttl from when that write reached the
//! store, which is after it was sent; so counting from the send is safe
//! whatever the reply's delay, and counting from the reply is not (a reply
//! delayed by most of the ttl would leave the holder believing in a lease
//! that a contender may already have taken over). The guard claims the
//! lease for `deadline` after each such send (a tenth of the ttl short of
//! it by default, a margin for clock rates), renews every third of that,
//! and retries a failed renew sooner; a renew's reply that comes after the
//! claim ran out never brings it back.
//!
//! A guard begins before the call that may grant: [`Attempt::start`] takes
//! the instant the grant is counted from, and [`Attempt::granted`] turns it
//! into a guard once the grant's reply is in.

/// How a guard counts and renews.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Held for this long after each successful write was sent (at most the ttl).
    pub deadline_ms: u64,
    /// Renew this long after the last successful renew was sent.
    pub every_ms: u64,
    /// After a failed renew, try again this much later.
    pub retry_ms: u64,
}

/// The shortest renew interval: below it, renewing would be most of the work.
const MIN_EVERY_MS: u64 = 50;
/// The longest pause after a failed renew.
const MAX_RETRY_MS: u64 = 1_000;

impl Timing {
    /// Held for `deadline_ms` (capped at the ttl) after each send; renewed
    /// every third of that (at least 50 ms apart); a failed renew retried
    /// after a third of the interval (at most 1 s).
    pub fn new(ttl_ms: u64, deadline_ms: u64) -> Timing {
        let deadline_ms = deadline_ms.min(ttl_ms);
        let every_ms = (deadline_ms / 3).max(MIN_EVERY_MS);
        Timing {
            deadline_ms,
            every_ms,
            retry_ms: (every_ms / 3).min(MAX_RETRY_MS),
        }
    }

    /// The default: held until a tenth of the ttl before it runs out.
    pub fn for_ttl(ttl_ms: u64) -> Timing {
        Timing::new(ttl_ms, ttl_ms - ttl_ms / 10)
    }
}

/// A call that may grant a lease, begun at `sent_ms`: the grant is counted
/// from here, never from its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    sent_ms: u64,
}

impl Attempt {
    /// Take this just before the call that may grant.
    pub fn start(now_ms: u64) -> Attempt {
        Attempt { sent_ms: now_ms }
    }

    /// When the attempt began.
    pub fn sent_ms(&self) -> u64 {
        self.sent_ms
    }

    /// The attempt granted a lease, and its reply came at `now_ms`: a guard
    /// that claims it for `timing.deadline_ms` from the attempt's start. A
    /// reply that came after that claims nothing (the guard is ended).
    pub fn granted(self, timing: Timing, now_ms: u64) -> Guard {
        let valid_until = self.sent_ms.saturating_add(timing.deadline_ms);
        Guard {
            timing,
            valid_until,
            next_renew: self.sent_ms.saturating_add(timing.every_ms),
            renew_sent: None,
            end: (now_ms >= valid_until).then_some(End::Expired),
        }
    }
}

/// Why a guard no longer holds its lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// A renew found another grant in place (or the lock object gone).
    Taken,
    /// No renew succeeded in time: they failed or hung until the claim ran
    /// out, or a reply came after it.
    Expired,
    /// A renew failed with an error that retrying cannot fix.
    Failed,
    /// Its owner gave it back (or stopped keeping it).
    Released,
}

/// What a guard's driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Send a renew now: the guard took now as its send time. Report its
    /// outcome with `renewed`, `renew_refused` or `renew_failed`.
    Renew,
    /// Nothing until this instant (or until a renew's outcome comes in).
    WakeAt(u64),
    /// The guard is over.
    Ended(End),
}

/// A held lease's guard: see the module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    timing: Timing,
    /// Until when the lease is surely held (exclusive).
    valid_until: u64,
    next_renew: u64,
    /// The send time of the renew under way.
    renew_sent: Option<u64>,
    end: Option<End>,
}

impl Guard {
    /// Whether the lease is surely held at `now_ms`.
    pub fn is_held(&self, now_ms: u64) -> bool {
        self.end.is_none() && now_ms < self.valid_until
    }

    /// While held: the instant the claim runs out unless a renew succeeds first.
    pub fn held_until(&self, now_ms: u64) -> Option<u64> {
        self.is_held(now_ms).then_some(self.valid_until)
    }

    /// Why it is over at `now_ms`, if it is.
    pub fn end(&self, now_ms: u64) -> Option<End> {
        self.end
            .or_else(|| (now_ms >= self.valid_until).then_some(End::Expired))
    }

    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// Whether a renew is under way.
    pub fn renewing(&self) -> bool {
        self.renew_sent.is_some()
    }

    /// What to do at `now_ms`. `Renew` records `now_ms` as the renew's send.
    pub fn poll(&mut self, now_ms: u64) -> Next {
        if let Some(end) = self.end(now_ms) {
            self.end = Some(end);
            return Next::Ended(end);
        }
        if self.renew_sent.is_some() {
            // A renew hangs: the claim runs out at its time regardless.
            return Next::WakeAt(self.valid_until);
        }
        if now_ms >= self.next_renew {
            self.renew_sent = Some(now_ms);
            return Next::Renew;
        }
        Next::WakeAt(self.next_renew.min(self.valid_until))
    }

    /// The renew succeeded; its reply came at `now_ms`.
    pub fn renewed(&mut self, now_ms: u64) {
        let Some(sent) = self.renew_sent.take() else {
            return;
        };
        if self.end(now_ms).is_some() {
            // Too late: the claim ran out first, and a reply after that
            // does not bring it back (the renewed lease lapses unused).
            self.end.get_or_insert(End::Expired);
            return;
        }
        self.valid_until = self
            .valid_until
            .max(sent.saturating_add(self.timing.deadline_ms));
        self.next_renew = sent.saturating_add(self.timing.every_ms);
    }

    /// The renew found the lease taken (or gone).
    pub fn renew_refused(&mut self, _now_ms: u64) {
        self.renew_sent = None;
        self.end.get_or_insert(End::Taken);
    }

    /// The renew failed. A `retryable` failure is tried again soon, unless
    /// the claim would run out before then; any other ends the guard.
    pub fn renew_failed(&mut self, now_ms: u64, retryable: bool) {
        self.renew_sent = None;
        if self.end(now_ms).is_some() {
            self.end.get_or_insert(End::Expired);
            return;
        }
        if !retryable {
            self.end = Some(End::Failed);
        } else if now_ms.saturating_add(self.timing.retry_ms) >= self.valid_until {
            self.end = Some(End::Expired);
        } else {
            self.next_renew = now_ms.saturating_add(self.timing.retry_ms);
        }
    }

    /// Its owner gives it back: true if it was still held at `now_ms` (so
    /// a release is worth sending).
    pub fn stop(&mut self, now_ms: u64) -> bool {
        let held = self.is_held(now_ms);
        self.renew_sent = None;
        self.end
            .get_or_insert(if held { End::Released } else { End::Expired });
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: u64 = 2_000;

    fn held_from(sent: u64, reply: u64) -> Guard {
        Attempt::start(sent).granted(Timing::for_ttl(TTL), reply)
    }

    #[test]
    fn a_grant_counts_from_its_send_not_its_reply() {
        // Sent at 0, the reply delayed 1.5 s: held until 1.8 s, not 3.3 s.
        let g = held_from(0, 1_500);
        assert!(g.is_held(1_500));
        assert_eq!(g.held_until(1_500), Some(1_800));
        assert!(!g.is_held(1_800));
        assert!(!g.is_held(2_300));
        assert_eq!(g.end(2_300), Some(End::Expired));
    }

    #[test]
    fn a_grant_whose_reply_comes_after_its_deadline_is_not_held() {
        let mut g = held_from(0, 1_800);
        assert!(!g.is_held(1_800));
        assert_eq!(g.poll(1_800), Next::Ended(End::Expired));
    }

    #[test]
    fn renews_every_third_of_the_deadline_counting_from_each_send() {
        let t = Timing::for_ttl(TTL);
        assert_eq!((t.deadline_ms, t.every_ms, t.retry_ms), (1_800, 600, 200));
        let mut g = held_from(0, 10);
        assert_eq!(g.poll(10), Next::WakeAt(600));
        assert_eq!(g.poll(600), Next::Renew);
        // While the renew is under way, the claim still ends on time.
        assert_eq!(g.poll(700), Next::WakeAt(1_800));
        g.renewed(1_700);
        assert_eq!(g.held_until(1_700), Some(2_400));
        // The next renew was due 600 ms after the last one's send: now.
        assert_eq!(g.poll(1_700), Next::Renew);
    }

    #[test]
    fn a_renew_reply_after_the_claim_ran_out_does_not_bring_it_back() {
        let mut g = held_from(0, 10);
        assert_eq!(g.poll(600), Next::Renew);
        g.renewed(1_800);
        assert!(!g.is_held(1_800));
        assert_eq!(g.poll(1_801), Next::Ended(End::Expired));
    }

    #[test]
    fn failures_are_retried_until_the_claim_would_run_out() {
        let mut g = held_from(0, 10);
        assert_eq!(g.poll(600), Next::Renew);
        g.renew_failed(650, true);
        assert_eq!(g.poll(650), Next::WakeAt(850));
        assert_eq!(g.poll(850), Next::Renew);
        g.renew_failed(1_650, true);
        assert_eq!(g.end(1_650), Some(End::Expired));
        assert!(!g.is_held(1_650));
    }

    #[test]
    fn a_refusal_or_a_lasting_error_ends_it_at_once() {
        let mut g = held_from(0, 10);
        g.poll(600);
        g.renew_refused(610);
        assert_eq!(g.poll(611), Next::Ended(End::Taken));
        let mut g = held_from(0, 10);
        g.poll(600);
        g.renew_failed(610, false);
        assert!(!g.is_held(611));
        assert_eq!(g.end(611), Some(End::Failed));
    }

    #[test]
    fn stopping_says_whether_a_release_is_worth_sending() {
        let mut g = held_from(0, 10);
        assert!(g.stop(100));
        assert_eq!(g.end(100), Some(End::Released));
        let mut late = held_from(0, 10);
        assert!(!late.stop(5_000));
        assert_eq!(late.end(5_000), Some(End::Expired));
    }

    #[test]
    fn times_at_the_end_of_the_clock_never_overflow() {
        let mut g = Attempt::start(u64::MAX - 5).granted(Timing::for_ttl(1), u64::MAX - 5);
        assert_eq!(g.held_until(u64::MAX - 5), Some(u64::MAX - 4));
        assert_eq!(g.poll(u64::MAX), Next::Ended(End::Expired));
        let mut g = Attempt::start(u64::MAX - 5).granted(Timing::for_ttl(60_000), u64::MAX - 5);
        assert_eq!(g.held_until(u64::MAX - 5), Some(u64::MAX));
        assert_eq!(g.poll(u64::MAX), Next::Ended(End::Expired));
    }
}

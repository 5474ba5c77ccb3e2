//! The lease gate's hold on one request's key: waiting for it, then
//! holding it from before the downstream is called until the response
//! body has ended, whatever the downstream does first.
//!
//! A gate forwards a request only while it holds the request's key. Two
//! machines, one after the other:
//!
//! - [`Waiting`]: attempts to take the key on the shared waiting schedule
//!   ([`crate::wait`]) until the wait is over, and gives up on an attempt
//!   still under way at the wait's end plus a stated margin
//!   ([`Waiting::GIVE_UP_MARGIN_MS`]): a store that is slow to answer one
//!   attempt does not stretch the wait. Each attempt's start is taken, so
//!   a grant is counted from the attempt that made it.
//! - [`Hold`]: a [`Guard`] over the grant, renewed on its schedule from
//!   the grant on, through every stage of the exchange: before the
//!   downstream is called, while it works on the request (a slow head),
//!   while its body streams (a slow body), and after the client left,
//!   until the driver says the exchange is over; then released. When the
//!   claim runs out (renews failed or hung, the lease was taken) it says
//!   [`Next::CutOff`] once: the driver forwards nothing more (the rest of
//!   the request body, the head, the response body).
//!
//! Nothing here reads a clock or sends: the gate's two builds and the
//! simulation (`s3_lease::testing::sim`) drive the same machines.

use crate::guard::{Attempt, End, Guard, Next as Keep, Timing};
use crate::wait::{Missed, Wait};

/// Why a wait ended without the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaveUp {
    /// The wait is over and the last attempt missed.
    WaitOver,
    /// An attempt was still under way at the wait's end plus the margin:
    /// the driver stops waiting for it (and releases what it may still
    /// grant).
    AttemptTooSlow,
}

/// What a waiting driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Try {
    /// Make an attempt now (its start is taken as now): report it with
    /// [`Waiting::granted`] or [`Waiting::missed`].
    Attempt,
    /// Nothing until this instant (or until the attempt under way answers).
    WakeAt(u64),
    /// Answer that the key stayed held.
    GiveUp(GaveUp),
}

/// Waiting for the key: see the module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    wait: Wait,
    wait_ms: u64,
    started_ms: u64,
    /// The attempt under way.
    attempt: Option<Attempt>,
    next_attempt_ms: u64,
    attempts: u32,
    gave_up: Option<GaveUp>,
}

impl Waiting {
    /// How long after the wait's end the driver still waits for an attempt
    /// under way before it gives up on it.
    pub const GIVE_UP_MARGIN_MS: u64 = 100;

    /// A wait of `wait_ms` from `now_ms`; the first attempt is due at once.
    pub fn new(now_ms: u64, wait_ms: u64) -> Waiting {
        Waiting {
            wait: Wait::new(now_ms, wait_ms),
            wait_ms,
            started_ms: now_ms,
            attempt: None,
            next_attempt_ms: now_ms,
            attempts: 0,
            gave_up: None,
        }
    }

    /// The instant by which the driver answers, whatever the store does.
    pub fn give_up_at(&self) -> u64 {
        self.started_ms
            .saturating_add(self.wait_ms)
            .saturating_add(Self::GIVE_UP_MARGIN_MS)
    }

    /// How long it has waited at `now_ms`.
    pub fn waited_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.started_ms)
    }

    /// Attempts started so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// What to do at `now_ms`.
    pub fn poll(&mut self, now_ms: u64) -> Try {
        if let Some(why) = self.gave_up {
            return Try::GiveUp(why);
        }
        if self.attempt.is_some() {
            if now_ms >= self.give_up_at() {
                self.attempt = None;
                self.gave_up = Some(GaveUp::AttemptTooSlow);
                return Try::GiveUp(GaveUp::AttemptTooSlow);
            }
            return Try::WakeAt(self.give_up_at());
        }
        if now_ms >= self.next_attempt_ms {
            self.attempt = Some(Attempt::start(now_ms));
            self.attempts = self.attempts.saturating_add(1);
            return Try::Attempt;
        }
        Try::WakeAt(self.next_attempt_ms)
    }

    /// The attempt under way missed, answered at `now_ms`: the wait is
    /// over, or the next attempt is due after the schedule's pause
    /// (`random` jitters it; `poll_ms` is a queued waiter's pace), which
    /// ends at the wait's end at the latest; one last attempt is made then.
    pub fn missed(&mut self, now_ms: u64, missed: Missed, random: u64, poll_ms: u64) {
        if self.attempt.take().is_none() {
            return;
        }
        if self.wait.is_over(now_ms) {
            self.gave_up = Some(GaveUp::WaitOver);
        } else {
            let pause = self.wait.pause_ms(missed, now_ms, random, poll_ms);
            self.next_attempt_ms = now_ms.saturating_add(pause);
        }
    }

    /// The attempt under way was granted, answered at `now_ms`: the hold,
    /// counted from that attempt's start. `None` if the driver had given up
    /// on it (what it granted is to be released, unused).
    pub fn granted(&mut self, timing: Timing, now_ms: u64) -> Option<Hold> {
        let attempt = self.attempt.take()?;
        Some(Hold::granted(attempt, timing, now_ms))
    }
}

/// Where the exchange is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Granted; the downstream is not called yet.
    Granted,
    /// The downstream has the request; its response head has not come.
    Called,
    /// The head was relayed; the body streams.
    Streaming,
    /// Over: the body ended, the client left, the downstream failed, or
    /// forwarding was cut off and the driver stopped.
    Finished,
}

/// What a holding driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Send a renew now; report it with `renewed`, `renew_refused` or
    /// `renew_failed`.
    Renew,
    /// Nothing until this instant, or until the exchange moves on.
    WakeAt(u64),
    /// The claim is over (said once): forward nothing more, and call
    /// `finished` once forwarding has stopped.
    CutOff(End),
    /// The exchange is over while the lease is held: send the release now.
    Release,
    /// Nothing is left to do.
    Done,
}

/// A held key, from the grant to the end of the response: see the module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    guard: Guard,
    stage: Stage,
    cut: Option<End>,
    over: bool,
}

impl Hold {
    /// A grant whose attempt began at `attempt` and answered at `now_ms`.
    pub fn granted(attempt: Attempt, timing: Timing, now_ms: u64) -> Hold {
        Hold {
            guard: attempt.granted(timing, now_ms),
            stage: Stage::Granted,
            cut: None,
            over: false,
        }
    }

    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// Whether anything may be forwarded at `now_ms`: the claim holds, it
    /// was not cut off, and the exchange is not over. Asked before calling
    /// the downstream, before relaying the head and before each chunk.
    pub fn may_forward(&self, now_ms: u64) -> bool {
        self.cut.is_none() && self.stage != Stage::Finished && self.guard.is_held(now_ms)
    }

    /// Why forwarding was cut off, if it was.
    pub fn cut_off(&self) -> Option<End> {
        self.cut
    }

    /// Until when the claim holds, while it does.
    pub fn held_until(&self, now_ms: u64) -> Option<u64> {
        self.may_forward(now_ms)
            .then(|| self.guard.held_until(now_ms))
            .flatten()
    }

    /// The driver is about to call the downstream: true if it may.
    pub fn calling(&mut self, now_ms: u64) -> bool {
        let may = self.stage == Stage::Granted && self.may_forward(now_ms);
        if may {
            self.stage = Stage::Called;
        }
        may
    }

    /// The downstream's head came at `now_ms`: true if it may be relayed.
    pub fn head(&mut self, now_ms: u64) -> bool {
        let may = self.stage == Stage::Called && self.may_forward(now_ms);
        if may {
            self.stage = Stage::Streaming;
        }
        may
    }

    /// The exchange is over (the body ended, the client left, the
    /// downstream failed, or forwarding stopped after a cut-off).
    pub fn finished(&mut self, _now_ms: u64) {
        self.stage = Stage::Finished;
    }

    /// What to do at `now_ms`.
    pub fn poll(&mut self, now_ms: u64) -> Next {
        if self.over {
            return Next::Done;
        }
        if self.stage == Stage::Finished {
            if self.guard.renewing() && self.guard.is_held(now_ms) {
                // Released with the lease its renew returns.
                return Next::WakeAt(self.guard.held_until(now_ms).unwrap_or(now_ms));
            }
            self.over = true;
            let held = self.cut.is_none() && self.guard.stop(now_ms);
            return if held { Next::Release } else { Next::Done };
        }
        match self.guard.poll(now_ms) {
            Keep::Renew => Next::Renew,
            Keep::WakeAt(at) => Next::WakeAt(at),
            Keep::Ended(end) => match self.cut {
                // Said once; then only the exchange's end matters.
                Some(_) => Next::WakeAt(u64::MAX),
                None => {
                    self.cut = Some(end);
                    Next::CutOff(end)
                }
            },
        }
    }

    /// The renew succeeded; its reply came at `now_ms`.
    pub fn renewed(&mut self, now_ms: u64) {
        self.guard.renewed(now_ms);
    }

    /// The renew found the lease taken (or gone).
    pub fn renew_refused(&mut self, now_ms: u64) {
        self.guard.renew_refused(now_ms);
    }

    /// The renew failed; a `retryable` failure is tried again soon.
    pub fn renew_failed(&mut self, now_ms: u64, retryable: bool) {
        self.guard.renew_failed(now_ms, retryable);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: u64 = 3_000;

    fn hold_from(sent: u64, reply: u64) -> Hold {
        Hold::granted(Attempt::start(sent), Timing::for_ttl(TTL), reply)
    }

    /// Renews every ttl/3.6 (a third of the 0.9 ttl claim) in every stage:
    /// before the downstream is called, while its head is slow, while its
    /// body streams.
    #[test]
    fn renews_on_schedule_whatever_the_stage() {
        let mut h = hold_from(0, 5);
        assert_eq!(h.poll(5), Next::WakeAt(900));
        assert_eq!(h.poll(900), Next::Renew);
        h.renewed(910);
        assert!(h.calling(910));
        // The downstream works for 7.5 s before its head: renewed throughout.
        let mut now = 910;
        let mut renews = 1;
        while now < 8_410 {
            match h.poll(now) {
                Next::Renew => {
                    renews += 1;
                    h.renewed(now + 10);
                }
                Next::WakeAt(at) => now = at.min(8_410),
                other => panic!("{other:?} at {now}"),
            }
            assert!(h.may_forward(now), "at {now}");
        }
        assert!(renews >= 9, "{renews}");
        assert!(h.head(now));
        assert_eq!(h.stage(), Stage::Streaming);
        h.finished(now);
        assert_eq!(h.poll(now), Next::Release);
        assert_eq!(h.poll(now), Next::Done);
    }

    /// Renews that fail until the claim runs out cut forwarding off once,
    /// in whatever stage, and the lease is not released (it is not held).
    #[test]
    fn a_claim_that_runs_out_cuts_forwarding_off_once() {
        let mut h = hold_from(0, 5);
        assert!(h.calling(5));
        assert_eq!(h.poll(900), Next::Renew);
        h.renew_failed(950, true);
        assert_eq!(h.poll(950), Next::WakeAt(1_250));
        assert_eq!(h.poll(1_250), Next::Renew);
        // Hangs past the claim's end (0.9 ttl after the grant's send).
        assert_eq!(h.poll(1_300), Next::WakeAt(2_700));
        assert!(h.may_forward(2_699));
        assert_eq!(h.poll(2_700), Next::CutOff(End::Expired));
        assert!(!h.may_forward(2_700));
        assert!(!h.head(2_800), "a head after the cut is not relayed");
        // Its late reply does not bring it back.
        h.renewed(2_900);
        assert!(!h.may_forward(2_900));
        assert_eq!(h.poll(2_900), Next::WakeAt(u64::MAX));
        h.finished(3_000);
        assert_eq!(h.poll(3_000), Next::Done);
    }

    #[test]
    fn a_refused_renew_cuts_off_at_once() {
        let mut h = hold_from(0, 5);
        assert!(h.calling(5));
        assert!(h.head(100));
        assert_eq!(h.poll(900), Next::Renew);
        h.renew_refused(905);
        assert_eq!(h.poll(905), Next::CutOff(End::Taken));
        h.finished(910);
        assert_eq!(h.poll(910), Next::Done);
    }

    /// The exchange ending during a renew: released once the renew's
    /// outcome is in, with the lease it returned.
    #[test]
    fn an_end_during_a_renew_releases_after_it() {
        let mut h = hold_from(0, 5);
        assert!(h.calling(5));
        assert_eq!(h.poll(900), Next::Renew);
        h.finished(950);
        assert_eq!(h.poll(950), Next::WakeAt(2_700));
        h.renewed(960);
        assert_eq!(h.poll(960), Next::Release);
    }

    /// A grant whose reply came after its claim: nothing is forwarded.
    #[test]
    fn a_late_grant_forwards_nothing() {
        let mut h = hold_from(0, 2_700);
        assert!(!h.calling(2_700));
        assert_eq!(h.poll(2_700), Next::CutOff(End::Expired));
    }

    #[test]
    fn waiting_attempts_on_the_schedule_and_gives_up_at_the_wait() {
        let mut w = Waiting::new(1_000, 200);
        assert_eq!(w.poll(1_000), Try::Attempt);
        assert_eq!(w.poll(1_001), Try::WakeAt(1_300));
        let held = Missed::Held {
            expires_in_ms: Some(9_000),
        };
        w.missed(1_010, held, 7, 50);
        let Try::WakeAt(next) = w.poll(1_010) else {
            panic!()
        };
        assert!((1_020..=1_040).contains(&next), "{next}");
        assert_eq!(w.poll(next), Try::Attempt);
        w.missed(1_199, held, 7, 50);
        // The last pause ends at the wait's end; one attempt then.
        assert_eq!(w.poll(1_199), Try::WakeAt(1_200));
        assert_eq!(w.poll(1_200), Try::Attempt);
        w.missed(1_210, held, 7, 50);
        assert_eq!(w.poll(1_210), Try::GiveUp(GaveUp::WaitOver));
        assert_eq!(w.attempts(), 3);
    }

    /// An attempt the store answers only after a second (a conditional
    /// write that lost a race on a busy store): given up at the wait's end
    /// plus the margin, and its grant, should it come, is not held.
    #[test]
    fn an_attempt_under_way_at_the_wait_plus_the_margin_is_given_up() {
        let mut w = Waiting::new(0, 200);
        assert_eq!(w.poll(0), Try::Attempt);
        assert_eq!(w.poll(150), Try::WakeAt(300));
        assert_eq!(w.poll(300), Try::GiveUp(GaveUp::AttemptTooSlow));
        assert_eq!(w.granted(Timing::for_ttl(TTL), 1_050), None);
        assert_eq!(w.poll(1_050), Try::GiveUp(GaveUp::AttemptTooSlow));
    }

    #[test]
    fn a_grant_counts_from_the_attempt_that_made_it() {
        let mut w = Waiting::new(0, 5_000);
        assert_eq!(w.poll(0), Try::Attempt);
        w.missed(10, Missed::Undecided, 0, 50);
        let Try::WakeAt(next) = w.poll(10) else {
            panic!()
        };
        assert_eq!(w.poll(next), Try::Attempt);
        let h = w.granted(Timing::for_ttl(TTL), next + 20).expect("held");
        assert_eq!(h.held_until(next + 20), Some(next + 2_700));
    }

    #[test]
    fn times_at_the_end_of_the_clock_never_overflow() {
        let mut w = Waiting::new(u64::MAX - 5, u64::MAX);
        assert_eq!(w.give_up_at(), u64::MAX);
        assert_eq!(w.poll(u64::MAX - 5), Try::Attempt);
        assert_eq!(w.poll(u64::MAX), Try::GiveUp(GaveUp::AttemptTooSlow));
        let mut h = hold_from(u64::MAX - 5, u64::MAX - 5);
        assert!(h.calling(u64::MAX - 5));
        assert!(matches!(h.poll(u64::MAX), Next::CutOff(_)));
    }
}

//! The semaphore checks over small hand-made histories: a healthy one
//! passes, and each broken invariant is flagged by name.

use super::super::check;
use crate::soak::history::{Grant, History, Term, Violation, Wait};
use crate::soak::SlotKeyProfile;
use std::time::{Duration, Instant};

struct Builder {
    t0: Instant,
    history: History,
}

impl Builder {
    /// One semaphore key: `server`, limit 2, fair.
    fn new() -> Self {
        let t0 = Instant::now();
        let mut history = History::new(t0, t0 + Duration::from_secs(60), Vec::new());
        history.slot_keys = vec![SlotKeyProfile::of(1)];
        assert_eq!(
            (history.slot_keys[0].limit, history.slot_keys[0].fair),
            (2, true)
        );
        Builder { t0, history }
    }

    fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    /// Process `process` waits from `from`, queued at `queued` (if ever),
    /// is granted `token` by an attempt over `[granted, granted + 10]` and
    /// believes it holds the slot until `until`.
    fn slot(
        self,
        process: usize,
        token: u64,
        from: u64,
        queued: Option<u64>,
        granted: u64,
        until: u64,
    ) -> Self {
        self.wait(process, from, queued, Some((granted, token)), granted + 10)
            .term(process, token, granted, until)
    }

    fn wait(
        mut self,
        process: usize,
        from: u64,
        queued: Option<u64>,
        granted: Option<(u64, u64)>,
        end: u64,
    ) -> Self {
        let wait = Wait {
            key: 0,
            process,
            generation: 0,
            start: self.at(from),
            first_queued: queued.map(|q| (self.at(q), self.at(q + 5))),
            granted: granted.map(|(g, token)| (self.at(g), self.at(g + 10), token)),
            kept_place_until: self.at(end),
            clock_stepped_back: None,
            unclear_write: None,
            end: self.at(end),
        };
        self.history.waits.push(wait);
        self
    }

    fn term(mut self, process: usize, token: u64, granted: u64, until: u64) -> Self {
        self.history.slot_grants.push(Grant {
            key: 0,
            process,
            generation: 0,
            token,
            step_start: self.at(granted),
            step_end: self.at(granted + 10),
        });
        self.history.slot_terms.push(Term {
            key: 0,
            process,
            generation: 0,
            token,
            start: self.at(granted + 10),
            end: self.at(until),
            ended_by: "test".into(),
        });
        self
    }

    fn last_wait(mut self, f: impl FnOnce(&mut Wait, Instant)) -> Self {
        let t0 = self.t0;
        if let Some(w) = self.history.waits.last_mut() {
            f(w, t0);
        }
        self
    }

    fn violations(&self) -> Vec<Violation> {
        check(&self.history).violations
    }
}

fn invariants(violations: &[Violation]) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = violations.iter().map(|v| v.invariant).collect();
    names.dedup();
    names
}

/// Processes 1 and 2 hold both slots; 3 then 4 queue, and get the slots
/// in that order as 1 and 2 give them back.
fn healthy() -> Builder {
    Builder::new()
        .slot(1, 1, 0, None, 0, 1_000)
        .slot(2, 2, 0, None, 10, 2_000)
        .slot(3, 10, 100, Some(100), 1_100, 3_000)
        .slot(4, 20, 200, Some(200), 2_100, 4_000)
}

#[test]
fn a_healthy_semaphore_history_passes() {
    let checked = check(&healthy().history);
    assert_eq!(checked.violations, vec![]);
    assert_eq!(checked.slot_max_holders, vec![2]);
    assert_eq!(checked.fair_grants_checked, 4);
    assert_eq!(checked.fair_grants_past_a_waiter, 0);
    assert_eq!((checked.fair_waits, checked.fair_waits_kept), (2, 2));
}

#[test]
fn more_holders_than_the_limit_are_flagged_once_per_stretch() {
    // 5 believes over 510..1,500 beside 1 and 2 (one stretch of three),
    // then beside 2 and 3 once 3 starts at 1,110 (a second stretch).
    let b = healthy().term(5, 5, 500, 1_500);
    let v = b.violations();
    assert_eq!(invariants(&v), ["slot holders within the limit"], "{v:#?}");
    assert_eq!(v.len(), 2, "{v:#?}");
    assert!(
        v[0].detail.contains("3 believed slot holders at 510 ms"),
        "{v:#?}"
    );
    assert!(
        v[1].detail.contains("3 believed slot holders at 1110 ms"),
        "{v:#?}"
    );
    assert_eq!(check(&b.history).slot_max_holders, vec![3]);
}

#[test]
fn terms_that_only_touch_do_not_overlap() {
    // 5 starts the instant 1 stops believing: never three at once.
    let v = healthy().term(5, 6, 990, 1_050).violations();
    assert_eq!(v, vec![]);
}

#[test]
fn a_repeated_slot_token_is_flagged() {
    let v = healthy().term(5, 20, 5_000, 6_000).violations();
    assert_eq!(
        invariants(&v),
        ["tokens unique per key", "tokens rise in grant order"],
        "{v:#?}"
    );
}

#[test]
fn a_slot_token_lower_than_an_earlier_grant_is_flagged() {
    let v = healthy().term(5, 15, 5_000, 6_000).violations();
    assert!(
        invariants(&v).contains(&"tokens rise in grant order"),
        "{v:#?}"
    );
}

/// Process 4 (queued at 200) is granted at 1,100 while 1 still holds a
/// slot and 3, queued first at 100, waits on until 2,100.
fn overtaken() -> Builder {
    Builder::new()
        .slot(1, 1, 0, None, 0, 2_000)
        .slot(2, 2, 0, None, 10, 1_000)
        .slot(4, 3, 200, Some(200), 1_100, 3_000)
        .slot(3, 4, 100, Some(100), 2_100, 4_000)
}

#[test]
fn a_grant_past_an_earlier_waiter_with_one_slot_free_is_flagged() {
    let v = overtaken().violations();
    assert_eq!(
        invariants(&v),
        ["slots go to waiters in queue order"],
        "{v:#?}"
    );
    assert!(v[0].detail.contains("process 4") && v[0].detail.contains("process 3"));
}

#[test]
fn a_grant_past_an_earlier_waiter_is_fine_while_both_slots_are_free() {
    // 1 stops believing before 4's grant: two slots free, one each.
    let mut b = overtaken();
    b.history.slot_terms[0].end = b.at(1_050);
    let checked = check(&b.history);
    assert_eq!(checked.violations, vec![]);
    assert_eq!(checked.fair_grants_past_a_waiter, 1);
}

#[test]
fn a_waiter_that_may_have_lost_its_place_is_not_ahead() {
    // 3 was paused (or crashed, or stalled) at 900: the queue may drop it.
    let b = overtaken().last_wait(|w, t0| w.kept_place_until = t0 + Duration::from_millis(900));
    assert_eq!(b.violations(), vec![]);
}

#[test]
fn a_waiter_that_joined_after_the_grant_began_waiting_is_not_ahead() {
    // 3's first `queued` answer came after 4 began waiting: no order known.
    let b = overtaken().last_wait(|w, t0| {
        w.first_queued = Some((
            t0 + Duration::from_millis(190),
            t0 + Duration::from_millis(205),
        ))
    });
    assert_eq!(b.violations(), vec![]);
}

#[test]
fn a_waiter_whose_clock_stepped_back_still_counts_as_ahead() {
    // The core keeps such a waiter's place now: passing it is a violation.
    let b =
        overtaken().last_wait(|w, t0| w.clock_stepped_back = Some(t0 + Duration::from_millis(500)));
    assert_eq!(
        invariants(&b.violations()),
        ["slots go to waiters in queue order"]
    );
}

#[test]
fn queue_order_is_not_checked_on_keys_that_are_not_fair() {
    let mut b = overtaken();
    b.history.slot_keys = vec![SlotKeyProfile::of(0)];
    // Limit 3 and no queue: nothing to flag.
    assert_eq!(b.violations(), vec![]);
}

#[test]
fn a_waiter_after_an_unclear_write_still_counts_as_ahead() {
    let b = overtaken().last_wait(|w, t0| w.unclear_write = Some(t0 + Duration::from_millis(500)));
    assert_eq!(
        invariants(&b.violations()),
        ["slots go to waiters in queue order"]
    );
}

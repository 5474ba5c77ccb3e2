//! The checkers over small hand-made histories: healthy ones pass, and
//! each broken invariant is flagged by name.

use super::*;

const OBJECT: &str = "data/k0";

fn at(ms: u64) -> Micros {
    ms * 1_000
}

fn who(actor: usize) -> Who {
    Who {
        actor,
        generation: 0,
    }
}

fn key(name: &str, limit: u32, fair: bool) -> KeySpec {
    KeySpec {
        name: name.into(),
        limit,
        fair,
        exclusion_checked: true,
        exact_acks: false,
    }
}

struct Builder {
    history: History,
}

impl Builder {
    /// One lock key.
    fn lock() -> Self {
        Builder {
            history: History::new(vec![key("k0", 1, false)]),
        }
    }

    /// One semaphore key: limit 2, fair.
    fn slots() -> Self {
        Builder {
            history: History::new(vec![key("s1", 2, true)]),
        }
    }

    /// `actor` granted `token` by an attempt over `[from, from + 10]`,
    /// believing until `until`.
    fn term(mut self, actor: usize, token: u64, from: u64, until: u64) -> Self {
        self.history.grants.push(Grant {
            key: 0,
            who: who(actor),
            token,
            sent: at(from),
            acked: at(from + 10),
        });
        self.history.terms.push(Term {
            key: 0,
            who: who(actor),
            token,
            start: at(from + 10),
            end: at(until),
            ended_by: "test".into(),
        });
        self
    }

    fn rewrite(mut self, actor: usize, token: u64, sent: u64, spent: Option<&'static str>) -> Self {
        self.history.rewrites.push(Rewrite {
            key: 0,
            who: who(actor),
            token,
            sent: at(sent),
            release: false,
            spent,
        });
        self
    }

    fn op(mut self, token: u64, value: u64, span: (u64, u64), outcome: FencedOutcome) -> Self {
        self.history.fenced.push(FencedOp {
            object: OBJECT.into(),
            who: who(token as usize),
            token,
            value,
            delete: matches!(outcome, FencedOutcome::Deleted),
            zombie: false,
            start: at(span.0),
            end: at(span.1),
            outcome,
        });
        self
    }

    fn put(self, token: u64, value: u64, span: (u64, u64), previous: Option<u64>) -> Self {
        let outcome = FencedOutcome::Written {
            previous_token: previous,
        };
        self.op(token, value, span, outcome)
    }

    fn last(mut self, found: Option<(u64, u64)>) -> Self {
        self.history.finals.clear();
        self.history.finals.push(FinalRead {
            object: OBJECT.into(),
            found: Ok(found.map(|(token, value)| Found {
                token,
                value: Some(value),
                body_token: Some(token),
            })),
        });
        self
    }

    /// `actor` waits from `from`, queued at `queued` (if ever), is granted
    /// `token` by an attempt over `[granted, granted + 10]` and believes
    /// it holds the slot until `until`.
    fn slot(
        self,
        actor: usize,
        token: u64,
        from: u64,
        queued: Option<u64>,
        granted: u64,
        until: u64,
    ) -> Self {
        self.wait(actor, from, queued, Some((granted, token)), granted + 10)
            .term(actor, token, granted, until)
    }

    fn wait(
        mut self,
        actor: usize,
        from: u64,
        queued: Option<u64>,
        granted: Option<(u64, u64)>,
        end: u64,
    ) -> Self {
        self.history.waits.push(Wait {
            key: 0,
            who: who(actor),
            start: at(from),
            first_queued: queued.map(|q| (at(q), at(q + 5))),
            granted: granted.map(|(g, token)| (at(g), at(g + 10), token)),
            kept_place_until: at(end),
            end: at(end),
        });
        self
    }

    fn last_wait(mut self, f: impl FnOnce(&mut Wait)) -> Self {
        if let Some(w) = self.history.waits.last_mut() {
            f(w);
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

/// Two holders one after the other, each writing; the last write stays.
fn healthy() -> Builder {
    Builder::lock()
        .term(1, 1, 0, 2_000)
        .term(2, 2, 5_000, 9_000)
        .put(1, 10, (100, 120), None)
        .put(1, 11, (400, 420), Some(1))
        .put(2, 20, (5_100, 5_120), Some(1))
        .last(Some((2, 20)))
}

#[test]
fn a_healthy_history_passes() {
    let checked = check(&healthy().history);
    assert_eq!(checked.violations, vec![]);
    assert_eq!((checked.objects, checked.object_ops), (1, 3));
    assert_eq!(checked.max_open, vec![1]);
}

/// Actor 2 takes over at 1 s while actor 1 believes until 2 s.
fn overlapping() -> Builder {
    Builder::lock()
        .term(1, 1, 0, 2_000)
        .term(2, 2, 1_000, 3_000)
}

#[test]
fn overlapping_holders_of_a_lock_are_flagged() {
    let v = overlapping().violations();
    assert_eq!(
        invariants(&v),
        ["never more believed holders than the limit"],
        "{v:#?}"
    );
    assert!(v[0].detail.contains("actor 1") && v[0].detail.contains("actor 2"));
}

#[test]
fn overlaps_on_a_key_whose_clock_rule_is_broken_on_purpose_are_counted_not_failed() {
    let mut b = overlapping();
    b.history.keys[0].exclusion_checked = false;
    let checked = check(&b.history);
    assert_eq!(checked.violations, vec![]);
    assert_eq!(checked.tolerated_overlaps, 1);
}

#[test]
fn a_repeated_token_is_flagged() {
    let v = healthy().term(3, 2, 10_000, 11_000).violations();
    assert_eq!(
        invariants(&v),
        ["tokens unique per key", "tokens rise in grant order"],
        "{v:#?}"
    );
}

#[test]
fn a_token_lower_than_an_earlier_grant_is_flagged() {
    let v = healthy().term(3, 1, 10_000, 11_000).violations();
    assert!(
        invariants(&v).contains(&"tokens rise in grant order"),
        "{v:#?}"
    );
}

#[test]
fn concurrent_grants_need_distinct_tokens_only() {
    // Attempts that overlap in time are not ordered: 5 before 4 is fine...
    let b = Builder::lock().term(1, 5, 0, 100).term(2, 4, 5, 100);
    assert!(!invariants(&b.violations()).contains(&"tokens rise in grant order"));
    // ... unless the run knows the acknowledgements exactly.
    let mut b = b;
    b.history.keys[0].exact_acks = true;
    assert!(
        invariants(&b.violations()).contains(&"tokens rise in the order grants are acknowledged")
    );
}

#[test]
fn a_spent_lease_that_renews_is_flagged() {
    let v = healthy().rewrite(1, 1, 600, Some("released")).violations();
    assert_eq!(
        invariants(&v),
        ["a spent lease never renews or releases"],
        "{v:#?}"
    );
}

#[test]
fn a_renew_sent_after_a_higher_grant_is_flagged() {
    // Token 2 was granted at 5,010 ms; token 1's renew sent at 6 s succeeded.
    let v = healthy().rewrite(1, 1, 6_000, None).violations();
    assert_eq!(
        invariants(&v),
        ["a superseded lease never renews or releases"],
        "{v:#?}"
    );
    assert_eq!(healthy().rewrite(1, 1, 1_000, None).violations(), vec![]);
}

#[test]
fn an_out_of_order_write_is_flagged() {
    // Token 1 accepted after token 2's write was acknowledged.
    let v = healthy()
        .put(1, 12, (6_000, 6_020), Some(2))
        .last(Some((1, 12)))
        .violations();
    let names = invariants(&v);
    assert!(names.contains(&"writes accepted in token order"), "{v:#?}");
    assert!(names.contains(&"linearizable"), "{v:#?}");
}

#[test]
fn a_lost_acknowledged_write_is_flagged() {
    // The object went back to token 1's content after token 2's ack.
    let v = healthy().last(Some((1, 11))).violations();
    assert_eq!(
        invariants(&v),
        ["no acknowledged write lost", "linearizable"],
        "{v:#?}"
    );
}

#[test]
fn a_lost_write_of_the_same_token_is_flagged() {
    // Token 1 wrote 10, then 11 (both acknowledged); the object holds 10.
    let v = Builder::lock()
        .term(1, 1, 0, 2_000)
        .put(1, 10, (100, 120), None)
        .put(1, 11, (400, 420), Some(1))
        .last(Some((1, 10)))
        .violations();
    assert_eq!(
        invariants(&v),
        ["no acknowledged write lost", "linearizable"],
        "{v:#?}"
    );
}

#[test]
fn an_object_gone_missing_is_flagged() {
    let v = healthy().last(None).violations();
    assert_eq!(
        invariants(&v),
        ["no acknowledged write lost", "linearizable"],
        "{v:#?}"
    );
}

#[test]
fn an_unacknowledged_write_may_land_late_or_never() {
    let unknown = |b: Builder| {
        b.op(
            2,
            21,
            (5_500, 6_200),
            FencedOutcome::Unknown("transport".into()),
        )
    };
    // It landed after token 2's acknowledged write...
    assert_eq!(unknown(healthy()).last(Some((2, 21))).violations(), vec![]);
    // ... or never.
    assert_eq!(unknown(healthy()).violations(), vec![]);
}

#[test]
fn a_refusal_that_names_a_lower_token_is_flagged() {
    let v = healthy()
        .op(
            2,
            22,
            (6_000, 6_020),
            FencedOutcome::Fenced { stored_token: 1 },
        )
        .violations();
    let names = invariants(&v);
    assert!(names.contains(&"refusals name a higher token"), "{v:#?}");
    assert!(names.contains(&"linearizable"), "{v:#?}");
}

#[test]
fn a_deleted_object_is_fine_when_a_delete_can_be_last() {
    let b = healthy().op(2, 23, (6_000, 6_020), FencedOutcome::Deleted);
    assert_eq!(b.last(None).violations(), vec![]);
}

#[test]
fn what_the_recorder_saw_is_passed_on() {
    let mut b = healthy();
    b.history
        .violations
        .push(violation("nothing traps", "a trap".into()));
    assert_eq!(invariants(&b.violations()), ["nothing traps"]);
}

/// Actors 1 and 2 hold both slots; 3 then 4 queue, and get the slots in
/// that order as 1 and 2 give them back.
fn healthy_slots() -> Builder {
    Builder::slots()
        .slot(1, 1, 0, None, 0, 1_000)
        .slot(2, 2, 0, None, 10, 2_000)
        .slot(3, 10, 100, Some(100), 1_100, 3_000)
        .slot(4, 20, 200, Some(200), 2_100, 4_000)
}

#[test]
fn a_healthy_semaphore_history_passes() {
    let checked = check(&healthy_slots().history);
    assert_eq!(checked.violations, vec![]);
    assert_eq!(checked.max_open, vec![2]);
    assert_eq!(checked.fair_grants_checked, 4);
    assert_eq!(checked.fair_grants_past_a_waiter, 0);
    assert_eq!((checked.fair_waits, checked.fair_waits_kept), (2, 2));
}

#[test]
fn more_holders_than_the_limit_are_flagged_once_per_stretch() {
    // 5 believes over 510..1,500 beside 1 and 2 (one stretch of three),
    // then beside 2 and 3 once 3 starts at 1,110 (a second stretch).
    let b = healthy_slots().term(5, 5, 500, 1_500);
    let v = b.violations();
    assert_eq!(
        invariants(&v),
        ["never more believed holders than the limit"],
        "{v:#?}"
    );
    assert_eq!(v.len(), 2, "{v:#?}");
    assert!(
        v[0].detail.contains("3 believed holders at 510.000 ms"),
        "{v:#?}"
    );
    assert!(
        v[1].detail.contains("3 believed holders at 1110.000 ms"),
        "{v:#?}"
    );
    assert_eq!(check(&b.history).max_open, vec![3]);
}

#[test]
fn terms_that_only_touch_do_not_overlap() {
    // 5 starts the instant 1 stops believing: never three at once.
    assert_eq!(healthy_slots().term(5, 6, 990, 1_050).violations(), vec![]);
}

#[test]
fn a_repeated_slot_token_is_flagged() {
    let v = healthy_slots().term(5, 20, 5_000, 6_000).violations();
    assert_eq!(
        invariants(&v),
        ["tokens unique per key", "tokens rise in grant order"],
        "{v:#?}"
    );
}

/// Actor 4 (queued at 200) is granted at 1,100 while 1 still holds a slot
/// and 3, queued first at 100, waits on until 2,100.
fn overtaken() -> Builder {
    Builder::slots()
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
    assert!(v[0].detail.contains("actor 4") && v[0].detail.contains("actor 3"));
}

#[test]
fn a_grant_past_an_earlier_waiter_is_fine_while_both_slots_are_free() {
    // 1 stops believing before 4's grant: two slots free, one each.
    let mut b = overtaken();
    b.history.terms[0].end = at(1_050);
    let checked = check(&b.history);
    assert_eq!(checked.violations, vec![]);
    assert_eq!(checked.fair_grants_past_a_waiter, 1);
}

#[test]
fn a_waiter_that_may_have_lost_its_place_is_not_ahead() {
    // 3 was paused (or crashed, or stalled) at 900: the queue may drop it.
    let b = overtaken().last_wait(|w| w.kept_place_until = at(900));
    assert_eq!(b.violations(), vec![]);
}

#[test]
fn a_waiter_that_joined_after_the_grant_began_waiting_is_not_ahead() {
    // 3's first `queued` answer came after 4 began waiting: no order known.
    let b = overtaken().last_wait(|w| w.first_queued = Some((at(190), at(205))));
    assert_eq!(b.violations(), vec![]);
}

#[test]
fn queue_order_is_not_checked_on_keys_that_are_not_fair() {
    let mut b = overtaken();
    b.history.keys[0] = key("s0", 3, false);
    assert_eq!(b.violations(), vec![]);
}

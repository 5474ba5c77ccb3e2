//! The checker over small hand-made histories: a healthy one passes, and
//! each broken invariant is flagged by name.

use super::super::history::{
    FencedOp, FencedOutcome, FinalRead, FoundObject, Grant, History, Term, Violation,
};
use super::super::{Break, KeyProfile};
use super::check;
use std::time::{Duration, Instant};

const OBJECT: &str = "soak/test/data/k0/round-0000";

struct Builder {
    t0: Instant,
    history: History,
}

impl Builder {
    fn new() -> Self {
        let t0 = Instant::now();
        Builder {
            t0,
            history: History::new(
                t0,
                t0 + Duration::from_secs(60),
                vec![KeyProfile::of(0, None)],
            ),
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    /// Process `process` granted `token` by a step over `[from, from + 10]`,
    /// believing until `until`.
    fn term(mut self, process: usize, token: u64, from: u64, until: u64) -> Self {
        self.history.grants.push(Grant {
            key: 0,
            process,
            generation: 0,
            token,
            step_start: self.at(from),
            step_end: self.at(from + 10),
        });
        self.history.terms.push(Term {
            key: 0,
            process,
            generation: 0,
            token,
            start: self.at(from + 10),
            end: self.at(until),
            ended_by: "test".into(),
        });
        self
    }

    fn op(mut self, token: u64, value: u64, span: (u64, u64), outcome: FencedOutcome) -> Self {
        self.history.fenced.push(FencedOp {
            key: 0,
            object: OBJECT.into(),
            process: token as usize,
            generation: 0,
            token,
            value,
            delete: matches!(outcome, FencedOutcome::Deleted),
            zombie: false,
            start: self.at(span.0),
            end: self.at(span.1),
            outcome,
        });
        self
    }

    fn put(self, token: u64, value: u64, span: (u64, u64), previous: Option<u64>) -> Self {
        let outcome = FencedOutcome::Written {
            token,
            etag: format!("etag-{value}"),
            previous_token: previous,
        };
        self.op(token, value, span, outcome)
    }

    fn last(mut self, found: Option<(u64, u64)>) -> Self {
        self.history.finals.push(FinalRead {
            object: OBJECT.into(),
            found: Ok(found.map(|(token, value)| FoundObject {
                body: super::super::history::body(0, 0, token, value).into_bytes(),
                etag: format!("etag-{value}"),
                token,
            })),
        });
        self
    }

    fn violations(self) -> Vec<Violation> {
        check(&self.history).violations
    }
}

/// Two leaders one after the other, each writing; the last write stays.
fn healthy() -> Builder {
    Builder::new()
        .term(1, 1, 0, 2_000)
        .term(2, 2, 5_000, 9_000)
        .put(1, 10, (100, 120), None)
        .put(1, 11, (400, 420), Some(1))
        .put(2, 20, (5_100, 5_120), Some(1))
        .last(Some((2, 20)))
}

fn invariants(violations: &[Violation]) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = violations.iter().map(|v| v.invariant).collect();
    names.dedup();
    names
}

#[test]
fn a_healthy_history_passes() {
    let checked = check(&healthy().history);
    assert_eq!(checked.violations, vec![]);
    assert_eq!((checked.objects, checked.object_ops), (1, 3));
}

/// Process 2 takes over at 1 s while process 1 believes until 2 s.
fn overlapping() -> Builder {
    Builder::new().term(1, 1, 0, 2_000).term(2, 2, 1_000, 3_000)
}

#[test]
fn overlapping_leadership_is_flagged() {
    let v = overlapping().violations();
    assert_eq!(invariants(&v), ["leadership never overlaps"], "{v:#?}");
    assert!(v[0].detail.contains("process 1") && v[0].detail.contains("process 2"));
}

#[test]
fn overlaps_on_the_holder_clock_are_counted_not_failed() {
    let mut b = overlapping();
    b.history.keys = vec![KeyProfile::of(4, None)];
    let checked = check(&b.history);
    assert_eq!(checked.violations, vec![]);
    assert_eq!(checked.tolerated_overlaps, 1);
    // ... unless the holder clock is the protocol knob broken on purpose.
    b.history.keys = vec![KeyProfile::of(0, Some(Break::HolderClock))];
    let v = check(&b.history).violations;
    assert_eq!(invariants(&v), ["leadership never overlaps"]);
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
    // Steps that overlap in time are not ordered: 5 before 4 is fine.
    let v = Builder::new()
        .term(1, 5, 0, 100)
        .term(2, 4, 5, 100)
        .violations();
    assert!(
        !invariants(&v).contains(&"tokens rise in grant order"),
        "{v:#?}"
    );
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
    let mut b = healthy();
    b.history.finals.clear();
    let v = b.last(Some((1, 11))).violations();
    assert_eq!(
        invariants(&v),
        ["no acknowledged write lost", "linearizable"],
        "{v:#?}"
    );
}

#[test]
fn a_lost_write_of_the_same_token_is_flagged() {
    // Token 1 wrote 10, then 11 (both acknowledged); the object holds 10.
    let v = Builder::new()
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
    let mut b = healthy();
    b.history.finals.clear();
    let v = b.last(None).violations();
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
    let mut b = unknown(healthy());
    b.history.finals.clear();
    assert_eq!(b.last(Some((2, 21))).violations(), vec![]);
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
            FencedOutcome::Fenced {
                our_token: 2,
                stored_token: 1,
            },
        )
        .violations();
    let names = invariants(&v);
    assert!(names.contains(&"refusals name a higher token"), "{v:#?}");
    assert!(names.contains(&"linearizable"), "{v:#?}");
}

#[test]
fn a_deleted_object_is_fine_when_a_delete_can_be_last() {
    let mut b = healthy().op(2, 23, (6_000, 6_020), FencedOutcome::Deleted);
    b.history.finals.clear();
    assert_eq!(b.last(None).violations(), vec![]);
}

#[test]
fn what_members_saw_is_passed_on() {
    let mut b = healthy();
    b.history.violations.push(Violation {
        invariant: "nothing traps",
        detail: "step trapped".into(),
    });
    assert_eq!(invariants(&b.violations()), ["nothing traps"]);
}

//! The checker on made-up histories: what it must pass and what it must catch.

use super::*;
use std::time::{Duration, Instant};

const NEVER: u64 = u64::MAX;

fn put(
    client: usize,
    token: u64,
    value: u64,
    (start, end): (u64, u64),
    result: FencedResult,
) -> Operation {
    Operation {
        client,
        call: FencedCall::Put { token, value },
        result,
        start,
        end,
    }
}

fn delete(client: usize, token: u64, (start, end): (u64, u64), result: FencedResult) -> Operation {
    Operation {
        client,
        call: FencedCall::Delete { token },
        result,
        start,
        end,
    }
}

fn written(previous: Option<u64>) -> FencedResult {
    FencedResult::Written {
        previous_token: previous,
    }
}

fn fenced(stored: u64) -> FencedResult {
    FencedResult::Fenced {
        stored_token: stored,
    }
}

const UNKNOWN: FencedResult = FencedResult::Unknown;

/// `fenced-get` found `value` written by `token`.
fn seen(token: u64, value: u64) -> Option<FinalState> {
    Some(FinalState {
        token: Some(token),
        value: Some(value),
    })
}

/// `fenced-get` found nothing: absent or a tombstone.
fn nothing() -> Option<FinalState> {
    Some(FinalState {
        token: None,
        value: None,
    })
}

fn ok(history: &[Operation], final_state: Option<FinalState>) -> Linearization {
    check(history, false, State::Absent, final_state).unwrap_or_else(|v| panic!("{v}"))
}

fn bad(history: &[Operation], final_state: Option<FinalState>) -> Violation {
    match check(history, false, State::Absent, final_state) {
        Ok(l) => panic!("passed with {l:?}"),
        Err(v) => {
            assert_ne!(v.kind, ViolationKind::Inconclusive, "{v}");
            v
        }
    }
}

// ---------------------------------------------------------------- (a)

/// What the hand-written checks of `fencing_history` passed: each op alone
/// looks fine (the creates' "nothing before" holds in real time, token 2's
/// second write replaced a token 1 that was written), yet two creates
/// cannot both find the object absent, and token 1 cannot be accepted after
/// token 2.
#[test]
fn two_creates_and_a_stale_write_between_are_caught() {
    let history = [
        put(0, 1, 10, (0, 7), written(None)),
        put(1, 2, 20, (1, 5), written(None)),
        put(1, 2, 21, (10, 15), written(Some(1))),
    ];
    let v = bad(&history, seen(2, 21));
    println!("{v}");
    assert_eq!(v.kind, ViolationKind::NotLinearizable, "{v}");
    // Either create first, then nothing fits.
    assert_eq!(v.longest_prefix.len(), 1, "{v}");
    assert_eq!(v.unplaced.len(), 2, "{v}");
    assert!(v.explanation.contains("must follow"), "{v}");
    // Without the final state too: no order gives all three their results.
    assert_eq!(bad(&history, None).kind, ViolationKind::NotLinearizable);
}

// ---------------------------------------------------------------- (b)

#[test]
fn two_concurrent_writers_pass_in_either_order() {
    // Token 1 first, token 2 over it.
    let history = [
        put(0, 1, 10, (0, 10), written(None)),
        put(1, 2, 20, (5, 15), written(Some(1))),
    ];
    let l = ok(&history, seen(2, 20));
    assert_eq!(l.order, [0, 1]);
    assert_eq!(
        l.final_state,
        State::Present {
            token: 2,
            value: Some(20)
        }
    );

    // Token 2 first (though it started later), token 1 refused.
    let history = [
        put(0, 1, 10, (0, 10), fenced(2)),
        put(1, 2, 20, (5, 15), written(None)),
    ];
    assert_eq!(ok(&history, seen(2, 20)).order, [1, 0]);

    // Equal intervals, and the lower token's reply arrives last.
    let history = [
        put(0, 2, 20, (0, 10), written(None)),
        put(1, 1, 10, (0, 30), fenced(2)),
        put(0, 2, 21, (11, 20), written(Some(2))),
    ];
    assert_eq!(ok(&history, seen(2, 21)).order, [0, 1, 2]);
}

#[test]
fn the_sound_history_of_the_old_self_test_passes() {
    let history = [
        put(0, 1, 10, (0, 10), written(None)),
        put(1, 2, 20, (5, 20), written(Some(1))),
        put(0, 1, 11, (21, 30), fenced(2)),
    ];
    ok(&history, seen(2, 20));
}

// ---------------------------------------------------------------- (c)

#[test]
fn a_stale_write_accepted_after_a_newer_one_fails() {
    let stale = [
        put(1, 2, 20, (0, 10), written(None)),
        put(0, 1, 10, (20, 30), written(Some(2))),
    ];
    assert_eq!(
        bad(&stale, seen(1, 10)).kind,
        ViolationKind::NotLinearizable
    );
    assert_eq!(bad(&stale, None).kind, ViolationKind::NotLinearizable);

    // Claiming to have created it is no better.
    let stale = [
        put(1, 2, 20, (0, 10), written(None)),
        put(0, 1, 10, (20, 30), written(None)),
    ];
    bad(&stale, None);

    // Nor is a delete with an older token.
    let stale = [
        put(1, 2, 20, (0, 10), written(None)),
        delete(0, 1, (20, 30), FencedResult::Accepted),
    ];
    bad(&stale, None);
}

// ---------------------------------------------------------------- (d)

#[test]
fn a_refusal_naming_a_token_nobody_wrote_fails() {
    let phantom = [
        put(0, 1, 10, (0, 10), written(None)),
        put(0, 1, 11, (20, 30), fenced(3)),
    ];
    let v = bad(&phantom, seen(1, 10));
    assert_eq!(v.unplaced, [1], "{v}");
    assert!(v.explanation.contains("refused by token 3"), "{v}");

    // Refused by a token that was written, but only after the refusal.
    let early = [
        put(0, 1, 11, (0, 10), fenced(3)),
        put(1, 3, 30, (20, 30), written(None)),
    ];
    bad(&early, None);

    // Refused by its own token, which the default accepts.
    let equal = [
        put(0, 1, 10, (0, 10), written(None)),
        put(0, 1, 11, (20, 30), fenced(1)),
    ];
    bad(&equal, None);

    // Refused with nothing stored at all.
    bad(&[put(0, 1, 10, (0, 10), fenced(0))], None);
}

// ---------------------------------------------------------------- (e)

#[test]
fn a_lost_reply_passes_whether_or_not_the_write_landed() {
    // It landed: the object ends with its value.
    let landed = [
        put(0, 1, 10, (0, 10), written(None)),
        put(1, 2, 20, (5, NEVER), UNKNOWN),
    ];
    let l = ok(&landed, seen(2, 20));
    assert_eq!((l.order, l.omitted), (vec![0, 1], vec![]));

    // It landed, as a later write's previous token shows.
    let landed = [
        put(1, 2, 20, (0, 5), UNKNOWN),
        put(0, 2, 21, (10, 20), written(Some(2))),
    ];
    assert_eq!(ok(&landed, seen(2, 21)).order, [0, 1]);

    // It did not land.
    let lost = [
        put(0, 1, 10, (0, 10), written(None)),
        put(1, 2, 20, (5, 8), UNKNOWN),
        put(0, 1, 11, (20, 30), written(Some(1))),
    ];
    let l = ok(&lost, seen(1, 11));
    assert_eq!((l.order, l.omitted), (vec![0, 2], vec![1]));

    // It landed after its caller gave up (and after a later write).
    let late = [
        put(1, 2, 20, (0, 5), UNKNOWN),
        put(0, 1, 10, (10, 20), written(None)),
    ];
    assert_eq!(ok(&late, seen(2, 20)).order, [1, 0]);

    // A lost delete that landed.
    let deleted = [
        put(0, 1, 10, (0, 10), written(None)),
        delete(1, 2, (20, NEVER), UNKNOWN),
        put(0, 1, 11, (30, 40), fenced(2)),
    ];
    ok(&deleted, nothing());
}

#[test]
fn a_lost_reply_cannot_land_before_it_started() {
    // Token 1's second write replaced token 2's, which had not begun.
    let history = [
        put(1, 2, 20, (20, NEVER), UNKNOWN),
        put(0, 1, 10, (0, 10), written(None)),
        put(0, 1, 11, (12, 18), written(Some(2))),
    ];
    bad(&history, None);
    let refused_early = [
        put(0, 1, 10, (0, 10), fenced(2)),
        put(1, 2, 20, (20, NEVER), UNKNOWN),
    ];
    bad(&refused_early, None);
}

// ---------------------------------------------------------------- (f)

#[test]
fn a_lost_acknowledged_write_fails() {
    let history = [
        put(0, 1, 10, (0, 10), written(None)),
        put(1, 2, 20, (20, 30), written(Some(1))),
    ];
    // The object went back to token 1's value, or vanished.
    assert_eq!(bad(&history, seen(1, 10)).kind, ViolationKind::FinalState);
    assert_eq!(bad(&history, nothing()).kind, ViolationKind::FinalState);
    assert!(bad(&history, seen(1, 10))
        .explanation
        .contains("value 20 by token 2"));

    // A lower write with a lost reply, later than token 2's, cannot
    // explain the end: it would have been refused.
    let lower = [
        put(0, 1, 10, (0, 10), written(None)),
        put(1, 2, 20, (20, 30), written(Some(1))),
        put(0, 1, 11, (25, NEVER), UNKNOWN),
    ];
    let v = bad(&lower, seen(1, 11));
    assert_eq!(v.kind, ViolationKind::FinalState, "{v}");
    // An equal one could.
    let equal = [
        put(0, 1, 10, (0, 10), written(None)),
        put(1, 2, 20, (20, 30), written(Some(1))),
        put(1, 2, 22, (25, NEVER), UNKNOWN),
    ];
    ok(&equal, seen(2, 22));

    // Token 2's delete, acknowledged, then the object reappears.
    let deleted = [
        put(0, 1, 10, (0, 10), written(None)),
        delete(1, 2, (20, 30), FencedResult::Accepted),
    ];
    bad(&deleted, seen(1, 10));
    ok(&deleted, nothing());
}

#[test]
fn the_final_state_compares_values_and_given_tokens() {
    let history = [
        put(0, 1, 10, (0, 10), written(None)),
        delete(1, 2, (20, 30), FencedResult::Accepted),
    ];
    let tombstone = |token| Some(FinalState { token, value: None });
    ok(&history, tombstone(Some(2)));
    bad(&history, tombstone(Some(1)));
    // Someone else's value, or the right value with the wrong token.
    bad(&history[..1], seen(1, 11));
    bad(&history[..1], seen(2, 10));
    ok(
        &history[..1],
        Some(FinalState {
            token: None,
            value: Some(10),
        }),
    );
    // Absent: nothing was written, or `fenced-get` can't tell.
    ok(&[], nothing());
    bad(&[], tombstone(Some(0)));
}

// ---------------------------------------------------------------- (g)

#[test]
fn equal_tokens_follow_reject_equal() {
    let again = [
        put(0, 1, 10, (0, 10), written(None)),
        put(0, 1, 11, (20, 30), written(Some(1))),
    ];
    assert!(check(&again, false, State::Absent, seen(1, 11)).is_ok());
    let v = check(&again, true, State::Absent, seen(1, 11)).unwrap_err();
    assert_eq!(v.kind, ViolationKind::NotLinearizable);
    assert!(v.explanation.contains("refused by stored token 1"), "{v}");

    let refused = [
        put(0, 1, 10, (0, 10), written(None)),
        put(1, 1, 11, (20, 30), fenced(1)),
    ];
    assert!(check(&refused, true, State::Absent, seen(1, 10)).is_ok());
    assert!(check(&refused, false, State::Absent, seen(1, 10)).is_err());

    // Concurrent holders of one grant: with reject_equal only one writes.
    let both = [
        put(0, 1, 10, (0, 10), written(None)),
        put(1, 1, 11, (0, 10), written(Some(1))),
    ];
    assert!(check(&both, false, State::Absent, seen(1, 11)).is_ok());
    assert!(check(&both, true, State::Absent, None).is_err());
    let one = [
        put(0, 1, 10, (0, 10), written(None)),
        put(1, 1, 11, (0, 10), fenced(1)),
    ];
    assert!(check(&one, true, State::Absent, seen(1, 10)).is_ok());
    assert!(check(&one, true, State::Absent, seen(1, 11)).is_err());

    // A lost reply with an equal token: with reject_equal it never landed.
    let lost = [
        put(0, 1, 10, (0, 10), written(None)),
        put(1, 1, 11, (20, NEVER), UNKNOWN),
    ];
    assert!(check(&lost, false, State::Absent, seen(1, 11)).is_ok());
    assert!(check(&lost, true, State::Absent, seen(1, 11)).is_err());
    assert!(check(&lost, true, State::Absent, seen(1, 10)).is_ok());
}

// ------------------------------------------------------------ the rest

#[test]
fn the_initial_state_counts() {
    // An object written by a plain PUT records token 0.
    let plain = State::Present {
        token: 0,
        value: Some(1),
    };
    let history = [put(0, 1, 10, (0, 10), written(Some(0)))];
    assert!(check(&history, false, plain, seen(1, 10)).is_ok());
    assert!(check(&history, false, State::Absent, seen(1, 10)).is_err());
    // Untouched, it ends as it began.
    let end = Some(FinalState {
        token: Some(0),
        value: Some(1),
    });
    assert_eq!(
        check(&[], false, plain, end).map(|l| l.final_state),
        Ok(plain)
    );
    // A tombstone of token 3 refuses token 2, and counts as present.
    let tombstone = State::Present {
        token: 3,
        value: None,
    };
    let history = [
        put(0, 2, 20, (0, 10), fenced(3)),
        put(1, 3, 30, (20, 30), written(Some(3))),
    ];
    assert!(check(&history, false, tombstone, seen(3, 30)).is_ok());
}

#[test]
fn malformed_histories_are_refused() {
    let backwards = [put(0, 1, 10, (10, 5), written(None))];
    assert_eq!(bad(&backwards, None).kind, ViolationKind::Malformed);
    let long: Vec<Operation> = (0..=MAX_OPS as u64)
        .map(|i| put(0, 1, i, (2 * i, 2 * i + 1), FencedResult::Accepted))
        .collect();
    assert_eq!(bad(&long, None).kind, ViolationKind::Malformed);
    // MAX_OPS sequential ones are fine.
    ok(&long[..MAX_OPS], None);
}

/// SplitMix64, for made-up histories.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A history that really happened: `n` calls take effect one at a time, in
/// random order, each at instant 10·k; each one's interval is widened by up
/// to `spread` around it. Some replies get lost (`Unknown`), landed or not.
fn real_history(
    rng: &mut Rng,
    n: usize,
    spread: u64,
    reject_equal: bool,
) -> (Vec<Operation>, State) {
    let mut state = State::Absent;
    let mut history = Vec::new();
    for k in 0..n as u64 {
        let token = 1 + rng.below(4);
        let call = if rng.below(5) == 0 {
            FencedCall::Delete { token }
        } else {
            FencedCall::Put { token, value: k }
        };
        let at = 10 * k + 5;
        let start = at - rng.below(spread.min(at) + 1);
        let end = at + rng.below(spread + 1);
        let refused_by = refused_by(token, &state, reject_equal);
        let lost = rng.below(6) == 0;
        let result = match refused_by {
            // A lost write that did not land, or a refused one.
            _ if lost && rng.below(2) == 0 => FencedResult::Unknown,
            Some(s) => FencedResult::Fenced { stored_token: s },
            None => {
                let r = match (lost, call) {
                    (true, _) => FencedResult::Unknown,
                    (false, FencedCall::Delete { .. }) => FencedResult::Accepted,
                    (false, FencedCall::Put { .. }) => FencedResult::Written {
                        previous_token: state.token(),
                    },
                };
                state = call.stores();
                r
            }
        };
        let end = if result == FencedResult::Unknown && rng.below(2) == 0 {
            NEVER
        } else {
            end
        };
        history.push(Operation {
            client: rng.below(4) as usize,
            call,
            result,
            start,
            end,
        });
    }
    (history, state)
}

fn observed(state: State) -> Option<FinalState> {
    Some(FinalState {
        token: match state {
            State::Present { value: Some(_), .. } => state.token(),
            _ => None,
        },
        value: match state {
            State::Absent => None,
            State::Present { value, .. } => value,
        },
    })
}

/// No false alarms: whatever really happened passes.
#[test]
fn histories_that_happened_pass() {
    let mut rng = Rng(7);
    for round in 0..400 {
        let reject_equal = round % 2 == 1;
        let n = 1 + rng.below(10) as usize;
        let (history, end) = real_history(&mut rng, n, 40, reject_equal);
        if let Err(v) = check(&history, reject_equal, State::Absent, observed(end)) {
            panic!("round {round}: {v}");
        }
    }
}

/// Twelve operations all in flight at once (the most `fencing_history`
/// makes), both passing and failing, each decided within a sixteenth of
/// the search's budget (work counted, not time: a loaded machine changes
/// the time, not the steps; the time is printed).
#[test]
fn twelve_concurrent_operations_check_quickly() {
    const QUICK: usize = MAX_EXPLORED / 16;
    let mut rng = Rng(12);
    let mut slowest = Duration::ZERO;
    let mut timed = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        slowest = slowest.max(t.elapsed());
    };
    for _ in 0..20 {
        // Every interval spans all the others.
        let (mut history, end) = real_history(&mut rng, 12, 1000, false);
        timed(&mut || {
            check_within(&history, false, State::Absent, observed(end), QUICK).unwrap();
        });
        // No one wrote the value seen: the whole space is searched.
        timed(&mut || {
            let v = check_within(&history, false, State::Absent, seen(9, 99), QUICK).unwrap_err();
            assert_ne!(v.kind, ViolationKind::Inconclusive);
        });
        // Every reply lost and nobody's value seen: the most orders.
        for op in &mut history {
            op.result = FencedResult::Unknown;
        }
        timed(&mut || {
            let v = check_within(&history, false, State::Absent, seen(9, 99), QUICK).unwrap_err();
            assert_eq!(v.kind, ViolationKind::FinalState);
        });
    }
    // Twelve concurrent writers of one token, every reply lost: any subset
    // in any order; the worst case for the memo.
    let history: Vec<Operation> = (0..12)
        .map(|i| put(i, 1, i as u64, (0, NEVER), UNKNOWN))
        .collect();
    timed(&mut || {
        let v = check_within(&history, false, State::Absent, seen(9, 99), QUICK).unwrap_err();
        assert_eq!(v.kind, ViolationKind::FinalState);
    });
    println!("slowest check of 12 concurrent operations: {slowest:?}");
}

#[test]
fn a_search_too_large_is_inconclusive() {
    // 2^21 subsets of 21 interchangeable lost writes, times their values.
    let history: Vec<Operation> = (0..21)
        .map(|i| put(i, 1, i as u64, (0, NEVER), UNKNOWN))
        .collect();
    let v = check_within(&history, false, State::Absent, seen(9, 99), 10_000).unwrap_err();
    assert_eq!(v.kind, ViolationKind::Inconclusive);
    assert!(v.explanation.contains("10000"), "{v}");
}

#[test]
#[ignore = "seconds: the full budget"]
fn the_full_budget_is_inconclusive_in_seconds() {
    let history: Vec<Operation> = (0..21)
        .map(|i| put(i, 1, i as u64, (0, NEVER), UNKNOWN))
        .collect();
    let t = Instant::now();
    let v = check(&history, false, State::Absent, seen(9, 99)).unwrap_err();
    assert_eq!(v.kind, ViolationKind::Inconclusive);
    println!("{MAX_EXPLORED} steps in {:?}", t.elapsed());
}

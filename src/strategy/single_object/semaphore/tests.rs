//! Semaphores and fair queues over the S3 model, through the client: the
//! limit, tokens from the key's one counter, the queue order, dead waiters,
//! lost replies, a plain lock beside them, and what each call costs.

use super::SlotOutcome;
use crate::client::ClientCore;
use crate::config::{ClientConfig, Strategy};
use crate::error::Error;
use crate::expiry::ExpiryClock;
use crate::lease::{Grant, Lease};
use crate::protocol::AcquireOutcome;
use crate::ready::Ready;
use crate::stores::s3::Method;
use crate::testing::model_io::ModelIo;
use crate::testing::raw_config;

const START_MS: u64 = 1_700_000_000_000;
const TTL: u64 = 10_000;

fn client(clock: ExpiryClock) -> ClientCore {
    client_of(Strategy::SingleObject, clock)
}

fn client_of(strategy: Strategy, clock: ExpiryClock) -> ClientCore {
    ClientCore::new(ClientConfig::validate(raw_config(strategy, clock)).unwrap())
}

fn grant(holder: &str) -> Grant {
    Grant::new(TTL, holder.into(), String::new()).unwrap()
}

fn attempt(
    c: &mut ClientCore,
    io: &mut ModelIo,
    holder: &str,
    limit: u32,
    fair: bool,
) -> SlotOutcome {
    c.try_acquire_slot(io, "k", &grant(holder), limit, fair)
        .ready()
        .unwrap()
}

fn slot(c: &mut ClientCore, io: &mut ModelIo, holder: &str, limit: u32) -> Lease {
    match attempt(c, io, holder, limit, false) {
        SlotOutcome::Granted(l) => l,
        other => panic!("{holder}: expected a slot, got {other:?}"),
    }
}

fn place(outcome: &SlotOutcome) -> Option<u32> {
    match outcome {
        SlotOutcome::Queued { place, .. } => Some(*place),
        _ => None,
    }
}

const CLOCKS: [ExpiryClock; 3] = [
    ExpiryClock::Holder,
    ExpiryClock::Server,
    ExpiryClock::Observed,
];

#[test]
fn admits_up_to_the_limit_with_tokens_from_one_counter() {
    for clock in CLOCKS {
        let (mut c, mut io) = (client(clock), ModelIo::new(START_MS));
        let tokens: Vec<u64> = ["a", "b", "c"]
            .iter()
            .map(|h| slot(&mut c, &mut io, h, 3).token)
            .collect();
        assert_eq!(tokens, [1, 2, 3], "{clock:?}");
        assert!(matches!(
            attempt(&mut c, &mut io, "d", 3, false),
            SlotOutcome::Full(Some(_))
        ));
        let state = c.inspect(&mut io, "k").ready().unwrap().unwrap();
        let sem = state.semaphore.as_ref().unwrap();
        assert_eq!(
            (
                sem.record.limit,
                sem.live_holders().count(),
                state.record.token
            ),
            (3, 3, 3)
        );
        assert!(state.live);
    }
}

#[test]
fn a_released_slot_is_taken_at_once_and_renewals_keep_theirs() {
    let (mut c, mut io) = (client(ExpiryClock::Server), ModelIo::new(START_MS));
    let a = slot(&mut c, &mut io, "a", 2);
    let b = slot(&mut c, &mut io, "b", 2);
    io.advance(3_000);
    let a = c.rewrite(&mut io, a, false).ready().unwrap();
    let b = c.rewrite(&mut io, b, false).ready().unwrap();
    c.rewrite(&mut io, a, true).ready().unwrap();
    let d = slot(&mut c, &mut io, "d", 2);
    assert_eq!(d.token, 3);
    // b's renewal survived the others' writes.
    c.rewrite(&mut io, b, false).ready().unwrap();
}

#[test]
fn an_expired_slot_is_dropped_and_its_holder_lost_it() {
    for clock in CLOCKS {
        let (mut c, mut io) = (client(clock), ModelIo::new(START_MS));
        let a = slot(&mut c, &mut io, "a", 1);
        let mut other = client(clock);
        // Observed: the other must watch the slot unchanged for the ttl.
        assert!(matches!(
            attempt(&mut other, &mut io, "b", 1, false),
            SlotOutcome::Full(_)
        ));
        io.advance(TTL + 4_000);
        let b = slot(&mut other, &mut io, "b", 1);
        assert_eq!(b.token, 2, "{clock:?}");
        let err = c.rewrite(&mut io, a, false).ready().unwrap_err();
        assert!(
            matches!(err, Error::Lost { token: 1, .. }),
            "{clock:?}: {err:?}"
        );
    }
}

#[test]
fn a_different_limit_is_refused_while_anyone_holds_and_accepted_once_free() {
    let (mut c, mut io) = (client(ExpiryClock::Server), ModelIo::new(START_MS));
    let a = slot(&mut c, &mut io, "a", 3);
    let err = c
        .try_acquire_slot(&mut io, "k", &grant("b"), 2, false)
        .ready()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::LimitMismatch {
                stored: 3,
                requested: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("admits 3") && err.to_string().contains("limit of 2"));
    // A plain lock is a limit of 1.
    let err = c
        .try_acquire(&mut io, "k", &grant("b"))
        .ready()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::LimitMismatch {
                stored: 3,
                requested: 1,
                ..
            }
        ),
        "{err:?}"
    );
    c.rewrite(&mut io, a, true).ready().unwrap();
    let b = slot(&mut c, &mut io, "b", 2);
    assert_eq!(b.token, 2);
}

#[test]
fn a_plain_lock_and_a_semaphore_share_the_counter_and_exclude_each_other() {
    let (mut c, mut io) = (client(ExpiryClock::Server), ModelIo::new(START_MS));
    let lock = match c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap() {
        AcquireOutcome::Granted(l) => l,
        other => panic!("{other:?}"),
    };
    let err = c
        .try_acquire_slot(&mut io, "k", &grant("b"), 2, false)
        .ready()
        .unwrap_err();
    assert!(matches!(
        err,
        Error::LimitMismatch {
            stored: 1,
            requested: 2,
            ..
        }
    ));
    // A fair waiter for a lock held as a plain lock waits, without a place.
    assert!(matches!(
        attempt(&mut c, &mut io, "b", 1, true),
        SlotOutcome::Full(Some(_))
    ));
    c.rewrite(&mut io, lock, true).ready().unwrap();
    let b = slot(&mut c, &mut io, "b", 1);
    assert_eq!(b.token, 2);
    // Now a fair lock: a plain acquire joins it as limit 1, and waits.
    let held = c.try_acquire(&mut io, "k", &grant("c")).ready().unwrap();
    assert!(matches!(held, AcquireOutcome::Held(Some(_))), "{held:?}");
    c.rewrite(&mut io, b, true).ready().unwrap();
    let c3 = match c.try_acquire(&mut io, "k", &grant("c")).ready().unwrap() {
        AcquireOutcome::Granted(l) => l,
        other => panic!("{other:?}"),
    };
    assert_eq!(c3.token, 3);
    // Its lease is a slot's: it renews and releases as one.
    let c3 = c.rewrite(&mut io, c3, false).ready().unwrap();
    c.rewrite(&mut io, c3, true).ready().unwrap();
}

#[test]
fn fair_waiters_are_served_in_the_order_they_joined() {
    let (mut c, mut io) = (client(ExpiryClock::Server), ModelIo::new(START_MS));
    let a = slot(&mut c, &mut io, "a", 1);
    assert_eq!(place(&attempt(&mut c, &mut io, "w1", 1, true)), Some(1));
    assert_eq!(place(&attempt(&mut c, &mut io, "w2", 1, true)), Some(2));
    assert_eq!(place(&attempt(&mut c, &mut io, "w3", 1, true)), Some(3));
    c.rewrite(&mut io, a, true).ready().unwrap();
    // The slot is free, but not for w3 or a newcomer, fair or not.
    assert_eq!(place(&attempt(&mut c, &mut io, "w3", 1, true)), Some(3));
    assert!(matches!(
        attempt(&mut c, &mut io, "x", 1, false),
        SlotOutcome::Full(_)
    ));
    let w1 = match attempt(&mut c, &mut io, "w1", 1, true) {
        SlotOutcome::Granted(l) => l,
        other => panic!("{other:?}"),
    };
    assert_eq!(w1.token, 2);
    assert_eq!(place(&attempt(&mut c, &mut io, "w2", 1, true)), Some(1));
    c.rewrite(&mut io, w1, true).ready().unwrap();
    let w2 = match attempt(&mut c, &mut io, "w2", 1, true) {
        SlotOutcome::Granted(l) => l,
        other => panic!("{other:?}"),
    };
    assert_eq!(w2.token, 3);
}

#[test]
fn a_dead_waiter_loses_its_place_after_its_ttl_and_a_live_one_keeps_it() {
    let (mut c, mut io) = (client(ExpiryClock::Server), ModelIo::new(START_MS));
    let a = slot(&mut c, &mut io, "a", 1);
    attempt(&mut c, &mut io, "dead", 1, true);
    attempt(&mut c, &mut io, "alive", 1, true);
    c.rewrite(&mut io, a, true).ready().unwrap();
    // "alive" keeps looking (and renewing its place); "dead" stopped.
    for _ in 0..12 {
        io.advance(1_000);
        assert_eq!(place(&attempt(&mut c, &mut io, "alive", 1, true)), Some(2));
    }
    io.advance(2_000);
    let granted = attempt(&mut c, &mut io, "alive", 1, true);
    assert!(matches!(granted, SlotOutcome::Granted(_)), "{granted:?}");
}

#[test]
fn a_waiter_that_gives_up_leaves_the_queue() {
    let (mut c, mut io) = (client(ExpiryClock::Server), ModelIo::new(START_MS));
    let a = slot(&mut c, &mut io, "a", 1);
    attempt(&mut c, &mut io, "w1", 1, true);
    attempt(&mut c, &mut io, "w2", 1, true);
    let err = c
        .acquire_slot(&mut io, "k", &grant("w1"), 1, true, 300)
        .ready()
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    assert_eq!(place(&attempt(&mut c, &mut io, "w2", 1, true)), Some(1));
    c.rewrite(&mut io, a, true).ready().unwrap();
    assert!(matches!(
        attempt(&mut c, &mut io, "w2", 1, true),
        SlotOutcome::Granted(_)
    ));
}

#[test]
fn lost_replies_of_every_write_are_recognised() {
    let (mut c, mut io) = (client(ExpiryClock::Server), ModelIo::new(START_MS));
    io.lose_put_replies = 1;
    let a = slot(&mut c, &mut io, "a", 2);
    assert_eq!(a.token, 1);
    io.lose_put_replies = 1;
    let a = c.rewrite(&mut io, a, false).ready().unwrap();
    io.lose_put_replies = 1;
    assert_eq!(
        place(&attempt(&mut c, &mut io, "w", 2, true)),
        None,
        "a slot was free"
    );
    io.lose_put_replies = 1;
    c.rewrite(&mut io, a, true).ready().unwrap();
    let state = c.inspect(&mut io, "k").ready().unwrap().unwrap();
    let sem = state.semaphore.unwrap();
    assert_eq!(sem.record.holders.len(), 1, "{sem:?}");
    assert_eq!(sem.record.holders[0].holder_id, "w");
}

/// Under `observed` an entry is the same while its write id is. A grant
/// whose reply was lost, re-read after its slot was dropped, writes again:
/// that write must not reuse the first one's id, or a reader that saw the
/// first slot counts the second as old as it and drops it while it is
/// held. (Found by the simulation, seed 309.)
#[test]
fn a_write_after_a_lost_reply_takes_a_new_write_id() {
    use super::{SemaphoreOp, Wish};
    use crate::expiry::Judge;
    use crate::protocol::{Operation, Step};

    let (mut b, mut io) = (client(ExpiryClock::Observed), ModelIo::new(START_MS));
    let object_key = b.object_key("k").unwrap();
    let mut a = SemaphoreOp::new(
        "k".into(),
        object_key.clone(),
        Wish::Acquire {
            grant: grant("a"),
            limit: 1,
            fair: false,
        },
        crate::testing::sealer("b").for_lock(format!("semaphore:{object_key}")),
        Judge::new(ExpiryClock::Observed, None),
        "wa".into(),
        None,
    );
    let send = |step: Step<_>| match step {
        Step::Send(r) => r,
        Step::SendAll(_) => panic!("expected one request, got a batch"),
        Step::Done(d) => panic!("expected a request, got {d:?}"),
    };
    // a's grant lands; its reply is lost, and its re-read is slow.
    let read = send(a.start(io.store.now_ms));
    let reply = io.store.handle(&read);
    let write = send(a.on_response(reply, io.store.now_ms));
    assert_eq!(io.store.handle(&write).status, 200);
    let reread = send(a.on_transport_error(Error::Transport("lost".into()), io.store.now_ms));
    // b watches a's slot unchanged for its ttl, takes it, gives it back.
    assert!(matches!(
        attempt(&mut b, &mut io, "b", 1, false),
        SlotOutcome::Full(_)
    ));
    io.advance(TTL + 1_000);
    let lease = slot(&mut b, &mut io, "b", 1);
    b.rewrite(&mut io, lease, true).ready().unwrap();
    // a's re-read finds no slot of its own, and takes the free one.
    let reply = io.store.handle(&reread);
    let write = send(a.on_response(reply, io.store.now_ms));
    assert_eq!(io.store.handle(&write).status, 200);
    let granted = match a.on_response(
        crate::stores::s3::S3Response {
            status: 200,
            headers: vec![(
                "etag".into(),
                io.store.object(&object_key).unwrap().etag.clone(),
            )],
            ..Default::default()
        },
        io.store.now_ms,
    ) {
        Step::Done(Ok(f)) => f.outcome,
        other => panic!("{other:?}"),
    };
    assert!(
        matches!(&granted, SlotOutcome::Granted(l) if l.token == 3),
        "{granted:?}"
    );
    // b, which saw a's first slot long ago, must see this one as new.
    assert!(
        matches!(
            attempt(&mut b, &mut io, "b", 1, false),
            SlotOutcome::Full(_)
        ),
        "a's second slot was taken as its first"
    );
}

#[test]
fn a_slot_lease_is_sealed_as_a_slot_and_an_altered_one_is_refused() {
    let (mut c, mut io) = (client(ExpiryClock::Server), ModelIo::new(START_MS));
    let a = slot(&mut c, &mut io, "a", 2);
    let raised = Lease {
        token: 2,
        ..a.clone()
    };
    io.take_requests();
    let err = c.rewrite(&mut io, raised, false).ready().unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    assert!(io.take_requests().is_empty(), "refused before any request");
}

/// The protocol's cost, in requests: the contract the WIT states.
#[test]
fn what_each_call_costs_in_requests() {
    let (mut c, mut io) = (client(ExpiryClock::Server), ModelIo::new(START_MS));
    let cost = |io: &mut ModelIo| {
        let r = io.take_requests();
        (
            r.iter().filter(|r| r.method == Method::Get).count(),
            r.iter().filter(|r| r.method == Method::Put).count(),
        )
    };
    let a = slot(&mut c, &mut io, "a", 2);
    assert_eq!(
        cost(&mut io),
        (2, 3),
        "the seal key (GET, PUT: created by this first client), then a grant: GET, the key's floor, PUT"
    );

    let a = c.rewrite(&mut io, a, false).ready().unwrap();
    assert_eq!(cost(&mut io), (0, 1), "a renew after our own write: PUT");
    let mut other = client(ExpiryClock::Server);
    let b = slot(&mut other, &mut io, "b", 2);
    assert_eq!(
        cost(&mut io),
        (2, 1),
        "another client's first call: the seal key (GET), then GET, PUT"
    );
    let a = c.rewrite(&mut io, a, false).ready().unwrap();
    assert_eq!(
        cost(&mut io),
        (1, 2),
        "after another's write: PUT (412), GET, PUT"
    );
    let a = c.rewrite(&mut io, a, false).ready().unwrap();
    assert_eq!(cost(&mut io), (0, 1));
    assert!(matches!(
        attempt(&mut c, &mut io, "w", 2, true),
        SlotOutcome::Queued { place: 1, .. }
    ));
    assert_eq!(cost(&mut io), (1, 1), "joining the queue: GET, PUT");
    assert!(matches!(
        attempt(&mut c, &mut io, "w", 2, true),
        SlotOutcome::Queued { place: 1, .. }
    ));
    assert_eq!(
        cost(&mut io),
        (1, 0),
        "looking while in line: one conditional GET"
    );
    c.rewrite(&mut io, a, true).ready().unwrap();
    cost(&mut io);
    other.rewrite(&mut io, b, true).ready().unwrap();
    assert_eq!(cost(&mut io), (1, 2), "release after another's write");
    c.inspect(&mut io, "k").ready().unwrap();
    assert_eq!(cost(&mut io), (1, 0));
}

/// Every renew rewrites the one object: an abandoned slot must still
/// expire by its own last write, not by the object's (`written_at` under
/// `server`, its write id under `observed`, its `expires_at` under
/// `holder`).
#[test]
fn an_abandoned_slot_expires_while_the_others_keep_renewing() {
    for clock in CLOCKS {
        let (mut c, mut io) = (client(clock), ModelIo::new(START_MS));
        let _abandoned = slot(&mut c, &mut io, "a", 2);
        let mut b = slot(&mut c, &mut io, "b", 2);
        let mut other = client(clock);
        let mut granted = None;
        for _ in 0..12 {
            io.advance(2_000);
            b = c.rewrite(&mut io, b, false).ready().unwrap();
            if let SlotOutcome::Granted(l) = attempt(&mut other, &mut io, "c", 2, false) {
                granted = Some(l);
                break;
            }
        }
        let granted = granted.unwrap_or_else(|| panic!("{clock:?}: a's slot never expired"));
        assert_eq!(granted.token, 3, "{clock:?}");
        c.rewrite(&mut io, b, false).ready().unwrap();
    }
}

/// Waiters judged live keep their order whatever a newcomer does, and a
/// semaphore's limit counts only live holders.
#[test]
fn a_newcomer_never_jumps_a_live_queue() {
    let (mut c, mut io) = (client(ExpiryClock::Server), ModelIo::new(START_MS));
    let a = slot(&mut c, &mut io, "a", 2);
    let b = slot(&mut c, &mut io, "b", 2);
    assert_eq!(place(&attempt(&mut c, &mut io, "w1", 2, true)), Some(1));
    assert_eq!(place(&attempt(&mut c, &mut io, "w2", 2, true)), Some(2));
    c.rewrite(&mut io, a, true).ready().unwrap();
    // One slot free, two live waiters: w2 (second) and newcomers wait.
    assert_eq!(place(&attempt(&mut c, &mut io, "w2", 2, true)), Some(2));
    assert_eq!(place(&attempt(&mut c, &mut io, "n", 2, true)), Some(3));
    assert!(matches!(
        attempt(&mut c, &mut io, "x", 2, false),
        SlotOutcome::Full(_)
    ));
    assert!(matches!(
        attempt(&mut c, &mut io, "w1", 2, true),
        SlotOutcome::Granted(_)
    ));
    c.rewrite(&mut io, b, true).ready().unwrap();
    assert!(matches!(
        attempt(&mut c, &mut io, "n", 2, true),
        SlotOutcome::Queued { place: 2, .. }
    ));
    assert!(matches!(
        attempt(&mut c, &mut io, "w2", 2, true),
        SlotOutcome::Granted(_)
    ));
}

/// A store whose GET replies lack `Last-Modified`: the entries of others
/// cannot be stamped, so nothing is written and the error says why (under
/// every clock: even `holder`, which needs no server time to judge, must
/// not leave `written_at` wrong for a reader on `server`).
#[test]
fn a_reply_without_last_modified_writes_nothing_and_says_why() {
    for clock in CLOCKS {
        let (mut c, mut io) = (client(clock), ModelIo::new(START_MS));
        slot(&mut c, &mut io, "a", 2);
        let before = io.store.object("locks/k").map(|o| o.body.clone());
        let mut other = client(clock);
        let mut stripped =
            crate::testing::intercept::Intercept::new(&mut io, |request, io: &mut ModelIo| {
                (request.method == Method::Get).then(|| {
                    crate::driver::Io::send(io, request).ready().map(|mut r| {
                        r.headers.retain(|(k, _)| k != "last-modified");
                        r
                    })
                })
            });
        let err = other
            .try_acquire_slot(&mut stripped, "k", &grant("b"), 2, false)
            .ready()
            .unwrap_err();
        drop(stripped);
        assert!(
            err.to_string().contains("last-modified"),
            "{clock:?}: {err}"
        );
        assert_eq!(io.store.object("locks/k").map(|o| o.body.clone()), before);
    }
}

/// A waiter whose wall clock steps back still renews its place every
/// third of its ttl (found by the soak: it skipped renewals for as long as
/// the step, others dropped its place, and it was served last).
#[test]
fn a_waiter_whose_clock_steps_back_keeps_its_place() {
    for clock in [ExpiryClock::Server, ExpiryClock::Observed] {
        let (mut c, mut io) = (client(clock), ModelIo::new(START_MS));
        let mut a = slot(&mut c, &mut io, "a", 1);
        let (mut w1, mut w2) = (client(clock), client(clock));
        assert_eq!(place(&attempt(&mut w1, &mut io, "w1", 1, true)), Some(1));
        assert_eq!(place(&attempt(&mut w2, &mut io, "w2", 1, true)), Some(2));
        // 15 s of looks every 300 ms (longer than the ttl and its slack);
        // w1's wall clock is 20 s behind from now on.
        for look in 0..50 {
            io.advance(300);
            io.clock_offset_ms = -20_000;
            let seen = attempt(&mut w1, &mut io, "w1", 1, true);
            io.clock_offset_ms = 0;
            assert_eq!(place(&seen), Some(1), "{clock:?}, look {look}: {seen:?}");
            assert_eq!(place(&attempt(&mut w2, &mut io, "w2", 1, true)), Some(2));
            if look % 3 == 0 {
                a = c.rewrite(&mut io, a, false).ready().unwrap();
            }
        }
        c.rewrite(&mut io, a, true).ready().unwrap();
        assert_eq!(place(&attempt(&mut w2, &mut io, "w2", 1, true)), Some(2));
        io.clock_offset_ms = -20_000;
        let granted = attempt(&mut w1, &mut io, "w1", 1, true);
        assert!(
            matches!(granted, SlotOutcome::Granted(_)),
            "{clock:?}: {granted:?}"
        );
    }
}

/// A grant whose reply was lost, and whose read-back failed too, leaves a
/// slot its caller does not know it holds; the caller's next attempt takes
/// that slot over at once, waiters or not (found by the soak: it went to
/// the back of the queue and its slot to the next waiter).
#[test]
fn a_grant_lost_twice_is_taken_over_on_the_next_attempt_not_requeued() {
    let (mut c, mut io) = (client(ExpiryClock::Server), ModelIo::new(START_MS));
    slot(&mut c, &mut io, "h", 2);
    let mut a = client(ExpiryClock::Server);
    a.lock_seal(&mut io, "locks/k").ready().unwrap();
    io.lose_put_replies = 1;
    let mut sent = 0;
    let mut refused_read_back =
        crate::testing::intercept::Intercept::new(&mut io, |request, _io: &mut ModelIo| {
            sent += 1;
            // GET, PUT (applied, reply lost), then the read-back: refused.
            (sent == 3 && request.method == Method::Get)
                .then(|| Err(Error::Transport("connection refused".into())))
        });
    let lost = a
        .try_acquire_slot(&mut refused_read_back, "k", &grant("a"), 2, true)
        .ready();
    drop(refused_read_back);
    assert!(matches!(lost, Err(Error::Transport(_))), "{lost:?}");
    assert_eq!(place(&attempt(&mut c, &mut io, "b", 2, true)), Some(1));
    // a asks again, not knowing it holds a slot: it keeps one (a new
    // token), and b keeps its place.
    let again = attempt(&mut a, &mut io, "a", 2, true);
    assert!(
        matches!(&again, SlotOutcome::Granted(l) if l.token == 3),
        "{again:?}"
    );
    assert_eq!(place(&attempt(&mut c, &mut io, "b", 2, true)), Some(1));
    let sem = c
        .inspect(&mut io, "k")
        .ready()
        .unwrap()
        .unwrap()
        .semaphore
        .unwrap();
    let holders: Vec<&str> = sem
        .record
        .holders
        .iter()
        .map(|e| e.holder_id.as_str())
        .collect();
    assert_eq!(holders, ["h", "a"]);
}

mod on_epoch_objects;
mod room_to_renew;

//! A process that takes slots of one semaphore key: it waits (a fair one
//! in the key's queue) the host's way, one attempt per call paced by
//! `s3_lease_keep::wait`, or the component's way, in one `acquire-slot`
//! call; holds the slot under the host's guard (half the ttl, as
//! `s3-lease run --limit` does); and gives it back, abandons it, or takes
//! its key again under the same holder id; a fair waiter that gives up
//! leaves the queue. It also tries spent and altered slot leases.

use super::holding::{granted, try_spent, Ended, Work};
use super::{expect_fault, try_forgery};
use crate::client::ClientCore;
use crate::driver::Io;
use crate::error::Error;
use crate::lease::{Grant, Lease};
use crate::strategy::single_object::semaphore::SlotOutcome;
use crate::testing::history::Wait as WaitRecord;
use crate::testing::sim::host::SimIo;
use crate::testing::sim::setup::{ActorKind, SEMAPHORE_KEYS};
use s3_lease_keep::guard::{Attempt, End, Timing};
use s3_lease_keep::wait::{fair_poll_ms, Missed, Wait};

pub async fn run(mut io: SimIo, n: usize) {
    let sem = &SEMAPHORE_KEYS[n];
    let kind = ActorKind::Slots(n);
    let (config, group, who) =
        io.with(|w, id| (w.setup.config(kind), w.setup.group(kind), w.who(id)));
    let mut core = ClientCore::new(config);
    let mut spent: Vec<(Lease, &'static str)> = Vec::new();
    let ttl = group.ttl_ms;
    let timing = Timing::new(ttl, group.deadline_ms);
    let mut serial = 0u64;
    loop {
        serial += 1;
        let roll = io.with(|w, _| w.rng.below(100));
        if roll < 6 && !spent.is_empty() {
            let i = io.with(|w, _| w.rng.below(spent.len() as u64)) as usize;
            let (lease, why) = spent.swap_remove(i);
            io.with(|w, id| w.hosts[id].acting_for = lease.holder_id.clone());
            try_spent(&mut io, &mut core, &lease, why).await;
            continue;
        }
        if roll < 9 {
            if let Some(lease) = spent.first().map(|(l, _)| l.clone()) {
                try_forgery(&mut io, &core, &lease).await;
                continue;
            }
        }
        let holder = format!("s{}-{}-{serial}", who.actor, who.generation);
        io.with(|w, id| w.hosts[id].acting_for = holder.clone());
        let grant = Grant::new(ttl, holder, format!("m{serial}")).expect("a valid grant");
        let wait_ms = io.with(|w, _| w.rng.below(3 * ttl));
        let taken = if io.with(|w, _| w.rng.chance(0.7)) {
            wait_between_calls(
                &mut io, &mut core, sem.name, &grant, sem.limit, sem.fair, wait_ms,
            )
            .await
        } else {
            let attempt = Attempt::start(io.monotonic_ms());
            let sent = io.now();
            match core
                .acquire_slot(&mut io, sem.name, &grant, sem.limit, sem.fair, wait_ms)
                .await
            {
                Ok(lease) => Some((lease, attempt, sent)),
                Err(Error::Timeout { .. }) => None,
                Err(e) => {
                    expect_fault(&io, "an acquire-slot", &e);
                    None
                }
            }
        };
        let Some((lease, attempt, sent)) = taken else {
            let rest = io.with(|w, _| w.rng.below(ttl));
            io.pause(rest + 1).await;
            continue;
        };
        io.with(|w, _| w.report.slot_grants += 1);
        let mut held = granted(&mut io, sem.name, lease, attempt, sent, timing);
        loop {
            let for_ms = io.with(|w, _| w.rng.range(ttl / 4, 2 * ttl));
            let until = io.now() + for_ms;
            match held
                .hold(&mut io, &mut core, until, Work { fence: None })
                .await
            {
                Ended::Lost(End::Taken) | Ended::Lost(_) => break,
                Ended::Due => {}
            }
            match io.with(|w, _| w.rng.below(10)) {
                0 => {
                    held.stop(&mut io, "abandoned");
                    break;
                }
                1 => {
                    held.stop(&mut io, "took its key again");
                    let old = held.lease.clone();
                    let grant = Grant::new(ttl, old.holder_id.clone(), old.metadata.clone())
                        .expect("a valid grant");
                    let attempt = Attempt::start(io.monotonic_ms());
                    let sent = io.now();
                    match core
                        .try_acquire_slot(&mut io, sem.name, &grant, sem.limit, sem.fair)
                        .await
                    {
                        Ok(SlotOutcome::Granted(lease)) => {
                            spent.push((old, "superseded by its own holder's new grant"));
                            io.with(|w, _| w.report.retakes += 1);
                            held = granted(&mut io, sem.name, lease, attempt, sent, timing);
                        }
                        Ok(_) => break,
                        Err(e) => {
                            expect_fault(&io, "a try-acquire-slot of its own key", &e);
                            break;
                        }
                    }
                }
                _ => {
                    if let Some(lease) = held.release(&mut io, &mut core).await {
                        spent.push((lease, "released"));
                    }
                    break;
                }
            }
        }
        let rest = io.with(|w, _| w.rng.below(ttl / 2));
        io.pause(rest + 1).await;
    }
}

/// Waits the host's way: one attempt per call, paced by the wait
/// schedule; recorded as a wait for the checkers' queue order. A fair
/// waiter that gives up leaves the queue.
async fn wait_between_calls(
    io: &mut SimIo,
    core: &mut ClientCore,
    key: &str,
    grant: &Grant,
    limit: u32,
    fair: bool,
    wait_ms: u64,
) -> Option<(Lease, Attempt, u64)> {
    let key_index = io
        .with(|w, _| w.history.key(key))
        .expect("a key of the run");
    // A place is kept while the waiter renews it this often (a third of
    // the ttl); a longer gap may lose it, as the contract allows.
    let keep_gap = grant.ttl_ms / 3;
    let mut record = WaitRecord {
        key: key_index,
        who: io.with(|w, id| w.who(id)),
        start: io.now() * 1_000,
        first_queued: None,
        granted: None,
        kept_place_until: u64::MAX,
        end: 0,
    };
    let mut last_queued: Option<u64> = None;
    // An attempt that failed without a clear answer may have taken a slot
    // (its write landed, its reply and read-back were lost): the attempt
    // that later finds that slot its own reports the grant, made as early
    // as this one was sent.
    let mut unsure_since: Option<u64> = None;
    let mut wait = Wait::new(io.monotonic_ms(), wait_ms);
    let poll = fair_poll_ms(grant.ttl_ms);
    // Whether the place may have lapsed by `at`: no renewal sent within
    // the gap before it.
    let lapsed = |record: &mut WaitRecord, last_queued: Option<u64>, at: u64| {
        if let Some(previous) = last_queued.filter(|&p| at > p + keep_gap) {
            record.kept_place_until = record.kept_place_until.min((previous + keep_gap) * 1_000);
        }
    };
    let result = loop {
        let attempt = Attempt::start(io.monotonic_ms());
        let sent = io.now();
        lapsed(&mut record, last_queued, sent);
        let outcome = core.try_acquire_slot(io, key, grant, limit, fair).await;
        let answered = io.now();
        let missed = match outcome {
            Ok(SlotOutcome::Granted(lease)) => {
                let asked = unsure_since.unwrap_or(sent);
                record.granted = Some((asked * 1_000, answered * 1_000, lease.token));
                break Some((lease, attempt, sent));
            }
            Ok(SlotOutcome::Queued { .. }) => {
                unsure_since = None;
                if record.first_queued.is_none() {
                    record.first_queued = Some((sent * 1_000, answered * 1_000));
                    io.with(|w, _| w.report.places_taken += 1);
                }
                last_queued = Some(sent);
                Missed::Queued
            }
            Ok(SlotOutcome::Full(seen)) => {
                unsure_since = None;
                Missed::Held {
                    expires_in_ms: seen.map(|s| s.expires_in_ms),
                }
            }
            Ok(SlotOutcome::Rewritten(_) | SlotOutcome::Left) => Missed::Undecided,
            Err(e) if e.is_transient() => {
                unsure_since.get_or_insert(sent);
                Missed::Undecided
            }
            Err(e) => {
                expect_fault(io, "a try-acquire-slot", &e);
                break None;
            }
        };
        let now = io.monotonic_ms();
        if wait.is_over(now) {
            break None;
        }
        let random = io.random_u64();
        let pause = wait.pause_ms(missed, now, random, poll);
        io.sleep_ms(pause).await;
    };
    // The wait ends here: a waiter that gives up leaves the queue from
    // now, however late its leave lands or is answered.
    let stopped = io.now();
    if result.is_none() && fair && record.first_queued.is_some() {
        match core.leave_queue(io, key, &grant.holder_id).await {
            Ok(()) => io.with(|w, _| w.report.places_left += 1),
            Err(e) => expect_fault(io, "leaving the queue", &e),
        }
    }
    lapsed(&mut record, last_queued, stopped);
    let end = stopped * 1_000;
    record.end = end;
    record.kept_place_until = record.kept_place_until.min(end);
    if fair {
        io.with(|w, _| w.history.waits.push(record));
    }
    result
}

//! The host's lease scheduler on virtual time: one client keeping many
//! leases for a simulated week, as the host's keeper keeps them. The
//! machines are the real ones (`s3_lease_keep::schedule`, one entry per
//! lease; a `s3_lease_keep::guard` per lease) and so is the client (the
//! core's renew, against the S3 model); the driver loop is the keeper's:
//! wake at the schedule's next instant, ask each due lease's guard, renew,
//! and put the lease back where its guard says once the renew's outcome is
//! in. What a week of renews must not change: one entry per live lease at
//! every step, the scheduler's work and the requests per renew, and the
//! renews per day; and no lease is lost without a fault.

use crate::client::ClientCore;
use crate::config::{ClientConfig, ExpiryClock, Strategy};
use crate::driver::Io;
use crate::lease::{Grant, Lease};
use crate::protocol::AcquireOutcome;
use crate::ready::Ready;
use crate::testing::model_io::ModelIo;
use s3_lease_keep::guard::{Attempt, Guard, Next, Timing};
use s3_lease_keep::schedule::Schedule;

/// 2023-11-14T22:13:20Z.
const START_MS: u64 = 1_700_000_000_000;
const LEASES: u64 = 50;
/// A renew every 6 minutes (a third of the 18-minute deadline): 1,680
/// renews a lease in the week, 84,000 in all, in a few seconds of a debug
/// build (a renew through the core and the model costs about 50 us there;
/// the old scheduler gained an entry per renew, so 1,680 a lease).
const TTL_MS: u64 = 20 * 60 * 1000;
/// Each request's round trip.
const ROUND_TRIP_MS: u64 = 15;
const DAY_MS: u64 = 24 * 3600 * 1000;
const DAYS: u64 = 7;

/// One simulated day's figures.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Day {
    renews: u64,
    /// Leases the scheduler handed out as due, plus looks after outcomes.
    steps: u64,
    requests: u64,
    most_entries: usize,
}

struct Kept {
    lease: Lease,
    guard: Guard,
}

/// What the driver does with a guard's answer; true if it renewed.
fn act(
    id: u64,
    kept: &mut Kept,
    io: &mut ModelIo,
    core: &mut ClientCore,
    schedule: &mut Schedule,
) -> bool {
    let now = io.monotonic_ms();
    match kept.guard.poll(now) {
        Next::Ended(end) => panic!("lease {id} lost without a fault after {} ms: {end:?}", now),
        Next::WakeAt(at) => {
            schedule.set(id, at);
            false
        }
        Next::Renew => {
            // Looked at again at the claim's end should the renew hang
            // (the host's keeper does this; here the outcome comes first).
            let until = kept.guard.held_until(now).expect("held");
            schedule.set(id, until);
            io.advance(ROUND_TRIP_MS / 2);
            let result = core.rewrite(io, kept.lease.clone(), false).ready();
            io.advance(ROUND_TRIP_MS - ROUND_TRIP_MS / 2);
            let replied = io.monotonic_ms();
            match result {
                Ok(renewed) => {
                    kept.guard.renewed(replied);
                    kept.lease = renewed;
                }
                Err(e) => panic!("lease {id}'s renew failed without a fault: {e:?}"),
            }
            true
        }
    }
}

#[test]
fn fifty_leases_kept_for_a_simulated_week_hold_one_entry_each_and_flat_work() {
    let raw = crate::testing::raw_config(Strategy::SingleObject, ExpiryClock::Server);
    let mut core = ClientCore::new(ClientConfig::validate(raw).unwrap());
    let mut io = ModelIo::new(START_MS);
    let timing = Timing::for_ttl(TTL_MS);
    let mut schedule = Schedule::new();
    let mut kept = Vec::new();
    for id in 0..LEASES {
        let grant = Grant::new(TTL_MS, format!("holder-{id}"), String::new()).unwrap();
        let attempt = Attempt::start(io.monotonic_ms());
        let outcome = core.try_acquire(&mut io, &format!("k{id}"), &grant).ready();
        let Ok(AcquireOutcome::Granted(lease)) = outcome else {
            panic!("k{id} not granted: {outcome:?}");
        };
        let guard = attempt.granted(timing, io.monotonic_ms());
        schedule.set(id, io.monotonic_ms());
        kept.push(Kept { lease, guard });
        // Leases come in over the first seconds, not all at once.
        io.advance(97);
    }
    io.take_requests();

    let mut days = vec![Day::default(); DAYS as usize];
    let end = DAYS * DAY_MS;
    loop {
        let wake = schedule.next_wake().expect("every lease is scheduled");
        if wake >= end {
            break;
        }
        let now = io.monotonic_ms();
        io.advance(wake.saturating_sub(now));
        let day = &mut days[(io.monotonic_ms() / DAY_MS) as usize];
        while let Some(id) = schedule.pop_due(io.monotonic_ms()) {
            day.steps += 1;
            let lease = &mut kept[id as usize];
            if act(id, lease, &mut io, &mut core, &mut schedule) {
                day.renews += 1;
                day.requests += io.take_requests().len() as u64;
                // The outcome is in: the driver looks again at once.
                day.steps += 1;
                let renewed_again = act(id, lease, &mut io, &mut core, &mut schedule);
                assert!(!renewed_again, "renewed twice in a row");
            }
            // One entry per live lease, at every step.
            assert_eq!(schedule.len() as u64, LEASES);
            day.most_entries = day.most_entries.max(schedule.len());
        }
    }

    let (first, last) = (days[0], days[DAYS as usize - 1]);
    println!(
        "a week of {LEASES} leases at ttl {TTL_MS} ms: first day {first:?}, last day {last:?}"
    );
    // Every lease held to the end, by the store's own record too.
    let now = io.monotonic_ms();
    for (id, k) in kept.iter().enumerate() {
        assert!(k.guard.is_held(now), "lease {id} not held at the end");
    }
    // The same work per renew on the last day as on the first: two looks
    // and one request each (a renew writes without a read); the first day
    // also has each lease's first look, when it came in.
    for (day, first_looks) in [(first, LEASES), (last, 0)] {
        assert_eq!(day.steps, 2 * day.renews + first_looks, "{day:?}");
        assert_eq!(day.requests, day.renews, "{day:?}");
        assert_eq!(day.most_entries as u64, LEASES, "{day:?}");
    }
    // As many renews a day at the end as at the start: each lease one every
    // 6 minutes (counted from each renew's send).
    let per_day = LEASES * DAY_MS / timing.every_ms;
    for day in &days[1..] {
        assert!(
            day.renews.abs_diff(per_day) <= LEASES,
            "{day:?}, expected {per_day}"
        );
    }
}

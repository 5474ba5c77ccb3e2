//! A process that takes locks, holds them under the host's guard, writes
//! fenced objects while it holds them, and gives them back; and, as
//! deployments do, takes its own key again under the same holder id,
//! tries spent and altered leases, writes after a pause, abandons leases,
//! and renews a lease that lapsed.
//!
//! It waits three ways: one `try-acquire`; the component's own `acquire`
//! (waiting inside one call); and the host's way (one attempt per call,
//! paced by `s3_lease_keep::wait`), whose granting attempt's start is the
//! instant the guard counts from.

use super::holding::{granted, record_rewrite, revived, try_spent, Ended, Held, Work};
use super::{expect_fault, fenced_write, try_forgery};
use crate::client::ClientCore;
use crate::driver::Io;
use crate::error::Error;
use crate::lease::{Grant, Lease};
use crate::protocol::AcquireOutcome;
use crate::testing::sim::host::SimIo;
use crate::testing::sim::setup::{ActorKind, LOCK_KEYS, SEMAPHORE_KEYS};
use s3_lease_keep::guard::{Attempt, End, Timing};
use s3_lease_keep::wait::{Missed, Wait};

/// Runs a locker of the lock keys, or (`Some(n)`) a plain locker of
/// semaphore key `n`.
pub async fn run(mut io: SimIo, semaphore: Option<usize>) {
    let kind = match semaphore {
        None => ActorKind::Locker,
        Some(n) => ActorKind::PlainOnSemaphore(n),
    };
    let (config, group, who) =
        io.with(|w, id| (w.setup.config(kind), w.setup.group(kind), w.who(id)));
    let keys: Vec<&'static str> = match semaphore {
        None => LOCK_KEYS.to_vec(),
        Some(n) => vec![SEMAPHORE_KEYS[n].name],
    };
    let fences = semaphore.is_none() && !io.with(|w, _| w.setup.dynamodb);
    let mut core = ClientCore::new(config);
    let mut spent: Vec<(Lease, &'static str)> = Vec::new();
    let mut lapsed: Option<Lease> = None;
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
        if let Some(lease) = lapsed.take().filter(|_| roll < 20) {
            io.with(|w, id| w.hosts[id].acting_for = lease.holder_id.clone());
            // Renew a lease the guard let lapse: if nobody wrote since, the
            // store accepts it, and it is held anew from this renew's send.
            let attempt = Attempt::start(io.monotonic_ms());
            let sent = io.now();
            let key_index = io
                .with(|w, _| w.history.key(&lease.key))
                .expect("a key of the run");
            if let Ok(renewed) = core.rewrite(&mut io, lease.clone(), false).await {
                record_rewrite(&io, key_index, &lease, sent, false, None);
                io.with(|w, _| w.report.lapsed_renewed += 1);
                let timing = Timing::new(group.ttl_ms, group.deadline_ms);
                let held = revived(&mut io, renewed, attempt, timing);
                keep(&mut io, &mut core, held, fences, &mut spent, &mut lapsed).await;
            }
            continue;
        }
        let key = keys[io.with(|w, _| w.rng.below(keys.len() as u64)) as usize];
        let holder = format!("a{}-{}-{serial}", who.actor, who.generation);
        // The holder its writes act for, as the store rules judge them.
        io.with(|w, id| w.hosts[id].acting_for = holder.clone());
        let grant = Grant::new(group.ttl_ms, holder, format!("m{serial}")).expect("a valid grant");
        let Some((lease, attempt, sent)) =
            take(&mut io, &mut core, key, &grant, group.ttl_ms).await
        else {
            let rest = io.with(|w, _| w.rng.below(group.ttl_ms / 2));
            io.pause(rest + 1).await;
            continue;
        };
        let timing = Timing::new(group.ttl_ms, group.deadline_ms);
        let held = granted(&mut io, key, lease, attempt, sent, timing);
        keep(&mut io, &mut core, held, fences, &mut spent, &mut lapsed).await;
        let rest = io.with(|w, _| w.rng.below(group.ttl_ms));
        io.pause(rest + 1).await;
    }
}

/// One wait for `key`, one of three ways: the lease, the start of the
/// attempt that granted it (the guard counts from there) and that instant
/// in true time.
async fn take(
    io: &mut SimIo,
    core: &mut ClientCore,
    key: &str,
    grant: &Grant,
    ttl: u64,
) -> Option<(Lease, Attempt, u64)> {
    let how = io.with(|w, _| w.rng.below(3));
    let wait_ms = io.with(|w, _| w.rng.below(2 * ttl));
    match how {
        0 => {
            let attempt = Attempt::start(io.monotonic_ms());
            let sent = io.now();
            match core.try_acquire(io, key, grant).await {
                Ok(AcquireOutcome::Granted(lease)) => Some((lease, attempt, sent)),
                Ok(AcquireOutcome::Held(_)) => None,
                Err(e) => {
                    expect_fault(io, "a try-acquire", &e);
                    None
                }
            }
        }
        1 => {
            let attempt = Attempt::start(io.monotonic_ms());
            let sent = io.now();
            match core.acquire(io, key, grant, wait_ms).await {
                Ok(lease) => Some((lease, attempt, sent)),
                Err(Error::Timeout { .. }) => None,
                Err(e) => {
                    expect_fault(io, "an acquire", &e);
                    None
                }
            }
        }
        _ => {
            // The host's way: one attempt per call, paced between calls.
            let mut wait = Wait::new(io.monotonic_ms(), wait_ms);
            loop {
                let attempt = Attempt::start(io.monotonic_ms());
                let sent = io.now();
                let missed = match core.try_acquire(io, key, grant).await {
                    Ok(AcquireOutcome::Granted(lease)) => return Some((lease, attempt, sent)),
                    Ok(AcquireOutcome::Held(seen)) => Missed::Held {
                        expires_in_ms: seen.map(|s| s.expires_in_ms),
                    },
                    Err(e) if e.is_transient() => Missed::Undecided,
                    Err(e) => {
                        expect_fault(io, "a try-acquire", &e);
                        return None;
                    }
                };
                let now = io.monotonic_ms();
                if wait.is_over(now) {
                    return None;
                }
                let random = io.random_u64();
                let pause = wait.pause_ms(missed, now, random, 0);
                io.sleep_ms(pause).await;
            }
        }
    }
}

/// Holds `held` for a while, then releases it, abandons it, or takes the
/// key again under the same holder id (the old lease is then spent).
async fn keep(
    io: &mut SimIo,
    core: &mut ClientCore,
    mut held: Held,
    fences: bool,
    spent: &mut Vec<(Lease, &'static str)>,
    lapsed: &mut Option<Lease>,
) {
    let ttl = held.lease.ttl_ms;
    loop {
        let for_ms = io.with(|w, _| w.rng.range(ttl / 4, 3 * ttl));
        let until = io.now() + for_ms;
        let key = held.key.clone();
        let work = Work {
            fence: fences.then_some((key.as_str(), ttl / 3 + 1)),
        };
        match held.hold(io, core, until, work).await {
            Ended::Lost(End::Taken) => return,
            Ended::Lost(_) => {
                *lapsed = Some(held.lease.clone());
                if fences && io.with(|w, _| w.rng.chance(0.3)) {
                    // A holder that does not check its guard writes on:
                    // the fence must refuse it once a newer token wrote.
                    fenced_write(io, core, &key, &held.lease.clone(), true).await;
                }
                return;
            }
            Ended::Due => {}
        }
        match io.with(|w, _| w.rng.below(10)) {
            0 => {
                // Abandoned: no release; the lease runs out on its own.
                held.stop(io, "abandoned");
                *lapsed = Some(held.lease.clone());
                return;
            }
            1 => {
                // The same holder id takes its own key again: a new grant,
                // and the old lease is spent.
                held.stop(io, "took its key again");
                let old = held.lease.clone();
                let grant = Grant::new(ttl, old.holder_id.clone(), old.metadata.clone())
                    .expect("a valid grant");
                let attempt = Attempt::start(io.monotonic_ms());
                let sent = io.now();
                match core.try_acquire(io, &key, &grant).await {
                    Ok(AcquireOutcome::Granted(lease)) => {
                        spent.push((old, "superseded by its own holder's new grant"));
                        io.with(|w, _| w.report.retakes += 1);
                        let timing = held.guard.timing();
                        held = granted(io, &key, lease, attempt, sent, timing);
                    }
                    Ok(AcquireOutcome::Held(_)) => return,
                    Err(e) => {
                        expect_fault(io, "a try-acquire of its own key", &e);
                        return;
                    }
                }
            }
            _ => {
                if let Some(lease) = held.release(io, core).await {
                    spent.push((lease, "released"));
                }
                return;
            }
        }
    }
}

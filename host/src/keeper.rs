//! A client's scheduler of renewals: one thread of the client's own for
//! all its held leases.
//!
//! When each lease is looked at next is `s3_lease_keep::schedule` (one
//! entry per lease, replaced when rescheduled: its size and the work of a
//! renew stay flat however long leases are held); what to do then is each
//! lease's guard (`s3_lease_keep::guard`): renew (a task runs the call on
//! the client's instances and reports back), wake again later, or stop
//! (the lease is lost or let go). This driver only sleeps until the
//! schedule's next instant and asks. A hung renew never holds the others
//! back, and a lease whose renew is under way is looked at again at its
//! claim's end, so it is reported lost on time while its renew still hangs.
//!
//! The thread runs a small current-thread tokio runtime of its own, not the
//! caller's: a client connected on one runtime keeps its leases renewed
//! when used on another, or after the one it was connected on has ended.
//! The thread ends once the client and every clone of it are gone.

use crate::calls::Calls;
use crate::component;
use crate::engine::clock::{Clock, Instant};
use crate::error::Error;
use crate::held::Held;
use crate::observe::traced;
use crate::stats::ClientStats;
use crate::types::LeaseRecord;
use s3_lease_keep::guard::Next;
use s3_lease_keep::schedule::Schedule;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
use tokio::sync::mpsc;

/// The client was closed: it keeps no new lease.
#[derive(Debug)]
pub(crate) struct Closed;

/// The handle leases register with; owned by the client.
pub(crate) struct Keeper {
    /// Ids of leases to look at now (a new one, one let go).
    tx: mpsc::UnboundedSender<u64>,
    shared: Arc<Shared>,
}

/// What the scheduler's thread and the client share.
#[derive(Default)]
struct Shared {
    /// The leases kept, by id: put in when a lease starts (so a close right
    /// after a grant finds it), taken out when it ends or is let go.
    leases: Mutex<HashMap<u64, Weak<Held>>>,
    stats: Mutex<ClientStats>,
    /// Closed: no lease is kept any more (see [`Keeper::close`]). Set and
    /// read under `leases`' lock.
    closed: AtomicBool,
}

impl Shared {
    fn leases(&self) -> MutexGuard<'_, HashMap<u64, Weak<Held>>> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stats(&self) -> MutexGuard<'_, ClientStats> {
        self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Keeper {
    /// Starts the scheduler's thread, judging time on `clock`; fails only
    /// if no thread can start.
    pub fn start(calls: Weak<Calls>, clock: Clock) -> Result<Keeper, Error> {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::default());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(Error::host)?;
        let driver = Driver {
            calls,
            outcomes: tx.downgrade(),
            shared: shared.clone(),
            schedule: Schedule::new(),
            origin: clock.now(),
            clock,
        };
        std::thread::Builder::new()
            .name("s3-lease-keeper".into())
            .spawn(move || {
                runtime.block_on(driver.run(rx));
                // Renews still under way are dropped, not awaited: the
                // client is gone, and nobody waits for them any more.
                runtime.shutdown_background();
            })
            .map_err(Error::host)?;
        Ok(Keeper { tx, shared })
    }

    /// Keeps `held` renewed from now on; refused once the client is closed
    /// (the caller then lets it go). Judged under the same lock the close
    /// takes: a lease is either in the map the close drains, or refused.
    pub fn keep(&self, held: &Arc<Held>) -> Result<(), Closed> {
        {
            let mut leases = self.shared.leases();
            if self.shared.closed.load(Ordering::SeqCst) {
                return Err(Closed);
            }
            leases.insert(held.id, Arc::downgrade(held));
        }
        let _ = self.tx.send(held.id);
        Ok(())
    }

    /// Asks the scheduler to look at lease `id` now (it was let go: it
    /// leaves the schedule at once).
    pub fn look(&self, id: u64) {
        let _ = self.tx.send(id);
    }

    pub fn stats(&self) -> ClientStats {
        self.shared.stats().clone()
    }

    /// Closes: takes every lease kept out of the scheduler (none renews
    /// again) and hands them over, for the caller to let go and release.
    /// From then on [`Keeper::keep`] refuses.
    pub fn close(&self) -> Vec<Arc<Held>> {
        let taken: Vec<Arc<Held>> = {
            let mut leases = self.shared.leases();
            self.shared.closed.store(true, Ordering::SeqCst);
            leases
                .drain()
                .filter_map(|(_, held)| held.upgrade())
                .collect()
        };
        for held in &taken {
            held.lock().stopped = true;
            // Out of the schedule at once.
            self.look(held.id);
        }
        taken
    }
}

/// The scheduler itself, on its thread.
struct Driver {
    calls: Weak<Calls>,
    /// For renew tasks to say their outcome is in (weak: the thread ends
    /// when the client's sender is gone, whatever renews are under way).
    outcomes: mpsc::WeakUnboundedSender<u64>,
    shared: Arc<Shared>,
    schedule: Schedule,
    /// The schedule's clock counts milliseconds from here, on `clock`
    /// (suspended time counted: a lease due while the machine slept is
    /// looked at as soon as it resumes).
    origin: Instant,
    clock: Clock,
}

impl Driver {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<u64>) {
        loop {
            let wake = self
                .schedule
                .next_wake()
                .map(|ms| self.origin.saturating_add(Duration::from_millis(ms)));
            tokio::select! {
                message = rx.recv() => match message {
                    Some(id) => self.look(id),
                    // The client is gone, and every lease with it.
                    None => return,
                },
                _ = sleep_until(&self.clock, wake) => {
                    // Floored: an entry at or before it is surely due.
                    let now = self.clock.now().saturating_duration_since(self.origin);
                    let now = u64::try_from(now.as_millis()).unwrap_or(u64::MAX);
                    while let Some(id) = self.schedule.pop_due(now) {
                        self.look(id);
                    }
                }
            }
            let kept = self.shared.leases().len() as u64;
            let mut stats = self.shared.stats();
            stats.leases_kept = kept;
            stats.scheduled_entries = self.schedule.len() as u64;
        }
    }

    /// `at` on the schedule's clock, rounded up: waking at it, the guard's
    /// own (floored) clock has reached the instant it named.
    fn ms_of(&self, at: Instant) -> u64 {
        let d = at.saturating_duration_since(self.origin);
        let ms = d.as_millis() + u128::from(!d.subsec_nanos().is_multiple_of(1_000_000));
        u64::try_from(ms).unwrap_or(u64::MAX)
    }

    /// Asks lease `id`'s guard what to do now, and does it; the lease's
    /// one entry goes where the guard says, or out.
    fn look(&mut self, id: u64) {
        self.shared.stats().scheduler_steps += 1;
        let held = self.shared.leases().get(&id).and_then(Weak::upgrade);
        let Some(held) = held else {
            // Let go, closed, or its handle and any renew of it are gone.
            self.forget(id);
            return;
        };
        let next = {
            let mut state = held.lock();
            if state.stopped {
                None
            } else {
                let next = state.guard.poll(held.now_ms());
                held.publish(&mut state);
                Some((next, state.record.clone()))
            }
        };
        match next {
            None | Some((Next::Ended(_), _)) => self.forget(id),
            Some((Next::WakeAt(at), _)) => {
                let at = self.ms_of(held.instant(at));
                self.schedule.set(id, at);
            }
            Some((Next::Renew, record)) => {
                // A hung renew must not keep the loss from being seen:
                // look again at the claim's end (the renew's outcome comes
                // in sooner and reschedules).
                let until = held.lock().guard.held_until(held.now_ms());
                let at = until.map_or(self.clock.now(), |until| held.instant(until));
                let at = self.ms_of(at);
                self.schedule.set(id, at);
                self.shared.stats().renews_sent += 1;
                let (calls, outcomes, shared) = (
                    self.calls.clone(),
                    self.outcomes.clone(),
                    self.shared.clone(),
                );
                tokio::spawn(async move {
                    let result = renew(&calls, &held, record).await;
                    if result.is_err() {
                        shared.stats().renews_failed += 1;
                    }
                    held.renewed(result, held.now_ms());
                    if let Some(tx) = outcomes.upgrade() {
                        let _ = tx.send(held.id);
                    }
                });
            }
        }
    }

    fn forget(&mut self, id: u64) {
        self.schedule.remove(id);
        self.shared.leases().remove(&id);
    }
}

async fn renew(
    calls: &Weak<Calls>,
    held: &Held,
    record: LeaseRecord,
) -> Result<LeaseRecord, Error> {
    let Some(calls) = calls.upgrade() else {
        return Err(Error::host("the client is gone"));
    };
    let key = record.key.clone();
    let renewed = calls.call(held.index, move |raw| component::renew(raw, &record));
    traced("renew", &key, calls.error_store(), renewed).await
}

async fn sleep_until(clock: &Clock, at: Option<Instant>) {
    match at {
        Some(at) => clock.sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use s3_lease_keep::guard::Timing;

    /// A grant that lands just after a close drained the scheduler (the
    /// client's check for the close passed a moment before): it is not
    /// kept. (Before, the check and the keeping were apart: such a lease
    /// went on renewing on the closed client.)
    #[test]
    fn a_lease_kept_after_the_close_is_refused() {
        let clock = Clock::system();
        let keeper = Keeper::start(Weak::new(), clock.clone()).unwrap();
        assert!(keeper.close().is_empty());
        let record = LeaseRecord::new("k", 1, "seal");
        let held = Held::new(record, clock.now(), Timing::for_ttl(30_000), 0, clock);
        let _ = keeper.keep(&held);
        assert!(keeper.shared.leases().is_empty(), "kept after the close");
    }
}

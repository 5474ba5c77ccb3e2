//! One deterministic simulation of everything that keeps a lock.
//!
//! Processes run the real code: the client (`ClientCore`, both
//! strategies, semaphores and fair queues, fenced writes), the component's
//! elector, and the host's machines from `s3_lease_keep`: the guard that
//! says until when a held lease is held and when to renew it, the
//! leadership watchdog, the waiting schedule, and the credential refresh
//! schedule (a refresher beside each process's calls). Each process is a future
//! the simulation polls (`host`), on one virtual true time, against one
//! store model (S3, or DynamoDB behind its translation); nothing is a copy
//! of the code under test.
//!
//! The world (`world`) is hostile the way deployments are:
//! - a request takes a few ms, sometimes seconds, sometimes hangs for
//!   minutes; the store applies it at any instant of its life, even after
//!   its sender gave up; its reply may be lost, or it may never arrive;
//!   a third of the writes applied without an answer start an outage that
//!   fails what their sender sends next (its read-back), so only a later
//!   call learns their fate; a store answers some requests it never
//!   applied as timed out (S3's 400 `RequestTimeout`, a 408);
//!   hosts end requests at their bound, or (some) ignore bounds, so
//!   replies also come late; a process's network degrades for a while;
//! - conditional writes meet a racing write (409), DynamoDB calls are
//!   throttled; LIST pages come short, or empty but truncated; a store may
//!   answer 501 to `If-Match` (the stores epoch-objects is for), and 404
//!   or 412 to `If-Match` on a missing key;
//! - processes crash (mid-request too) and come back as new lives, stall
//!   for longer than a lease, and step their wall clocks both ways by
//!   minutes (never under `holder`, whose rule needs clocks in sync);
//!   monotonic clocks drift by up to 200 ppm;
//! - credentials expire and rotate: a source hands out new keys with an
//!   expiry (an hour, minutes, seconds; already expired, or at once), may
//!   fail or be slow, and the store refuses keys past their expiry;
//! - and callers misbehave: they alter leases, try spent ones, take their
//!   own key again under the same holder id, renew lapsed leases, and
//!   write after a pause with the lease they had.
//!
//! What each process believes is what its host's machine says at each
//! virtual instant, recorded as terms; the run's history is judged by
//! `testing::history`'s checkers, the soak's too: tokens unique and rising,
//! never more believed holders than a key's limit, spent leases never
//! renewing, no `Lost` naming the caller's own grant as the holder (nor an
//! elector following itself), queue order, fenced objects linearizable.
//! Every write the store applies to a semaphore key is judged as it lands
//! (`store_rules`), and every credential fetch and request as it happens
//! (`credential_checks`: fetches paced, keys from a healthy source fresh).
//!
//! Everything comes from one seed: a failing run prints it, and
//! `S3LEASE_SIM_SEED=<seed>` replays it.

mod actors;
mod audit_check;
mod credential_checks;
mod credentials;
mod host;
mod process;
mod setup;
mod store;
mod store_rules;
mod world;

#[cfg(test)]
mod gate;
#[cfg(test)]
mod keeping;
#[cfg(test)]
mod tests;

pub use setup::{Setup, StoreKind};

use crate::fenced::{META_TOKEN, META_TOMBSTONE};
use crate::stores::s3::model::{MissingIfMatch, Object, S3Model};
use crate::testing::history::{self, Checked, Found, History, Violation};
use crate::testing::rng::Rng;
use actors::Task;
use credentials::Source;
use setup::{ActorKind, SEMAPHORE_KEYS};
use std::cell::RefCell;
use std::rc::Rc;
use std::task::{Context, Waker};
use store::SimStore;
use world::{Event, Fault, World};

/// The model's clock starts here (2023-11-14T22:13:20Z); sim time is
/// milliseconds after it.
pub const START_MS: u64 = 1_700_000_000_000;

/// What runs did, to show the faults and adversaries really happened.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub seeds: u64,
    pub steps: u64,
    pub requests: u64,
    pub hung: u64,
    pub timeouts_honoured: u64,
    pub timeouts_ignored: u64,
    pub late_replies: u64,
    pub lost_replies: u64,
    /// Requests applied without an answer that began an outage, and the
    /// requests the outages failed (read-backs among them).
    pub outages: u64,
    pub failed_in_outage: u64,
    pub never_applied: u64,
    /// Requests never applied that the store answered as timed out (S3's
    /// 400 `RequestTimeout`, a 408): transient, as a 5xx.
    pub timeouts_answered: u64,
    pub applied_after_giving_up: u64,
    pub conflicts_injected: u64,
    pub throttles_injected: u64,
    pub empty_list_pages: u64,
    pub seeds_with_short_lists: u64,
    pub seeds_without_if_match: u64,
    pub crashes: u64,
    pub pauses: u64,
    /// Machines suspended (`Fault::Suspend`).
    pub suspends: u64,
    pub clock_jumps: u64,
    /// Processes whose wall clock is a month slow (DynamoDB, `observed`).
    pub clocks_a_month_slow: u64,
    pub degraded: u64,
    pub grants: u64,
    /// Grants whose reply came after the guard's deadline: never believed.
    pub grants_never_held: u64,
    pub terms: u64,
    pub renewals: u64,
    pub releases: u64,
    pub lost_taken: u64,
    pub lost_expired: u64,
    pub lapsed_renewed: u64,
    pub retakes: u64,
    pub resigns: u64,
    pub forgeries_refused: u64,
    pub spent_refused: u64,
    pub fenced_accepted: u64,
    pub fenced_refused: u64,
    pub slot_grants: u64,
    pub places_taken: u64,
    pub places_left: u64,
    pub slots_dropped_expired: u64,
    pub places_dropped_expired: u64,
    pub fair_grants_checked: u64,
    pub fair_grants_from_queue: u64,
    pub fair_passes: u64,
    pub max_slots_stored: u64,
    /// Per semaphore key: the most believed holders at one instant.
    pub max_slots_believed: [u64; 3],
    /// Fenced objects checked for linearizability, and their calls.
    pub objects_checked: u64,
    pub object_ops: u64,
    /// Credentials: fetches by refreshers (failed ones too), keys put into
    /// clients, seeds whose source fails or hands out expired keys.
    pub credential_fetches: u64,
    pub credential_fetches_failed: u64,
    pub credentials_installed: u64,
    pub seeds_with_unhealthy_source: u64,
    /// Requests the freshness checker judged (a healthy source, a process
    /// neither stalled nor off the source's clock by more than the lead).
    pub sends_judged_fresh: u64,
    /// Requests sent with expired keys, and those the store refused so.
    pub sent_expired: u64,
    pub expired_refused: u64,
    /// Seeds whose clients kept the grant log, and the grant records
    /// their logs held at the end (each checked against the history).
    pub seeds_with_log: u64,
    pub log_records: u64,
    /// Writes a careless store let through whatever their condition.
    pub careless_writes: u64,
}

impl std::ops::AddAssign<&Report> for Report {
    fn add_assign(&mut self, o: &Report) {
        macro_rules! sum {
            ($($field:ident),*) => { $(self.$field += o.$field;)* };
        }
        sum!(
            seeds,
            steps,
            requests,
            hung,
            timeouts_honoured,
            timeouts_ignored,
            late_replies,
            lost_replies,
            outages,
            failed_in_outage,
            never_applied,
            timeouts_answered,
            applied_after_giving_up,
            conflicts_injected,
            throttles_injected,
            empty_list_pages,
            seeds_with_short_lists,
            seeds_without_if_match,
            crashes,
            pauses,
            suspends,
            clock_jumps,
            degraded,
            grants,
            grants_never_held,
            terms,
            renewals,
            releases,
            lost_taken,
            lost_expired,
            lapsed_renewed,
            retakes,
            resigns,
            forgeries_refused,
            spent_refused,
            fenced_accepted,
            fenced_refused,
            slot_grants,
            places_taken,
            places_left,
            slots_dropped_expired,
            places_dropped_expired,
            fair_grants_checked,
            fair_grants_from_queue,
            fair_passes,
            objects_checked,
            object_ops,
            credential_fetches,
            credential_fetches_failed,
            credentials_installed,
            seeds_with_unhealthy_source,
            sends_judged_fresh,
            sent_expired,
            expired_refused,
            seeds_with_log,
            log_records,
            careless_writes
        );
        self.max_slots_stored = self.max_slots_stored.max(o.max_slots_stored);
        for (a, b) in self.max_slots_believed.iter_mut().zip(o.max_slots_believed) {
            *a = (*a).max(b);
        }
    }
}

/// One seed's run.
pub struct Sim {
    world: Rc<RefCell<World>>,
    tasks: Vec<Option<Task>>,
}

impl Sim {
    /// A run on the S3 model.
    pub fn new(seed: u64) -> Self {
        Sim::on(seed, StoreKind::S3)
    }

    /// A run on the DynamoDB model: single-object keys only (a table has
    /// no listing), no fenced writes (they are S3's), and the clocks a
    /// table allows (`holder`, `observed`); calls are also throttled.
    pub fn on_dynamodb(seed: u64) -> Self {
        Sim::on(seed, StoreKind::DynamoDb)
    }

    /// A run on the Azure model: single-object keys only, every expiry
    /// clock, fenced writes; racing writes meet 503 `ServerBusy` rather
    /// than S3's 409.
    pub fn on_azure(seed: u64) -> Self {
        Sim::on(seed, StoreKind::Azure)
    }

    /// A run on the GCS model: single-object keys only, every expiry
    /// clock, fenced writes, ttls of 4 s and more and retry periods of
    /// 1 s and more (what a gcs client accepts); racing writes meet 503
    /// `backendError`, and on half the seeds a second write to an object
    /// within a second meets GCS's 429.
    pub fn on_gcs(seed: u64) -> Self {
        Sim::on(seed, StoreKind::Gcs)
    }

    pub fn on(seed: u64, kind: StoreKind) -> Self {
        Sim::with_suspends(seed, kind)
    }

    /// A run whose processes' monotonic clocks count the time their
    /// machine is suspended, as the host's does (every run's). Odd seeds
    /// keep the grant log.
    pub fn with_suspends(seed: u64, kind: StoreKind) -> Self {
        Sim::build(seed, kind, false, |setup| setup.audit = seed % 2 == 1)
    }

    /// A run whose processes' monotonic clocks stand still while their
    /// machine is suspended (std's `Instant` on Linux), with many
    /// suspends: what the checkers must catch.
    pub fn blind_to_suspends(seed: u64, kind: StoreKind) -> Self {
        Sim::build(seed, kind, true, |setup| setup.audit = seed % 2 == 1)
    }

    /// A run on a careless store (see `Setup::careless`), the log on.
    pub fn careless(seed: u64, kind: StoreKind) -> Self {
        Sim::build(seed, kind, false, |setup| {
            setup.audit = true;
            setup.careless = true;
        })
    }

    fn build(
        seed: u64,
        kind: StoreKind,
        blind_to_suspends: bool,
        adjust: impl FnOnce(&mut Setup),
    ) -> Self {
        // Mixed, so sim seed n is not another suite's seed n.
        let mut rng = Rng::new(seed ^ 0x5EED_5EED_5EED_5EED);
        let mut setup = Setup::for_store(&mut rng, kind);
        adjust(&mut setup);
        let store = if kind == StoreKind::DynamoDb {
            SimStore::new_dynamodb(START_MS)
        } else if kind == StoreKind::Azure {
            SimStore::new_azure(START_MS)
        } else if kind == StoreKind::Gcs {
            SimStore::new_gcs(START_MS, rng.chance(0.5))
        } else {
            let mut s3 = S3Model::new(START_MS);
            s3.missing_if_match = if rng.chance(0.5) {
                MissingIfMatch::NotFound
            } else {
                MissingIfMatch::PreconditionFailed
            };
            s3.list_page_keys = setup.list_page_keys;
            SimStore::S3(s3)
        };
        let history = History::new(setup.key_specs());
        let source = Source::for_store(seed, kind);
        let mut world = World::new(rng, setup, store, history, source);
        world.suspends = world::Suspends::new(seed, blind_to_suspends);
        world.report.seeds = 1;
        world.report.seeds_with_log = u64::from(world.setup.audit);
        world.report.seeds_with_unhealthy_source = u64::from(!world.source.plan.is_healthy());
        world.report.seeds_with_short_lists = u64::from(world.setup.list_page_keys.is_some());
        world.report.seeds_without_if_match = u64::from(world.setup.epoch_without_if_match);
        let mut kinds = vec![ActorKind::Locker; 4];
        kinds.extend(vec![ActorKind::Elector; world.setup.electors]);
        for (n, key) in SEMAPHORE_KEYS.iter().enumerate() {
            kinds.extend(vec![ActorKind::Slots(n); key.slot_clients]);
            kinds.extend(vec![ActorKind::PlainOnSemaphore(n); key.plain_clients]);
        }
        for kind in kinds {
            let delay = world.rng.below(500);
            world.add_host(kind, delay);
        }
        let duration = world.setup.duration_ms;
        let plan = |world: &mut World, fault: Fault, (lo, hi): (u64, u64)| {
            for _ in 0..world.rng.range(lo, hi) {
                let at = world.rng.below(duration);
                world.schedule(at, Event::Fault(fault));
            }
        };
        plan(&mut world, Fault::Crash, (2, 6));
        plan(&mut world, Fault::Pause, (2, 8));
        plan(&mut world, Fault::Jump, (1, 8));
        plan(&mut world, Fault::Degrade, (2, 8));
        world.plan_suspends();
        let actors = world.hosts.len();
        Sim {
            world: Rc::new(RefCell::new(world)),
            tasks: (0..actors).map(|_| None).collect(),
        }
    }

    /// Runs until `steps` events have happened or the run's time is up,
    /// then judges the history. The report stands even when an invariant
    /// broke.
    pub fn run(mut self, steps: u64) -> (Report, Result<Checked, Violation>) {
        let duration = self.world.borrow().setup.duration_ms;
        let mut broken = None;
        loop {
            let next = {
                let mut w = self.world.borrow_mut();
                if w.report.steps >= steps {
                    None
                } else {
                    match w.events.first_key_value() {
                        Some((&(at, _), _)) if at <= duration => {
                            let (key, event) = w.events.pop_first().expect("an event");
                            w.now = key.0;
                            w.store_now();
                            w.report.steps += 1;
                            Some(event)
                        }
                        _ => None,
                    }
                }
            };
            let Some(event) = next else {
                break;
            };
            if let Err(v) = self.handle(event) {
                broken = Some(v);
                break;
            }
        }
        // Dropping the processes drops nothing they believe: close it all.
        self.tasks.clear();
        let mut w = self.world.borrow_mut();
        w.close_all_terms();
        w.final_reads();
        let checked = history::check(&w.history);
        let audited = if w.setup.audit && !w.setup.careless {
            let (setup, now) = (w.setup.clone(), START_MS + w.now);
            let w = &mut *w;
            let checked = audit_check::check(&setup, &mut w.store, now, &w.true_grants);
            if let Ok(records) = &checked {
                w.report.log_records += records;
            }
            checked.err()
        } else {
            None
        };
        let mut report = w.report.clone();
        report.objects_checked = checked.objects as u64;
        report.object_ops = checked.object_ops as u64;
        for (i, key) in SEMAPHORE_KEYS.iter().enumerate() {
            if let Some(k) = w.history.key(key.name) {
                report.max_slots_believed[i] = checked.max_open.get(k).copied().unwrap_or(0) as u64;
            }
        }
        let broken = broken.or_else(|| checked.violations.first().cloned());
        let result = match broken.or(audited) {
            Some(v) => Err(v),
            None => Ok(checked),
        };
        (report, result)
    }

    /// Runs a careless store's seed (see `Sim::careless`): how the history
    /// showed holders overlapping, if it did, whether some key's log failed
    /// verify, and how many collision records grantees wrote.
    pub fn run_careless(self, steps: u64) -> (Report, Option<Violation>, bool, u64) {
        let world = self.world.clone();
        let (report, result) = self.run(steps);
        let mut w = world.borrow_mut();
        let (setup, now) = (w.setup.clone(), START_MS + w.now);
        let (failed, collisions) = audit_check::judged_careless(&setup, &mut w.store, now);
        (report, result.err(), failed, collisions)
    }

    fn handle(&mut self, event: Event) -> Result<(), Violation> {
        match event {
            Event::Start { actor, generation } => {
                let live = {
                    let w = self.world.borrow();
                    w.hosts[actor].alive && w.hosts[actor].generation == generation
                };
                if live {
                    self.tasks[actor] = Some(actors::spawn(&self.world, actor));
                    self.poll(actor);
                }
            }
            Event::Apply {
                actor,
                request,
                sent,
                reply,
                acting_for,
                signed_with,
            } => {
                self.world.borrow_mut().apply(
                    actor,
                    request,
                    sent,
                    reply,
                    &acting_for,
                    signed_with.as_deref(),
                )?;
            }
            Event::Resume {
                actor,
                generation,
                ticket,
                failure,
            } => {
                if self
                    .world
                    .borrow_mut()
                    .resume(actor, generation, ticket, failure)
                {
                    self.poll(actor);
                }
            }
            Event::Fault(fault) => self.fault(fault),
        }
        Ok(())
    }

    fn fault(&mut self, fault: Fault) {
        let crashed = self.carry_out(fault);
        // Its process is gone, mid-call or not (dropped once the world is
        // free again); its requests on the way still reach the store.
        if let Some(actor) = crashed {
            self.tasks[actor] = None;
        }
    }

    /// Does `fault` to a live actor; the actor, if it crashed.
    fn carry_out(&mut self, fault: Fault) -> Option<usize> {
        let mut w = self.world.borrow_mut();
        let victim = match fault {
            Fault::Restart { actor } => Some(actor),
            Fault::Suspend => w.suspend_victim(),
            _ => w.alive_actor(),
        };
        let actor = victim?;
        match fault {
            Fault::Crash => {
                w.crash(actor);
                let ttl = w.setup.ttl_of(w.hosts[actor].kind);
                let back = w.now + w.rng.below(2 * ttl);
                w.schedule(back, Event::Fault(Fault::Restart { actor }));
                return Some(actor);
            }
            Fault::Restart { actor } => w.restart(actor),
            Fault::Pause => w.pause(actor),
            Fault::Jump => w.jump(actor),
            Fault::Degrade => w.degrade(actor),
            Fault::Suspend => w.suspend(actor),
        }
        None
    }

    /// Runs `actor`'s process until it waits again.
    fn poll(&mut self, actor: usize) {
        let Some(task) = self.tasks[actor].as_mut() else {
            return;
        };
        let mut cx = Context::from_waker(Waker::noop());
        if task.as_mut().poll(&mut cx).is_ready() {
            self.tasks[actor] = None;
        }
    }
}

/// What an object holds, as the checkers read it: its fencing token, and
/// the put (`v<value>`) whose body it is.
fn final_read(object: &str, found: Option<&Object>) -> history::FinalRead {
    let found = found.and_then(|o| {
        let meta = |name: &str| {
            o.metadata
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        if meta(META_TOMBSTONE) == Some("true") {
            return None;
        }
        Some(Found {
            token: meta(META_TOKEN).and_then(|t| t.parse().ok()).unwrap_or(0),
            value: std::str::from_utf8(&o.body)
                .ok()
                .and_then(|b| b.strip_prefix('v'))
                .and_then(|v| v.parse().ok()),
            body_token: None,
        })
    });
    history::FinalRead {
        object: object.to_string(),
        found: Ok(found),
    }
}

/// A seed that broke an invariant, what broke, and its report.
pub type Failed = Box<(u64, Violation, Report)>;

/// Runs seeds from `first` on S3 (or DynamoDB) until `total_steps` have
/// run, `steps` each; the first failing seed and its violation.
pub fn run_seeds(
    first: u64,
    steps: u64,
    total_steps: u64,
    dynamodb: bool,
) -> Result<Report, Failed> {
    let kind = if dynamodb {
        StoreKind::DynamoDb
    } else {
        StoreKind::S3
    };
    run_store_seeds(first, steps, total_steps, kind)
}

/// `run_seeds` on any store model.
pub fn run_store_seeds(
    first: u64,
    steps: u64,
    total_steps: u64,
    kind: StoreKind,
) -> Result<Report, Failed> {
    let mut total = Report::default();
    let mut seed = first;
    while total.steps < total_steps {
        let sim = Sim::on(seed, kind);
        let (report, result) = sim.run(steps);
        total += &report;
        if let Err(v) = result {
            return Err(Box::new((seed, v, report)));
        }
        seed += 1;
    }
    Ok(total)
}

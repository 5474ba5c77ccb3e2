//! Semaphore and fair-queue clients of the simulation: each one bound to
//! one semaphore key, running the real semaphore operations over the
//! simulation's events, with the memory `ClientCore` keeps between calls
//! (what it saw of the key, for `observed` and conditional GETs; what it
//! last wrote or read, so a renew or release may skip its read).
//!
//! A client takes a slot (a fair one waits in the queue, polling, and
//! leaves it when it gives up), holds it for a while renewing, releases
//! it, and sometimes crashes: its slot or place is left to expire, and it
//! comes back later under the same holder id (the old process is dead) or
//! a new one (the old one may only be paused: its belief runs to its
//! deadline). Holders take their own key again under the same holder id,
//! alter their leases, and try superseded, released and lapsed leases
//! later. The plain client of `m2` takes the key as a lock first (a
//! semaphore on the key then makes it a slot of limit 1, as `ClientCore`
//! does), so plain locks and slots share the key and its counter.
//!
//! Keys judge expiry by a clock chosen per seed; under `holder` every
//! client of the key shares the true clock, under `server` and `observed`
//! their clocks are skewed by minutes and jump.

use super::checks::{is_injected_fault, violation, Violation};
use super::semaphore_checks::SemaphoreHistory;
use super::{Report, START_MS};
use crate::config::Strategy;
use crate::driver::fair_poll_ms;
use crate::error::Error;
use crate::expiry::{ExpiryClock, Judge, Observation};
use crate::fenced::{self, Fence};
use crate::lease::{Grant, Lease};
use crate::lock_object::LockState;
use crate::protocol::{AcquireOutcome, Operation, Step};
use crate::s3::{S3Request, S3Response};
use crate::seal::{LockSeal, Sealer, StoredKey};
use crate::strategy::single_object::semaphore::{Finished, SemaphoreOp, SlotOutcome, Wish};
use crate::strategy::single_object::{released_state, RewriteOwn, TryAcquire};
use crate::testing::rng::Rng;

/// A semaphore key and who uses it.
#[derive(Debug)]
pub struct SemKey {
    pub name: &'static str,
    pub limit: u32,
    /// Its slot clients wait in the queue.
    pub fair: bool,
    pub slot_clients: usize,
    /// Clients that take the key as a plain lock (limit 1 only).
    pub plain_clients: usize,
}

pub const SEMAPHORE_KEYS: [SemKey; 3] = [
    SemKey {
        name: "m0",
        limit: 3,
        fair: false,
        slot_clients: 5,
        plain_clients: 0,
    },
    SemKey {
        name: "m1",
        limit: 2,
        fair: true,
        slot_clients: 4,
        plain_clients: 0,
    },
    SemKey {
        name: "m2",
        limit: 1,
        fair: true,
        slot_clients: 2,
        plain_clients: 1,
    },
];

pub fn semaphore_key(object_key: &str) -> Option<&'static SemKey> {
    SEMAPHORE_KEYS.iter().find(|k| k.name == object_key)
}

const MAX_CLOCK_SKEW_MS: u64 = 300_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Slot {
        fair: bool,
    },
    /// A lock first; a slot of limit 1 once the key is a semaphore.
    Plain,
}

/// A lease believed held: a slot's, or a plain lock's.
#[derive(Debug, Clone)]
struct Held {
    lease: Lease,
    slot: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spent {
    No,
    /// By our own later grant of the key: must never renew or release.
    Superseded,
    /// By a release that succeeded: must never renew.
    Released,
    /// Let lapse (not renewed in time, or a crash): renews only while its
    /// slot is still stored, which the store's checks watch.
    Lapsed,
}

#[allow(clippy::large_enum_variant)] // one per client, in a test
enum Op {
    Slot(SemaphoreOp),
    PlainAcquire(TryAcquire),
    PlainRewrite(RewriteOwn),
}

enum Purpose {
    /// A try-acquire, or a fair waiter's poll.
    Acquire {
        grant: Grant,
        /// When a fair caller that gets a place gives up waiting.
        until: u64,
        /// Our own lease on the key, given up to take it again.
        replacing: Option<Held>,
    },
    Rewrite {
        held: Held,
        release: bool,
        spent: Spent,
    },
    Leave,
}

struct Task {
    op: Op,
    purpose: Purpose,
}

/// A fair waiter in the queue: polls with the same grant until `until`.
struct Waiting {
    grant: Grant,
    until: u64,
}

/// What this client saw of its key, as `ClientCore` remembers it.
struct Seen {
    state: LockState,
    since: u64,
    entries_since: Vec<(String, u64)>,
}

#[allow(clippy::large_enum_variant)] // one at a time, in a test
enum Done {
    Slot(Result<Finished, Error>),
    Plain(Result<AcquireOutcome, Error>),
    Rewritten(Result<Lease, Error>),
}

/// Feeds a reply to an operation; a lost one as the driver reports a
/// transport error (the operation then looks for its write).
fn feed<O: Operation>(op: &mut O, reply: Option<S3Response>, wall: u64) -> Step<O::Output> {
    match reply {
        Some(r) => op.on_response(r, wall),
        None => op.on_transport_error(Error::Transport("reply lost".into()), wall),
    }
}

pub struct SemClient {
    pub id: usize,
    key: &'static SemKey,
    role: Role,
    clock: ExpiryClock,
    name: String,
    holder: String,
    incarnation: u32,
    clock_offset_ms: i64,
    sealer: Sealer,
    holding: Option<Held>,
    waiting: Option<Waiting>,
    superseded: Vec<Held>,
    released: Vec<Held>,
    lapsed: Vec<Held>,
    seen: Option<Seen>,
    latest: Option<LockState>,
    task: Option<Task>,
    /// The holder id the task acts for.
    acting: String,
    /// Crashed: does nothing until then.
    down_until: u64,
    next_write: u64,
    /// On the DynamoDB store: its replies carry no `Last-Modified`.
    dynamodb: bool,
}

impl SemClient {
    pub fn new(
        id: usize,
        key: &'static SemKey,
        plain: bool,
        clock: ExpiryClock,
        dynamodb: bool,
        rng: &mut Rng,
    ) -> Self {
        let clock_offset_ms = match clock {
            ExpiryClock::Holder => 0,
            _ => rng.below(2 * MAX_CLOCK_SKEW_MS) as i64 - MAX_CLOCK_SKEW_MS as i64,
        };
        let name = format!("{}-{}", key.name, id);
        SemClient {
            id,
            key,
            role: if plain {
                Role::Plain
            } else {
                Role::Slot { fair: key.fair }
            },
            clock,
            holder: name.clone(),
            name,
            incarnation: 0,
            clock_offset_ms,
            sealer: Sealer::stored("sim-bucket", &StoredKey::from_bytes([7; 32])),
            holding: None,
            waiting: None,
            superseded: Vec::new(),
            released: Vec::new(),
            lapsed: Vec::new(),
            seen: None,
            latest: None,
            task: None,
            acting: String::new(),
            down_until: 0,
            next_write: 0,
            dynamodb,
        }
    }

    /// The holder id its requests now write for: the lease's for a renew
    /// or release (a lapsed lease may be an earlier holder id's).
    pub fn acting_for(&self) -> &str {
        &self.acting
    }

    pub fn key_name(&self) -> &'static str {
        self.key.name
    }

    /// Who it is, for traces: its holder id, clock and offset.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, clock {:+} ms, acting for {})",
            self.holder, self.clock, self.clock_offset_ms, self.acting
        )
    }

    fn write_id(&mut self) -> String {
        self.next_write += 1;
        format!("{}.{}-w{}", self.name, self.incarnation, self.next_write)
    }

    fn wall(&self, now: u64) -> u64 {
        (START_MS + now).saturating_add_signed(self.clock_offset_ms)
    }

    /// Sim time at which this client's wall clock reads `wall_ms`.
    fn sim_time_of(&self, wall_ms: u64) -> u64 {
        let t = i128::from(wall_ms) - i128::from(START_MS) - i128::from(self.clock_offset_ms);
        t.clamp(0, i128::from(u64::MAX)) as u64
    }

    /// As `ClientCore`: a slot's seal says it is a slot's.
    fn slot_seal(&self) -> LockSeal {
        self.sealer.for_lock(format!("semaphore:{}", self.key.name))
    }

    fn lock_seal(&self) -> LockSeal {
        self.sealer.for_lock(format!(
            "{}:{}",
            Strategy::SingleObject.name(),
            self.key.name
        ))
    }

    fn seal_of(&self, held: &Held) -> LockSeal {
        if held.slot {
            self.slot_seal()
        } else {
            self.lock_seal()
        }
    }

    /// As `ClientCore::judge`, sim time being the monotonic clock.
    fn judge(&self, now: u64) -> Judge {
        let observation = self.seen.as_ref().map(|s| Observation {
            state: s.state.clone(),
            seen_for_ms: now.saturating_sub(s.since),
            entries_seen_for_ms: s
                .entries_since
                .iter()
                .map(|(id, since)| (id.clone(), now.saturating_sub(*since)))
                .collect(),
        });
        Judge::new(self.clock, observation)
    }

    /// As `ClientCore::observe`.
    fn observe(&mut self, state: Option<&LockState>, now: u64) {
        let Some(state) = state else {
            self.seen = None;
            return;
        };
        let before = self.seen.as_ref();
        let since = match before {
            Some(s) if s.state.etag == state.etag => s.since,
            _ => now,
        };
        let entries_since = state
            .semaphore
            .iter()
            .flat_map(|sem| sem.record.entries())
            .map(|e| {
                let since = before
                    .and_then(|s| s.entries_since.iter().find(|(id, _)| *id == e.write_id))
                    .map_or(now, |(_, since)| *since);
                (e.write_id.clone(), since)
            })
            .collect();
        self.seen = Some(Seen {
            state: state.clone(),
            since,
            entries_since,
        });
    }

    /// Clocks of `server` and `observed` keys jump: forward at any time,
    /// backward only while the client holds and waits for nothing.
    pub fn maybe_jump_clock(&mut self, rng: &mut Rng) -> bool {
        if self.clock == ExpiryClock::Holder || self.task.is_some() || !rng.chance(0.01) {
            return false;
        }
        let jump = rng.below(MAX_CLOCK_SKEW_MS) as i64;
        if self.holding.is_none() && self.waiting.is_none() && rng.chance(0.5) {
            self.clock_offset_ms -= jump;
        } else {
            self.clock_offset_ms += jump;
        }
        let bound = MAX_CLOCK_SKEW_MS as i64 * 3;
        self.clock_offset_ms = self.clock_offset_ms.clamp(-bound, bound);
        true
    }

    /// How long until this client wakes again, when it sent nothing: a
    /// waiter polls as `acquire_slot` does, a holder renews within a third
    /// of its ttl; now and then any of them stalls for seconds.
    pub fn pause(&self, now: u64, rng: &mut Rng) -> u64 {
        if now < self.down_until {
            return self.down_until - now;
        }
        let stall = rng.chance(0.03);
        if stall {
            return rng.below(8_000);
        }
        if let Some(w) = &self.waiting {
            let poll = fair_poll_ms(w.grant.ttl_ms);
            return poll / 2 + rng.below(poll);
        }
        if let Some(h) = &self.holding {
            return 1 + rng.below(h.lease.ttl_ms / 3);
        }
        if rng.chance(0.1) {
            rng.below(8_000)
        } else {
            rng.below(600)
        }
    }

    /// Decides and starts the next operation; `None`: nothing to send now.
    pub fn wake(
        &mut self,
        now: u64,
        rng: &mut Rng,
        history: &mut SemaphoreHistory,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        if now < self.down_until || self.task.is_some() {
            return Ok(None);
        }
        let wall = self.wall(now);
        if self
            .holding
            .as_ref()
            .is_some_and(|h| wall > h.lease.expires_at_ms)
        {
            if let Some(h) = self.holding.take() {
                history.stop(self.key, h.lease.token, now);
                self.lapsed.push(h);
            }
        }
        if rng.chance(0.01) {
            self.crash(now, rng, history, report);
            return Ok(None);
        }
        if let Some(w) = &self.waiting {
            if now >= w.until {
                // Gives up, as `acquire_slot` does at its deadline.
                self.waiting = None;
                let wish = Wish::Leave {
                    holder_id: self.holder.clone(),
                };
                return self.start_slot(wish, Purpose::Leave, now, history, report);
            }
            let (grant, until) = (w.grant.clone(), w.until);
            return self.start_acquire(grant, until, None, now, history, report);
        }
        if let Some(held) = self.holding.clone() {
            if rng.chance(0.05) {
                return self.forge(&held, wall, rng, report).map(|()| None);
            }
            return match rng.below(100) {
                0..=54 => self.start_rewrite(held, false, Spent::No, now, history, report),
                55..=66 => self.start_rewrite(held, true, Spent::No, now, history, report),
                // Take our own key again (a restarted process with the same
                // holder id): the old lease is given up as the write goes.
                67..=74 if held.lease.holder_id == self.holder => {
                    self.holding = None;
                    history.stop(self.key, held.lease.token, now);
                    let grant = self.grant(rng)?;
                    let until = now + 5_000 + rng.below(40_000);
                    self.start_acquire(grant, until, Some(held), now, history, report)
                }
                _ => Ok(None),
            };
        }
        if !self.superseded.is_empty() && rng.chance(0.2) {
            let i = rng.below(self.superseded.len() as u64) as usize;
            let held = self.superseded.swap_remove(i);
            let release = rng.chance(0.3);
            return self.start_rewrite(held, release, Spent::Superseded, now, history, report);
        }
        if !self.released.is_empty() && rng.chance(0.15) {
            let i = rng.below(self.released.len() as u64) as usize;
            let held = self.released.swap_remove(i);
            return self.start_rewrite(held, false, Spent::Released, now, history, report);
        }
        if !self.lapsed.is_empty() && rng.chance(0.1) {
            let i = rng.below(self.lapsed.len() as u64) as usize;
            let held = self.lapsed.swap_remove(i);
            let release = rng.chance(0.3);
            return self.start_rewrite(held, release, Spent::Lapsed, now, history, report);
        }
        let grant = self.grant(rng)?;
        let until = now + 5_000 + rng.below(40_000);
        self.start_acquire(grant, until, None, now, history, report)
    }

    fn grant(&self, rng: &mut Rng) -> Result<Grant, Violation> {
        let ttl = 2_000 + rng.below(6_000);
        Grant::new(ttl, self.holder.clone(), format!("meta of {}", self.name))
            .map_err(|e| violation("valid grants", e.to_string()))
    }

    /// Stops: a slot or place is left to expire. Back later under the same
    /// holder id (the process died: its belief ends now, and its successor
    /// may take its slot over) or a new one (it may only be paused, so its
    /// belief runs on to its deadline).
    fn crash(
        &mut self,
        now: u64,
        rng: &mut Rng,
        history: &mut SemaphoreHistory,
        report: &mut Report,
    ) {
        report.slot_crashes += 1;
        let same_id = rng.chance(0.5);
        if let Some(h) = self.holding.take() {
            if same_id {
                history.stop(self.key, h.lease.token, now);
            }
            self.lapsed.push(h);
        }
        self.waiting = None;
        self.seen = None;
        self.latest = None;
        if !same_id {
            self.incarnation += 1;
            self.holder = format!("{}.{}", self.name, self.incarnation);
        }
        self.down_until = now + 500 + rng.below(15_000);
    }

    /// An altered lease, or one presented as the other kind's, is refused
    /// before any request.
    fn forge(
        &mut self,
        held: &Held,
        wall: u64,
        rng: &mut Rng,
        report: &mut Report,
    ) -> Result<(), Violation> {
        let lease = held.lease.clone();
        let forged = match rng.below(5) {
            0 => Lease {
                token: if lease.token > 1 { lease.token - 1 } else { 2 },
                ..lease
            },
            1 => Lease {
                token: lease.token + 1_000,
                ..lease
            },
            2 => Lease {
                holder_id: format!("{}-x", lease.holder_id),
                ..lease
            },
            3 => Lease {
                expires_at_ms: lease.expires_at_ms + 60_000,
                ..lease
            },
            // Unaltered, but a slot's lease shown as a lock's or back.
            _ => lease,
        };
        let cross = forged == held.lease;
        let seal = if cross {
            if held.slot {
                self.lock_seal()
            } else {
                self.slot_seal()
            }
        } else {
            self.seal_of(held)
        };
        let key = self.key.name.to_string();
        let write_id = self.write_id();
        let refused =
            |step: Step<Lease>| matches!(step, Step::Done(Err(Error::InvalidArgument(_))));
        let refused = match (rng.below(3), held.slot != cross) {
            (0, _) => {
                let lock = fenced::lock_identity(Strategy::SingleObject.name(), &key);
                Fence::for_lease(&forged, &seal, lock, false).is_err()
            }
            (_, true) => {
                let wish = if rng.chance(0.5) {
                    Wish::Renew(forged.clone())
                } else {
                    Wish::Release(forged.clone())
                };
                let cached = self.latest.clone();
                let mut op = SemaphoreOp::new(
                    key.clone(),
                    key,
                    wish,
                    seal,
                    self.judge(0),
                    write_id,
                    cached,
                );
                matches!(op.start(wall), Step::Done(Err(Error::InvalidArgument(_))))
            }
            (_, false) => {
                refused(RewriteOwn::renew(forged.clone(), key, seal, write_id).start(wall))
            }
        };
        if !refused {
            return Err(violation(
                "an altered lease (or one shown as the other kind's) is refused before any request",
                format!("client {} ({}) used {forged:?}", self.id, self.key.name),
            ));
        }
        report.slot_forgeries_refused += 1;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn start_acquire(
        &mut self,
        grant: Grant,
        until: u64,
        replacing: Option<Held>,
        now: u64,
        history: &mut SemaphoreHistory,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        match self.role {
            Role::Slot { fair } => {
                let wish = Wish::Acquire {
                    grant: grant.clone(),
                    limit: self.key.limit,
                    fair,
                };
                let purpose = Purpose::Acquire {
                    grant,
                    until,
                    replacing,
                };
                self.start_slot(wish, purpose, now, history, report)
            }
            Role::Plain => {
                self.acting = grant.holder_id.clone();
                let key = self.key.name.to_string();
                let mut op = TryAcquire::new(
                    key.clone(),
                    key,
                    grant.clone(),
                    self.lock_seal(),
                    self.judge(now),
                    self.write_id(),
                );
                let step = op.start(self.wall(now));
                let task = Task {
                    op: Op::PlainAcquire(op),
                    purpose: Purpose::Acquire {
                        grant,
                        until,
                        replacing,
                    },
                };
                self.begin(task, step_of(step, Done::Plain), now, history, report)
            }
        }
    }

    fn start_slot(
        &mut self,
        wish: Wish,
        purpose: Purpose,
        now: u64,
        history: &mut SemaphoreHistory,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        let cached = match wish {
            Wish::Renew(_) | Wish::Release(_) => self.latest.clone(),
            _ => None,
        };
        self.acting = match &wish {
            Wish::Renew(l) | Wish::Release(l) => l.holder_id.clone(),
            Wish::Acquire { grant, .. } => grant.holder_id.clone(),
            Wish::Leave { holder_id } => holder_id.clone(),
        };
        let key = self.key.name.to_string();
        let mut op = SemaphoreOp::new(
            key.clone(),
            key,
            wish,
            self.slot_seal(),
            self.judge(now),
            self.write_id(),
            cached,
        );
        if self.dynamodb {
            op = op.on_store_without_write_times();
        }
        let step = op.start(self.wall(now));
        let task = Task {
            op: Op::Slot(op),
            purpose,
        };
        self.begin(task, step_of(step, Done::Slot), now, history, report)
    }

    fn start_rewrite(
        &mut self,
        held: Held,
        release: bool,
        spent: Spent,
        now: u64,
        history: &mut SemaphoreHistory,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        if release && matches!(spent, Spent::No | Spent::Lapsed) {
            // A releasing holder gives the slot up as it sends (a lapsed
            // one may still be believed: its process was only paused).
            if spent == Spent::No {
                self.holding = None;
            }
            history.stop(self.key, held.lease.token, now);
        }
        let purpose = Purpose::Rewrite {
            held: held.clone(),
            release,
            spent,
        };
        if held.slot {
            let wish = if release {
                Wish::Release(held.lease)
            } else {
                Wish::Renew(held.lease)
            };
            return self.start_slot(wish, purpose, now, history, report);
        }
        self.acting = held.lease.holder_id.clone();
        let key = self.key.name.to_string();
        let (seal, write_id) = (self.lock_seal(), self.write_id());
        let mut op = if release {
            RewriteOwn::release(held.lease, key, seal, write_id)
        } else {
            RewriteOwn::renew(held.lease, key, seal, write_id)
        };
        let step = op.start(self.wall(now));
        let task = Task {
            op: Op::PlainRewrite(op),
            purpose,
        };
        self.begin(task, step_of(step, Done::Rewritten), now, history, report)
    }

    fn begin(
        &mut self,
        task: Task,
        step: Result<S3Request, Done>,
        now: u64,
        history: &mut SemaphoreHistory,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        match step {
            Ok(request) => {
                self.task = Some(task);
                Ok(Some(request))
            }
            Err(done) => self.finish(task, done, now, history, report),
        }
    }

    pub fn on_reply(
        &mut self,
        reply: Option<S3Response>,
        now: u64,
        history: &mut SemaphoreHistory,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        let wall = self.wall(now);
        let Some(mut task) = self.task.take() else {
            return Ok(None);
        };
        let step = match &mut task.op {
            Op::Slot(op) => step_of(feed(op, reply, wall), Done::Slot),
            Op::PlainAcquire(op) => step_of(feed(op, reply, wall), Done::Plain),
            Op::PlainRewrite(op) => step_of(feed(op, reply, wall), Done::Rewritten),
        };
        self.begin(task, step, now, history, report)
    }

    /// Ends a task; may start the next step of the same call (a plain
    /// try-acquire that finds a semaphore goes on as a slot's, as
    /// `ClientCore::try_acquire` does).
    fn finish(
        &mut self,
        task: Task,
        done: Done,
        now: u64,
        history: &mut SemaphoreHistory,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        let outcome = match done {
            Done::Slot(result) => {
                // As `ClientCore::run_semaphore` keeps its memory.
                match &result {
                    Ok(f) => {
                        if let Some(read) = &f.read {
                            self.observe(read.as_ref(), now);
                        }
                        self.latest = f
                            .written
                            .clone()
                            .or(f.read.clone().flatten())
                            .filter(|s| s.semaphore.is_some());
                    }
                    Err(_) => self.latest = None,
                }
                result.map(|f| f.outcome)
            }
            Done::Plain(result) => {
                let Purpose::Acquire {
                    grant,
                    until,
                    replacing,
                } = task.purpose
                else {
                    return Err(bookkeeping());
                };
                return match result {
                    Ok(AcquireOutcome::Granted(lease)) => {
                        self.seen = None;
                        self.granted(Held { lease, slot: false }, replacing, now, history, report)
                            .map(|()| None)
                    }
                    Ok(AcquireOutcome::Held(Some(state))) => {
                        self.observe(Some(&state), now);
                        if state.semaphore.is_none() {
                            self.replaced(replacing, false);
                            return Ok(None);
                        }
                        let wish = Wish::Acquire {
                            grant: grant.clone(),
                            limit: 1,
                            fair: false,
                        };
                        let purpose = Purpose::Acquire {
                            grant,
                            until,
                            replacing,
                        };
                        self.start_slot(wish, purpose, now, history, report)
                    }
                    Ok(AcquireOutcome::Held(None)) => {
                        self.observe(None, now);
                        self.replaced(replacing, false);
                        Ok(None)
                    }
                    Err(e) => {
                        self.replaced(replacing, false);
                        self.expected_error(&e).map(|()| None)
                    }
                };
            }
            Done::Rewritten(result) => result.map(SlotOutcome::Rewritten),
        };
        match task.purpose {
            Purpose::Acquire {
                grant,
                until,
                replacing,
            } => self.acquired(grant, until, replacing, outcome, now, history, report),
            Purpose::Rewrite {
                held,
                release,
                spent,
            } => self.rewritten(held, release, spent, outcome, now, history, report),
            Purpose::Leave => match outcome {
                Ok(SlotOutcome::Left) => {
                    report.places_left += 1;
                    Ok(())
                }
                Ok(other) => Err(violation(
                    "leaving the queue ends in `Left`",
                    format!("client {}: {other:?}", self.id),
                )),
                Err(e) => self.expected_error(&e),
            },
        }
        .map(|()| None)
    }

    /// The lease given up to take the key again: superseded only by a
    /// grant; after anything else its slot may still be stored.
    fn replaced(&mut self, replacing: Option<Held>, granted: bool) {
        if let Some(old) = replacing {
            if granted {
                self.superseded.push(old);
            } else {
                self.lapsed.push(old);
            }
        }
    }

    fn granted(
        &mut self,
        held: Held,
        replacing: Option<Held>,
        now: u64,
        history: &mut SemaphoreHistory,
        report: &mut Report,
    ) -> Result<(), Violation> {
        if held.slot {
            report.slot_grants += 1;
        } else {
            report.plain_grants_on_semaphore_keys += 1;
        }
        self.replaced(replacing, true);
        self.waiting = None;
        let end = self.sim_time_of(held.lease.expires_at_ms);
        history.granted(self.key, self.id, held.lease.token, now, end, report)?;
        self.holding = Some(held);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn acquired(
        &mut self,
        grant: Grant,
        until: u64,
        replacing: Option<Held>,
        outcome: Result<SlotOutcome, Error>,
        now: u64,
        history: &mut SemaphoreHistory,
        report: &mut Report,
    ) -> Result<(), Violation> {
        match outcome {
            Ok(SlotOutcome::Granted(lease)) => {
                self.granted(Held { lease, slot: true }, replacing, now, history, report)
            }
            Ok(SlotOutcome::Queued { .. }) => {
                self.replaced(replacing, false);
                if self.role != (Role::Slot { fair: true }) {
                    return Err(violation(
                        "only a fair caller is queued",
                        format!("client {} ({:?})", self.id, self.role),
                    ));
                }
                report.slot_polls_queued += 1;
                if self.waiting.is_none() {
                    report.places_taken += 1;
                    self.waiting = Some(Waiting { grant, until });
                }
                Ok(())
            }
            Ok(SlotOutcome::Full(_)) => {
                self.replaced(replacing, false);
                report.slot_full += 1;
                Ok(())
            }
            Ok(other) => Err(violation(
                "an acquire ends granted, queued or full",
                format!("client {}: {other:?}", self.id),
            )),
            Err(e) => {
                self.replaced(replacing, false);
                self.expected_error(&e)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn rewritten(
        &mut self,
        held: Held,
        release: bool,
        spent: Spent,
        outcome: Result<SlotOutcome, Error>,
        now: u64,
        history: &mut SemaphoreHistory,
        report: &mut Report,
    ) -> Result<(), Violation> {
        let what = if release { "release" } else { "renew" };
        match outcome {
            Ok(SlotOutcome::Rewritten(lease)) => {
                if matches!(spent, Spent::Superseded | Spent::Released) {
                    return Err(violation(
                        "a superseded or released slot lease never renews or releases",
                        format!(
                            "client {} ({}): {what} of {spent:?} token {} (holder {}) succeeded",
                            self.id, self.key.name, held.lease.token, held.lease.holder_id
                        ),
                    ));
                }
                if spent == Spent::Lapsed {
                    report.lapsed_rewritten += 1;
                }
                if release {
                    report.slot_releases += 1;
                    if !held.slot {
                        self.observe(Some(&released_state(&lease)), now);
                    }
                    self.released.push(held);
                    return Ok(());
                }
                report.slot_renewals += 1;
                if self.holding.is_some() {
                    // A lapsed lease renewed while we hold another: keep
                    // the newer, let the other lapse again.
                    self.lapsed.push(Held { lease, ..held });
                    return Ok(());
                }
                let end = self.sim_time_of(lease.expires_at_ms);
                history.believe(self.key, self.id, lease.token, now, end, report)?;
                self.holding = Some(Held { lease, ..held });
                Ok(())
            }
            Ok(other) => Err(violation(
                "a renew or release ends rewritten",
                format!("client {}: {other:?}", self.id),
            )),
            Err(Error::Lost { .. }) | Err(Error::InvalidArgument(_)) if spent != Spent::No => {
                match spent {
                    Spent::Superseded => report.slot_superseded_refused += 1,
                    Spent::Released => report.slot_released_refused += 1,
                    _ => report.lapsed_refused += 1,
                }
                Ok(())
            }
            Err(Error::Lost { .. }) => {
                report.slot_lost += 1;
                if self
                    .holding
                    .as_ref()
                    .is_some_and(|h| h.lease.token == held.lease.token)
                {
                    self.holding = None;
                    history.stop(self.key, held.lease.token, now);
                    self.lapsed.push(held);
                }
                Ok(())
            }
            Err(e) => self.expected_error(&e),
        }
    }

    /// Errors the faults explain (lost replies, refused connections, 409s
    /// that persist); anything else is a bug.
    fn expected_error(&self, e: &Error) -> Result<(), Violation> {
        match e {
            _ if is_injected_fault(e) => Ok(()),
            other => Err(violation(
                "only injected faults fail a semaphore operation",
                format!("client {} ({}): {other:?}", self.id, self.key.name),
            )),
        }
    }
}

fn bookkeeping() -> Violation {
    violation(
        "the simulation's own bookkeeping",
        "a task finished with another task's result".into(),
    )
}

#[allow(clippy::result_large_err)] // test code; the size does not matter
fn step_of<T>(
    step: Step<T>,
    done: impl FnOnce(Result<T, Error>) -> Done,
) -> Result<S3Request, Done> {
    match step {
        Step::Send(r) => Ok(r),
        Step::Done(result) => Err(done(result)),
    }
}

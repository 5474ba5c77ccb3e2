//! One simulated client: picks what to do, runs one protocol operation at a
//! time over the simulation's events, and records what it believes.

use super::checks::{is_injected_fault, violation, History, Violation};
use super::{Report, EPOCH_KEYS, SINGLE_KEYS, START_MS};
use crate::config::Strategy;
use crate::error::Error;
use crate::expiry::{ExpiryClock, Judge, Observation};
use crate::fenced::{self, Change, Fence, FencedWrite, Written};
use crate::lease::{Grant, Lease};
use crate::lock_object::LockState;
use crate::protocol::{AcquireOutcome, Operation, Step};
use crate::s3::{S3Request, S3Response};
use crate::seal::{LockSeal, Sealer, StoredKey};
use crate::strategy::epoch::{self, Cleanup, EpochRewrite, EpochTryAcquire};
use crate::strategy::single_object::{released_state, RewriteOwn, TryAcquire};
use crate::testing::linearizability::{FencedCall, FencedResult};
use crate::testing::rng::Rng;
use std::collections::BTreeMap;

/// Which strategy's keys a client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `holder` clock rule: clients share the true clock.
    Single,
    /// Server clock rule: skewed clocks that jump.
    Epoch,
}

/// Fenced calls on one object before the next object takes over, so each
/// history stays small enough for the linearizability search.
const FENCED_OPS_PER_OBJECT: usize = 40;
const MAX_CLOCK_SKEW_MS: u64 = 300_000;

#[allow(clippy::large_enum_variant)] // one per client, in a test
enum Task {
    Acquire {
        key: String,
        op: Acquiring,
        /// Our own live lease on the key, given up to take the key again:
        /// superseded once this grant is acknowledged.
        replacing: Option<Lease>,
    },
    Rewrite {
        key: String,
        op: Rewriting,
        release: bool,
        /// Whether the lease was already spent: then it must never succeed.
        spent: Spent,
        /// The lease as sent, to remember it once released.
        lease: Lease,
        sent: u64,
    },
    Fenced {
        object: String,
        index: usize,
        op: FencedWrite,
    },
    Cleanup(Cleanup),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spent {
    No,
    /// By our own later grant of the key.
    Superseded,
    /// By a release that succeeded.
    Released,
}

#[allow(clippy::large_enum_variant)] // one per client, in a test
enum Acquiring {
    Single(TryAcquire),
    Epoch(EpochTryAcquire),
}

#[allow(clippy::large_enum_variant)] // one per client, in a test
enum Rewriting {
    Single(RewriteOwn),
    Epoch(EpochRewrite),
}

/// What a finished operation returned.
enum Done {
    Acquired(Result<(AcquireOutcome, Vec<String>), Error>),
    Rewritten(Result<Lease, Error>),
    Fenced(Result<Written, Error>),
    Cleaned,
}

/// Feeds a reply (or its loss) to an operation; a lost reply goes to
/// `on_transport_error`, as the driver sends it, so operations that write
/// find out whether their write landed.
fn feed<O: Operation>(op: &mut O, reply: Option<S3Response>, wall: u64) -> Step<O::Output> {
    match reply {
        Some(r) => op.on_response(r, wall),
        None => op.on_transport_error(Error::Transport("reply lost".into()), wall),
    }
}

pub struct Client {
    id: usize,
    kind: Kind,
    holder: String,
    clock_offset_ms: i64,
    sealer: Sealer,
    /// epoch-objects: the highest epoch seen per key.
    hints: BTreeMap<String, u64>,
    /// The lease believed held, per key.
    holding: BTreeMap<String, Lease>,
    /// Leases given up or lapsed: still used for fenced writes (a stale
    /// writer must be refused by the object, not by us).
    old: Vec<Lease>,
    /// Leases superseded by our own later grant: tried again, must fail.
    superseded: Vec<Lease>,
    /// Leases as they were before a release that succeeded: renewing one
    /// must fail (the release spent its etag).
    released: Vec<Lease>,
    /// The store answers 501 to `If-Match` on this client's keys.
    without_if_match: bool,
    /// On the DynamoDB store: no fenced writes, and `observed` where an S3
    /// run judges by `server` (see `Sim::on_dynamodb`).
    dynamodb: bool,
    cleanup: Vec<String>,
    task: Option<Task>,
    /// Fenced object generation per key.
    fenced_generation: BTreeMap<String, u32>,
    next_value: u64,
    next_write: u64,
    /// What this client last read of each key, and since when (sim time,
    /// which is every client's monotonic clock): for `observed`.
    seen: BTreeMap<String, (LockState, u64)>,
}

impl Client {
    pub fn new(
        id: usize,
        kind: Kind,
        epoch_without_if_match: bool,
        dynamodb: bool,
        rng: &mut Rng,
    ) -> Self {
        let clock_offset_ms = match kind {
            Kind::Single => 0,
            Kind::Epoch => rng.below(2 * MAX_CLOCK_SKEW_MS) as i64 - MAX_CLOCK_SKEW_MS as i64,
        };
        Client {
            id,
            kind,
            holder: format!("client-{id}"),
            clock_offset_ms,
            // One bucket and its one stored key: every client accepts every lease.
            sealer: Sealer::stored("sim-bucket", &StoredKey::from_bytes([7; 32])),
            hints: BTreeMap::new(),
            holding: BTreeMap::new(),
            old: Vec::new(),
            superseded: Vec::new(),
            released: Vec::new(),
            without_if_match: epoch_without_if_match && kind == Kind::Epoch,
            dynamodb,
            cleanup: Vec::new(),
            task: None,
            fenced_generation: BTreeMap::new(),
            next_value: (id as u64) << 40,
            next_write: 0,
            seen: BTreeMap::new(),
        }
    }

    fn write_id(&mut self) -> String {
        self.next_write += 1;
        format!("c{}-w{}", self.id, self.next_write)
    }

    /// How this client judges `key`'s expiry: every client of a key uses
    /// the same clock (see `expiry_clock_of`).
    fn judge(&self, key: &str, now: u64) -> Judge {
        let observation = self.seen.get(key).map(|(state, since)| Observation {
            entries_seen_for_ms: Vec::new(),
            state: state.clone(),
            seen_for_ms: now.saturating_sub(*since),
        });
        let clock = match expiry_clock_of(key) {
            ExpiryClock::Server if self.dynamodb => ExpiryClock::Observed,
            clock => clock,
        };
        Judge::new(clock, observation)
    }

    fn observe(&mut self, key: &str, state: Option<&LockState>, now: u64) {
        match state {
            None => {
                self.seen.remove(key);
            }
            Some(state) => {
                let since = match self.seen.get(key) {
                    Some((s, since)) if s.etag == state.etag => *since,
                    _ => now,
                };
                self.seen.insert(key.to_string(), (state.clone(), since));
            }
        }
    }

    fn strategy(&self) -> Strategy {
        match self.kind {
            Kind::Single => Strategy::SingleObject,
            Kind::Epoch => Strategy::EpochObjects,
        }
    }

    fn wall(&self, now: u64) -> u64 {
        (START_MS + now).saturating_add_signed(self.clock_offset_ms)
    }

    /// Sim time at which this client's wall clock reads `wall_ms`.
    fn sim_time_of(&self, wall_ms: u64) -> u64 {
        let t = i128::from(wall_ms) - i128::from(START_MS) - i128::from(self.clock_offset_ms);
        t.clamp(0, i128::from(u64::MAX)) as u64
    }

    fn seal(&self, key: &str) -> LockSeal {
        self.sealer
            .for_lock(format!("{}:{}", self.strategy().name(), key))
    }

    /// epoch-objects clients' clocks jump: forward at any time (a lease then
    /// looks shorter, which is safe), backward only while they hold nothing
    /// (a holder's clock must not step back; see docs/guarantees.md).
    pub fn maybe_jump_clock(&mut self, rng: &mut Rng) -> bool {
        if self.kind != Kind::Epoch || self.task.is_some() || !rng.chance(0.01) {
            return false;
        }
        let jump = rng.below(MAX_CLOCK_SKEW_MS) as i64;
        if self.holding.is_empty() && rng.chance(0.5) {
            self.clock_offset_ms -= jump;
        } else {
            self.clock_offset_ms += jump;
        }
        self.clock_offset_ms = self.clock_offset_ms.clamp(
            -(MAX_CLOCK_SKEW_MS as i64) * 3,
            MAX_CLOCK_SKEW_MS as i64 * 3,
        );
        true
    }

    fn keys(&self) -> &'static [&'static str] {
        match self.kind {
            Kind::Single => &SINGLE_KEYS,
            Kind::Epoch => &EPOCH_KEYS,
        }
    }

    /// Decides and starts the next operation; `None`: nothing to send now.
    pub fn wake(
        &mut self,
        now: u64,
        rng: &mut Rng,
        history: &mut History,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        let wall = self.wall(now);
        // A lease whose expiry our clock has reached is no longer believed.
        let lapsed: Vec<String> = self
            .holding
            .iter()
            .filter(|(_, l)| wall > l.expires_at_ms)
            .map(|(k, _)| k.clone())
            .collect();
        for key in lapsed {
            if let Some(l) = self.holding.remove(&key) {
                history.stop_believing(&key, l.token, now);
                self.old.push(l);
            }
        }
        if !self.cleanup.is_empty() {
            let mut op = Cleanup::new(std::mem::take(&mut self.cleanup));
            let step = op.start(wall);
            return self.begin(
                Task::Cleanup(op),
                step_of(step, |_| Done::Cleaned),
                now,
                history,
                report,
            );
        }
        let key = self.keys()[rng.below(self.keys().len() as u64) as usize].to_string();
        if let Some(lease) = self.holding.get(&key).cloned() {
            if rng.chance(0.05) {
                return self.forge(&key, lease, wall, rng, report).map(|()| None);
            }
            let roll = rng.below(100);
            return match roll {
                0..=44 => self.start_rewrite(key, lease, false, Spent::No, now, history, report),
                45..=54 => self.start_rewrite(key, lease, true, Spent::No, now, history, report),
                55..=84 if self.dynamodb => {
                    self.start_rewrite(key, lease, false, Spent::No, now, history, report)
                }
                55..=84 => self.start_fenced(&key, lease, rng.chance(0.15), now, history, report),
                85..=94 => {
                    // Take our own key again (a restarted process with the
                    // same holder id): the old lease is given up now, kept
                    // only to check that it never renews.
                    self.holding.remove(&key);
                    history.stop_believing(&key, lease.token, now);
                    self.start_acquire(key, Some(lease), rng, now, history, report)
                }
                _ => Ok(None),
            };
        }
        if !self.superseded.is_empty() && rng.chance(0.2) {
            let i = rng.below(self.superseded.len() as u64) as usize;
            let lease = self.superseded.swap_remove(i);
            let key = lease.key.clone();
            let release = rng.chance(0.3);
            return self.start_rewrite(
                key,
                lease,
                release,
                Spent::Superseded,
                now,
                history,
                report,
            );
        }
        if !self.released.is_empty() && rng.chance(0.2) {
            let i = rng.below(self.released.len() as u64) as usize;
            let lease = self.released.swap_remove(i);
            let key = lease.key.clone();
            return self.start_rewrite(key, lease, false, Spent::Released, now, history, report);
        }
        if !self.old.is_empty() && !self.dynamodb && rng.chance(0.2) {
            let i = rng.below(self.old.len() as u64) as usize;
            let lease = self.old[i].clone();
            let key = lease.key.clone();
            return self.start_fenced(&key, lease, rng.chance(0.15), now, history, report);
        }
        self.start_acquire(key, None, rng, now, history, report)
    }

    /// An altered lease must be refused before any request.
    fn forge(
        &mut self,
        key: &str,
        lease: Lease,
        wall: u64,
        rng: &mut Rng,
        report: &mut Report,
    ) -> Result<(), Violation> {
        let forged = match rng.below(4) {
            0 => Lease {
                token: if lease.token > 1 { lease.token - 1 } else { 2 },
                ..lease
            },
            1 => Lease {
                token: lease.token + 1_000,
                ..lease
            },
            2 => Lease {
                metadata: "x".repeat(5_000),
                ..lease
            },
            _ => Lease {
                expires_at_ms: lease.expires_at_ms + 60_000,
                ..lease
            },
        };
        let seal = self.seal(key);
        let refused = match (self.kind, rng.below(3)) {
            (_, 0) => Fence::for_lease(&forged, &seal, String::new(), false).is_err(),
            (Kind::Single, _) => matches!(
                RewriteOwn::renew(forged.clone(), key.into(), seal, self.write_id()).start(wall),
                Step::Done(Err(Error::InvalidArgument(_)))
            ),
            (Kind::Epoch, _) => matches!(
                EpochRewrite::renew(forged.clone(), epoch::epoch_dir(key), seal, self.write_id())
                    .start(wall),
                Step::Done(Err(Error::InvalidArgument(_)))
            ),
        };
        if !refused {
            return Err(violation(
                "an altered lease is refused before any request",
                format!("client {} used {forged:?}", self.id),
            ));
        }
        report.forgeries_refused += 1;
        Ok(())
    }

    fn start_acquire(
        &mut self,
        key: String,
        replacing: Option<Lease>,
        rng: &mut Rng,
        now: u64,
        history: &mut History,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        let wall = self.wall(now);
        let ttl = 2_000 + rng.below(6_000);
        let grant = match Grant::new(ttl, self.holder.clone(), format!("meta of {}", self.id)) {
            Ok(g) => g,
            Err(e) => return Err(violation("valid grants", e.to_string())),
        };
        let seal = self.seal(&key);
        let (op, step) = match self.kind {
            Kind::Single => {
                let judge = self.judge(&key, now);
                let mut op = TryAcquire::new(
                    key.clone(),
                    key.clone(),
                    grant,
                    seal,
                    judge,
                    self.write_id(),
                );
                let step = op.start(wall);
                (
                    Acquiring::Single(op),
                    step_of(step, |r| Done::Acquired(r.map(|o| (o, Vec::new())))),
                )
            }
            Kind::Epoch => {
                // A fresh instance (every serverless call) has no hint.
                let hint = if rng.chance(0.3) {
                    0
                } else {
                    self.hints.get(&key).copied().unwrap_or(0)
                };
                let mut op = EpochTryAcquire::new(
                    key.clone(),
                    epoch::epoch_dir(&key),
                    grant,
                    seal,
                    self.judge(&key, now),
                    self.write_id(),
                    hint,
                );
                let step = op.start(wall);
                (Acquiring::Epoch(op), step_of(step, Done::Acquired))
            }
        };
        let task = Task::Acquire { key, op, replacing };
        self.begin(task, step, now, history, report)
    }

    #[allow(clippy::too_many_arguments)]
    fn start_rewrite(
        &mut self,
        key: String,
        lease: Lease,
        release: bool,
        spent: Spent,
        now: u64,
        history: &mut History,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        let wall = self.wall(now);
        let seal = self.seal(&key);
        if release && spent == Spent::No {
            // A releasing holder gives the key up as it sends.
            self.holding.remove(&key);
            history.stop_believing(&key, lease.token, now);
            self.old.push(lease.clone());
        }
        let sent_lease = lease.clone();
        let (op, step) = match self.kind {
            Kind::Single => {
                let mut op = if release {
                    RewriteOwn::release(lease, key.clone(), seal, self.write_id())
                } else {
                    RewriteOwn::renew(lease, key.clone(), seal, self.write_id())
                };
                let step = op.start(wall);
                (Rewriting::Single(op), step_of(step, Done::Rewritten))
            }
            Kind::Epoch => {
                let dir = epoch::epoch_dir(&key);
                let mut op = if release {
                    EpochRewrite::release(lease, dir, seal, self.write_id())
                } else {
                    EpochRewrite::renew(lease, dir, seal, self.write_id())
                };
                let step = op.start(wall);
                (Rewriting::Epoch(op), step_of(step, Done::Rewritten))
            }
        };
        let task = Task::Rewrite {
            key,
            op,
            release,
            spent,
            lease: sent_lease,
            sent: now,
        };
        self.begin(task, step, now, history, report)
    }

    fn start_fenced(
        &mut self,
        key: &str,
        lease: Lease,
        delete: bool,
        now: u64,
        history: &mut History,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        let generation = *self.fenced_generation.get(key).unwrap_or(&0);
        let mut object = format!("fenced/{key}/{generation}");
        if history.fenced_ops(&object) >= FENCED_OPS_PER_OBJECT {
            self.fenced_generation
                .insert(key.to_string(), generation + 1);
            object = format!("fenced/{key}/{}", generation + 1);
        }
        let lock = fenced::lock_identity(self.strategy().name(), key);
        let fence = match Fence::for_lease(&lease, &self.seal(key), lock, false) {
            Ok(f) => f,
            Err(e) => {
                return Err(violation(
                    "a lease as returned is accepted",
                    format!("client {}: {e}", self.id),
                ))
            }
        };
        self.next_value += 1;
        let (change, call) = if delete {
            (
                Change::Delete {
                    nonce: self.next_value,
                },
                FencedCall::Delete { token: lease.token },
            )
        } else {
            (
                Change::Put {
                    body: format!("v{}", self.next_value).into_bytes(),
                    content_type: "text/plain".into(),
                },
                FencedCall::Put {
                    token: lease.token,
                    value: self.next_value,
                },
            )
        };
        let mut op = match FencedWrite::new(object.clone(), fence, change, self.write_id()) {
            Ok(op) => op,
            Err(e) => return Err(violation("valid fenced writes", e.to_string())),
        };
        let index = history.fenced_started(&object, self.id, call, now);
        let step = step_of(op.start(self.wall(now)), Done::Fenced);
        self.begin(
            Task::Fenced { object, index, op },
            step,
            now,
            history,
            report,
        )
    }

    /// Keeps the task if it sends, else finishes it at once.
    fn begin(
        &mut self,
        task: Task,
        step: Result<S3Request, Done>,
        now: u64,
        history: &mut History,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        match step {
            Ok(request) => {
                self.task = Some(task);
                Ok(Some(request))
            }
            Err(done) => self.finish(task, done, now, history, report).map(|()| None),
        }
    }

    pub fn on_reply(
        &mut self,
        reply: Option<S3Response>,
        now: u64,
        history: &mut History,
        report: &mut Report,
    ) -> Result<Option<S3Request>, Violation> {
        let wall = self.wall(now);
        let Some(mut task) = self.task.take() else {
            return Ok(None);
        };
        let step = match &mut task {
            Task::Acquire {
                op: Acquiring::Single(op),
                ..
            } => step_of(feed(op, reply, wall), |r| {
                Done::Acquired(r.map(|o| (o, Vec::new())))
            }),
            Task::Acquire {
                op: Acquiring::Epoch(op),
                ..
            } => step_of(feed(op, reply, wall), Done::Acquired),
            Task::Rewrite {
                op: Rewriting::Single(op),
                ..
            } => step_of(feed(op, reply, wall), Done::Rewritten),
            Task::Rewrite {
                op: Rewriting::Epoch(op),
                ..
            } => step_of(feed(op, reply, wall), Done::Rewritten),
            Task::Fenced { op, .. } => step_of(feed(op, reply, wall), Done::Fenced),
            Task::Cleanup(op) => step_of(feed(op, reply, wall), |_| Done::Cleaned),
        };
        self.begin(task, step, now, history, report)
    }

    fn finish(
        &mut self,
        task: Task,
        done: Done,
        now: u64,
        history: &mut History,
        report: &mut Report,
    ) -> Result<(), Violation> {
        match (task, done) {
            (Task::Acquire { key, replacing, .. }, Done::Acquired(result)) => {
                let granted = matches!(result, Ok((AcquireOutcome::Granted(_), _)));
                if let Some(old) = replacing {
                    // Only a grant surely supersedes it; after a failed or
                    // unknown attempt it is only no longer used to renew.
                    if granted {
                        self.superseded.push(old);
                    } else {
                        self.old.push(old);
                    }
                }
                self.acquired(key, result, now, history, report)
            }
            (
                Task::Rewrite {
                    key,
                    release,
                    spent,
                    lease: sent_lease,
                    sent,
                    ..
                },
                Done::Rewritten(result),
            ) => {
                let what = if release { "release" } else { "renew" };
                match result {
                    Ok(lease) => {
                        if spent != Spent::No {
                            return Err(violation(
                                "a superseded or released lease never renews or releases",
                                format!(
                                    "client {}: {what} of {spent:?} token {} succeeded",
                                    self.id, lease.token
                                ),
                            ));
                        }
                        history.rewrote(&key, self.id, lease.token, sent, what)?;
                        if release {
                            report.releases += 1;
                            self.released.push(sent_lease);
                            // As `ClientCore` does: the next grant of the
                            // key is one PUT conditional on this release.
                            if self.kind == Kind::Single {
                                self.observe(&key, Some(&released_state(&lease)), now);
                            }
                        } else {
                            report.renewals += 1;
                            let end = self.sim_time_of(lease.expires_at_ms);
                            history.believe(&key, self.id, lease.token, now, end)?;
                            self.holding.insert(key, lease);
                        }
                        Ok(())
                    }
                    Err(Error::Lost { .. }) => {
                        if spent == Spent::Superseded {
                            report.superseded_refused += 1;
                        } else if spent == Spent::Released {
                            report.released_refused += 1;
                        } else {
                            report.lost += 1;
                            if let Some(l) = self.holding.remove(&key) {
                                history.stop_believing(&key, l.token, now);
                                self.old.push(l);
                            }
                        }
                        Ok(())
                    }
                    Err(e) => self.expected_error(&e),
                }
            }
            (Task::Fenced { object, index, .. }, Done::Fenced(result)) => {
                let outcome = match result {
                    Ok(w) => {
                        report.fenced_accepted += 1;
                        FencedResult::Written {
                            previous_token: w.previous_token,
                        }
                    }
                    Err(Error::Fenced { stored_token, .. }) => {
                        report.fenced_refused += 1;
                        FencedResult::Fenced { stored_token }
                    }
                    Err(e) => {
                        self.expected_error(&e)?;
                        FencedResult::Unknown
                    }
                };
                history.fenced_finished(&object, index, outcome, now);
                Ok(())
            }
            (Task::Cleanup(_), _) => Ok(()),
            _ => Err(violation(
                "the simulation's own bookkeeping",
                "a task finished with another task's result".into(),
            )),
        }
    }

    fn acquired(
        &mut self,
        key: String,
        result: Result<(AcquireOutcome, Vec<String>), Error>,
        now: u64,
        history: &mut History,
        report: &mut Report,
    ) -> Result<(), Violation> {
        match result {
            Ok((AcquireOutcome::Granted(lease), cleanup)) => {
                report.grants += 1;
                self.seen.remove(&key);
                self.note_epoch(&key, lease.token);
                let end = self.sim_time_of(lease.expires_at_ms);
                history.granted(&key, self.id, lease.token, now, end)?;
                self.holding.insert(key, lease);
                self.cleanup = cleanup;
                Ok(())
            }
            Ok((AcquireOutcome::Held(Some(state)), _)) => {
                self.note_epoch(&key, state.record.token);
                self.observe(&key, Some(&state), now);
                Ok(())
            }
            Ok((AcquireOutcome::Held(None), _)) => {
                self.observe(&key, None, now);
                Ok(())
            }
            Err(e) => self.expected_error(&e),
        }
    }

    /// Errors the faults explain (lost replies, refused connections, 409s
    /// that persist, slow stores); anything else is a bug.
    fn expected_error(&self, e: &Error) -> Result<(), Violation> {
        match e {
            _ if is_injected_fault(e) => Ok(()),
            // The injected store without If-Match: renew and release refuse.
            Error::S3(s) if s.status == 501 && self.without_if_match => Ok(()),
            other => Err(violation(
                "only injected faults fail an operation",
                format!("client {}: {other:?}", self.id),
            )),
        }
    }

    fn note_epoch(&mut self, key: &str, epoch: u64) {
        if self.kind == Kind::Epoch {
            let seen = self.hints.entry(key.to_string()).or_insert(0);
            *seen = (*seen).max(epoch);
        }
    }
}

/// The request an operation sends next, or what it finished with.
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

/// Each key has one expiry clock that all its clients use: `s0` the
/// design's (`holder`: its clients share the true clock), `s1` and `e0` the
/// server's, `e1` the observed one (its clients' clocks skewed and jumping).
pub fn expiry_clock_of(key: &str) -> ExpiryClock {
    match key {
        "s0" => ExpiryClock::Holder,
        "e1" => ExpiryClock::Observed,
        _ => ExpiryClock::Server,
    }
}

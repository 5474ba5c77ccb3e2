//! One slot member: one process's use of one semaphore key, on a
//! [`Client`] of its own (the blocking API, one instance) built as the
//! elector members build theirs (the test hooks with the soak's request
//! faults, and a wall clock that follows the process's skew), living
//! through what the plan does to its process (crash, pause, clock steps).
//!
//! It loops: wait for a slot, hold it, give it back, rest a little.
//!
//! - **Wait** as `s3-lease run --limit N` does: `try-acquire-slot` every
//!   tenth of the ttl (plus up to 50 ms of jitter), with one holder id for
//!   the whole wait (a fresh one per wait), so a fair waiter keeps its
//!   place by asking again.
//! - **Hold** the [`LeaseGuard`] the grant comes back as, with a deadline
//!   of half the ttl (`AcquireOptions::deadline`, as `s3-lease run`
//!   passes), counted from the start of the attempt that granted it.
//!   Belief is what the guard reports, nothing of the soak's own:
//!   the member holds the slot from the grant's answer for as long as
//!   `is_held()` says so, sampled every [`TICK`]. A term ends at the last
//!   sample that said held: when a sample says not held (the guard lost
//!   the slot), before the member gives the slot back, at its process's
//!   crash, or at the end of the run. A paused member samples nothing, so
//!   its term ends at the last sample before the pause.
//! - **Give back** after a random while, with `LeaseGuard::release`.
//!
//! A crash drops the guard without giving anything back (the dead
//! process's requests are refused), and the process restarts as new
//! holders. With `--break slot-guard` the member ignores its guard and
//! believes from the grant until it gives the slot back (a holder without
//! a deadline); with `--break slot-queue` a fair waiter leaves the queue
//! now and then and joins again at the back.

use super::history::{Grant, SlotRecord, Term, Violation, Wait};
use super::process::Process;
use super::schedule::{instance_seed, RequestFaults};
use super::{slot_key_name, Break, Shared, SlotKeyProfile, LEASE_MS};
use crate::hooks::{is_fault, Hooks, RequestRecord};
use crate::instance::SkewedClock;
use s3_lease::testing::rng::Rng;
use s3_lease_host::blocking::{BlockingSlotGrant, Client, LeaseGuard};
use s3_lease_host::{AcquireOptions, ErrorKind, LostReason, SlotOptions};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a holder asks its guard whether it still holds the slot.
const TICK: Duration = Duration::from_millis(5);
/// The longest a member sleeps before it looks at its process again.
const LOOK: Duration = Duration::from_millis(50);
/// A waiter tries every tenth of the ttl, as `s3-lease run` does...
const ATTEMPT_EVERY: Duration = Duration::from_millis(LEASE_MS / 10);
/// ... plus up to this much jitter.
const JITTER_MS: u64 = 50;
/// The guard counts the slot held for this long after each renew was
/// sent: half the ttl, as `s3-lease run` passes.
const DEADLINE: Duration = Duration::from_millis(LEASE_MS / 2);
/// How long a holder keeps its slot before giving it back.
const HOLD_MS: (u64, u64) = (300, 2_500);
/// How long a member rests between giving a slot back and waiting again.
const REST_MS: (u64, u64) = (0, 600);
/// A fair waiter whose `queued` answers came further apart than this may
/// have lost its place (it renews the place a third of the ttl after its
/// last write, and others drop it a ttl after that): from then on the
/// checker no longer expects the queue to keep it.
pub const KEEP_PLACE_GAP: Duration = Duration::from_millis(LEASE_MS / 3);
/// `--break slot-queue`: the chance that a waiter gives up its place
/// after a `queued` answer.
const LEAVE_CHANCE: f64 = 0.3;
/// Slot members' request schedules are seeded apart from the elector
/// members' (which use the key index).
const SEED_KEY_BASE: usize = 1_000;

/// One generation of the process, as far as this semaphore key goes.
struct Life {
    client: Client,
    hooks: Hooks,
    /// Waits begun in this generation (names the holder ids).
    waits: u32,
}

struct Waiting {
    holder_id: String,
    /// When the first attempt was sent.
    start: Option<Instant>,
    first_queued: Option<(Instant, Instant)>,
    /// When the last attempt that answered `queued` was sent.
    last_queued: Option<Instant>,
    /// Set once the waiter may have lost its place.
    kept_place_until: Option<Instant>,
    /// The earliest instant its process's wall clock may have stepped back.
    clock_stepped_back: Option<Instant>,
    /// When an attempt that failed after an unclear write was sent.
    unclear_write: Option<Instant>,
    next_attempt: Instant,
}

impl Waiting {
    /// The place is surely kept up to `at` only if a `queued` answer was
    /// sent within `KEEP_PLACE_GAP` before it.
    fn keep_place_to(&mut self, at: Instant) {
        if self.kept_place_until.is_some() {
            return;
        }
        if let Some(last) = self.last_queued {
            if at.saturating_duration_since(last) > KEEP_PLACE_GAP {
                self.kept_place_until = Some(last + KEEP_PLACE_GAP);
            }
        }
    }
}

struct Holding {
    guard: LeaseGuard,
    token: u64,
    /// The grant's answer: belief starts there.
    start: Instant,
    /// The last sample at which the member believed it held the slot.
    last_held: Instant,
    give_back_at: Instant,
}

enum Phase {
    Resting(Instant),
    Waiting(Waiting),
    Holding(Holding),
}

pub struct SlotMember<'a> {
    shared: &'a Shared<'a>,
    process: Arc<Process>,
    p: usize,
    /// The semaphore key's index.
    j: usize,
    profile: SlotKeyProfile,
    key: String,
    generation: u32,
    life: Option<Life>,
    phase: Phase,
    rng: Rng,
    pause_seen: u64,
    /// Guards and clients being dropped (see [`SlotMember::drop_guard`]).
    dropping: Vec<JoinHandle<()>>,
    /// The process's wall-clock offset as last read, and when.
    clock_seen: (i64, Instant),
    record: SlotRecord,
}

impl<'a> SlotMember<'a> {
    /// Starts the member's first process, then waits for every other.
    pub fn start(
        shared: &'a Shared<'a>,
        process: Arc<Process>,
        p: usize,
        j: usize,
        barrier: &Barrier,
    ) -> Self {
        let generation = process.generation();
        let mut m = SlotMember {
            shared,
            process,
            p,
            j,
            profile: shared.slot_profiles[j],
            key: slot_key_name(j),
            generation,
            life: None,
            phase: Phase::Resting(shared.t0),
            rng: Rng::new(0),
            pause_seen: 0,
            dropping: Vec::new(),
            clock_seen: (0, shared.t0),
            record: SlotRecord::default(),
        };
        m.clock_seen = (
            m.process.clock_offset_ms.load(Ordering::SeqCst),
            Instant::now(),
        );
        m.spawn_life();
        barrier.wait();
        m
    }

    fn violation(&mut self, invariant: &'static str, detail: String) {
        self.record.violations.push(Violation {
            invariant,
            detail: format!(
                "process {} gen {} {}: {detail}",
                self.p, self.generation, self.key
            ),
        });
    }

    fn ignores_guard(&self) -> bool {
        self.shared.config.broken == Some(Break::SlotGuard)
    }

    fn seed(&self) -> u64 {
        instance_seed(
            self.shared.config.seed,
            self.p,
            SEED_KEY_BASE + self.j,
            self.generation,
        )
    }

    /// A fresh process: a new client, new holder ids.
    fn spawn_life(&mut self) {
        self.generation = self.process.generation();
        self.pause_seen = self.process.latest_pause().map_or(0, |(n, _)| n);
        self.rng = Rng::new(self.seed() ^ 0x5107);
        let harness = self.shared.harness;
        let hooks = Hooks::new(harness.runtime().http().clone());
        // The process's clock: a jump moves every instance of it at once.
        let clock = SkewedClock {
            offset_ms: self.process.clock_offset_ms.clone(),
        };
        hooks.set_policy(
            RequestFaults::new(
                self.seed(),
                self.shared.config.request_fault_rate,
                self.shared.counts.clone(),
                self.process.clone(),
            )
            .into_policy(),
        );
        let config = &self.shared.slot_host_configs[self.j];
        let options = harness.client_options(&hooks, &clock);
        match Client::connect_with(harness.runtime(), config, options) {
            Ok(client) => {
                self.life = Some(Life {
                    client,
                    hooks,
                    waits: 0,
                })
            }
            Err(e) => self.violation("setup", format!("connect: {e}")),
        }
        self.phase = Phase::Resting(Instant::now());
    }

    /// Waits, holds and gives back until the end of the run.
    pub fn run(mut self) -> SlotRecord {
        let t_end = self.shared.t_end;
        std::thread::sleep(self.shared.t0.saturating_duration_since(Instant::now()));
        loop {
            let now = Instant::now();
            if now >= t_end {
                break;
            }
            if self.process.generation() != self.generation {
                self.crashed();
                continue;
            }
            self.look_at_clock();
            if let Some((n, _)) = self.process.latest_pause() {
                if n > self.pause_seen {
                    self.pause_seen = n;
                    self.pause();
                    continue;
                }
            }
            let next = if self.life.is_some() {
                self.step(now)
            } else {
                now + LOOK
            };
            let now = Instant::now();
            let wait = next.min(now + LOOK).min(t_end);
            std::thread::sleep(wait.saturating_duration_since(now));
        }
        self.stop(t_end, "end of run");
        self.end_life();
        for handle in self.dropping.drain(..) {
            let _ = handle.join();
        }
        self.record
    }

    /// Notes a backward step of the process's wall clock during a wait:
    /// it happened after the offset was last read.
    fn look_at_clock(&mut self) {
        let offset = self.process.clock_offset_ms.load(Ordering::SeqCst);
        let (seen, at) = self.clock_seen;
        if offset < seen {
            if let Phase::Waiting(w) = &mut self.phase {
                w.clock_stepped_back.get_or_insert(at);
            }
        }
        self.clock_seen = (offset, Instant::now());
    }

    /// Does what the phase calls for; returns when to look again.
    fn step(&mut self, now: Instant) -> Instant {
        match &mut self.phase {
            Phase::Resting(until) if now < *until => *until,
            Phase::Resting(_) => {
                self.begin_wait(now);
                now
            }
            Phase::Waiting(w) if now < w.next_attempt => w.next_attempt,
            Phase::Waiting(_) => {
                self.attempt();
                now
            }
            Phase::Holding(_) => {
                self.sample();
                Instant::now() + TICK
            }
        }
    }

    fn begin_wait(&mut self, now: Instant) {
        let Some(life) = self.life.as_mut() else {
            return;
        };
        life.waits += 1;
        let holder_id = format!("soak-p{}-g{}-w{}", self.p, self.generation, life.waits);
        self.phase = Phase::Waiting(Waiting {
            holder_id,
            start: None,
            first_queued: None,
            last_queued: None,
            kept_place_until: None,
            clock_stepped_back: None,
            unclear_write: None,
            next_attempt: now,
        });
    }

    /// Takes the requests the client sent since last time (those of a
    /// guard being dropped too), checks and counts them.
    fn count_requests(&mut self) -> Vec<RequestRecord> {
        let Some(life) = self.life.as_ref() else {
            return Vec::new();
        };
        let taken = life.hooks.take_requests();
        self.record.requests += taken.len() as u64;
        if let Some(bad) = taken.iter().find(|r| !r.payload_hash_ok) {
            let detail = format!("payload hash mismatch on {bad:?}");
            self.violation("requests as signed", detail);
        }
        taken
    }

    /// One `try-acquire-slot`, and what follows from its answer.
    fn attempt(&mut self) {
        let Phase::Waiting(w) = &self.phase else {
            return;
        };
        let Some(life) = self.life.as_ref() else {
            return;
        };
        let client = life.client.clone();
        let options = AcquireOptions::new(Duration::from_millis(LEASE_MS))
            .holder_id(w.holder_id.clone())
            .metadata(format!("process {} generation {}", self.p, self.generation))
            .deadline(DEADLINE);
        let slot = SlotOptions::new(self.profile.requested_limit(self.shared.config.broken))
            .fair(self.profile.fair);
        let holder_id = w.holder_id.clone();
        let sent = Instant::now();
        let result = client.try_acquire_slot(&self.key, &options, slot);
        let answered = Instant::now();
        let sent_requests = self.count_requests();
        // A step during the call counts from before it.
        self.look_at_clock();
        if self.process.generation() != self.generation {
            // The process died during the call: nobody read the answer.
            return;
        }
        let jitter = Duration::from_millis(self.rng.range(0, JITTER_MS));
        let Phase::Waiting(w) = &mut self.phase else {
            return;
        };
        w.start.get_or_insert(sent);
        w.next_attempt = answered + ATTEMPT_EVERY + jitter;
        match result {
            Ok(BlockingSlotGrant::Granted(guard)) => {
                self.record.counts.granted += 1;
                self.granted(guard, sent, answered);
            }
            Ok(BlockingSlotGrant::Queued { place }) => {
                self.record.counts.queued += 1;
                w.keep_place_to(sent);
                w.last_queued = Some(sent);
                w.first_queued.get_or_insert((sent, answered));
                if !self.profile.fair {
                    let detail = format!("queued at place {place} without asking to be fair");
                    self.violation("slot answers", detail);
                }
                if self.shared.config.broken == Some(Break::SlotQueue)
                    && self.rng.chance(LEAVE_CHANCE)
                {
                    // Gives up its place: its next attempt joins at the back.
                    let _ = client.leave_queue(&self.key, &holder_id);
                    self.record.counts.left_queue += 1;
                    self.count_requests();
                }
            }
            Ok(BlockingSlotGrant::Full(_)) => self.record.counts.full += 1,
            Ok(_) => {
                self.record.counts.failed += 1;
                let detail = "try-acquire-slot answered a case this member does not know".into();
                self.violation("slot answers", detail);
            }
            Err(e) => {
                self.record.counts.failed += 1;
                let unclear = sent_requests
                    .iter()
                    .any(|r| r.method == "PUT" && r.status.is_none_or(|s| s >= 500));
                if unclear {
                    w.unclear_write.get_or_insert(sent);
                }
                if !is_fault(&e) {
                    let detail = format!("try-acquire-slot failed unexpectedly: {e}");
                    self.violation("no unexpected errors", detail);
                }
            }
        }
    }

    /// Ends the wait, records the grant and starts holding.
    fn granted(&mut self, guard: LeaseGuard, sent: Instant, at: Instant) {
        let Phase::Waiting(mut w) = std::mem::replace(&mut self.phase, Phase::Resting(at)) else {
            self.drop_guard(guard);
            return;
        };
        let token = guard.token();
        self.record.grants.push(Grant {
            key: self.j,
            process: self.p,
            generation: self.generation,
            token,
            step_start: sent,
            step_end: at,
        });
        w.keep_place_to(sent);
        self.end_wait(w, Some((sent, at, token)), at);
        let held = guard.is_held() || self.ignores_guard();
        let now = Instant::now();
        if !held {
            // The answer came after the guard's deadline: never believed.
            self.record.counts.never_held += 1;
            self.drop_guard(guard);
            self.rest(now);
            return;
        }
        let hold = Duration::from_millis(self.rng.range(HOLD_MS.0, HOLD_MS.1));
        self.phase = Phase::Holding(Holding {
            guard,
            token,
            start: at,
            last_held: now,
            give_back_at: now + hold,
        });
    }

    fn end_wait(&mut self, w: Waiting, granted: Option<(Instant, Instant, u64)>, end: Instant) {
        let Some(start) = w.start else {
            return;
        };
        let kept_place_until = w.kept_place_until.unwrap_or(end).min(end);
        self.record.waits.push(Wait {
            key: self.j,
            process: self.p,
            generation: self.generation,
            start,
            first_queued: w.first_queued,
            granted,
            kept_place_until,
            clock_stepped_back: w.clock_stepped_back,
            unclear_write: w.unclear_write,
            end,
        });
    }

    /// One look at the guard; gives the slot back when its time is up.
    fn sample(&mut self) {
        let ignores_guard = self.ignores_guard();
        let Phase::Holding(h) = &mut self.phase else {
            return;
        };
        let held = h.guard.is_held();
        let now = Instant::now();
        if held || ignores_guard {
            h.last_held = now;
        }
        if !held && !ignores_guard {
            match h.guard.lost() {
                Some(LostReason::Taken(_)) => self.record.counts.lost_taken += 1,
                _ => self.record.counts.lost_expired += 1,
            }
            self.stop(now, "the guard said lost");
            self.rest(now);
            return;
        }
        if now >= h.give_back_at {
            self.give_back(now);
        }
    }

    /// Ends the belief, then releases the slot (on this thread: the
    /// process gives it back and waits for the answer).
    fn give_back(&mut self, now: Instant) {
        let Phase::Holding(h) = std::mem::replace(&mut self.phase, Phase::Resting(now)) else {
            return;
        };
        self.close_term(&h, h.last_held, "given back");
        let result = h.guard.release();
        self.count_requests();
        if self.process.generation() != self.generation {
            return;
        }
        self.record.counts.released += 1;
        if let Err(e) = result {
            self.record.counts.release_failed += 1;
            let lost = e.kind() == ErrorKind::Lost;
            if !lost && !is_fault(&e) {
                self.violation("no unexpected errors", format!("release failed: {e}"));
            }
        }
        self.rest(Instant::now());
    }

    fn rest(&mut self, now: Instant) {
        let rest = Duration::from_millis(self.rng.range(REST_MS.0, REST_MS.1));
        self.phase = Phase::Resting(now + rest);
    }

    fn close_term(&mut self, h: &Holding, end: Instant, why: &str) {
        self.record.terms.push(Term {
            key: self.j,
            process: self.p,
            generation: self.generation,
            token: h.token,
            start: h.start,
            end: end.max(h.start),
            ended_by: why.to_string(),
        });
    }

    /// Stops whatever the member was doing at `at` (a crash, the end of
    /// the run), without giving anything back itself.
    fn stop(&mut self, at: Instant, why: &str) {
        match std::mem::replace(&mut self.phase, Phase::Resting(at)) {
            Phase::Holding(h) => {
                let end = if self.ignores_guard() {
                    at
                } else {
                    h.last_held.min(at)
                };
                self.close_term(&h, end, why);
                self.drop_guard(h.guard);
            }
            Phase::Waiting(mut w) => {
                w.keep_place_to(at);
                self.end_wait(w, None, at);
            }
            Phase::Resting(_) => {}
        }
    }

    /// Drops a guard on a thread of its own: it releases unless the slot
    /// is lost (a dead process's requests are refused), and if it holds
    /// the last handle of its client, the drop stops the client's runtime,
    /// which waits for the calls still running (a renew a pause holds).
    fn drop_guard(&mut self, guard: LeaseGuard) {
        self.dropping.push(std::thread::spawn(move || drop(guard)));
    }

    /// Lets the client go, on a thread of its own (as a guard).
    fn end_life(&mut self) {
        self.count_requests();
        if let Some(life) = self.life.take() {
            self.dropping.push(std::thread::spawn(move || drop(life)));
        }
    }

    /// The process died: its guard stops without giving anything back, its
    /// wait ends, and it restarts as a fresh process.
    fn crashed(&mut self) {
        let crash = self.process.last_crash();
        let at = crash.map_or_else(Instant::now, |c| c.at);
        self.stop(at, "crash");
        self.end_life();
        if self.process.wait_for_restart(crash, self.shared.t_end) {
            self.spawn_life();
        } else {
            self.generation = self.process.generation();
        }
    }

    /// The process stopped: the member samples nothing until the pause
    /// ends (so a term ends at the last sample before), and a waiter may
    /// lose its place; the guard's renewer runs on, its requests held until
    /// the pause ends. The member may notice late, after a call that the
    /// pause held: it goes by the pause's own span, not by when it noticed.
    fn pause(&mut self) {
        let Some((from, until)) = self.process.latest_pause_span() else {
            return;
        };
        if let Phase::Waiting(w) = &mut self.phase {
            if let Some(start) = w.start.filter(|&s| until > s) {
                let from = from.max(start);
                w.kept_place_until = Some(w.kept_place_until.map_or(from, |k| k.min(from)));
            }
        }
        std::thread::sleep(
            until
                .min(self.shared.t_end)
                .saturating_duration_since(Instant::now()),
        );
    }
}

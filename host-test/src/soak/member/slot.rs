//! The member's role on a semaphore key. It loops: wait for a slot, hold
//! it, give it back, rest a little.
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
//! With `--break slot-guard` the member ignores its guard and believes
//! from the grant until it gives the slot back (a holder without a
//! deadline); with `--break slot-queue` a fair waiter leaves the queue
//! now and then and joins again at the back.

use super::{Member, Role, Stop};
use crate::hooks::{is_fault, Hooks};
use crate::instance::SkewedClock;
use crate::soak::{Break, Shared, SlotKeyProfile, LEASE_MS};
use s3_lease::testing::history::{Grant, Micros, Term, Wait};
use s3_lease_host::blocking::{BlockingSlotGrant, Client, LeaseGuard};
use s3_lease_host::{AcquireOptions, ErrorKind, LostReason, SlotOptions};
use std::time::{Duration, Instant};

/// How often a holder asks its guard whether it still holds the slot.
const TICK: Duration = Duration::from_millis(5);
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

/// One life's client, and the waits begun in it (names the holder ids).
pub struct Taking {
    client: Client,
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

/// A slot member's semaphore key (its index among them) and phase.
pub struct Slot {
    j: usize,
    profile: SlotKeyProfile,
    phase: Phase,
}

impl Slot {
    pub fn new(shared: &Shared, j: usize) -> Self {
        Slot {
            j,
            profile: shared.slot_profiles[j],
            phase: Phase::Resting(shared.t0),
        }
    }
}

impl Role for Slot {
    type Life = Taking;
    /// Slot members' request schedules are seeded apart from the
    /// campaigning members' (which use the key index).
    const SEED_KEY_BASE: usize = 1_000;
    const RNG_SALT: u64 = 0x5107;

    fn connect(
        m: &mut Member<'_, Self>,
        hooks: &Hooks,
        clock: SkewedClock,
    ) -> Result<Taking, String> {
        m.role.phase = Phase::Resting(Instant::now());
        let shared = m.shared;
        let options = shared.harness.client_options(hooks, &clock);
        let config = &shared.slot_host_configs[m.role.j];
        let client = Client::connect_with(shared.harness.runtime(), config, options);
        let client = client.map_err(|e| format!("connect: {e}"))?;
        Ok(Taking { client, waits: 0 })
    }

    fn step(m: &mut Member<'_, Self>, now: Instant) -> Instant {
        match &mut m.role.phase {
            Phase::Resting(until) if now < *until => *until,
            Phase::Resting(_) => {
                m.begin_wait(now);
                now
            }
            Phase::Waiting(w) if now < w.next_attempt => w.next_attempt,
            Phase::Waiting(_) => {
                m.attempt();
                now
            }
            Phase::Holding(_) => {
                m.sample();
                Instant::now() + TICK
            }
        }
    }

    fn stop(m: &mut Member<'_, Self>, at: Instant, why: Stop) {
        match std::mem::replace(&mut m.role.phase, Phase::Resting(at)) {
            Phase::Holding(h) => {
                let end = if m.ignores_guard() {
                    at
                } else {
                    h.last_held.min(at)
                };
                m.close_term(&h, end, why.name());
                m.let_go_of(h.guard);
            }
            Phase::Waiting(mut w) => {
                w.keep_place_to(at);
                m.end_wait(w, None, at);
            }
            Phase::Resting(_) => {}
        }
    }

    /// The process stopped: the member samples nothing until the pause
    /// ends (so a term ends at the last sample before), and a waiter may
    /// lose its place; the guard's renewer runs on, its requests held until
    /// the pause ends. The member may notice late, after a call that the
    /// pause held: it goes by the pause's own span, not by when it noticed.
    fn pause(m: &mut Member<'_, Self>) {
        let Some((from, until)) = m.process.latest_pause_span() else {
            return;
        };
        if let Phase::Waiting(w) = &mut m.role.phase {
            if let Some(start) = w.start.filter(|&s| until > s) {
                let from = from.max(start);
                w.kept_place_until = Some(w.kept_place_until.map_or(from, |k| k.min(from)));
            }
        }
        let wake = until.min(m.shared.t_end);
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
    }

    fn let_go(life: Taking) {
        drop(life);
    }
}

impl Member<'_, Slot> {
    fn ignores_guard(&self) -> bool {
        self.shared.config.broken == Some(Break::SlotGuard)
    }

    fn begin_wait(&mut self, now: Instant) {
        let Some((_, life)) = self.life.as_mut() else {
            return;
        };
        life.waits += 1;
        let holder_id = format!("soak-p{}-g{}-w{}", self.p, self.generation, life.waits);
        self.role.phase = Phase::Waiting(Waiting {
            holder_id,
            start: None,
            first_queued: None,
            last_queued: None,
            kept_place_until: None,
            next_attempt: now,
        });
    }

    /// One `try-acquire-slot`, and what follows from its answer.
    fn attempt(&mut self) {
        let (Phase::Waiting(w), Some((_, life))) = (&self.role.phase, self.life.as_ref()) else {
            return;
        };
        let client = life.client.clone();
        let options = AcquireOptions::new(Duration::from_millis(LEASE_MS))
            .holder_id(w.holder_id.clone())
            .metadata(format!("process {} generation {}", self.p, self.generation))
            .deadline(DEADLINE);
        let profile = self.role.profile;
        let slot =
            SlotOptions::new(profile.requested_limit(self.shared.config.broken)).fair(profile.fair);
        let holder_id = w.holder_id.clone();
        let sent = Instant::now();
        let result = client.try_acquire_slot(&self.name, &options, slot);
        let answered = Instant::now();
        self.count_requests();
        if self.process.generation() != self.generation {
            // The process died during the call: nobody read the answer.
            return;
        }
        let jitter = Duration::from_millis(self.rng.range(0, JITTER_MS));
        let Phase::Waiting(w) = &mut self.role.phase else {
            return;
        };
        w.start.get_or_insert(sent);
        w.next_attempt = answered + ATTEMPT_EVERY + jitter;
        let counts = &mut self.record.counts;
        match result {
            Ok(BlockingSlotGrant::Granted(guard)) => {
                counts.granted += 1;
                self.granted(guard, sent, answered);
            }
            Ok(BlockingSlotGrant::Queued { place }) => {
                counts.queued += 1;
                w.keep_place_to(sent);
                w.last_queued = Some(sent);
                w.first_queued.get_or_insert((sent, answered));
                if self.shared.config.broken == Some(Break::SlotQueue)
                    && self.rng.chance(LEAVE_CHANCE)
                {
                    // Gives up its place: its next attempt joins at the back.
                    let _ = client.leave_queue(&self.name, &holder_id);
                    counts.left_queue += 1;
                    self.count_requests();
                }
                if !profile.fair {
                    let detail = format!("queued at place {place} without asking to be fair");
                    self.violation("slot answers", detail);
                }
            }
            Ok(BlockingSlotGrant::Full(_)) => counts.full += 1,
            Ok(_) => {
                counts.failed += 1;
                let detail = "try-acquire-slot answered a case this member does not know".into();
                self.violation("slot answers", detail);
            }
            Err(e) => {
                counts.failed += 1;
                if !is_fault(&e) {
                    let detail = format!("try-acquire-slot failed unexpectedly: {e}");
                    self.violation("no unexpected errors", detail);
                }
            }
        }
    }

    /// Ends the wait, records the grant and starts holding.
    fn granted(&mut self, guard: LeaseGuard, sent: Instant, at: Instant) {
        let Phase::Waiting(mut w) = std::mem::replace(&mut self.role.phase, Phase::Resting(at))
        else {
            self.let_go_of(guard);
            return;
        };
        let token = guard.token();
        let grant = Grant {
            key: self.key,
            who: self.who(),
            token,
            sent: self.shared.us(sent),
            acked: self.shared.us(at),
        };
        self.record.history.grants.push(grant);
        w.keep_place_to(sent);
        self.end_wait(w, Some((sent, at, token)), at);
        let held = guard.is_held() || self.ignores_guard();
        let now = Instant::now();
        if !held {
            // The answer came after the guard's deadline: never believed.
            self.record.counts.never_held += 1;
            self.let_go_of(guard);
            self.rest(now);
            return;
        }
        let hold = Duration::from_millis(self.rng.range(HOLD_MS.0, HOLD_MS.1));
        self.role.phase = Phase::Holding(Holding {
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
        let us = |at: Instant| self.shared.us(at);
        let pair = |(a, b): (Instant, Instant)| -> (Micros, Micros) { (us(a), us(b)) };
        let wait = Wait {
            key: self.key,
            who: self.who(),
            start: us(start),
            first_queued: w.first_queued.map(pair),
            granted: granted.map(|(sent, at, token)| (us(sent), us(at), token)),
            kept_place_until: us(w.kept_place_until.unwrap_or(end).min(end)),
            end: us(end),
        };
        self.record.history.waits.push(wait);
    }

    /// One look at the guard; gives the slot back when its time is up.
    fn sample(&mut self) {
        let ignores_guard = self.ignores_guard();
        let Phase::Holding(h) = &mut self.role.phase else {
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
            Slot::stop(self, now, Stop::GuardSaidLost);
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
        let Phase::Holding(h) = std::mem::replace(&mut self.role.phase, Phase::Resting(now)) else {
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
        self.role.phase = Phase::Resting(now + rest);
    }

    fn close_term(&mut self, h: &Holding, end: Instant, why: &str) {
        let term = Term {
            key: self.key,
            who: self.who(),
            token: h.token,
            start: self.shared.us(h.start),
            end: self.shared.us(end.max(h.start)),
            ended_by: why.to_string(),
        };
        self.record.history.terms.push(term);
    }
}

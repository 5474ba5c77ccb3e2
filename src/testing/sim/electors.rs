//! A simulation of real `Elector`s whose requests take time.
//!
//! N electors (the real `crate::elector::Elector` over `ClientCore`) contend
//! for one key of one `S3Model`, under one virtual true time. Each has its
//! own host (`node::SimIo`): its own monotonic clock (own origin, rate off by
//! a few hundred ppm, never jumping) and wall clock, and a network where a
//! request takes a few ms, sometimes seconds, sometimes hangs for minutes;
//! where a reply is lost after the store applied the request, or the
//! request never arrives; where the store applies a request at any instant
//! of its life, even after the host gave up on it. Most hosts end a request
//! at its bound (`within_ms`, or the configured request timeout) with a
//! transport error; some ignore bounds, so a reply comes late. Electors
//! resign, crash (at any instant, even mid-request) and restart as new
//! electors with new holder ids.
//!
//! Clocks: under single-object's `holder` rule the wall clocks are skewed by
//! at most a few hundred ms (that rule needs synchronized clocks: at most a
//! quarter of `lease - renew deadline` here) and never jump; under `server`
//! and `observed` they are off by minutes and jump both ways.
//!
//! Steps are synchronous, so each elector runs on a thread of its own that
//! blocks in `send` until virtual time reaches its reply; one scheduler
//! hands a single turn around, so exactly one thread runs at a time and a
//! seed replays exactly. (Nesting other electors' steps inside one `send`
//! would be single-threaded, but a nested step's slow request would hold
//! the outer request past its own end, turning every host into one that
//! ignores timeouts.)
//!
//! The invariants are checked on true time (`acting`): the stretches in
//! which each elector acts as leader, as a caller following the contract
//! would act on the step results, never overlap; tokens rise from leader to
//! leader; no token is granted twice.

mod acting;
mod node;

#[cfg(test)]
mod tests;

pub use acting::Caller;
use acting::{Acting, Summary};
use node::{Clock, Node, RequestPlan};

use super::checks::{violation, Violation};
use super::START_MS;
use crate::client::ClientCore;
use crate::config::{ClientConfig, Strategy, DEFAULT_REQUEST_TIMEOUT_MS};
use crate::elector::{Elector, ElectorConfig};
use crate::expiry::ExpiryClock;
use crate::s3::{S3Request, S3Response};
use crate::testing::rng::Rng;
use crate::testing::s3_model::S3Model;
use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// Every (strategy, expiry clock) the config accepts (epoch-objects has no
/// holder expiry); seed `n` runs combination `n % 5`.
pub const COMBINATIONS: [(Strategy, ExpiryClock); 5] = [
    (Strategy::SingleObject, ExpiryClock::Holder),
    (Strategy::SingleObject, ExpiryClock::Server),
    (Strategy::SingleObject, ExpiryClock::Observed),
    (Strategy::EpochObjects, ExpiryClock::Server),
    (Strategy::EpochObjects, ExpiryClock::Observed),
];

/// One seed's world, drawn from the seed.
#[derive(Debug, Clone)]
pub struct Setup {
    pub strategy: Strategy,
    pub clock: ExpiryClock,
    pub electors: usize,
    pub lease_duration_ms: u64,
    pub renew_deadline_ms: u64,
    pub retry_period_ms: u64,
    pub request_timeout_ms: Option<u32>,
    /// Chance that a (re)started elector's host ignores request bounds.
    pub ignores_timeouts: f64,
    /// Initial wall-clock skew, either way.
    pub max_skew_ms: u64,
    /// Wall clocks jump (never under `holder`).
    pub jumps: bool,
    pub duration_ms: u64,
}

impl Setup {
    fn new(seed: u64, rng: &mut Rng) -> Self {
        let (strategy, clock) = COMBINATIONS[(seed % 5) as usize];
        let lease = [2_000, 4_000, 10_000, 15_000][rng.below(4) as usize];
        // The CLI's ratios (L, L/2, L/6) a third of the time, others
        // otherwise. A renew deadline close to the lease duration leaves the
        // least margin, so bugs in when a lease counts from show there
        // (with L/2, a renew bounded by its deadline cannot be slow enough).
        let (renew, retry) = match rng.below(6) {
            0..=1 => (lease / 2, lease / 6),
            2 => (lease * 2 / 3, lease / 4),
            3 => (lease * 4 / 5, lease / 10),
            4 => (lease * 9 / 10, lease / 20),
            _ => (lease / 3, lease / 12),
        };
        let request_timeout_ms =
            [None, Some(1_000), Some(3_000), Some(30_000)][rng.below(4) as usize];
        let ignores_timeouts = [0.0, 0.3, 0.6][rng.below(3) as usize];
        let holder = clock == ExpiryClock::Holder;
        Setup {
            strategy,
            clock,
            electors: rng.range(3, 5) as usize,
            lease_duration_ms: lease,
            renew_deadline_ms: renew,
            retry_period_ms: retry,
            request_timeout_ms,
            ignores_timeouts,
            max_skew_ms: if holder {
                300.min((lease - renew) / 4)
            } else {
                300_000
            },
            jumps: !holder,
            duration_ms: lease * 30,
        }
    }
}

/// What runs did, so tests can assert the faults really happened.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub seeds: u64,
    pub steps: u64,
    pub grants: u64,
    /// Stretches of acting as leader, and changes of leader between them.
    pub terms: u64,
    pub failovers: u64,
    pub resigns: u64,
    pub crashes: u64,
    pub clock_jumps: u64,
    /// Stretches in which one elector's network was bad (see `Plan::Degrade`).
    pub degraded: u64,
    pub requests: u64,
    /// Requests that would take far longer than any bound.
    pub hung: u64,
    /// Requests a host ended at their bound, with a transport error.
    pub timeouts_honoured: u64,
    /// Requests that outlived their bound on a host that ignores bounds...
    pub timeouts_ignored: u64,
    /// ...of which a reply came, after the bound.
    pub late_replies: u64,
    pub lost_replies: u64,
    pub never_applied: u64,
    /// Timed-out requests the store applied after the host gave up.
    pub applied_after_giving_up: u64,
    pub conflicts: u64,
    /// Pairs of overlapping terms (0 unless the checker failed), and the
    /// longest overlap.
    pub overlaps: u64,
    pub worst_overlap_ms: u64,
}

impl std::ops::AddAssign<&Report> for Report {
    fn add_assign(&mut self, o: &Report) {
        self.seeds += o.seeds;
        self.steps += o.steps;
        self.grants += o.grants;
        self.terms += o.terms;
        self.failovers += o.failovers;
        self.resigns += o.resigns;
        self.crashes += o.crashes;
        self.clock_jumps += o.clock_jumps;
        self.degraded += o.degraded;
        self.requests += o.requests;
        self.hung += o.hung;
        self.timeouts_honoured += o.timeouts_honoured;
        self.timeouts_ignored += o.timeouts_ignored;
        self.late_replies += o.late_replies;
        self.lost_replies += o.lost_replies;
        self.never_applied += o.never_applied;
        self.applied_after_giving_up += o.applied_after_giving_up;
        self.conflicts += o.conflicts;
        self.overlaps += o.overlaps;
        self.worst_overlap_ms = self.worst_overlap_ms.max(o.worst_overlap_ms);
    }
}

/// A request on its way: applied to the store at its key's instant; its
/// reply kept under `reply` for the sender, if one will come.
struct Apply {
    request: S3Request,
    reply: Option<u64>,
}

/// What the world does to the electors' processes.
#[derive(Debug, Clone, Copy)]
enum Plan {
    Crash,
    Restart,
    Jump,
    /// One elector's network goes bad for a while, as congested links do:
    /// first slow (requests take a quarter to a whole lease duration, and
    /// mostly succeed), then silent (one to four lease durations; a third
    /// never arrive, a third lose their reply). Faults in runs: a slow renew
    /// followed by failing ones is what a lease counted from the wrong
    /// instant needs to show.
    Degrade,
}

pub struct World {
    /// True time, ms since `START_MS` (the store's clock is true time).
    now: u64,
    store: S3Model,
    rng: Rng,
    setup: Setup,
    nodes: Vec<Node>,
    /// The one node thread that may run; `None`: the scheduler's turn.
    turn: Option<usize>,
    over: bool,
    panicked: bool,
    applies: BTreeMap<(u64, u64), Apply>,
    replies: BTreeMap<u64, S3Response>,
    plans: BTreeMap<(u64, u64), Plan>,
    seq: u64,
    acting: Acting,
    report: Report,
    violation: Option<Violation>,
}

pub struct Shared {
    world: Mutex<World>,
    turn: Condvar,
}

/// The world, even if a node thread panicked holding it (the panic is
/// reported; what it left half-done no longer matters).
fn lock(shared: &Shared) -> MutexGuard<'_, World> {
    shared.world.lock().unwrap_or_else(PoisonError::into_inner)
}

impl World {
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// A new elector process starting `delay` ms from now.
    fn add_node(&mut self, delay: u64) -> (usize, Elector) {
        let id = self.nodes.len();
        let skew = self.setup.max_skew_ms;
        let node = Node {
            clock: Clock {
                mono_origin: self.rng.below(1 << 40),
                ppm: self.rng.range(0, 400) as i64 - 200,
                wall_offset_ms: self.rng.range(0, 2 * skew) as i64 - skew as i64,
            },
            ignores_timeouts: self.rng.chance(self.setup.ignores_timeouts),
            dead: false,
            slow_until: 0,
            silent_until: 0,
            wake_at: Some(self.now + delay),
        };
        self.nodes.push(node);
        let s = &self.setup;
        let mut raw = crate::testing::raw_config(s.strategy, s.clock);
        raw.request_timeout_ms = s.request_timeout_ms;
        let client = ClientCore::new(ClientConfig::validate(raw).expect("valid config"));
        let config = ElectorConfig {
            key: "leader".into(),
            lease_duration_ms: s.lease_duration_ms,
            renew_deadline_ms: s.renew_deadline_ms,
            retry_period_ms: s.retry_period_ms,
            holder_id: format!("elector-{id}"),
            metadata: String::new(),
        };
        (id, Elector::new(client, config).expect("valid elector"))
    }

    /// Decides how a request goes: how long it takes, whether and when
    /// the store applies it, whether its reply comes. `None`: run over.
    fn plan_request(&mut self, id: usize, request: &S3Request) -> Option<RequestPlan> {
        if self.over {
            return None;
        }
        let r = &mut self.report;
        r.requests += 1;
        let configured = self
            .setup
            .request_timeout_ms
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT_MS);
        let bound = request.within_ms.map_or(configured, |w| w.min(configured));
        let clock = self.nodes[id].clock;
        let start = self.now;
        let bound_at = clock.true_at(clock.mono(start) + u64::from(bound));
        let lease = self.setup.lease_duration_ms;
        let slow = start < self.nodes[id].slow_until;
        let silent = !slow && start < self.nodes[id].silent_until;
        let takes = match self.rng.below(100) {
            _ if slow => self.rng.range(lease / 4, lease),
            _ if silent => self.rng.range(lease, 4 * lease),
            0..=1 => {
                r.hung += 1;
                self.rng.range(20_000, 120_000)
            }
            2..=9 => self.rng.range(200, 4_000),
            _ => self.rng.range(1, 40),
        };
        let natural_end = start + takes;
        let outlives = natural_end > bound_at;
        let timed_out = outlives && !self.nodes[id].ignores_timeouts;
        let end = if timed_out { bound_at } else { natural_end };
        let fate = if silent {
            self.rng.range(0, 9)
        } else {
            self.rng.below(100)
        };
        // 3%: never reaches the store; 3%: applied, but the reply is lost.
        let (applied, reply_lost) = (fate >= 3, (3..6).contains(&fate));
        let apply_at = start + self.rng.range(0, takes);
        let keep = applied && !reply_lost && !timed_out;
        let failure = if timed_out {
            r.timeouts_honoured += 1;
            "timed out"
        } else if !applied {
            r.never_applied += 1;
            "connection reset"
        } else {
            if outlives {
                r.timeouts_ignored += 1;
                r.late_replies += u64::from(!reply_lost);
            }
            if reply_lost {
                r.lost_replies += 1;
            }
            "reply lost"
        };
        if timed_out && applied && apply_at > end {
            r.applied_after_giving_up += 1;
        }
        let reply = keep.then(|| self.next_seq());
        if applied {
            let seq = self.next_seq();
            let request = request.clone();
            self.applies
                .insert((apply_at, seq), Apply { request, reply });
        }
        Some(RequestPlan {
            end,
            reply,
            failure,
        })
    }

    /// A request reaches the store (sometimes meeting a racing write: 409).
    fn apply(&mut self, apply: Apply) {
        let conditional = apply
            .request
            .headers
            .iter()
            .any(|(k, _)| k == "if-match" || k == "if-none-match");
        if conditional && self.rng.chance(0.01) {
            self.store.conflicts = 1;
            self.report.conflicts += 1;
        }
        let reply = self.store.handle(&apply.request);
        self.store.conflicts = 0;
        if let Some(seq) = apply.reply {
            self.replies.insert(seq, reply);
        }
    }

    fn plan(&mut self, at: u64, plan: Plan) {
        let seq = self.next_seq();
        self.plans.insert((at, seq), plan);
    }

    fn alive(&mut self) -> Option<usize> {
        let alive: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| !self.nodes[i].dead)
            .collect();
        (!alive.is_empty()).then(|| alive[self.rng.below(alive.len() as u64) as usize])
    }

    /// Carries out a plan; a restart returns the new elector to start.
    fn carry_out(&mut self, plan: Plan) -> Option<(usize, Elector)> {
        match plan {
            Plan::Crash => {
                let id = self.alive()?;
                // It stops acting (and stepping) the instant it dies; its
                // requests on the way still reach the store.
                self.nodes[id].dead = true;
                self.nodes[id].wake_at = None;
                self.acting.stop(id, self.now);
                self.report.crashes += 1;
                let back = self.now + self.rng.below(2 * self.setup.lease_duration_ms);
                self.plan(back, Plan::Restart);
                None
            }
            Plan::Restart => {
                let delay = self.rng.below(self.setup.retry_period_ms);
                Some(self.add_node(delay))
            }
            Plan::Degrade => {
                let id = self.alive()?;
                let lease = self.setup.lease_duration_ms;
                let node = &mut self.nodes[id];
                node.slow_until = self.now + self.rng.range(0, 2 * lease);
                node.silent_until = node.slow_until + self.rng.range(lease / 2, 3 * lease);
                self.report.degraded += 1;
                None
            }
            Plan::Jump => {
                let id = self.alive()?;
                let jump = self.rng.range(1, 300_000) as i64;
                let sign = if self.rng.chance(0.5) { -1 } else { 1 };
                let offset = &mut self.nodes[id].clock.wall_offset_ms;
                *offset = (*offset + sign * jump).clamp(-900_000, 900_000);
                self.report.clock_jumps += 1;
                None
            }
        }
    }

    /// The next instant anything happens.
    fn next_instant(&self) -> Option<u64> {
        let wake = self
            .nodes
            .iter()
            .filter(|n| !n.dead)
            .filter_map(|n| n.wake_at)
            .min();
        [
            self.applies.keys().next().map(|k| k.0),
            self.plans.keys().next().map(|k| k.0),
            wake,
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// Ends the run however the scheduler leaves (even by a panic), so no node
/// thread waits forever.
struct EndRun(Arc<Shared>);

impl Drop for EndRun {
    fn drop(&mut self) {
        lock(&self.0).over = true;
        self.0.turn.notify_all();
    }
}

fn spawn(shared: &Arc<Shared>, (id, elector): (usize, Elector)) -> JoinHandle<()> {
    let shared = shared.clone();
    std::thread::spawn(move || node::run(shared, id, elector))
}

/// Mixed, so seed n here is not another suite's seed n.
fn rng_of(seed: u64) -> Rng {
    Rng::new(seed ^ 0xE1EC_7025_E1EC_7025)
}

/// Runs one seed with callers of the given kind. The report stands even
/// when an invariant broke (how bad it got is part of it).
pub fn run_seed(seed: u64, caller: Caller) -> (Report, Result<(), Violation>) {
    let mut rng = rng_of(seed);
    let setup = Setup::new(seed, &mut rng);
    let duration = setup.duration_ms;
    let mut world = World {
        now: 0,
        store: S3Model::new(START_MS),
        rng,
        setup,
        nodes: Vec::new(),
        turn: None,
        over: false,
        panicked: false,
        applies: BTreeMap::new(),
        replies: BTreeMap::new(),
        plans: BTreeMap::new(),
        seq: 0,
        acting: Acting::new(caller),
        report: Report {
            seeds: 1,
            ..Report::default()
        },
        violation: None,
    };
    let mut starting = Vec::new();
    for _ in 0..world.setup.electors {
        let delay = world.rng.below(world.setup.retry_period_ms);
        starting.push(world.add_node(delay));
    }
    for _ in 0..world.rng.below(4) {
        let at = world.rng.below(duration);
        world.plan(at, Plan::Crash);
    }
    for _ in 0..world.rng.range(2, 8) {
        let at = world.rng.below(duration);
        world.plan(at, Plan::Degrade);
    }
    if world.setup.jumps {
        for _ in 0..world.rng.range(1, 8) {
            let at = world.rng.below(duration);
            world.plan(at, Plan::Jump);
        }
    }
    let shared = Arc::new(Shared {
        world: Mutex::new(world),
        turn: Condvar::new(),
    });
    let end_run = EndRun(shared.clone());
    let mut threads: Vec<JoinHandle<()>> =
        starting.into_iter().map(|e| spawn(&shared, e)).collect();
    schedule(&shared, duration, &mut threads);
    drop(end_run);
    let mut panicked = false;
    for thread in threads {
        panicked |= thread.join().is_err();
    }
    let mut w = lock(&shared);
    let (summary, checked): (Summary, _) = w.acting.check(duration);
    let mut report = w.report.clone();
    report.grants = summary.grants;
    report.terms = summary.terms;
    report.failovers = summary.failovers;
    report.overlaps = summary.overlaps;
    report.worst_overlap_ms = summary.worst_overlap_ms;
    let result = if panicked || w.panicked {
        Err(violation(
            "nothing panics",
            "an elector thread panicked".into(),
        ))
    } else {
        match w.violation.take() {
            Some(v) => Err(v),
            None => checked,
        }
    };
    (report, result)
}

/// Hands the turn to whatever happens next, until `duration`.
fn schedule(shared: &Arc<Shared>, duration: u64, threads: &mut Vec<JoinHandle<()>>) {
    loop {
        let w = lock(shared);
        let mut w = shared
            .turn
            .wait_while(w, |w| w.turn.is_some() && !w.panicked)
            .unwrap_or_else(PoisonError::into_inner);
        if w.panicked {
            return;
        }
        let Some(at) = w.next_instant().filter(|&at| at <= duration) else {
            return;
        };
        w.now = w.now.max(at);
        w.store.now_ms = START_MS + w.now;
        let now = w.now;
        if let Some(entry) = w.applies.first_entry().filter(|e| e.key().0 <= now) {
            let apply = entry.remove();
            w.apply(apply);
            continue;
        }
        if let Some(entry) = w.plans.first_entry().filter(|e| e.key().0 <= now) {
            let plan = entry.remove();
            if let Some(started) = w.carry_out(plan) {
                drop(w);
                threads.push(spawn(shared, started));
            }
            continue;
        }
        let id = (0..w.nodes.len())
            .find(|&i| !w.nodes[i].dead && w.nodes[i].wake_at.is_some_and(|t| t <= now))
            .expect("something is due");
        w.nodes[id].wake_at = None;
        w.turn = Some(id);
        shared.turn.notify_all();
    }
}

//! The lease gate on virtual time: clients sending requests for a few keys
//! through the gate, against the S3 model, judged by the one set of
//! checkers (`testing::history`).
//!
//! Each request runs as the WASI 0.3 gate runs it, with the real code: the
//! gate's machines (`s3_lease_keep::gate`: `Waiting` for the key, then a
//! `Hold` on it) and the client core the component runs, one client per
//! request (the gate makes one per request). Its attempts are tasks of
//! their own, so the request gives up at the wait's end plus the margin
//! while an attempt is still under way; an attempt given up on releases
//! what it grants (and leaves the queue it joins). Once granted, a keeper
//! renews as the hold says, from before the downstream is called until the
//! exchange is over, and cuts forwarding off when the claim runs out; the
//! exchange (the downstream's head and body, the client) runs beside it.
//!
//! What each request forwarded is its term, from the downstream's call to
//! the body's end, the client's leaving, the downstream's failure or the
//! cut-off: no two terms of a key may overlap. The world is unkind:
//! requests take 1–40 ms, some seconds, some hang until their timeout;
//! replies are lost and requests never arrive; heads and bodies take up to
//! three ttls; clients leave mid-body; downstreams fail; a request's
//! renews fail for a while (its store unreachable); clocks drift.
//!
//! [`Rule`] says which of the hold's orders the driver follows: the gate's
//! own (all), and two broken ones the checkers must catch: renewing only
//! once the head is back (the WASI 0.3 gate's rule before the hold), and
//! forwarding past the claim's end.

use super::process::Clock;
use crate::client::ClientCore;
use crate::config::{ClientConfig, ExpiryClock, Strategy};
use crate::driver::{fair_poll_ms, Io};
use crate::error::Error;
use crate::lease::{Grant, Lease};
use crate::stores::s3::model::S3Model;
use crate::stores::s3::{Endpoint, S3Request, S3Response};
use crate::strategy::single_object::semaphore::SlotOutcome;
use crate::testing::history::{self, History, KeySpec, Rewrite, Term, Violation, Who};
use crate::testing::rng::Rng;
use s3_lease_keep::gate::{Hold, Next, Stage, Try, Waiting};
use s3_lease_keep::guard::Timing;
use s3_lease_keep::wait::Missed;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

const START_MS: u64 = super::START_MS;
const TTL_MS: u64 = 3_000;
const KEYS: usize = 2;
const CLIENTS: usize = 6;
const REQUEST_TIMEOUT_MS: u64 = 2_000;

/// Which of the hold's orders the driver follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// All of them: the gate.
    Gate,
    /// Renews only once the head is back, and never cuts off.
    RenewFromHead,
    /// Renews from the grant, but forwards past the claim's end.
    NoCutOff,
}

/// What a run did, to show its faults happened.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub requests: u64,
    pub store_requests: u64,
    pub forwarded: u64,
    pub answered_held: u64,
    pub attempts_given_up: u64,
    pub late_grants_released: u64,
    pub slow_heads: u64,
    /// Requests whose head came after the ttl, and were still held then.
    pub slow_heads_held: u64,
    pub slow_bodies: u64,
    pub clients_left: u64,
    pub downstreams_failed: u64,
    pub renews_failing: u64,
    pub renews: u64,
    pub releases: u64,
    pub cut_off: u64,
    /// Fair runs: grants the queue-order checker judged, waits that
    /// joined the queue.
    pub fair_grants_checked: u64,
    pub fair_waits: u64,
}

enum Event {
    Poll(usize),
    Apply {
        request: S3Request,
        reply: Rc<RefCell<Option<S3Response>>>,
    },
}

struct World {
    /// True time, ms since the start.
    now: u64,
    store: S3Model,
    rng: Rng,
    seq: u64,
    events: BTreeMap<(u64, u64), Event>,
    history: History,
    report: Report,
    /// Per client: its clock, and until when its requests fail.
    clocks: Vec<Clock>,
    failing: Vec<(u64, u64)>,
    spawned: Vec<Pin<Box<dyn Future<Output = ()>>>>,
}

impl World {
    fn schedule(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.events.insert((at.max(self.now), self.seq), event);
    }

    fn true_at(&self, client: usize, mono: u64) -> u64 {
        self.clocks[client].true_at(mono)
    }

    /// A request sent now: when its sender hears back, and what.
    fn send(&mut self, task: usize, client: usize, request: &S3Request) -> (u64, Fate) {
        self.report.store_requests += 1;
        let bound = request
            .within_ms
            .map_or(REQUEST_TIMEOUT_MS, |w| u64::from(w).min(REQUEST_TIMEOUT_MS));
        let (from, until) = self.failing[client];
        if (from..until).contains(&self.now) {
            let fails_after = match self.rng.below(4) {
                0 => bound,
                _ => self.rng.range(1, 20),
            };
            self.schedule(self.now + fails_after, Event::Poll(task));
            return (self.now + fails_after, Fate::NotApplied);
        }
        let takes = match self.rng.below(100) {
            0..=1 => self.rng.range(3_000, 20_000),
            2..=9 => self.rng.range(200, 1_500),
            _ => self.rng.range(1, 40),
        };
        let timed_out = takes > bound;
        let end = self.now + takes.min(bound);
        let fate = self.rng.below(100);
        let reply = Rc::new(RefCell::new(None));
        if fate >= 3 {
            let at = self.now + self.rng.below(takes);
            let request = request.clone();
            let reply = reply.clone();
            self.schedule(at, Event::Apply { request, reply });
        }
        self.schedule(end, Event::Poll(task));
        let fate = match fate {
            _ if timed_out => Fate::TimedOut,
            0..=2 => Fate::NotApplied,
            3..=5 => Fate::ReplyLost,
            _ => Fate::Reply(reply),
        };
        (end, fate)
    }

    fn who(client: usize, request: u64) -> Who {
        Who {
            actor: client,
            generation: u32::try_from(request).unwrap_or(u32::MAX),
        }
    }
}

enum Fate {
    Reply(Rc<RefCell<Option<S3Response>>>),
    ReplyLost,
    NotApplied,
    TimedOut,
}

/// Sleeps until true time `at` (polled again by the world then).
fn sleep_until(world: &Rc<RefCell<World>>, task: usize, at: u64) -> impl Future<Output = ()> {
    let mut scheduled = false;
    let world = world.clone();
    poll_fn(move |_| {
        let mut w = world.borrow_mut();
        if w.now >= at {
            return Poll::Ready(());
        }
        if !scheduled {
            scheduled = true;
            w.schedule(at, Event::Poll(task));
        }
        Poll::Pending
    })
}

/// The `Io` of one of a request's tasks: the client's clocks, the world's
/// store.
#[derive(Clone)]
struct GateIo {
    world: Rc<RefCell<World>>,
    task: usize,
    client: usize,
}

impl GateIo {
    fn now(&self) -> u64 {
        self.world.borrow().now
    }

    fn mono(&self) -> u64 {
        let w = self.world.borrow();
        w.clocks[self.client].mono(w.now)
    }

    fn sleep_until_mono(&self, mono: u64) -> impl Future<Output = ()> {
        let at = self.world.borrow().true_at(self.client, mono);
        sleep_until(&self.world, self.task, at)
    }
}

impl Io for GateIo {
    async fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        let (end, fate) = self
            .world
            .borrow_mut()
            .send(self.task, self.client, request);
        sleep_until(&self.world, self.task, end).await;
        match fate {
            Fate::Reply(reply) => reply
                .borrow_mut()
                .take()
                .ok_or_else(|| Error::Transport("no reply".into())),
            Fate::ReplyLost => Err(Error::Transport("reply lost".into())),
            Fate::NotApplied => Err(Error::Transport("connection reset".into())),
            Fate::TimedOut => Err(Error::Transport("timed out".into())),
        }
    }

    fn now_ms(&mut self) -> u64 {
        let w = self.world.borrow();
        w.clocks[self.client].wall(w.now)
    }

    fn monotonic_ms(&mut self) -> u64 {
        self.mono()
    }

    async fn sleep_ms(&mut self, ms: u64) {
        let mono = self.mono();
        self.sleep_until_mono(mono + ms).await;
    }

    fn random_u64(&mut self) -> u64 {
        self.world.borrow_mut().rng.next_u64()
    }

    fn endpoint(&self) -> Option<Endpoint> {
        Some(Endpoint {
            store: &crate::stores::s3::PROFILE,
            url: crate::testing::model_io::MODEL_ENDPOINT.into(),
        })
    }
}

/// What the downstream and the client do with one request, in ms after
/// the downstream is called.
#[derive(Debug, Clone, Copy)]
struct Exchange {
    head_after: u64,
    body_for: u64,
    /// The client leaves this long after the head, before the body's end.
    leaves_after: Option<u64>,
    fails: bool,
}

impl Exchange {
    fn plan(rng: &mut Rng, report: &mut Report) -> Exchange {
        let slow = |rng: &mut Rng, n: &mut u64| {
            if rng.chance(0.15) {
                *n += 1;
                rng.range(TTL_MS, 3 * TTL_MS)
            } else {
                rng.range(1, 40)
            }
        };
        let head_after = slow(rng, &mut report.slow_heads);
        let body_for = slow(rng, &mut report.slow_bodies);
        let leaves_after = rng.chance(0.1).then(|| rng.below(body_for));
        report.clients_left += u64::from(leaves_after.is_some());
        let fails = rng.chance(0.05);
        report.downstreams_failed += u64::from(fails);
        Exchange {
            head_after,
            body_for,
            leaves_after,
            fails,
        }
    }
}

/// One run: a seed, the driver's rule, plain locks or the fair queue.
pub struct GateSim {
    world: Rc<RefCell<World>>,
    duration_ms: u64,
}

struct Request {
    io: GateIo,
    key: usize,
    who: Who,
    rule: Rule,
    fair: bool,
    wait_ms: u64,
}

impl GateSim {
    pub fn new(seed: u64, rule: Rule, fair: bool, duration_ms: u64) -> GateSim {
        let mut rng = Rng::new(seed ^ 0x6A7E_6A7E_6A7E_6A7E);
        let clocks = (0..CLIENTS)
            .map(|_| Clock {
                mono_origin: rng.below(1 << 40),
                ppm: rng.range(0, 400) as i64 - 200,
                wall_offset_ms: 0,
                asleep: Default::default(),
            })
            .collect();
        let keys = (0..KEYS)
            .map(|k| KeySpec {
                name: format!("k{k}"),
                limit: 1,
                fair,
                exclusion_checked: true,
                exact_acks: false,
            })
            .collect();
        let world = Rc::new(RefCell::new(World {
            now: 0,
            store: S3Model::new(START_MS),
            rng,
            seq: 0,
            events: BTreeMap::new(),
            history: History::new(keys),
            report: Report::default(),
            clocks,
            failing: vec![(0, 0); CLIENTS],
            spawned: Vec::new(),
        }));
        for client in 0..CLIENTS {
            let wait_ms = world.borrow_mut().rng.range(200, 2_500);
            let world2 = world.clone();
            let task = spawn(&world, move |task| {
                Box::pin(run_client(world2, task, client, rule, fair, wait_ms))
            });
            world.borrow_mut().schedule(0, Event::Poll(task));
        }
        GateSim { world, duration_ms }
    }

    /// Runs to its end and judges the history.
    pub fn run(self) -> (Report, Result<history::Checked, Violation>) {
        loop {
            let next = {
                let mut w = self.world.borrow_mut();
                match w.events.first_key_value() {
                    Some((&(at, _), _)) if at <= self.duration_ms => {
                        let (_, event) = w.events.pop_first().expect("an event");
                        let passed = at - w.now;
                        w.store.advance(passed);
                        w.now = at;
                        Some(event)
                    }
                    _ => None,
                }
            };
            match next {
                None => break,
                Some(Event::Apply { request, reply }) => {
                    let mut w = self.world.borrow_mut();
                    let answer = w.store.handle(&request);
                    *reply.borrow_mut() = Some(answer);
                }
                Some(Event::Poll(task)) => poll_task(&self.world, task),
            }
        }
        // Terms still open end with the run.
        let mut w = self.world.borrow_mut();
        let end = w.now * 1_000;
        for t in w.history.terms.iter_mut().filter(|t| t.end == u64::MAX) {
            t.end = end;
        }
        for wait in w.history.waits.iter_mut().filter(|x| x.end == u64::MAX) {
            wait.end = end;
            wait.kept_place_until = wait.kept_place_until.min(end);
        }
        let checked = history::check(&w.history);
        let mut report = w.report;
        report.fair_grants_checked = checked.fair_grants_checked as u64;
        report.fair_waits = checked.fair_waits as u64;
        let result = match checked.violations.first().cloned() {
            Some(v) => Err(v),
            None => Ok(checked),
        };
        (report, result)
    }
}

/// Adds a task (`make` gets its id); the world polls it on its events.
fn spawn(
    world: &Rc<RefCell<World>>,
    make: impl FnOnce(usize) -> Pin<Box<dyn Future<Output = ()>>>,
) -> usize {
    let task = world.borrow().spawned.len();
    let future = make(task);
    world.borrow_mut().spawned.push(future);
    task
}

fn poll_task(world: &Rc<RefCell<World>>, task: usize) {
    // Taken out while polled: the task may borrow the world, or spawn.
    let mut future = std::mem::replace(
        &mut world.borrow_mut().spawned[task],
        Box::pin(std::future::pending()),
    );
    let mut cx = Context::from_waker(Waker::noop());
    if future.as_mut().poll(&mut cx).is_pending() {
        world.borrow_mut().spawned[task] = future;
    }
}

async fn run_client(
    world: Rc<RefCell<World>>,
    task: usize,
    client: usize,
    rule: Rule,
    fair: bool,
    wait_ms: u64,
) {
    let io = GateIo {
        world: world.clone(),
        task,
        client,
    };
    for n in 0.. {
        let key = world.borrow_mut().rng.below(KEYS as u64) as usize;
        let request = Request {
            io: io.clone(),
            key,
            who: World::who(client, n),
            rule,
            fair,
            wait_ms,
        };
        gate_request(request).await;
        let think = world.borrow_mut().rng.below(50);
        sleep_until(&world, task, io.now() + think + 1).await;
    }
}

fn config() -> ClientConfig {
    let raw = crate::testing::raw_config(Strategy::SingleObject, ExpiryClock::Server);
    let mut raw = raw;
    raw.request_timeout_ms = Some(REQUEST_TIMEOUT_MS as u32);
    ClientConfig::validate(raw).expect("a valid config")
}

/// What an attempt came back with, for the request that waits on it.
enum Attempted {
    Granted(Lease),
    Missed(Missed),
    Failed,
}

type AttemptSlot = Rc<RefCell<Option<(ClientCore, Attempted)>>>;

/// One attempt, a task of its own: its outcome goes to `slot`, unless the
/// request gave up on it first (`abandoned`): then a grant is released
/// and a place in the queue left.
fn spawn_attempt(
    r: &Request,
    mut core: ClientCore,
    grant: Grant,
    abandoned: Rc<Cell<bool>>,
) -> AttemptSlot {
    let slot: AttemptSlot = Rc::new(RefCell::new(None));
    let (world, client, key, fair) = (r.io.world.clone(), r.io.client, r.key, r.fair);
    let requester = r.io.task;
    let out = slot.clone();
    let task = spawn(&r.io.world, move |task| {
        let mut io = GateIo {
            world,
            task,
            client,
        };
        Box::pin(async move {
            let name = format!("k{key}");
            let attempted = if fair {
                match core.try_acquire_slot(&mut io, &name, &grant, 1, true).await {
                    Ok(SlotOutcome::Granted(lease)) => Attempted::Granted(lease),
                    Ok(SlotOutcome::Queued { .. }) => Attempted::Missed(Missed::Queued),
                    Ok(SlotOutcome::Full(seen)) => Attempted::Missed(Missed::Held {
                        expires_in_ms: seen.map(|s| s.expires_in_ms),
                    }),
                    Ok(_) => Attempted::Missed(Missed::Undecided),
                    Err(e) if e.is_transient() => Attempted::Missed(Missed::Undecided),
                    Err(_) => Attempted::Failed,
                }
            } else {
                match core.acquire(&mut io, &name, &grant, 0).await {
                    Ok(lease) => Attempted::Granted(lease),
                    Err(Error::Timeout { holder, .. }) => Attempted::Missed(Missed::Held {
                        expires_in_ms: holder.map(|s| s.expires_in_ms),
                    }),
                    Err(e) if e.is_transient() => Attempted::Missed(Missed::Undecided),
                    Err(_) => Attempted::Failed,
                }
            };
            if abandoned.get() {
                clean_up(&mut io, &mut core, &name, &grant, attempted, fair).await;
            } else {
                *out.borrow_mut() = Some((core, attempted));
                let w = &mut *io.world.borrow_mut();
                let now = w.now;
                w.schedule(now, Event::Poll(requester));
            }
        })
    });
    r.io.world.borrow_mut().schedule(0, Event::Poll(task));
    slot
}

/// What an attempt given up on leaves behind: its grant released, its
/// place in the queue left (best effort: else they lapse).
async fn clean_up(
    io: &mut GateIo,
    core: &mut ClientCore,
    key: &str,
    grant: &Grant,
    attempted: Attempted,
    fair: bool,
) {
    match attempted {
        Attempted::Granted(lease) => {
            io.world.borrow_mut().report.late_grants_released += 1;
            let _ = core.rewrite(io, lease, true).await;
        }
        _ if fair => {
            let _ = core.leave_queue(io, key, &grant.holder_id).await;
        }
        _ => {}
    }
}

/// One request through the gate: wait for its key, then forward it while
/// the hold says so.
async fn gate_request(r: Request) {
    let world = r.io.world.clone();
    world.borrow_mut().report.requests += 1;
    let name = format!("k{}", r.key);
    let holder_id = format!("gate-{}-{}", r.who.actor, r.who.generation);
    let grant = Grant::new(TTL_MS, holder_id, "s3-lease-gate".into()).expect("a grant");
    let timing = Timing::for_ttl(TTL_MS);
    let mut core = Some(ClientCore::new(config()));
    let mut waiting = Waiting::new(r.io.mono(), r.wait_ms);
    let mut wait_record = history::Wait {
        key: r.key,
        who: r.who,
        start: r.io.now() * 1_000,
        first_queued: None,
        granted: None,
        kept_place_until: u64::MAX,
        end: u64::MAX,
    };
    let keep_gap = TTL_MS / 3;
    let mut last_queued: Option<u64> = None;
    // The wait.
    let granted = loop {
        match waiting.poll(r.io.mono()) {
            Try::Attempt => {
                let sent = r.io.now();
                if let Some(previous) = last_queued.filter(|&p| sent > p + keep_gap) {
                    wait_record.kept_place_until = wait_record
                        .kept_place_until
                        .min((previous + keep_gap) * 1_000);
                }
                let abandoned = Rc::new(Cell::new(false));
                let slot = spawn_attempt(
                    &r,
                    core.take().expect("the request's client"),
                    grant.clone(),
                    abandoned.clone(),
                );
                let give_up_at = world.borrow().true_at(r.io.client, waiting.give_up_at());
                let done = {
                    let slot = slot.clone();
                    let world = world.clone();
                    let mut scheduled = false;
                    poll_fn(move |_| {
                        if slot.borrow().is_some() {
                            return Poll::Ready(true);
                        }
                        let mut w = world.borrow_mut();
                        if w.now >= give_up_at {
                            return Poll::Ready(false);
                        }
                        if !scheduled {
                            scheduled = true;
                            w.schedule(give_up_at, Event::Poll(r.io.task));
                        }
                        Poll::Pending
                    })
                };
                let answered = done.await;
                if !answered {
                    // Given up on: the attempt cleans up after itself.
                    abandoned.set(true);
                    world.borrow_mut().report.attempts_given_up += 1;
                    let _ = waiting.poll(r.io.mono());
                    break None;
                }
                let (returned, attempted) = slot.borrow_mut().take().expect("an outcome");
                core = Some(returned);
                let now = r.io.mono();
                match attempted {
                    Attempted::Granted(lease) => {
                        let Some(hold) = waiting.granted(timing, now) else {
                            // Unreachable: the request waited for it.
                            break None;
                        };
                        if r.fair {
                            wait_record.granted =
                                Some((sent * 1_000, r.io.now() * 1_000, lease.token));
                        }
                        break Some((lease, hold, sent));
                    }
                    Attempted::Missed(missed) => {
                        if missed == Missed::Queued {
                            if wait_record.first_queued.is_none() {
                                wait_record.first_queued = Some((sent * 1_000, r.io.now() * 1_000));
                            }
                            last_queued = Some(sent);
                        }
                        let random = world.borrow_mut().rng.next_u64();
                        waiting.missed(now, missed, random, fair_poll_ms(TTL_MS));
                    }
                    Attempted::Failed => break None,
                }
            }
            Try::WakeAt(at) => r.io.sleep_until_mono(at).await,
            Try::GiveUp(_) => break None,
        }
    };
    let Some((lease, hold, sent)) = granted else {
        world.borrow_mut().report.answered_held += 1;
        if r.fair {
            // The place is given up as the leave is sent.
            let queued = wait_record.first_queued.is_some();
            close_wait(&r, wait_record, last_queued, keep_gap);
            if let Some(core) = core.as_mut().filter(|_| queued) {
                let mut io = r.io.clone();
                let _ = core.leave_queue(&mut io, &name, &grant.holder_id).await;
            }
        }
        return;
    };
    if r.fair {
        close_wait(&r, wait_record, last_queued, keep_gap);
    }
    let acked = r.io.now() * 1_000;
    world.borrow_mut().history.grants.push(history::Grant {
        key: r.key,
        who: r.who,
        token: lease.token,
        sent: sent * 1_000,
        acked,
    });
    let core = core.expect("the request's client");
    forward(r, core, lease, hold).await;
}

fn close_wait(r: &Request, mut record: history::Wait, last_queued: Option<u64>, keep_gap: u64) {
    let now = r.io.now();
    if let Some(previous) = last_queued.filter(|&p| now > p + keep_gap) {
        record.kept_place_until = record.kept_place_until.min((previous + keep_gap) * 1_000);
    }
    record.end = now * 1_000;
    record.kept_place_until = record.kept_place_until.min(record.end);
    r.io.world.borrow_mut().history.waits.push(record);
}

/// Shared by a granted request's keeper and its exchange.
struct Forwarding {
    hold: Hold,
    /// The term's start (µs), while it is open; its index in the history.
    term: Option<usize>,
    /// The exchange is over (or forwarding stopped).
    over: bool,
    /// Set by the exchange when it moves on: the keeper looks again.
    moved: bool,
}

fn close_term(world: &Rc<RefCell<World>>, f: &mut Forwarding, why: &str) {
    if let Some(i) = f.term.take() {
        let mut w = world.borrow_mut();
        let now = w.now * 1_000;
        let term = &mut w.history.terms[i];
        term.end = now;
        term.ended_by = why.into();
    }
}

/// A granted request: the keeper and the exchange, side by side.
async fn forward(r: Request, core: ClientCore, lease: Lease, hold: Hold) {
    let world = r.io.world.clone();
    let exchange = {
        let w = &mut *world.borrow_mut();
        let plan = Exchange::plan(&mut w.rng, &mut w.report);
        if w.rng.chance(0.1) {
            // This request's store is unreachable for a while: its renews fail.
            w.report.renews_failing += 1;
            let from = w.now + w.rng.below(2 * TTL_MS);
            w.failing[r.io.client] = (from, from + w.rng.range(TTL_MS / 5, 2 * TTL_MS));
        }
        plan
    };
    let shared = Rc::new(RefCell::new(Forwarding {
        hold,
        term: None,
        over: false,
        moved: false,
    }));
    let token = lease.token;
    let keeper = keep(&r, core, lease, shared.clone());
    let exchanging = exchange_for(&r, exchange, shared.clone(), token);
    let mut keeper = std::pin::pin!(keeper);
    let mut exchanging = std::pin::pin!(exchanging);
    let (mut kept, mut exchanged) = (false, false);
    poll_fn(|cx| {
        if !exchanged {
            exchanged = exchanging.as_mut().poll(cx).is_ready();
        }
        if !kept {
            kept = keeper.as_mut().poll(cx).is_ready();
        }
        if kept && exchanged {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    world.borrow_mut().failing[r.io.client] = (0, 0);
}

/// Sleeps until the client's monotonic `mono`, or until the exchange
/// moves on.
async fn nap(io: &GateIo, shared: &Rc<RefCell<Forwarding>>, mono: u64) {
    let at = if mono == u64::MAX {
        u64::MAX
    } else {
        io.world.borrow().true_at(io.client, mono)
    };
    let mut scheduled = false;
    poll_fn(|_| {
        if std::mem::take(&mut shared.borrow_mut().moved) {
            return Poll::Ready(());
        }
        let mut w = io.world.borrow_mut();
        if w.now >= at {
            return Poll::Ready(());
        }
        if !scheduled && at != u64::MAX {
            scheduled = true;
            w.schedule(at, Event::Poll(io.task));
        }
        Poll::Pending
    })
    .await
}

/// The keeper: does what the hold says (as the rule allows).
async fn keep(
    r: &Request,
    mut core: ClientCore,
    mut lease: Lease,
    shared: Rc<RefCell<Forwarding>>,
) {
    let mut io = r.io.clone();
    let world = io.world.clone();
    let record = |lease: &Lease, sent: u64, release: bool| {
        let w = &mut *world.borrow_mut();
        w.history.rewrites.push(Rewrite {
            key: r.key,
            who: r.who,
            token: lease.token,
            sent: sent * 1_000,
            release,
            spent: None,
        });
        if release {
            w.report.releases += 1;
        } else {
            w.report.renews += 1;
        }
    };
    loop {
        if r.rule == Rule::RenewFromHead {
            // The old rule: nothing until the head is back.
            let before_head = {
                let f = shared.borrow();
                f.hold.stage() == Stage::Called && !f.over
            };
            if before_head {
                nap(&io, &shared, u64::MAX).await;
                continue;
            }
        }
        let now = io.mono();
        let next = shared.borrow_mut().hold.poll(now);
        match next {
            Next::Renew => {
                let sent = io.now();
                let mut renew_io = io.clone();
                let renewing = core.rewrite(&mut renew_io, lease.clone(), false);
                let mut renewing = std::pin::pin!(renewing);
                // The claim runs out at its time whatever the renew does:
                // the keeper looks at the hold at that instant too.
                let result = loop {
                    let until = shared.borrow().hold.held_until(io.mono());
                    let woke = {
                        let napping = nap(&io, &shared, until.unwrap_or(u64::MAX));
                        let mut napping = std::pin::pin!(napping);
                        poll_fn(|cx| {
                            if let Poll::Ready(r) = renewing.as_mut().poll(cx) {
                                return Poll::Ready(Some(r));
                            }
                            napping.as_mut().poll(cx).map(|()| None)
                        })
                        .await
                    };
                    match woke {
                        Some(result) => break result,
                        None => {
                            let now = io.mono();
                            let next = shared.borrow_mut().hold.poll(now);
                            if let Next::CutOff(_) = next {
                                cut_off(r, &world, &shared, now);
                            }
                        }
                    }
                };
                let now = io.mono();
                let mut f = shared.borrow_mut();
                match result {
                    Ok(renewed) => {
                        f.hold.renewed(now);
                        record(&lease, sent, false);
                        lease = renewed;
                    }
                    Err(Error::Lost { .. }) => f.hold.renew_refused(now),
                    Err(e) => f.hold.renew_failed(now, e.is_transient()),
                }
            }
            Next::WakeAt(at) => nap(&io, &shared, at).await,
            Next::CutOff(_) => cut_off(r, &world, &shared, now),
            Next::Release => {
                let sent = io.now();
                if core.rewrite(&mut io, lease.clone(), true).await.is_ok() {
                    record(&lease, sent, true);
                }
                return;
            }
            Next::Done => return,
        }
    }
}

/// The claim ran out: forwarding stops now (as the rule allows).
fn cut_off(r: &Request, world: &Rc<RefCell<World>>, shared: &Rc<RefCell<Forwarding>>, now: u64) {
    world.borrow_mut().report.cut_off += 1;
    if r.rule == Rule::Gate {
        let mut f = shared.borrow_mut();
        close_term(world, &mut f, "cut off: the claim ran out");
        f.over = true;
        f.hold.finished(now);
    }
}

/// The exchange: the downstream called, its head, its body, the client.
async fn exchange_for(r: &Request, plan: Exchange, shared: Rc<RefCell<Forwarding>>, token: u64) {
    let io = &r.io;
    let world = io.world.clone();
    let gate = r.rule == Rule::Gate;
    let finish = |why: &str| {
        let mut f = shared.borrow_mut();
        close_term(&world, &mut f, why);
        if !f.over {
            f.over = true;
            let now = io.mono();
            f.hold.finished(now);
        }
        f.moved = true;
    };
    {
        let mut f = shared.borrow_mut();
        let now = io.mono();
        if !f.hold.calling(now) && gate {
            drop(f);
            finish("never forwarded");
            return;
        }
        let w = &mut *world.borrow_mut();
        w.report.forwarded += 1;
        f.term = Some(w.history.terms.len());
        w.history.terms.push(Term {
            key: r.key,
            who: r.who,
            token,
            start: w.now * 1_000,
            end: u64::MAX,
            ended_by: String::new(),
        });
    }
    let called = io.now();
    // Until `at` (true time), or until forwarding is cut off.
    let until = |at: u64| {
        let mut scheduled = false;
        let shared = shared.clone();
        let world = world.clone();
        let task = io.task;
        poll_fn(move |_| {
            if shared.borrow().over {
                return Poll::Ready(false);
            }
            let mut w = world.borrow_mut();
            if w.now >= at {
                return Poll::Ready(true);
            }
            if !scheduled {
                scheduled = true;
                w.schedule(at, Event::Poll(task));
            }
            Poll::Pending
        })
    };
    if !until(called + plan.head_after).await {
        return;
    }
    if plan.fails {
        finish("the downstream failed");
        return;
    }
    let head_at = io.now();
    {
        let mut f = shared.borrow_mut();
        let now = io.mono();
        let relayed = f.hold.head(now);
        if plan.head_after >= TTL_MS && relayed {
            world.borrow_mut().report.slow_heads_held += 1;
        }
        f.moved = true;
        if !relayed && gate {
            drop(f);
            finish("cut off before the head");
            return;
        }
    }
    let (end, why) = match plan.leaves_after {
        Some(after) => (head_at + after, "the client left"),
        None => (head_at + plan.body_for, "the body ended"),
    };
    if until(end).await {
        finish(why);
    }
}

#[cfg(test)]
mod tests {
    //! `S3LEASE_GATE_SIM_SEEDS=<n>` runs n seeds of each mode (default 4);
    //! `S3LEASE_GATE_SIM_SEED=<n>` replays one.
    use super::*;

    const MINUTES: u64 = 5;

    fn seeds() -> std::ops::Range<u64> {
        let var = |name| {
            std::env::var(name)
                .ok()
                .and_then(|v: String| v.parse::<u64>().ok())
        };
        match var("S3LEASE_GATE_SIM_SEED") {
            Some(seed) => seed..seed + 1,
            None => 0..var("S3LEASE_GATE_SIM_SEEDS").unwrap_or(4),
        }
    }

    fn run_seeds(
        rule: Rule,
        fair: bool,
        seeds: std::ops::Range<u64>,
    ) -> Result<Report, (u64, Violation)> {
        let mut total = Report::default();
        for seed in seeds {
            let (report, result) = GateSim::new(seed, rule, fair, MINUTES * 60_000).run();
            macro_rules! add {
                ($($f:ident),*) => { $(total.$f += report.$f;)* };
            }
            add!(
                requests,
                store_requests,
                forwarded,
                answered_held,
                attempts_given_up,
                late_grants_released,
                slow_heads,
                slow_heads_held,
                slow_bodies,
                clients_left,
                downstreams_failed,
                renews_failing,
                renews,
                releases,
                cut_off,
                fair_grants_checked,
                fair_waits
            );
            result.map_err(|v| (seed, v))?;
        }
        Ok(total)
    }

    /// No two requests of a key forwarded at once, whatever the heads,
    /// bodies, clients and renews do; and each fault happened: heads
    /// slower than the ttl held through, forwarding cut off where the
    /// claim ran out, attempts given up on at the wait plus the margin.
    fn the_gate_forwards_one_request_per_key(fair: bool) {
        let seeds = seeds();
        let n = seeds.end - seeds.start;
        let report = run_seeds(Rule::Gate, fair, seeds)
            .unwrap_or_else(|(seed, v)| panic!("fair {fair}, seed {seed}: {v}"));
        println!("the gate (fair {fair}), {n} seeds of {MINUTES} simulated minutes: {report:?}");
        // The fair queue forwards fewer: waiters in line behind slow
        // exchanges give up.
        let per = if fair { 3 } else { 1 };
        let at_least = |what: &str, got: u64, floor: u64| {
            let floor = floor * n / 4 / per;
            assert!(got >= floor, "{what}: {got} < {floor}: {report:?}");
        };
        at_least("forwarded", report.forwarded, 400);
        at_least("slow heads held past the ttl", report.slow_heads_held, 30);
        at_least("slow bodies", report.slow_bodies, 30);
        at_least("clients that left", report.clients_left, 20);
        at_least("requests whose renews failed", report.renews_failing, 20);
        at_least("cut off", report.cut_off, 10);
        at_least("attempts given up on", report.attempts_given_up, 100);
        at_least("renews", report.renews, 400);
        at_least("releases", report.releases, 300);
        if fair {
            at_least("fair grants checked", report.fair_grants_checked, 600);
            at_least("waits in the queue", report.fair_waits, 1_500);
        }
    }

    #[test]
    fn the_gate_forwards_one_request_per_key_through_slow_heads_slow_bodies_leaving_clients_and_failing_renews(
    ) {
        the_gate_forwards_one_request_per_key(false);
    }

    #[test]
    fn the_fair_gate_forwards_one_request_per_key_in_queue_order_through_the_same() {
        the_gate_forwards_one_request_per_key(true);
    }

    /// Renewing only from the head (the WASI 0.3 gate before its hold): a
    /// head slower than the ttl loses the key, and a second request is
    /// forwarded while the first still is. The checkers must see it.
    #[test]
    fn renewing_only_from_the_head_lets_a_second_request_in() {
        let found = run_seeds(Rule::RenewFromHead, false, 0..6);
        let (seed, v) = found.expect_err("the checkers found no overlap");
        println!("renewing from the head: seed {seed}: {v}");
        assert_eq!(
            v.invariant, "never more believed holders than the limit",
            "{v}"
        );
    }

    /// Forwarding past the claim's end (renewing from the grant, but no
    /// cut-off): a request whose renews fail goes on beside the next.
    #[test]
    fn forwarding_past_the_claim_lets_a_second_request_in() {
        let found = run_seeds(Rule::NoCutOff, false, 0..6);
        let (seed, v) = found.expect_err("the checkers found no overlap");
        println!("no cut-off: seed {seed}: {v}");
        assert_eq!(
            v.invariant, "never more believed holders than the limit",
            "{v}"
        );
    }
}

//! The member's role on an elected key: one process's campaign, run by
//! the product's host [`Elector`] over the member's [`Client`]; the
//! member's thread watches it and writes the key's fenced object while it
//! leads.
//!
//! Belief is what the product reports, nothing of the soak's own: the
//! member leads while `Elector::leading_until()` is `Some(until)` with
//! `until` ahead, sampled every [`TICK`]. A term is recorded from the first
//! observation that it leads to the first of: the last `leading_until` it
//! observed (the product's promise: a caller may act as leader until then
//! without looking again), the observation that it stopped (a sample, or a
//! `StoppedLeading` event), its process's crash, or the end of the run.
//!
//! With `--no-watchdog` the elector is [`Unwatched`] instead: a caller that
//! believes the last step it got back, ignoring the deadline; its belief
//! has no promised end, so it lasts until a step says otherwise.

use super::{violation, Member, Role, Stop};
use crate::bindings::ElectorConfig as WitElectorConfig;
use crate::hooks::{is_fault, is_fault_error, Hooks};
use crate::instance::SkewedClock;
use crate::records::lease_of;
use crate::soak::record::{self, micros_since, LeaderFault, Violation};
use crate::soak::unwatched::Unwatched;
use crate::soak::{
    key_name, Shared, LEASE_MS, NOBODY, RENEW_DEADLINE_MS, RETRY_MS, WRITE_EVERY_MS,
};
use s3_lease::testing::history::{FencedOp, FencedOutcome, Grant, Term, Who};
use s3_lease_host::blocking::{Client, Elector};
use s3_lease_host::raw::RawInstance;
use s3_lease_host::{ElectionEvent, ElectorConfig, ErrorKind, InstanceOptions, LeaseRecord};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a member looks at its elector.
const TICK: Duration = Duration::from_millis(5);
/// The share of leaders' writes that are fenced deletes (tombstones).
const DELETE_CHANCE: f64 = 0.03;
/// The chance that a leader, back from a pause past its lease, writes with
/// its old lease before it looks at its elector (the case fencing exists for).
const ZOMBIE_CHANCE: f64 = 0.5;
/// "Leads until further notice": the promise of a caller without a watchdog.
const UNTIL_TOLD: Duration = Duration::from_secs(24 * 3600);

/// What the member knows it leads with, from one look at its elector.
struct Led {
    lease: LeaseRecord,
    /// Leadership ends at this instant unless renewed first.
    until: Instant,
    /// No later than the grant of `lease.token`.
    granted_after: Instant,
}

/// An elector's event as the member judges it: the product's, or the
/// unwatched caller's (which reads the bindings' events).
pub(crate) enum Event {
    BecameLeader(u64),
    /// The reason, as `Debug` shows it.
    StoppedLeading(String),
    LeaderChanged,
    Failed(String),
    /// A kind of event this member does not know (the product's list may
    /// grow): counted, not judged.
    Other,
}

impl Event {
    fn of(event: ElectionEvent) -> Self {
        match event {
            ElectionEvent::BecameLeader(lease) => Event::BecameLeader(lease.token),
            ElectionEvent::StoppedLeading(reason) => Event::StoppedLeading(format!("{reason:?}")),
            ElectionEvent::LeaderChanged(_) => Event::LeaderChanged,
            ElectionEvent::Failed(message) => Event::Failed(message),
            _ => Event::Other,
        }
    }
}

/// Why an elector's last step failed, and the kind of injected fault that
/// explains it (`None`: no fault does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepError {
    pub message: String,
    pub fault: Option<&'static str>,
}

/// The campaign of one process for the member's key.
enum Campaign {
    Product(Elector),
    Unwatched(Unwatched),
}

impl Campaign {
    fn leading(&self) -> Option<Led> {
        match self {
            Campaign::Product(e) => {
                let until = e.leading_until()?;
                let lease = e.leader_lease()?;
                Some(Led {
                    lease,
                    until,
                    // `leading-until-ms` is when the step that granted or
                    // last renewed began, plus the renew deadline: when the
                    // lease is first seen, its grant's step (or, if the
                    // member overslept a renew, a later one: the grant is
                    // no later than that renew's start either way when
                    // nothing else went wrong).
                    granted_after: until
                        .checked_sub(Duration::from_millis(RENEW_DEADLINE_MS))
                        .unwrap_or(until),
                })
            }
            Campaign::Unwatched(u) => {
                let (lease, since) = u.leading()?;
                Some(Led {
                    lease,
                    until: Instant::now() + UNTIL_TOLD,
                    granted_after: since,
                })
            }
        }
    }

    fn next_event(&mut self) -> Option<Event> {
        match self {
            Campaign::Product(e) => e.try_event().map(Event::of),
            Campaign::Unwatched(u) => u.events().try_recv().ok(),
        }
    }

    fn last_error(&self) -> Option<StepError> {
        match self {
            Campaign::Product(e) => e.last_failure().map(|e| StepError {
                message: e.to_string(),
                fault: is_fault(&e).then(|| e.kind().name()),
            }),
            Campaign::Unwatched(u) => u.last_error(),
        }
    }

    /// Stops without resigning; may wait for a step under way.
    fn abandon(self) {
        match self {
            Campaign::Product(e) => e.abandon(),
            Campaign::Unwatched(u) => u.abandon(),
        }
    }
}

/// The process's fenced calls: on the elector's client (calls take turns
/// with its steps, as in a program that shares one client).
#[derive(Clone)]
enum Calls {
    Client(Client),
    Raw(Arc<Mutex<RawInstance>>),
}

/// What a fenced call got back, from either kind of caller.
enum Reply {
    Written {
        object_key: String,
        token: u64,
        previous_token: Option<u64>,
    },
    Deleted,
    Fenced(Refusal),
    /// Any other error: its kind's name, and whether an injected fault
    /// explains it.
    Failed {
        kind: &'static str,
        fault: bool,
        detail: String,
    },
}

/// A fenced write's refusal: a newer token already wrote.
#[derive(Debug)]
struct Refusal {
    object_key: String,
    our_token: u64,
    stored_token: u64,
}

/// `Err`: a trap.
type CallResult = Result<Reply, String>;

impl Calls {
    fn fenced(&self, lease: &LeaseRecord, object: &str, body: Option<&[u8]>) -> CallResult {
        match self {
            Calls::Client(c) => {
                let result = match body {
                    Some(body) => c
                        .fenced_put(lease, object, body, "application/json")
                        .map(|w| Reply::Written {
                            object_key: w.object_key,
                            token: w.token,
                            previous_token: w.previous_token,
                        }),
                    None => c.fenced_delete(lease, object).map(|()| Reply::Deleted),
                };
                match result {
                    Ok(reply) => Ok(reply),
                    Err(e) if matches!(e.kind(), ErrorKind::Trap | ErrorKind::Host) => {
                        Err(e.to_string())
                    }
                    Err(e) if e.kind() == ErrorKind::Fenced => Ok(Reply::Fenced(refusal(&e))),
                    Err(e) => Ok(Reply::Failed {
                        kind: e.kind().name(),
                        fault: is_fault(&e),
                        detail: format!("{e:?}"),
                    }),
                }
            }
            Calls::Raw(raw) => {
                let mut raw = raw.lock().unwrap_or_else(|p| p.into_inner());
                let lease = lease_of(lease);
                let result = match body {
                    Some(body) => match raw.fenced_put(&lease, object, body, "application/json") {
                        Ok(Ok(w)) => Ok(Ok(Reply::Written {
                            object_key: w.object_key,
                            token: w.token,
                            previous_token: w.previous_token,
                        })),
                        Ok(Err(e)) => Ok(Err(e)),
                        Err(trap) => Err(trap),
                    },
                    None => match raw.fenced_delete(&lease, object) {
                        Ok(Ok(())) => Ok(Ok(Reply::Deleted)),
                        Ok(Err(e)) => Ok(Err(e)),
                        Err(trap) => Err(trap),
                    },
                };
                match result {
                    Ok(Ok(reply)) => Ok(reply),
                    Ok(Err(crate::bindings::Error::Fenced(f))) => Ok(Reply::Fenced(Refusal {
                        object_key: f.object_key,
                        our_token: f.our_token,
                        stored_token: f.stored_token,
                    })),
                    Ok(Err(e)) => Ok(Reply::Failed {
                        kind: e.kind(),
                        fault: is_fault_error(&e),
                        detail: format!("{e:?}"),
                    }),
                    Err(trap) => Err(format!("{trap:#}")),
                }
            }
        }
    }
}

/// A fenced refusal of the host API; one that names no object or token
/// names another object and token 0, which the member flags.
fn refusal(e: &s3_lease_host::Error) -> Refusal {
    Refusal {
        object_key: e.object_key().unwrap_or("(unnamed)").to_string(),
        our_token: e.our_token().unwrap_or(0),
        stored_token: e.stored_token().unwrap_or(0),
    }
}

struct OpenTerm {
    token: u64,
    lease: LeaseRecord,
    start: Instant,
    /// The latest `leading_until` observed: belief never runs past it.
    promised: Instant,
    /// Its `BecameLeader` has been read from the events, so the next
    /// `StoppedLeading` there ends it.
    announced: bool,
}

/// A fenced call made on a thread of its own, so the member keeps watching
/// its elector while the call waits for the client (a step holds it).
struct WriteJob {
    calls: Calls,
    process: Arc<super::Process>,
    t0: Instant,
    name: String,
    who: Who,
    lease: LeaseRecord,
    object: String,
    value: u64,
    body: String,
    delete: bool,
    zombie: bool,
}

type WriteDone = (FencedOp, Vec<Violation>);

/// What a campaigning member knows and has under way.
pub struct Leading {
    term: Option<OpenTerm>,
    /// The last token recorded as a grant in this generation.
    granted: Option<u64>,
    /// What the events read so far say: the token led, or none.
    event_leading: Option<u64>,
    event_token: u64,
    last_error: Option<StepError>,
    next_write: Instant,
    /// The write under way while leading (at most one).
    writing: Option<JoinHandle<WriteDone>>,
    /// Other writes (zombies), and writes of dead generations.
    background: Vec<JoinHandle<WriteDone>>,
}

impl Leading {
    pub fn new(shared: &Shared) -> Self {
        Leading {
            term: None,
            granted: None,
            event_leading: None,
            event_token: 0,
            last_error: None,
            next_write: shared.t0,
            writing: None,
            background: Vec::new(),
        }
    }
}

/// One life's campaign, and the client its fenced calls go through.
pub struct Campaigning {
    campaign: Campaign,
    calls: Calls,
}

impl Role for Leading {
    type Life = Campaigning;
    const SEED_KEY_BASE: usize = 0;
    const RNG_SALT: u64 = 0x5eed;

    /// A fresh elector and holder id (a fresh random id per elector: a
    /// restart is a new holder).
    fn connect(
        m: &mut Member<'_, Self>,
        hooks: &Hooks,
        clock: SkewedClock,
    ) -> Result<Campaigning, String> {
        let shared = m.shared;
        let role = &mut m.role;
        (role.granted, role.event_leading, role.event_token) = (None, None, 0);
        role.last_error = None;
        let metadata = format!("process {} generation {}", m.p, m.generation);
        let runtime = shared.harness.runtime();
        if shared.config.no_watchdog {
            let config = WitElectorConfig {
                key: key_name(m.key),
                lease_duration_ms: LEASE_MS,
                renew_deadline_ms: RENEW_DEADLINE_MS,
                retry_period_ms: RETRY_MS,
                holder_id: None,
                metadata: Some(metadata),
            };
            let options = InstanceOptions {
                hooks: Some(Box::new(hooks.clone())),
                wall_clock: Some(Arc::new(clock)),
            };
            let mut raw = runtime
                .instantiate(options)
                .map_err(|e| format!("instantiate: {e:#}"))?;
            match raw.open(&shared.client_configs[m.key]) {
                Ok(Ok(())) => {}
                other => return Err(format!("open: {other:?}")),
            }
            let u = Unwatched::start(raw, &config)?;
            let calls = Calls::Raw(u.instance.clone());
            return Ok(Campaigning {
                campaign: Campaign::Unwatched(u),
                calls,
            });
        }
        let config = ElectorConfig::new(key_name(m.key))
            .lease_duration(Duration::from_millis(LEASE_MS))
            .renew_deadline(Duration::from_millis(RENEW_DEADLINE_MS))
            .retry_period(Duration::from_millis(RETRY_MS))
            .metadata(metadata);
        let options = shared.harness.client_options(hooks, &clock);
        let client = Client::connect_with(runtime, &shared.host_configs[m.key], options)
            .map_err(|e| format!("connect: {e}"))?;
        let elector = client.elect(&config).map_err(|e| format!("elect: {e}"))?;
        Ok(Campaigning {
            campaign: Campaign::Product(elector),
            calls: Calls::Client(client),
        })
    }

    /// Collects the writes that are done, looks at the elector, and
    /// writes when a write is due.
    fn step(m: &mut Member<'_, Self>, _now: Instant) -> Instant {
        m.reap_writes();
        m.observe();
        let now = Instant::now();
        let role = &m.role;
        let due = role.writing.is_none() && now >= role.next_write;
        if let Some(lease) = role.term.as_ref().filter(|_| due).map(|t| t.lease.clone()) {
            m.write(lease, false);
        }
        now + TICK
    }

    fn stop(m: &mut Member<'_, Self>, at: Instant, why: Stop) {
        let promised = m.role.term.as_ref().map(|t| t.promised);
        if why == Stop::Crash && promised.is_some_and(|p| at < p) {
            let fault = LeaderFault {
                key: m.key,
                at: m.shared.us(at),
                crash: true,
            };
            m.record.leader_faults.push(fault);
        }
        m.close_term(at, why.name());
        // Its write, if any, finishes (or not) in the background.
        if let Some(w) = m.role.writing.take() {
            m.role.background.push(w);
        }
    }

    /// The process stops for the pause's `ms`. What that models: the
    /// process's own thread (this member) stops, and every request the
    /// process sends is held by the request policy until the pause ends
    /// (so a renew under way or due then waits too); the host elector's
    /// threads cannot be frozen and run on, so its watchdog ends
    /// leadership on time, as a real process's would at once on resuming
    /// (its monotonic clock ran on). The member records nothing
    /// meanwhile: its term ends at the last promise it saw. Back from the
    /// pause, a leader may write with the lease it held before, without
    /// looking at its elector first: the zombie write the fence must
    /// refuse once a successor has written.
    fn pause(m: &mut Member<'_, Self>) {
        let ms = m.process.latest_pause().map_or(0, |(_, ms)| ms);
        let at = Instant::now();
        let held = m
            .role
            .term
            .as_ref()
            .filter(|t| at < t.promised)
            .map(|t| t.lease.clone());
        if held.is_some() {
            let fault = LeaderFault {
                key: m.key,
                at: m.shared.us(at),
                crash: false,
            };
            m.record.leader_faults.push(fault);
        }
        let wake = (at + Duration::from_millis(ms)).min(m.shared.t_end);
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
        if m.process.generation() != m.generation || Instant::now() >= m.shared.t_end {
            return;
        }
        if let Some(lease) = held {
            if m.rng.chance(ZOMBIE_CHANCE) {
                m.write(lease, true);
            }
        }
    }

    /// Drops the elector without resigning: `abandon` waits for a step
    /// under way. The client goes with it: the last handle of a client
    /// stops its runtime, which waits for the calls still running.
    fn let_go(life: Campaigning) {
        life.campaign.abandon();
        drop(life.calls);
    }

    fn finish(m: &mut Member<'_, Self>) {
        let writes: Vec<_> = m.role.background.drain(..).collect();
        for handle in writes {
            m.merge(handle);
        }
    }
}

impl Member<'_, Leading> {
    /// One look at the elector: its events in order, then whether it leads.
    fn observe(&mut self) {
        let Some((_, life)) = self.life.as_mut() else {
            return;
        };
        let mut events = Vec::new();
        while let Some(event) = life.campaign.next_event() {
            events.push(event);
        }
        let error = life.campaign.last_error();
        let sampled = life.campaign.leading();
        self.count_requests();
        let now = Instant::now();
        for event in events {
            self.judge_event(event, now);
        }
        if error != self.role.last_error {
            if let Some(e) = &error {
                match e.fault {
                    Some(kind) => *self.record.counts.step_errors.entry(kind).or_default() += 1,
                    None => {
                        let detail = format!("the elector failed unexpectedly: {}", e.message);
                        self.violation("no unexpected errors", detail);
                    }
                }
            }
            self.role.last_error = error;
        }
        let leading = sampled.filter(|l| l.until > now);
        match (self.role.term.as_mut(), leading) {
            (Some(t), Some(l)) if t.token == l.lease.token => {
                t.promised = t.promised.max(l.until);
                t.lease = l.lease;
            }
            (Some(_), leading) => {
                let why = if leading.is_some() {
                    "leads with another token"
                } else {
                    "no longer leads"
                };
                self.close_term(now, why);
                if let Some(l) = leading {
                    self.open_term(l, now);
                }
            }
            (None, Some(l)) => self.open_term(l, now),
            (None, None) => {}
        }
    }

    /// Checks the events' order (leader only after `BecameLeader`, tokens
    /// rising, `StoppedLeading` only while leading) and ends the term at a
    /// `StoppedLeading` that follows its `BecameLeader`.
    fn judge_event(&mut self, event: Event, now: Instant) {
        self.record.counts.events += 1;
        let role = &mut self.role;
        match event {
            Event::BecameLeader(token) => {
                let mut wrong = Vec::new();
                if let Some(led) = role.event_leading {
                    wrong.push(format!("became leader with t{token} while leading t{led}"));
                }
                if token < role.event_token {
                    let was = role.event_token;
                    wrong.push(format!("became leader with t{token} after t{was}"));
                }
                role.event_token = role.event_token.max(token);
                role.event_leading = Some(token);
                if let Some(t) = role.term.as_mut().filter(|t| t.token == token) {
                    t.announced = true;
                }
                for detail in wrong {
                    self.violation("elector contract", detail);
                }
            }
            Event::StoppedLeading(reason) => {
                if role.event_leading.take().is_none() {
                    let detail = format!("stopped leading ({reason}) while not leading");
                    self.violation("elector contract", detail);
                }
                if self.role.term.as_ref().is_some_and(|t| t.announced) {
                    self.close_term(now, &format!("stopped leading ({reason})"));
                }
            }
            Event::LeaderChanged | Event::Other => {}
            Event::Failed(message) => {
                self.violation("nothing traps", format!("the elector failed: {message}"));
                self.role.event_leading = None;
                self.close_term(now, "the elector failed");
            }
        }
    }

    /// Believes from `now`, its first observation of `l`.
    fn open_term(&mut self, l: Led, now: Instant) {
        let token = l.lease.token;
        if self.role.granted != Some(token) {
            self.role.granted = Some(token);
            let grant = Grant {
                key: self.key,
                who: self.who(),
                token,
                sent: self.shared.us(l.granted_after.min(now)),
                acked: self.shared.us(now),
            };
            self.record.history.grants.push(grant);
        }
        self.role.term = Some(OpenTerm {
            token,
            lease: l.lease,
            start: now,
            promised: l.until,
            announced: self.role.event_leading == Some(token),
        });
        self.shared.leaders[self.key].store(self.p, Ordering::SeqCst);
        self.role.next_write = now;
    }

    /// Ends the belief at `at`, or at the last promised instant if that
    /// came first.
    fn close_term(&mut self, at: Instant, why: &str) {
        let Some(t) = self.role.term.take() else {
            return;
        };
        let end = at.min(t.promised).max(t.start);
        let ended_by = if at <= t.promised {
            why.to_string()
        } else {
            format!("its leading-until (then {why})")
        };
        let term = Term {
            key: self.key,
            who: self.who(),
            token: t.token,
            start: self.shared.us(t.start),
            end: self.shared.us(end),
            ended_by,
        };
        self.record.history.terms.push(term);
        let leader = &self.shared.leaders[self.key];
        let _ = leader.compare_exchange(self.p, NOBODY, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Collects the writes that are done.
    fn reap_writes(&mut self) {
        if self
            .role
            .writing
            .as_ref()
            .is_some_and(JoinHandle::is_finished)
        {
            if let Some(handle) = self.role.writing.take() {
                self.merge(handle);
            }
        }
        let (done, running): (Vec<_>, Vec<_>) = self
            .role
            .background
            .drain(..)
            .partition(JoinHandle::is_finished);
        self.role.background = running;
        for handle in done {
            self.merge(handle);
        }
    }

    fn merge(&mut self, handle: JoinHandle<WriteDone>) {
        let history = &mut self.record.history;
        match handle.join() {
            Ok((op, violations)) => {
                history.fenced.push(op);
                history.violations.extend(violations);
            }
            Err(_) => history.violations.push(Violation {
                invariant: "nothing traps",
                detail: "a fenced write's thread panicked".into(),
            }),
        }
    }

    /// One fenced write (or, rarely, delete) to the key's current object
    /// with `lease`'s token inside the body, on a thread of its own.
    fn write(&mut self, lease: LeaseRecord, zombie: bool) {
        let now = Instant::now();
        self.role.next_write = now + Duration::from_millis(WRITE_EVERY_MS);
        let Some((_, life)) = self.life.as_ref() else {
            return;
        };
        let calls = life.calls.clone();
        let object = self.shared.object(self.key, now);
        if !self.shared.reserve(&object) {
            self.record.counts.writes_skipped += 1;
            return;
        }
        let value = self.shared.next_value();
        let delete = !zombie && self.rng.chance(DELETE_CHANCE);
        let job = WriteJob {
            calls,
            process: self.process.clone(),
            t0: self.shared.t0,
            name: self.name.clone(),
            who: self.who(),
            body: record::body(self.p, self.generation, lease.token, value),
            lease,
            object,
            value,
            delete,
            zombie,
        };
        let handle = std::thread::spawn(move || write(job));
        if zombie {
            self.role.background.push(handle);
        } else {
            self.role.writing = Some(handle);
        }
    }
}

/// Makes one fenced call and judges its reply.
fn write(job: WriteJob) -> WriteDone {
    let mut violations = Vec::new();
    let who = job.who;
    let mut flag = |invariant, detail| {
        violations.push(violation(
            who.actor,
            who.generation,
            &job.name,
            invariant,
            detail,
        ));
    };
    let body = (!job.delete).then_some(job.body.as_bytes());
    let start = Instant::now();
    let result = job.calls.fenced(&job.lease, &job.object, body);
    let end = Instant::now();
    // The process died before the call returned: nobody saw the reply.
    let died = job.process.generation() != who.generation
        && job.process.last_crash().is_none_or(|c| c.at <= end);
    let (object, token) = (&job.object, job.lease.token);
    let outcome = match result {
        _ if died => FencedOutcome::Unknown("the process died during the call".into()),
        Err(trap) => {
            flag("nothing traps", format!("fenced call trapped: {trap}"));
            FencedOutcome::Unknown("trap".into())
        }
        Ok(Reply::Written {
            object_key,
            token: written,
            previous_token,
        }) => {
            if written != token || &object_key != object {
                flag(
                    "fenced replies",
                    format!("wrote {object} with t{token} and got t{written} on {object_key}"),
                );
            }
            FencedOutcome::Written { previous_token }
        }
        Ok(Reply::Deleted) => FencedOutcome::Deleted,
        Ok(Reply::Fenced(f)) => {
            if f.our_token != token || &f.object_key != object {
                flag(
                    "fenced replies",
                    format!("wrote {object} with t{token} and got {f:?}"),
                );
            }
            FencedOutcome::Fenced {
                stored_token: f.stored_token,
            }
        }
        Ok(Reply::Failed {
            kind,
            fault,
            detail,
        }) => {
            if !fault {
                flag(
                    "no unexpected errors",
                    format!("fenced call failed unexpectedly: {detail}"),
                );
            }
            FencedOutcome::Unknown(kind.into())
        }
    };
    let op = FencedOp {
        object: job.object,
        who,
        token,
        value: job.value,
        delete: job.delete,
        zombie: job.zombie,
        start: micros_since(job.t0, start),
        end: micros_since(job.t0, end),
        outcome,
    };
    (op, violations)
}

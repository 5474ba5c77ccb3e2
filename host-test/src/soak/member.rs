//! One member of the soak: one process's campaign for one key, run by the
//! product's host [`Elector`] over a [`Client`] of its own (the blocking
//! API, on one instance built with the test hooks, so the soak's request
//! faults apply, and with a wall clock that follows the process's skew);
//! the member's thread watches it, writes the key's fenced object while it
//! leads, and lives through what the plan does to its process (crash,
//! pause, clock steps).
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

use super::history::{FencedOp, FencedOutcome, Grant, LeaderFault, MemberRecord, Term, Violation};
use super::process::Process;
use super::schedule::{instance_seed, RequestFaults};
use super::unwatched::Unwatched;
use super::{key_name, Shared, NOBODY, RENEW_DEADLINE_MS, RETRY_MS, WRITE_EVERY_MS};
use crate::bindings::ElectorConfig as WitElectorConfig;
use crate::hooks::{is_fault, is_fault_error, Hooks};
use crate::instance::SkewedClock;
use crate::records::lease_of;
use s3_lease::testing::rng::Rng;
use s3_lease_host::blocking::{Client, Elector};
use s3_lease_host::raw::RawInstance;
use s3_lease_host::{ElectionEvent, ElectorConfig, ErrorKind, InstanceOptions, LeaseRecord};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a member looks at its elector.
const TICK: Duration = Duration::from_millis(5);
/// The longest a member with no elector sleeps before it looks again.
const POLL: Duration = Duration::from_millis(50);
/// The share of leaders' writes that are fenced deletes (tombstones).
const DELETE_CHANCE: f64 = 0.03;
/// The chance that a leader, back from a pause past its lease, writes with
/// its old lease before it looks at its elector (the case fencing exists for).
const ZOMBIE_CHANCE: f64 = 0.5;
/// "Leads until further notice": the promise of a caller without a watchdog.
const UNTIL_TOLD: Duration = Duration::from_secs(24 * 3600);

/// What the member knows it leads with, from one look at its elector.
struct Leading {
    lease: LeaseRecord,
    /// Leadership ends at this instant unless renewed first.
    until: Instant,
    /// No later than the grant of `lease.token`.
    granted_after: Instant,
}

/// An elector's event as the member judges it: the product's, or the
/// unwatched caller's (which reads the bindings' events).
pub(super) enum Event {
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
pub(super) struct StepError {
    pub message: String,
    pub fault: Option<&'static str>,
}

/// The campaign of one process for the member's key.
enum Campaign {
    Product(Elector),
    Unwatched(Unwatched),
}

impl Campaign {
    fn leading(&self) -> Option<Leading> {
        match self {
            Campaign::Product(e) => {
                let until = e.leading_until()?;
                let lease = e.leader_lease()?;
                Some(Leading {
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
                Some(Leading {
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
            // The host elector reports its error as text only.
            Campaign::Product(e) => e.last_error().map(|message| StepError {
                fault: error_kind(&message),
                message,
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
        etag: String,
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
                            etag: w.etag,
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
                            etag: w.etag,
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

/// A fenced refusal of the host API: its stored token, and the object and
/// our token as its message names them (the error has no accessor for
/// those two); a message that names neither gives a refusal that names
/// another object and token 0, which the member flags.
fn refusal(e: &s3_lease_host::Error) -> Refusal {
    let text = e.to_string();
    let named = text
        .strip_prefix("fenced: ")
        .and_then(|rest| rest.rsplit_once(" was written under token "))
        .and_then(|(object, tokens)| {
            let (_, ours) = tokens.split_once(", ours is ")?;
            Some((object.to_string(), ours.parse().ok()?))
        });
    let (object_key, our_token) = named.unwrap_or_else(|| (format!("(unnamed: {text})"), 0));
    Refusal {
        object_key,
        our_token,
        stored_token: e.stored_token().unwrap_or(0),
    }
}

/// One generation of the process, as far as this key goes.
struct Life {
    campaign: Campaign,
    calls: Calls,
    hooks: Hooks,
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
    process: Arc<Process>,
    p: usize,
    k: usize,
    generation: u32,
    lease: LeaseRecord,
    object: String,
    value: u64,
    body: String,
    delete: bool,
    zombie: bool,
}

type WriteDone = (FencedOp, Vec<Violation>);

pub struct Member<'a> {
    shared: &'a Shared<'a>,
    process: Arc<Process>,
    p: usize,
    k: usize,
    generation: u32,
    life: Option<Life>,
    rng: Rng,
    term: Option<OpenTerm>,
    /// The last token recorded as a grant in this generation.
    granted: Option<u64>,
    /// What the events read so far say: the token led, or none.
    event_leading: Option<u64>,
    event_token: u64,
    last_error: Option<StepError>,
    pause_seen: u64,
    next_write: Instant,
    /// The write under way while leading (at most one).
    writing: Option<JoinHandle<WriteDone>>,
    /// Other writes (zombies), and writes of dead generations.
    background: Vec<JoinHandle<WriteDone>>,
    /// Electors being abandoned.
    abandoning: Vec<JoinHandle<()>>,
    record: MemberRecord,
}

fn violation(p: usize, generation: u32, k: usize, invariant: &'static str, d: String) -> Violation {
    Violation {
        invariant,
        detail: format!("process {p} gen {generation} {}: {d}", key_name(k)),
    }
}

/// The kind of an error an elector reported, by its message (the host
/// elector reports it as text); `None` for one no injected fault explains.
fn error_kind(message: &str) -> Option<&'static str> {
    [
        ("the request did not complete", "transport"),
        ("S3 kept answering 409", "conflict"),
        ("S3 error:", "s3"),
        ("gave up on", "timeout"),
    ]
    .into_iter()
    .find(|(prefix, _)| message.starts_with(prefix))
    .map(|(_, kind)| kind)
}

impl<'a> Member<'a> {
    /// Starts the member's first process, then waits for every other.
    pub fn start(
        shared: &'a Shared<'a>,
        process: Arc<Process>,
        p: usize,
        k: usize,
        barrier: &Barrier,
    ) -> Self {
        let generation = process.generation();
        let mut m = Member {
            shared,
            process,
            p,
            k,
            generation,
            life: None,
            rng: Rng::new(instance_seed(shared.config.seed, p, k, generation) ^ 0x5eed),
            term: None,
            granted: None,
            event_leading: None,
            event_token: 0,
            last_error: None,
            pause_seen: 0,
            next_write: shared.t0,
            writing: None,
            background: Vec::new(),
            abandoning: Vec::new(),
            record: MemberRecord::default(),
        };
        m.spawn_life();
        barrier.wait();
        m
    }

    fn violation(&mut self, invariant: &'static str, detail: String) {
        let v = violation(self.p, self.generation, self.k, invariant, detail);
        self.record.violations.push(v);
    }

    /// A fresh process: new client, elector and holder id.
    fn spawn_life(&mut self) {
        self.generation = self.process.generation();
        self.pause_seen = self.process.latest_pause().map_or(0, |(n, _)| n);
        self.rng = Rng::new(
            instance_seed(self.shared.config.seed, self.p, self.k, self.generation) ^ 0x5eed,
        );
        self.granted = None;
        self.event_leading = None;
        self.event_token = 0;
        self.last_error = None;
        let harness = self.shared.harness;
        let hooks = Hooks::new(harness.runtime().http().clone());
        // The process's clock: a jump moves every instance of it at once.
        let clock = SkewedClock {
            offset_ms: self.process.clock_offset_ms.clone(),
        };
        hooks.set_policy(
            RequestFaults::new(
                instance_seed(self.shared.config.seed, self.p, self.k, self.generation),
                self.shared.config.request_fault_rate,
                self.shared.counts.clone(),
                self.process.clone(),
            )
            .into_policy(),
        );
        // A fresh random id per elector (none given): a restart is a new holder.
        let metadata = format!("process {} generation {}", self.p, self.generation);
        let made = if self.shared.config.no_watchdog {
            let config = WitElectorConfig {
                key: key_name(self.k),
                lease_duration_ms: super::LEASE_MS,
                renew_deadline_ms: RENEW_DEADLINE_MS,
                retry_period_ms: RETRY_MS,
                holder_id: None,
                metadata: Some(metadata),
            };
            let options = InstanceOptions {
                hooks: Some(Box::new(hooks.clone())),
                wall_clock: Some(Arc::new(clock)),
            };
            harness
                .runtime()
                .instantiate(options)
                .map_err(|e| format!("instantiate: {e:#}"))
                .and_then(
                    |mut raw| match raw.open(&self.shared.client_configs[self.k]) {
                        Ok(Ok(())) => Ok(raw),
                        other => Err(format!("open: {other:?}")),
                    },
                )
                .and_then(|raw| Unwatched::start(raw, &config))
                .map(|u| {
                    let calls = Calls::Raw(u.instance.clone());
                    (Campaign::Unwatched(u), calls)
                })
        } else {
            let config = ElectorConfig::new(key_name(self.k))
                .lease_duration(Duration::from_millis(super::LEASE_MS))
                .renew_deadline(Duration::from_millis(RENEW_DEADLINE_MS))
                .retry_period(Duration::from_millis(RETRY_MS))
                .metadata(metadata);
            let host_config = &self.shared.host_configs[self.k];
            let options = harness.client_options(&hooks, &clock);
            Client::connect_with(harness.runtime(), host_config, options)
                .map_err(|e| format!("connect: {e}"))
                .and_then(|client| match client.elect(&config) {
                    Ok(e) => Ok((Campaign::Product(e), Calls::Client(client))),
                    Err(e) => Err(format!("elect: {e}")),
                })
        };
        match made {
            Ok((campaign, calls)) => {
                self.life = Some(Life {
                    campaign,
                    calls,
                    hooks,
                })
            }
            Err(e) => self.violation("setup", e),
        }
    }

    /// Watches and writes until the end of the run.
    pub fn run(mut self) -> MemberRecord {
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
            if let Some((n, ms)) = self.process.latest_pause() {
                if n > self.pause_seen {
                    self.pause_seen = n;
                    self.pause(ms);
                    continue;
                }
            }
            self.reap_writes();
            if self.life.is_none() {
                std::thread::sleep(POLL.min(t_end - now));
                continue;
            }
            self.observe();
            let now = Instant::now();
            if self.term.is_some() && self.writing.is_none() && now >= self.next_write {
                if let Some(lease) = self.term.as_ref().map(|t| t.lease.clone()) {
                    self.write(lease, false);
                }
            }
            std::thread::sleep(TICK.min(t_end.saturating_duration_since(now)));
        }
        self.close_term(t_end, "end of run");
        // Exits without resigning.
        self.end_life();
        for handle in self
            .writing
            .take()
            .into_iter()
            .chain(self.background.drain(..))
        {
            Self::merge(&mut self.record, handle);
        }
        for handle in self.abandoning.drain(..) {
            let _ = handle.join();
        }
        self.record
    }

    /// One look at the elector: its events in order, then whether it leads.
    fn observe(&mut self) {
        let Some(life) = self.life.as_mut() else {
            return;
        };
        let mut events = Vec::new();
        while let Some(event) = life.campaign.next_event() {
            events.push(event);
        }
        let error = life.campaign.last_error();
        let sampled = life.campaign.leading();
        let requests = life.hooks.take_requests();
        let now = Instant::now();
        self.count_requests(requests);
        for event in events {
            self.judge_event(event, now);
        }
        if error != self.last_error {
            if let Some(e) = &error {
                match e.fault {
                    Some(kind) => *self.record.step_errors.entry(kind).or_default() += 1,
                    None => {
                        let detail = format!("the elector failed unexpectedly: {}", e.message);
                        self.violation("no unexpected errors", detail);
                    }
                }
            }
            self.last_error = error;
        }
        let leading = sampled.filter(|l| l.until > now);
        match (self.term.as_mut(), leading) {
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
        self.record.events += 1;
        match event {
            Event::BecameLeader(token) => {
                if let Some(led) = self.event_leading {
                    let detail = format!("became leader with t{token} while leading t{led}");
                    self.violation("elector contract", detail);
                }
                if token < self.event_token {
                    let detail = format!("became leader with t{token} after t{}", self.event_token);
                    self.violation("elector contract", detail);
                }
                self.event_token = self.event_token.max(token);
                self.event_leading = Some(token);
                if let Some(t) = self.term.as_mut().filter(|t| t.token == token) {
                    t.announced = true;
                }
            }
            Event::StoppedLeading(reason) => {
                if self.event_leading.take().is_none() {
                    let detail = format!("stopped leading ({reason}) while not leading");
                    self.violation("elector contract", detail);
                }
                if self.term.as_ref().is_some_and(|t| t.announced) {
                    self.close_term(now, &format!("stopped leading ({reason})"));
                }
            }
            Event::LeaderChanged | Event::Other => {}
            Event::Failed(message) => {
                self.violation("nothing traps", format!("the elector failed: {message}"));
                self.event_leading = None;
                self.close_term(now, "the elector failed");
            }
        }
    }

    fn count_requests(&mut self, taken: Vec<crate::hooks::RequestRecord>) {
        self.record.requests += taken.len() as u64;
        if let Some(bad) = taken.iter().find(|r| !r.payload_hash_ok) {
            let detail = format!("payload hash mismatch on {bad:?}");
            self.violation("requests as signed", detail);
        }
    }

    /// Believes from `now`, its first observation of `l`.
    fn open_term(&mut self, l: Leading, now: Instant) {
        let token = l.lease.token;
        if self.granted != Some(token) {
            self.granted = Some(token);
            self.record.grants.push(Grant {
                key: self.k,
                process: self.p,
                generation: self.generation,
                token,
                step_start: l.granted_after.min(now),
                step_end: now,
            });
        }
        self.term = Some(OpenTerm {
            token,
            lease: l.lease,
            start: now,
            promised: l.until,
            announced: self.event_leading == Some(token),
        });
        self.shared.leaders[self.k].store(self.p, Ordering::SeqCst);
        self.next_write = now;
    }

    /// Ends the belief at `at`, or at the last promised instant if that
    /// came first.
    fn close_term(&mut self, at: Instant, why: &str) {
        let Some(t) = self.term.take() else {
            return;
        };
        let end = at.min(t.promised).max(t.start);
        let ended_by = if at <= t.promised {
            why.to_string()
        } else {
            format!("its leading-until (then {why})")
        };
        self.record.terms.push(Term {
            key: self.k,
            process: self.p,
            generation: self.generation,
            token: t.token,
            start: t.start,
            end,
            ended_by,
        });
        let _ = self.shared.leaders[self.k].compare_exchange(
            self.p,
            NOBODY,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }

    /// Drops the process's elector without resigning, on a thread of its
    /// own: `abandon` waits for a step under way, and a dead process does
    /// not wait for anything.
    fn end_life(&mut self) {
        let Some(life) = self.life.take() else {
            return;
        };
        let taken = life.hooks.take_requests();
        self.count_requests(taken);
        let (campaign, calls) = (life.campaign, life.calls);
        // The client goes with it there: the last handle of a client stops
        // its runtime, which waits for the calls still running.
        self.abandoning.push(std::thread::spawn(move || {
            campaign.abandon();
            drop(calls);
        }));
        // Its write, if any, finishes (or not) in the background.
        if let Some(w) = self.writing.take() {
            self.background.push(w);
        }
    }

    /// The process died: its elector stops without releasing anything,
    /// and it restarts as a fresh process.
    fn crashed(&mut self) {
        let crash = self.process.last_crash();
        let at = crash.map_or_else(Instant::now, |c| c.at);
        if self.term.as_ref().is_some_and(|t| at < t.promised) {
            self.record.leader_faults.push(LeaderFault {
                key: self.k,
                process: self.p,
                at,
                crash: true,
            });
        }
        self.close_term(at, "crash");
        self.end_life();
        if self.process.wait_for_restart(crash, self.shared.t_end) {
            self.spawn_life();
        } else {
            self.generation = self.process.generation();
        }
    }

    /// The process stops for `ms`. What that models: the process's own
    /// thread (this member) stops, and every request the process sends is
    /// held by the request policy until the pause ends (so a renew under
    /// way or due then waits too); the host elector's threads cannot be
    /// frozen and run on, so its watchdog ends leadership on time, as a
    /// real process's would at once on resuming (its monotonic clock ran
    /// on). The member records nothing meanwhile: its term ends at the last
    /// promise it saw. Back from the pause, a leader may write with the
    /// lease it held before, without looking at its elector first: the
    /// zombie write the fence must refuse once a successor has written.
    fn pause(&mut self, ms: u64) {
        let at = Instant::now();
        let held = self
            .term
            .as_ref()
            .filter(|t| at < t.promised)
            .map(|t| t.lease.clone());
        if held.is_some() {
            self.record.leader_faults.push(LeaderFault {
                key: self.k,
                process: self.p,
                at,
                crash: false,
            });
        }
        let wake = (at + Duration::from_millis(ms)).min(self.shared.t_end);
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
        if self.process.generation() != self.generation || Instant::now() >= self.shared.t_end {
            return;
        }
        if let Some(lease) = held {
            if self.rng.chance(ZOMBIE_CHANCE) {
                self.write(lease, true);
            }
        }
    }

    /// Collects the writes that are done.
    fn reap_writes(&mut self) {
        if self.writing.as_ref().is_some_and(JoinHandle::is_finished) {
            if let Some(handle) = self.writing.take() {
                Self::merge(&mut self.record, handle);
            }
        }
        let (done, running): (Vec<_>, Vec<_>) =
            self.background.drain(..).partition(JoinHandle::is_finished);
        self.background = running;
        for handle in done {
            Self::merge(&mut self.record, handle);
        }
    }

    fn merge(record: &mut MemberRecord, handle: JoinHandle<WriteDone>) {
        match handle.join() {
            Ok((op, violations)) => {
                record.fenced.push(op);
                record.violations.extend(violations);
            }
            Err(_) => record.violations.push(Violation {
                invariant: "nothing traps",
                detail: "a fenced write's thread panicked".into(),
            }),
        }
    }

    /// One fenced write (or, rarely, delete) to the key's current object
    /// with `lease`'s token inside the body, on a thread of its own.
    fn write(&mut self, lease: LeaseRecord, zombie: bool) {
        let now = Instant::now();
        self.next_write = now + Duration::from_millis(WRITE_EVERY_MS);
        let Some(life) = self.life.as_ref() else {
            return;
        };
        let object = self.shared.object(self.k, now);
        if !self.shared.reserve(&object) {
            self.record.writes_skipped += 1;
            return;
        }
        let value = self.shared.next_value();
        let delete = !zombie && self.rng.chance(DELETE_CHANCE);
        let job = WriteJob {
            calls: life.calls.clone(),
            process: self.process.clone(),
            p: self.p,
            k: self.k,
            generation: self.generation,
            body: super::history::body(self.p, self.generation, lease.token, value),
            lease,
            object,
            value,
            delete,
            zombie,
        };
        let handle = std::thread::spawn(move || write(job));
        if zombie {
            self.background.push(handle);
        } else {
            self.writing = Some(handle);
        }
    }
}

/// Makes one fenced call and judges its reply.
fn write(job: WriteJob) -> WriteDone {
    let mut violations = Vec::new();
    let mut flag = |invariant, detail| {
        violations.push(violation(job.p, job.generation, job.k, invariant, detail));
    };
    let body = (!job.delete).then_some(job.body.as_bytes());
    let start = Instant::now();
    let result = job.calls.fenced(&job.lease, &job.object, body);
    let end = Instant::now();
    // The process died before the call returned: nobody saw the reply.
    let died = job.process.generation() != job.generation
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
            etag,
            token: written,
            previous_token,
        }) => {
            if written != token || &object_key != object {
                flag(
                    "fenced replies",
                    format!("wrote {object} with t{token} and got t{written} on {object_key}"),
                );
            }
            FencedOutcome::Written {
                token: written,
                etag,
                previous_token,
            }
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
                our_token: f.our_token,
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
        key: job.k,
        object: job.object,
        process: job.p,
        generation: job.generation,
        token,
        value: job.value,
        delete: job.delete,
        zombie: job.zombie,
        start,
        end,
        outcome,
    };
    (op, violations)
}

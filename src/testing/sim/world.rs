//! The simulated world: true time, the store, the network between the
//! processes and the store, the faults, and what the run records.

mod suspend;

pub use suspend::Suspends;

use super::audit_check::TrueGrants;
use super::credentials::{HostCredentials, Source};
use super::process::{Asleep, Clock, Lane, Waiting};
use super::setup::{ActorKind, Setup};
use super::store::SimStore;
use super::store_rules::StoreRules;
use super::{Report, START_MS};
use crate::config::{ExpiryClock, DEFAULT_REQUEST_TIMEOUT_MS};
use crate::error::Error;
use crate::stores::s3::{Method, S3Request, S3Response};
use crate::testing::history::{violation, FencedOp, FencedOutcome, History, Term, Violation, Who};
use crate::testing::rng::Rng;
use std::collections::BTreeMap;

/// Fenced calls on one object before the next object of its key takes
/// over, so each object's history stays small enough for the
/// linearizability search.
const FENCED_OPS_PER_OBJECT: u32 = 40;

/// One process of an actor (dead ones are kept: ids index these).
#[derive(Debug)]
pub struct Host {
    pub kind: ActorKind,
    pub clock: Clock,
    /// This host lets a request run its whole course, whatever its bound.
    pub ignores_timeouts: bool,
    /// Its network is slow, then silent, until these true instants.
    pub slow_until: u64,
    pub silent_until: u64,
    /// An outage that lost a reply goes on until then: every request
    /// fails at once, reaching nothing (the read-back after a lost reply
    /// too, so the call ends not knowing whether its write landed).
    pub cut_until: u64,
    /// Which life of the actor runs (a crash starts the next).
    pub generation: u32,
    pub alive: bool,
    /// Stalled (a paused VM, a stopped process) until then: nothing of
    /// its code runs, though its requests on the way go on.
    pub paused_until: u64,
    pub waiting: Waiting,
    /// Replies that came back, by the ticket of their send.
    pub replies: BTreeMap<u64, S3Response>,
    pub requests: u64,
    /// Its PUTs and DELETEs sent so far: a fenced call that failed having
    /// sent none changed nothing.
    pub writes_sent: u64,
    /// The holder id its semaphore writes act for (the store rules' writer).
    pub acting_for: String,
    /// Its last request and when that was first sent: the driver sends a
    /// throttled request again as it was, its content planned before.
    pub last_send: Option<(S3Request, u64)>,
    /// The credentials of this life, and its refresher's wait.
    pub credentials: HostCredentials,
}

impl Host {
    /// What the thread on `lane` waits for.
    pub fn lane(&mut self, lane: Lane) -> &mut Waiting {
        match lane {
            Lane::Calls => &mut self.waiting,
            Lane::Refresher => &mut self.credentials.waiting,
        }
    }
}

/// What happens at an instant.
pub enum Event {
    /// An actor's process starts (its task is polled for the first time).
    Start {
        actor: usize,
        generation: u32,
    },
    /// A request reaches the store; its reply goes to `reply` (a ticket)
    /// if one will come back.
    Apply {
        actor: usize,
        request: S3Request,
        sent: u64,
        reply: Option<u64>,
        acting_for: String,
        /// The access key it was signed with.
        signed_with: Option<String>,
    },
    /// A send or sleep ends: the process runs again. `failure`: the send's
    /// transport error, when its reply does not come.
    Resume {
        actor: usize,
        generation: u32,
        ticket: u64,
        failure: Option<&'static str>,
    },
    Fault(Fault),
}

/// What the world does to the processes.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// An actor dies at once, even mid-request, and restarts later.
    Crash,
    Restart {
        actor: usize,
    },
    /// An actor stalls for a while (a paused VM): beyond a lease, often.
    Pause,
    /// An actor's wall clock steps, either way (never under `holder`).
    Jump,
    /// One actor's network goes bad for a while, as congested links do:
    /// first slow (requests take a quarter to a whole ttl, and mostly
    /// succeed), then silent (one to four ttls; a third never arrive, a
    /// third lose their reply). A slow renew followed by failing ones is
    /// what a lease counted from the wrong instant needs to show.
    Degrade,
    /// One actor's machine is suspended for a while (see `suspend`).
    Suspend,
}

/// A term being believed: closed when its believer stops.
#[derive(Debug, Clone)]
pub struct OpenTerm {
    pub key: usize,
    pub who: Who,
    pub token: u64,
    pub start: u64,
    /// The true instant its host's guard or leadership stops saying held,
    /// unless renewed first.
    pub believed_until: u64,
}

pub struct World {
    /// True time, ms since `START_MS` (the store's clock is true time).
    pub now: u64,
    pub rng: Rng,
    pub setup: Setup,
    pub store: SimStore,
    pub hosts: Vec<Host>,
    pub events: BTreeMap<(u64, u64), Event>,
    seq: u64,
    pub history: History,
    pub report: Report,
    pub store_rules: StoreRules,
    /// Where every process's credentials come from.
    pub source: Source,
    terms: BTreeMap<u64, OpenTerm>,
    /// Per key: the object its fenced writes go to now, and calls on it.
    fenced_objects: BTreeMap<String, (u32, u32)>,
    next_value: u64,
    /// `S3LEASE_SIM_TRACE=<object key>`: print every request to it.
    trace: Option<String>,
    /// The grants the store made (for the grant log's checks).
    pub true_grants: TrueGrants,
    pub suspends: suspend::Suspends,
}

impl World {
    pub fn new(rng: Rng, setup: Setup, store: SimStore, history: History, source: Source) -> Self {
        let store_rules = StoreRules::new(&setup);
        World {
            now: 0,
            rng,
            setup,
            store,
            hosts: Vec::new(),
            events: BTreeMap::new(),
            seq: 0,
            history,
            report: Report::default(),
            store_rules,
            source,
            terms: BTreeMap::new(),
            fenced_objects: BTreeMap::new(),
            next_value: 1,
            trace: std::env::var("S3LEASE_SIM_TRACE").ok(),
            true_grants: TrueGrants::default(),
            suspends: suspend::Suspends::default(),
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    pub fn schedule(&mut self, at: u64, event: Event) {
        let seq = self.next_seq();
        self.events.insert((at.max(self.now), seq), event);
    }

    /// A new actor (or a new life of one) starting `delay` ms from now.
    pub fn add_host(&mut self, kind: ActorKind, delay: u64) -> usize {
        let id = self.hosts.len();
        let clock = self.new_clock(kind);
        self.hosts.push(Host {
            kind,
            clock,
            ignores_timeouts: self.rng.chance(self.setup.ignores_timeouts),
            slow_until: 0,
            silent_until: 0,
            cut_until: 0,
            generation: 0,
            alive: true,
            paused_until: 0,
            waiting: Waiting::default(),
            replies: BTreeMap::new(),
            requests: 0,
            writes_sent: 0,
            acting_for: String::new(),
            last_send: None,
            credentials: HostCredentials::new(self.now, clock.wall_offset_ms),
        });
        self.schedule(
            self.now + delay,
            Event::Start {
                actor: id,
                generation: 0,
            },
        );
        id
    }

    /// A fresh clock for an actor of `kind`: its own monotonic origin and
    /// rate; its wall clock skewed within what its key's clock rule allows.
    fn new_clock(&mut self, kind: ActorKind) -> Clock {
        let skew = self.setup.max_skew_ms(kind);
        let mut wall_offset_ms = self.rng.range(0, 2 * skew) as i64 - skew as i64;
        // `observed` promises that clocks need not agree: on DynamoDB, some
        // are a month slow, past any TTL a table could sweep by.
        if self.setup.dynamodb
            && self.setup.group(kind).clock == ExpiryClock::Observed
            && self.rng.chance(0.2)
        {
            wall_offset_ms -= 31 * 24 * 3_600_000;
            self.report.clocks_a_month_slow += 1;
        }
        Clock {
            mono_origin: self.rng.below(1 << 40),
            ppm: self.rng.range(0, 400) as i64 - 200,
            wall_offset_ms,
            asleep: Asleep::new(self.suspends.blind),
        }
    }

    pub fn who(&self, actor: usize) -> Who {
        Who {
            actor,
            generation: self.hosts[actor].generation,
        }
    }

    /// The process's thread on `lane` waits until true time `at`; its
    /// ticket.
    pub fn resume_at(&mut self, actor: usize, lane: Lane, at: u64) -> u64 {
        let ticket = self.next_seq();
        self.hosts[actor].lane(lane).ticket = Some(ticket);
        let generation = self.hosts[actor].generation;
        self.schedule(
            at,
            Event::Resume {
                actor,
                generation,
                ticket,
                failure: None,
            },
        );
        ticket
    }

    /// Decides how a request goes: how long it takes, whether and when the
    /// store applies it, whether its reply comes; its ticket.
    pub fn send(&mut self, actor: usize, request: &S3Request) -> u64 {
        let ticket = self.next_seq();
        let generation = self.hosts[actor].generation;
        self.hosts[actor].waiting.ticket = Some(ticket);
        self.hosts[actor].requests += 1;
        if matches!(request.method, Method::Put | Method::Delete) {
            self.hosts[actor].writes_sent += 1;
        }
        let r = &mut self.report;
        r.requests += 1;
        let configured = self
            .setup
            .request_timeout_ms
            .unwrap_or(DEFAULT_REQUEST_TIMEOUT_MS);
        let bound = request.within_ms.map_or(configured, |w| w.min(configured));
        let host = &self.hosts[actor];
        let clock = host.clock;
        let start = self.now;
        let bound_at = clock.true_at(clock.mono(start) + u64::from(bound));
        let ttl = self.setup.ttl_of(host.kind);
        let cut = start < host.cut_until;
        let slow = !cut && start < host.slow_until;
        let silent = !cut && !slow && start < host.silent_until;
        let takes = match self.rng.below(100) {
            _ if cut => self.rng.range(1, 50),
            _ if slow => self.rng.range(ttl / 4, ttl),
            _ if silent => self.rng.range(ttl, 4 * ttl),
            0..=1 => {
                r.hung += 1;
                self.rng.range(20_000, 120_000)
            }
            2..=9 => self.rng.range(200, 4_000),
            _ => self.rng.range(1, 40),
        };
        let natural_end = start + takes;
        let outlives = natural_end > bound_at;
        let timed_out = outlives && !host.ignores_timeouts;
        let end = if timed_out { bound_at } else { natural_end };
        let fate = if silent {
            self.rng.range(0, 9)
        } else {
            self.rng.below(100)
        };
        // 3%: never reaches the store; 3%: applied, but the reply is lost.
        let (applied, reply_lost) = (!cut && fate >= 3, !cut && (3..6).contains(&fate));
        let apply_at = start + self.rng.range(0, takes);
        let comes_back = applied && !reply_lost && !timed_out;
        // A third of the requests applied without an answer are part of an
        // outage that goes on for a while: what the caller sends next (its
        // read-back) fails too, and only a later call can learn the fate of
        // the write.
        if applied && !comes_back && self.rng.chance(0.3) {
            let until = end + self.rng.range(100, 3_000);
            let host = &mut self.hosts[actor];
            host.cut_until = host.cut_until.max(until);
            r.outages += 1;
        }
        let failure = if cut {
            r.failed_in_outage += 1;
            "network unreachable"
        } else if timed_out {
            r.timeouts_honoured += 1;
            "timed out"
        } else if !applied && fate == 0 && !silent {
            // The store (or a proxy) timed the request out before it had
            // all of it, and said so: S3's 400 `RequestTimeout`, a 408.
            r.never_applied += 1;
            r.timeouts_answered += 1;
            let reply = timed_out_reply(self.rng.chance(0.5));
            self.hosts[actor].replies.insert(ticket, reply);
            "answered"
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
        // A request sent again as it was (after a throttle) was planned
        // when it was first sent: the store rules count from then.
        let first_sent = match &self.hosts[actor].last_send {
            Some((previous, at)) if previous == request => *at,
            _ => start,
        };
        self.hosts[actor].last_send = Some((request.clone(), first_sent));
        let signed_with = self.signed_with(actor);
        if applied {
            let acting_for = self.hosts[actor].acting_for.clone();
            self.schedule(
                apply_at,
                Event::Apply {
                    actor,
                    request: request.clone(),
                    sent: first_sent,
                    reply: comes_back.then_some(ticket),
                    acting_for,
                    signed_with,
                },
            );
        }
        let answered = failure == "answered";
        self.schedule(
            end,
            Event::Resume {
                actor,
                generation,
                ticket,
                failure: (!comes_back && !answered).then_some(failure),
            },
        );
        ticket
    }

    /// A request reaches the store, which may meet a racing write (409),
    /// a throttle (DynamoDB, GCS), or answer LIST pages short or empty.
    pub fn apply(
        &mut self,
        actor: usize,
        mut request: S3Request,
        sent: u64,
        reply: Option<u64>,
        acting_for: &str,
        signed_with: Option<&str>,
    ) -> Result<(), Violation> {
        let conditional = request
            .headers
            .iter()
            .any(|(k, _)| k == "if-match" || k == "if-none-match");
        if conditional && self.rng.chance(0.02) {
            self.store.inject_conflict();
            self.report.conflicts_injected += 1;
        }
        if let SimStore::DynamoDb(table) = &mut self.store {
            if self.rng.chance(0.03) {
                table.throttle_next = 1;
                self.report.throttles_injected += 1;
            }
        }
        if conditional && self.careless_now(&request) {
            // A store that checks nothing here: the write lands whatever
            // its condition said.
            request
                .headers
                .retain(|(k, _)| k != "if-match" && k != "if-none-match");
            request.if_token = None;
            self.report.careless_writes += 1;
        }
        let listing = request.method == Method::Get && request.object_key.is_empty();
        let empty_page = listing && self.rng.chance(0.05);
        if let (true, Some(s3)) = (empty_page, self.store.s3()) {
            s3.empty_list_pages = 1;
        }
        // (A careless store breaks the rules on purpose: judged by what
        // its holders believed, and by verify, at the end.)
        let before = (!self.setup.careless && self.store_rules.watches(&request))
            .then(|| self.store.object(&request.object_key));
        // Signed with keys past their expiry: refused before anything else
        // (400 `ExpiredToken` on S3), and nothing applied.
        let expired = signed_with.is_some_and(|key| self.source.expired(key, START_MS + self.now));
        let answer = if expired {
            self.report.expired_refused += 1;
            self.hosts[actor].credentials.refused += 1;
            self.store.refuse_expired_token(&request)
        } else if self.setup.refuses_if_match(&request) {
            S3Response {
                status: 501,
                ..S3Response::default()
            }
        } else {
            self.store.handle(&request)
        };
        self.store.clear_conflicts();
        if answer.status == 200 {
            self.true_grants.applied(&request);
        }
        if let SimStore::DynamoDb(table) = &mut self.store {
            table.throttle_next = 0;
        }
        // GCS's rate limit (on some seeds): a write too soon after the
        // last to its object, refused unapplied.
        if matches!(self.store, SimStore::Gcs(_)) && answer.status == 429 {
            self.report.throttles_injected += 1;
        }
        if let Some(s3) = self.store.s3() {
            if empty_page && s3.empty_list_pages == 0 {
                self.report.empty_list_pages += 1;
            }
            s3.empty_list_pages = 0;
        }
        if self
            .trace
            .as_deref()
            .is_some_and(|t| !request.object_key.is_empty() && request.object_key.starts_with(t))
        {
            println!(
                "{} ms (sent {sent}): actor {actor} ({}): {:?} {} {:?} -> {}",
                self.now,
                acting_for,
                request.method,
                request.object_key,
                request
                    .headers
                    .iter()
                    .filter(|(k, _)| k.starts_with("if-"))
                    .collect::<Vec<_>>(),
                answer.status
            );
        }
        if let Some(before) = before {
            if answer.status == 200 {
                if let Some(after) = self.store.object(&request.object_key) {
                    let (now, report) = (self.now, &mut self.report);
                    self.store_rules.applied(
                        &request.object_key,
                        acting_for,
                        before.as_ref(),
                        &after,
                        sent,
                        now,
                        report,
                    )?;
                }
            }
        }
        if let Some(ticket) = reply {
            self.hosts[actor].replies.insert(ticket, answer);
        }
        Ok(())
    }

    /// A send or sleep of a live process ends: what it gets back is set,
    /// and true is returned when the process is to run now. A stalled
    /// process runs once its pause is over.
    pub fn resume(
        &mut self,
        actor: usize,
        generation: u32,
        ticket: u64,
        failure: Option<&'static str>,
    ) -> bool {
        let now = self.now;
        let host = &mut self.hosts[actor];
        let lane = if host.waiting.ticket == Some(ticket) {
            Lane::Calls
        } else if host.credentials.waiting.ticket == Some(ticket) {
            Lane::Refresher
        } else {
            return false;
        };
        if !host.alive || host.generation != generation {
            return false;
        }
        if now < host.paused_until {
            let at = host.paused_until;
            self.schedule(
                at,
                Event::Resume {
                    actor,
                    generation,
                    ticket,
                    failure,
                },
            );
            return false;
        }
        let host = &mut self.hosts[actor];
        if lane == Lane::Calls {
            host.waiting.outcome = match host.replies.remove(&ticket) {
                Some(reply) => Some(Ok(reply)),
                None => failure.map(|f| Err(Error::Transport(f.into()))),
            };
        }
        host.lane(lane).done = Some(ticket);
        true
    }

    /// Picks a live actor, if any.
    pub fn alive_actor(&mut self) -> Option<usize> {
        let alive: Vec<usize> = (0..self.hosts.len())
            .filter(|&i| self.hosts[i].alive)
            .collect();
        (!alive.is_empty()).then(|| alive[self.rng.below(alive.len() as u64) as usize])
    }

    /// The actor's process dies now: whatever it believed ends.
    pub fn crash(&mut self, actor: usize) {
        let host = &mut self.hosts[actor];
        host.alive = false;
        host.waiting = Waiting::default();
        host.credentials.waiting = Waiting::default();
        host.replies.clear();
        self.close_terms_of(actor, self.now, "crash");
        self.report.crashes += 1;
    }

    /// The actor's next life begins (a new clock: maybe another machine).
    pub fn restart(&mut self, actor: usize) {
        let kind = self.hosts[actor].kind;
        let clock = self.new_clock(kind);
        let host = &mut self.hosts[actor];
        host.clock = clock;
        host.credentials = HostCredentials::new(self.now, clock.wall_offset_ms);
        host.generation += 1;
        host.alive = true;
        host.paused_until = 0;
        let generation = host.generation;
        self.schedule(self.now, Event::Start { actor, generation });
    }

    pub fn pause(&mut self, actor: usize) {
        let ttl = self.setup.ttl_of(self.hosts[actor].kind);
        let until = self.now + self.rng.range(ttl / 2, 3 * ttl);
        self.hosts[actor].paused_until = until;
        self.hosts[actor].credentials.stalled = true;
        self.report.pauses += 1;
    }

    pub fn jump(&mut self, actor: usize) {
        if self.setup.max_skew_ms(self.hosts[actor].kind) < 60_000 {
            return;
        }
        let jump = self.rng.range(1, 300_000) as i64;
        let sign = if self.rng.chance(0.5) { -1 } else { 1 };
        let offset = &mut self.hosts[actor].clock.wall_offset_ms;
        // Within a quarter hour of the truth, except a clock already a
        // month off, which stays about that far.
        *offset = if offset.abs() > 900_000 {
            *offset + sign * jump
        } else {
            (*offset + sign * jump).clamp(-900_000, 900_000)
        };
        let offset = *offset;
        self.hosts[actor].credentials.jumped(offset);
        self.report.clock_jumps += 1;
    }

    pub fn degrade(&mut self, actor: usize) {
        let ttl = self.setup.ttl_of(self.hosts[actor].kind);
        let slow_until = self.now + self.rng.range(0, 2 * ttl);
        let silent_until = slow_until + self.rng.range(ttl / 2, 3 * ttl);
        let host = &mut self.hosts[actor];
        host.slow_until = slow_until;
        host.silent_until = silent_until;
        self.report.degraded += 1;
    }

    // What actors record.

    /// A violation seen on the spot.
    pub fn violated(&mut self, invariant: &'static str, detail: String) {
        self.history.violations.push(violation(invariant, detail));
    }

    /// `who` believes it holds `token` of `key` from now until
    /// `believed_until` (true time) unless extended: the term's id.
    pub fn open_term(&mut self, actor: usize, key: usize, token: u64, believed_until: u64) -> u64 {
        let id = self.next_seq();
        let who = self.who(actor);
        self.terms.insert(
            id,
            OpenTerm {
                key,
                who,
                token,
                start: self.now,
                believed_until,
            },
        );
        self.report.terms += 1;
        id
    }

    /// The term's believer now holds it until `believed_until`.
    pub fn extend_term(&mut self, id: u64, believed_until: u64) {
        if let Some(t) = self.terms.get_mut(&id) {
            t.believed_until = believed_until;
        }
    }

    /// The term ends now (or at its believed end, if that came first).
    pub fn close_term(&mut self, id: u64, why: &str) {
        let now = self.now;
        if let Some(t) = self.terms.remove(&id) {
            self.push_term(t, now, why);
        }
    }

    fn push_term(&mut self, t: OpenTerm, at: u64, why: &str) {
        let end = at.min(t.believed_until).max(t.start);
        self.history.terms.push(Term {
            key: t.key,
            who: t.who,
            token: t.token,
            start: t.start * 1_000,
            end: end * 1_000,
            ended_by: why.to_string(),
        });
    }

    fn close_terms_of(&mut self, actor: usize, at: u64, why: &str) {
        let ids: Vec<u64> = self
            .terms
            .iter()
            .filter(|(_, t)| t.who.actor == actor)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Some(t) = self.terms.remove(&id) {
                self.push_term(t, at, why);
            }
        }
    }

    /// Closes every term still open, at the end of the run.
    pub fn close_all_terms(&mut self) {
        let now = self.now;
        for (_, t) in std::mem::take(&mut self.terms) {
            self.push_term(t, now, "end of run");
        }
    }

    /// Where the next fenced write of `key` goes, and its unique value.
    pub fn fenced_target(&mut self, key: &str) -> (String, u64) {
        let (object, calls) = self.fenced_objects.entry(key.to_string()).or_default();
        if *calls >= FENCED_OPS_PER_OBJECT {
            *object += 1;
            *calls = 0;
        }
        *calls += 1;
        let name = format!("data/{key}/{object}");
        let value = self.next_value;
        self.next_value += 1;
        (name, value)
    }

    /// Records a fenced call as it starts; its index.
    pub fn fenced_started(&mut self, op: FencedOp) -> usize {
        self.history.fenced.push(op);
        self.history.fenced.len() - 1
    }

    pub fn fenced_finished(&mut self, index: usize, outcome: FencedOutcome) {
        let now = self.now * 1_000;
        if let Some(op) = self.history.fenced.get_mut(index) {
            match &outcome {
                FencedOutcome::Written { .. } | FencedOutcome::Deleted => {
                    self.report.fenced_accepted += 1
                }
                FencedOutcome::Fenced { .. } => self.report.fenced_refused += 1,
                FencedOutcome::Unknown(_) | FencedOutcome::NotSent(_) => {}
            }
            op.end = now;
            op.outcome = outcome;
        }
    }

    /// The true time `ms` on `actor`'s monotonic clock.
    pub fn true_at(&self, actor: usize, mono_ms: u64) -> u64 {
        self.hosts[actor].clock.true_at(mono_ms)
    }

    /// What `key`'s objects hold at the end, for the checkers.
    pub fn final_reads(&mut self) {
        if self.setup.dynamodb {
            return;
        }
        let objects: Vec<String> = {
            let mut names: Vec<String> = self
                .history
                .fenced
                .iter()
                .map(|o| o.object.clone())
                .collect();
            names.sort();
            names.dedup();
            names
        };
        let mut finals = Vec::new();
        for object in objects {
            let found = self.store.object(&object);
            finals.push(super::final_read(&object, found.as_ref()));
        }
        self.history.finals = finals;
    }

    /// On a careless store, whether this write's condition is ignored: a
    /// lock (or epoch) object's, now and then.
    fn careless_now(&mut self, request: &S3Request) -> bool {
        self.setup.careless
            && request.method == Method::Put
            && request.object_key.starts_with(super::setup::PREFIX)
            && !request.object_key.contains(crate::audit::AUDIT_DIR_NAME)
            && !request
                .object_key
                .ends_with(crate::lease::SEAL_KEY_OBJECT_NAME)
            && self.rng.chance(0.2)
    }

    pub fn store_now(&mut self) {
        self.store.set_now(START_MS + self.now);
    }
}

/// What a store that timed a request out answers (nothing applied): S3's
/// 400 `RequestTimeout`, or a 408 (GCS, a load balancer).
fn timed_out_reply(s3: bool) -> S3Response {
    if s3 {
        crate::testing::response(
            400,
            &[("content-type", "application/xml")],
            "<Error><Code>RequestTimeout</Code><Message>Your socket connection to the server \
             was not read from or written to within the timeout period.</Message></Error>",
        )
    } else {
        crate::testing::response(
            408,
            &[("content-type", "text/html")],
            "408 Request Time-out",
        )
    }
}

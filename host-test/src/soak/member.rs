//! One member of the soak: one process's elector on one key, stepped by its
//! own thread, writing the key's fenced object while it leads, and living
//! through what the plan does to its process (crash, pause, clock steps).
//!
//! It records what it believed and what its calls returned. Belief is the
//! elector's contract, seen from the host: a member believes it leads from
//! the end of the step that reported `became-leader` until the first of the
//! start of the step that no longer reports it, its renew deadline, its
//! crash, or the end of the run. The deadline counts from when the step
//! that granted or renewed the lease sent its first request: the elector
//! counts from when that step began, which is no later, so the recorded
//! belief never ends before the real one.

use super::history::{FencedOp, FencedOutcome, Grant, LeaderFault, MemberRecord, Term, Violation};
use super::process::Process;
use super::schedule::{instance_seed, FirstRequest, RequestFaults};
use super::{key_name, Shared, NOBODY, RENEW_DEADLINE_MS, RETRY_MS, WRITE_EVERY_MS};
use crate::bindings::{
    ElectorConfig, ElectorEvent, Error as LeaseError, FencedWrite, Lease, Role, StepResult,
};
use crate::Instance;
use s3_lease::testing::rng::Rng;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use wasmtime::component::ResourceAny;

/// The longest a member sleeps before it looks at its process again.
const POLL: Duration = Duration::from_millis(50);
/// A step may report `leader` this long past the recorded deadline before
/// it counts as a violation: the host's clock is read after the call
/// returns, and with dozens of threads on two cores a thread can be
/// descheduled for tens of milliseconds in between.
const DEADLINE_TOLERANCE: Duration = Duration::from_millis(100);
/// The share of leaders' writes that are fenced deletes (tombstones).
const DELETE_CHANCE: f64 = 0.03;
/// The chance that a leader, back from a pause past its lease, writes with
/// its old lease before it steps (the case fencing exists for).
const ZOMBIE_CHANCE: f64 = 0.5;

struct OpenTerm {
    token: u64,
    lease: Lease,
    start: Instant,
    /// An upper bound on when the last successful grant or renew was sent.
    renewed_from: Instant,
}

impl OpenTerm {
    fn deadline(&self) -> Instant {
        self.renewed_from + Duration::from_millis(RENEW_DEADLINE_MS)
    }
}

pub struct Member<'a> {
    shared: &'a Shared<'a>,
    process: Arc<Process>,
    p: usize,
    k: usize,
    generation: u32,
    instance: Option<Instance>,
    elector: Option<ResourceAny>,
    first: FirstRequest,
    rng: Rng,
    term: Option<OpenTerm>,
    pause_seen: u64,
    next_step: Instant,
    next_write: Instant,
    record: MemberRecord,
}

fn describe(r: &StepResult) -> String {
    let role = match &r.role {
        Role::Leader(l) => format!("leader(t{})", l.token),
        Role::Follower(Some(s)) => format!("follower(of t{} live={})", s.token, s.live),
        Role::Follower(None) => "follower(?)".into(),
        Role::Candidate => "candidate".into(),
    };
    let events: Vec<String> = r
        .events
        .iter()
        .map(|e| match e {
            ElectorEvent::BecameLeader(l) => format!("became-leader(t{})", l.token),
            ElectorEvent::StoppedLeading(s) => format!("stopped-leading({s:?})"),
            ElectorEvent::LeaderChanged(Some(s)) => format!("leader-changed(t{})", s.token),
            ElectorEvent::LeaderChanged(None) => "leader-changed(none)".into(),
        })
        .collect();
    let error = r
        .last_error
        .as_ref()
        .map(|e| format!(" error {}", e.kind()))
        .unwrap_or_default();
    format!("{role} [{}]{error}", events.join(", "))
}

impl<'a> Member<'a> {
    /// Creates the member's first instance, then waits for every other.
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
            instance: None,
            elector: None,
            first: FirstRequest::default(),
            rng: Rng::new(instance_seed(shared.config.seed, p, k, generation) ^ 0x5eed),
            term: None,
            pause_seen: 0,
            next_step: shared.t0,
            next_write: shared.t0,
            record: MemberRecord::default(),
        };
        m.spawn_instance();
        barrier.wait();
        m
    }

    fn violation(&mut self, invariant: &'static str, detail: String) {
        self.record.violations.push(Violation {
            invariant,
            detail: format!(
                "process {} gen {} {}: {detail}",
                self.p,
                self.generation,
                key_name(self.k)
            ),
        });
    }

    /// A fresh process's instance: new store, client, elector and holder id.
    fn spawn_instance(&mut self) {
        self.generation = self.process.generation();
        self.pause_seen = self.process.latest_pause().map_or(0, |(n, _)| n);
        self.rng = Rng::new(
            instance_seed(self.shared.config.seed, self.p, self.k, self.generation) ^ 0x5eed,
        );
        let made = self.shared.harness.instance().map_err(|e| format!("{e:#}"));
        let mut instance = match made {
            Ok(i) => i,
            Err(e) => return self.violation("setup", format!("instantiate: {e}")),
        };
        instance.hooks.set_policy(
            RequestFaults::new(
                instance_seed(self.shared.config.seed, self.p, self.k, self.generation),
                self.shared.config.request_fault_rate,
                self.shared.counts.clone(),
                self.process.clone(),
                self.first.clone(),
            )
            .into_policy(),
        );
        instance.skew_clock_ms(self.process.clock_offset_ms.load(Ordering::SeqCst));
        match instance.open(&self.shared.client_configs[self.k]) {
            Ok(Ok(())) => {}
            other => return self.violation("setup", format!("open: {other:?}")),
        }
        let config = ElectorConfig {
            key: key_name(self.k),
            lease_duration_ms: super::LEASE_MS,
            renew_deadline_ms: RENEW_DEADLINE_MS,
            retry_period_ms: RETRY_MS,
            // A fresh random id per elector: a restart is a new holder.
            holder_id: None,
            metadata: Some(format!("process {} generation {}", self.p, self.generation)),
        };
        match instance.elector(&config) {
            Ok(Ok(e)) => self.elector = Some(e),
            other => return self.violation("setup", format!("elector: {other:?}")),
        }
        self.instance = Some(instance);
    }

    /// Steps and writes until the end of the run.
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
            if self.elector.is_none() {
                std::thread::sleep(POLL.min(t_end - now));
                continue;
            }
            if now >= self.next_step {
                self.step();
                continue;
            }
            let leading = self.term.as_ref().is_some_and(|t| now < t.deadline());
            if leading && now >= self.next_write {
                if let Some(lease) = self.term.as_ref().map(|t| t.lease.clone()) {
                    self.write(lease, false);
                }
                continue;
            }
            let mut wake = self.next_step.min(t_end);
            if leading {
                wake = wake.min(self.next_write);
            }
            std::thread::sleep(wake.saturating_duration_since(now).min(POLL));
        }
        self.close_term(t_end, "end of run");
        // Stop stepping, as a process that exits without resigning.
        self.instance = None;
        self.record
    }

    /// After a call that ended at `end`: true when the process had died
    /// before, so nobody saw what the call returned.
    fn died_during(&self, end: Instant) -> bool {
        self.process.generation() != self.generation
            && self.process.last_crash().is_none_or(|c| c.at <= end)
    }

    fn take_requests(&mut self) {
        let Some(instance) = &self.instance else {
            return;
        };
        let taken = instance.hooks.take_requests();
        self.record.requests += taken.len() as u64;
        if let Some(bad) = taken.iter().find(|r| !r.payload_hash_ok) {
            let detail = format!("payload hash mismatch on {bad:?}");
            self.violation("requests as signed", detail);
        }
    }

    fn sync_clock(&self) {
        if let Some(i) = &self.instance {
            i.skew_clock_ms(self.process.clock_offset_ms.load(Ordering::SeqCst));
        }
    }

    /// Believes from `start`, the end of the step (which began at
    /// `step_start`) that reported the grant.
    fn open_term(
        &mut self,
        lease: Lease,
        step_start: Instant,
        start: Instant,
        renewed_from: Instant,
    ) {
        self.record.grants.push(Grant {
            key: self.k,
            process: self.p,
            generation: self.generation,
            token: lease.token,
            step_start,
            step_end: start,
        });
        self.term = Some(OpenTerm {
            token: lease.token,
            lease,
            start,
            renewed_from,
        });
        self.shared.leaders[self.k].store(self.p, Ordering::SeqCst);
        self.next_write = start;
    }

    /// Ends the belief at `at`, or at its deadline if that came first.
    fn close_term(&mut self, at: Instant, why: &str) -> Option<Instant> {
        let t = self.term.take()?;
        let end = at.min(t.deadline()).max(t.start);
        let ended_by = if at <= t.deadline() {
            why.to_string()
        } else {
            format!("renew deadline (then {why})")
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
        Some(end)
    }

    /// The process died: its store is dropped without another call into
    /// it (nothing released), and it restarts as a fresh process.
    fn crashed(&mut self) {
        let crash = self.process.last_crash();
        let at = crash.map_or_else(Instant::now, |c| c.at);
        if self.term.as_ref().is_some_and(|t| at < t.deadline()) {
            self.record.leader_faults.push(LeaderFault {
                key: self.k,
                process: self.p,
                at,
                crash: true,
            });
        }
        self.close_term(at, "crash");
        self.take_requests();
        self.elector = None;
        self.instance = None;
        let restart = crash.map_or_else(Instant::now, |c| c.restart_at);
        std::thread::sleep(
            restart
                .min(self.shared.t_end)
                .saturating_duration_since(Instant::now()),
        );
        if Instant::now() < self.shared.t_end {
            self.spawn_instance();
            self.next_step = Instant::now();
        } else {
            self.generation = self.process.generation();
        }
    }

    /// The process stops for `ms`; a leader may then write with the lease
    /// it held before, without stepping first.
    fn pause(&mut self, ms: u64) {
        let at = Instant::now();
        let held = self
            .term
            .as_ref()
            .filter(|t| at < t.deadline())
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
        self.next_step = Instant::now();
    }

    fn step(&mut self) {
        let (Some(elector), Some(instance)) = (self.elector, self.instance.as_mut()) else {
            return;
        };
        self.first.reset();
        instance.skew_clock_ms(self.process.clock_offset_ms.load(Ordering::SeqCst));
        let start = Instant::now();
        let result = instance.step(elector);
        let end = Instant::now();
        if self.died_during(end) {
            return;
        }
        self.take_requests();
        self.record.steps += 1;
        let r = match result {
            Ok(r) => r,
            Err(trap) => {
                self.violation("nothing traps", format!("step trapped: {trap:#}"));
                self.close_term(start, "trap");
                self.elector = None;
                self.instance = None;
                return;
            }
        };
        self.next_step = end + Duration::from_millis(r.next_step_in_ms.min(RETRY_MS));
        if let Some(e) = &r.last_error {
            *self.record.step_errors.entry(e.kind()).or_default() += 1;
            if !crate::hooks::is_fault_error(e) {
                let detail = format!("step failed unexpectedly: {e:?}");
                self.violation("no unexpected errors", detail);
            }
        }
        let sent_by = self.first.get().unwrap_or(end).min(end);
        self.judge_step(&r, start, end, sent_by);
    }

    /// Updates belief from one step's result, and checks the elector's
    /// contract: leader only after `became-leader`, never past the deadline,
    /// `stopped-leading` whenever it stops.
    fn judge_step(&mut self, r: &StepResult, start: Instant, end: Instant, sent_by: Instant) {
        let became = r.events.iter().find_map(|e| match e {
            ElectorEvent::BecameLeader(l) => Some(l.token),
            _ => None,
        });
        let stopped = r
            .events
            .iter()
            .any(|e| matches!(e, ElectorEvent::StoppedLeading(_)));
        let leading = match &r.role {
            Role::Leader(l) => Some(l.clone()),
            _ => None,
        };
        let open = self.term.as_ref().map(|t| (t.token, t.lease.clone()));
        match (open, leading) {
            (Some((token, lease)), Some(now)) if now.token == token && became.is_none() => {
                if stopped {
                    let detail = format!("stopped leading but still leads: {}", describe(r));
                    self.violation("elector contract", detail);
                }
                if let Some(t) = self.term.as_mut() {
                    if now != lease {
                        // Renewed in this step.
                        t.renewed_from = sent_by;
                        t.lease = now;
                    }
                    if end > t.deadline() + DEADLINE_TOLERANCE {
                        let late = end.saturating_duration_since(t.deadline()).as_millis();
                        let detail = format!(
                            "reports leader (t{token}) {late} ms past its renew deadline: {}",
                            describe(r)
                        );
                        self.violation("elector contract", detail);
                    }
                }
            }
            (Some((token, _)), Some(now)) => {
                self.close_term(start, "re-elected within a step");
                if now.token <= token || became != Some(now.token) || !stopped {
                    let detail = format!("led with t{token}, then a step reports {}", describe(r));
                    self.violation("elector contract", detail);
                }
                self.open_term(now, start, end, sent_by);
            }
            (Some((token, _)), None) => {
                self.close_term(start, "stopped leading");
                if !stopped {
                    let detail = format!(
                        "led with t{token}; no longer leader without stopped-leading: {}",
                        describe(r)
                    );
                    self.violation("elector contract", detail);
                }
            }
            (None, Some(now)) => {
                if became != Some(now.token) {
                    let detail = format!("leader without became-leader: {}", describe(r));
                    self.violation("elector contract", detail);
                }
                self.open_term(now, start, end, sent_by);
            }
            (None, None) => {
                if became.is_some() {
                    let detail = format!("became leader and stopped in one step: {}", describe(r));
                    self.violation("elector contract", detail);
                }
            }
        }
    }

    /// One fenced write (or, rarely, delete) to the key's current object
    /// with `lease`'s token inside the body.
    fn write(&mut self, lease: Lease, zombie: bool) {
        let now = Instant::now();
        self.next_write = now + Duration::from_millis(WRITE_EVERY_MS);
        let object = self.shared.object(self.k, now);
        if !self.shared.reserve(&object) {
            self.record.writes_skipped += 1;
            return;
        }
        let value = self.shared.next_value();
        let delete = !zombie && self.rng.chance(DELETE_CHANCE);
        let body = super::history::body(self.p, self.generation, lease.token, value);
        self.sync_clock();
        let Some(instance) = self.instance.as_mut() else {
            return;
        };
        let start = Instant::now();
        // Ok(None): deleted.
        let result: anyhow::Result<Result<Option<FencedWrite>, LeaseError>> = if delete {
            match instance.fenced_delete(&lease, &object) {
                Ok(Ok(())) => Ok(Ok(None)),
                Ok(Err(e)) => Ok(Err(e)),
                Err(trap) => Err(trap),
            }
        } else {
            match instance.fenced_put(&lease, &object, body.as_bytes(), "application/json") {
                Ok(Ok(w)) => Ok(Ok(Some(w))),
                Ok(Err(e)) => Ok(Err(e)),
                Err(trap) => Err(trap),
            }
        };
        let end = Instant::now();
        let died = self.died_during(end);
        if !died {
            self.take_requests();
        }
        let outcome = match result {
            _ if died => FencedOutcome::Unknown("the process died during the call".into()),
            Err(trap) => {
                self.violation("nothing traps", format!("fenced call trapped: {trap:#}"));
                self.close_term(start, "trap");
                self.elector = None;
                self.instance = None;
                FencedOutcome::Unknown("trap".into())
            }
            Ok(Ok(Some(w))) => {
                if w.token != lease.token || w.object_key != object {
                    let detail = format!("wrote {object} with t{} and got {w:?}", lease.token);
                    self.violation("fenced replies", detail);
                }
                FencedOutcome::Written {
                    token: w.token,
                    etag: w.etag,
                    previous_token: w.previous_token,
                }
            }
            Ok(Ok(None)) => FencedOutcome::Deleted,
            Ok(Err(LeaseError::Fenced(f))) => {
                if f.our_token != lease.token || f.object_key != object {
                    let detail = format!("wrote {object} with t{} and got {f:?}", lease.token);
                    self.violation("fenced replies", detail);
                }
                FencedOutcome::Fenced {
                    our_token: f.our_token,
                    stored_token: f.stored_token,
                }
            }
            Ok(Err(e)) => {
                if !crate::hooks::is_fault_error(&e) {
                    let detail = format!("fenced call failed unexpectedly: {e:?}");
                    self.violation("no unexpected errors", detail);
                }
                FencedOutcome::Unknown(e.kind().into())
            }
        };
        self.record.fenced.push(FencedOp {
            key: self.k,
            object,
            process: self.p,
            generation: self.generation,
            token: lease.token,
            value,
            delete,
            zombie,
            start,
            end,
            outcome,
        });
    }
}

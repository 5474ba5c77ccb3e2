//! A thread that steps the component's elector and reports what changed,
//! and a watchdog that ends leadership on time.
//!
//! A step is synchronous and can block for as long as its requests take.
//! The component bounds them by the renew deadline, but a host or a network
//! may not honour that, so leadership is judged on this process's monotonic
//! clock by `s3_lease_keep::leadership` (a state machine the simulation
//! drives on virtual time): from the instant the last step said it holds
//! until (`leading-until-ms`), never from whichever step returned last. At
//! that instant the watchdog reports `StoppedLeading(RenewDeadline)` and
//! `role` stops saying `Leader`, whether or not the step has returned. The
//! two threads here only sleep until the machine's next instant and call.

use crate::bindings::{
    ElectorConfig, ElectorEvent, Lease, LockState, Role, StepResult, StopReason,
};
use crate::stats::ElectorStats;
use crate::{Client, Error};
use s3_lease_keep::leadership::{self, Leadership};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceAny;

/// What the elector saw, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElectionEvent {
    BecameLeader(Lease),
    StoppedLeading(StopReason),
    LeaderChanged(Option<LockState>),
    /// The elector could not go on (the component trapped); if it was
    /// leading, it no longer is.
    Failed(String),
}

/// A campaign for one key, on a thread of its own. Dropping it resigns.
pub struct Elector {
    shared: Arc<Shared>,
    events: Receiver<ElectionEvent>,
    stepper: Option<JoinHandle<Result<(), Error>>>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

type Machine = Leadership<Lease, LockState>;

struct State {
    leadership: Machine,
    last_error: Option<String>,
    stop: Option<Stop>,
    events: Sender<ElectionEvent>,
    stats: ElectorStats,
}

/// The process-wide monotonic clock in ms: the one the component reads
/// (`crate::monotonic`), so its `leading-until-ms` compares as it is.
fn now_ms() -> u64 {
    crate::monotonic::ms_of(Instant::now())
}

impl State {
    fn new(events: Sender<ElectionEvent>) -> State {
        State {
            leadership: Leadership::new(now_ms()),
            last_error: None,
            stop: None,
            events,
            stats: ElectorStats::default(),
        }
    }

    /// A receiver that went away just stops listening.
    fn report(&mut self, event: ElectionEvent) {
        match &event {
            ElectionEvent::BecameLeader(lease) => {
                self.stats.leadership_changes += 1;
                self.stats.leader_token = Some(lease.token);
                self.stats.leader_holder = Some(lease.holder_id.clone());
            }
            ElectionEvent::StoppedLeading(_) => self.stats.leadership_changes += 1,
            ElectionEvent::LeaderChanged(seen) => {
                self.stats.leader_token = seen.as_ref().map(|s| s.token);
                self.stats.leader_holder = seen.as_ref().map(|s| s.holder_id.clone());
            }
            ElectionEvent::Failed(_) => {}
        }
        let _ = self.events.send(event);
    }

    fn report_all(&mut self, events: Vec<leadership::Event<Lease, LockState>>) {
        for event in events {
            self.report(from_machine(event));
        }
    }

    /// Counts a step that was sent at `sent` and took `took`.
    fn record_step(
        &mut self,
        was_leading: bool,
        now: u64,
        sent: Instant,
        took: Duration,
        failed: bool,
    ) {
        let leading = self.leadership.is_leading(now);
        let stats = &mut self.stats;
        stats.steps += 1;
        if failed {
            stats.failed_steps += 1;
            return;
        }
        stats.last_success = Some(sent);
        match (was_leading, leading) {
            (true, true) => {
                stats.last_renew = Some(sent);
                stats.renew_latency.observe(took);
            }
            (false, true) => stats.acquire_latency.observe(took),
            _ => {}
        }
    }

    /// The watchdog's rule: ends leadership if its deadline has passed;
    /// true while still leading.
    fn check_deadline(&mut self, now: u64) -> bool {
        if let Some(event) = self.leadership.check(now) {
            self.report(from_machine(event));
        }
        self.leadership.is_leading(now)
    }

    /// Leadership ended for `reason` (if it had not already): said once.
    fn stop_leading(&mut self, reason: leadership::StopReason) {
        if let Some(event) = self.leadership.stop(reason) {
            self.report(from_machine(event));
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Resign,
    /// Stop stepping without releasing (the lease runs out): a crash, to S3.
    Abandon,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The role, except that leadership ends at its deadline even while a
    /// step is still under way.
    fn role(&self) -> Role {
        let mut state = self.lock();
        let now = now_ms();
        state.check_deadline(now);
        to_wit_role(state.leadership.role(now))
    }

    fn last_error(&self) -> Option<String> {
        self.lock().last_error.clone()
    }

    /// `leading` judged by the watchdog's rule, as `role` is.
    fn stats(&self) -> ElectorStats {
        let mut state = self.lock();
        let leading = state.check_deadline(now_ms());
        let mut stats = state.stats.clone();
        stats.leading = leading;
        stats
    }
}

impl Elector {
    pub(crate) fn start(client: Client, config: &ElectorConfig) -> Result<Self, Error> {
        let handle = client.call(|i| i.elector(config))?;
        let (tx, events) = channel();
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(tx)),
            wake: Condvar::new(),
        });
        let watchdog = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("s3-lease-watchdog".into())
                .spawn(move || watch_deadline(&shared))
                .map_err(|e| Error::Host(e.into()))?
        };
        let stepper = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("s3-lease-elector".into())
                .spawn(move || {
                    let result = step_until_stopped(client, handle, &shared);
                    // The stepper is done: so is the watchdog.
                    shared.lock().stop.get_or_insert(Stop::Abandon);
                    shared.wake.notify_all();
                    let _ = watchdog.join();
                    result
                })
                .map_err(|e| Error::Host(e.into()))?
        };
        Ok(Elector {
            shared,
            events,
            stepper: Some(stepper),
        })
    }

    /// Leadership changes, in order.
    pub fn events(&self) -> &Receiver<ElectionEvent> {
        &self.events
    }

    /// The role now: as of the last step, except that leadership ends at
    /// its deadline even while a step is still under way.
    pub fn role(&self) -> Role {
        self.shared.role()
    }

    /// While leading: the instant leadership ends unless renewed first.
    /// Stop acting as leader then, whatever else you have heard.
    pub fn leading_until(&self) -> Option<Instant> {
        let mut state = self.shared.lock();
        let now = now_ms();
        state.check_deadline(now);
        state
            .leadership
            .leading_until(now)
            .map(crate::monotonic::instant_of_ms)
    }

    /// The lease while leading.
    pub fn leader_lease(&self) -> Option<Lease> {
        match self.role() {
            Role::Leader(lease) => Some(lease),
            _ => None,
        }
    }

    /// Why the last step's attempt failed, if it did (the elector keeps trying).
    pub fn last_error(&self) -> Option<String> {
        self.shared.last_error()
    }

    /// What this elector has done so far: see [`ElectorStats`].
    pub fn stats(&self) -> ElectorStats {
        self.shared.stats()
    }

    /// A handle another thread can read the role and stats through (a
    /// status endpoint, a metrics exporter) while this one supervises.
    pub fn watcher(&self) -> ElectorWatcher {
        ElectorWatcher {
            shared: self.shared.clone(),
        }
    }

    /// Releases the lease if leading and stops campaigning.
    pub fn resign(mut self) -> Result<(), Error> {
        self.stop(Stop::Resign)
    }

    /// Stops campaigning without releasing: the lease runs out on its own.
    pub fn abandon(mut self) {
        let _ = self.stop(Stop::Abandon);
    }

    fn stop(&mut self, how: Stop) -> Result<(), Error> {
        self.shared.lock().stop.get_or_insert(how);
        self.shared.wake.notify_all();
        match self.stepper.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(Error::Trap("the elector thread panicked".into())),
            None => Ok(()),
        }
    }
}

/// Reads an [`Elector`]'s role and stats from any thread; it never steps,
/// so reading cannot delay a renew.
#[derive(Clone)]
pub struct ElectorWatcher {
    shared: Arc<Shared>,
}

impl ElectorWatcher {
    /// As [`Elector::stats`]; `leading` is judged by the watchdog's rule,
    /// as [`Elector::role`] is.
    pub fn stats(&self) -> ElectorStats {
        self.shared.stats()
    }

    /// As [`Elector::role`].
    pub fn role(&self) -> Role {
        self.shared.role()
    }

    /// As [`Elector::last_error`].
    pub fn last_error(&self) -> Option<String> {
        self.shared.last_error()
    }
}

impl Drop for Elector {
    fn drop(&mut self) {
        let _ = self.stop(Stop::Resign);
    }
}

/// Ends leadership at its deadline, whatever the stepper is doing.
fn watch_deadline(shared: &Shared) {
    let mut state = shared.lock();
    while state.stop.is_none() {
        let now = now_ms();
        let wait = if state.check_deadline(now) {
            Duration::from_millis(state.leadership.leading_until(now).unwrap_or(now) - now)
        } else {
            // Not leading: woken when a step makes us leader.
            Duration::from_secs(3600)
        };
        state = shared
            .wake
            .wait_timeout(state, wait)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

fn step_until_stopped(client: Client, handle: ResourceAny, shared: &Shared) -> Result<(), Error> {
    loop {
        let generation = client.credentials_refreshes();
        let sent = Instant::now();
        let was_leading = shared.lock().leadership.is_leading(now_ms());
        let step = match client.call(|i| i.step(handle).map(Ok)) {
            Ok(step) => step,
            Err(e) => {
                // `Failed` says it all: if it was leading, it no longer is.
                let mut state = shared.lock();
                state.leadership.stop(leadership::StopReason::RenewDeadline);
                state.report(ElectionEvent::Failed(e.to_string()));
                return Err(e);
            }
        };
        // The store refused our credentials (a renew under expired ones):
        // with new ones in, step again now rather than a retry period on,
        // still within the renew deadline the step bounds itself by.
        let refused = step
            .last_error
            .as_ref()
            .is_some_and(crate::credentials::refused_credentials);
        let again_now = refused && client.renew_credentials(generation);
        let failed = step.last_error.is_some();
        let now = now_ms();
        let mut state = shared.lock();
        apply(&mut state, step, now);
        if again_now {
            state.leadership.step_now(now);
        }
        state.record_step(was_leading, now, sent, sent.elapsed(), failed);
        shared.wake.notify_all();
        loop {
            if state.stop.is_some() {
                break;
            }
            let next = state.leadership.next_step_at();
            let now = now_ms();
            if now >= next {
                break;
            }
            state = shared
                .wake
                .wait_timeout(state, Duration::from_millis(next - now))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        if let Some(how) = state.stop {
            state.stop_leading(leadership::StopReason::Resigned);
            drop(state);
            let resigned = match how {
                Stop::Resign => client.call(|i| i.resign(handle)),
                Stop::Abandon => Ok(()),
            };
            let _ = client.call(|i| i.drop_elector(handle).map(Ok));
            return resigned;
        }
    }
}

/// Takes in what a step returned, judged by the leadership machine on the
/// host's clock; reports the events it lets through.
fn apply(state: &mut State, step: StepResult, now: u64) {
    state.last_error = step.last_error.map(|e| Error::from(e).to_string());
    let step = leadership::Step {
        role: from_wit_role(step.role),
        events: step.events.into_iter().map(from_wit_event).collect(),
        leading_until_ms: step.leading_until_ms,
        next_step_in_ms: step.next_step_in_ms,
    };
    let events = state.leadership.apply(step, now);
    state.report_all(events);
}

fn from_wit_role(role: Role) -> leadership::Role<Lease, LockState> {
    match role {
        Role::Leader(lease) => leadership::Role::Leader(lease),
        Role::Follower(seen) => leadership::Role::Follower(seen),
        Role::Candidate => leadership::Role::Candidate,
    }
}

fn to_wit_role(role: leadership::Role<Lease, LockState>) -> Role {
    match role {
        leadership::Role::Leader(lease) => Role::Leader(lease),
        leadership::Role::Follower(seen) => Role::Follower(seen),
        leadership::Role::Candidate => Role::Candidate,
    }
}

fn from_wit_event(event: ElectorEvent) -> leadership::Event<Lease, LockState> {
    match event {
        ElectorEvent::BecameLeader(lease) => leadership::Event::BecameLeader(lease),
        ElectorEvent::StoppedLeading(reason) => leadership::Event::StoppedLeading(match reason {
            StopReason::RenewDeadline => leadership::StopReason::RenewDeadline,
            StopReason::Lost => leadership::StopReason::Lost,
            StopReason::Resigned => leadership::StopReason::Resigned,
        }),
        ElectorEvent::LeaderChanged(seen) => leadership::Event::LeaderChanged(seen),
    }
}

fn from_machine(event: leadership::Event<Lease, LockState>) -> ElectionEvent {
    match event {
        leadership::Event::BecameLeader(lease) => ElectionEvent::BecameLeader(lease),
        leadership::Event::StoppedLeading(reason) => ElectionEvent::StoppedLeading(match reason {
            leadership::StopReason::RenewDeadline => StopReason::RenewDeadline,
            leadership::StopReason::Lost => StopReason::Lost,
            leadership::StopReason::Resigned => StopReason::Resigned,
        }),
        leadership::Event::LeaderChanged(seen) => ElectionEvent::LeaderChanged(seen),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(token: u64) -> Lease {
        Lease {
            key: "k".into(),
            token,
            holder_id: "me".into(),
            etag: "\"e\"".into(),
            expires_at_ms: 0,
            acquired_at_ms: 0,
            ttl_ms: 10_000,
            metadata: String::new(),
            seal: "v2.".into(),
        }
    }

    fn step(role: Role, events: Vec<ElectorEvent>, until: Option<u64>) -> StepResult {
        StepResult {
            role,
            events,
            next_step_in_ms: 100,
            leading_until_ms: until,
            last_error: None,
        }
    }

    #[test]
    fn stats_count_leadership_changes_renews_and_the_last_success() {
        let (tx, _rx) = channel();
        let mut s = State::new(tx);
        let t0 = 1_000;
        let sent = Instant::now();
        let won = step(
            Role::Leader(lease(7)),
            vec![ElectorEvent::BecameLeader(lease(7))],
            Some(t0 + 5_000),
        );
        apply(&mut s, won, t0);
        s.record_step(false, t0, sent, Duration::from_millis(3), false);
        let renewed = step(Role::Leader(lease(7)), vec![], Some(t0 + 6_000));
        let t1 = t0 + 1_000;
        apply(&mut s, renewed, t1);
        s.record_step(true, t1, sent, Duration::from_millis(2), false);
        s.record_step(true, t1, sent, Duration::from_millis(2), true);
        assert_eq!(s.stats.leader_token, Some(7));
        assert_eq!(s.stats.leadership_changes, 1);
        assert_eq!((s.stats.steps, s.stats.failed_steps), (3, 1));
        assert_eq!(s.stats.acquire_latency.count, 1);
        assert_eq!(s.stats.renew_latency.count, 1);
        assert_eq!(s.stats.last_renew, Some(sent));
        assert_eq!(s.stats.last_success, Some(sent));
        assert!(!s.check_deadline(t0 + 7_000));
        assert_eq!(s.stats.leadership_changes, 2);
    }
}

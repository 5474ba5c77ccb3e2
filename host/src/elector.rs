//! A thread that steps the component's elector and reports what changed,
//! and a watchdog that ends leadership on time.
//!
//! A step is synchronous and can block for as long as its requests take.
//! The component bounds them by the renew deadline, but a host or a network
//! may not honour that, so leadership is judged here, on this process's
//! monotonic clock, from the instant the last step said it holds until
//! (`leading-until-ms`), never from whichever step returned last: at that
//! instant the watchdog reports `StoppedLeading(RenewDeadline)` and `role`
//! stops saying `Leader`, whether or not the step has returned.

use crate::bindings::{
    ElectorConfig, ElectorEvent, Lease, LockState, Role, StepResult, StopReason,
};
use crate::stats::ElectorStats;
use crate::{Client, Error};
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

struct State {
    role: Role,
    /// While we lead: when leadership ends unless a step renews it first.
    /// `None` exactly when this host has reported that it does not lead.
    leading_until: Option<Instant>,
    last_error: Option<String>,
    stop: Option<Stop>,
    events: Sender<ElectionEvent>,
    stats: ElectorStats,
}

impl State {
    fn new(events: Sender<ElectionEvent>) -> State {
        State {
            role: Role::Candidate,
            leading_until: None,
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

    /// Counts a step that was sent at `sent` and took `took`.
    fn record_step(&mut self, was_leading: bool, sent: Instant, took: Duration, failed: bool) {
        let stats = &mut self.stats;
        stats.steps += 1;
        if failed {
            stats.failed_steps += 1;
            return;
        }
        stats.last_success = Some(sent);
        match (was_leading, self.leading_until.is_some()) {
            (true, true) => {
                stats.last_renew = Some(sent);
                stats.renew_latency.observe(took);
            }
            (false, true) => stats.acquire_latency.observe(took),
            _ => {}
        }
    }

    /// Leadership ended (if it had not already): say so once.
    fn stop_leading(&mut self, reason: StopReason) {
        if self.leading_until.take().is_some() {
            self.report(ElectionEvent::StoppedLeading(reason));
        }
        if matches!(self.role, Role::Leader(_)) {
            self.role = Role::Candidate;
        }
    }

    /// Ends leadership if its deadline has passed; true while still leading.
    fn check_deadline(&mut self, now: Instant) -> bool {
        match self.leading_until {
            Some(until) if now >= until => {
                self.stop_leading(StopReason::RenewDeadline);
                false
            }
            Some(_) => true,
            None => false,
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
        state.check_deadline(Instant::now());
        state.role.clone()
    }

    fn last_error(&self) -> Option<String> {
        self.lock().last_error.clone()
    }

    /// `leading` judged by the watchdog's rule, as `role` is.
    fn stats(&self) -> ElectorStats {
        let mut state = self.lock();
        let leading = state.check_deadline(Instant::now());
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
        state.check_deadline(Instant::now());
        state.leading_until
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
        let now = Instant::now();
        let leading = state.check_deadline(now);
        let wait = match state.leading_until {
            Some(until) if leading => until - now,
            // Not leading: woken when a step makes us leader.
            _ => Duration::from_secs(3600),
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
        let was_leading = shared.lock().leading_until.is_some();
        let step = match client.call(|i| i.step(handle).map(Ok)) {
            Ok(step) => step,
            Err(e) => {
                // `Failed` says it all: if it was leading, it no longer is.
                let mut state = shared.lock();
                state.leading_until = None;
                state.role = Role::Candidate;
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
        let now = Instant::now();
        let next = if again_now {
            now
        } else {
            now + Duration::from_millis(step.next_step_in_ms)
        };
        let failed = step.last_error.is_some();
        let mut state = shared.lock();
        apply(&mut state, step, now);
        state.record_step(was_leading, sent, now - sent, failed);
        shared.wake.notify_all();
        while state.stop.is_none() && Instant::now() < next {
            let wait = next.saturating_duration_since(Instant::now());
            state = shared
                .wake
                .wait_timeout(state, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        if let Some(how) = state.stop {
            let was_leading = state.leading_until.take().is_some();
            state.role = Role::Candidate;
            drop(state);
            let resigned = match how {
                Stop::Resign => client.call(|i| i.resign(handle)),
                Stop::Abandon => Ok(()),
            };
            if was_leading {
                shared
                    .lock()
                    .report(ElectionEvent::StoppedLeading(StopReason::Resigned));
            }
            let _ = client.call(|i| i.drop_elector(handle).map(Ok));
            return resigned;
        }
    }
}

/// Takes in what a step returned, judged against the host's clock: the
/// component's events in order, except that leadership is reported only
/// while its deadline is ahead, and ended once (by the step or by the
/// watchdog, whichever saw it first).
fn apply(state: &mut State, step: StepResult, now: Instant) {
    let until = step
        .leading_until_ms
        .map(crate::monotonic::instant_of_ms)
        .filter(|&until| until > now);
    state.last_error = step.last_error.map(|e| Error::from(e).to_string());
    for event in step.events {
        match event {
            ElectorEvent::BecameLeader(lease) => {
                if state.leading_until.is_none() && until.is_some() {
                    state.leading_until = until;
                    state.report(ElectionEvent::BecameLeader(lease));
                }
            }
            ElectorEvent::StoppedLeading(reason) => state.stop_leading(reason),
            ElectorEvent::LeaderChanged(seen) => state.report(ElectionEvent::LeaderChanged(seen)),
        }
    }
    match (&step.role, until) {
        (Role::Leader(lease), Some(until)) => {
            if state.leading_until.is_none() {
                // The watchdog ended this term, then a renew sent before
                // the deadline was confirmed: a new term, said as one.
                state.report(ElectionEvent::BecameLeader(lease.clone()));
            }
            state.leading_until = Some(until);
        }
        // The step returned after its own deadline (or not as leader).
        _ => state.stop_leading(StopReason::RenewDeadline),
    }
    state.role = match step.role {
        Role::Leader(_) if state.leading_until.is_none() => Role::Candidate,
        role => role,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::Receiver;

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

    fn state() -> (State, Receiver<ElectionEvent>) {
        // The clock's origin is set on first use: before any `now` here.
        crate::monotonic::instant_of_ms(0);
        let (tx, rx) = channel();
        (State::new(tx), rx)
    }

    /// A step result whose leadership ends at `until`, on the component's
    /// clock as the host maps it.
    fn step(role: Role, events: Vec<ElectorEvent>, until: Option<Instant>) -> StepResult {
        let origin = crate::monotonic::instant_of_ms(0);
        StepResult {
            role,
            events,
            next_step_in_ms: 100,
            leading_until_ms: until.map(|u| u.duration_since(origin).as_millis() as u64),
            last_error: None,
        }
    }

    fn drain(rx: &Receiver<ElectionEvent>) -> Vec<ElectionEvent> {
        rx.try_iter().collect()
    }

    #[test]
    fn leadership_is_reported_until_its_deadline_and_ended_once() {
        let (mut s, rx) = state();
        let now = Instant::now();
        let until = now + Duration::from_secs(5);
        let won = step(
            Role::Leader(lease(1)),
            vec![ElectorEvent::BecameLeader(lease(1))],
            Some(until),
        );
        apply(&mut s, won, now);
        assert_eq!(drain(&rx), vec![ElectionEvent::BecameLeader(lease(1))]);
        assert!(s.check_deadline(now));
        // The watchdog, at the deadline, while the next step is blocked.
        assert!(!s.check_deadline(until + Duration::from_millis(1)));
        assert_eq!(
            drain(&rx),
            vec![ElectionEvent::StoppedLeading(StopReason::RenewDeadline)]
        );
        assert_eq!(s.role, Role::Candidate);
        // The blocked step returns: the component steps down too; not said twice.
        let late = step(
            Role::Candidate,
            vec![ElectorEvent::StoppedLeading(StopReason::RenewDeadline)],
            None,
        );
        apply(&mut s, late, until + Duration::from_secs(20));
        assert_eq!(drain(&rx), vec![]);
    }

    #[test]
    fn a_step_that_returns_after_its_own_deadline_is_not_leadership() {
        let (mut s, rx) = state();
        let now = Instant::now();
        let won = step(
            Role::Leader(lease(1)),
            vec![ElectorEvent::BecameLeader(lease(1))],
            Some(now),
        );
        apply(&mut s, won, now + Duration::from_millis(1));
        assert_eq!(drain(&rx), vec![]);
        assert_eq!(s.role, Role::Candidate);
        assert_eq!(s.leading_until, None);
    }

    #[test]
    fn a_renew_confirmed_after_the_watchdog_fired_is_a_new_term() {
        let (mut s, rx) = state();
        let now = Instant::now();
        let first = now + Duration::from_millis(50);
        let won = step(
            Role::Leader(lease(1)),
            vec![ElectorEvent::BecameLeader(lease(1))],
            Some(first),
        );
        apply(&mut s, won, now);
        s.check_deadline(first + Duration::from_millis(1));
        let renewed = step(
            Role::Leader(lease(1)),
            vec![],
            Some(now + Duration::from_secs(9)),
        );
        apply(&mut s, renewed, first + Duration::from_millis(2));
        assert_eq!(
            drain(&rx),
            vec![
                ElectionEvent::BecameLeader(lease(1)),
                ElectionEvent::StoppedLeading(StopReason::RenewDeadline),
                ElectionEvent::BecameLeader(lease(1)),
            ]
        );
        assert!(matches!(s.role, Role::Leader(_)));
    }
    #[test]
    fn stats_count_leadership_changes_renews_and_the_last_success() {
        let (mut s, _rx) = state();
        let t0 = Instant::now();
        let won = step(
            Role::Leader(lease(7)),
            vec![ElectorEvent::BecameLeader(lease(7))],
            Some(t0 + Duration::from_secs(5)),
        );
        apply(&mut s, won, t0);
        s.record_step(false, t0, Duration::from_millis(3), false);
        let renewed = step(
            Role::Leader(lease(7)),
            vec![],
            Some(t0 + Duration::from_secs(6)),
        );
        let t1 = t0 + Duration::from_secs(1);
        apply(&mut s, renewed, t1);
        s.record_step(true, t1, Duration::from_millis(2), false);
        s.record_step(true, t1, Duration::from_millis(2), true);
        assert_eq!(s.stats.leader_token, Some(7));
        assert_eq!(s.stats.leadership_changes, 1);
        assert_eq!((s.stats.steps, s.stats.failed_steps), (3, 1));
        assert_eq!(s.stats.acquire_latency.count, 1);
        assert_eq!(s.stats.renew_latency.count, 1);
        assert_eq!(s.stats.last_renew, Some(t1));
        assert_eq!(s.stats.last_success, Some(t1));
        s.check_deadline(t0 + Duration::from_secs(7));
        assert_eq!(s.stats.leadership_changes, 2);
    }
}

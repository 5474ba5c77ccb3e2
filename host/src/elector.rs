//! Leader election on a task: it steps the component's elector when the
//! last step said to, and judges leadership by `s3_lease_keep::leadership`
//! on its client's clock (suspended time counted; the component's
//! monotonic clock is the same one): from the instant the last step said
//! it holds until (`leading-until-ms`), never from whichever step returned
//! last. At that instant the role stops saying leader and
//! `StoppedLeading(RenewDeadline)` is reported, whether or not the step
//! under way has returned (a step runs on a blocking thread; the task
//! waits for it and for the deadline at once).

use crate::calls::Calls;
use crate::client::Client;
use crate::component::{self, ElectorHandle, StepReport};
use crate::engine::clock::Clock;
use crate::engine::monotonic;
use crate::error::Error;
use crate::observe::{campaign_span, traced, traced_quietly};
use crate::stats::ElectorStats;
use crate::types::{ElectionEvent, ElectorConfig, LeaseRecord, LockState, Role};
use s3_lease_keep::leadership::{self, Leadership};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::Instrument;

type Machine = Leadership<LeaseRecord, LockState>;

/// A campaign for one key. Dropping it resigns (in the background).
pub struct Elector {
    shared: Arc<Shared>,
    role: watch::Receiver<Role>,
    events: mpsc::UnboundedReceiver<ElectionEvent>,
    stop: Option<oneshot::Sender<Stop>>,
    task: Option<tokio::task::JoinHandle<Result<(), Error>>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Resign,
    /// Stop stepping without releasing (the lease runs out): a crash, to the store.
    Abandon,
}

struct Shared {
    /// The key campaigned for, as the traces name it.
    key: String,
    /// The client's clock: its instances' monotonic clock too.
    clock: Clock,
    state: Mutex<State>,
    role: watch::Sender<Role>,
    events: mpsc::UnboundedSender<ElectionEvent>,
}

struct State {
    leadership: Machine,
    last_error: Option<Error>,
    stats: ElectorStats,
}

impl Shared {
    /// Now on the client's clock, in the component's monotonic ms, so its
    /// `leading-until-ms` compares as it is.
    fn now_ms(&self) -> u64 {
        monotonic::ms_of(self.clock.now())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reports `event` (a receiver that went away just stops listening),
    /// keeping the stats.
    fn report(&self, state: &mut State, event: ElectionEvent) {
        let stats = &mut state.stats;
        match &event {
            ElectionEvent::BecameLeader(lease) => {
                stats.leadership_changes += 1;
                stats.leader_token = Some(lease.token);
                stats.leader_holder = Some(lease.holder_id.clone());
            }
            ElectionEvent::StoppedLeading(_) => stats.leadership_changes += 1,
            ElectionEvent::LeaderChanged(seen) => {
                stats.leader_token = seen.as_ref().and_then(|s| s.token);
                stats.leader_holder = seen.as_ref().and_then(|s| s.holder_id.clone());
            }
            _ => {}
        }
        let _ = self.events.send(event);
    }

    fn report_all(
        &self,
        state: &mut State,
        events: Vec<leadership::Event<LeaseRecord, LockState>>,
    ) {
        for event in events {
            self.report(state, event.into());
        }
    }

    /// The watchdog's rule, now; publishes the role. True while leading.
    fn check(&self) -> bool {
        let mut state = self.lock();
        let now = self.now_ms();
        if let Some(event) = state.leadership.check(now) {
            self.report(&mut state, event.into());
        }
        self.publish(&state, now);
        state.leadership.is_leading(now)
    }

    fn publish(&self, state: &State, now: u64) {
        let role = Role::from(state.leadership.role(now));
        let mut was = None;
        self.role.send_if_modified(|current| {
            let changed = *current != role;
            was = changed.then(|| std::mem::replace(current, role.clone()));
            changed
        });
        if let Some(was) = was {
            // Its own target: a program that reports roles itself (the
            // command line does) turns these off and keeps the requests.
            let (role, was) = (role_name(&role), role_name(&was));
            tracing::info!(
                name: "s3lease.role",
                target: "s3_lease::elector",
                key = %self.key,
                role,
                was,
                "{}: {was} -> {role}",
                self.key
            );
        }
    }

    /// While leading: when leadership ends unless renewed first.
    fn leading_until(&self) -> Option<crate::engine::clock::Instant> {
        self.lock()
            .leadership
            .leading_until(self.now_ms())
            .map(monotonic::instant_of_ms)
    }
}

impl Client {
    /// Campaigns for `config.key` on a task of its own until the returned
    /// [`Elector`] is resigned or dropped.
    pub async fn elect(&self, config: &ElectorConfig) -> Result<Elector, Error> {
        Elector::start(self.inner.calls.clone(), config).await
    }
}

impl Elector {
    async fn start(calls: Arc<Calls>, config: &ElectorConfig) -> Result<Self, Error> {
        let index = calls.index_of(&config.key);
        let elector_config = config.clone();
        let made = calls.call(index, move |raw| component::elector(raw, &elector_config));
        let handle = traced("elect", &config.key, calls.error_store(), made).await?;
        let (events_tx, events) = mpsc::unbounded_channel();
        let (role_tx, role) = watch::channel(Role::Candidate);
        let clock = calls.clock.clone();
        let shared = Arc::new(Shared {
            key: config.key.clone(),
            state: Mutex::new(State {
                leadership: Leadership::new(monotonic::ms_of(clock.now())),
                last_error: None,
                stats: ElectorStats::default(),
            }),
            role: role_tx,
            events: events_tx,
            clock,
        });
        let (stop_tx, stop_rx) = oneshot::channel();
        let span = campaign_span(&config.key, calls.error_store());
        let campaign = campaign(calls, index, handle, shared.clone(), stop_rx);
        let task = tokio::spawn(campaign.instrument(span));
        Ok(Elector {
            shared,
            role,
            events,
            stop: Some(stop_tx),
            task: Some(task),
        })
    }

    /// The role now: as of the last step, except that leadership ends at
    /// its deadline even while a step is still under way.
    pub fn role(&self) -> Role {
        self.shared.check();
        self.role.borrow().clone()
    }

    /// The role as it changes, for `select!` (it also changes at the
    /// deadline, whatever a step is doing).
    pub fn watch_role(&self) -> watch::Receiver<Role> {
        self.role.clone()
    }

    /// While leading: the instant leadership ends unless renewed first,
    /// on std's clock as read now (right unless the machine is suspended
    /// before then: ask again rather than keep it across a suspend, or use
    /// [`Elector::leading_deadline`]). Stop acting as leader then, whatever
    /// else you have heard.
    pub fn leading_until(&self) -> Option<Instant> {
        self.leading_deadline()
            .map(|until| self.shared.clock.to_std(until))
    }

    /// While leading: the instant leadership ends unless renewed first, on
    /// the client's clock ([`crate::Client::clock`]), which counts the time
    /// the machine spent suspended.
    pub fn leading_deadline(&self) -> Option<crate::engine::clock::Instant> {
        self.shared.check();
        self.shared.leading_until()
    }

    /// The lease while leading.
    pub fn leader_lease(&self) -> Option<LeaseRecord> {
        match self.role() {
            Role::Leader(lease) => Some(lease),
            _ => None,
        }
    }

    /// The next leadership change, in order; `None` once the elector stopped.
    pub async fn next_event(&mut self) -> Option<ElectionEvent> {
        self.events.recv().await
    }

    /// The next change if one is waiting.
    pub fn try_event(&mut self) -> Option<ElectionEvent> {
        self.events.try_recv().ok()
    }

    /// Whether it still campaigns (it stops when resigned or abandoned,
    /// or after a `Failed` event).
    pub fn is_running(&self) -> bool {
        self.task.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Why the last step's attempt failed, if it did (the elector keeps trying).
    pub fn last_error(&self) -> Option<String> {
        self.last_failure().map(|e| e.to_string())
    }

    /// The last step's error itself, if it failed: its `kind()` says
    /// whether retrying can fix it.
    pub fn last_failure(&self) -> Option<Error> {
        self.shared.lock().last_error.clone()
    }

    /// What this elector has done so far; `leading` judged by the
    /// watchdog's rule.
    pub fn stats(&self) -> ElectorStats {
        let leading = self.shared.check();
        let mut stats = self.shared.lock().stats.clone();
        stats.leading = leading;
        stats
    }

    /// A handle other tasks read the role and stats through (a status
    /// endpoint, a metrics exporter); reading never delays a renew.
    pub fn watcher(&self) -> ElectorWatcher {
        ElectorWatcher {
            shared: self.shared.clone(),
            role: self.role.clone(),
        }
    }

    /// Releases the lease if leading and stops campaigning.
    pub async fn resign(mut self) -> Result<(), Error> {
        self.stop(Stop::Resign).await
    }

    /// Stops campaigning without releasing: the lease runs out on its own.
    pub async fn abandon(mut self) {
        let _ = self.stop(Stop::Abandon).await;
    }

    async fn stop(&mut self, how: Stop) -> Result<(), Error> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(how);
        }
        match self.task.take() {
            Some(task) => task
                .await
                .map_err(|e| Error::host(format!("the elector's task ended: {e}")))?,
            None => Ok(()),
        }
    }
}

impl Drop for Elector {
    /// Resigns: the task releases the lease in the background.
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Stop::Resign);
        }
    }
}

/// Reads an [`Elector`]'s role and stats from any task or thread.
#[derive(Clone)]
pub struct ElectorWatcher {
    shared: Arc<Shared>,
    role: watch::Receiver<Role>,
}

impl ElectorWatcher {
    pub fn role(&self) -> Role {
        self.shared.check();
        self.role.borrow().clone()
    }

    pub fn stats(&self) -> ElectorStats {
        let leading = self.shared.check();
        let mut stats = self.shared.lock().stats.clone();
        stats.leading = leading;
        stats
    }

    pub fn last_error(&self) -> Option<String> {
        self.shared.lock().last_error.as_ref().map(Error::to_string)
    }

    pub fn last_failure(&self) -> Option<Error> {
        self.shared.lock().last_error.clone()
    }
}

/// The campaign: steps when due, and at every instant waits for the next
/// step, the deadline and a stop at once.
async fn campaign(
    calls: Arc<Calls>,
    index: usize,
    handle: ElectorHandle,
    shared: Arc<Shared>,
    mut stop: oneshot::Receiver<Stop>,
) -> Result<(), Error> {
    let mut stopping = None;
    loop {
        let generation = calls.credentials_refreshes();
        let sent = Instant::now();
        let was_leading = shared.check();
        let step = calls.call(index, move |raw| component::step(raw, handle));
        let step = traced_quietly("step", &shared.key, calls.error_store(), step);
        tokio::pin!(step);
        let step = loop {
            tokio::select! {
                step = &mut step => break step,
                _ = deadline(&shared) => { shared.check(); }
                how = &mut stop, if stopping.is_none() => {
                    stopping = Some(how.unwrap_or(Stop::Resign));
                }
            }
        };
        let step = match step {
            Ok(step) => step,
            Err(e) => {
                // `Failed` says it all: if it was leading, it no longer is.
                let mut state = shared.lock();
                state.leadership.stop(leadership::StopReason::RenewDeadline);
                shared.report(&mut state, ElectionEvent::Failed(e.to_string()));
                shared.publish(&state, shared.now_ms());
                return Err(e);
            }
        };
        // The store refused our credentials: with new ones in, step again
        // at once, still within the deadline the step bounds itself by.
        let refused = step.last_error.as_ref().is_some_and(|e| {
            e.clone()
                .into_error(calls.error_store())
                .refused_credentials()
        });
        let again_now = refused && calls.renew_credentials(generation).await;
        apply(&shared, &calls, step, was_leading, sent, again_now);
        loop {
            if let Some(how) = stopping {
                return finish(&calls, index, handle, &shared, how).await;
            }
            let next = monotonic::instant_of_ms(shared.lock().leadership.next_step_at());
            if shared.clock.now() >= next {
                break;
            }
            tokio::select! {
                _ = shared.clock.sleep_until(next) => break,
                _ = deadline(&shared) => { shared.check(); }
                how = &mut stop => stopping = Some(how.unwrap_or(Stop::Resign)),
            }
        }
    }
}

/// A role as the traces name it.
fn role_name(role: &Role) -> &'static str {
    match role {
        Role::Leader(_) => "leader",
        Role::Follower(_) => "follower",
        Role::Candidate => "candidate",
    }
}

/// Resolves at the end of leadership (never while not leading).
async fn deadline(shared: &Shared) {
    match shared.leading_until() {
        Some(until) => shared.clock.sleep_until(until).await,
        None => std::future::pending().await,
    }
}

/// Takes in a step's result: the machine judges it on the host's clock
/// and says which events to report.
fn apply(
    shared: &Shared,
    calls: &Calls,
    step: StepReport,
    was_leading: bool,
    sent: Instant,
    again_now: bool,
) {
    let now = shared.now_ms();
    let mut state = shared.lock();
    let failed = step.last_error.is_some();
    state.last_error = step.last_error.map(|e| e.into_error(calls.error_store()));
    let events = state.leadership.apply(step.step, now);
    shared.report_all(&mut state, events);
    if again_now {
        state.leadership.step_now(now);
    }
    let leading = state.leadership.is_leading(now);
    let stats = &mut state.stats;
    stats.steps += 1;
    if failed {
        stats.failed_steps += 1;
    } else {
        stats.last_success = Some(sent);
        match (was_leading, leading) {
            (true, true) => {
                stats.last_renew = Some(sent);
                stats.renew_latency.observe(sent.elapsed());
            }
            (false, true) => stats.acquire_latency.observe(sent.elapsed()),
            _ => {}
        }
    }
    shared.publish(&state, now);
}

/// Stops: says leadership ended, releases if resigning, drops the elector.
async fn finish(
    calls: &Arc<Calls>,
    index: usize,
    handle: ElectorHandle,
    shared: &Shared,
    how: Stop,
) -> Result<(), Error> {
    {
        let mut state = shared.lock();
        if let Some(event) = state.leadership.stop(leadership::StopReason::Resigned) {
            shared.report(&mut state, event.into());
        }
        shared.publish(&state, shared.now_ms());
    }
    let resigned = match how {
        Stop::Resign => {
            let resigned = calls.call(index, move |raw| component::resign(raw, handle));
            traced("resign", &shared.key, calls.error_store(), resigned).await
        }
        Stop::Abandon => Ok(()),
    };
    let _ = calls
        .call(index, move |raw| component::drop_elector(raw, handle))
        .await;
    resigned
}

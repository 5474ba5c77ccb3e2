//! A caller of the component's elector WITHOUT a watchdog, for the soak's
//! `--no-watchdog` mode: a thread steps the elector resource and the caller
//! believes whatever the last step returned, ignoring `leading-until-ms`.
//! A step blocked on a request that outlives the deadline (a stalled or
//! paused process) then leaves it believing it leads after its lease ran
//! out and a successor took over: the soak must catch that. It is a
//! broken caller on purpose; the product's [`s3_lease_host::Elector`] is
//! what the soak runs otherwise.

use super::member::{Event, StepError};
use super::process::lock;
use crate::bindings::{ElectorConfig, ElectorEvent, Role};
use crate::hooks::is_fault_error;
use crate::records::record_of;
use s3_lease_host::raw::RawInstance;
use s3_lease_host::LeaseRecord;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Default)]
struct State {
    /// As the last step said: the lease, and when the step that first
    /// returned its token began (no later than the grant).
    leading: Option<(LeaseRecord, Instant)>,
    last_error: Option<StepError>,
    stop: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

pub struct Unwatched {
    shared: Arc<Shared>,
    events: Receiver<Event>,
    stepper: Option<JoinHandle<()>>,
    /// The instance, shared with the caller's fenced writes (calls take turns).
    pub instance: Arc<Mutex<RawInstance>>,
}

impl Unwatched {
    /// Creates the elector on `instance` (opened) and starts stepping it.
    pub fn start(mut instance: RawInstance, config: &ElectorConfig) -> Result<Self, String> {
        let handle = match instance.elector(config) {
            Ok(Ok(h)) => h,
            other => return Err(format!("{other:?}")),
        };
        let instance = Arc::new(Mutex::new(instance));
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let (tx, events) = channel();
        let stepper = {
            let (shared, instance) = (shared.clone(), instance.clone());
            let retry = Duration::from_millis(config.retry_period_ms);
            std::thread::Builder::new()
                .name("soak-unwatched-elector".into())
                .spawn(move || step_until_stopped(&instance, handle, &shared, &tx, retry))
                .map_err(|e| e.to_string())?
        };
        Ok(Unwatched {
            shared,
            events,
            stepper: Some(stepper),
            instance,
        })
    }

    /// The lease while the last step said leader, and when the step that
    /// first returned its token began.
    pub fn leading(&self) -> Option<(LeaseRecord, Instant)> {
        lock(&self.shared.state).leading.clone()
    }

    pub fn events(&self) -> &Receiver<Event> {
        &self.events
    }

    pub fn last_error(&self) -> Option<StepError> {
        lock(&self.shared.state).last_error.clone()
    }

    /// Stops stepping without resigning (waits for a step under way).
    pub fn abandon(mut self) {
        lock(&self.shared.state).stop = true;
        self.shared.wake.notify_all();
        if let Some(stepper) = self.stepper.take() {
            let _ = stepper.join();
        }
    }
}

impl Drop for Unwatched {
    fn drop(&mut self) {
        lock(&self.shared.state).stop = true;
        self.shared.wake.notify_all();
    }
}

fn step_until_stopped(
    instance: &Mutex<RawInstance>,
    handle: wasmtime::component::ResourceAny,
    shared: &Shared,
    events: &Sender<Event>,
    retry: Duration,
) {
    loop {
        if lock(&shared.state).stop {
            return;
        }
        let start = Instant::now();
        let result = lock(instance).step(handle);
        let step = match result {
            Ok(step) => step,
            Err(trap) => {
                lock(&shared.state).leading = None;
                let _ = events.send(Event::Failed(format!("{trap:#}")));
                return;
            }
        };
        let mut state = lock(&shared.state);
        for event in step.events {
            let _ = events.send(match event {
                ElectorEvent::BecameLeader(l) => Event::BecameLeader(l.token),
                ElectorEvent::StoppedLeading(r) => Event::StoppedLeading(format!("{r:?}")),
                ElectorEvent::LeaderChanged(_) => Event::LeaderChanged,
            });
        }
        state.last_error = step.last_error.map(|e| StepError {
            message: format!("{}: {e:?}", e.kind()),
            fault: is_fault_error(&e).then(|| e.kind()),
        });
        // Believed from the last step's role alone: `leading_until_ms`
        // is ignored, which is the bug this caller stands for.
        state.leading = match step.role {
            Role::Leader(lease) => {
                let since = match &state.leading {
                    Some((old, since)) if old.token == lease.token => *since,
                    _ => start,
                };
                Some((record_of(lease), since))
            }
            _ => None,
        };
        let next = Instant::now() + Duration::from_millis(step.next_step_in_ms).min(retry);
        while !state.stop && Instant::now() < next {
            let wait = next.saturating_duration_since(Instant::now());
            state = shared
                .wake
                .wait_timeout(state, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

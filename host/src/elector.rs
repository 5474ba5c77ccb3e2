//! A thread that steps the component's elector and reports what changed.

use crate::bindings::{ElectorConfig, ElectorEvent, Lease, LockState, Role, StopReason};
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
    last_error: Option<String>,
    stop: Option<Stop>,
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
}

impl Elector {
    pub(crate) fn start(client: Client, config: &ElectorConfig) -> Result<Self, Error> {
        let handle = client.call(|i| i.elector(config))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                role: Role::Candidate,
                last_error: None,
                stop: None,
            }),
            wake: Condvar::new(),
        });
        let (tx, events) = channel();
        let stepper = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("s3-lease-elector".into())
                .spawn(move || step_until_stopped(client, handle, shared, tx))
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

    /// The role as of the last step.
    pub fn role(&self) -> Role {
        self.shared.lock().role.clone()
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
        self.shared.lock().last_error.clone()
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

impl Drop for Elector {
    fn drop(&mut self) {
        let _ = self.stop(Stop::Resign);
    }
}

fn step_until_stopped(
    client: Client,
    handle: ResourceAny,
    shared: Arc<Shared>,
    events: Sender<ElectionEvent>,
) -> Result<(), Error> {
    loop {
        let step = match client.call(|i| i.step(handle).map(Ok)) {
            Ok(step) => step,
            Err(e) => {
                shared.lock().role = Role::Candidate;
                let _ = events.send(ElectionEvent::Failed(e.to_string()));
                return Err(e);
            }
        };
        let next = Instant::now() + Duration::from_millis(step.next_step_in_ms);
        let mut state = shared.lock();
        state.role = step.role;
        state.last_error = step.last_error.map(|e| Error::from(e).to_string());
        for event in step.events {
            // A receiver that went away just stops listening.
            let _ = events.send(match event {
                ElectorEvent::BecameLeader(lease) => ElectionEvent::BecameLeader(lease),
                ElectorEvent::StoppedLeading(reason) => ElectionEvent::StoppedLeading(reason),
                ElectorEvent::LeaderChanged(state) => ElectionEvent::LeaderChanged(state),
            });
        }
        while state.stop.is_none() && Instant::now() < next {
            let wait = next.saturating_duration_since(Instant::now());
            state = shared
                .wake
                .wait_timeout(state, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        if let Some(how) = state.stop {
            let was_leading = matches!(state.role, Role::Leader(_));
            state.role = Role::Candidate;
            drop(state);
            let resigned = match how {
                Stop::Resign => client.call(|i| i.resign(handle)),
                Stop::Abandon => Ok(()),
            };
            if was_leading {
                let _ = events.send(ElectionEvent::StoppedLeading(StopReason::Resigned));
            }
            let _ = client.call(|i| i.drop_elector(handle).map(Ok));
            return resigned;
        }
    }
}

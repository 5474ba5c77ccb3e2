//! A held lock that renews itself in the background and is released on drop.
//!
//! The shape of the dynamodb-lease design (`shared/designs/003`): acquire,
//! extend periodically from a background thread, delete on drop. Whether the
//! lock is still ours is judged on this process's monotonic clock: from the
//! moment the last successful renew was *sent*, the lease runs its ttl, so
//! the guard stops claiming it a tenth of the ttl before that, whatever the
//! wall clocks say.

use crate::bindings::{Error as LeaseError, Lease, LockState};
use crate::{Client, Error};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Why a guard no longer holds its lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LostReason {
    /// A renew found another grant in place (or the lock object gone).
    Taken(Option<LockState>),
    /// Renewals kept failing (this error, last) until the lease ran out.
    Expired(String),
}

/// The lock, held while this value lives.
pub struct LeaseGuard {
    client: Client,
    shared: Arc<Shared>,
    renewer: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    lease: Lease,
    /// Until when the lease is surely ours, if it still is.
    valid_until: Instant,
    lost: Option<LostReason>,
    stop: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl LeaseGuard {
    /// Guards a lease just granted (`acquired_at` is taken as now: the
    /// lease was sent for no later than that).
    pub(crate) fn start(client: Client, lease: Lease) -> Self {
        let ttl = Duration::from_millis(lease.ttl_ms);
        Self::start_with(client, lease, Instant::now(), ttl - ttl / 10)
    }

    /// Guards `lease`, whose granting write was sent no earlier than
    /// `sent`, counting it held for `deadline` after each successful renew
    /// was sent (and after `sent`). `deadline` is at most the ttl; a
    /// supervisor that needs time to stop what it runs before the lease
    /// lapses passes less (`s3-lease run` passes half the ttl, as its
    /// elector's renew deadline). Renews every third of the deadline.
    pub fn start_with(client: Client, lease: Lease, sent: Instant, deadline: Duration) -> Self {
        let ttl = Duration::from_millis(lease.ttl_ms);
        let deadline = deadline.min(ttl);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                valid_until: sent + deadline,
                lease,
                lost: None,
                stop: false,
            }),
            changed: Condvar::new(),
        });
        let renewer = {
            let (client, shared) = (client.clone(), shared.clone());
            std::thread::Builder::new()
                .name("s3-lease-renew".into())
                .spawn(move || renew_until_stopped(client, shared, deadline))
                .ok()
        };
        LeaseGuard {
            client,
            shared,
            renewer,
        }
    }

    /// The lease as last renewed.
    pub fn lease(&self) -> Lease {
        self.shared.lock().lease.clone()
    }

    /// The fencing token: pass it along with every write the lock protects.
    pub fn token(&self) -> u64 {
        self.shared.lock().lease.token
    }

    /// Whether the lock is surely still ours, judged now.
    pub fn is_held(&self) -> bool {
        let state = self.shared.lock();
        state.lost.is_none() && Instant::now() < state.valid_until
    }

    /// Why the lock is no longer ours, if it is not.
    pub fn lost(&self) -> Option<LostReason> {
        let state = self.shared.lock();
        state.lost.clone().or_else(|| {
            (Instant::now() >= state.valid_until)
                .then(|| LostReason::Expired("not renewed in time".into()))
        })
    }

    /// Blocks until the lock is lost or `timeout` passes. The lock is lost
    /// at its safe margin even while a renew is still under way.
    pub fn wait_lost(&self, timeout: Duration) -> Option<LostReason> {
        let until = Instant::now() + timeout;
        let mut state = self.shared.lock();
        while state.lost.is_none() {
            let now = Instant::now();
            let stop = until.min(state.valid_until);
            if now >= stop {
                break;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, stop - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        drop(state);
        self.lost()
    }

    /// A fenced write under this lock's current lease.
    pub fn fenced_put(
        &self,
        object_key: &str,
        body: &[u8],
        content_type: &str,
    ) -> Result<crate::bindings::FencedWrite, Error> {
        self.client
            .fenced_put(&self.lease(), object_key, body, content_type)
    }

    /// Stops renewing and releases the lock, so others need not wait out the ttl.
    pub fn release(mut self) -> Result<(), Error> {
        self.stop_renewing();
        let state = self.shared.lock();
        if state.lost.is_some() {
            return Ok(());
        }
        let lease = state.lease.clone();
        drop(state);
        self.shared.lock().lost = Some(LostReason::Expired("released".into()));
        self.client.release(&lease)
    }

    fn stop_renewing(&mut self) {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        if let Some(renewer) = self.renewer.take() {
            let _ = renewer.join();
        }
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        self.stop_renewing();
        let state = self.shared.lock();
        if state.lost.is_none() {
            let lease = state.lease.clone();
            drop(state);
            // Best effort: if it fails, the lease simply runs out.
            let _ = self.client.release(&lease);
        }
    }
}

/// Renews every third of the deadline; after a failed renew, retries
/// sooner, until the lease is lost or its deadline passed.
fn renew_until_stopped(client: Client, shared: Arc<Shared>, deadline: Duration) {
    let every = (deadline / 3).max(Duration::from_millis(50));
    let retry = (every / 3).min(Duration::from_secs(1));
    let mut next = Instant::now() + every;
    loop {
        let mut state = shared.lock();
        while !state.stop && Instant::now() < next {
            let wait = next.saturating_duration_since(Instant::now());
            state = shared
                .changed
                .wait_timeout(state, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        if state.stop {
            return;
        }
        let lease = state.lease.clone();
        drop(state);

        let sent = Instant::now();
        let result = client.renew(&lease);
        let mut state = shared.lock();
        match result {
            // Too late: the guard stopped claiming the lock at its margin,
            // and a reply after that does not bring it back (the renewed
            // lease lapses unused).
            Ok(_) if Instant::now() >= state.valid_until => {
                state.lost = Some(LostReason::Expired(
                    "the renew's reply came after the lease's safe margin".into(),
                ));
            }
            Ok(renewed) => {
                state.lease = renewed;
                state.valid_until = sent + deadline;
                next = sent + every;
            }
            Err(Error::Lease(e)) if matches!(*e, LeaseError::Lost(_)) => {
                if let LeaseError::Lost(lost) = *e {
                    state.lost = Some(LostReason::Taken(lost.current));
                }
            }
            Err(e) if Instant::now() + retry >= state.valid_until => {
                state.lost = Some(LostReason::Expired(e.to_string()));
            }
            Err(_) => next = Instant::now() + retry,
        }
        let done = state.lost.is_some();
        drop(state);
        shared.changed.notify_all();
        if done {
            return;
        }
    }
}

//! A held lock that renews itself in the background and is released on drop.
//!
//! The shape of the dynamodb-lease design (`shared/designs/003`): acquire,
//! extend periodically from a background thread, delete on drop. What the
//! guard believes and when it renews is `s3_lease_keep::guard`, a state
//! machine with the time passed in (the simulation drives the same machine
//! on virtual time): the lease is held for the deadline after the *send* of
//! the write that granted or last renewed it, on this process's monotonic
//! clock, whatever the wall clocks say and however late a reply comes. The
//! thread here only sleeps until the instant the machine names, renews when
//! it says so, and reports the outcome.

use crate::bindings::{Error as LeaseError, Lease, LockState};
use crate::{Client, Error};
use s3_lease_keep::guard::{Attempt, End, Guard, Next, Timing};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Why a guard no longer holds its lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LostReason {
    /// A renew found another grant in place (or the lock object gone).
    Taken(Option<LockState>),
    /// Renewals kept failing (this error, last) until the lease ran out,
    /// failed with an error retrying cannot fix, or the guard was released.
    Expired(String),
}

/// Milliseconds on a guard's own monotonic clock, counted from the instant
/// its grant's attempt began (so no instant before it is ever needed).
#[derive(Clone, Copy)]
struct Clock {
    origin: Instant,
}

impl Clock {
    fn ms(&self, at: Instant) -> u64 {
        // Floored: a reading is never later than the instant it stands for.
        u64::try_from(at.saturating_duration_since(self.origin).as_millis()).unwrap_or(u64::MAX)
    }

    fn now_ms(&self) -> u64 {
        self.ms(Instant::now())
    }

    fn instant(&self, ms: u64) -> Instant {
        self.origin
            .checked_add(Duration::from_millis(ms))
            .unwrap_or_else(|| self.origin + Duration::from_secs(100 * 365 * 24 * 3600))
    }
}

/// The lock, held while this value lives.
pub struct LeaseGuard {
    client: Client,
    shared: Arc<Shared>,
    renewer: Option<JoinHandle<()>>,
}

struct Shared {
    clock: Clock,
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    lease: Lease,
    guard: Guard,
    /// What ended it, as the host tells it (the machine knows only the kind).
    lost: Option<LostReason>,
    /// The last renew error, for an `Expired` reason.
    last_error: Option<String>,
    stop: bool,
}

impl State {
    /// The reason the guard is over at `now`, if it is.
    fn lost(&self, now_ms: u64) -> Option<LostReason> {
        self.lost.clone().or_else(|| {
            self.guard.end(now_ms).map(|_| {
                LostReason::Expired(
                    self.last_error
                        .clone()
                        .unwrap_or_else(|| "not renewed in time".into()),
                )
            })
        })
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl LeaseGuard {
    /// Guards a lease granted by an attempt that began at `attempt` (taken
    /// before the call), held for a tenth of its ttl short of it after
    /// each send.
    pub(crate) fn granted(client: Client, lease: Lease, attempt: Instant) -> Self {
        let timing = Timing::for_ttl(lease.ttl_ms);
        Self::keep(client, lease, attempt, timing)
    }

    /// Guards `lease`, whose granting write was sent no earlier than
    /// `sent`, counting it held for `deadline` after each successful renew
    /// was sent (and after `sent`). `deadline` is at most the ttl; a
    /// supervisor that needs time to stop what it runs before the lease
    /// lapses passes less (`s3-lease run` passes half the ttl, as its
    /// elector's renew deadline). Renews every third of the deadline.
    pub fn start_with(client: Client, lease: Lease, sent: Instant, deadline: Duration) -> Self {
        let timing = Timing::new(lease.ttl_ms, crate::client::millis(deadline));
        Self::keep(client, lease, sent, timing)
    }

    fn keep(client: Client, lease: Lease, sent: Instant, timing: Timing) -> Self {
        let clock = Clock { origin: sent };
        let guard = Attempt::start(0).granted(timing, clock.now_ms());
        let shared = Arc::new(Shared {
            clock,
            state: Mutex::new(State {
                lease,
                guard,
                lost: None,
                last_error: None,
                stop: false,
            }),
            changed: Condvar::new(),
        });
        let renewer = {
            let (client, shared) = (client.clone(), shared.clone());
            std::thread::Builder::new()
                .name("s3-lease-renew".into())
                .spawn(move || renew_until_stopped(&client, &shared))
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
        let now = self.shared.clock.now_ms();
        self.shared.lock().guard.is_held(now)
    }

    /// While held: the instant the claim runs out unless a renew succeeds first.
    pub fn held_until(&self) -> Option<Instant> {
        let now = self.shared.clock.now_ms();
        let until = self.shared.lock().guard.held_until(now)?;
        Some(self.shared.clock.instant(until))
    }

    /// Why the lock is no longer ours, if it is not.
    pub fn lost(&self) -> Option<LostReason> {
        let now = self.shared.clock.now_ms();
        self.shared.lock().lost(now)
    }

    /// Blocks until the lock is lost or `timeout` passes. The lock is lost
    /// at its safe margin even while a renew is still under way.
    pub fn wait_lost(&self, timeout: Duration) -> Option<LostReason> {
        let until = Instant::now() + timeout;
        let clock = self.shared.clock;
        let mut state = self.shared.lock();
        loop {
            let now = Instant::now();
            let Some(held_until) = state.guard.held_until(clock.ms(now)) else {
                break;
            };
            let stop = until.min(clock.instant(held_until));
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
        match self.stop_renewing() {
            Some(lease) => self.client.release(&lease),
            None => Ok(()),
        }
    }

    /// Stops the renew thread and ends the guard; the lease if it was
    /// still held (worth releasing).
    fn stop_renewing(&mut self) -> Option<Lease> {
        self.shared.lock().stop = true;
        self.shared.changed.notify_all();
        if let Some(renewer) = self.renewer.take() {
            let _ = renewer.join();
        }
        let now = self.shared.clock.now_ms();
        let mut state = self.shared.lock();
        let held = state.guard.stop(now);
        state
            .lost
            .get_or_insert_with(|| LostReason::Expired("released".into()));
        held.then(|| state.lease.clone())
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if let Some(lease) = self.stop_renewing() {
            // Best effort: if it fails, the lease simply runs out.
            let _ = self.client.release(&lease);
        }
    }
}

/// The guard's driver: sleeps until the machine's next instant, renews
/// when it says so, and feeds it the outcome.
fn renew_until_stopped(client: &Client, shared: &Shared) {
    let clock = shared.clock;
    let mut state = shared.lock();
    loop {
        if state.stop {
            return;
        }
        match state.guard.poll(clock.now_ms()) {
            Next::Ended(_) => break,
            Next::WakeAt(at) => {
                let wait = clock.instant(at).saturating_duration_since(Instant::now());
                state = shared
                    .changed
                    .wait_timeout(state, wait)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            Next::Renew => {
                let lease = state.lease.clone();
                drop(state);
                let result = client.renew(&lease);
                let now = clock.now_ms();
                state = shared.lock();
                match result {
                    Ok(renewed) => {
                        state.guard.renewed(now);
                        if state.guard.is_held(now) {
                            state.lease = renewed;
                        } else {
                            state.last_error =
                                Some("the renew's reply came after the lease's safe margin".into());
                        }
                    }
                    Err(Error::Lease(e)) if matches!(*e, LeaseError::Lost(_)) => {
                        state.guard.renew_refused(now);
                        if let LeaseError::Lost(lost) = *e {
                            state.lost = Some(LostReason::Taken(lost.current));
                        }
                    }
                    Err(e) => {
                        state.guard.renew_failed(now, e.is_transient());
                        state.last_error = Some(e.to_string());
                    }
                }
                shared.changed.notify_all();
            }
        }
    }
    // Over: say why now, so waiters see the reason the renew gave.
    let now = clock.now_ms();
    if state.guard.end(now) != Some(End::Released) && state.lost.is_none() {
        state.lost = state.lost(now);
    }
    drop(state);
    shared.changed.notify_all();
}

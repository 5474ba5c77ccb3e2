//! A held lease as its client's scheduler (`keeper`) and its handle
//! (`lease`) share it: judged by `s3_lease_keep::guard` (held for the
//! deadline after the send of the write that granted or last renewed it,
//! on its client's clock, which counts the time the machine spent
//! suspended, however late a reply comes), with the status its watchers
//! see.

use crate::calls::{release_in_background, Calls};
use crate::engine::clock::{Clock, Instant};
use crate::error::{Error, ErrorKind};
use crate::types::{millis, LeaseRecord, LockState};
use s3_lease_keep::guard::{Attempt, End, Guard, Timing};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// Why a lease is no longer held.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// A renew found another grant in place (or the lock object gone).
    Taken(Option<LockState>),
    /// No renew succeeded before the claim ran out (the last error, if
    /// renews failed; a reply after the claim ran out does not count).
    Expired(Option<String>),
    /// A renew failed with an error that retrying cannot fix.
    Failed(String),
    /// Released, or given up by its holder.
    Released,
}

/// What a lease is now, as its watchers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseStatus {
    /// Surely held until then unless renewed first, with this token.
    /// `until` is on std's clock, read when the status was published: it
    /// is right unless the machine is suspended before then (a suspended
    /// machine's std clock stands still, the lease's does not). Judge the
    /// lease by `Lease::is_held`, or await `Lease::lost`, which count the
    /// time suspended.
    Held {
        until: std::time::Instant,
        token: u64,
    },
    Lost(LostReason),
}

/// What the scheduler and the lease's handle share.
pub(crate) struct Held {
    /// Unique in the process: the scheduler's name for it.
    pub(crate) id: u64,
    /// The guard's clock counts from the start of the granting attempt, on
    /// the client's clock.
    origin: Instant,
    pub(crate) clock: Clock,
    pub(crate) index: usize,
    state: Mutex<HeldState>,
    status: watch::Sender<LeaseStatus>,
    /// Signalled whenever a renew's outcome is in (see [`Held::renewed`]):
    /// a release or a detach waits on it for the renew under way.
    renew_done: Notify,
}

pub(crate) struct HeldState {
    pub record: LeaseRecord,
    pub guard: Guard,
    pub lost: Option<LostReason>,
    pub last_error: Option<String>,
    /// The scheduler starts no more renews (the handle is letting go; a
    /// renew under way still reports its outcome).
    pub stopped: bool,
    /// The handle let go (released, detached or dropped): nothing more is
    /// sent for it.
    let_go: bool,
    /// Dropped while a renew was under way: release what that renew wrote
    /// once its outcome is in (through this client, if it is still there).
    release_after_renew: Option<Weak<Calls>>,
}

impl Held {
    /// Holds `record`, granted by an attempt that began at `since` (on
    /// `clock`) on instance `index`.
    pub fn new(
        record: LeaseRecord,
        since: Instant,
        timing: Timing,
        index: usize,
        clock: Clock,
    ) -> Arc<Held> {
        let origin = since;
        let now = millis(clock.now().saturating_duration_since(origin));
        let guard = Attempt::start(0).granted(timing, now);
        let (status, _) = watch::channel(LeaseStatus::Lost(LostReason::Expired(None)));
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let held = Arc::new(Held {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            origin,
            clock,
            index,
            state: Mutex::new(HeldState {
                record,
                guard,
                lost: None,
                last_error: None,
                stopped: false,
                let_go: false,
                release_after_renew: None,
            }),
            status,
            renew_done: Notify::new(),
        });
        held.publish(&mut held.lock());
        held
    }

    /// The lease's status, as it changes.
    pub fn subscribe(&self) -> watch::Receiver<LeaseStatus> {
        self.status.subscribe()
    }

    /// A renew under way, on a lease still held: stops renewing and leaves
    /// the release (through `calls`) to the renew's outcome
    /// ([`Held::renewed`]). True if so.
    pub fn release_after_renew(&self, calls: Weak<Calls>) -> bool {
        let now = self.now_ms();
        let mut state = self.lock();
        let renewing = !state.let_go
            && state.lost.is_none()
            && state.guard.renewing()
            && state.guard.is_held(now);
        if renewing {
            state.stopped = true;
            state.release_after_renew = Some(calls);
        }
        renewing
    }

    pub fn lock(&self) -> MutexGuard<'_, HeldState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Now, on the guard's clock.
    pub fn now_ms(&self) -> u64 {
        millis(self.clock.now().saturating_duration_since(self.origin))
    }

    /// The instant of `ms` on the guard's clock.
    pub fn instant(&self, ms: u64) -> Instant {
        self.origin.saturating_add(Duration::from_millis(ms))
    }

    /// While held: until when, unless a renew succeeds first.
    pub fn deadline(&self) -> Option<Instant> {
        let state = self.lock();
        let until = state.guard.held_until(self.now_ms())?;
        state.lost.is_none().then(|| self.instant(until))
    }

    /// Says what the guard says now to the watchers, if it changed.
    pub fn publish(&self, state: &mut HeldState) {
        let now = self.now_ms();
        let status = match state.guard.held_until(now) {
            Some(until) if state.lost.is_none() => LeaseStatus::Held {
                until: self.clock.to_std(self.instant(until)),
                token: state.record.token,
            },
            _ => {
                let reason = state
                    .lost
                    .get_or_insert_with(|| match state.guard.end(now) {
                        Some(End::Released) => LostReason::Released,
                        Some(End::Failed) => {
                            LostReason::Failed(state.last_error.clone().unwrap_or_default())
                        }
                        _ => LostReason::Expired(state.last_error.clone()),
                    });
                LeaseStatus::Lost(reason.clone())
            }
        };
        self.status.send_if_modified(|current| {
            let changed = *current != status;
            *current = status;
            changed
        });
    }

    /// A renew's outcome, `now_ms` its reply. Wakes a release or a detach
    /// waiting for it.
    pub fn renewed(&self, result: Result<LeaseRecord, Error>, now_ms: u64) {
        self.apply_renew(result, now_ms);
        let dropped = self.lock().release_after_renew.take();
        if let Some(client) = dropped {
            // Still held (the renew landed in time): its record is the one
            // to release. Otherwise nothing is worth sending.
            if let Some(record) = self.let_go() {
                release_in_background(&client, self.index, record);
            }
        }
        self.renew_done.notify_waiters();
    }

    fn apply_renew(&self, result: Result<LeaseRecord, Error>, now_ms: u64) {
        let mut state = self.lock();
        match result {
            Ok(record) => {
                state.guard.renewed(now_ms);
                if state.guard.is_held(now_ms) {
                    state.record = record;
                } else {
                    state.last_error =
                        Some("the renew's reply came after the lease's safe margin".into());
                }
            }
            Err(e) if e.kind() == ErrorKind::Lost => {
                state.guard.renew_refused(now_ms);
                state.lost = Some(LostReason::Taken(e.holder().cloned()));
            }
            Err(e) => {
                state.guard.renew_failed(now_ms, retried(&e));
                state.last_error = Some(e.to_string());
            }
        }
        self.publish(&mut state);
    }

    /// Stops the scheduler from starting renews and waits for the outcome
    /// of the one under way, if any, until the claim's end at most (a
    /// renew still hanging then can no longer matter: the lease is over).
    pub(crate) async fn settle(&self) {
        self.lock().stopped = true;
        loop {
            let done = self.renew_done.notified();
            tokio::pin!(done);
            // Registered before looking, so an outcome that comes in
            // between is not missed.
            done.as_mut().enable();
            let until = {
                let state = self.lock();
                if !state.guard.renewing() || state.let_go {
                    return;
                }
                match state.guard.held_until(self.now_ms()) {
                    Some(until) => self.instant(until),
                    None => return,
                }
            };
            tokio::select! {
                _ = &mut done => {}
                _ = self.clock.sleep_until(until) => return,
            }
        }
    }

    /// Lets go: the scheduler stops keeping it, watchers see it released;
    /// the record if it was still held (worth releasing). `None` once let go.
    pub(crate) fn let_go(&self) -> Option<LeaseRecord> {
        let now = self.now_ms();
        let mut state = self.lock();
        if state.let_go {
            return None;
        }
        state.let_go = true;
        state.stopped = true;
        let held = state.guard.stop(now) && state.lost.is_none();
        state.lost.get_or_insert(LostReason::Released);
        self.publish(&mut state);
        held.then(|| state.record.clone())
    }
}

/// Whether a renew that failed with `e` is tried again (within the claim,
/// as the guard bounds it): a transient error, and the wrong endpoint's
/// verdict (a reply no store would send). The endpoint granted or renewed
/// this very lease a moment ago, so such a reply is something on the way
/// (a proxy's or a load balancer's error page), not a wrong configuration:
/// ending the lease at once on it would give up most of its ttl for a blip.
fn retried(e: &Error) -> bool {
    e.is_transient() || (e.kind() == ErrorKind::InvalidConfig && e.field() == Some("endpoint"))
}

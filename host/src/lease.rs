//! A held lease: renewed by its client's scheduler (`keeper`), judged by
//! `s3_lease_keep::guard` (held for the deadline after the send of the
//! write that granted or last renewed it, on this process's monotonic
//! clock, however late a reply comes), and released when dropped.

use crate::client::{release_in_background, Client, Inner};
use crate::convert::{self, millis};
use crate::types::{FenceOptions, FencedWrite, LeaseRecord, LockState};
use crate::{Error, ErrorKind};
use s3_lease_keep::guard::{Attempt, End, Guard, Timing};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};
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
    Held {
        until: Instant,
        token: u64,
    },
    Lost(LostReason),
}

/// What one attempt at a semaphore's slot got.
#[derive(Debug)]
#[non_exhaustive]
pub enum SlotGrant {
    Granted(Lease),
    /// Waiting in line (fair): the `place`-th live waiter, 1-based.
    Queued {
        place: u32,
    },
    /// No slot for this caller now; the state read, when there was one.
    Full(Option<LockState>),
}

/// A held lease. It renews itself on its client's scheduler (no thread or
/// task of its own) until it is released, dropped, or lost; watch it with
/// [`Lease::watch`] or [`Lease::lost`].
pub struct Lease {
    pub(crate) held: Arc<Held>,
    client: Client,
}

/// What the scheduler and the lease's handle share.
pub(crate) struct Held {
    /// Unique in the process: the scheduler's name for it.
    pub(crate) id: u64,
    /// The guard's clock counts from the start of the granting attempt.
    origin: Instant,
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
    release_after_renew: Option<Weak<Inner>>,
}

impl Held {
    pub fn lock(&self) -> MutexGuard<'_, HeldState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Now, on the guard's clock.
    pub fn now_ms(&self) -> u64 {
        millis(self.origin.elapsed())
    }

    /// The instant of `ms` on the guard's clock ("never" past what the
    /// clock holds).
    pub fn instant(&self, ms: u64) -> Instant {
        crate::engine::monotonic::saturating_add(self.origin, Duration::from_millis(ms))
    }

    /// Says what the guard says now to the watchers, if it changed.
    pub fn publish(&self, state: &mut HeldState) {
        let now = self.now_ms();
        let status = match state.guard.held_until(now) {
            Some(until) if state.lost.is_none() => LeaseStatus::Held {
                until: self.instant(until),
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
                release_in_background(client, self.index, convert::lease(&record));
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
                state.guard.renew_failed(now_ms, e.is_transient());
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
                _ = tokio::time::sleep_until(tokio::time::Instant::from_std(until)) => return,
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

impl Lease {
    /// Holds `record`, granted by an attempt that began at `since`.
    pub(crate) fn start(
        client: Client,
        record: LeaseRecord,
        since: Instant,
        timing: Timing,
    ) -> Lease {
        let origin = since;
        let now = millis(origin.elapsed());
        let guard = Attempt::start(0).granted(timing, now);
        let (status, _) = watch::channel(LeaseStatus::Lost(LostReason::Expired(None)));
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let held = Arc::new(Held {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            origin,
            index: client.inner.pool.index_of(&record.key),
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
        client.inner.keeper.keep(&held);
        Lease { held, client }
    }

    /// The client that keeps it.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The lease as last renewed.
    pub fn record(&self) -> LeaseRecord {
        self.held.lock().record.clone()
    }

    /// The fencing token (pass it with every write the lock protects), as
    /// last renewed.
    pub fn token(&self) -> u64 {
        self.held.lock().record.token
    }

    /// The token, while the lease is surely held: past the safe margin a
    /// holder must stop writing, so the token is refused (`Lost`).
    pub fn held_token(&self) -> Result<u64, Error> {
        let state = self.held.lock();
        if state.guard.is_held(self.held.now_ms()) && state.lost.is_none() {
            Ok(state.record.token)
        } else {
            Err(crate::error::lost(&state.record))
        }
    }

    /// Whether the lease is surely still held, judged now.
    pub fn is_held(&self) -> bool {
        self.held_until().is_some()
    }

    /// While held: until when, unless a renew succeeds first.
    pub fn held_until(&self) -> Option<Instant> {
        let state = self.held.lock();
        let until = state.guard.held_until(self.held.now_ms())?;
        state.lost.is_none().then(|| self.held.instant(until))
    }

    /// Why it is no longer held, if it is not.
    pub fn lost_reason(&self) -> Option<LostReason> {
        let mut state = self.held.lock();
        self.held.publish(&mut state);
        state
            .guard
            .held_until(self.held.now_ms())
            .filter(|_| state.lost.is_none())
            .map_or_else(|| state.lost.clone(), |_| None)
    }

    /// Changes of the lease's status, as they happen: each renew moves
    /// `until`; the loss is the last change. (It says `Held` until the
    /// instant it may stop: compare `until` with now, or await
    /// [`Lease::lost`], which wakes at that instant by itself.)
    pub fn watch(&self) -> watch::Receiver<LeaseStatus> {
        self.held.status.subscribe()
    }

    /// Resolves when the lease is lost: at its safe margin even while a
    /// renew hangs, or when a renew finds it taken.
    pub async fn lost(&self) -> LostReason {
        let mut changes = self.watch();
        loop {
            let status = changes.borrow_and_update().clone();
            match status {
                LeaseStatus::Lost(reason) => return reason,
                LeaseStatus::Held { until, .. } => {
                    let deadline = tokio::time::Instant::from_std(until);
                    tokio::select! {
                        changed = changes.changed() => {
                            if changed.is_err() {
                                return self.lost_reason().unwrap_or(LostReason::Released);
                            }
                        }
                        _ = tokio::time::sleep_until(deadline) => {
                            if let Some(reason) = self.lost_reason() {
                                return reason;
                            }
                        }
                    }
                }
            }
        }
    }

    /// A fenced write under the lease's current token; refused without a
    /// request once the lease is no longer surely held.
    pub async fn fenced_put(
        &self,
        object_key: &str,
        body: Vec<u8>,
        content_type: &str,
    ) -> Result<FencedWrite, Error> {
        self.fenced_put_with(object_key, body, content_type, FenceOptions::default())
            .await
    }

    pub async fn fenced_put_with(
        &self,
        object_key: &str,
        body: Vec<u8>,
        content_type: &str,
        options: FenceOptions,
    ) -> Result<FencedWrite, Error> {
        self.held_token()?;
        let record = self.record();
        self.client
            .fenced_put_with(&record, object_key, body, content_type, options)
            .await
    }

    pub async fn fenced_delete(&self, object_key: &str) -> Result<(), Error> {
        self.held_token()?;
        let record = self.record();
        self.client.fenced_delete(&record, object_key).await
    }

    /// Stops renewing and releases the lease, so others need not wait out
    /// its ttl. A renew under way is waited for first (at most until the
    /// lease's safe margin): it rewrites the lock object, so the record
    /// before it is spent and only the renewed one can be released. A
    /// lease no longer held is not released (it ran out), and `Ok` comes
    /// without a request. Cancel-safe: dropped mid-wait, the lease is
    /// released as on drop.
    pub async fn release(self) -> Result<(), Error> {
        self.settle().await;
        match self.let_go() {
            Some(record) => self.client.release(&record).await,
            None => Ok(()),
        }
    }

    /// Stops renewing and hands the lease over as a record, still held on
    /// the store until its ttl runs out: for another process to renew or
    /// release. A renew under way is waited for first (at most until the
    /// lease's safe margin), so the record is the one the store has now,
    /// not one that renew spent. (The record of a lease already lost is
    /// its last one, of no use to renew.)
    pub async fn detach(self) -> LeaseRecord {
        self.settle().await;
        self.let_go();
        self.record()
    }

    /// See [`Held::settle`].
    async fn settle(&self) {
        self.held.settle().await
    }

    /// A renew under way, on a lease still held: stops renewing and leaves
    /// the release to the renew's outcome ([`Held::renewed`]). True if so.
    fn release_after_renew(&self) -> bool {
        let now = self.held.now_ms();
        let mut state = self.held.lock();
        let renewing = !state.let_go
            && state.lost.is_none()
            && state.guard.renewing()
            && state.guard.is_held(now);
        if renewing {
            state.stopped = true;
            state.release_after_renew = Some(Arc::downgrade(&self.client.inner));
        }
        renewing
    }

    /// See [`Held::let_go`]; the scheduler drops the lease at once.
    fn let_go(&self) -> Option<LeaseRecord> {
        let record = self.held.let_go();
        self.client.inner.keeper.look(self.held.id);
        record
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.held.lock();
        f.debug_struct("Lease")
            .field("record", &state.record)
            .field("lost", &state.lost)
            .finish()
    }
}

impl Drop for Lease {
    /// Stops renewing and releases without blocking (a thread of its own
    /// sends the release; if it fails, the lease simply runs out). Dropped
    /// while a renew is under way, it releases once that renew's outcome
    /// is in, the record that renew wrote (the one before is spent).
    fn drop(&mut self) {
        if self.release_after_renew() {
            return;
        }
        if let Some(record) = self.let_go() {
            release_in_background(
                Arc::downgrade(&self.client.inner),
                self.held.index,
                convert::lease(&record),
            );
        }
    }
}

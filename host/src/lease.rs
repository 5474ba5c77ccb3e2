//! A held lease's handle: what its holder reads and does (its token, its
//! status, fenced writes, release, detach); released when dropped. What
//! the scheduler and the handle share, and how a lease is judged, is
//! `held`.

use crate::calls::release_in_background;
use crate::client::Client;
use crate::engine::clock::{Clock, Instant};
use crate::error::Error;
use crate::held::{Held, LeaseStatus, LostReason};
use crate::types::{FenceOptions, FencedWrite, LeaseRecord, LockState};
use s3_lease_keep::guard::Timing;
use std::sync::Arc;
use tokio::sync::watch;

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

impl Lease {
    /// Holds `record`, granted by an attempt that began at `since`, and
    /// has the client's scheduler keep it. `Err` when the client was
    /// closed: the lease is let go at once (it says `Lost(Released)`) and
    /// its record released in the background.
    pub(crate) fn start(
        client: Client,
        record: LeaseRecord,
        since: Instant,
        timing: Timing,
    ) -> Result<Lease, Lease> {
        let index = client.inner.calls.index_of(&record.key);
        let clock = client.inner.calls.clock.clone();
        let held = Held::new(record, since, timing, index, clock);
        let kept = client.inner.keeper.keep(&held);
        let lease = Lease { held, client };
        match kept {
            Ok(()) => Ok(lease),
            Err(_closed) => {
                if let Some(record) = lease.held.let_go() {
                    release_in_background(
                        &Arc::downgrade(&lease.client.inner.calls),
                        index,
                        record,
                    );
                }
                Err(lease)
            }
        }
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

    /// While held: until when, unless a renew succeeds first, on std's
    /// clock as read now (right unless the machine is suspended before
    /// then: ask again rather than keep it across a suspend, or use
    /// [`Lease::deadline`], on the client's clock).
    pub fn held_until(&self) -> Option<std::time::Instant> {
        self.deadline().map(|until| self.held.clock.to_std(until))
    }

    /// While held: until when, unless a renew succeeds first, on the
    /// client's clock ([`Lease::clock`]), which counts the time the
    /// machine spent suspended.
    pub fn deadline(&self) -> Option<Instant> {
        self.held.deadline()
    }

    /// The clock the lease is judged on (its client's).
    pub fn clock(&self) -> &Clock {
        &self.held.clock
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
        self.held.subscribe()
    }

    /// Resolves when the lease is lost: at its safe margin even while a
    /// renew hangs (within [`crate::clock::RESUME_CHECK`] of a resume from
    /// a suspend that passed it), or when a renew finds it taken. The
    /// client's scheduler says so (it wakes at the margin, and at a
    /// resume); this task only sleeps as a backstop, so any number of
    /// tasks may await their leases' losses at no cost while they hold.
    pub async fn lost(&self) -> LostReason {
        let mut changes = self.watch();
        loop {
            let status = changes.borrow_and_update().clone();
            if let LeaseStatus::Lost(reason) = status {
                return reason;
            }
            let Some(deadline) = self.deadline() else {
                return self.lost_reason().unwrap_or(LostReason::Expired(None));
            };
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return self.lost_reason().unwrap_or(LostReason::Released);
                    }
                }
                // One piece: std's timers stop while the machine is
                // suspended, but the scheduler, which looks at every
                // resume, publishes the loss first.
                _ = tokio::time::sleep(deadline.saturating_duration_since(self.held.clock.now())) => {
                    if let Some(reason) = self.lost_reason() {
                        return reason;
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

    /// See [`Held::release_after_renew`].
    fn release_after_renew(&self) -> bool {
        self.held
            .release_after_renew(Arc::downgrade(&self.client.inner.calls))
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
                &Arc::downgrade(&self.client.inner.calls),
                self.held.index,
                record,
            );
        }
    }
}

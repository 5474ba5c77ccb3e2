//! Acquiring: one attempt at a lock or a slot, or a wait of attempts
//! (paced by `s3_lease_keep::wait`), and a grant kept as a [`Lease`]
//! unless its reply came after the claim it gives had run out. A grant
//! nobody waits for any more (the caller's future dropped) is released.

use crate::calls::{release_in_background, Calls};
use crate::client::Client;
use crate::component::{self, Answer, SlotAnswer};
use crate::engine::clock::Instant;
use crate::engine::raw::RawInstance;
use crate::error::{Error, ErrorKind};
use crate::lease::{Lease, SlotGrant};
use crate::observe::traced;
use crate::random::random_u64;
use crate::types::*;
use s3_lease_keep::guard::Timing;
use s3_lease_keep::wait::{fair_poll_ms, Missed, Wait};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

impl Client {
    /// One attempt at the lock: held (renewing itself) if granted, `None`
    /// while someone else holds a live lease. A grant whose reply came
    /// after its claim ran out is released and fails the attempt with a
    /// transient error (worth another).
    pub async fn try_acquire(
        &self,
        key: &str,
        options: &AcquireOptions,
    ) -> Result<Option<Lease>, Error> {
        let store = self.inner.calls.error_store();
        traced("try_acquire", key, store, async {
            match self.attempt(key, options).await? {
                (Attempted::Granted(record), began) => {
                    self.keep_grant(record, began, options).map(Some)
                }
                (Attempted::Missed(..), _) => Ok(None),
            }
        })
        .await
    }

    /// Waits up to `wait` for the lock, then holds it (renewing itself), or
    /// fails with a timeout naming the holder. Waiting happens between
    /// calls. Cancel-safe: dropping the future leaves nothing held.
    pub async fn acquire(
        &self,
        key: &str,
        options: &AcquireOptions,
        wait: Duration,
    ) -> Result<Lease, Error> {
        let options = with_holder_id(options);
        let store = self.inner.calls.error_store();
        let wait = self.wait_for(key, &options, wait, 0, || self.attempt(key, &options));
        traced("acquire", key, store, wait).await
    }

    /// One attempt at one of `key`'s slots (a semaphore): held if granted
    /// (a late grant fails as in [`Client::try_acquire`]). A fair attempt
    /// takes a place in the queue under `options.holder_id`, and later
    /// attempts keep that place only under the same id, so a fair attempt
    /// without a holder id is refused (`InvalidArgument`, before any
    /// request): it would queue a place nobody could come back to or
    /// leave. A fair waiter that stops trying should
    /// [`Client::leave_queue`]. ([`Client::acquire_slot`] picks an id for
    /// its whole wait when none is given.)
    pub async fn try_acquire_slot(
        &self,
        key: &str,
        options: &AcquireOptions,
        slot: SlotOptions,
    ) -> Result<SlotGrant, Error> {
        if slot.fair && options.holder_id.is_none() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                Some(self.inner.calls.error_store().clone()),
                crate::error::Detail::Message(format!(
                    "a fair attempt at a slot of {key} needs a holder id (AcquireOptions::\
                     holder_id): its place in the queue is kept under that id, for the next \
                     attempt to find and for leave_queue"
                )),
            ));
        }
        let store = self.inner.calls.error_store();
        traced("try_acquire_slot", key, store, async {
            Ok(match self.slot_attempt(key, options, slot).await? {
                (Attempted::Granted(record), began) => {
                    SlotGrant::Granted(self.keep_grant(record, began, options)?)
                }
                (Attempted::Missed(Missed::Queued, _, place), _) => SlotGrant::Queued { place },
                (Attempted::Missed(_, seen, _), _) => SlotGrant::Full(seen),
            })
        })
        .await
    }

    /// Waits up to `wait` for a slot, then holds it; a fair waiter leaves
    /// the queue when it gives up (or is dropped).
    pub async fn acquire_slot(
        &self,
        key: &str,
        options: &AcquireOptions,
        slot: SlotOptions,
        wait: Duration,
    ) -> Result<Lease, Error> {
        // One holder id for the whole wait: a fair waiter keeps its place.
        let options = with_holder_id(options);
        let mut leave = LeaveOnDrop {
            client: self,
            key,
            holder_id: options.holder_id.clone().unwrap_or_default(),
            armed: slot.fair,
        };
        let poll_ms = fair_poll_ms(options.ttl_ms());
        let store = self.inner.calls.error_store();
        let wait = self.wait_for(key, &options, wait, poll_ms, || {
            self.slot_attempt(key, &options, slot)
        });
        let result = traced("acquire_slot", key, store, wait).await;
        if result.is_ok() {
            leave.armed = false;
        }
        result
    }

    /// Keeps `record`, granted by an attempt that began at `since` (on
    /// std's clock), held (renewing on the client's scheduler) until the
    /// lease is dropped or released: for a lease granted through the
    /// record calls. A closed client keeps nothing: the lease comes back
    /// already let go (`Lost(Released)`), and the record is released in
    /// the background.
    pub fn hold(
        &self,
        record: LeaseRecord,
        since: std::time::Instant,
        options: &AcquireOptions,
    ) -> Lease {
        let timing = timing(record.ttl_ms(), options);
        let since = self.inner.calls.clock.from_std(since);
        Lease::start(self.clone(), record, since, timing).unwrap_or_else(|let_go| let_go)
    }

    /// Holds a grant of one of our attempts, begun at `began`, unless its
    /// reply came after the claim it gives had run out (a busy machine, a
    /// slow store): such a grant is released and the attempt counts as a
    /// transient failure, so that no caller starts work under a lease
    /// that is already over.
    fn keep_grant(
        &self,
        record: LeaseRecord,
        began: Instant,
        options: &AcquireOptions,
    ) -> Result<Lease, Error> {
        let timing = timing(record.ttl_ms(), options);
        let took = self.clock().now().saturating_duration_since(began);
        if millis(took) < timing.deadline_ms {
            let key = record.key.clone();
            return Lease::start(self.clone(), record, began, timing).map_err(|_released| {
                Error::host(format!(
                    "the client was closed (Client::close): it keeps no new lease, and the \
                     grant of {key} was released"
                ))
            });
        }
        let index = self.inner.calls.index_of(&record.key);
        release_in_background(&Arc::downgrade(&self.inner.calls), index, record.clone());
        Err(Error::transport(format!(
            "the grant of {} came {} ms after its attempt began, past the lease's safe \
             margin of {} ms (released)",
            record.key,
            millis(took),
            timing.deadline_ms
        ))
        .with_store(self.inner.calls.error_store()))
    }

    /// One grant attempt, with when its call began on the instance; a
    /// grant that comes back after the caller gave up waiting for it (the
    /// future dropped) is released.
    async fn attempt(
        &self,
        key: &str,
        options: &AcquireOptions,
    ) -> Result<(Attempted, Instant), Error> {
        let (key_owned, options) = (key.to_string(), options.clone());
        // One attempt that names the holder.
        let outcome = self
            .call_granting(key, move |raw| {
                component::attempt(raw, &key_owned, &options)
            })
            .await;
        match outcome {
            Ok(attempted) => Ok(attempted),
            Err(e) if e.kind() == ErrorKind::Timeout => Ok((
                Attempted::Missed(
                    Missed::Held {
                        expires_in_ms: e.holder().map(|h| millis(h.expires_in)),
                    },
                    e.holder().cloned(),
                    0,
                ),
                self.clock().now(),
            )),
            Err(e) => Err(e),
        }
    }

    async fn slot_attempt(
        &self,
        key: &str,
        options: &AcquireOptions,
        slot: SlotOptions,
    ) -> Result<(Attempted, Instant), Error> {
        let (key_owned, options) = (key.to_string(), options.clone());
        self.call_granting(key, move |raw| {
            component::try_acquire_slot(raw, &key_owned, &options, slot)
        })
        .await
    }

    /// A call that may grant a lease, with the instant the call began on
    /// its instance (after any wait for the instance and its making: the
    /// granting write was sent after it, so a grant counted from it is
    /// counted safely). Run so that a grant nobody waits for any more is
    /// released: if the caller's future is dropped while the call runs,
    /// the blocking call sees its receiver gone and releases; if it is
    /// dropped once the grant is in the channel, the receiver's guard
    /// takes it out and releases it.
    async fn call_granting<T: Granting + Send + 'static>(
        &self,
        key: &str,
        f: impl FnOnce(&mut RawInstance) -> Answer<T> + Send + 'static,
    ) -> Result<(T::Output, Instant), Error> {
        let (tx, rx) = oneshot::channel();
        let index = self.inner.calls.index_of(key);
        let clock = self.clock().clone();
        self.inner
            .calls
            .pool
            .send_job(index, move |opener, instance| {
                let mut began = clock.now();
                let result = opener.run(instance, |raw| {
                    began = clock.now();
                    f(raw)
                });
                let result = result.map(|granting| Began(granting, began));
                if let Err(Ok(unwanted)) = tx.send(result) {
                    if let Some(lease) = unwanted.granted() {
                        // Best effort: if it fails, the lease simply runs out.
                        let _ = opener.run(instance, move |raw| component::release(raw, &lease));
                    }
                }
            });
        let mut pending = Pending {
            rx: Some(rx),
            calls: self.inner.calls.clone(),
            index,
        };
        let result = pending.recv().await?;
        result.map(Granting::output)
    }

    /// Tries `attempt` until it grants or `wait` has passed, pausing
    /// between attempts as `s3_lease_keep::wait` says, then holds the
    /// grant. Transient errors (a grant that came too late among them) are
    /// retried within the wait; any other ends it.
    async fn wait_for<F>(
        &self,
        key: &str,
        options: &AcquireOptions,
        wait: Duration,
        poll_ms: u64,
        mut attempt: impl FnMut() -> F,
    ) -> Result<Lease, Error>
    where
        F: std::future::Future<Output = Result<(Attempted, Instant), Error>>,
    {
        let clock = self.clock();
        let started = clock.now();
        let ms = |at: Instant| millis(at.saturating_duration_since(started));
        let mut schedule = Wait::new(0, millis(wait));
        let mut holder = None;
        loop {
            let mut last_error = None;
            let missed = match attempt().await {
                Ok((Attempted::Granted(record), began)) => {
                    match self.keep_grant(record, began, options) {
                        Ok(lease) => return Ok(lease),
                        // Granted too late: released, worth another attempt.
                        Err(e) if e.is_transient() => {
                            last_error = Some(e);
                            Missed::Undecided
                        }
                        // The client was closed: no attempt can be kept.
                        Err(e) => return Err(e),
                    }
                }
                Ok((Attempted::Missed(missed, seen, _), _)) => {
                    if seen.is_some() {
                        holder = seen;
                    }
                    missed
                }
                Err(e) if e.is_transient() => {
                    last_error = Some(e);
                    Missed::Undecided
                }
                Err(e) => return Err(e),
            };
            let now = ms(clock.now());
            if schedule.is_over(now) {
                return Err(last_error.unwrap_or_else(|| {
                    component::timeout(key, Duration::from_millis(now), holder)
                        .with_store(self.inner.calls.error_store())
                }));
            }
            let pause = schedule.pause_ms(missed, now, random_u64(), poll_ms);
            let next = started.saturating_add(Duration::from_millis(now.saturating_add(pause)));
            clock.sleep_until(next).await;
        }
    }
}

/// What one attempt of a wait found: the grant, or why not (with the
/// holder when read, and a queued waiter's place).
pub(crate) enum Attempted {
    Granted(LeaseRecord),
    Missed(Missed, Option<LockState>, u32),
}

/// A call's result that may carry a grant (released if nobody takes it).
pub(crate) trait Granting {
    type Output;
    fn granted(&self) -> Option<LeaseRecord>;
    fn output(self) -> Self::Output;
}

impl Granting for LeaseRecord {
    type Output = Attempted;
    fn granted(&self) -> Option<LeaseRecord> {
        Some(self.clone())
    }
    fn output(self) -> Attempted {
        Attempted::Granted(self)
    }
}

/// A slot attempt's outcome, as a grant or a miss.
impl Granting for SlotAnswer {
    type Output = Attempted;
    fn granted(&self) -> Option<LeaseRecord> {
        match self {
            SlotAnswer::Granted(lease) => Some(lease.clone()),
            SlotAnswer::Queued(_) | SlotAnswer::Full(_) => None,
        }
    }
    fn output(self) -> Attempted {
        match self {
            SlotAnswer::Granted(lease) => Attempted::Granted(lease),
            SlotAnswer::Queued(place) => Attempted::Missed(Missed::Queued, None, place),
            SlotAnswer::Full(seen) => Attempted::Missed(
                Missed::Held {
                    expires_in_ms: seen.as_ref().map(|s| millis(s.expires_in)),
                },
                seen,
                0,
            ),
        }
    }
}

/// A granting call's result with the instant its call began.
pub(crate) struct Began<T>(T, Instant);

impl<T: Granting> Granting for Began<T> {
    type Output = (T::Output, Instant);
    fn granted(&self) -> Option<LeaseRecord> {
        self.0.granted()
    }
    fn output(self) -> Self::Output {
        (self.0.output(), self.1)
    }
}

/// The receiving end of a granting call: if dropped before the grant was
/// taken, it takes it out and releases it.
struct Pending<T: Granting> {
    rx: Option<oneshot::Receiver<Result<T, Error>>>,
    calls: Arc<Calls>,
    index: usize,
}

impl<T: Granting> Pending<T> {
    async fn recv(&mut self) -> Result<Result<T, Error>, Error> {
        let rx = self
            .rx
            .as_mut()
            .ok_or_else(|| Error::host("received twice"))?;
        let result = rx
            .await
            .map_err(|_| Error::host("a call's thread ended without an answer"));
        self.rx = None;
        result
    }
}

impl<T: Granting> Drop for Pending<T> {
    fn drop(&mut self) {
        let Some(mut rx) = self.rx.take() else {
            return;
        };
        rx.close();
        if let Ok(Ok(result)) = rx.try_recv() {
            if let Some(lease) = result.granted() {
                release_in_background(&Arc::downgrade(&self.calls), self.index, lease);
            }
        }
    }
}

/// How a lease granted with `options` is counted and renewed.
fn timing(ttl_ms: u64, options: &AcquireOptions) -> Timing {
    match options.deadline {
        Some(deadline) => Timing::new(ttl_ms, millis(deadline)),
        None => Timing::for_ttl(ttl_ms),
    }
}

/// Leaves a fair queue when a wait for a slot is dropped or gives up.
struct LeaveOnDrop<'a> {
    client: &'a Client,
    key: &'a str,
    holder_id: String,
    armed: bool,
}

impl Drop for LeaveOnDrop<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (key, holder) = (self.key.to_string(), std::mem::take(&mut self.holder_id));
        let pool = &self.client.inner.calls.pool;
        pool.send_job(pool.index_of(&key), move |opener, instance| {
            // Best effort: a place left behind expires after its ttl.
            let _ = opener.run(instance, move |raw| {
                component::leave_queue(raw, &key, &holder)
            });
        });
    }
}

/// `options` with a holder id: the caller's, or one chosen now for the
/// whole wait (the component would choose one per call).
fn with_holder_id(options: &AcquireOptions) -> AcquireOptions {
    let mut options = options.clone();
    options
        .holder_id
        .get_or_insert_with(|| format!("holder-{:016x}", random_u64()));
    options
}

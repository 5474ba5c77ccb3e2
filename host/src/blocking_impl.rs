//! The same client for code that is not async: every call runs on the
//! client's own small tokio runtime, and the calling thread waits for its
//! answer on a plain channel. So a call never panics, whether or not the
//! caller is inside a runtime (it blocks the calling thread, as any
//! blocking call does; async code should use [`crate::Client`]). A panic
//! inside a call is caught on the runtime: a call that answers a `Result`
//! answers `Err` (`ErrorKind::Host`), `close` reports it as a failure,
//! `detach` as `None`, the waits as nothing come, a drop swallows it; only
//! `recv_event_timeout`, whose elector the panic took with it, passes the
//! call's own panic on to the caller.

use crate::client::ClientOptions;
use crate::config::StoreConfig;
use crate::engine::own_runtime::OwnRuntime;
use crate::engine::runtime::Runtime;
use crate::error::Error;
use crate::held::LostReason;
use crate::lease::SlotGrant;
use crate::stats::ElectorStats;
use crate::types::*;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The runtime a blocking client's calls, renewals and electors run on,
/// shut down without waiting for its tasks when dropped: a blocking client
/// may be dropped in async code, where a runtime cannot be shut down by
/// waiting.
#[derive(Debug)]
struct Driver {
    runtime: OwnRuntime,
}

impl Driver {
    fn new() -> Result<Arc<Driver>, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("s3-lease")
            .enable_all()
            .build()
            .map_err(Error::host)?;
        Ok(Arc::new(Driver {
            runtime: OwnRuntime::new(runtime),
        }))
    }

    /// Runs `f` to its end on the driver's runtime; the calling thread
    /// waits on a channel (never `block_on`, which panics in a runtime).
    /// A panic inside `f` (a bug of ours, or of code a call runs: a
    /// `tracing` subscriber entering the caller's span, say) is caught
    /// there and handed back, never unwound into the driver's threads.
    fn run<F>(&self, f: F) -> Result<F::Output, Panicked>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        // In the caller's span, if any: the call's span is its child.
        let span = tracing::Span::current();
        let call = CatchUnwind(Box::pin(tracing::Instrument::instrument(f, span)));
        self.runtime.spawn(async move {
            let _ = tx.send(call.await);
        });
        // No answer: the task ended without sending (a panic as the call's
        // future was dropped).
        rx.recv()
            .unwrap_or_else(|_| Err(Panicked("the call's task ended without an answer".into())))
    }

    /// [`Driver::run`] for a call that answers a `Result`: a panic inside
    /// it is an `Err` (`ErrorKind::Host`), not a panic in the caller.
    fn call<T, F>(&self, f: F) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>> + Send + 'static,
        T: Send + 'static,
    {
        self.run(f).unwrap_or_else(|panicked| Err(panicked.error()))
    }
}

/// A call's future panicked: the panic's message.
struct Panicked(String);

impl Panicked {
    fn error(&self) -> Error {
        Error::host(format!(
            "an s3-lease call panicked inside ({}); the client still works, but this is a \
             bug: please report it",
            self.0
        ))
    }
}

/// Polls a future, catching a panic in its poll as `Panicked` (its
/// future is then dropped, never polled again).
struct CatchUnwind<F>(std::pin::Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Panicked>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        use std::task::Poll;
        let future = self.get_mut().0.as_mut();
        // Unwind safety: after a panic the future is only dropped, and the
        // state it shares (locks, channels) tolerates a holder that panicked.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic with no message".into());
                Poll::Ready(Err(Panicked(message)))
            }
        }
    }
}

/// A client for code that is not async: [`crate::Client`]'s calls, waited
/// for. Clones share the client.
#[derive(Clone)]
pub struct Client {
    client: crate::client::Client,
    driver: Arc<Driver>,
}

impl Client {
    /// See [`crate::Client::connect`].
    pub fn connect(runtime: &Runtime, config: &StoreConfig) -> Result<Self, Error> {
        Self::connect_with(runtime, config, ClientOptions::default())
    }

    pub fn connect_with(
        runtime: &Runtime,
        config: &StoreConfig,
        options: ClientOptions,
    ) -> Result<Self, Error> {
        let driver = Driver::new()?;
        let (runtime, config) = (runtime.clone(), config.clone());
        let client = driver.call(async move {
            crate::client::Client::connect_with(&runtime, &config, options).await
        })?;
        Ok(Client { client, driver })
    }

    /// The async client underneath (the same instances and scheduler).
    pub fn as_async(&self) -> &crate::client::Client {
        &self.client
    }

    /// A call of the async client, run on the driver (see [`Driver::call`]).
    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(
            crate::client::Client,
        ) -> std::pin::Pin<Box<dyn Future<Output = Result<T, Error>> + Send>>,
    ) -> Result<T, Error> {
        self.driver.call(f(self.client.clone()))
    }

    pub fn store_name(&self) -> &'static str {
        self.client.store_name()
    }

    /// See [`crate::Client::set_azure_credential`].
    pub fn set_azure_credential(&self, credential: &AzureCredential) -> Result<(), Error> {
        let credential = credential.clone();
        self.run(|c| Box::pin(async move { c.set_azure_credential(&credential).await }))
    }

    /// See [`crate::Client::set_gcs_credential`].
    pub fn set_gcs_credential(&self, credential: &GcsCredential) -> Result<(), Error> {
        let credential = credential.clone();
        self.run(|c| Box::pin(async move { c.set_gcs_credential(&credential).await }))
    }

    pub fn set_credentials(&self, credentials: &Credentials) -> Result<(), Error> {
        let credentials = credentials.clone();
        self.run(|c| Box::pin(async move { c.set_credentials(&credentials).await }))
    }

    pub fn credentials_refreshes(&self) -> u64 {
        self.client.credentials_refreshes()
    }

    /// See [`crate::Client::stats`].
    pub fn stats(&self) -> crate::stats::ClientStats {
        self.client.stats()
    }

    /// See [`crate::Client::close`]: releases every lease the client
    /// holds, waiting up to `timeout` for the releases.
    /// A panic inside the close is reported as a failure with no key.
    pub fn close(&self, timeout: Duration) -> crate::closing::CloseReport {
        let client = self.client.clone();
        self.driver
            .run(async move { client.close(timeout).await })
            .unwrap_or_else(|panicked| crate::closing::CloseReport {
                failed: vec![(String::new(), panicked.error())],
                ..Default::default()
            })
    }

    pub fn credentials_error(&self) -> Option<String> {
        self.client.credentials_error()
    }

    /// One attempt; held (renewing in the background) if granted.
    pub fn try_acquire(
        &self,
        key: &str,
        options: &AcquireOptions,
    ) -> Result<Option<LeaseGuard>, Error> {
        let (key, options) = (key.to_string(), options.clone());
        let lease = self.run(|c| Box::pin(async move { c.try_acquire(&key, &options).await }))?;
        Ok(lease.map(|lease| self.guard(lease)))
    }

    /// Waits up to `wait` for the lock, then holds it.
    pub fn acquire(
        &self,
        key: &str,
        options: &AcquireOptions,
        wait: Duration,
    ) -> Result<LeaseGuard, Error> {
        let (key, options) = (key.to_string(), options.clone());
        let lease = self.run(|c| Box::pin(async move { c.acquire(&key, &options, wait).await }))?;
        Ok(self.guard(lease))
    }

    /// See [`crate::Client::try_acquire_slot`]: a fair attempt needs a
    /// holder id (refused without one, before any request).
    pub fn try_acquire_slot(
        &self,
        key: &str,
        options: &AcquireOptions,
        slot: SlotOptions,
    ) -> Result<BlockingSlotGrant, Error> {
        let (key, options) = (key.to_string(), options.clone());
        let grant =
            self.run(|c| Box::pin(async move { c.try_acquire_slot(&key, &options, slot).await }))?;
        Ok(match grant {
            SlotGrant::Granted(lease) => BlockingSlotGrant::Granted(self.guard(lease)),
            SlotGrant::Queued { place } => BlockingSlotGrant::Queued { place },
            SlotGrant::Full(seen) => BlockingSlotGrant::Full(seen),
        })
    }

    pub fn acquire_slot(
        &self,
        key: &str,
        options: &AcquireOptions,
        slot: SlotOptions,
        wait: Duration,
    ) -> Result<LeaseGuard, Error> {
        let (key, options) = (key.to_string(), options.clone());
        let lease = self
            .run(|c| Box::pin(async move { c.acquire_slot(&key, &options, slot, wait).await }))?;
        Ok(self.guard(lease))
    }

    /// Holds `record`, granted by an attempt that began at `since`.
    pub fn hold(
        &self,
        record: LeaseRecord,
        since: Instant,
        options: &AcquireOptions,
    ) -> LeaseGuard {
        // Nothing to wait for: keeping a lease needs no runtime.
        self.guard(self.client.hold(record, since, options))
    }

    fn guard(&self, lease: crate::lease::Lease) -> LeaseGuard {
        LeaseGuard {
            lease: Some(lease),
            driver: self.driver.clone(),
        }
    }

    pub fn renew(&self, lease: &LeaseRecord) -> Result<LeaseRecord, Error> {
        let lease = lease.clone();
        self.run(|c| Box::pin(async move { c.renew(&lease).await }))
    }

    pub fn release(&self, lease: &LeaseRecord) -> Result<(), Error> {
        let lease = lease.clone();
        self.run(|c| Box::pin(async move { c.release(&lease).await }))
    }

    pub fn inspect(&self, key: &str) -> Result<Option<LockState>, Error> {
        let key = key.to_string();
        self.run(|c| Box::pin(async move { c.inspect(&key).await }))
    }

    pub fn inspect_slots(&self, key: &str) -> Result<Option<SemaphoreState>, Error> {
        let key = key.to_string();
        self.run(|c| Box::pin(async move { c.inspect_slots(&key).await }))
    }

    pub fn leave_queue(&self, key: &str, holder_id: &str) -> Result<(), Error> {
        let (key, holder) = (key.to_string(), holder_id.to_string());
        self.run(|c| Box::pin(async move { c.leave_queue(&key, &holder).await }))
    }

    pub fn fenced_put_with(
        &self,
        lease: &LeaseRecord,
        object_key: &str,
        body: &[u8],
        content_type: &str,
        options: FenceOptions,
    ) -> Result<FencedWrite, Error> {
        let (lease, object, body, ct) = (
            lease.clone(),
            object_key.to_string(),
            body.to_vec(),
            content_type.to_string(),
        );
        self.run(|c| {
            Box::pin(async move { c.fenced_put_with(&lease, &object, body, &ct, options).await })
        })
    }

    pub fn fenced_put(
        &self,
        lease: &LeaseRecord,
        object_key: &str,
        body: &[u8],
        content_type: &str,
    ) -> Result<FencedWrite, Error> {
        self.fenced_put_with(
            lease,
            object_key,
            body,
            content_type,
            FenceOptions::default(),
        )
    }

    pub fn fenced_delete(&self, lease: &LeaseRecord, object_key: &str) -> Result<(), Error> {
        let (lease, object) = (lease.clone(), object_key.to_string());
        self.run(|c| Box::pin(async move { c.fenced_delete(&lease, &object).await }))
    }

    pub fn fenced_get(&self, object_key: &str) -> Result<Option<FencedObject>, Error> {
        let object = object_key.to_string();
        self.run(|c| Box::pin(async move { c.fenced_get(&object).await }))
    }

    pub fn preflight(&self) -> Result<PreflightReport, Error> {
        self.run(|c| Box::pin(async move { c.preflight().await }))
    }

    /// See [`crate::Client::audit`].
    pub fn audit(&self, key: &str, since_ms: Option<u64>) -> Result<Vec<crate::AuditEntry>, Error> {
        let key = key.to_string();
        self.run(|c| Box::pin(async move { c.audit(&key, since_ms).await }))
    }

    /// See [`crate::Client::audit_verify`].
    pub fn audit_verify(
        &self,
        key: &str,
        fenced_prefix: Option<&str>,
    ) -> Result<crate::AuditReport, Error> {
        let (key, prefix) = (key.to_string(), fenced_prefix.map(str::to_string));
        self.run(|c| Box::pin(async move { c.audit_verify(&key, prefix.as_deref()).await }))
    }

    /// See [`crate::Client::audit_prune`].
    pub fn audit_prune(&self, key: &str, before_ms: u64) -> Result<crate::AuditPruned, Error> {
        let key = key.to_string();
        self.run(|c| Box::pin(async move { c.audit_prune(&key, before_ms).await }))
    }

    /// Campaigns for `config.key` until the returned elector is resigned
    /// or dropped.
    pub fn elect(&self, config: &ElectorConfig) -> Result<Elector, Error> {
        let config = config.clone();
        let elector = self.run(|c| Box::pin(async move { c.elect(&config).await }))?;
        Ok(Elector {
            elector: Some(elector),
            driver: self.driver.clone(),
        })
    }
}

/// What one attempt at a slot got, for blocking code.
#[derive(Debug)]
#[non_exhaustive]
pub enum BlockingSlotGrant {
    Granted(LeaseGuard),
    Queued { place: u32 },
    Full(Option<LockState>),
}

/// A held lease for blocking code: renewed by the client's scheduler,
/// released on drop.
#[derive(Debug)]
pub struct LeaseGuard {
    lease: Option<crate::lease::Lease>,
    driver: Arc<Driver>,
}

impl LeaseGuard {
    fn lease(&self) -> &crate::lease::Lease {
        // Taken only by `release` and `detach`, which consume the guard.
        self.lease
            .as_ref()
            .expect("a guard holds its lease until consumed")
    }

    /// The lease as last renewed.
    pub fn record(&self) -> LeaseRecord {
        self.lease().record()
    }

    pub fn token(&self) -> u64 {
        self.lease().token()
    }

    pub fn is_held(&self) -> bool {
        self.lease().is_held()
    }

    /// See [`crate::Lease::held_until`] (std's clock, read now).
    pub fn held_until(&self) -> Option<Instant> {
        self.lease().held_until()
    }

    /// See [`crate::Lease::deadline`] (the client's clock, suspended time
    /// counted).
    pub fn deadline(&self) -> Option<crate::clock::Instant> {
        self.lease().deadline()
    }

    /// Why it is no longer held, if it is not.
    pub fn lost(&self) -> Option<LostReason> {
        self.lease().lost_reason()
    }

    /// Blocks until the lease is lost or `timeout` passes; the loss, if it
    /// came (at the safe margin even while a renew hangs, and within
    /// [`crate::clock::RESUME_CHECK`] of a resume from a suspend that
    /// passed it). Any timeout is taken: one too long for the clock
    /// (`Duration::MAX`) waits for the loss however long it takes.
    pub fn wait_lost(&self, timeout: Duration) -> Option<LostReason> {
        let lease = self.lease();
        let clock = lease.clock().clone();
        let mut watch = lease.watch();
        let until = clock.now().saturating_add(timeout);
        loop {
            if let Some(reason) = self.lost() {
                return Some(reason);
            }
            if clock.now() >= until {
                return None;
            }
            let wake = lease.deadline().map_or(until, |held| until.min(held));
            watch.borrow_and_update();
            let (mut changes, clock) = (watch.clone(), clock.clone());
            // The scheduler publishes a loss at the resume from a suspend;
            // the sleep, in one piece, is only the timeout's and a backstop.
            let waited = self.driver.run(async move {
                let left = wake.saturating_duration_since(clock.now());
                tokio::select! {
                    _ = changes.changed() => {}
                    _ = tokio::time::sleep(left) => {}
                }
            });
            if waited.is_err() {
                return self.lost();
            }
        }
    }

    /// A fenced write under the lease's current token.
    pub fn fenced_put(
        &self,
        object_key: &str,
        body: &[u8],
        content_type: &str,
    ) -> Result<FencedWrite, Error> {
        let lease = self.lease();
        lease.held_token()?;
        let record = lease.record();
        let client = lease.client().clone();
        let (object, body, ct) = (
            object_key.to_string(),
            body.to_vec(),
            content_type.to_string(),
        );
        self.driver
            .call(async move { client.fenced_put(&record, &object, body, &ct).await })
    }

    /// Stops renewing and releases the lock; blocks for a renew under way
    /// first, as [`crate::Lease::release`] waits for it.
    pub fn release(mut self) -> Result<(), Error> {
        match self.lease.take() {
            Some(lease) => self.driver.call(lease.release()),
            None => Ok(()),
        }
    }

    /// Stops renewing and hands the lease over as a record. Blocks while a
    /// renew is under way (at most until the lease's safe margin), as
    /// [`crate::Lease::detach`] waits for it: the record is the one the
    /// store holds now. `None` for a guard already consumed, or when the
    /// detach panicked inside (the lease was then dropped: released).
    pub fn detach(mut self) -> Option<LeaseRecord> {
        let lease = self.lease.take()?;
        self.driver.run(lease.detach()).ok()
    }
}

/// A campaign for blocking code. Dropping it resigns (and waits for the
/// release).
pub struct Elector {
    elector: Option<crate::elector::Elector>,
    driver: Arc<Driver>,
}

impl Elector {
    fn elector(&self) -> &crate::elector::Elector {
        // Taken only by `resign` and `abandon`, which consume the handle.
        self.elector.as_ref().expect("an elector until consumed")
    }

    pub fn role(&self) -> Role {
        self.elector().role()
    }

    /// See [`crate::Elector::leading_until`] (std's clock, read now).
    pub fn leading_until(&self) -> Option<Instant> {
        self.elector().leading_until()
    }

    /// See [`crate::Elector::leading_deadline`] (the client's clock,
    /// suspended time counted).
    pub fn leading_deadline(&self) -> Option<crate::clock::Instant> {
        self.elector().leading_deadline()
    }

    pub fn leader_lease(&self) -> Option<LeaseRecord> {
        self.elector().leader_lease()
    }

    pub fn last_error(&self) -> Option<String> {
        self.elector().last_error()
    }

    pub fn last_failure(&self) -> Option<Error> {
        self.elector().last_failure()
    }

    pub fn stats(&self) -> ElectorStats {
        self.elector().stats()
    }

    pub fn watcher(&self) -> crate::elector::ElectorWatcher {
        self.elector().watcher()
    }

    /// The next leadership change, waiting up to `timeout` for it.
    pub fn recv_event_timeout(&mut self, timeout: Duration) -> Option<ElectionEvent> {
        let mut elector = self.elector.take()?;
        let waited = self.driver.run(async move {
            let event = tokio::time::timeout(timeout, elector.next_event())
                .await
                .ok()
                .flatten();
            (elector, event)
        });
        let (elector, event) = match waited {
            Ok(waited) => waited,
            Err(Panicked(message)) => std::panic::panic_any(message),
        };
        self.elector = Some(elector);
        event
    }

    /// The next change if one is waiting.
    pub fn try_event(&mut self) -> Option<ElectionEvent> {
        self.elector.as_mut()?.try_event()
    }

    /// Whether it still campaigns.
    pub fn is_running(&self) -> bool {
        self.elector
            .as_ref()
            .is_some_and(crate::elector::Elector::is_running)
    }

    pub fn resign(mut self) -> Result<(), Error> {
        match self.elector.take() {
            Some(elector) => self.driver.call(elector.resign()),
            None => Ok(()),
        }
    }

    pub fn abandon(mut self) {
        if let Some(elector) = self.elector.take() {
            let _ = self.driver.run(elector.abandon());
        }
    }
}

impl Drop for Elector {
    fn drop(&mut self) {
        if let Some(elector) = self.elector.take() {
            let _ = self.driver.run(elector.resign());
        }
    }
}

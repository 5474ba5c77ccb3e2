//! The same client for code that is not async, from the same source: each
//! blocking call is its async twin (`crate::Client`, `crate::Lease`,
//! `crate::Elector`), polled to its end on the calling thread, which parks
//! between polls (`Driver::run`). A call crosses from the caller to the
//! instance's worker (`pool`) and back, as an async caller's does, and no
//! runtime's thread in between: the client's own small runtime only keeps
//! time for the waits between attempts and runs the tasks that outlive a
//! call (an elector's campaign). So a call never panics, whether or not the
//! caller is inside a runtime (it blocks the calling thread, as any blocking
//! call does; async code should use [`crate::Client`]). A panic inside a
//! call is caught at its poll: a call that answers a `Result` answers `Err`
//! (`ErrorKind::Host`), `close` reports it as a failure, `detach` as
//! `None`, the waits as nothing come, a drop swallows it; only
//! `recv_event_timeout`, whose elector the panic took with it, passes the
//! call's own panic on to the caller.

use crate::calls::as_blocking_call;
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
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// The runtime that keeps time and spawned tasks for a blocking client's
/// calls, renewals and electors, shut down without waiting for its tasks
/// when dropped: a blocking client may be dropped in async code, where a
/// runtime cannot be shut down by waiting.
#[derive(Debug)]
struct Driver {
    runtime: OwnRuntime,
}

/// Wakes the thread that polls a blocking call.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

impl Driver {
    fn new() -> Result<Arc<Driver>, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("s3-lease")
            .enable_all()
            .build()
            .map_err(Error::host)?;
        Ok(Arc::new(Driver {
            runtime: OwnRuntime::new(runtime),
        }))
    }

    /// Runs `f` to its end on the calling thread, which parks until woken
    /// (a reply from an instance's worker, a timer of the driver's
    /// runtime); never `block_on`, which panics in a runtime. In the
    /// driver's runtime context, so `f`'s timers and spawned tasks have a
    /// runtime, and in the caller's span. A panic inside `f` (a bug of
    /// ours, or of code a call runs: a `tracing` subscriber entering the
    /// call's span, say) is caught at its poll and handed back, and `f` is
    /// dropped, never polled again.
    fn run<F: Future>(&self, f: F) -> Result<F::Output, Panicked> {
        let _context = self.runtime.handle().enter();
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut f = pin!(f);
        as_blocking_call(|| loop {
            // Unwind safety: after a panic the future is only dropped, and
            // the state it shares (locks, channels) tolerates a holder that
            // panicked.
            let polled = std::panic::catch_unwind(AssertUnwindSafe(|| f.as_mut().poll(&mut cx)));
            match polled {
                Ok(Poll::Ready(output)) => break Ok(output),
                Ok(Poll::Pending) => {}
                Err(payload) => break Err(Panicked::of(payload.as_ref())),
            }
            // A wake before this park makes it return at once; a spurious
            // return polls again.
            std::thread::park();
        })
    }

    /// [`Driver::run`] for a call that answers a `Result`: a panic inside
    /// it is an `Err` (`ErrorKind::Host`), not a panic in the caller.
    fn call<T>(&self, f: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        self.run(f).unwrap_or_else(|panicked| Err(panicked.error()))
    }
}

/// A call's future panicked: the panic's message.
#[derive(Debug)]
struct Panicked(String);

impl Panicked {
    fn of(payload: &(dyn std::any::Any + Send)) -> Panicked {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic with no message".into());
        Panicked(message)
    }

    fn error(&self) -> Error {
        Error::host(format!(
            "an s3-lease call panicked inside ({}); the client still works, but this is a \
             bug: please report it",
            self.0
        ))
    }
}

/// Blocking twins of the async client's calls: the same name, arguments
/// and result, waited for.
macro_rules! blocking {
    ($($(#[$meta:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {$(
        $(#[$meta])*
        pub fn $name(&self $(, $arg: $ty)*) -> $ret {
            self.driver.call(self.client.$name($($arg),*))
        }
    )*};
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

    pub fn store_name(&self) -> &'static str {
        self.client.store_name()
    }

    blocking! {
        /// See [`crate::Client::set_credential`].
        fn set_credential(&self, credential: &Credential) -> Result<(), Error>;
        /// See [`crate::Client::set_credentials`].
        fn set_credentials(&self, credentials: &Credentials) -> Result<(), Error>;
        fn renew(&self, lease: &LeaseRecord) -> Result<LeaseRecord, Error>;
        fn release(&self, lease: &LeaseRecord) -> Result<(), Error>;
        fn inspect(&self, key: &str) -> Result<Option<LockState>, Error>;
        fn inspect_slots(&self, key: &str) -> Result<Option<SemaphoreState>, Error>;
        fn leave_queue(&self, key: &str, holder_id: &str) -> Result<(), Error>;
        fn fenced_delete(&self, lease: &LeaseRecord, object_key: &str) -> Result<(), Error>;
        fn fenced_get(&self, object_key: &str) -> Result<Option<FencedObject>, Error>;
        fn preflight(&self) -> Result<PreflightReport, Error>;
        /// See [`crate::Client::audit`].
        fn audit(&self, key: &str, since_ms: Option<u64>) -> Result<Vec<crate::AuditEntry>, Error>;
        /// See [`crate::Client::audit_verify`].
        fn audit_verify(&self, key: &str, fenced_prefix: Option<&str>)
            -> Result<crate::AuditReport, Error>;
        /// See [`crate::Client::audit_prune`].
        fn audit_prune(&self, key: &str, before_ms: u64) -> Result<crate::AuditPruned, Error>;
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
        self.driver
            .run(self.client.close(timeout))
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
        let lease = self.driver.call(self.client.try_acquire(key, options))?;
        Ok(lease.map(|lease| self.guard(lease)))
    }

    /// Waits up to `wait` for the lock, then holds it.
    pub fn acquire(
        &self,
        key: &str,
        options: &AcquireOptions,
        wait: Duration,
    ) -> Result<LeaseGuard, Error> {
        let lease = self.driver.call(self.client.acquire(key, options, wait))?;
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
        let grant = self
            .driver
            .call(self.client.try_acquire_slot(key, options, slot))?;
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
        let lease = self
            .driver
            .call(self.client.acquire_slot(key, options, slot, wait))?;
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

    pub fn fenced_put_with(
        &self,
        lease: &LeaseRecord,
        object_key: &str,
        body: &[u8],
        content_type: &str,
        options: FenceOptions,
    ) -> Result<FencedWrite, Error> {
        let put =
            self.client
                .fenced_put_with(lease, object_key, body.to_vec(), content_type, options);
        self.driver.call(put)
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

    /// Campaigns for `config.key` until the returned elector is resigned
    /// or dropped.
    pub fn elect(&self, config: &ElectorConfig) -> Result<Elector, Error> {
        let elector = self.driver.call(self.client.elect(config))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::on_a_blocking_call;

    /// A blocking call is polled on the caller's thread, not handed to a
    /// runtime's thread and waited for: its work is the caller's, and a
    /// reply wakes the caller itself.
    #[test]
    fn a_call_runs_on_the_calling_thread_with_the_drivers_timers() {
        let driver = Driver::new().unwrap();
        let caller = std::thread::current().id();
        let (ran_on, parked) = driver
            .run(async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                (std::thread::current().id(), on_a_blocking_call())
            })
            .unwrap();
        assert_eq!(ran_on, caller);
        assert!(parked, "work handed to a blocking thread runs inline");
        assert!(!on_a_blocking_call(), "only during the call");
        // A reply from another thread wakes the parked caller.
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.send(7).unwrap();
        });
        assert_eq!(driver.run(rx).unwrap(), Ok(7));
    }

    /// Inside a runtime's task (async code calling the blocking facade),
    /// no panic: nothing calls `block_on`.
    #[test]
    fn a_call_from_inside_a_runtime_does_not_panic() {
        let driver = Driver::new().unwrap();
        let outer = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let got = outer.block_on(async {
            driver
                .run(async {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    5
                })
                .unwrap()
        });
        assert_eq!(got, 5);
    }

    /// A panic in a call's poll is the call's `Err` (kind `Host`, naming
    /// the panic), not the caller's panic, and the driver goes on working.
    #[test]
    fn a_panic_inside_a_call_is_its_error() {
        let driver = Driver::new().unwrap();
        let answered: Result<(), Error> = driver.call(async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            panic!("a bug inside");
        });
        let e = answered.unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Host, "{e}");
        assert!(e.to_string().contains("a bug inside"), "{e}");
        assert_eq!(driver.call(async { Ok::<_, Error>(3) }).unwrap(), 3);
    }
}

//! The async client: the contract's calls with the crate's own types, run
//! on a pool of instances (`pool`) from tokio's blocking threads, so that
//! no call blocks an async task and many run at once; waits happen here,
//! between calls, so a waiting acquire holds no instance.

use crate::bindings as wit;
use crate::convert::{self, millis};
use crate::credentials::refresh::Refresher;
use crate::credentials::{AzureToken, FetchedCredentials, SharedSource, SharedTokenSource};
use crate::elector::Elector;
use crate::engine::raw::RawInstance;
use crate::engine::runtime::Runtime;
use crate::engine::state::InstanceOptions;
use crate::keeper::Keeper;
use crate::lease::{Lease, SlotGrant};
use crate::pool::{MakeOptions, Pool};
use crate::types::*;
use crate::{AzureCredential, Error, ErrorKind, S3Config};
use s3_lease_keep::guard::Timing;
use s3_lease_keep::wait::{fair_poll_ms, Missed, Wait};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How a client runs: how many instances it keeps (each serves one call at
/// a time; each key's calls go to one of them).
#[non_exhaustive]
pub struct ClientOptions {
    /// Default 8.
    pub instances: usize,
    /// Per-instance hooks and clocks, for tests.
    pub(crate) make_options: MakeOptions,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            instances: 8,
            make_options: Box::new(InstanceOptions::default),
        }
    }
}

impl ClientOptions {
    pub fn instances(mut self, n: usize) -> Self {
        self.instances = n.max(1);
        self
    }

    /// Makes each instance's hooks and clocks (tests fault requests and
    /// skew clocks through these).
    #[cfg(feature = "unstable-raw")]
    pub fn instance_options(
        mut self,
        make: impl Fn() -> InstanceOptions + Send + Sync + 'static,
    ) -> Self {
        self.make_options = Box::new(make);
        self
    }
}

/// A client of one store (a bucket, or a DynamoDB table). Cheap to clone:
/// clones share its instances, its renewing of leases and its credentials.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub pool: Pool,
    /// With a credentials source: keeps the instances' credentials fresh.
    refresher: Option<Refresher>,
    pub keeper: Keeper,
}

impl Client {
    /// A client with [`ClientOptions::default`]. No request is sent: the
    /// component only validates the configuration.
    pub async fn connect(runtime: &Runtime, config: &S3Config) -> Result<Self, Error> {
        Self::connect_with(runtime, config, ClientOptions::default()).await
    }

    pub async fn connect_with(
        runtime: &Runtime,
        config: &S3Config,
        options: ClientOptions,
    ) -> Result<Self, Error> {
        let (runtime, config) = (runtime.clone(), config.clone());
        let (pool, first) = blocking(move || Inner::pool(runtime, config, options)).await??;
        let mut keeper_failed = None;
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| {
            let client = weak.clone();
            // Only a thread that cannot start fails this: the credentials
            // then stay as fetched.
            let refresher = match first {
                Some(First::Aws(source, fetched)) => {
                    let install = move |c: &Credentials| match client.upgrade() {
                        Some(inner) => inner.install(c),
                        None => Err(Error::host("the client is gone")),
                    };
                    let (first, expires) = (fetched.credentials, fetched.expires);
                    Refresher::start(source, first, expires, Box::new(install)).ok()
                }
                Some(First::Azure(source, token)) => {
                    let install = move |token: &String| match client.upgrade() {
                        Some(inner) => inner.install_token(token),
                        None => Err(Error::host("the client is gone")),
                    };
                    let (first, expires) = (token.token, token.expires);
                    Refresher::start(source, first, expires, Box::new(install)).ok()
                }
                None => None,
            };
            // The connect fails if the scheduler's thread cannot start.
            let keeper = Keeper::start(weak.clone()).unwrap_or_else(|e| {
                keeper_failed = Some(e);
                Keeper::stopped()
            });
            Inner {
                pool,
                refresher,
                keeper,
            }
        });
        match keeper_failed {
            Some(e) => Err(e),
            None => Ok(Client { inner }),
        }
    }

    /// The store's name (`S3`, `DynamoDB`), as errors name it.
    pub fn store_name(&self) -> &'static str {
        self.inner.pool.store()
    }

    /// Runs `f` on the instance that serves `key`.
    pub(crate) async fn call<T: Send + 'static>(
        &self,
        key: &str,
        f: impl Fn(&mut RawInstance) -> anyhow::Result<Result<T, wit::Error>> + Send + Sync + 'static,
    ) -> Result<T, Error> {
        self.call_at(self.inner.pool.index_of(key), f).await
    }

    /// Runs `f` on instance `index` (on its worker thread).
    pub(crate) async fn call_at<T: Send + 'static>(
        &self,
        index: usize,
        f: impl Fn(&mut RawInstance) -> anyhow::Result<Result<T, wit::Error>> + Send + Sync + 'static,
    ) -> Result<T, Error> {
        self.inner.call(index, f).await
    }

    /// The store refused the credentials of `generation`: fetch new ones
    /// unless that already happened. True if the next call carries others.
    pub(crate) async fn renew_credentials(&self, generation: u64) -> bool {
        let inner = self.inner.clone();
        blocking(move || inner.renew_credentials(generation))
            .await
            .unwrap_or(false)
    }

    /// Replaces the credentials (a host refreshing temporary ones): the
    /// next request of every instance signs with them. Leases stay valid.
    pub async fn set_credentials(&self, credentials: &Credentials) -> Result<(), Error> {
        let inner = self.inner.clone();
        let credentials = convert::credentials(credentials);
        blocking(move || inner.pool.set_credentials(&credentials)).await?
    }

    /// Replaces an Azure client's credential (a host refreshing its own
    /// bearer tokens): the next requests carry it.
    pub async fn set_azure_credential(&self, credential: &AzureCredential) -> Result<(), Error> {
        let inner = self.inner.clone();
        let credential = convert::azure_credential(credential);
        blocking(move || inner.pool.set_azure_credential(&credential)).await?
    }

    /// What the client's scheduler of renewals holds and has done.
    /// Shared by its clones; see [`crate::ClientStats`].
    pub fn stats(&self) -> crate::ClientStats {
        self.inner.keeper.stats()
    }

    /// How many times new credentials went in from the client's source.
    pub fn credentials_refreshes(&self) -> u64 {
        self.inner.refresher.as_ref().map_or(0, |r| r.generation())
    }

    /// Why the last refresh of the credentials failed, while it has not
    /// succeeded since (the old ones stay in until then).
    pub fn credentials_error(&self) -> Option<String> {
        self.inner.refresher.as_ref().and_then(|r| r.last_error())
    }

    /// One attempt at the lock: held (renewing itself) if granted, `None`
    /// while someone else holds a live lease. A grant whose reply came
    /// after its claim ran out is released and fails the attempt with a
    /// transient error (worth another).
    pub async fn try_acquire(
        &self,
        key: &str,
        options: &AcquireOptions,
    ) -> Result<Option<Lease>, Error> {
        match self.attempt(key, options).await? {
            (Attempted::Granted(record), began) => {
                self.keep_grant(record, began, options).map(Some)
            }
            (Attempted::Missed(..), _) => Ok(None),
        }
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
        self.wait_for(key, &options, wait, 0, || self.attempt(key, &options))
            .await
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
                self.store_name(),
                crate::error::Detail::Message(format!(
                    "a fair attempt at a slot of {key} needs a holder id (AcquireOptions::\
                     holder_id): its place in the queue is kept under that id, for the next \
                     attempt to find and for leave_queue"
                )),
            ));
        }
        Ok(match self.slot_attempt(key, options, slot).await? {
            (Attempted::Granted(record), began) => {
                SlotGrant::Granted(self.keep_grant(record, began, options)?)
            }
            (Attempted::Missed(Missed::Queued, _, place), _) => SlotGrant::Queued { place },
            (Attempted::Missed(_, seen, _), _) => SlotGrant::Full(seen),
        })
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
        let poll_ms = fair_poll_ms(millis(options.ttl));
        let result = self
            .wait_for(key, &options, wait, poll_ms, || {
                self.slot_attempt(key, &options, slot)
            })
            .await;
        if result.is_ok() {
            leave.armed = false;
        }
        result
    }

    /// Keeps `record`, granted by an attempt that began at `since`, held
    /// (renewing on the client's scheduler) until the lease is dropped or
    /// released: for a lease granted through the record calls.
    pub fn hold(&self, record: LeaseRecord, since: Instant, options: &AcquireOptions) -> Lease {
        let timing = timing(record.ttl, options);
        Lease::start(self.clone(), record, since, timing)
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
        let timing = timing(record.ttl, options);
        let took = began.elapsed();
        if self.inner.keeper.is_closed() {
            let index = self.inner.pool.index_of(&record.key);
            release_in_background(Arc::downgrade(&self.inner), index, convert::lease(&record));
            return Err(Error::host(format!(
                "the client was closed (Client::close): it keeps no new lease, and the grant \
                 of {} was released",
                record.key
            )));
        }
        if millis(took) < timing.deadline_ms {
            return Ok(Lease::start(self.clone(), record, began, timing));
        }
        let index = self.inner.pool.index_of(&record.key);
        release_in_background(Arc::downgrade(&self.inner), index, convert::lease(&record));
        Err(Error::transport(format!(
            "the grant of {} came {} ms after its attempt began, past the lease's safe \
             margin of {} ms (released)",
            record.key,
            millis(took),
            timing.deadline_ms
        )))
    }

    /// One grant attempt, with when its call began on the instance; a
    /// grant that comes back after the caller gave up waiting for it (the
    /// future dropped) is released.
    async fn attempt(
        &self,
        key: &str,
        options: &AcquireOptions,
    ) -> Result<(Attempted, Instant), Error> {
        let wit_options = convert::options(options);
        let key_owned = key.to_string();
        // `acquire` with no time to wait: one attempt that names the holder.
        let outcome = self
            .call_granting(key, move |raw| raw.acquire(&key_owned, &wit_options, 0))
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
                Instant::now(),
            )),
            Err(e) => Err(e),
        }
    }

    // The closure returns the contract's generated error as it came (its
    // `timeout` case holds a lock state: 168 bytes); `call_granting` turns
    // it into the crate's boxed `Error`.
    #[allow(clippy::result_large_err)]
    async fn slot_attempt(
        &self,
        key: &str,
        options: &AcquireOptions,
        slot: SlotOptions,
    ) -> Result<(Attempted, Instant), Error> {
        let (wit_options, wit_slot) = (convert::options(options), convert::slot_options(slot));
        let key_owned = key.to_string();
        let attempt = self
            .call_granting(key, move |raw| {
                raw.try_acquire_slot(&key_owned, &wit_options, wit_slot)
                    .map(|r| r.map(SlotOutcome))
            })
            .await?;
        Ok(attempt)
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
        f: impl FnOnce(&mut RawInstance) -> anyhow::Result<Result<T, wit::Error>> + Send + 'static,
    ) -> Result<(T::Output, Instant), Error> {
        let (tx, rx) = oneshot::channel();
        let index = self.inner.pool.index_of(key);
        self.inner.pool.send_job(index, move |opener, instance| {
            let mut began = Instant::now();
            let result = opener.run(instance, |raw| {
                began = Instant::now();
                f(raw)
            });
            let result = result.map(|granting| Began(granting, began));
            if let Err(Ok(unwanted)) = tx.send(result) {
                if let Some(lease) = unwanted.granted() {
                    // Best effort: if it fails, the lease simply runs out.
                    let _ = opener.run(instance, move |raw| raw.release(&lease));
                }
            }
        });
        let mut pending = Pending {
            rx: Some(rx),
            inner: self.inner.clone(),
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
        let started = Instant::now();
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
                        Err(e) => {
                            last_error = Some(e);
                            Missed::Undecided
                        }
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
            let now = ms(Instant::now());
            if schedule.is_over(now) {
                return Err(last_error.unwrap_or_else(|| {
                    convert::timeout(key, Duration::from_millis(now), holder)
                        .with_store(self.store_name())
                }));
            }
            let pause = schedule.pause_ms(missed, now, crate::random_u64(), poll_ms);
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
    }

    /// Extends a lease given as a record; keep the returned one, the old
    /// one is spent. (A [`Lease`] renews itself.)
    pub async fn renew(&self, lease: &LeaseRecord) -> Result<LeaseRecord, Error> {
        let wit_lease = convert::lease(lease);
        self.call(&lease.key, move |raw| raw.renew(&wit_lease))
            .await
            .map(convert::from_lease)
    }

    /// Releases a lease given as a record.
    pub async fn release(&self, lease: &LeaseRecord) -> Result<(), Error> {
        let wit_lease = convert::lease(lease);
        self.call(&lease.key, move |raw| raw.release(&wit_lease))
            .await
    }

    /// The key's lock state; `None` if it was never locked. For a
    /// semaphore, [`Client::inspect_slots`] lists its holders and queue.
    pub async fn inspect(&self, key: &str) -> Result<Option<LockState>, Error> {
        let k = key.to_string();
        self.call(key, move |raw| raw.inspect(&k))
            .await
            .map(|s| s.map(convert::from_lock_state))
    }

    /// A semaphore's holders and queue; `None` for a plain lock or no object.
    pub async fn inspect_slots(&self, key: &str) -> Result<Option<SemaphoreState>, Error> {
        let k = key.to_string();
        self.call(key, move |raw| raw.inspect_slots(&k))
            .await
            .map(|s| s.map(convert::from_semaphore_state))
    }

    /// Gives up `holder_id`'s place in `key`'s queue, if it has one.
    pub async fn leave_queue(&self, key: &str, holder_id: &str) -> Result<(), Error> {
        let (k, h) = (key.to_string(), holder_id.to_string());
        self.call(key, move |raw| raw.leave_queue(&k, &h)).await
    }

    /// A fenced write under `lease`'s token (a [`Lease`] has its own,
    /// under its current token).
    pub async fn fenced_put(
        &self,
        lease: &LeaseRecord,
        object_key: &str,
        body: Vec<u8>,
        content_type: &str,
    ) -> Result<FencedWrite, Error> {
        self.fenced_put_with(
            lease,
            object_key,
            body,
            content_type,
            FenceOptions::default(),
        )
        .await
    }

    pub async fn fenced_put_with(
        &self,
        lease: &LeaseRecord,
        object_key: &str,
        body: Vec<u8>,
        content_type: &str,
        options: FenceOptions,
    ) -> Result<FencedWrite, Error> {
        let wit_lease = convert::lease(lease);
        let (object, content_type) = (object_key.to_string(), content_type.to_string());
        let options = convert::fence_options(options);
        self.call(&lease.key, move |raw| {
            raw.fenced_put_with(&wit_lease, &object, &body, &content_type, options)
        })
        .await
        .map(convert::from_fenced_write)
    }

    pub async fn fenced_delete(&self, lease: &LeaseRecord, object_key: &str) -> Result<(), Error> {
        let wit_lease = convert::lease(lease);
        let object = object_key.to_string();
        self.call(&lease.key, move |raw| {
            raw.fenced_delete(&wit_lease, &object)
        })
        .await
    }

    pub async fn fenced_get(&self, object_key: &str) -> Result<Option<FencedObject>, Error> {
        let object = object_key.to_string();
        self.call(object_key, move |raw| raw.fenced_get(&object))
            .await
            .map(|o| o.map(convert::from_fenced_object))
    }

    /// Probes the store with real requests under a scratch prefix (deleted
    /// afterwards): which capabilities a lock needs it has, and which
    /// strategies and expiry clocks are safe on it.
    pub async fn preflight(&self) -> Result<PreflightReport, Error> {
        self.call("", |raw| raw.preflight())
            .await
            .map(convert::from_preflight_report)
    }

    /// Campaigns for `config.key` on a task of its own until the returned
    /// [`Elector`] is resigned or dropped.
    pub async fn elect(&self, config: &ElectorConfig) -> Result<Elector, Error> {
        Elector::start(self.clone(), config).await
    }
}

impl Inner {
    /// The pool, and the first credentials when they come from a source.
    fn pool(
        runtime: Runtime,
        config: S3Config,
        options: ClientOptions,
    ) -> Result<(Pool, Option<First>), Error> {
        let mut wit_config = config.to_wit();
        let token_source = config
            .azure_blob
            .as_ref()
            .and_then(|b| b.token_source.clone());
        let first = match (token_source, &config.credentials_source) {
            (Some(source), _) => {
                let token = source.latest()?;
                if let Some(wit::Store::AzureBlob(blob)) = &mut wit_config.store {
                    blob.credential = wit::AzureCredential::Bearer(token.token.clone());
                }
                Some(First::Azure(source, token))
            }
            (None, Some(source)) => {
                let fetched = source.latest()?;
                wit_config.credentials = convert::credentials(&fetched.credentials);
                Some(First::Aws(source.clone(), fetched))
            }
            (None, None) => None,
        };
        let pool = Pool::new(runtime, wit_config, options.instances, options.make_options)?;
        Ok((pool, first))
    }

    /// Runs one call on instance `index`; if the store refused its
    /// credentials and the source gives other ones, runs it once more with
    /// those (the store applied nothing it refused, so the retry is safe).
    pub async fn call<T: Send + 'static>(
        self: &Arc<Self>,
        index: usize,
        f: impl Fn(&mut RawInstance) -> anyhow::Result<Result<T, wit::Error>> + Send + Sync + 'static,
    ) -> Result<T, Error> {
        let generation = self.refresher.as_ref().map_or(0, |r| r.generation());
        let f = Arc::new(f);
        let first = f.clone();
        match self.pool.call_async(index, move |raw| first(raw)).await {
            Err(e) if e.refused_credentials() => {
                let inner = self.clone();
                // Fetching may block (a credential process, a metadata call).
                if blocking(move || inner.renew_credentials(generation)).await? {
                    self.pool.call_async(index, move |raw| f(raw)).await
                } else {
                    Err(e)
                }
            }
            other => other,
        }
    }

    /// The store refused the credentials of `generation`: fetch new ones
    /// (once per generation) and put them in. True if the next call
    /// carries others.
    fn renew_credentials(&self, generation: u64) -> bool {
        self.refresher
            .as_ref()
            .is_some_and(|r| r.after_refusal(generation))
    }

    /// Installs fresh credentials (the refresher's thread calls this).
    pub fn install(&self, credentials: &Credentials) -> Result<(), Error> {
        self.pool
            .set_credentials(&convert::credentials(credentials))
    }

    /// Installs an Azure client's fresh bearer token (the refresher's
    /// thread calls this).
    fn install_token(&self, token: &str) -> Result<(), Error> {
        self.pool
            .set_azure_credential(&wit::AzureCredential::Bearer(token.to_string()))
    }
}

/// The first credentials a client's refresher starts from, with their
/// source: AWS keys, or an Azure bearer token.
enum First {
    Aws(SharedSource, FetchedCredentials),
    Azure(SharedTokenSource, AzureToken),
}

/// Runs blocking work (a component call) on tokio's blocking threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::host(format!("a call's thread ended: {e}")))
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
    fn granted(&self) -> Option<wit::Lease>;
    fn output(self) -> Self::Output;
}

impl Granting for wit::Lease {
    type Output = Attempted;
    fn granted(&self) -> Option<wit::Lease> {
        Some(self.clone())
    }
    fn output(self) -> Attempted {
        Attempted::Granted(convert::from_lease(self))
    }
}

/// A slot attempt's outcome, as a grant or a miss.
pub(crate) struct SlotOutcome(wit::SlotAttempt);

impl Granting for SlotOutcome {
    type Output = Attempted;
    fn granted(&self) -> Option<wit::Lease> {
        match &self.0 {
            wit::SlotAttempt::Granted(lease) => Some(lease.clone()),
            _ => None,
        }
    }
    fn output(self) -> Attempted {
        match self.0 {
            wit::SlotAttempt::Granted(lease) => Attempted::Granted(convert::from_lease(lease)),
            wit::SlotAttempt::Queued(place) => Attempted::Missed(Missed::Queued, None, place),
            wit::SlotAttempt::Full(seen) => {
                let seen = seen.map(convert::from_lock_state);
                Attempted::Missed(
                    Missed::Held {
                        expires_in_ms: seen.as_ref().map(|s| millis(s.expires_in)),
                    },
                    seen,
                    0,
                )
            }
        }
    }
}

/// A granting call's result with the instant its call began.
pub(crate) struct Began<T>(T, Instant);

impl<T: Granting> Granting for Began<T> {
    type Output = (T::Output, Instant);
    fn granted(&self) -> Option<wit::Lease> {
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
    inner: Arc<Inner>,
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
                release_in_background(Arc::downgrade(&self.inner), self.index, lease);
            }
        }
    }
}

/// How a lease granted with `options` is counted and renewed.
fn timing(ttl: Duration, options: &AcquireOptions) -> Timing {
    match options.deadline {
        Some(deadline) => Timing::new(millis(ttl), millis(deadline)),
        None => Timing::for_ttl(millis(ttl)),
    }
}

/// Releases `lease` from a thread of its own: nothing to wait for, and no
/// runtime needed (a drop may happen anywhere).
pub(crate) fn release_in_background(inner: Weak<Inner>, index: usize, lease: wit::Lease) {
    if let Some(inner) = inner.upgrade() {
        // Best effort: if it fails, the lease simply runs out.
        inner.pool.send_job(index, move |opener, instance| {
            let _ = opener.run(instance, move |raw| raw.release(&lease));
        });
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
        let pool = &self.client.inner.pool;
        pool.send_job(pool.index_of(&key), move |opener, instance| {
            // Best effort: a place left behind expires after its ttl.
            let _ = opener.run(instance, move |raw| raw.leave_queue(&key, &holder));
        });
    }
}

/// `options` with a holder id: the caller's, or one chosen now for the
/// whole wait (the component would choose one per call).
fn with_holder_id(options: &AcquireOptions) -> AcquireOptions {
    let mut options = options.clone();
    options
        .holder_id
        .get_or_insert_with(|| format!("holder-{:016x}", crate::random_u64()));
    options
}

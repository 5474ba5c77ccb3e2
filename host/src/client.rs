//! The async client: a handle on one store's instances (`calls`) and on
//! the scheduler that renews its leases (`keeper`), with the contract's
//! calls on records in the crate's own types. Acquiring (waits between
//! attempts, grants kept as leases) is `acquiring`; electing, `elector`;
//! closing, `closing`.

use crate::calls::{blocking, Calls};
use crate::component::{self, Answer};
use crate::config::StoreConfig;
use crate::engine::clock::Clock;
use crate::engine::raw::RawInstance;
use crate::engine::runtime::Runtime;
use crate::engine::state::InstanceOptions;
use crate::error::Error;
use crate::keeper::Keeper;
use crate::observe::traced;
use crate::pool::MakeOptions;
use crate::types::*;
use std::sync::Arc;

/// How a client runs: how many instances it keeps (each serves one call at
/// a time; each key's calls go to one of them).
#[non_exhaustive]
pub struct ClientOptions {
    /// Default 8.
    pub instances: usize,
    /// Per-instance hooks and clocks, for tests.
    pub(crate) make_options: MakeOptions,
    /// The clock deadlines are judged on: the system's (suspended time
    /// counted), or a test's.
    pub(crate) clock: Clock,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            instances: 8,
            make_options: Box::new(InstanceOptions::default),
            clock: Clock::system(),
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

    /// The clock the client judges every deadline on (its scheduler, its
    /// leases, its electors, its instances' monotonic clock): a test's
    /// ([`Clock::for_tests`]) to show what a resume from a suspend does.
    #[cfg(feature = "unstable-raw")]
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }
}

/// A client of one store (a bucket, table or container). Cheap to clone:
/// clones share its instances, its renewing of leases and its credentials.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub calls: Arc<Calls>,
    pub keeper: Keeper,
}

impl Client {
    /// A client with [`ClientOptions::default`]. No request is sent: the
    /// component only validates the configuration.
    pub async fn connect(runtime: &Runtime, config: &StoreConfig) -> Result<Self, Error> {
        Self::connect_with(runtime, config, ClientOptions::default()).await
    }

    pub async fn connect_with(
        runtime: &Runtime,
        config: &StoreConfig,
        options: ClientOptions,
    ) -> Result<Self, Error> {
        let (runtime, config) = (runtime.clone(), config.clone());
        let clock = options.clock;
        let calls = blocking(move || {
            Calls::open(
                runtime,
                config,
                options.instances,
                options.make_options,
                clock,
            )
        })
        .await??;
        // The connect fails if the scheduler's thread cannot start.
        let keeper = Keeper::start(Arc::downgrade(&calls), calls.clock.clone())?;
        Ok(Client {
            inner: Arc::new(Inner { calls, keeper }),
        })
    }

    /// The clock the client judges deadlines on.
    pub fn clock(&self) -> &Clock {
        &self.inner.calls.clock
    }

    /// The store's name as errors name it (`S3`, say).
    pub fn store_name(&self) -> &'static str {
        self.inner.calls.store_name()
    }

    /// Runs `f`, the public call `op`, on the instance that serves `key`
    /// (traced as `op` on `key`).
    pub(crate) async fn call<T: Send + 'static>(
        &self,
        op: &'static str,
        key: &str,
        f: impl Fn(&mut RawInstance) -> Answer<T> + Send + Sync + 'static,
    ) -> Result<T, Error> {
        let calls = &self.inner.calls;
        traced(
            op,
            key,
            calls.error_store(),
            calls.call(calls.index_of(key), f),
        )
        .await
    }

    /// Replaces the store's credential (a host refreshing temporary
    /// keys or its own bearer tokens): the next request of every instance
    /// carries it. Leases stay valid. One of another kind than the store's
    /// (AWS keys for an AWS store) is refused, as one the component
    /// refuses, and the old one stays.
    pub async fn set_credential(&self, credential: &Credential) -> Result<(), Error> {
        let calls = self.inner.calls.clone();
        let credential = credential.clone();
        blocking(move || calls.pool.set_credential(&credential)).await?
    }

    /// Replaces an AWS store's client's keys: [`Client::set_credential`]
    /// with [`Credential::Aws`].
    pub async fn set_credentials(&self, credentials: &Credentials) -> Result<(), Error> {
        self.set_credential(&Credential::Aws(credentials.clone()))
            .await
    }

    /// What the client's scheduler of renewals holds and has done.
    /// Shared by its clones; see [`crate::ClientStats`].
    pub fn stats(&self) -> crate::stats::ClientStats {
        self.inner.keeper.stats()
    }

    /// How many times new credentials went in from the client's source.
    pub fn credentials_refreshes(&self) -> u64 {
        self.inner.calls.credentials_refreshes()
    }

    /// Why the last refresh of the credentials failed, while it has not
    /// succeeded since (the old ones stay in until then).
    pub fn credentials_error(&self) -> Option<String> {
        self.inner.calls.credentials_error()
    }

    /// Extends a lease given as a record; keep the returned one, the old
    /// one is spent. (A [`Lease`] renews itself.)
    pub async fn renew(&self, lease: &LeaseRecord) -> Result<LeaseRecord, Error> {
        let record = lease.clone();
        self.call("renew", &lease.key, move |raw| {
            component::renew(raw, &record)
        })
        .await
    }

    /// Releases a lease given as a record.
    pub async fn release(&self, lease: &LeaseRecord) -> Result<(), Error> {
        let record = lease.clone();
        self.call("release", &lease.key, move |raw| {
            component::release(raw, &record)
        })
        .await
    }

    /// The key's lock state; `None` if it was never locked. For a
    /// semaphore, [`Client::inspect_slots`] lists its holders and queue.
    pub async fn inspect(&self, key: &str) -> Result<Option<LockState>, Error> {
        let k = key.to_string();
        self.call("inspect", key, move |raw| component::inspect(raw, &k))
            .await
    }

    /// A semaphore's holders and queue; `None` for a plain lock or no object.
    pub async fn inspect_slots(&self, key: &str) -> Result<Option<SemaphoreState>, Error> {
        let k = key.to_string();
        self.call("inspect_slots", key, move |raw| {
            component::inspect_slots(raw, &k)
        })
        .await
    }

    /// Gives up `holder_id`'s place in `key`'s queue, if it has one.
    pub async fn leave_queue(&self, key: &str, holder_id: &str) -> Result<(), Error> {
        let (k, h) = (key.to_string(), holder_id.to_string());
        self.call("leave_queue", key, move |raw| {
            component::leave_queue(raw, &k, &h)
        })
        .await
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
        let record = lease.clone();
        let (object, content_type) = (object_key.to_string(), content_type.to_string());
        self.call("fenced_put", &lease.key, move |raw| {
            component::fenced_put(raw, &record, &object, &body, &content_type, options)
        })
        .await
    }

    pub async fn fenced_delete(&self, lease: &LeaseRecord, object_key: &str) -> Result<(), Error> {
        let record = lease.clone();
        let object = object_key.to_string();
        self.call("fenced_delete", &lease.key, move |raw| {
            component::fenced_delete(raw, &record, &object)
        })
        .await
    }

    pub async fn fenced_get(&self, object_key: &str) -> Result<Option<FencedObject>, Error> {
        let object = object_key.to_string();
        self.call("fenced_get", object_key, move |raw| {
            component::fenced_get(raw, &object)
        })
        .await
    }

    /// Probes the store with real requests under a scratch prefix (deleted
    /// afterwards): which capabilities a lock needs it has, and which
    /// strategies and expiry clocks are safe on it.
    pub async fn preflight(&self) -> Result<PreflightReport, Error> {
        self.call("preflight", "", component::preflight).await
    }

    /// `key`'s grant log, oldest first (see [`StoreConfig::with_audit`]):
    /// its grants from the first at or after `since_ms` (the store's
    /// clock, ms since the Unix epoch), each with its holder, when it was
    /// granted, how and when it ended. Any client of the store may read
    /// it, with the log on or not.
    pub async fn audit(
        &self,
        key: &str,
        since_ms: Option<u64>,
    ) -> Result<Vec<crate::AuditEntry>, Error> {
        let k = key.to_string();
        self.call("audit", key, move |raw| component::audit(raw, &k, since_ms))
            .await
    }

    /// Proves from the store alone that no two holders of `key`
    /// overlapped (docs/audit.md); with `fenced_prefix`, also that the
    /// objects fenced under it by this key's lock carry recorded tokens,
    /// and, on a versioned S3 bucket, that their versions' tokens never
    /// fall.
    pub async fn audit_verify(
        &self,
        key: &str,
        fenced_prefix: Option<&str>,
    ) -> Result<crate::AuditReport, Error> {
        let (k, prefix) = (key.to_string(), fenced_prefix.map(str::to_string));
        self.call("audit_verify", key, move |raw| {
            component::audit_verify(raw, &k, prefix.as_deref())
        })
        .await
    }

    /// Deletes the records of `key`'s grants made before `before_ms` (the
    /// store's clock).
    pub async fn audit_prune(
        &self,
        key: &str,
        before_ms: u64,
    ) -> Result<crate::AuditPruned, Error> {
        let k = key.to_string();
        self.call("audit_prune", key, move |raw| {
            component::audit_prune(raw, &k, before_ms)
        })
        .await
    }
}

//! The typed client: the WIT calls with Rust types and one error enum,
//! shareable across threads (calls on one client take turns).

use crate::bindings::exports::s3_lease::lease::types::Timeout;
use crate::bindings::{
    AzureCredential, Credentials, ElectorConfig, Error as LeaseError, FenceOptions, FencedObject,
    FencedWrite, Lease, LockState, Options, PreflightReport, SemaphoreState, SlotAttempt,
    SlotOptions, Store,
};
use crate::credentials::refresh::Refresher;
use crate::credentials::refused_credentials;
use crate::elector::Elector;
use crate::guard::LeaseGuard;
use crate::raw::RawInstance;
use crate::{Error, InstanceOptions, Runtime, S3Config};
use s3_lease_keep::wait::{fair_poll_ms, Missed, Wait};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// A client of one bucket: an instance of the component of its own.
/// Clones share the instance.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Mutex<Slot>>,
    /// With a credentials source: keeps the instance's credentials fresh.
    refresher: Option<Arc<Refresher>>,
}

/// The instance, or why it is gone.
enum Slot {
    Live(Box<RawInstance>),
    Trapped(String),
}

impl Client {
    /// A new instance of the component with this configuration (validated
    /// by the component; no request is sent to the store).
    ///
    /// With `config.credentials_source` (as [`S3Config::from_env`] sets it),
    /// the client takes its credentials from there and keeps them fresh: a
    /// thread fetches new ones ahead of expiry (five minutes, or a quarter
    /// of a short lifetime) and hands them to the live instance, and a call
    /// the store refuses as `ExpiredToken`, `InvalidToken` or
    /// `InvalidAccessKeyId` fetches once and is sent once more.
    pub fn connect(runtime: &Runtime, config: &S3Config) -> Result<Self, Error> {
        Self::connect_with(runtime, config, InstanceOptions::default())
    }

    /// [`Client::connect`] with HTTP hooks or a wall clock of your own.
    pub fn connect_with(
        runtime: &Runtime,
        config: &S3Config,
        options: InstanceOptions,
    ) -> Result<Self, Error> {
        let mut wit = config.to_wit();
        let azure = config.azure.clone();
        let first = match &config.credentials_source {
            Some(source) => {
                let fetched = source.latest()?;
                match (&azure, &mut wit.store) {
                    // A managed identity's token (see `credentials::azure`).
                    (Some(a), Some(Store::AzureBlob(blob))) => {
                        blob.credential =
                            a.wit_credential(Some(&fetched.credentials.secret_access_key));
                    }
                    _ => wit.credentials = fetched.credentials.clone(),
                }
                Some((source.clone(), fetched))
            }
            None => None,
        };
        let mut raw = runtime.instantiate(options).map_err(Error::Host)?;
        flatten(raw.open(&wit))?;
        let inner = Arc::new(Mutex::new(Slot::Live(Box::new(raw))));
        let refresher = match first {
            Some((source, fetched)) => {
                let slot = Arc::downgrade(&inner);
                let on_azure = azure.is_some();
                let install = Box::new(move |c: &Credentials| {
                    if on_azure {
                        install_azure_token(&slot, &c.secret_access_key)
                    } else {
                        install(&slot, c)
                    }
                });
                Some(Arc::new(Refresher::start(source, fetched, install)?))
            }
            None => None,
        };
        Ok(Client { inner, refresher })
    }

    /// Runs one call; if the store refused its credentials and the client
    /// has a source that gives other ones, runs it once more with those.
    /// (The store applied nothing it refused, so the retry is safe; every
    /// call bounds itself as usual, and an elector's steps by the renew
    /// deadline.)
    pub(crate) fn call<T>(
        &self,
        f: impl Fn(&mut RawInstance) -> anyhow::Result<Result<T, LeaseError>>,
    ) -> Result<T, Error> {
        let generation = self.credentials_refreshes();
        match self.call_once(&f) {
            Err(Error::Lease(e))
                if refused_credentials(&e) && self.renew_credentials(generation) =>
            {
                self.call_once(&f)
            }
            other => other,
        }
    }

    /// The store refused the credentials of `generation`: fetch new ones
    /// unless that already happened. True if the next call carries others.
    pub(crate) fn renew_credentials(&self, generation: u64) -> bool {
        self.refresher
            .as_ref()
            .is_some_and(|r| r.after_refusal(generation))
    }

    /// How many times new credentials went into this client from its
    /// source (0 without one): pass it to [`Client::renew_credentials`].
    pub fn credentials_refreshes(&self) -> u64 {
        self.refresher.as_ref().map_or(0, |r| r.generation())
    }

    /// Why the last refresh of the credentials failed, while it has not
    /// succeeded since (the old ones stay in until then).
    pub fn credentials_error(&self) -> Option<String> {
        self.refresher.as_ref().and_then(|r| r.last_error())
    }

    /// Runs one call on the instance. A trap discards the instance: wasmtime
    /// refuses to enter it again, and a half-run call may have broken its state.
    fn call_once<T>(
        &self,
        f: impl FnOnce(&mut RawInstance) -> anyhow::Result<Result<T, LeaseError>>,
    ) -> Result<T, Error> {
        let mut slot = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let raw = match &mut *slot {
            Slot::Live(raw) => raw,
            Slot::Trapped(message) => return Err(Error::Trap(message.clone())),
        };
        match f(raw) {
            Ok(result) => result.map_err(Error::from),
            Err(trap) => {
                let message = format!("{trap:#}");
                *slot = Slot::Trapped(message.clone());
                Err(Error::Trap(message))
            }
        }
    }

    /// Replaces the credentials, for a host that refreshes temporary ones
    /// (STS, instance roles): the next request signs with them, and so do
    /// the electors of [`Client::elect`], started before or after. Call it
    /// a few minutes before the old ones expire. Leases stay valid (their
    /// seal takes nothing from credentials), and so do guards. Credentials
    /// the constructor would refuse are an `invalid-config` error, and the
    /// old ones stay.
    pub fn set_credentials(&self, credentials: &Credentials) -> Result<(), Error> {
        self.call(|i| i.set_credentials(credentials))
    }

    /// One attempt; `None` while someone else holds a live lease.
    pub fn try_acquire(&self, key: &str, options: &Options) -> Result<Option<Lease>, Error> {
        self.call(|i| i.try_acquire(key, options))
    }

    /// Waits up to `wait` for the lock, then fails with a timeout naming
    /// the holder. The waiting happens here, between calls: the client
    /// serves its other callers (renewals of its other locks among them)
    /// while this one waits.
    pub fn acquire(&self, key: &str, options: &Options, wait: Duration) -> Result<Lease, Error> {
        self.acquire_attempt(key, options, wait)
            .map(|(lease, _)| lease)
    }

    /// [`Client::acquire`], with the instant the granting attempt began.
    fn acquire_attempt(
        &self,
        key: &str,
        options: &Options,
        wait: Duration,
    ) -> Result<(Lease, Instant), Error> {
        let options = with_holder_id(options);
        // An `acquire` with no time to wait is one attempt that names the
        // holder when it finds one: what a waiter backs off by.
        let attempt = |c: &Client| match c.call(|i| i.acquire(key, &options, 0)) {
            Ok(lease) => Ok(Attempted::Granted(lease)),
            Err(Error::Lease(e)) => match *e {
                LeaseError::Timeout(t) => Ok(Attempted::Missed(
                    Missed::Held {
                        expires_in_ms: t.holder.as_ref().map(|h| h.expires_in_ms),
                    },
                    t.holder,
                )),
                other => Err(Error::Lease(Box::new(other))),
            },
            Err(e) => Err(e),
        };
        self.wait_for(key, wait, 0, attempt, |_| {})
    }

    /// Tries `attempt` until it grants or `wait` has passed, pausing
    /// between attempts as `s3_lease_keep::wait` says (backoff, a holder's
    /// expiry, a queued waiter's `poll_ms`). Transient errors are retried
    /// within the wait; any other ends it. `leave` runs when it gives up.
    fn wait_for<T>(
        &self,
        key: &str,
        wait: Duration,
        poll_ms: u64,
        mut attempt: impl FnMut(&Client) -> Result<Attempted<T>, Error>,
        leave: impl FnOnce(&Client),
    ) -> Result<(T, Instant), Error> {
        let started = Instant::now();
        let ms = |at: Instant| millis(at.saturating_duration_since(started));
        let mut schedule = Wait::new(0, millis(wait));
        let mut holder = None;
        loop {
            let began = Instant::now();
            let mut last_error = None;
            let missed = match attempt(self) {
                Ok(Attempted::Granted(granted)) => return Ok((granted, began)),
                Ok(Attempted::Missed(missed, seen)) => {
                    if seen.is_some() {
                        holder = seen;
                    }
                    missed
                }
                Err(e) if e.is_transient() => {
                    last_error = Some(e);
                    Missed::Undecided
                }
                Err(e) => {
                    leave(self);
                    return Err(e);
                }
            };
            let now = ms(Instant::now());
            if schedule.is_over(now) {
                leave(self);
                return Err(last_error.unwrap_or_else(|| {
                    Error::from(LeaseError::Timeout(Timeout {
                        key: key.to_string(),
                        waited_ms: now,
                        holder,
                    }))
                }));
            }
            let pause = schedule.pause_ms(missed, now, random_u64(), poll_ms);
            std::thread::sleep(Duration::from_millis(pause));
        }
    }

    /// One attempt at one of `key`'s `slot.limit` slots (a semaphore);
    /// with `slot.fair`, joins or keeps a place in its queue. A waiter that
    /// stops trying should [`Client::leave_queue`].
    pub fn try_acquire_slot(
        &self,
        key: &str,
        options: &Options,
        slot: SlotOptions,
    ) -> Result<SlotAttempt, Error> {
        self.call(|i| i.try_acquire_slot(key, options, slot))
    }

    /// Waits up to `wait` for a slot, then fails with a timeout (a fair
    /// waiter leaves the queue first). As [`Client::acquire`], the waiting
    /// happens between calls.
    pub fn acquire_slot(
        &self,
        key: &str,
        options: &Options,
        slot: SlotOptions,
        wait: Duration,
    ) -> Result<Lease, Error> {
        self.acquire_slot_attempt(key, options, slot, wait)
            .map(|(lease, _)| lease)
    }

    /// [`Client::acquire_slot`], with the instant the granting attempt began.
    fn acquire_slot_attempt(
        &self,
        key: &str,
        options: &Options,
        slot: SlotOptions,
        wait: Duration,
    ) -> Result<(Lease, Instant), Error> {
        // One holder id for the whole wait: a fair waiter keeps its place.
        let options = with_holder_id(options);
        let holder_id = options.holder_id.clone().unwrap_or_default();
        let attempt = |c: &Client| {
            Ok(match c.try_acquire_slot(key, &options, slot)? {
                SlotAttempt::Granted(lease) => Attempted::Granted(lease),
                SlotAttempt::Queued(_) => Attempted::Missed(Missed::Queued, None),
                SlotAttempt::Full(seen) => Attempted::Missed(
                    Missed::Held {
                        expires_in_ms: seen.as_ref().map(|s| s.expires_in_ms),
                    },
                    seen,
                ),
            })
        };
        let leave = |c: &Client| {
            if slot.fair {
                // Best effort: a place left behind expires after its ttl.
                let _ = c.leave_queue(key, &holder_id);
            }
        };
        let poll_ms = fair_poll_ms(options.ttl_ms);
        self.wait_for(key, wait, poll_ms, attempt, leave)
    }

    /// A semaphore's holders and queue; `None` for a plain lock or no object.
    pub fn inspect_slots(&self, key: &str) -> Result<Option<SemaphoreState>, Error> {
        self.call(|i| i.inspect_slots(key))
    }

    /// Gives up `holder_id`'s place in `key`'s queue, if it has one.
    pub fn leave_queue(&self, key: &str, holder_id: &str) -> Result<(), Error> {
        self.call(|i| i.leave_queue(key, holder_id))
    }

    /// Waits up to `wait` for a slot and holds it until the guard is
    /// dropped, renewing it in the background: [`Client::lock`] for a
    /// semaphore. One guard per slot.
    pub fn lock_slot(
        &self,
        key: &str,
        options: &Options,
        slot: SlotOptions,
        wait: Duration,
    ) -> Result<LeaseGuard, Error> {
        let (lease, attempt) = self.acquire_slot_attempt(key, options, slot, wait)?;
        Ok(LeaseGuard::granted(self.clone(), lease, attempt))
    }

    /// Guards a lease this client's `try_acquire` or `try_acquire_slot`
    /// granted, whose write was sent no earlier than `sent`: renewed in the
    /// background, counted held for `deadline` after each renew is sent,
    /// released on drop (see [`LeaseGuard::start_with`]).
    pub fn guard(&self, lease: Lease, sent: Instant, deadline: Duration) -> LeaseGuard {
        LeaseGuard::start_with(self.clone(), lease, sent, deadline)
    }

    /// Extends the lease; keep the returned one, the old one is spent.
    pub fn renew(&self, lease: &Lease) -> Result<Lease, Error> {
        self.call(|i| i.renew(lease))
    }

    pub fn release(&self, lease: &Lease) -> Result<(), Error> {
        self.call(|i| i.release(lease))
    }

    /// The key's lock state; `None` if it was never locked. For a
    /// semaphore, [`Client::inspect_slots`] lists its holders and queue.
    pub fn inspect(&self, key: &str) -> Result<Option<LockState>, Error> {
        self.call(|i| i.inspect(key))
    }

    pub fn fenced_put(
        &self,
        lease: &Lease,
        object_key: &str,
        body: &[u8],
        content_type: &str,
    ) -> Result<FencedWrite, Error> {
        self.call(|i| i.fenced_put(lease, object_key, body, content_type))
    }

    pub fn fenced_put_with(
        &self,
        lease: &Lease,
        object_key: &str,
        body: &[u8],
        content_type: &str,
        options: FenceOptions,
    ) -> Result<FencedWrite, Error> {
        self.call(|i| i.fenced_put_with(lease, object_key, body, content_type, options))
    }

    pub fn fenced_delete(&self, lease: &Lease, object_key: &str) -> Result<(), Error> {
        self.call(|i| i.fenced_delete(lease, object_key))
    }

    pub fn fenced_get(&self, object_key: &str) -> Result<Option<FencedObject>, Error> {
        self.call(|i| i.fenced_get(object_key))
    }

    /// Probes the store with real requests under a scratch prefix (deleted
    /// afterwards): which capabilities a lock needs it has, and which
    /// strategies and expiry clocks are safe on it.
    pub fn preflight(&self) -> Result<PreflightReport, Error> {
        self.call(|i| i.preflight())
    }

    /// Waits up to `wait` for the lock and holds it until the guard is
    /// dropped, renewing it in the background.
    pub fn lock(&self, key: &str, options: &Options, wait: Duration) -> Result<LeaseGuard, Error> {
        let (lease, attempt) = self.acquire_attempt(key, options, wait)?;
        Ok(LeaseGuard::granted(self.clone(), lease, attempt))
    }

    /// One attempt at [`Client::lock`]; `None` while someone else holds it.
    pub fn try_lock(&self, key: &str, options: &Options) -> Result<Option<LeaseGuard>, Error> {
        let attempt = Instant::now();
        Ok(self
            .try_acquire(key, options)?
            .map(|lease| LeaseGuard::granted(self.clone(), lease, attempt)))
    }

    /// Campaigns for `config.key` on a thread of its own until the
    /// returned [`Elector`] is resigned or dropped.
    pub fn elect(&self, config: &ElectorConfig) -> Result<Elector, Error> {
        Elector::start(self.clone(), config)
    }
}

/// Puts credentials into a client's instance, while the client lives.
/// A managed identity's fresh token into an Azure client.
fn install_azure_token(slot: &Weak<Mutex<Slot>>, token: &str) -> Result<(), Error> {
    let Some(slot) = slot.upgrade() else {
        return Err(Error::Trap("the client is gone".into()));
    };
    let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
    match &mut *slot {
        Slot::Live(raw) => {
            flatten(raw.set_azure_credential(&AzureCredential::Bearer(token.into())))
        }
        Slot::Trapped(message) => Err(Error::Trap(message.clone())),
    }
}

fn install(slot: &Weak<Mutex<Slot>>, credentials: &Credentials) -> Result<(), Error> {
    let Some(slot) = slot.upgrade() else {
        return Err(Error::Trap("the client is gone".into()));
    };
    let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
    match &mut *slot {
        Slot::Live(raw) => flatten(raw.set_credentials(credentials)),
        Slot::Trapped(message) => Err(Error::Trap(message.clone())),
    }
}

pub(crate) fn flatten<T>(result: anyhow::Result<Result<T, LeaseError>>) -> Result<T, Error> {
    match result {
        Ok(inner) => inner.map_err(Error::from),
        Err(trap) => Err(Error::Trap(format!("{trap:#}"))),
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What one attempt of a wait found.
enum Attempted<T> {
    Granted(T),
    /// Not granted; the holder as read, when it was.
    Missed(Missed, Option<LockState>),
}

/// `options` with a holder id: the caller's, or one chosen now for the
/// whole wait (the component would choose one per call).
fn with_holder_id(options: &Options) -> Options {
    let mut options = options.clone();
    options
        .holder_id
        .get_or_insert_with(|| format!("holder-{:016x}", random_u64()));
    options
}

/// Jitter for backoffs, and holder ids: std's per-process random keys.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    hasher.finish()
}

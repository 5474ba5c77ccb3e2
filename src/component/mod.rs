//! The WIT exports: each call as one async function over `WasiIo`, taking
//! and returning the generated types. `exports` finishes them for the
//! WASI 0.2 world, where nothing suspends, and awaits them for the WASI
//! 0.3 world. No protocol logic lives here.

use crate::prelude::*;

mod audit;
mod convert;
mod exports;
mod turns;

use convert::*;

use crate::bindings::exports::s3_lease::lease::types as wit;
use crate::client::ClientCore;
use crate::config::{ClientConfig, Credential};
use crate::driver::Within;
use crate::elector::{Elector, ElectorConfig};
use crate::error::Error;
use crate::fenced::Change;
use crate::lease::Lease;
use crate::protocol::AcquireOutcome;
use crate::strategy::single_object::semaphore::SlotOutcome;
use crate::transport::{random_hex_id, random_u64, WasiIo};
use alloc::rc::Rc;
use core::cell::{Cell, RefCell};
use turns::Turns;

/// The WIT `client`: the core client, held by one call at a time.
pub struct Client {
    core: Turns<ClientCore>,
    /// Its validated config, for electors made while a call holds `core`.
    config: ClientConfig,
    /// Added to the wall clock when signing, once a server refused our time
    /// as skewed (see `driver::run`).
    signing_offset_ms: Cell<i64>,
    /// The credential of the latest `set-credential` (the config's until
    /// then), shared with the electors made from this client: they sign
    /// with it too, and so does a call already under way from its next
    /// request on.
    credential: Rc<RefCell<Credential>>,
}

impl Client {
    async fn run<T>(
        &self,
        f: impl AsyncFnOnce(&mut ClientCore, &mut Within<'_, WasiIo<'_>>) -> Result<T, Error>,
    ) -> Result<T, wit::Error> {
        let mut core = self.core.take().await;
        let config = core.config.clone();
        let mut io = WasiIo {
            config: &config,
            credential: &self.credential,
            signing_offset_ms: &self.signing_offset_ms,
        };
        // Through a `Within` without a deadline, the elector's `Io` type:
        // the client's async code is then built once (see `driver::Within`).
        let mut io = Within::new(&mut io, None);
        f(&mut core, &mut io).await.map_err(to_wit_error)
    }

    fn from_config(config: ClientConfig) -> Self {
        Client {
            credential: Rc::new(RefCell::new(config.store.credential())),
            core: Turns::new(ClientCore::new(config.clone())),
            config,
            signing_offset_ms: Cell::new(0),
        }
    }
}

impl Client {
    pub(super) fn new(config: wit::Config) -> Result<Self, wit::Error> {
        raw_config(config)
            .and_then(ClientConfig::validate)
            .map(Client::from_config)
            .map_err(to_wit_error)
    }

    pub(super) fn set_credential(&self, credential: wit::Credential) -> Result<(), wit::Error> {
        // Checked against a copy of the store: not through the core, which
        // a call under way may hold, and whose next request should sign
        // with this one already.
        let credential = from_wit_credential(credential).map_err(to_wit_error)?;
        let mut store = self.config.store.clone();
        store
            .set_credential(credential.clone())
            .map_err(to_wit_error)?;
        *self.credential.borrow_mut() = credential;
        Ok(())
    }

    pub(super) async fn try_acquire(
        &self,
        key: String,
        options: wit::Options,
    ) -> Result<Option<wit::Lease>, wit::Error> {
        let grant = grant(options).map_err(to_wit_error)?;
        self.run(async |core, io| core.try_acquire(io, &key, &grant).await)
            .await
            .map(|outcome| match outcome {
                AcquireOutcome::Granted(lease) => Some(wit::Lease::from_twin(lease)),
                AcquireOutcome::Held(_) => None,
            })
    }

    pub(super) async fn acquire(
        &self,
        key: String,
        options: wit::Options,
        timeout_ms: u64,
    ) -> Result<wit::Lease, wit::Error> {
        let grant = grant(options).map_err(to_wit_error)?;
        self.run(async |core, io| core.acquire(io, &key, &grant, timeout_ms).await)
            .await
            .map(wit::Lease::from_twin)
    }

    pub(super) async fn try_acquire_slot(
        &self,
        key: String,
        options: wit::Options,
        slot: wit::SlotOptions,
    ) -> Result<wit::SlotAttempt, wit::Error> {
        let grant = grant(options).map_err(to_wit_error)?;
        self.run(async |core, io| {
            core.try_acquire_slot(io, &key, &grant, slot.limit, slot.fair)
                .await
        })
        .await
        .map(|outcome| match outcome {
            SlotOutcome::Granted(lease) => wit::SlotAttempt::Granted(wit::Lease::from_twin(lease)),
            SlotOutcome::Queued { place, .. } => wit::SlotAttempt::Queued(place),
            SlotOutcome::Full(seen) => {
                wit::SlotAttempt::Full(seen.map(|s| wit::LockState::from_twin(*s)))
            }
            SlotOutcome::Rewritten(_) | SlotOutcome::Left => wit::SlotAttempt::Full(None),
        })
    }

    pub(super) async fn acquire_slot(
        &self,
        key: String,
        options: wit::Options,
        slot: wit::SlotOptions,
        timeout_ms: u64,
    ) -> Result<wit::Lease, wit::Error> {
        let grant = grant(options).map_err(to_wit_error)?;
        self.run(async |core, io| {
            core.acquire_slot(io, &key, &grant, slot.limit, slot.fair, timeout_ms)
                .await
        })
        .await
        .map(wit::Lease::from_twin)
    }

    pub(super) async fn inspect_slots(
        &self,
        key: String,
    ) -> Result<Option<wit::SemaphoreState>, wit::Error> {
        self.run(async |core, io| core.inspect_slots(io, &key).await)
            .await
            .map(|s| s.and_then(to_wit_semaphore))
    }

    pub(super) async fn leave_queue(
        &self,
        key: String,
        holder_id: String,
    ) -> Result<(), wit::Error> {
        self.run(async |core, io| core.leave_queue(io, &key, &holder_id).await)
            .await
    }

    pub(super) async fn renew(&self, lease: wit::Lease) -> Result<wit::Lease, wit::Error> {
        self.run(async |core, io| core.rewrite(io, Lease::from_twin(lease), false).await)
            .await
            .map(wit::Lease::from_twin)
    }

    pub(super) async fn release(&self, lease: wit::Lease) -> Result<(), wit::Error> {
        self.run(async |core, io| core.rewrite(io, Lease::from_twin(lease), true).await)
            .await
            .map(|_| ())
    }

    pub(super) async fn inspect(&self, key: String) -> Result<Option<wit::LockState>, wit::Error> {
        self.run(async |core, io| core.inspect(io, &key).await)
            .await
            .map(|s| s.map(wit::LockState::from_twin))
    }

    pub(super) async fn fenced_put(
        &self,
        lease: wit::Lease,
        object_key: String,
        body: Vec<u8>,
        content_type: String,
    ) -> Result<wit::FencedWrite, wit::Error> {
        let options = wit::FenceOptions {
            reject_equal_token: false,
        };
        self.fenced_put_with(lease, object_key, body, content_type, options)
            .await
    }

    pub(super) async fn fenced_put_with(
        &self,
        lease: wit::Lease,
        object_key: String,
        body: Vec<u8>,
        content_type: String,
        options: wit::FenceOptions,
    ) -> Result<wit::FencedWrite, wit::Error> {
        let change = Change::Put { body, content_type };
        let lease = Lease::from_twin(lease);
        self.run(async |core, io| {
            core.fenced_write(io, &lease, &object_key, change, options.reject_equal_token)
                .await
        })
        .await
        .map(wit::FencedWrite::from_twin)
    }

    pub(super) async fn fenced_delete(
        &self,
        lease: wit::Lease,
        object_key: String,
    ) -> Result<(), wit::Error> {
        let change = Change::Delete {
            nonce: random_u64(),
        };
        let lease = Lease::from_twin(lease);
        self.run(async |core, io| {
            core.fenced_write(io, &lease, &object_key, change, false)
                .await
        })
        .await
        .map(|_| ())
    }

    pub(super) async fn fenced_get(
        &self,
        object_key: String,
    ) -> Result<Option<wit::FencedObject>, wit::Error> {
        self.run(async |core, io| core.fenced_get(io, &object_key).await)
            .await
            .map(Option::from_twin)
    }

    pub(super) async fn preflight(&self) -> Result<wit::PreflightReport, wit::Error> {
        self.run(async |core, io| core.preflight(io).await)
            .await
            .map(wit::PreflightReport::from_twin)
    }

    pub(super) fn elector(
        &self,
        config: wit::ElectorConfig,
    ) -> Result<ElectorResource, wit::Error> {
        let config = ElectorConfig {
            key: config.key,
            lease_duration_ms: config.lease_duration_ms,
            renew_deadline_ms: config.renew_deadline_ms,
            retry_period_ms: config.retry_period_ms,
            holder_id: config
                .holder_id
                .unwrap_or_else(|| format!("elector-{}", random_hex_id())),
            metadata: config.metadata.unwrap_or_default(),
        };
        // The elector has a client of its own (same config and memory so
        // far): a resource cannot keep a borrow of another. While a call
        // holds this client's memory, the elector starts without it.
        let core = match self.core.peek() {
            Some(core) => core.clone(),
            None => ClientCore::new(self.config.clone()),
        };
        let elector = Elector::new(core, config).map_err(to_wit_error)?;
        Ok(ElectorResource {
            elector: Turns::new(elector),
            signing_offset_ms: Cell::new(self.signing_offset_ms.get()),
            credential: Rc::clone(&self.credential),
        })
    }
}

/// The WIT `elector`.
pub struct ElectorResource {
    elector: Turns<Elector>,
    signing_offset_ms: Cell<i64>,
    /// Its client's credential, as `set-credential` last set it.
    credential: Rc<RefCell<Credential>>,
}

impl ElectorResource {
    async fn run<T>(&self, f: impl AsyncFnOnce(&mut Elector, &mut WasiIo<'_>) -> T) -> T {
        let mut elector = self.elector.take().await;
        let config = elector.client_config().clone();
        let mut io = WasiIo {
            config: &config,
            credential: &self.credential,
            signing_offset_ms: &self.signing_offset_ms,
        };
        f(&mut elector, &mut io).await
    }

    pub(super) async fn step(&self) -> wit::StepResult {
        let status = self.run(async |e, io| e.step(io).await).await;
        wit::StepResult {
            role: to_wit_role(status.role),
            events: status.events.into_iter().map(to_wit_event).collect(),
            next_step_in_ms: status.next_step_in_ms,
            leading_until_ms: status.leading_until_ms,
            last_error: status.last_error.map(to_wit_error),
        }
    }

    pub(super) async fn resign(&self) -> Result<(), wit::Error> {
        self.run(async |e, io| e.resign(io).await)
            .await
            .map_err(to_wit_error)
    }
}

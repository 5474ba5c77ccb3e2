//! One instance of the component, call by call, as the WIT defines it.
//!
//! Each call returns `Result<Result<T, LeaseError>>`: the outer error is a
//! trap (a bug: the component must never trap, and the instance is unusable
//! after one), the inner one the typed error of the WIT API. [`crate::Client`]
//! folds both into [`crate::Error`]; tests use this layer to tell them apart.
//!
//! Either build of the component answers the same calls, each run to its
//! end on the calling thread's own runtime (`engine::local`): the WASI 0.2
//! build's with `call_async`, the WASI 0.3 build's as concurrent calls on
//! its store (`Store::run_concurrent`), so callers see one blocking API.
//! Hosts that want many calls in flight through one 0.3 instance use
//! [`RawInstance::run_concurrent`].

use crate::engine::bindings::exports::s3_lease::lease::types::{
    AuditEntry, AuditPruned, AuditReport,
};
use crate::engine::bindings::exports::s3_lease::lease::{async_lease, lease};
use crate::engine::bindings::{
    Config, Credential, ElectorConfig, Error as LeaseError, FenceOptions, FencedObject,
    FencedWrite, Lease, LockState, Options, PreflightReport, SemaphoreState, SlotAttempt,
    SlotOptions, StepResult,
};
use crate::engine::local::block_on;
use crate::engine::state::State;
use anyhow::{Context, Result};
use wasmtime::component::{Accessor, ResourceAny};
use wasmtime::Store;

/// Which build of the component a runtime loaded: they export the same
/// calls, `lease` over WASI 0.2 and `async-lease` over WASI 0.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Build {
    Wasip2,
    Wasip3,
}

impl Build {
    pub fn name(self) -> &'static str {
        match self {
            Build::Wasip2 => "WASI 0.2",
            Build::Wasip3 => "WASI 0.3",
        }
    }
}

/// The calls of the build this instance runs.
pub(crate) enum Calls {
    Wasip2(lease::Guest),
    Wasip3(async_lease::Guest),
}

/// The size of what an instance holds, from [`RawInstance::footprint`].
#[cfg(feature = "unstable-raw")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Footprint {
    /// The guest's linear memories, in bytes.
    pub guest_memory_bytes: usize,
    /// The host resources the guest holds handles to (HTTP requests,
    /// responses, bodies, futures, pollables, ...).
    pub host_resources: usize,
}

/// A store, the component instantiated in it, and (once `open` succeeded) its client.
pub struct RawInstance {
    store: Store<State>,
    calls: Calls,
    client: Option<ResourceAny>,
}

/// One call of the contract on either build, with the 0.2 build's
/// (borrowed) arguments; the 0.3 build's calls take them owned. Either
/// runs to its end on this thread's runtime (`engine::local`).
macro_rules! call {
    ($self:ident, $resource:ident, $method:ident, $handle:expr $(, $arg:expr)*) => {{
        let handle = $handle;
        match &$self.calls {
            Calls::Wasip2(api) => {
                Ok(block_on(api.$resource().$method(&mut $self.store, handle $(, $arg)*))?)
            }
            Calls::Wasip3(api) => {
                let api = api.$resource();
                let result = block_on($self.store.run_concurrent(async |a| {
                    api.$method(a, handle $(, ($arg).to_owned())*).await
                }));
                Ok(result??)
            }
        }
    }};
}

/// One call of a plain (not `async`) func of the contract on either build:
/// the 0.3 bindings make it on the store, outside `run_concurrent`.
macro_rules! plain_call {
    ($self:ident, $resource:ident, $method:ident $(, $arg:expr)*) => {{
        match &$self.calls {
            Calls::Wasip2(api) => Ok(block_on(api.$resource().$method(&mut $self.store $(, $arg)*))?),
            Calls::Wasip3(api) => Ok(block_on(api.$resource().$method(&mut $self.store $(, $arg)*))?),
        }
    }};
}

impl RawInstance {
    pub(crate) fn new(store: Store<State>, calls: Calls) -> Self {
        RawInstance {
            store,
            calls,
            client: None,
        }
    }

    /// Which build of the component this instance runs.
    pub fn build(&self) -> Build {
        match self.calls {
            Calls::Wasip2(_) => Build::Wasip2,
            Calls::Wasip3(_) => Build::Wasip3,
        }
    }

    /// Runs `calls` on a WASI 0.3 instance's store: calls made through the
    /// accessor run at the same time, each suspended while its requests
    /// are in flight or it waits (calls on one client take turns; give each
    /// concurrent task a client of its own, from [`RawInstance::new_client`]).
    /// `None` on a WASI 0.2 instance, whose calls block.
    pub fn run_concurrent<R: Send>(
        &mut self,
        calls: impl AsyncFnOnce(&Accessor<State>, &async_lease::Guest) -> R,
    ) -> Option<Result<R>> {
        let Calls::Wasip3(api) = &self.calls else {
            return None;
        };
        Some(
            block_on(self.store.run_concurrent(async |a| calls(a, api).await))
                .map_err(anyhow::Error::from),
        )
    }

    /// What the instance holds now, to tell whether it grows with the calls
    /// it runs.
    #[cfg(feature = "unstable-raw")]
    pub fn footprint(&mut self) -> Footprint {
        Footprint {
            guest_memory_bytes: self.store.data().guest_memory_bytes(),
            host_resources: self.store.data_mut().host_resources(),
        }
    }

    /// The client `open` made, as a handle for [`RawInstance::run_concurrent`].
    pub fn client_handle(&self) -> Option<ResourceAny> {
        self.client
    }

    /// Another client in this instance, beside the one `open` made; the
    /// caller owns its handle (it lives as long as the instance).
    pub fn new_client(&mut self, config: &Config) -> Result<Result<ResourceAny, LeaseError>> {
        plain_call!(self, client, call_constructor, config)
    }
}

impl RawInstance {
    /// Constructs the client resource.
    pub fn open(&mut self, config: &Config) -> Result<Result<(), LeaseError>> {
        match self.new_client(config)? {
            Ok(client) => {
                if let Some(old) = self.client.replace(client) {
                    self.drop_resource(old)?;
                }
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    fn drop_resource(&mut self, resource: ResourceAny) -> Result<()> {
        Ok(block_on(resource.resource_drop_async(&mut self.store))?)
    }

    fn client(&self) -> Result<ResourceAny> {
        self.client.context("open() the client first")
    }

    /// Replaces the client's credential (refreshed keys, a refreshed
    /// bearer token); the next request signs with it.
    pub fn set_credential(&mut self, credential: &Credential) -> Result<Result<(), LeaseError>> {
        let client = self.client()?;
        plain_call!(self, client, call_set_credential, client, credential)
    }

    pub fn try_acquire(
        &mut self,
        key: &str,
        options: &Options,
    ) -> Result<Result<Option<Lease>, LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_try_acquire, client, key, options)
    }

    pub fn acquire(
        &mut self,
        key: &str,
        options: &Options,
        timeout_ms: u64,
    ) -> Result<Result<Lease, LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_acquire, client, key, options, timeout_ms)
    }

    pub fn try_acquire_slot(
        &mut self,
        key: &str,
        options: &Options,
        slot: SlotOptions,
    ) -> Result<Result<SlotAttempt, LeaseError>> {
        let client = self.client()?;
        call!(
            self,
            client,
            call_try_acquire_slot,
            client,
            key,
            options,
            slot
        )
    }

    pub fn acquire_slot(
        &mut self,
        key: &str,
        options: &Options,
        slot: SlotOptions,
        timeout_ms: u64,
    ) -> Result<Result<Lease, LeaseError>> {
        let client = self.client()?;
        call!(
            self,
            client,
            call_acquire_slot,
            client,
            key,
            options,
            slot,
            timeout_ms
        )
    }

    pub fn inspect_slots(
        &mut self,
        key: &str,
    ) -> Result<Result<Option<SemaphoreState>, LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_inspect_slots, client, key)
    }

    pub fn leave_queue(&mut self, key: &str, holder_id: &str) -> Result<Result<(), LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_leave_queue, client, key, holder_id)
    }

    pub fn renew(&mut self, lease: &Lease) -> Result<Result<Lease, LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_renew, client, lease)
    }

    pub fn release(&mut self, lease: &Lease) -> Result<Result<(), LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_release, client, lease)
    }

    pub fn inspect(&mut self, key: &str) -> Result<Result<Option<LockState>, LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_inspect, client, key)
    }

    pub fn fenced_put(
        &mut self,
        lease: &Lease,
        object_key: &str,
        body: &[u8],
        content_type: &str,
    ) -> Result<Result<FencedWrite, LeaseError>> {
        let client = self.client()?;
        call!(
            self,
            client,
            call_fenced_put,
            client,
            lease,
            object_key,
            body,
            content_type
        )
    }

    pub fn fenced_put_with(
        &mut self,
        lease: &Lease,
        object_key: &str,
        body: &[u8],
        content_type: &str,
        options: FenceOptions,
    ) -> Result<Result<FencedWrite, LeaseError>> {
        let client = self.client()?;
        call!(
            self,
            client,
            call_fenced_put_with,
            client,
            lease,
            object_key,
            body,
            content_type,
            options
        )
    }

    pub fn fenced_delete(
        &mut self,
        lease: &Lease,
        object_key: &str,
    ) -> Result<Result<(), LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_fenced_delete, client, lease, object_key)
    }

    pub fn fenced_get(
        &mut self,
        object_key: &str,
    ) -> Result<Result<Option<FencedObject>, LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_fenced_get, client, object_key)
    }

    /// Probes the store (see the WIT's `preflight`).
    pub fn preflight(&mut self) -> Result<Result<PreflightReport, LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_preflight, client)
    }

    /// A key's grant log (see the WIT's `audit`).
    pub fn audit(
        &mut self,
        key: &str,
        since_ms: Option<u64>,
    ) -> Result<Result<Vec<AuditEntry>, LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_audit, client, key, since_ms)
    }

    /// Verifies a key's grant log (see the WIT's `audit-verify`).
    pub fn audit_verify(
        &mut self,
        key: &str,
        fenced_prefix: Option<&str>,
    ) -> Result<Result<AuditReport, LeaseError>> {
        let client = self.client()?;
        match &self.calls {
            Calls::Wasip2(api) => Ok(block_on(api.client().call_audit_verify(
                &mut self.store,
                client,
                key,
                fenced_prefix,
            ))?),
            Calls::Wasip3(api) => {
                let api = api.client();
                let (key, prefix) = (key.to_string(), fenced_prefix.map(str::to_string));
                let result =
                    block_on(self.store.run_concurrent(async |a| {
                        api.call_audit_verify(a, client, key, prefix).await
                    }));
                Ok(result??)
            }
        }
    }

    /// Prunes a key's grant log (see the WIT's `audit-prune`).
    pub fn audit_prune(
        &mut self,
        key: &str,
        before_ms: u64,
    ) -> Result<Result<AuditPruned, LeaseError>> {
        let client = self.client()?;
        call!(self, client, call_audit_prune, client, key, before_ms)
    }

    /// An elector on this instance's client (a resource handle).
    pub fn elector(&mut self, config: &ElectorConfig) -> Result<Result<ResourceAny, LeaseError>> {
        let client = self.client()?;
        plain_call!(self, client, call_elector, client, config)
    }

    /// One step of `elector`: its role, events and when to step next.
    pub fn step(&mut self, elector: ResourceAny) -> Result<StepResult> {
        call!(self, elector, call_step, elector)
    }

    pub fn resign(&mut self, elector: ResourceAny) -> Result<Result<(), LeaseError>> {
        call!(self, elector, call_resign, elector)
    }

    /// Drops an elector without resigning (a crash, as far as S3 can tell).
    pub fn drop_elector(&mut self, elector: ResourceAny) -> Result<()> {
        self.drop_resource(elector)
    }
}

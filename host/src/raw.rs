//! One instance of the component, call by call, as the WIT defines it.
//!
//! Each call returns `Result<Result<T, LeaseError>>`: the outer error is a
//! trap (a bug: the component must never trap, and the instance is unusable
//! after one), the inner one the typed error of the WIT API. [`crate::Client`]
//! folds both into [`crate::Error`]; tests use this layer to tell them apart.

use crate::bindings::{
    Config, Credentials, ElectorConfig, Error as LeaseError, FenceOptions, FencedObject,
    FencedWrite, Lease, LeaseApi, LockState, Options, PreflightReport, SemaphoreState, SlotAttempt,
    SlotOptions, StepResult,
};
use crate::runtime::State;
use anyhow::{Context, Result};
use wasmtime::component::ResourceAny;
use wasmtime::Store;

/// A store, the component instantiated in it, and (once `open` succeeded) its client.
pub struct RawInstance {
    store: Store<State>,
    host: LeaseApi,
    client: Option<ResourceAny>,
}

impl RawInstance {
    pub(crate) fn new(store: Store<State>, host: LeaseApi) -> Self {
        RawInstance {
            store,
            host,
            client: None,
        }
    }
}

impl RawInstance {
    /// Constructs the client resource.
    pub fn open(&mut self, config: &Config) -> Result<Result<(), LeaseError>> {
        let api = self.host.s3_lease_lease_lease().client();
        match api.call_constructor(&mut self.store, config)? {
            Ok(client) => {
                if let Some(old) = self.client.replace(client) {
                    old.resource_drop(&mut self.store)?;
                }
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    fn client(&self) -> Result<ResourceAny> {
        self.client.context("open() the client first")
    }

    /// Replaces the client's credentials; the next request signs with them.
    pub fn set_credentials(&mut self, credentials: &Credentials) -> Result<Result<(), LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_set_credentials(&mut self.store, client, credentials)?)
    }

    pub fn try_acquire(
        &mut self,
        key: &str,
        options: &Options,
    ) -> Result<Result<Option<Lease>, LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_try_acquire(
            &mut self.store,
            client,
            key,
            options,
        )?)
    }

    pub fn acquire(
        &mut self,
        key: &str,
        options: &Options,
        timeout_ms: u64,
    ) -> Result<Result<Lease, LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_acquire(
            &mut self.store,
            client,
            key,
            options,
            timeout_ms,
        )?)
    }

    pub fn try_acquire_slot(
        &mut self,
        key: &str,
        options: &Options,
        slot: SlotOptions,
    ) -> Result<Result<SlotAttempt, LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_try_acquire_slot(&mut self.store, client, key, options, slot)?)
    }

    pub fn acquire_slot(
        &mut self,
        key: &str,
        options: &Options,
        slot: SlotOptions,
        timeout_ms: u64,
    ) -> Result<Result<Lease, LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_acquire_slot(&mut self.store, client, key, options, slot, timeout_ms)?)
    }

    pub fn inspect_slots(
        &mut self,
        key: &str,
    ) -> Result<Result<Option<SemaphoreState>, LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_inspect_slots(&mut self.store, client, key)?)
    }

    pub fn leave_queue(&mut self, key: &str, holder_id: &str) -> Result<Result<(), LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_leave_queue(
            &mut self.store,
            client,
            key,
            holder_id,
        )?)
    }

    pub fn renew(&mut self, lease: &Lease) -> Result<Result<Lease, LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_renew(&mut self.store, client, lease)?)
    }

    pub fn release(&mut self, lease: &Lease) -> Result<Result<(), LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_release(
            &mut self.store,
            client,
            lease,
        )?)
    }

    pub fn inspect(&mut self, key: &str) -> Result<Result<Option<LockState>, LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_inspect(&mut self.store, client, key)?)
    }

    pub fn fenced_put(
        &mut self,
        lease: &Lease,
        object_key: &str,
        body: &[u8],
        content_type: &str,
    ) -> Result<Result<FencedWrite, LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_fenced_put(
            &mut self.store,
            client,
            lease,
            object_key,
            body,
            content_type,
        )?)
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
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_fenced_put_with(
                &mut self.store,
                client,
                lease,
                object_key,
                body,
                content_type,
                options,
            )?)
    }

    pub fn fenced_delete(
        &mut self,
        lease: &Lease,
        object_key: &str,
    ) -> Result<Result<(), LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_fenced_delete(&mut self.store, client, lease, object_key)?)
    }

    pub fn fenced_get(
        &mut self,
        object_key: &str,
    ) -> Result<Result<Option<FencedObject>, LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_fenced_get(
            &mut self.store,
            client,
            object_key,
        )?)
    }

    /// Probes the store (see the WIT's `preflight`).
    pub fn preflight(&mut self) -> Result<Result<PreflightReport, LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_preflight(&mut self.store, client)?)
    }

    /// An elector on this instance's client (a resource handle).
    pub fn elector(&mut self, config: &ElectorConfig) -> Result<Result<ResourceAny, LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_elector(
            &mut self.store,
            client,
            config,
        )?)
    }

    /// One step of `elector`: its role, events and when to step next.
    pub fn step(&mut self, elector: ResourceAny) -> Result<StepResult> {
        Ok(self
            .host
            .s3_lease_lease_lease()
            .elector()
            .call_step(&mut self.store, elector)?)
    }

    pub fn resign(&mut self, elector: ResourceAny) -> Result<Result<(), LeaseError>> {
        Ok(self
            .host
            .s3_lease_lease_lease()
            .elector()
            .call_resign(&mut self.store, elector)?)
    }

    /// Drops an elector without resigning (a crash, as far as S3 can tell).
    pub fn drop_elector(&mut self, elector: ResourceAny) -> Result<()> {
        Ok(elector.resource_drop(&mut self.store)?)
    }
}

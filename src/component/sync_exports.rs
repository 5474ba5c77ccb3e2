//! The WASI 0.2 world's exports: each call runs its async body to the end
//! in one poll, since the 0.2 transport blocks inside `send` and `sleep_ms`
//! and so never suspends.

use crate::prelude::*;

use super::convert::to_wit_error;
use super::{Client, ElectorResource};
use crate::bindings::exports::s3_lease::lease::lease::{
    self as wit_lease, Guest, GuestClient, GuestElector,
};
use crate::bindings::exports::s3_lease::lease::types as wit;
use crate::error::Error;
use crate::ready::now_or_never;
use core::future::Future;

struct Component;

impl Guest for Component {
    type Client = Client;
    type Elector = ElectorResource;
}

/// Never `None` over the 0.2 transport; if it were, a typed error beats a
/// trap.
fn finish<T>(call: impl Future<Output = Result<T, wit::Error>>) -> Result<T, wit::Error> {
    now_or_never(call).unwrap_or_else(|| Err(suspended()))
}

fn suspended() -> wit::Error {
    to_wit_error(Error::Transport(
        "a call suspended in the WASI 0.2 build, which cannot resume it".into(),
    ))
}

impl GuestClient for Client {
    fn new(config: wit::Config) -> Result<Self, wit::Error> {
        Client::new(config)
    }
    fn set_credentials(&self, credentials: wit::Credentials) -> Result<(), wit::Error> {
        Client::set_credentials(self, credentials)
    }
    fn set_azure_credential(&self, credential: wit::AzureCredential) -> Result<(), wit::Error> {
        Client::set_azure_credential(self, credential)
    }
    fn set_gcs_credential(&self, credential: wit::GcsCredential) -> Result<(), wit::Error> {
        Client::set_gcs_credential(self, credential)
    }
    fn try_acquire(
        &self,
        key: String,
        options: wit::Options,
    ) -> Result<Option<wit::Lease>, wit::Error> {
        finish(Client::try_acquire(self, key, options))
    }
    fn acquire(
        &self,
        key: String,
        options: wit::Options,
        timeout_ms: u64,
    ) -> Result<wit::Lease, wit::Error> {
        finish(Client::acquire(self, key, options, timeout_ms))
    }
    fn try_acquire_slot(
        &self,
        key: String,
        options: wit::Options,
        slot: wit::SlotOptions,
    ) -> Result<wit::SlotAttempt, wit::Error> {
        finish(Client::try_acquire_slot(self, key, options, slot))
    }
    fn acquire_slot(
        &self,
        key: String,
        options: wit::Options,
        slot: wit::SlotOptions,
        timeout_ms: u64,
    ) -> Result<wit::Lease, wit::Error> {
        finish(Client::acquire_slot(self, key, options, slot, timeout_ms))
    }
    fn inspect_slots(&self, key: String) -> Result<Option<wit::SemaphoreState>, wit::Error> {
        finish(Client::inspect_slots(self, key))
    }
    fn leave_queue(&self, key: String, holder_id: String) -> Result<(), wit::Error> {
        finish(Client::leave_queue(self, key, holder_id))
    }
    fn renew(&self, lease: wit::Lease) -> Result<wit::Lease, wit::Error> {
        finish(Client::renew(self, lease))
    }
    fn release(&self, lease: wit::Lease) -> Result<(), wit::Error> {
        finish(Client::release(self, lease))
    }
    fn inspect(&self, key: String) -> Result<Option<wit::LockState>, wit::Error> {
        finish(Client::inspect(self, key))
    }
    fn fenced_put(
        &self,
        lease: wit::Lease,
        object_key: String,
        body: Vec<u8>,
        content_type: String,
    ) -> Result<wit::FencedWrite, wit::Error> {
        finish(Client::fenced_put(
            self,
            lease,
            object_key,
            body,
            content_type,
        ))
    }
    fn fenced_put_with(
        &self,
        lease: wit::Lease,
        object_key: String,
        body: Vec<u8>,
        content_type: String,
        options: wit::FenceOptions,
    ) -> Result<wit::FencedWrite, wit::Error> {
        finish(Client::fenced_put_with(
            self,
            lease,
            object_key,
            body,
            content_type,
            options,
        ))
    }
    fn fenced_delete(&self, lease: wit::Lease, object_key: String) -> Result<(), wit::Error> {
        finish(Client::fenced_delete(self, lease, object_key))
    }
    fn fenced_get(&self, object_key: String) -> Result<Option<wit::FencedObject>, wit::Error> {
        finish(Client::fenced_get(self, object_key))
    }
    fn preflight(&self) -> Result<wit::PreflightReport, wit::Error> {
        finish(Client::preflight(self))
    }
    fn audit(
        &self,
        key: String,
        since_ms: Option<u64>,
    ) -> Result<Vec<wit::AuditEntry>, wit::Error> {
        finish(Client::audit(self, key, since_ms))
    }
    fn audit_verify(
        &self,
        key: String,
        fenced_prefix: Option<String>,
    ) -> Result<wit::AuditReport, wit::Error> {
        finish(Client::audit_verify(self, key, fenced_prefix))
    }
    fn audit_prune(&self, key: String, before_ms: u64) -> Result<wit::AuditPruned, wit::Error> {
        finish(Client::audit_prune(self, key, before_ms))
    }
    fn elector(&self, config: wit::ElectorConfig) -> Result<wit_lease::Elector, wit::Error> {
        Client::elector(self, config).map(wit_lease::Elector::new)
    }
}

impl GuestElector for ElectorResource {
    fn step(&self) -> wit::StepResult {
        now_or_never(ElectorResource::step(self)).unwrap_or_else(|| wit::StepResult {
            role: wit::Role::Candidate,
            events: Vec::new(),
            next_step_in_ms: 0,
            leading_until_ms: None,
            last_error: Some(suspended()),
        })
    }
    fn resign(&self) -> Result<(), wit::Error> {
        finish(ElectorResource::resign(self))
    }
}

crate::bindings::export!(Component with_types_in crate::bindings);

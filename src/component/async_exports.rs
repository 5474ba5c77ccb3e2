//! The WASI 0.3 world's exports (`async-lease`): each call awaits its
//! async body, suspending its task whenever the transport waits.

use crate::prelude::*;

use super::{Client, ElectorResource};
use crate::bindings::exports::s3_lease::lease::async_lease::{
    self as wit_lease, Guest, GuestClient, GuestElector,
};
use crate::bindings::exports::s3_lease::lease::types as wit;

struct Component;

impl Guest for Component {
    type Client = Client;
    type Elector = ElectorResource;
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
    async fn try_acquire(
        &self,
        key: String,
        options: wit::Options,
    ) -> Result<Option<wit::Lease>, wit::Error> {
        Client::try_acquire(self, key, options).await
    }
    async fn acquire(
        &self,
        key: String,
        options: wit::Options,
        timeout_ms: u64,
    ) -> Result<wit::Lease, wit::Error> {
        Client::acquire(self, key, options, timeout_ms).await
    }
    async fn try_acquire_slot(
        &self,
        key: String,
        options: wit::Options,
        slot: wit::SlotOptions,
    ) -> Result<wit::SlotAttempt, wit::Error> {
        Client::try_acquire_slot(self, key, options, slot).await
    }
    async fn acquire_slot(
        &self,
        key: String,
        options: wit::Options,
        slot: wit::SlotOptions,
        timeout_ms: u64,
    ) -> Result<wit::Lease, wit::Error> {
        Client::acquire_slot(self, key, options, slot, timeout_ms).await
    }
    async fn inspect_slots(&self, key: String) -> Result<Option<wit::SemaphoreState>, wit::Error> {
        Client::inspect_slots(self, key).await
    }
    async fn leave_queue(&self, key: String, holder_id: String) -> Result<(), wit::Error> {
        Client::leave_queue(self, key, holder_id).await
    }
    async fn renew(&self, lease: wit::Lease) -> Result<wit::Lease, wit::Error> {
        Client::renew(self, lease).await
    }
    async fn release(&self, lease: wit::Lease) -> Result<(), wit::Error> {
        Client::release(self, lease).await
    }
    async fn inspect(&self, key: String) -> Result<Option<wit::LockState>, wit::Error> {
        Client::inspect(self, key).await
    }
    async fn fenced_put(
        &self,
        lease: wit::Lease,
        object_key: String,
        body: Vec<u8>,
        content_type: String,
    ) -> Result<wit::FencedWrite, wit::Error> {
        Client::fenced_put(self, lease, object_key, body, content_type).await
    }
    async fn fenced_put_with(
        &self,
        lease: wit::Lease,
        object_key: String,
        body: Vec<u8>,
        content_type: String,
        options: wit::FenceOptions,
    ) -> Result<wit::FencedWrite, wit::Error> {
        Client::fenced_put_with(self, lease, object_key, body, content_type, options).await
    }
    async fn fenced_delete(&self, lease: wit::Lease, object_key: String) -> Result<(), wit::Error> {
        Client::fenced_delete(self, lease, object_key).await
    }
    async fn fenced_get(
        &self,
        object_key: String,
    ) -> Result<Option<wit::FencedObject>, wit::Error> {
        Client::fenced_get(self, object_key).await
    }
    async fn preflight(&self) -> Result<wit::PreflightReport, wit::Error> {
        Client::preflight(self).await
    }
    async fn audit(
        &self,
        key: String,
        since_ms: Option<u64>,
    ) -> Result<Vec<wit::AuditEntry>, wit::Error> {
        Client::audit(self, key, since_ms).await
    }
    async fn audit_verify(
        &self,
        key: String,
        fenced_prefix: Option<String>,
    ) -> Result<wit::AuditReport, wit::Error> {
        Client::audit_verify(self, key, fenced_prefix).await
    }
    async fn audit_prune(
        &self,
        key: String,
        before_ms: u64,
    ) -> Result<wit::AuditPruned, wit::Error> {
        Client::audit_prune(self, key, before_ms).await
    }
    fn elector(&self, config: wit::ElectorConfig) -> Result<wit_lease::Elector, wit::Error> {
        Client::elector(self, config).map(wit_lease::Elector::new)
    }
}

impl GuestElector for ElectorResource {
    async fn step(&self) -> wit::StepResult {
        ElectorResource::step(self).await
    }
    async fn resign(&self) -> Result<(), wit::Error> {
        ElectorResource::resign(self).await
    }
}

crate::bindings::export!(Component with_types_in crate::bindings::generated);

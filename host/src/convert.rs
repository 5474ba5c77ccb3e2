//! Between the crate's own types and the generated bindings: the only
//! place that knows both, so a change of the contract is a change here.
//! The contract's names meet their generated twins case for case
//! (`same_cases!`); records are converted field by field.

use crate::config::{Store, StoreConfig};
use crate::engine::bindings as wit;
use crate::engine::bindings::exports::s3_lease::lease::types as witt;
use crate::error::{Detail, Error, ErrorKind, Reply};
use crate::types::*;
use s3_lease_keep::leadership::{self, Step};
use std::time::Duration;

s3_lease_keep::same_cases! {
    Strategy = wit::Strategy { SingleObject, EpochObjects }
    ExpiryClock = wit::ExpiryClock { Holder, Server, Observed }
    Addressing = wit::AddressingStyle { Path, VirtualHosted }
    Verdict = wit::Verdict { Pass, Fail, Unknown }
    StopReason = wit::StopReason { RenewDeadline, Lost, Resigned }
    Capability = wit::Capability {
        IfNoneMatchExisting,
        IfMatchPut,
        IfMatchMissingKey,
        IfMatchDelete,
        ServerDates,
        ListStartAfter,
        ConditionalGet,
        PayloadHash,
        ClockOffset,
        TableKeySchema,
        TtlAttribute,
        ConcurrentCreate,
        ConcurrentUpdate,
    }
}

fn nonzero(v: u64) -> Option<u64> {
    (v != 0).then_some(v)
}

fn nonempty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// The WIT record the component takes, with `credential` in place of the
/// one the config was built with (a refreshed one), if given.
pub(crate) fn config(config: &StoreConfig, credential: Option<&Credential>) -> wit::Config {
    let mut store = store(config.store());
    if let Some(credential) = credential {
        put_credential(&mut store, self::credential(credential));
    }
    wit::Config {
        store,
        key_prefix: config.key_prefix.clone(),
        request_timeout_ms: config
            .request_timeout
            .map(|t| u32::try_from(t.as_millis()).unwrap_or(u32::MAX)),
        strategy: config.strategy.map(Into::into),
        expiry_clock: config.expiry_clock.map(Into::into),
        preflight: config.preflight,
        seal_key: config.seal_key.clone(),
    }
}

fn store(store: &Store) -> wit::Store {
    match store {
        Store::S3(s3) => wit::Store::S3(wit::S3Store {
            endpoint: s3.aws.endpoint.clone(),
            region: s3.aws.region.clone(),
            bucket: s3.bucket.clone(),
            addressing: s3.addressing.into(),
            credentials: aws_credentials(&s3.aws.credentials),
        }),
        Store::DynamoDb(table) => wit::Store::Dynamodb(wit::DynamodbStore {
            endpoint: table.aws.endpoint.clone(),
            region: table.aws.region.clone(),
            table: table.table.clone(),
            credentials: aws_credentials(&table.aws.credentials),
        }),
        Store::AzureBlob(azure) => wit::Store::AzureBlob(wit::AzureStore {
            endpoint: azure.endpoint.clone(),
            addressing: match azure.path_style {
                true => wit::AddressingStyle::Path,
                false => wit::AddressingStyle::VirtualHosted,
            },
            account: azure.account.clone(),
            container: azure.container.clone(),
            credential: azure_credential(&azure.credential),
        }),
        Store::Gcs(gcs) => wit::Store::Gcs(wit::GcsStore {
            endpoint: gcs.endpoint.clone(),
            bucket: gcs.bucket.clone(),
            credential: gcs_credential(&gcs.credential),
        }),
    }
}

/// Puts `credential` in `store` where it is of the store's kind; one of
/// another kind is left for the component to refuse, as it refuses it in
/// `set-credential`.
fn put_credential(store: &mut wit::Store, credential: wit::Credential) {
    match (store, credential) {
        (wit::Store::S3(s), wit::Credential::Aws(c)) => s.credentials = c,
        (wit::Store::Dynamodb(s), wit::Credential::Aws(c)) => s.credentials = c,
        (wit::Store::AzureBlob(s), wit::Credential::Azure(c)) => s.credential = c,
        (wit::Store::Gcs(s), wit::Credential::Gcs(c)) => s.credential = c,
        (wit::Store::S3(_), _)
        | (wit::Store::Dynamodb(_), _)
        | (wit::Store::AzureBlob(_), _)
        | (wit::Store::Gcs(_), _) => {}
    }
}

pub(crate) fn credential(c: &Credential) -> wit::Credential {
    match c {
        Credential::Aws(c) => wit::Credential::Aws(aws_credentials(c)),
        Credential::Azure(c) => wit::Credential::Azure(azure_credential(c)),
        Credential::Gcs(c) => wit::Credential::Gcs(gcs_credential(c)),
    }
}

fn aws_credentials(c: &Credentials) -> wit::AwsCredentials {
    wit::AwsCredentials {
        access_key_id: c.access_key_id.clone(),
        secret_access_key: c.secret_access_key.clone(),
        session_token: c.session_token.clone(),
    }
}

fn azure_credential(c: &AzureCredential) -> wit::AzureCredential {
    match c {
        AzureCredential::AccountKey(key) => wit::AzureCredential::SharedKey(key.clone()),
        AzureCredential::Sas(sas) => wit::AzureCredential::Sas(sas.clone()),
        AzureCredential::BearerToken(token) => wit::AzureCredential::Bearer(token.clone()),
    }
}

fn gcs_credential(c: &GcsCredential) -> wit::GcsCredential {
    match c {
        GcsCredential::BearerToken(token) => wit::GcsCredential::Bearer(token.clone()),
        GcsCredential::Anonymous => wit::GcsCredential::Anonymous,
    }
}

pub(crate) fn options(o: &AcquireOptions) -> wit::Options {
    wit::Options {
        ttl_ms: o.ttl_ms(),
        holder_id: o.holder_id.clone(),
        metadata: o.metadata.clone(),
    }
}

pub(crate) fn slot_options(o: SlotOptions) -> wit::SlotOptions {
    wit::SlotOptions {
        limit: o.limit,
        fair: o.fair,
    }
}

pub(crate) fn fence_options(o: FenceOptions) -> wit::FenceOptions {
    wit::FenceOptions {
        reject_equal_token: o.reject_equal_token,
    }
}

pub(crate) fn lease(l: &LeaseRecord) -> wit::Lease {
    wit::Lease {
        key: l.key.clone(),
        token: l.token,
        holder_id: l.holder_id.clone(),
        etag: l.etag.clone(),
        expires_at_ms: l.expires_at_ms,
        acquired_at_ms: l.acquired_at_ms,
        ttl_ms: l.ttl_ms(),
        metadata: l.metadata.clone(),
        seal: l.seal.clone(),
    }
}

pub(crate) fn from_lease(l: wit::Lease) -> LeaseRecord {
    LeaseRecord {
        key: l.key,
        token: l.token,
        holder_id: l.holder_id,
        etag: l.etag,
        expires_at_ms: l.expires_at_ms,
        acquired_at_ms: l.acquired_at_ms,
        ttl: Duration::from_millis(l.ttl_ms),
        metadata: l.metadata,
        seal: l.seal,
    }
}

pub(crate) fn from_lock_state(s: wit::LockState) -> LockState {
    LockState {
        key: s.key,
        holder_id: nonempty(s.holder_id),
        token: nonzero(s.token),
        expires_at_ms: s.expires_at_ms,
        acquired_at_ms: nonzero(s.acquired_at_ms),
        metadata: s.metadata,
        etag: s.etag,
        live: s.live,
        expires_in: Duration::from_millis(s.expires_in_ms),
    }
}

fn from_slot(s: wit::Slot) -> SlotEntry {
    SlotEntry {
        holder_id: s.holder_id,
        token: nonzero(s.token),
        expires_at_ms: s.expires_at_ms,
        acquired_at_ms: s.acquired_at_ms,
        metadata: s.metadata,
        live: s.live,
        expires_in: Duration::from_millis(s.expires_in_ms),
    }
}

pub(crate) fn from_semaphore_state(s: wit::SemaphoreState) -> SemaphoreState {
    SemaphoreState {
        lock: from_lock_state(s.lock),
        limit: s.limit,
        holders: s.holders.into_iter().map(from_slot).collect(),
        queue: s.queue.into_iter().map(from_slot).collect(),
    }
}

pub(crate) fn from_fenced_write(w: wit::FencedWrite) -> FencedWrite {
    FencedWrite {
        object_key: w.object_key,
        etag: w.etag,
        token: w.token,
        previous_token: w.previous_token,
    }
}

pub(crate) fn from_fenced_object(o: wit::FencedObject) -> FencedObject {
    FencedObject {
        object_key: o.object_key,
        body: o.body,
        etag: o.etag,
        content_type: o.content_type,
        token: nonzero(o.token),
    }
}

pub(crate) fn elector_config(c: &ElectorConfig) -> wit::ElectorConfig {
    wit::ElectorConfig {
        key: c.key.clone(),
        lease_duration_ms: millis(c.lease_duration),
        renew_deadline_ms: millis(c.renew_deadline),
        retry_period_ms: millis(c.retry_period),
        holder_id: c.holder_id.clone(),
        metadata: c.metadata.clone(),
    }
}

/// The machine that judges leadership (`s3_lease_keep::leadership`)
/// takes a step of the component's elector as it is: its role and events,
/// converted once, here, into the machine's types over the crate's lease
/// record and lock state. What it reports becomes the public [`Role`] and
/// [`ElectionEvent`] by the `From` impls beside those types.
pub(crate) fn step(step: wit::StepResult) -> Step<LeaseRecord, LockState> {
    Step {
        role: match step.role {
            wit::Role::Leader(l) => leadership::Role::Leader(from_lease(l)),
            wit::Role::Follower(seen) => leadership::Role::Follower(seen.map(from_lock_state)),
            wit::Role::Candidate => leadership::Role::Candidate,
        },
        events: step.events.into_iter().map(elector_event).collect(),
        leading_until_ms: step.leading_until_ms,
        next_step_in_ms: step.next_step_in_ms,
    }
}

fn elector_event(event: wit::ElectorEvent) -> leadership::Event<LeaseRecord, LockState> {
    match event {
        wit::ElectorEvent::BecameLeader(lease) => {
            leadership::Event::BecameLeader(from_lease(lease))
        }
        wit::ElectorEvent::StoppedLeading(reason) => {
            leadership::Event::StoppedLeading(reason.into())
        }
        wit::ElectorEvent::LeaderChanged(seen) => {
            leadership::Event::LeaderChanged(seen.map(from_lock_state))
        }
    }
}

fn from_capability_result(r: wit::CapabilityResult) -> CapabilityResult {
    CapabilityResult {
        capability: r.capability.into(),
        verdict: r.verdict.into(),
        status: r.status,
        code: r.code,
        detail: r.detail,
        silent: r.silent,
    }
}

pub(crate) fn from_preflight_report(r: wit::PreflightReport) -> PreflightReport {
    PreflightReport {
        results: r.results.into_iter().map(from_capability_result).collect(),
        clock_offset: r.clock_offset.map(|c| ClockOffset {
            offset_ms: c.offset_ms,
            uncertainty_ms: c.uncertainty_ms,
        }),
        safe_strategies: r.safe_strategies.into_iter().map(Into::into).collect(),
        safe_expiry_clocks: r.safe_expiry_clocks.into_iter().map(Into::into).collect(),
        recommended_strategy: r.recommended_strategy.map(Into::into),
        config_safe: r.config_safe,
        notes: r.notes,
        requests: r.requests,
    }
}

fn reply(e: witt::S3Error) -> Detail {
    Detail::Reply(Reply {
        status: e.status,
        code: e.code,
        message: e.message,
        request_id: e.request_id,
    })
}

/// The component's error as ours, naming the store in use.
pub(crate) fn from_error(e: wit::Error, store: &std::sync::Arc<crate::error::ErrorStore>) -> Error {
    let (kind, detail) = match e {
        wit::Error::Lost(l) => (
            ErrorKind::Lost,
            Detail::Lost {
                key: l.key,
                token: l.token,
                current: l.current.map(from_lock_state),
            },
        ),
        wit::Error::Conflict(e) => (ErrorKind::Conflict, reply(e)),
        wit::Error::ClockSkewed(e) => (ErrorKind::ClockSkewed, reply(e)),
        wit::Error::AccessDenied(e) => (ErrorKind::AccessDenied, reply(e)),
        wit::Error::NoSuchBucket(e) => (ErrorKind::NoSuchStore, reply(e)),
        wit::Error::CorruptLockObject(c) => (
            ErrorKind::CorruptLockObject,
            Detail::Corrupt {
                object_key: c.object_key,
                reason: c.reason,
            },
        ),
        wit::Error::S3(e) => (ErrorKind::Store, reply(e)),
        wit::Error::Transport(m) => (ErrorKind::Transport, Detail::Message(m)),
        wit::Error::InvalidConfig(c) => (
            ErrorKind::InvalidConfig,
            Detail::Config {
                field: c.field,
                reason: c.reason,
            },
        ),
        wit::Error::InvalidArgument(m) => (ErrorKind::InvalidArgument, Detail::Message(m)),
        wit::Error::Timeout(t) => (
            ErrorKind::Timeout,
            Detail::Timeout {
                key: t.key,
                waited: Duration::from_millis(t.waited_ms),
                holder: t.holder.map(from_lock_state),
            },
        ),
        wit::Error::Fenced(x) => (
            ErrorKind::Fenced,
            Detail::Fenced {
                object_key: x.object_key,
                stored_token: x.stored_token,
                our_token: x.our_token,
            },
        ),
        wit::Error::StoreUnsafe(r) => (
            ErrorKind::StoreUnsafe,
            Detail::Unsafe(Box::new(from_capability_result(r))),
        ),
        wit::Error::LimitMismatch(m) => (
            ErrorKind::LimitMismatch,
            Detail::Limit {
                key: m.key,
                stored: m.stored,
                requested: m.requested,
            },
        ),
    };
    Error::new(kind, Some(store.clone()), detail)
}

/// A `Timeout` error for a wait of the host's own.
pub(crate) fn timeout(key: &str, waited: Duration, holder: Option<LockState>) -> Error {
    Error::new(
        ErrorKind::Timeout,
        None,
        Detail::Timeout {
            key: key.to_string(),
            waited,
            holder,
        },
    )
}

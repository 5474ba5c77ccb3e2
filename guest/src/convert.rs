//! The one crossing between this crate's plain types and the generated
//! bindings', both ways: field for field, durations as milliseconds.

use crate::azure::AzureCredential;
use crate::bindings::types as raw;
use crate::config::{Addressing, Config, Credential, Credentials, ExpiryClock, Store, Strategy};
use crate::elector::{ElectorConfig, ElectorEvent, Role, Step, StopReason};
use crate::error::{Error, S3Error};
use crate::gcs::GcsCredential;
use crate::preflight::{CapabilityResult, ClockOffset, PreflightReport, Verdict};
use crate::slots::{SemaphoreState, Slot, SlotOptions};
use crate::types::{millis, FenceOptions, FencedObject, FencedWrite, Lease, LockState, Options};
use s3_lease_keep::vocabulary::Capability;
use std::time::Duration;

s3_lease_keep::same_cases! {
    Strategy = raw::Strategy { SingleObject, EpochObjects }
    ExpiryClock = raw::ExpiryClock { Holder, Server, Observed }
    Addressing = raw::AddressingStyle { Path, VirtualHosted }
    Verdict = raw::Verdict { Pass, Fail, Unknown }
    StopReason = raw::StopReason { RenewDeadline, Lost, Resigned }
    Capability = raw::Capability {
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

pub(crate) fn config(c: &Config) -> raw::Config {
    raw::Config {
        store: store(&c.store),
        key_prefix: c.key_prefix.clone(),
        // Out of u32's range is out of the component's too: saturate, and
        // let it refuse the field by name.
        request_timeout_ms: c
            .request_timeout
            .map(|d| u32::try_from(millis(d)).unwrap_or(u32::MAX)),
        strategy: c.strategy.map(Into::into),
        expiry_clock: c.expiry_clock.map(Into::into),
        preflight: c.preflight,
        seal_key: c.seal_key.clone(),
        audit: c.audit,
    }
}

fn store(s: &Store) -> raw::Store {
    match s {
        Store::S3 {
            endpoint,
            region,
            bucket,
            addressing,
            credentials: keys,
        } => raw::Store::S3(raw::S3Store {
            endpoint: endpoint.clone(),
            region: region.clone(),
            bucket: bucket.clone(),
            addressing: (*addressing).into(),
            credentials: credentials(keys),
        }),
        Store::DynamoDb {
            endpoint,
            region,
            table,
            credentials: keys,
        } => raw::Store::Dynamodb(raw::DynamodbStore {
            endpoint: endpoint.clone(),
            region: region.clone(),
            table: table.clone(),
            credentials: credentials(keys),
        }),
        Store::AzureBlob {
            endpoint,
            addressing,
            account,
            container,
            credential,
        } => raw::Store::AzureBlob(raw::AzureStore {
            endpoint: endpoint.clone(),
            addressing: (*addressing).into(),
            account: account.clone(),
            container: container.clone(),
            credential: azure_credential(credential),
        }),
        Store::Gcs {
            endpoint,
            bucket,
            credential,
        } => raw::Store::Gcs(raw::GcsStore {
            endpoint: endpoint.clone(),
            bucket: bucket.clone(),
            credential: gcs_credential(credential),
        }),
    }
}

pub(crate) fn credential(c: &Credential) -> raw::Credential {
    match c {
        Credential::Aws(c) => raw::Credential::Aws(credentials(c)),
        Credential::Azure(c) => raw::Credential::Azure(azure_credential(c)),
        Credential::Gcs(c) => raw::Credential::Gcs(gcs_credential(c)),
    }
}

pub(crate) fn options(o: &Options) -> raw::Options {
    raw::Options {
        ttl_ms: millis(o.ttl),
        holder_id: o.holder_id.clone(),
        metadata: o.metadata.clone(),
    }
}

fn credentials(c: &Credentials) -> raw::AwsCredentials {
    raw::AwsCredentials {
        access_key_id: c.access_key_id.clone(),
        secret_access_key: c.secret_access_key.clone(),
        session_token: c.session_token.clone(),
    }
}

fn gcs_credential(c: &GcsCredential) -> raw::GcsCredential {
    match c {
        GcsCredential::BearerToken(token) => raw::GcsCredential::Bearer(token.clone()),
        GcsCredential::Anonymous => raw::GcsCredential::Anonymous,
    }
}

fn azure_credential(c: &AzureCredential) -> raw::AzureCredential {
    match c {
        AzureCredential::AccountKey(key) => raw::AzureCredential::SharedKey(key.clone()),
        AzureCredential::Sas(sas) => raw::AzureCredential::Sas(sas.clone()),
        AzureCredential::BearerToken(token) => raw::AzureCredential::Bearer(token.clone()),
    }
}

pub(crate) fn fence_options(o: &FenceOptions) -> raw::FenceOptions {
    raw::FenceOptions {
        reject_equal_token: o.reject_equal_token,
    }
}

pub(crate) fn slot_options(o: &SlotOptions) -> raw::SlotOptions {
    raw::SlotOptions {
        limit: o.limit,
        fair: o.fair,
    }
}

pub(crate) fn elector_config(c: &ElectorConfig) -> raw::ElectorConfig {
    raw::ElectorConfig {
        key: c.key.clone(),
        lease_duration_ms: millis(c.lease_duration),
        renew_deadline_ms: millis(c.renew_deadline),
        retry_period_ms: millis(c.retry_period),
        holder_id: c.holder_id.clone(),
        metadata: c.metadata.clone(),
    }
}

pub(crate) fn step(s: raw::StepResult) -> Step {
    Step {
        role: match s.role {
            raw::Role::Leader(l) => Role::Leader(lease(l)),
            raw::Role::Follower(state) => Role::Follower(state.map(lock_state)),
            raw::Role::Candidate => Role::Candidate,
        },
        events: s.events.into_iter().map(elector_event).collect(),
        next_step_in: Duration::from_millis(s.next_step_in_ms),
        leading_until: s.leading_until_ms.map(Duration::from_millis),
        last_error: s.last_error.map(error),
    }
}

fn elector_event(e: raw::ElectorEvent) -> ElectorEvent {
    match e {
        raw::ElectorEvent::BecameLeader(l) => ElectorEvent::BecameLeader(lease(l)),
        raw::ElectorEvent::StoppedLeading(why) => ElectorEvent::StoppedLeading(why.into()),
        raw::ElectorEvent::LeaderChanged(state) => {
            ElectorEvent::LeaderChanged(state.map(lock_state))
        }
    }
}

pub(crate) fn semaphore_state(s: raw::SemaphoreState) -> SemaphoreState {
    SemaphoreState {
        lock: lock_state(s.lock),
        limit: s.limit,
        holders: s.holders.into_iter().map(slot).collect(),
        queue: s.queue.into_iter().map(slot).collect(),
    }
}

fn slot(s: raw::Slot) -> Slot {
    Slot {
        holder_id: s.holder_id,
        token: s.token,
        expires_at_ms: s.expires_at_ms,
        acquired_at_ms: s.acquired_at_ms,
        metadata: s.metadata,
        live: s.live,
        expires_in: Duration::from_millis(s.expires_in_ms),
    }
}

pub(crate) fn preflight_report(r: raw::PreflightReport) -> PreflightReport {
    PreflightReport {
        results: r.results.into_iter().map(capability_result).collect(),
        clock_offset: r.clock_offset.map(|o| ClockOffset {
            offset_ms: o.offset_ms,
            uncertainty: Duration::from_millis(o.uncertainty_ms),
        }),
        safe_strategies: r.safe_strategies.into_iter().map(Into::into).collect(),
        safe_expiry_clocks: r.safe_expiry_clocks.into_iter().map(Into::into).collect(),
        recommended_strategy: r.recommended_strategy.map(Into::into),
        config_safe: r.config_safe,
        notes: r.notes,
        requests: r.requests,
    }
}

fn capability_result(c: raw::CapabilityResult) -> CapabilityResult {
    CapabilityResult {
        capability: capability_name(c.capability).to_string(),
        verdict: c.verdict.into(),
        status: c.status,
        code: c.code,
        detail: c.detail,
        silent: c.silent,
    }
}

pub(crate) fn lease(l: raw::Lease) -> Lease {
    Lease {
        key: l.key,
        token: l.token,
        holder_id: l.holder_id,
        etag: l.etag,
        expires_at_ms: l.expires_at_ms,
        acquired_at_ms: l.acquired_at_ms,
        ttl_ms: l.ttl_ms,
        metadata: l.metadata,
        seal: l.seal,
    }
}

pub(crate) fn raw_lease(l: &Lease) -> raw::Lease {
    raw::Lease {
        key: l.key.clone(),
        token: l.token,
        holder_id: l.holder_id.clone(),
        etag: l.etag.clone(),
        expires_at_ms: l.expires_at_ms,
        acquired_at_ms: l.acquired_at_ms,
        ttl_ms: l.ttl_ms,
        metadata: l.metadata.clone(),
        seal: l.seal.clone(),
    }
}

pub(crate) fn lock_state(s: raw::LockState) -> LockState {
    LockState {
        key: s.key,
        holder_id: s.holder_id,
        token: s.token,
        expires_at_ms: s.expires_at_ms,
        acquired_at_ms: s.acquired_at_ms,
        metadata: s.metadata,
        etag: s.etag,
        live: s.live,
        expires_in: Duration::from_millis(s.expires_in_ms),
    }
}

pub(crate) fn fenced_object(o: raw::FencedObject) -> FencedObject {
    FencedObject {
        object_key: o.object_key,
        body: o.body,
        content_type: o.content_type,
        etag: o.etag,
        token: o.token,
    }
}

pub(crate) fn fenced_write(w: raw::FencedWrite) -> FencedWrite {
    FencedWrite {
        object_key: w.object_key,
        etag: w.etag,
        token: w.token,
        previous_token: w.previous_token,
    }
}

fn s3_error(e: raw::S3Error) -> S3Error {
    S3Error {
        status: e.status,
        code: e.code,
        message: e.message,
        request_id: e.request_id,
    }
}

pub(crate) fn error(e: raw::Error) -> Error {
    match e {
        raw::Error::Lost(l) => Error::Lost {
            key: l.key,
            token: l.token,
            current: l.current.map(|s| Box::new(lock_state(s))),
        },
        raw::Error::Conflict(e) => Error::Conflict(s3_error(e)),
        raw::Error::ClockSkewed(e) => Error::ClockSkewed(s3_error(e)),
        raw::Error::AccessDenied(e) => Error::AccessDenied(s3_error(e)),
        raw::Error::NoSuchBucket(e) => Error::NoSuchBucket(s3_error(e)),
        raw::Error::CorruptLockObject(c) => Error::CorruptLockObject {
            object_key: c.object_key,
            reason: c.reason,
        },
        raw::Error::S3(e) => Error::S3(s3_error(e)),
        raw::Error::Transport(why) => Error::Transport(why),
        raw::Error::InvalidConfig(c) => Error::InvalidConfig {
            field: c.field,
            reason: c.reason,
        },
        raw::Error::InvalidArgument(why) => Error::InvalidArgument(why),
        raw::Error::Timeout(t) => Error::Timeout {
            key: t.key,
            waited: Duration::from_millis(t.waited_ms),
            holder: t.holder.map(|s| Box::new(lock_state(s))),
        },
        raw::Error::Fenced(f) => Error::Fenced {
            object_key: f.object_key,
            our_token: f.our_token,
            stored_token: f.stored_token,
        },
        raw::Error::StoreUnsafe(c) => Error::StoreUnsafe {
            capability: capability_name(c.capability).to_string(),
            detail: c.detail,
        },
        raw::Error::LimitMismatch(m) => Error::LimitMismatch {
            key: m.key,
            stored: m.stored,
            requested: m.requested,
        },
    }
}

/// A capability as the WIT names it.
fn capability_name(c: raw::Capability) -> &'static str {
    Capability::from(c).name()
}

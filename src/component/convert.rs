//! Between the generated WIT types and the crate's own: the contract's
//! names (`s3_lease_keep::vocabulary`) case for case by `same_cases!`, the
//! records field by field.

use crate::prelude::*;

use crate::bindings::exports::s3_lease::lease::types as wit;
use crate::config::{Addressing, Credential, RawConfig, SealKey, Store, Strategy};
use crate::elector::{Event, Role, StopReason};
use crate::error::{Error, S3Error};
use crate::expiry::ExpiryClock;
use crate::lease::{Grant, Lease};
use crate::lock_object::semaphore::{Entry, Judged};
use crate::lock_object::LockState;
use crate::preflight::{Capability, CapabilityResult, Report, Verdict};
use crate::sigv4::Credentials;
use crate::stores::{
    AzureBlob, AzureCredential, DynamoDbTable, GcsBucket, GcsCredential, S3Bucket,
};
use crate::transport::random_hex_id;

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

/// The WIT config as the core's, its credentials checked as the core
/// checks them (the rest by `ClientConfig::validate`).
pub(super) fn raw_config(config: wit::Config) -> Result<RawConfig, Error> {
    Ok(RawConfig {
        store: store(config.store)?,
        key_prefix: config.key_prefix,
        request_timeout_ms: config.request_timeout_ms,
        strategy: config.strategy.map(Into::into),
        expiry_clock: config.expiry_clock.map(Into::into),
        preflight: config.preflight,
        seal_key: config.seal_key.map(SealKey::new),
        audit: config.audit,
    })
}

fn store(store: wit::Store) -> Result<Store, Error> {
    Ok(match store {
        wit::Store::S3(s) => Store::S3(S3Bucket {
            endpoint: s.endpoint,
            region: s.region,
            bucket: s.bucket,
            addressing: s.addressing.into(),
            credentials: aws(s.credentials),
        }),
        wit::Store::Dynamodb(s) => Store::DynamoDb(DynamoDbTable {
            endpoint: s.endpoint,
            region: s.region,
            table: s.table,
            credentials: aws(s.credentials),
        }),
        wit::Store::AzureBlob(s) => Store::AzureBlob(AzureBlob {
            endpoint: s.endpoint,
            addressing: s.addressing.into(),
            account: s.account,
            container: s.container,
            credential: azure_credential(s.credential)?,
        }),
        wit::Store::Gcs(s) => Store::Gcs(GcsBucket {
            endpoint: s.endpoint,
            bucket: s.bucket,
            credential: gcs_credential(s.credential)?,
        }),
    })
}

pub(super) fn from_wit_credential(credential: wit::Credential) -> Result<Credential, Error> {
    Ok(match credential {
        wit::Credential::Aws(c) => Credential::Aws(aws(c)),
        wit::Credential::Azure(c) => Credential::Azure(azure_credential(c)?),
        wit::Credential::Gcs(c) => Credential::Gcs(gcs_credential(c)?),
    })
}

fn aws(c: wit::AwsCredentials) -> Credentials {
    Credentials {
        access_key_id: c.access_key_id,
        secret_access_key: c.secret_access_key,
        session_token: c.session_token,
    }
}

/// An Azure credential from the WIT's, checked as the config checks it.
fn azure_credential(credential: wit::AzureCredential) -> Result<AzureCredential, Error> {
    match credential {
        wit::AzureCredential::SharedKey(key) => AzureCredential::shared_key(&key),
        wit::AzureCredential::Sas(token) => AzureCredential::sas(&token),
        wit::AzureCredential::Bearer(token) => AzureCredential::bearer(&token),
    }
}

/// A GCS credential from the WIT's, checked as the config checks it.
fn gcs_credential(credential: wit::GcsCredential) -> Result<GcsCredential, Error> {
    match credential {
        wit::GcsCredential::Bearer(token) => GcsCredential::bearer(&token),
        wit::GcsCredential::Anonymous => Ok(GcsCredential::Anonymous),
    }
}

pub(super) fn to_wit_role(role: Role) -> wit::Role {
    match role {
        Role::Leader(lease) => wit::Role::Leader(to_wit_lease(lease)),
        Role::Follower(state) => wit::Role::Follower(state.map(to_wit_state)),
        Role::Candidate => wit::Role::Candidate,
    }
}

pub(super) fn to_wit_event(event: Event) -> wit::ElectorEvent {
    match event {
        Event::BecameLeader(lease) => wit::ElectorEvent::BecameLeader(to_wit_lease(lease)),
        Event::StoppedLeading(reason) => wit::ElectorEvent::StoppedLeading(reason.into()),
        Event::LeaderChanged(state) => wit::ElectorEvent::LeaderChanged(state.map(to_wit_state)),
    }
}

pub(super) fn grant(options: wit::Options) -> Result<Grant, Error> {
    let holder_id = options
        .holder_id
        .unwrap_or_else(|| format!("holder-{}", random_hex_id()));
    Grant::new(
        options.ttl_ms,
        holder_id,
        options.metadata.unwrap_or_default(),
    )
}

pub(super) fn to_wit_lease(l: Lease) -> wit::Lease {
    wit::Lease {
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

pub(super) fn from_wit_lease(l: wit::Lease) -> Lease {
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

pub(super) fn to_wit_state(s: LockState) -> wit::LockState {
    wit::LockState {
        key: s.key,
        holder_id: s.record.holder_id,
        token: s.record.token,
        expires_at_ms: s.record.expires_at_ms,
        acquired_at_ms: s.record.acquired_at_ms,
        metadata: s.record.metadata,
        etag: s.etag,
        live: s.live,
        expires_in_ms: s.expires_in_ms,
    }
}

pub(super) fn to_wit_semaphore(mut s: LockState) -> Option<wit::SemaphoreState> {
    let sem = *s.semaphore.take()?;
    let slots = |entries: Vec<Entry>, judged: &[Judged]| -> Vec<wit::Slot> {
        entries
            .into_iter()
            .zip(judged)
            .map(|(e, j)| wit::Slot {
                holder_id: e.holder_id,
                token: e.token,
                expires_at_ms: e.expires_at_ms,
                acquired_at_ms: e.acquired_at_ms,
                metadata: e.metadata,
                live: j.live,
                expires_in_ms: j.expires_in_ms,
            })
            .collect()
    };
    Some(wit::SemaphoreState {
        lock: to_wit_state(s),
        limit: sem.record.limit,
        holders: slots(sem.record.holders, &sem.holders),
        queue: slots(sem.record.queue, &sem.queue),
    })
}

pub(super) fn to_wit_result(r: CapabilityResult) -> wit::CapabilityResult {
    wit::CapabilityResult {
        capability: r.capability.into(),
        verdict: r.verdict.into(),
        status: r.status,
        code: r.code,
        detail: r.detail,
        silent: r.silent,
    }
}

pub(super) fn to_wit_report(r: Report) -> wit::PreflightReport {
    wit::PreflightReport {
        results: r.results.into_iter().map(to_wit_result).collect(),
        clock_offset: r.clock_offset.map(|o| wit::ClockOffset {
            offset_ms: o.offset_ms,
            uncertainty_ms: o.uncertainty_ms,
        }),
        safe_strategies: r.safe_strategies.into_iter().map(Into::into).collect(),
        safe_expiry_clocks: r.safe_expiry_clocks.into_iter().map(Into::into).collect(),
        recommended_strategy: r.recommended_strategy.map(Into::into),
        config_safe: r.config_safe,
        notes: r.notes,
        requests: r.requests,
    }
}

pub(super) fn to_wit_s3(e: S3Error) -> wit::S3Error {
    wit::S3Error {
        status: e.status,
        code: e.code,
        message: e.message,
        request_id: e.request_id,
    }
}

pub(super) fn to_wit_error(e: Error) -> wit::Error {
    match e {
        Error::Lost {
            key,
            token,
            current,
        } => wit::Error::Lost(wit::Lost {
            key,
            token,
            current: current.map(|c| to_wit_state(*c)),
        }),
        Error::Conflict(e) => wit::Error::Conflict(to_wit_s3(e)),
        Error::ClockSkewed(e) => wit::Error::ClockSkewed(to_wit_s3(e)),
        Error::AccessDenied(e) => wit::Error::AccessDenied(to_wit_s3(e)),
        Error::NoSuchBucket(e) => wit::Error::NoSuchBucket(to_wit_s3(e)),
        Error::CorruptLockObject { object_key, reason } => {
            wit::Error::CorruptLockObject(wit::CorruptLockObject { object_key, reason })
        }
        Error::S3(e) => wit::Error::S3(to_wit_s3(e)),
        Error::Transport(reason) => wit::Error::Transport(reason),
        Error::InvalidConfig { field, reason } => {
            wit::Error::InvalidConfig(wit::InvalidConfig { field, reason })
        }
        Error::InvalidArgument(reason) => wit::Error::InvalidArgument(reason),
        Error::Timeout {
            key,
            waited_ms,
            holder,
        } => wit::Error::Timeout(wit::Timeout {
            key,
            waited_ms,
            holder: holder.map(|h| to_wit_state(*h)),
        }),
        Error::Fenced {
            object_key,
            our_token,
            stored_token,
        } => wit::Error::Fenced(wit::Fenced {
            object_key,
            our_token,
            stored_token,
        }),
        Error::StoreUnsafe(r) => wit::Error::StoreUnsafe(to_wit_result(*r)),
        Error::LimitMismatch {
            key,
            stored,
            requested,
        } => wit::Error::LimitMismatch(wit::LimitMismatch {
            key,
            stored,
            requested,
        }),
    }
}

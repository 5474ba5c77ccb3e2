//! Between the generated WIT types and the crate's own: the contract's
//! names (`s3_lease_keep::vocabulary`) case for case by `same_cases!`, the
//! records field by field.

use crate::prelude::*;

use crate::bindings::exports::s3_lease::lease::types as wit;
use crate::config::{Credential, RawConfig, SealKey, Store};
use crate::elector::{Event, Role};
use crate::error::{Error, S3Error};
use crate::fenced::{FencedObject, Written};
use crate::lease::{Grant, Lease};
use crate::lock_object::semaphore::{Entry, Judged};
use crate::lock_object::LockState;
use crate::preflight::ClockOffset;
use crate::preflight::{CapabilityResult, Report};
use crate::sigv4::Credentials;
use crate::stores::{
    AzureBlob, AzureCredential, DynamoDbTable, GcsBucket, GcsCredential, S3Bucket,
};
use crate::transport::random_hex_id;
pub(super) use s3_lease_keep::twins::{FromTwin, IntoTwin};

s3_lease_keep::same_vocabulary!(wit);

// The records, field by field: what travels as it is, then what is made
// otherwise (the lock object's record, and a semaphore's judged entries).
s3_lease_keep::same_fields! {
    |c: wit::AwsCredentials| -> Credentials { access_key_id, secret_access_key, session_token }
    |l: Lease| -> wit::Lease { key, token, holder_id, etag, expires_at_ms, acquired_at_ms, ttl_ms, metadata, seal }
    |l: wit::Lease| -> Lease { key, token, holder_id, etag, expires_at_ms, acquired_at_ms, ttl_ms, metadata, seal }
    |s: LockState| -> wit::LockState { key, etag, live, expires_in_ms;
        holder_id: s.record.holder_id,
        token: s.record.token,
        expires_at_ms: s.record.expires_at_ms,
        acquired_at_ms: s.record.acquired_at_ms,
        metadata: s.record.metadata }
    |r: CapabilityResult| -> wit::CapabilityResult { capability, verdict, status, code, detail, silent }
    |o: ClockOffset| -> wit::ClockOffset { offset_ms, uncertainty_ms }
    |r: Report| -> wit::PreflightReport { results, clock_offset, safe_strategies,
        safe_expiry_clocks, recommended_strategy, config_safe, notes, requests }
    |e: S3Error| -> wit::S3Error { status, code, message, request_id }
    |w: Written| -> wit::FencedWrite { object_key, etag, token, previous_token }
    |o: FencedObject| -> wit::FencedObject { object_key, body, content_type, etag, token }
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
            credentials: s.credentials.into_twin(),
        }),
        wit::Store::Dynamodb(s) => Store::DynamoDb(DynamoDbTable {
            endpoint: s.endpoint,
            region: s.region,
            table: s.table,
            credentials: s.credentials.into_twin(),
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
        wit::Credential::Aws(c) => Credential::Aws(c.into_twin()),
        wit::Credential::Azure(c) => Credential::Azure(azure_credential(c)?),
        wit::Credential::Gcs(c) => Credential::Gcs(gcs_credential(c)?),
    })
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
        Role::Leader(lease) => wit::Role::Leader(lease.into_twin()),
        Role::Follower(state) => wit::Role::Follower(state.into_twin()),
        Role::Candidate => wit::Role::Candidate,
    }
}

pub(super) fn to_wit_event(event: Event) -> wit::ElectorEvent {
    match event {
        Event::BecameLeader(lease) => wit::ElectorEvent::BecameLeader(lease.into_twin()),
        Event::StoppedLeading(reason) => wit::ElectorEvent::StoppedLeading(reason.into()),
        Event::LeaderChanged(state) => wit::ElectorEvent::LeaderChanged(state.into_twin()),
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
        lock: s.into_twin(),
        limit: sem.record.limit,
        holders: slots(sem.record.holders, &sem.holders),
        queue: slots(sem.record.queue, &sem.queue),
    })
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
            current: current.map(|c| (*c).into_twin()),
        }),
        Error::Conflict(e) => wit::Error::Conflict(e.into_twin()),
        Error::ClockSkewed(e) => wit::Error::ClockSkewed(e.into_twin()),
        Error::AccessDenied(e) => wit::Error::AccessDenied(e.into_twin()),
        Error::NoSuchBucket(e) => wit::Error::NoSuchBucket(e.into_twin()),
        Error::CorruptLockObject { object_key, reason } => {
            wit::Error::CorruptLockObject(wit::CorruptLockObject { object_key, reason })
        }
        Error::S3(e) => wit::Error::S3(e.into_twin()),
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
            holder: holder.map(|h| (*h).into_twin()),
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
        Error::StoreUnsafe(r) => wit::Error::StoreUnsafe((*r).into_twin()),
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

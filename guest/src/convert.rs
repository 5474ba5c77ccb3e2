//! The one crossing between this crate's plain types and the generated
//! bindings', both ways: field for field, durations as milliseconds.

use crate::bindings::types as raw;
use crate::config::{Config, Credentials};
use crate::elector::{ElectorConfig, ElectorEvent, Role, Step};
use crate::error::{Error, S3Error};
use crate::preflight::{CapabilityResult, ClockOffset, PreflightReport};
use crate::slots::{SemaphoreState, Slot, SlotOptions};
use crate::types::{millis, FenceOptions, FencedObject, FencedWrite, Lease, LockState, Options};
use s3_lease_keep::twins::{FromTwin, IntoTwin};
use s3_lease_keep::vocabulary::Capability;
use std::time::Duration;

s3_lease_keep::same_vocabulary!(raw);

// The records, field by field: what travels as it is, then what changes
// on the way (durations, and a capability by its name).
s3_lease_keep::same_fields! {
    |c: Credentials| -> raw::AwsCredentials { access_key_id, secret_access_key, session_token }
    |o: Options| -> raw::Options { holder_id, metadata; ttl_ms: millis(o.ttl) }
    |o: FenceOptions| -> raw::FenceOptions { reject_equal_token }
    |o: SlotOptions| -> raw::SlotOptions { limit, fair }
    |c: ElectorConfig| -> raw::ElectorConfig { key, holder_id, metadata;
        lease_duration_ms: millis(c.lease_duration),
        renew_deadline_ms: millis(c.renew_deadline),
        retry_period_ms: millis(c.retry_period) }
    |l: Lease| -> raw::Lease { key, token, holder_id, etag, expires_at_ms, acquired_at_ms, ttl_ms, metadata, seal }
    |l: raw::Lease| -> Lease { key, token, holder_id, etag, expires_at_ms, acquired_at_ms, ttl_ms, metadata, seal }
    |s: raw::LockState| -> LockState { key, holder_id, token, expires_at_ms, acquired_at_ms, metadata, etag, live;
        expires_in: Duration::from_millis(s.expires_in_ms) }
    |s: raw::Slot| -> Slot { holder_id, token, expires_at_ms, acquired_at_ms, metadata, live;
        expires_in: Duration::from_millis(s.expires_in_ms) }
    |s: raw::SemaphoreState| -> SemaphoreState { lock, limit, holders, queue }
    |o: raw::FencedObject| -> FencedObject { object_key, body, content_type, etag, token }
    |w: raw::FencedWrite| -> FencedWrite { object_key, etag, token, previous_token }
    |c: raw::CapabilityResult| -> CapabilityResult { verdict, status, code, detail, silent;
        capability: capability_name(c.capability).to_string() }
    |o: raw::ClockOffset| -> ClockOffset { offset_ms; uncertainty: Duration::from_millis(o.uncertainty_ms) }
    |r: raw::PreflightReport| -> PreflightReport { results, clock_offset, safe_strategies,
        safe_expiry_clocks, recommended_strategy, config_safe, notes, requests }
    |e: raw::S3Error| -> S3Error { status, code, message, request_id }
}

/// Ours as the bindings' (or the other way), from a borrow.
pub(crate) fn twin<T: Clone, U: FromTwin<T>>(value: &T) -> U {
    U::from_twin(value.clone())
}

pub(crate) fn config(c: &Config) -> raw::Config {
    raw::Config {
        store: c.store.to_contract(),
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

pub(crate) fn step(s: raw::StepResult) -> Step {
    Step {
        role: match s.role {
            raw::Role::Leader(l) => Role::Leader(l.into_twin()),
            raw::Role::Follower(state) => Role::Follower(state.into_twin()),
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
        raw::ElectorEvent::BecameLeader(l) => ElectorEvent::BecameLeader(l.into_twin()),
        raw::ElectorEvent::StoppedLeading(why) => ElectorEvent::StoppedLeading(why.into()),
        raw::ElectorEvent::LeaderChanged(state) => ElectorEvent::LeaderChanged(state.into_twin()),
    }
}

pub(crate) fn error(e: raw::Error) -> Error {
    match e {
        raw::Error::Lost(l) => Error::Lost {
            key: l.key,
            token: l.token,
            current: l.current.into_twin(),
        },
        raw::Error::Conflict(e) => Error::Conflict(e.into_twin()),
        raw::Error::ClockSkewed(e) => Error::ClockSkewed(e.into_twin()),
        raw::Error::AccessDenied(e) => Error::AccessDenied(e.into_twin()),
        raw::Error::NoSuchBucket(e) => Error::NoSuchBucket(e.into_twin()),
        raw::Error::CorruptLockObject(c) => Error::CorruptLockObject {
            object_key: c.object_key,
            reason: c.reason,
        },
        raw::Error::S3(e) => Error::S3(e.into_twin()),
        raw::Error::Transport(why) => Error::Transport(why),
        raw::Error::InvalidConfig(c) => Error::InvalidConfig {
            field: c.field,
            reason: c.reason,
        },
        raw::Error::InvalidArgument(why) => Error::InvalidArgument(why),
        raw::Error::Timeout(t) => Error::Timeout {
            key: t.key,
            waited: Duration::from_millis(t.waited_ms),
            holder: t.holder.into_twin(),
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

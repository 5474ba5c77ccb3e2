//! The one crossing between this crate's plain types and the generated
//! bindings', both ways: field for field, durations as milliseconds.

use crate::bindings::types as raw;
use crate::config::{Addressing, Config, ExpiryClock, Store, Strategy};
use crate::error::{Error, S3Error};
use crate::types::{millis, FencedObject, FencedWrite, Lease, LockState, Options};
use std::time::Duration;

pub(crate) fn config(c: &Config) -> raw::Config {
    raw::Config {
        endpoint: c.endpoint.clone(),
        region: c.region.clone(),
        bucket: c.bucket.clone(),
        addressing: match c.addressing {
            Addressing::Path => raw::AddressingStyle::Path,
            Addressing::VirtualHosted => raw::AddressingStyle::VirtualHosted,
        },
        credentials: raw::Credentials {
            access_key_id: c.credentials.access_key_id.clone(),
            secret_access_key: c.credentials.secret_access_key.clone(),
            session_token: c.credentials.session_token.clone(),
        },
        key_prefix: c.key_prefix.clone(),
        // Out of u32's range is out of the component's too: saturate, and
        // let it refuse the field by name.
        request_timeout_ms: c
            .request_timeout
            .map(|d| u32::try_from(millis(d)).unwrap_or(u32::MAX)),
        strategy: c.strategy.map(|s| match s {
            Strategy::SingleObject => raw::Strategy::SingleObject,
            Strategy::EpochObjects => raw::Strategy::EpochObjects,
        }),
        expiry_clock: c.expiry_clock.map(|e| match e {
            ExpiryClock::Holder => raw::ExpiryClock::Holder,
            ExpiryClock::Server => raw::ExpiryClock::Server,
            ExpiryClock::Observed => raw::ExpiryClock::Observed,
        }),
        preflight: c.preflight,
        seal_key: c.seal_key.clone(),
        store: c.store.as_ref().map(|s| match s {
            Store::S3 => raw::Store::S3,
            Store::DynamoDb { table } => raw::Store::Dynamodb(table.clone()),
        }),
    }
}

pub(crate) fn options(o: &Options) -> raw::Options {
    raw::Options {
        ttl_ms: millis(o.ttl),
        holder_id: o.holder_id.clone(),
        metadata: o.metadata.clone(),
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
    use raw::Capability as C;
    match c {
        C::IfNoneMatchExisting => "if-none-match-existing",
        C::IfMatchPut => "if-match-put",
        C::IfMatchMissingKey => "if-match-missing-key",
        C::IfMatchDelete => "if-match-delete",
        C::ServerDates => "server-dates",
        C::ListStartAfter => "list-start-after",
        C::ConditionalGet => "conditional-get",
        C::PayloadHash => "payload-hash",
        C::ClockOffset => "clock-offset",
        C::TableKeySchema => "table-key-schema",
        C::TtlAttribute => "ttl-attribute",
        C::ConcurrentCreate => "concurrent-create",
        C::ConcurrentUpdate => "concurrent-update",
    }
}

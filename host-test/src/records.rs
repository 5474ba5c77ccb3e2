//! Between the host crate's [`LeaseRecord`] and the generated bindings'
//! [`Lease`]: for tests that hand a lease from a raw instance to a client
//! of the host API, or back (the soak's unwatched mode does both).

use crate::bindings::Lease;
use s3_lease_host::LeaseRecord;
use std::time::Duration;

/// The record of a lease a raw instance returned.
pub fn record_of(lease: Lease) -> LeaseRecord {
    LeaseRecord::new(lease.key, lease.token, lease.seal)
        .with_holder_id(lease.holder_id)
        .with_etag(lease.etag)
        .with_expires_at_ms(lease.expires_at_ms)
        .with_acquired_at_ms(lease.acquired_at_ms)
        .with_ttl(Duration::from_millis(lease.ttl_ms))
        .with_metadata(lease.metadata)
}

/// The bindings' lease of a record, for a raw instance.
pub fn lease_of(record: &LeaseRecord) -> Lease {
    Lease {
        key: record.key.clone(),
        token: record.token,
        holder_id: record.holder_id.clone(),
        etag: record.etag.clone(),
        expires_at_ms: record.expires_at_ms,
        acquired_at_ms: record.acquired_at_ms,
        ttl_ms: u64::try_from(record.ttl.as_millis()).unwrap_or(u64::MAX),
        metadata: record.metadata.clone(),
        seal: record.seal.clone(),
    }
}

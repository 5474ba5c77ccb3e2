//! The lease as the `s3-lease-lease` header's value: the record as JSON,
//! hex-encoded (any metadata is then a valid header value). The downstream
//! decodes it to make fenced writes under the gate's grant.
//!
//! Kept apart so it can give way to the guest crate's
//! `Lease::to_header_value` once that is in the tree.

use crate::bindings::s3_lease::lease::types::Lease;
use serde_json::json;

pub fn to_header_value(lease: &Lease) -> String {
    let json = json!({
        "key": lease.key,
        "token": lease.token,
        "holder_id": lease.holder_id,
        "etag": lease.etag,
        "expires_at_ms": lease.expires_at_ms,
        "acquired_at_ms": lease.acquired_at_ms,
        "ttl_ms": lease.ttl_ms,
        "metadata": lease.metadata,
        "seal": lease.seal,
    });
    json.to_string()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

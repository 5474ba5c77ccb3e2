//! The host's records as plain JSON values for JavaScript: instants in
//! milliseconds since the Unix epoch (the JavaScript makes `Date`s of
//! them), durations in milliseconds, tokens as numbers (a token rises by
//! one per grant: it stays far below 2^53).

use s3_lease_host::{
    AuditEntry, CapabilityResult, FencedObject, FencedWrite, LeaseRecord, LockState,
    PreflightReport, SemaphoreState, SlotEntry,
};
use serde_json::{json, Value};
use std::time::Duration;

pub fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub fn lock_state_json(s: &LockState) -> Value {
    json!({
        "key": s.key,
        "holder": s.holder_id,
        "token": s.token,
        "expiresAt": s.expires_at_ms,
        "acquiredAt": s.acquired_at_ms,
        "metadata": s.metadata,
        "etag": s.etag,
        "live": s.live,
        "expiresInMs": ms(s.expires_in),
    })
}

fn slot_entry_json(e: &SlotEntry) -> Value {
    json!({
        "holder": e.holder_id,
        "token": e.token,
        "expiresAt": e.expires_at_ms,
        "acquiredAt": e.acquired_at_ms,
        "metadata": e.metadata,
        "live": e.live,
        "expiresInMs": ms(e.expires_in),
    })
}

pub fn semaphore_json(s: &SemaphoreState) -> Value {
    json!({
        "lock": lock_state_json(&s.lock),
        "limit": s.limit,
        "holders": s.holders.iter().map(slot_entry_json).collect::<Vec<_>>(),
        "queue": s.queue.iter().map(slot_entry_json).collect::<Vec<_>>(),
    })
}

/// A lease record, whole: what `lease.record()` hands over (the command
/// line's `--lease` JSON has the same fields).
pub fn record_json(r: &LeaseRecord) -> Value {
    json!({
        "key": r.key,
        "token": r.token,
        "holder": r.holder_id,
        "etag": r.etag,
        "expiresAt": r.expires_at_ms,
        "acquiredAt": r.acquired_at_ms,
        "ttlMs": ms(r.ttl),
        "metadata": r.metadata,
        "seal": r.seal,
    })
}

pub fn fenced_write_json(w: &FencedWrite) -> Value {
    json!({
        "objectKey": w.object_key,
        "etag": w.etag,
        "token": w.token,
        "previousToken": w.previous_token,
    })
}

/// A fenced object, its body apart (a `Buffer`, not JSON).
/// One grant of a key's log; times are the store's clock, ms.
pub fn audit_entry_json(e: &AuditEntry) -> Value {
    json!({
        "token": e.token,
        "holder": e.holder_id,
        "ttlMs": e.ttl_ms,
        "grantedAt": e.granted_at_ms,
        "ended": e.ended.name(),
        "endedAt": e.ended_at_ms,
        "heldMs": e.held_ms,
        "writtenBy": e.written_by,
        "backfilled": e.backfilled,
    })
}

pub fn fenced_object_json(o: &FencedObject) -> Value {
    json!({
        "objectKey": o.object_key,
        "etag": o.etag,
        "contentType": o.content_type,
        "token": o.token,
    })
}

fn capability_json(c: &CapabilityResult) -> Value {
    json!({
        "capability": c.capability.name(),
        "verdict": c.verdict.name(),
        "status": c.status,
        "code": c.code,
        "detail": c.detail,
        "silent": c.silent,
    })
}

pub fn preflight_json(p: &PreflightReport) -> Value {
    json!({
        "results": p.results.iter().map(capability_json).collect::<Vec<_>>(),
        "clockOffset": p.clock_offset.map(|c| json!({
            "offsetMs": c.offset_ms,
            "uncertaintyMs": c.uncertainty_ms,
        })),
        "safeStrategies": p.safe_strategies.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "safeExpiryClocks": p.safe_expiry_clocks.iter().map(|c| c.name()).collect::<Vec<_>>(),
        "recommendedStrategy": p.recommended_strategy.map(|s| s.name()),
        "configSafe": p.config_safe,
        "notes": p.notes,
        "requests": p.requests,
    })
}

//! The JSON shapes the command line reads and prints. Leases round-trip
//! exactly (the component refuses an altered one: its seal covers every field).

use crate::exit::{Failure, BAD_LEASE};
use s3_lease_host::{LeaseRecord, LockState, SemaphoreState, SlotEntry};
use serde_json::{json, Map, Value};
use std::time::Duration;

pub fn lease(l: &LeaseRecord) -> Value {
    json!({
        "key": l.key,
        "token": l.token,
        "holder_id": l.holder_id,
        "etag": l.etag,
        "expires_at_ms": l.expires_at_ms,
        "acquired_at_ms": l.acquired_at_ms,
        "ttl_ms": u64::try_from(l.ttl.as_millis()).unwrap_or(u64::MAX),
        "metadata": l.metadata,
        "seal": l.seal,
    })
}

/// A lease as `lease` printed it.
pub fn parse_lease(text: &str) -> Result<LeaseRecord, Failure> {
    let bad =
        |why: String| Failure::new(BAD_LEASE, format!("not a lease printed by s3-lease: {why}"));
    let value: Value = serde_json::from_str(text.trim()).map_err(|e| bad(e.to_string()))?;
    let object = value
        .as_object()
        .ok_or_else(|| bad("not a JSON object".into()))?;
    let text_field = |name: &str| -> Result<String, Failure> {
        field(object, name)?
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| bad(format!("`{name}` is not a string")))
    };
    let number = |name: &str| -> Result<u64, Failure> {
        field(object, name)?
            .as_u64()
            .ok_or_else(|| bad(format!("`{name}` is not a whole number")))
    };
    Ok(
        LeaseRecord::new(text_field("key")?, number("token")?, text_field("seal")?)
            .with_holder_id(text_field("holder_id")?)
            .with_etag(text_field("etag")?)
            .with_expires_at_ms(number("expires_at_ms")?)
            .with_acquired_at_ms(number("acquired_at_ms")?)
            .with_ttl(Duration::from_millis(number("ttl_ms")?))
            .with_metadata(text_field("metadata")?),
    )
}

fn field<'a>(object: &'a Map<String, Value>, name: &str) -> Result<&'a Value, Failure> {
    object.get(name).ok_or_else(|| {
        Failure::new(
            BAD_LEASE,
            format!("not a lease printed by s3-lease: no `{name}`"),
        )
    })
}

/// A key's state for `status` and `elect --watch`; `None`: never locked.
/// A semaphore's holders and queue (in queue order) under `semaphore`.
pub fn state(key: &str, s: Option<&LockState>, sem: Option<&SemaphoreState>) -> Value {
    let mut value = lock_state(key, s);
    if let (Some(sem), Value::Object(map)) = (sem, &mut value) {
        let slots = |slots: &[SlotEntry]| -> Vec<Value> {
            slots
                .iter()
                .map(|e| {
                    json!({
                        "holder_id": e.holder_id,
                        "token": e.token,
                        "live": e.live,
                        "expires_in_ms": ms(e.expires_in),
                        "expires_at_ms": e.expires_at_ms,
                        "acquired_at_ms": e.acquired_at_ms,
                        "metadata": e.metadata,
                    })
                })
                .collect()
        };
        map.insert(
            "semaphore".into(),
            json!({
                "limit": sem.limit,
                "holders": slots(&sem.holders),
                "queue": slots(&sem.queue),
            }),
        );
    }
    value
}

fn lock_state(key: &str, s: Option<&LockState>) -> Value {
    match s {
        None => json!({"key": key, "live": false, "holder_id": null, "token": null}),
        // A lock written by a client that records no holder or no token
        // (another design's lease table) shows them as absent.
        Some(s) => json!({
            "key": key,
            "live": s.live,
            "holder_id": s.holder_id,
            "token": s.token,
            "expires_in_ms": ms(s.expires_in),
            "expires_at_ms": s.expires_at_ms,
            "acquired_at_ms": s.acquired_at_ms.unwrap_or(0),
            "metadata": s.metadata,
            "etag": s.etag,
        }),
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

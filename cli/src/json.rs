//! The JSON shapes the command line reads and prints. Leases round-trip
//! exactly (the component refuses an altered one: its seal covers every field).

use crate::exit::{Failure, BAD_LEASE};
use s3_lease_host::bindings::{Lease, LockState, SemaphoreState, Slot};
use serde_json::{json, Map, Value};

pub fn lease(l: &Lease) -> Value {
    json!({
        "key": l.key,
        "token": l.token,
        "holder_id": l.holder_id,
        "etag": l.etag,
        "expires_at_ms": l.expires_at_ms,
        "acquired_at_ms": l.acquired_at_ms,
        "ttl_ms": l.ttl_ms,
        "metadata": l.metadata,
        "seal": l.seal,
    })
}

/// A lease as `lease` printed it.
pub fn parse_lease(text: &str) -> Result<Lease, Failure> {
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
    Ok(Lease {
        key: text_field("key")?,
        token: number("token")?,
        holder_id: text_field("holder_id")?,
        etag: text_field("etag")?,
        expires_at_ms: number("expires_at_ms")?,
        acquired_at_ms: number("acquired_at_ms")?,
        ttl_ms: number("ttl_ms")?,
        metadata: text_field("metadata")?,
        seal: text_field("seal")?,
    })
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
        let slots = |slots: &[Slot]| -> Vec<Value> {
            slots
                .iter()
                .map(|e| {
                    json!({
                        "holder_id": e.holder_id,
                        "token": e.token,
                        "live": e.live,
                        "expires_in_ms": e.expires_in_ms,
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
        // No holder and token 0: what a lock written by a client that
        // records neither (seed 003's design) reads as; shown as absent.
        Some(s) => json!({
            "key": key,
            "live": s.live,
            "holder_id": (!s.holder_id.is_empty()).then_some(&s.holder_id),
            "token": (s.token != 0).then_some(s.token),
            "expires_in_ms": s.expires_in_ms,
            "expires_at_ms": s.expires_at_ms,
            "acquired_at_ms": s.acquired_at_ms,
            "metadata": s.metadata,
            "etag": s.etag,
        }),
    }
}

//! The item a lock lives in, and reading one another client wrote.
//!
//! Written by us: `key` (S), `lease_version` (S, a hash of the body, so a
//! reply need not carry it back), `lease_body` (S, the lock object's JSON,
//! byte for byte what an S3 store would hold), and for people and other
//! tools `token` (N) and `holder` (S). Never `lease_expiry`, the table's
//! TTL attribute: the item holds the key's token counter, which must
//! outlive every grant it made, so no sweep may delete it. A TTL deletes
//! only items that carry its attribute as a number, and ours carry none
//! (`token` is the one number, and the preflight refuses a table whose TTL
//! is on it). A holder whose clock is slow, or a key idle for years, keeps
//! its item and so its counter.
//!
//! Written by a dynamodb-lease client: `key`, `lease_version` (a random id),
//! `lease_expiry` (its wall clock plus its ttl). Read as a lock with no
//! token, no holder and no recorded ttl, so it is judged by the holder
//! rule on `lease_expiry`, as a plain design client's S3 object is.

use crate::prelude::*;

use super::{EXPIRY_ATTRIBUTE, KEY_ATTRIBUTE, TOKEN_ATTRIBUTE, VERSION_ATTRIBUTE};
use crate::lock_object::semaphore::SemaphoreRecord;
use crate::lock_object::LockRecord;
use crate::sigv4;
use serde_json::{json, Map, Value};

/// The lock object as stored in the item.
pub const BODY_ATTRIBUTE: &str = "lease_body";
pub const HOLDER_ATTRIBUTE: &str = "holder";

/// An item's version for a body: the first 128 bits of its SHA-256, in
/// hex. Equal bodies are equal records (each carries its write id and
/// times), as S3's MD5 ETags treat them.
pub fn version_of(body: &[u8]) -> String {
    let mut hex = sigv4::sha256_hex(body);
    hex.truncate(32);
    hex
}

/// The PutItem `Item` for a lock object `body` stored under `object_key`.
pub fn encode_item(object_key: &str, body: &[u8]) -> Value {
    let mut item = Map::new();
    item.insert(KEY_ATTRIBUTE.into(), json!({ "S": object_key }));
    item.insert(VERSION_ATTRIBUTE.into(), json!({ "S": version_of(body) }));
    item.insert(
        BODY_ATTRIBUTE.into(),
        json!({ "S": String::from_utf8_lossy(body) }),
    );
    let is_semaphore = SemaphoreRecord::from_json(body).is_some();
    if let (Ok(record), false) = (LockRecord::from_json(body), is_semaphore) {
        item.insert(
            TOKEN_ATTRIBUTE.into(),
            json!({ "N": record.token.to_string() }),
        );
        if !record.holder_id.is_empty() {
            item.insert(HOLDER_ATTRIBUTE.into(), json!({ "S": record.holder_id }));
        }
    }
    Value::Object(item)
}

/// What a GetItem `Item` holds: its version and the lock object's JSON.
/// The error is a reason, for `corrupt-lock-object`.
pub fn decode_item(item: &Map<String, Value>) -> Result<(String, Vec<u8>), String> {
    let version =
        string_attribute(item, VERSION_ATTRIBUTE)?.ok_or("the item has no lease_version (S)")?;
    if let Some(body) = string_attribute(item, BODY_ATTRIBUTE)? {
        return Ok((version, body.into_bytes()));
    }
    // A dynamodb-lease item: a lease until `lease_expiry` on its writer's clock.
    let expiry_s = number_attribute(item, EXPIRY_ATTRIBUTE)?
        .ok_or("the item has neither lease_body nor lease_expiry")?;
    let record = LockRecord {
        expires_at_ms: expiry_s.saturating_mul(1000),
        ..LockRecord::default()
    };
    if record.expires_at_ms >= crate::lock_object::MAX_TIME_MS {
        return Err(format!("lease_expiry {expiry_s} is out of range"));
    }
    Ok((version, record.to_json()))
}

fn string_attribute(item: &Map<String, Value>, name: &str) -> Result<Option<String>, String> {
    match item.get(name) {
        None => Ok(None),
        Some(v) => match v.get("S").and_then(Value::as_str) {
            Some(s) => Ok(Some(s.to_string())),
            None => Err(format!("{name} is not a string (S) attribute")),
        },
    }
}

/// Seconds, rounded down; DynamoDB numbers are decimal strings, and a
/// client may write a fraction.
fn number_attribute(item: &Map<String, Value>, name: &str) -> Result<Option<u64>, String> {
    let Some(v) = item.get(name) else {
        return Ok(None);
    };
    // Whole seconds and a fraction of digits, read without a float
    // parser (core's costs the component about 15 KB).
    let seconds = |n: &str| {
        let (whole, fraction) = n.trim().split_once('.').unwrap_or((n.trim(), "0"));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || !digits(fraction) {
            return None;
        }
        whole.parse::<u64>().ok()
    };
    v.get("N")
        .and_then(Value::as_str)
        .and_then(seconds)
        .map(Some)
        .ok_or_else(|| format!("{name} is not a non-negative number of seconds (N)"))
}

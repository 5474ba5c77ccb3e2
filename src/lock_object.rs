//! The lock object's JSON, read strictly and written compatibly.
//!
//! `expires_at` (float seconds since the Unix epoch, 0 once released) and
//! `token` (integer) are exactly the fields of the single-object design, so a
//! plain boto3 client that follows it contends correctly on the same object.
//! `holder`, `acquired_at`, `metadata`, `renewed_at`, `ttl_ms` and `write`
//! sit beside them and are optional on read: such a client does not write
//! them. docs/protocol.md documents the format; `tests/doc_formats.rs`
//! checks its examples against this module.

use crate::prelude::*;

pub mod semaphore;

use crate::json_out::JsonObject;
use serde_json::{Map, Value};

/// Lock objects are a few hundred bytes; anything far larger is not ours and
/// is refused before it is read.
pub const MAX_LOCK_OBJECT_BYTES: usize = 64 * 1024;

/// Seconds past which an `expires_at` is nonsense (year 5138), not a lease.
const MAX_EPOCH_SECONDS: f64 = 1e11;
/// The same bound in milliseconds: nothing at or past it is ever written.
pub const MAX_TIME_MS: u64 = 100_000_000_000_000;

/// What the lock object stores.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LockRecord {
    /// 0 once released.
    pub expires_at_ms: u64,
    pub token: u64,
    pub holder_id: String,
    /// 0 when the writer recorded none.
    pub acquired_at_ms: u64,
    pub metadata: String,
    /// The lease's ttl, which the `server` and `observed` expiry clocks
    /// judge by; 0 when the writer recorded none (a plain design client).
    pub ttl_ms: u64,
    /// When the write that stored this record was made (a grant, a renew
    /// or a release), on its writer's wall clock: `expires_at` is this
    /// plus `ttl_ms`. With it, both claims a record makes are durations
    /// from its write, and a reader can hold a record whose two disagree
    /// to the longer (see `expiry`). 0 when the writer recorded none.
    pub renewed_at_ms: u64,
    /// A random id of the write that stored this record: after a reply was
    /// lost, its writer re-reads and recognises whether its write landed.
    /// Empty when the writer recorded none.
    pub write_id: String,
}

/// A lock object as read: its record, where it lives and what it means now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LockState {
    pub key: String,
    pub record: LockRecord,
    pub etag: String,
    pub live: bool,
    /// How long until the clock that judges this lock first calls it
    /// expired (0 when not live): the reader's wall clock for
    /// single-object, the server's `Date` for epoch-objects. Waiters sleep
    /// by this, never by comparing `expires_at_ms` with their own clock.
    pub expires_in_ms: u64,
    /// The object's `Last-Modified` (server clock), when the reply had one.
    pub last_modified_ms: Option<u64>,
    /// The `Date` of the reply that read it (server clock), when it had
    /// one: with the grant log on, a takeover is judged on it too, and
    /// recorded (see `audit`).
    pub date_ms: Option<u64>,
    /// The key is a semaphore (its object has a `limit`): its holders and
    /// queue, each judged. Then `live` means some holder is live, and
    /// `expires_in_ms` is the time until the first live one can expire.
    pub semaphore: Option<Box<semaphore::SemaphoreState>>,
}

impl LockRecord {
    /// Live at `now_ms` by the reader's clock. Matches the design's
    /// `now <= expires_at` test; a released lock (0) is never live.
    pub fn is_live(&self, now_ms: u64) -> bool {
        self.expires_at_ms != 0 && now_ms <= self.expires_at_ms
    }

    /// The fields in sorted order: see `json_out`.
    pub fn to_json(&self) -> Vec<u8> {
        let mut o = JsonObject::default();
        o.seconds("acquired_at", self.acquired_at_ms);
        o.seconds("expires_at", self.expires_at_ms);
        o.str("holder", &self.holder_id);
        o.str("metadata", &self.metadata);
        if self.renewed_at_ms != 0 {
            o.seconds("renewed_at", self.renewed_at_ms);
        }
        o.u64("token", self.token);
        o.u64("ttl_ms", self.ttl_ms);
        o.str("write", &self.write_id);
        o.finish()
    }

    /// How long the lease lasts from its write, by the record's own
    /// claims: `ttl_ms`, or `expires_at` minus `renewed_at` if that is
    /// longer (the later expiry of a record whose two disagree). `None`
    /// when the record cannot say: it has no `renewed_at` (a plain design
    /// client's, or an earlier build's), or it is released.
    pub fn claimed_duration_ms(&self) -> Option<u64> {
        if self.renewed_at_ms == 0 || self.expires_at_ms == 0 {
            return None;
        }
        Some(
            self.ttl_ms
                .max(self.expires_at_ms.saturating_sub(self.renewed_at_ms)),
        )
    }

    /// Parses a lock object body. The error is a reason for
    /// `corrupt-lock-object`: what was wrong, never the whole body.
    pub fn from_json(body: &[u8]) -> Result<Self, String> {
        if body.len() > MAX_LOCK_OBJECT_BYTES {
            return Err(too_large(body.len() as u64));
        }
        let value: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
        let Value::Object(map) = value else {
            return Err(format!("expected a JSON object, found {}", kind(&value)));
        };
        let expires_at_ms = match map.get("expires_at") {
            None => return Err("missing field \"expires_at\"".into()),
            Some(v) => epoch_ms("expires_at", v)?,
        };
        let token = match map.get("token") {
            None => return Err("missing field \"token\"".into()),
            Some(v) => v.as_u64().ok_or_else(|| {
                format!(
                    "\"token\" must be a non-negative integer, found {}",
                    kind(v)
                )
            })?,
        };
        let optional_time = |field: &str| match map.get(field) {
            None | Some(Value::Null) => Ok(0),
            Some(v) => epoch_ms(field, v),
        };
        let record = LockRecord {
            expires_at_ms,
            token,
            holder_id: optional_string(&map, "holder")?,
            acquired_at_ms: optional_time("acquired_at")?,
            metadata: optional_string(&map, "metadata")?,
            ttl_ms: optional_ttl(&map, "ttl_ms")?,
            renewed_at_ms: optional_time("renewed_at")?,
            write_id: optional_string(&map, "write")?,
        };
        // A lease no writer may grant (longer than the longest ttl), as
        // an out-of-range `ttl_ms` is refused.
        if record.claimed_duration_ms() > Some(crate::limits::MAX_TTL_MS) {
            return Err(format!(
                "\"expires_at\" is more than {} ms after \"renewed_at\"",
                crate::limits::MAX_TTL_MS
            ));
        }
        Ok(record)
    }
}

/// An optional ttl field: absent or null is 0 (not recorded).
pub(crate) fn optional_ttl(map: &Map<String, Value>, field: &str) -> Result<u64, String> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_u64()
            .filter(|ms| *ms <= crate::limits::MAX_TTL_MS)
            .ok_or_else(|| format!("{field:?} must be 0 ..= {}", crate::limits::MAX_TTL_MS)),
    }
}

pub fn too_large(len: u64) -> String {
    format!("object is {len} bytes; lock objects are at most {MAX_LOCK_OBJECT_BYTES}")
}

pub(crate) fn epoch_ms(field: &str, v: &Value) -> Result<u64, String> {
    let seconds = v
        .as_f64()
        .ok_or_else(|| format!("{field:?} must be a number of seconds, found {}", kind(v)))?;
    // The range is checked after rounding too: 99999999999.9999 s is below
    // the ceiling but rounds to 1e14 ms, which `to_json` would write back as
    // 1e11 s, at the ceiling: a record we accept must read back once written.
    let in_range = (0.0..MAX_EPOCH_SECONDS).contains(&seconds);
    let ms = if in_range {
        round_to_u64(seconds * 1000.0)
    } else {
        0
    };
    if !in_range || ms as f64 >= MAX_EPOCH_SECONDS * 1000.0 {
        return Err(format!(
            "{field:?} is out of range (0 ..= 1e11 seconds): {}",
            describe(v)
        ));
    }
    Ok(ms)
}

/// `x.round() as u64` for `0 <= x < 2^53`, where `f64::round` (std only,
/// and this crate is `no_std` in the component) would give the same: the
/// integer part and the fraction are exact in that range.
fn round_to_u64(x: f64) -> u64 {
    let whole = x as u64;
    if x - whole as f64 >= 0.5 {
        whole + 1
    } else {
        whole
    }
}

pub(crate) fn optional_string(map: &Map<String, Value>, field: &str) -> Result<String, String> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("{field:?} must be a string, found {}", kind(other))),
    }
}

/// An integer as itself, anything else by its kind. Never a float's digits:
/// printing those links a float printer (docs/size.md).
pub(crate) fn describe(v: &Value) -> String {
    match (v.as_u64(), v.as_i64()) {
        (Some(n), _) => n.to_string(),
        (None, Some(n)) => n.to_string(),
        (None, None) => kind(v).into(),
    }
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_u64() => "an integer",
        Value::Number(n) if n.is_i64() => "a negative integer",
        Value::Number(_) => "a fractional number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> LockRecord {
        LockRecord {
            expires_at_ms: 1_740_151_473_206,
            token: 7,
            holder_id: "node-a".into(),
            acquired_at_ms: 1_740_151_413_000,
            metadata: "10.0.0.1:8080 \"quoted\"".into(),
            ttl_ms: 60_000,
            renewed_at_ms: 1_740_151_413_206,
            write_id: "w1".into(),
        }
    }

    #[test]
    fn writes_what_a_serde_json_value_wrote_byte_for_byte() {
        // Earlier versions serialized a `Value` (sorted keys); the bytes,
        // and so the ETag of an unchanged record, stay the same.
        let r = record();
        let value = serde_json::json!({
            "expires_at": r.expires_at_ms as f64 / 1000.0,
            "token": r.token,
            "holder": r.holder_id,
            "acquired_at": r.acquired_at_ms as f64 / 1000.0,
            "metadata": r.metadata,
            "ttl_ms": r.ttl_ms,
            "renewed_at": r.renewed_at_ms as f64 / 1000.0,
            "write": r.write_id,
        });
        assert_eq!(r.to_json(), value.to_string().into_bytes());
        // A record without `renewed_at` (an earlier build's) leaves it out.
        let earlier = LockRecord {
            renewed_at_ms: 0,
            ..r.clone()
        };
        let mut value = value;
        value.as_object_mut().unwrap().remove("renewed_at");
        assert_eq!(earlier.to_json(), value.to_string().into_bytes());
    }

    #[test]
    fn round_trips() {
        let r = record();
        assert_eq!(LockRecord::from_json(&r.to_json()).unwrap(), r);
    }

    #[test]
    fn writes_the_design_fields_as_float_seconds_and_integer() {
        let v: Value = serde_json::from_slice(&record().to_json()).unwrap();
        assert_eq!(v["expires_at"].as_f64(), Some(1_740_151_473.206));
        assert!(v["token"].is_u64());
        let released = LockRecord {
            expires_at_ms: 0,
            ..record()
        };
        let v: Value = serde_json::from_slice(&released.to_json()).unwrap();
        assert_eq!(v["expires_at"].as_f64(), Some(0.0));
    }

    #[test]
    fn reads_what_a_plain_design_client_writes() {
        let r = LockRecord::from_json(br#"{"expires_at": 1740151473.206179, "token": 1}"#).unwrap();
        assert_eq!(r.expires_at_ms, 1_740_151_473_206);
        assert_eq!(r.token, 1);
        assert_eq!(r.holder_id, "");
        assert_eq!(r.acquired_at_ms, 0);
        let released = LockRecord::from_json(br#"{"expires_at": 0, "token": 1}"#).unwrap();
        assert!(!released.is_live(0));
    }

    #[test]
    fn times_that_round_up_to_the_ceiling_are_refused() {
        // Found by tests/parsers_never_panic.rs: this was read as 1e14 ms,
        // written back as 1e11 s, and then refused as out of range.
        for body in [
            &br#"{"token":0,"expires_at":99999999999.9995}"#[..],
            br#"{"token":0,"expires_at":99999999999.9999}"#,
            br#"{"token":0,"expires_at":1,"acquired_at":99999999999.9999}"#,
        ] {
            let err = LockRecord::from_json(body).unwrap_err();
            assert!(err.contains("out of range"), "{err}");
        }
        // The last millisecond below the ceiling still reads, and reads back.
        let r = LockRecord::from_json(br#"{"token":0,"expires_at":99999999999.999}"#).unwrap();
        assert_eq!(r.expires_at_ms, 99_999_999_999_999);
        assert_eq!(LockRecord::from_json(&r.to_json()), Ok(r));
    }

    #[test]
    fn rounding_without_std_matches_f64_round() {
        // The component has no `f64::round`; `round_to_u64` stands in for it
        // over the whole range `epoch_ms` passes it (below 1e14).
        let mut cases = vec![
            0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            1_740_151_473_206.25,
            1_740_151_473_206.5,
            1_740_151_473_206.75,
            99_999_999_999_999.5,
            99_999_999_999_999.99,
        ];
        let mut x = 0.1_f64;
        while x < 1e14 {
            cases.extend([x, x + 0.5, x * 1.000_000_1]);
            x *= 1.37;
        }
        for x in cases {
            assert_eq!(round_to_u64(x), x.round() as u64, "{x}");
        }
    }

    #[test]
    fn liveness_is_inclusive_of_the_expiry_instant() {
        let r = record();
        assert!(r.is_live(r.expires_at_ms));
        assert!(!r.is_live(r.expires_at_ms + 1));
    }

    #[test]
    fn refuses_each_kind_of_corruption_with_a_reason() {
        let cases: &[(&[u8], &str)] = &[
            (b"\x00\xff\x13garbage", "not JSON"),
            (b"[1,2]", "expected a JSON object, found an array"),
            (br#"{"token": 1}"#, "missing field \"expires_at\""),
            (br#"{"expires_at": 5}"#, "missing field \"token\""),
            (br#"{"expires_at": "soon", "token": 1}"#, "must be a number"),
            (br#"{"expires_at": 5, "token": "1"}"#, "found a string"),
            (
                br#"{"expires_at": 5, "token": -1}"#,
                "found a negative integer",
            ),
            (
                br#"{"expires_at": 5, "token": 1.5}"#,
                "found a fractional number",
            ),
            (
                br#"{"expires_at": -3, "token": 1}"#,
                "\"expires_at\" is out of range (0 ..= 1e11 seconds): -3",
            ),
            (br#"{"expires_at": 1e300, "token": 1}"#, "out of range"),
            (
                br#"{"expires_at": 5, "token": 1, "holder": 3}"#,
                "\"holder\" must be a string",
            ),
            (
                br#"{"expires_at": 5, "token": 18446744073709551616}"#,
                "non-negative integer",
            ),
        ];
        for (body, want) in cases {
            let err = LockRecord::from_json(body).unwrap_err();
            assert!(
                err.contains(want),
                "{:?}: {err}",
                String::from_utf8_lossy(body)
            );
        }
        let big = vec![b' '; MAX_LOCK_OBJECT_BYTES + 1];
        assert!(LockRecord::from_json(&big).unwrap_err().contains("at most"));
    }
}

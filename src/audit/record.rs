//! One record of the grant log, as JSON: written once, never changed.
//!
//! ```json
//! {"acquired_at_ms":1700000000000,"backfilled":false,"clock":"server","format":1,
//!  "holder":"host-a/42","key":"nightly","kind":"grant","limit":1,
//!  "previous":{"date_ms":1700000001000,"etag":"\"9b2c…\"","holders":[{"acquired_at_ms":1699999940000,
//!    "holder":"host-b/7","live":false,"released":false,"token":41,"ttl_ms":30000}],
//!    "modified_ms":1699999950000,"token":41},
//!  "strategy":"single-object","token":42,"ttl_ms":30000,
//!  "write":{"date_ms":1700000001000,"etag":"\"5e1d…\""},"written_by":"host-a/42"}
//! ```
//!
//! Times named `*_ms` are milliseconds since the Unix epoch on the
//! **store's** clock (a reply's `Date`, an object's `Last-Modified`),
//! except `acquired_at_ms`, the holder's own wall clock, kept only to tell
//! two grants of one token apart. An absent time is one the store did not
//! give. Fields are written in sorted order; readers ignore fields they do
//! not know.

use crate::prelude::*;

use super::names::Kind;
use crate::config::ExpiryClock;
use crate::expiry::{server_time, Observation};
use crate::json_out::JsonObject;
use crate::lock_object::LockState;
use crate::stores::s3::S3Response;
use serde_json::{Map, Value};

/// The format's version: a reader refuses records of a later one.
pub const FORMAT: u64 = 1;
/// Records are a few hundred bytes, a semaphore's up to a few KB.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

/// The store's times of one write: its reply's `Date`, and the written
/// object's `Last-Modified` when the reply carried one (a store whose
/// write replies say when it wrote).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriteTimes {
    pub etag: String,
    pub date_ms: Option<u64>,
    pub modified_ms: Option<u64>,
}

impl WriteTimes {
    /// From a write's reply.
    pub fn of_reply(etag: &str, r: &S3Response) -> Self {
        WriteTimes {
            etag: etag.to_string(),
            date_ms: server_time(r, "date"),
            modified_ms: server_time(r, "last-modified"),
        }
    }

    /// The earliest store time known to be at or after the write: its
    /// `Last-Modified`, else its reply's `Date`.
    pub fn at_ms(&self) -> Option<u64> {
        self.modified_ms.or(self.date_ms)
    }
}

/// One holder the grantee found on the key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreviousHolder {
    pub token: u64,
    pub holder: String,
    /// Its own wall clock (see the module comment).
    pub acquired_at_ms: u64,
    pub ttl_ms: u64,
    /// A lock released (`expires_at` 0); a released slot is not listed.
    pub released: bool,
    /// Judged live by the grantee, and so left in place (a semaphore's
    /// other holders); a lock's holder never is.
    pub live: bool,
    /// A semaphore entry's own last write, on the store's clock.
    pub written_at_ms: Option<u64>,
    /// The `Date` on which the grantee first saw this entry (or this lock
    /// object, unchanged).
    pub first_date_ms: Option<u64>,
}

/// What a grantee saw of the key when its grant replaced it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Previous {
    /// The key's counter: the last token granted before this grant.
    pub token: u64,
    /// The lock object the grant's conditional write replaced.
    pub etag: String,
    /// Its `Last-Modified` (the last write of it).
    pub modified_ms: Option<u64>,
    /// The `Date` of the read the grant decided on.
    pub date_ms: Option<u64>,
    pub holders: Vec<PreviousHolder>,
}

impl Previous {
    /// From the state a grant replaced, and what the grantee had observed
    /// of the key before (for the `Date`s of first sightings).
    pub fn of(state: &LockState, observed: Option<&Observation>) -> Self {
        let same_object = observed.filter(|o| o.state.etag == state.etag);
        let first_date = same_object.and_then(|o| o.first_date_ms).or(state.date_ms);
        let holders = match &state.semaphore {
            Some(sem) => sem
                .record
                .holders
                .iter()
                .zip(&sem.holders)
                .map(|(e, judged)| PreviousHolder {
                    token: e.token,
                    holder: e.holder_id.clone(),
                    acquired_at_ms: e.acquired_at_ms,
                    ttl_ms: e.ttl_ms,
                    released: false,
                    live: judged.live,
                    written_at_ms: e.written_at_ms.or(state.last_modified_ms),
                    first_date_ms: observed
                        .and_then(|o| {
                            o.entries_first_date_ms
                                .iter()
                                .find(|(id, _)| !id.is_empty() && *id == e.write_id)
                        })
                        .map(|(_, d)| *d)
                        .or(state.date_ms),
                })
                .collect(),
            None if state.record.token == 0 => Vec::new(),
            None => vec![PreviousHolder {
                token: state.record.token,
                holder: state.record.holder_id.clone(),
                acquired_at_ms: state.record.acquired_at_ms,
                ttl_ms: state.record.ttl_ms,
                released: state.record.expires_at_ms == 0,
                live: false,
                written_at_ms: state.last_modified_ms,
                first_date_ms: first_date,
            }],
        };
        Previous {
            token: state.record.token,
            etag: state.etag.clone(),
            modified_ms: state.last_modified_ms,
            date_ms: state.date_ms,
            holders,
        }
    }
}

/// One record (see the module comment).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    pub kind: Kind,
    pub key: String,
    pub token: u64,
    pub holder: String,
    pub acquired_at_ms: u64,
    pub ttl_ms: u64,
    /// `single-object`, `epoch-objects` or `semaphore`.
    pub strategy: String,
    /// How many may hold the key at once (1 for a lock).
    pub limit: u32,
    /// The expiry clock the grantee judged by.
    pub clock: String,
    /// The grant's (or release's) own write; for a back-fill, the lock
    /// object as the back-filler found it.
    pub write: WriteTimes,
    /// A grant's: what it replaced. None for a back-fill and a release.
    pub previous: Option<Previous>,
    /// The holder id of whoever wrote this record: the holder itself, or
    /// for a back-fill the grantee that found the grant unrecorded.
    pub written_by: String,
    pub backfilled: bool,
}

/// The name the record format gives an expiry clock.
pub fn clock_name(clock: ExpiryClock) -> &'static str {
    match clock {
        ExpiryClock::Holder => "holder",
        ExpiryClock::Server => "server",
        ExpiryClock::Observed => "observed",
    }
}

impl Record {
    /// Whether this record and `other` are of the same grant: the same
    /// token, holder and the holder's own acquire time.
    pub fn same_grant(&self, other: &Record) -> bool {
        self.token == other.token
            && self.holder == other.holder
            && self.acquired_at_ms == other.acquired_at_ms
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut o = JsonObject::default();
        o.u64("acquired_at_ms", self.acquired_at_ms);
        o.bool("backfilled", self.backfilled);
        o.str("clock", &self.clock);
        o.u64("format", FORMAT);
        o.str("holder", &self.holder);
        o.str("key", &self.key);
        o.str("kind", self.kind.name());
        o.u64("limit", u64::from(self.limit));
        if let Some(p) = &self.previous {
            o.raw("previous", &previous_json(p));
        }
        o.str("strategy", &self.strategy);
        o.u64("token", self.token);
        o.u64("ttl_ms", self.ttl_ms);
        o.raw("write", &write_json(&self.write));
        o.str("written_by", &self.written_by);
        o.finish()
    }

    /// Parses a record. The error is a reason: what was wrong, never the
    /// whole body (it came from the store, and may be anything).
    pub fn from_json(body: &[u8]) -> Result<Self, String> {
        if body.len() > MAX_RECORD_BYTES {
            return Err(format!(
                "the record is {} bytes; at most {MAX_RECORD_BYTES}",
                body.len()
            ));
        }
        let value: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
        let map = object(&value, "the record")?;
        let format = number(map, "format")?;
        if format != FORMAT {
            return Err(format!(
                "format {format}; this version reads format {FORMAT}"
            ));
        }
        let kind = Kind::from_name(&string(map, "kind")?)
            .ok_or("\"kind\" is not grant, release or collision")?;
        let previous = match map.get("previous") {
            None | Some(Value::Null) => None,
            Some(v) => Some(read_previous(object(v, "\"previous\"")?)?),
        };
        Ok(Record {
            kind,
            key: string(map, "key")?,
            token: number(map, "token")?,
            holder: string(map, "holder")?,
            acquired_at_ms: number(map, "acquired_at_ms")?,
            ttl_ms: number(map, "ttl_ms")?,
            strategy: string(map, "strategy")?,
            limit: u32::try_from(number(map, "limit")?)
                .map_err(|_| "\"limit\" is out of range".to_string())?,
            clock: string(map, "clock")?,
            write: read_write(object(
                map.get("write").ok_or("missing field \"write\"")?,
                "\"write\"",
            )?)?,
            previous,
            written_by: string(map, "written_by")?,
            backfilled: match map.get("backfilled") {
                Some(Value::Bool(b)) => *b,
                _ => return Err("\"backfilled\" must be a boolean".into()),
            },
        })
    }
}

fn write_json(w: &WriteTimes) -> Vec<u8> {
    let mut o = JsonObject::default();
    optional(&mut o, "date_ms", w.date_ms);
    o.str("etag", &w.etag);
    optional(&mut o, "modified_ms", w.modified_ms);
    o.finish()
}

fn previous_json(p: &Previous) -> Vec<u8> {
    let mut holders = Vec::from(&b"["[..]);
    for (i, h) in p.holders.iter().enumerate() {
        if i > 0 {
            holders.push(b',');
        }
        let mut o = JsonObject::default();
        o.u64("acquired_at_ms", h.acquired_at_ms);
        optional(&mut o, "first_date_ms", h.first_date_ms);
        o.str("holder", &h.holder);
        o.bool("live", h.live);
        o.bool("released", h.released);
        o.u64("token", h.token);
        o.u64("ttl_ms", h.ttl_ms);
        optional(&mut o, "written_at_ms", h.written_at_ms);
        holders.extend_from_slice(&o.finish());
    }
    holders.push(b']');
    let mut o = JsonObject::default();
    optional(&mut o, "date_ms", p.date_ms);
    o.str("etag", &p.etag);
    o.raw("holders", &holders);
    optional(&mut o, "modified_ms", p.modified_ms);
    o.u64("token", p.token);
    o.finish()
}

fn optional(o: &mut JsonObject, name: &str, value: Option<u64>) {
    if let Some(v) = value {
        o.u64(name, v);
    }
}

fn read_write(map: &Map<String, Value>) -> Result<WriteTimes, String> {
    Ok(WriteTimes {
        etag: string(map, "etag")?,
        date_ms: optional_number(map, "date_ms")?,
        modified_ms: optional_number(map, "modified_ms")?,
    })
}

fn read_previous(map: &Map<String, Value>) -> Result<Previous, String> {
    let holders = match map.get("holders") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                let h = object(item, "a holder")?;
                Ok(PreviousHolder {
                    token: number(h, "token")?,
                    holder: string(h, "holder")?,
                    acquired_at_ms: number(h, "acquired_at_ms")?,
                    ttl_ms: number(h, "ttl_ms")?,
                    released: boolean(h, "released")?,
                    live: boolean(h, "live")?,
                    written_at_ms: optional_number(h, "written_at_ms")?,
                    first_date_ms: optional_number(h, "first_date_ms")?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?,
        _ => return Err("\"previous.holders\" must be an array".into()),
    };
    Ok(Previous {
        token: number(map, "token")?,
        etag: string(map, "etag")?,
        modified_ms: optional_number(map, "modified_ms")?,
        date_ms: optional_number(map, "date_ms")?,
        holders,
    })
}

fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>, String> {
    match v {
        Value::Object(map) => Ok(map),
        other => Err(format!(
            "{what} must be a JSON object, found {}",
            crate::lock_object::kind(other)
        )),
    }
}

fn string(map: &Map<String, Value>, field: &str) -> Result<String, String> {
    match map.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(format!("{field:?} must be a string")),
    }
}

fn number(map: &Map<String, Value>, field: &str) -> Result<u64, String> {
    map.get(field)
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("{field:?} must be a non-negative integer"))
}

fn optional_number(map: &Map<String, Value>, field: &str) -> Result<Option<u64>, String> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => number(map, field).map(Some),
    }
}

fn boolean(map: &Map<String, Value>, field: &str) -> Result<bool, String> {
    match map.get(field) {
        Some(Value::Bool(b)) => Ok(*b),
        _ => Err(format!("{field:?} must be a boolean")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn grant() -> Record {
        Record {
            kind: Kind::Grant,
            key: "nightly \"report\"".into(),
            token: 42,
            holder: "host-a/42".into(),
            acquired_at_ms: 1_700_000_000_000,
            ttl_ms: 30_000,
            strategy: "single-object".into(),
            limit: 1,
            clock: "server".into(),
            write: WriteTimes {
                etag: "\"e\"".into(),
                date_ms: Some(1_700_000_001_000),
                modified_ms: None,
            },
            previous: Some(Previous {
                token: 41,
                etag: "\"d\"".into(),
                modified_ms: Some(1_699_999_950_000),
                date_ms: Some(1_700_000_001_000),
                holders: vec![PreviousHolder {
                    token: 41,
                    holder: "host-b/7".into(),
                    acquired_at_ms: 1_699_999_940_000,
                    ttl_ms: 30_000,
                    released: false,
                    live: false,
                    written_at_ms: Some(1_699_999_950_000),
                    first_date_ms: None,
                }],
            }),
            written_by: "host-a/42".into(),
            backfilled: false,
        }
    }

    #[test]
    fn round_trips_and_is_what_serde_json_writes() {
        let r = grant();
        let json = r.to_json();
        assert_eq!(Record::from_json(&json).unwrap(), r);
        let value: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(value.to_string().into_bytes(), json);
        assert_eq!(value["previous"]["holders"][0]["token"], 41);
        let bare = Record {
            previous: None,
            kind: Kind::Release,
            write: WriteTimes::default(),
            ..r
        };
        assert_eq!(Record::from_json(&bare.to_json()).unwrap(), bare);
    }

    #[test]
    fn refuses_what_it_cannot_read_with_a_reason() {
        let good: Value = serde_json::from_slice(&grant().to_json()).unwrap();
        let cases: Vec<(Value, &str)> = vec![
            (serde_json::json!([1]), "must be a JSON object"),
            (
                {
                    let mut v = good.clone();
                    v["format"] = 2.into();
                    v
                },
                "format 2",
            ),
            (
                {
                    let mut v = good.clone();
                    v["kind"] = "renew".into();
                    v
                },
                "\"kind\"",
            ),
            (
                {
                    let mut v = good.clone();
                    v["token"] = (-1).into();
                    v
                },
                "\"token\"",
            ),
            (
                {
                    let mut v = good.clone();
                    v["previous"]["holders"] = 3.into();
                    v
                },
                "holders",
            ),
        ];
        for (value, want) in cases {
            let err = Record::from_json(value.to_string().as_bytes()).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
        assert!(Record::from_json(b"\xff").unwrap_err().contains("not JSON"));
        let big = vec![b' '; MAX_RECORD_BYTES + 1];
        assert!(Record::from_json(&big).unwrap_err().contains("at most"));
    }
}

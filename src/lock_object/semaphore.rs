//! A semaphore's lock object: up to `limit` holders of one key, and the
//! queue of fair waiters, in the key's one object.
//!
//! The design fields stay on top, so every reader that knows only the lock
//! judges the object conservatively: `token` is the key's counter (the last
//! token granted, to a slot or to a plain lock), `expires_at` the latest
//! expiry of any entry and `ttl_ms` the longest ttl (0 and 0 with no
//! entries). A plain design client therefore takes the key over only once
//! every holder and waiter has expired by its clock, and then with a token
//! above every slot's. `holder` is empty: a semaphore has no one holder.
//!
//! Each entry carries what its own expiry needs under every clock rule:
//! `expires_at` (its writer's clock, for `holder`), `ttl_ms`, its `write`
//! id (for `observed`: an entry is the same while its write id is), and
//! `written_at`, the server's `Last-Modified` of the write that last
//! rewrote it (for `server`). A writer cannot know the `Last-Modified` of
//! its own write, so an entry it (re)writes has none: the next writer, who
//! read this record and so its `Last-Modified`, fills it in.

use crate::prelude::*;

use super::{epoch_ms, kind, optional_string, optional_ttl, too_large, MAX_LOCK_OBJECT_BYTES};
use crate::json_out::JsonObject;
use serde_json::{Map, Value};

/// The most holders a semaphore admits: every holder renews the one
/// object, so each one more is more conflicting writes for all.
pub const MAX_LIMIT: u32 = 64;

/// A slot (a holder with its token) or a queue place (token 0).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Entry {
    pub holder_id: String,
    /// The slot's fencing token; 0 for a queue place.
    pub token: u64,
    /// Its writer's wall clock; never 0 (a released slot is removed).
    pub expires_at_ms: u64,
    /// When the slot was granted or the place taken (writer's clock).
    pub acquired_at_ms: u64,
    pub ttl_ms: u64,
    pub metadata: String,
    /// A random id of the write that last rewrote this entry.
    pub write_id: String,
    /// The server's `Last-Modified` of that write; `None`: the write that
    /// stored this very record (see the module comment).
    pub written_at_ms: Option<u64>,
}

/// What a semaphore's object stores.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SemaphoreRecord {
    pub limit: u32,
    /// The key's token counter: the last token granted.
    pub token: u64,
    /// In the order granted.
    pub holders: Vec<Entry>,
    /// In the order joined: the queue order.
    pub queue: Vec<Entry>,
}

/// An entry judged by the reader's expiry clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Judged {
    pub live: bool,
    pub expires_in_ms: u64,
}

/// A semaphore as read: the record, and each entry judged (in the same
/// order as `record.holders` and `record.queue`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SemaphoreState {
    pub record: SemaphoreRecord,
    pub holders: Vec<Judged>,
    pub queue: Vec<Judged>,
}

impl SemaphoreState {
    pub fn live_holders(&self) -> impl Iterator<Item = &Entry> {
        live(&self.record.holders, &self.holders)
    }

    pub fn live_queue(&self) -> impl Iterator<Item = &Entry> {
        live(&self.record.queue, &self.queue)
    }

    /// Slots nobody live holds.
    pub fn free_slots(&self) -> u32 {
        let held = self.live_holders().count() as u32;
        self.record.limit.saturating_sub(held)
    }
}

fn live<'a>(entries: &'a [Entry], judged: &'a [Judged]) -> impl Iterator<Item = &'a Entry> {
    entries
        .iter()
        .zip(judged)
        .filter(|(_, j)| j.live)
        .map(|(e, _)| e)
}

impl SemaphoreRecord {
    /// The design fields' view of it: the latest expiry and longest ttl
    /// of any entry, so a reader of the lock alone stays conservative.
    pub fn expires_at_ms(&self) -> u64 {
        self.entries().map(|e| e.expires_at_ms).max().unwrap_or(0)
    }

    pub fn ttl_ms(&self) -> u64 {
        self.entries().map(|e| e.ttl_ms).max().unwrap_or(0)
    }

    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.holders.iter().chain(&self.queue)
    }

    /// Fields in sorted order (see `json_out`).
    pub fn to_json(&self) -> Vec<u8> {
        let mut o = JsonObject::default();
        o.seconds("expires_at", self.expires_at_ms());
        o.str("holder", "");
        o.raw("holders", &entries_json(&self.holders));
        o.u64("limit", u64::from(self.limit));
        o.raw("queue", &entries_json(&self.queue));
        o.u64("token", self.token);
        o.u64("ttl_ms", self.ttl_ms());
        o.finish()
    }

    /// `None` when the body is no semaphore (no `limit`): a plain lock.
    /// The error is a reason for `corrupt-lock-object`.
    pub fn from_json(body: &[u8]) -> Option<Result<Self, String>> {
        if body.len() > MAX_LOCK_OBJECT_BYTES {
            return Some(Err(too_large(body.len() as u64)));
        }
        let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
            // Not ours to judge here: the lock's own parser says why.
            return None;
        };
        let limit = map.get("limit")?;
        Some(parse(&map, limit))
    }
}

fn parse(map: &Map<String, Value>, limit: &Value) -> Result<SemaphoreRecord, String> {
    let limit = limit
        .as_u64()
        .filter(|n| (1..=u64::from(MAX_LIMIT)).contains(n))
        .ok_or_else(|| format!("\"limit\" must be 1 ..= {MAX_LIMIT}"))? as u32;
    let token = map
        .get("token")
        .and_then(Value::as_u64)
        .ok_or("\"token\" must be a non-negative integer")?;
    let record = SemaphoreRecord {
        limit,
        token,
        holders: entries(map, "holders")?,
        queue: entries(map, "queue")?,
    };
    if let Some(e) = record
        .holders
        .iter()
        .find(|e| e.token == 0 || e.token > token)
    {
        return Err(format!(
            "a holder's token {} is not 1 ..= the key's token {token}",
            e.token
        ));
    }
    Ok(record)
}

fn entries(map: &Map<String, Value>, field: &str) -> Result<Vec<Entry>, String> {
    let items = match map.get(field) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(format!("{field:?} must be an array, found {}", kind(other))),
    };
    items
        .iter()
        .map(|item| {
            let Value::Object(e) = item else {
                return Err(format!("{field:?} holds {}, not an object", kind(item)));
            };
            entry(e).map_err(|reason| format!("in {field:?}: {reason}"))
        })
        .collect()
}

fn entry(e: &Map<String, Value>) -> Result<Entry, String> {
    let time = |name: &str| match e.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => epoch_ms(name, v).map(Some),
    };
    let expires_at_ms = time("expires_at")?
        .filter(|ms| *ms != 0)
        .ok_or("\"expires_at\" must be a time after 1970")?;
    Ok(Entry {
        holder_id: optional_string(e, "holder")?,
        token: match e.get("token") {
            None | Some(Value::Null) => 0,
            Some(v) => v
                .as_u64()
                .ok_or("\"token\" must be a non-negative integer")?,
        },
        expires_at_ms,
        acquired_at_ms: time("acquired_at")?.unwrap_or(0),
        ttl_ms: optional_ttl(e, "ttl_ms")?,
        metadata: optional_string(e, "metadata")?,
        write_id: optional_string(e, "write")?,
        written_at_ms: time("written_at")?,
    })
}

fn entries_json(entries: &[Entry]) -> Vec<u8> {
    let mut out = vec![b'['];
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let mut o = JsonObject::default();
        o.seconds("acquired_at", e.acquired_at_ms);
        o.seconds("expires_at", e.expires_at_ms);
        o.str("holder", &e.holder_id);
        o.str("metadata", &e.metadata);
        o.u64("token", e.token);
        o.u64("ttl_ms", e.ttl_ms);
        o.str("write", &e.write_id);
        if let Some(at) = e.written_at_ms {
            o.seconds("written_at", at);
        }
        out.extend_from_slice(&o.finish());
    }
    out.push(b']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock_object::LockRecord;

    fn entry(holder: &str, token: u64, at: Option<u64>) -> Entry {
        Entry {
            holder_id: holder.into(),
            token,
            expires_at_ms: 1_740_151_473_206,
            acquired_at_ms: 1_740_151_413_000,
            ttl_ms: 60_000,
            metadata: "m \"q\"".into(),
            write_id: format!("w{token}"),
            written_at_ms: at,
        }
    }

    fn record() -> SemaphoreRecord {
        SemaphoreRecord {
            limit: 3,
            token: 9,
            holders: vec![entry("a", 7, Some(1_740_151_400_000)), entry("b", 9, None)],
            queue: vec![Entry {
                ttl_ms: 90_000,
                expires_at_ms: 1_740_151_500_000,
                ..entry("c", 0, None)
            }],
        }
    }

    #[test]
    fn round_trips_and_a_plain_reader_sees_the_latest_expiry_and_longest_ttl() {
        let r = record();
        let body = r.to_json();
        assert_eq!(SemaphoreRecord::from_json(&body), Some(Ok(r)));
        let plain = LockRecord::from_json(&body).unwrap();
        assert_eq!(plain.expires_at_ms, 1_740_151_500_000);
        assert_eq!(plain.ttl_ms, 90_000);
        assert_eq!(plain.token, 9);
        assert_eq!(plain.holder_id, "");
    }

    #[test]
    fn a_plain_lock_is_no_semaphore_and_an_empty_one_is_released() {
        assert_eq!(
            SemaphoreRecord::from_json(br#"{"expires_at":5,"token":1}"#),
            None
        );
        let empty = SemaphoreRecord {
            limit: 2,
            token: 4,
            ..Default::default()
        };
        let plain = LockRecord::from_json(&empty.to_json()).unwrap();
        assert_eq!((plain.expires_at_ms, plain.token), (0, 4));
    }

    #[test]
    fn refuses_each_kind_of_corruption_with_a_reason() {
        let cases: &[(&[u8], &str)] = &[
            (br#"{"limit":0,"token":1}"#, "\"limit\" must be 1 ..= 64"),
            (br#"{"limit":65,"token":1}"#, "\"limit\" must be 1 ..= 64"),
            (br#"{"limit":"2","token":1}"#, "\"limit\""),
            (br#"{"limit":2}"#, "\"token\""),
            (br#"{"limit":2,"token":1,"holders":{}}"#, "must be an array"),
            (br#"{"limit":2,"token":1,"holders":[3]}"#, "not an object"),
            (
                br#"{"limit":2,"token":1,"holders":[{"token":1}]}"#,
                "\"expires_at\" must be",
            ),
            (
                br#"{"limit":2,"token":1,"holders":[{"token":2,"expires_at":5}]}"#,
                "not 1 ..= the key's token 1",
            ),
            (
                br#"{"limit":2,"token":1,"queue":[{"expires_at":5,"ttl_ms":-1}]}"#,
                "in \"queue\": \"ttl_ms\"",
            ),
        ];
        for (body, want) in cases {
            let err = SemaphoreRecord::from_json(body).unwrap().unwrap_err();
            assert!(
                err.contains(want),
                "{}: {err}",
                String::from_utf8_lossy(body)
            );
        }
    }
}

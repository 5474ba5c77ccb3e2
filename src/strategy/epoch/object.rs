//! Epoch objects: where a key's epochs live and how their keys name them
//! (`epoch_dir`, `epoch_key`, `parse_epoch_key`), what one stores
//! (`EpochRecord`), and the reading of one from a GET's reply.

use crate::prelude::*;

use crate::error::{Error, S3Error};
use crate::expiry::{server_time, ExpiryClock, Judge, SERVER_SLACK_MS};
use crate::json_out::JsonObject;
use crate::lease::check_writable_size;
use crate::limits::MAX_TTL_MS;
use crate::lock_object::{describe, epoch_ms, kind, optional_string, LockRecord, LockState};
use crate::lock_object::{too_large, MAX_LOCK_OBJECT_BYTES};
use crate::stores::s3::{Method, S3Request, S3Response};
use serde_json::Value;

const JSON: &str = "application/json";

/// Where a key's epochs live: `<prefix><key>/`.
pub fn epoch_dir(lock_object_key: &str) -> String {
    format!("{lock_object_key}/")
}

pub(super) fn listing_prefix(dir: &str) -> String {
    format!("{dir}epoch-")
}

pub fn epoch_key(dir: &str, epoch: u64) -> String {
    format!("{dir}epoch-{epoch:020}.json")
}

/// The epoch an object key names, or `None` for anything that is not exactly
/// `<dir>epoch-<20 digits>.json` (foreign keys under the prefix are ignored).
pub fn parse_epoch_key(dir: &str, key: &str) -> Option<u64> {
    let digits = key
        .strip_prefix(dir)?
        .strip_prefix("epoch-")?
        .strip_suffix(".json")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What an epoch object stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochRecord {
    pub expired: bool,
    pub validity_ms: u64,
    pub token: u64,
    pub holder_id: String,
    pub acquired_at_ms: u64,
    pub metadata: String,
    /// See `LockRecord::write_id`.
    pub write_id: String,
}

impl EpochRecord {
    /// The fields in sorted order: see `json_out`.
    pub fn to_json(&self) -> Vec<u8> {
        let mut o = JsonObject::default();
        o.seconds("acquired_at", self.acquired_at_ms);
        o.bool("expired", self.expired);
        o.str("holder", &self.holder_id);
        o.str("metadata", &self.metadata);
        o.u64("token", self.token);
        o.u64("validity_ms", self.validity_ms);
        o.str("write", &self.write_id);
        o.finish()
    }

    /// Parses the body of epoch object `epoch`. `expired` and `validity_ms`
    /// are required (the design's fields); `token`, when present, must match
    /// the epoch in the key.
    pub fn from_json(body: &[u8], epoch: u64) -> Result<Self, String> {
        if body.len() > MAX_LOCK_OBJECT_BYTES {
            return Err(too_large(body.len() as u64));
        }
        let value: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
        let Value::Object(map) = value else {
            return Err(format!("expected a JSON object, found {}", kind(&value)));
        };
        let expired = match map.get("expired") {
            Some(Value::Bool(b)) => *b,
            Some(v) => return Err(format!("\"expired\" must be a boolean, found {}", kind(v))),
            None => return Err("missing field \"expired\"".into()),
        };
        let validity_ms = match map.get("validity_ms") {
            Some(v) => v
                .as_u64()
                .filter(|ms| *ms <= MAX_TTL_MS)
                .ok_or_else(|| format!("\"validity_ms\" must be 0 ..= {MAX_TTL_MS}"))?,
            None => return Err("missing field \"validity_ms\"".into()),
        };
        match map.get("token") {
            None | Some(Value::Null) => {}
            Some(v) if v.as_u64() == Some(epoch) => {}
            Some(v) => {
                return Err(format!(
                    "\"token\" is {}, but the key names epoch {epoch}",
                    describe(v)
                ))
            }
        }
        Ok(EpochRecord {
            expired,
            validity_ms,
            token: epoch,
            holder_id: optional_string(&map, "holder")?,
            acquired_at_ms: match map.get("acquired_at") {
                None | Some(Value::Null) => 0,
                Some(v) => epoch_ms("acquired_at", v)?,
            },
            metadata: optional_string(&map, "metadata")?,
            write_id: optional_string(&map, "write")?,
        })
    }
}

/// An error for a reply that lacks what the protocol needs from the server.
pub(super) fn reply_lacks(r: &S3Response, what: &str) -> Error {
    Error::S3(S3Error {
        message: what.to_string(),
        ..r.s3_error()
    })
}

fn server_time_required(r: &S3Response, header: &str) -> Result<u64, Error> {
    server_time(r, header).ok_or_else(|| {
        reply_lacks(
            r,
            &format!("the reply has no valid {header} header, which epoch-objects needs"),
        )
    })
}

/// Reads a GET of epoch object `epoch`: `None` if it is gone, else its
/// state as `judge` sees it (the server's clock, or how long this client has
/// seen it unchanged). A 304 reuses the state observed before.
pub(super) fn read_epoch(
    key: &str,
    dir: &str,
    epoch: u64,
    r: S3Response,
    now_ms: u64,
    judge: &Judge,
) -> Result<Option<LockState>, Error> {
    let object_key = epoch_key(dir, epoch);
    let needs_server_time = judge.clock == ExpiryClock::Server;
    match r.status {
        404 if r.is_missing_object() => Ok(None),
        304 => {
            if needs_server_time {
                server_time_required(&r, "date")?;
            }
            match judge.unchanged(&r, now_ms) {
                Some(Ok(state)) if state.record.token == epoch => Ok(Some(state)),
                Some(Err(e)) => Err(e),
                // We asked about another epoch, or about none.
                _ => Err(r.into_error()),
            }
        }
        200 => {
            if let Some(len) = r.body_too_large {
                return Err(Error::corrupt(&object_key, too_large(len)));
            }
            let etag = r.read_etag(&object_key)?;
            let record = EpochRecord::from_json(&r.body, epoch)
                .map_err(|reason| Error::corrupt(&object_key, reason))?;
            let modified = if needs_server_time {
                server_time_required(&r, "date")?;
                Some(server_time_required(&r, "last-modified")?)
            } else {
                server_time(&r, "last-modified")
            };
            // For display: when the server's clock calls it expired.
            let expires_at_ms = match (record.expired, modified) {
                (true, _) => 0,
                (false, m) => m
                    .unwrap_or(0)
                    .saturating_add(record.validity_ms)
                    .saturating_add(SERVER_SLACK_MS),
            };
            // 0 would mean "not recorded"; a zero validity is 1 ms.
            let ttl_ms = record.validity_ms.max(1);
            let record = LockRecord {
                expires_at_ms,
                token: epoch,
                holder_id: record.holder_id,
                acquired_at_ms: record.acquired_at_ms,
                metadata: record.metadata,
                ttl_ms,
                // The validity is the whole claim: no expiry of a holder's
                // clock to hold it to as well.
                renewed_at_ms: expires_at_ms.saturating_sub(ttl_ms),
                write_id: record.write_id,
            };
            let (live, expires_in_ms) = judge.judge(&record, &etag, &r, now_ms)?;
            Ok(Some(LockState {
                key: key.to_string(),
                live,
                expires_in_ms,
                etag,
                record,
                last_modified_ms: modified,
                date_ms: server_time(&r, "date"),
                semaphore: None,
            }))
        }
        _ => Err(r.into_error()),
    }
}

/// A conditional PUT of epoch object `epoch`, refused (`invalid-argument`)
/// when no reader would accept it back.
pub(super) fn put_epoch(
    dir: &str,
    epoch: u64,
    condition: (&str, &str),
    record: &EpochRecord,
) -> Result<S3Request, Error> {
    let object_key = epoch_key(dir, epoch);
    let body = record.to_json();
    check_writable_size(&object_key, &body)?;
    Ok(
        S3Request::new(Method::Put, &object_key, MAX_LOCK_OBJECT_BYTES)
            .header(condition.0, condition.1)
            .body(JSON, body),
    )
}

/// GET of epoch `epoch`, conditional when this client has seen it before.
pub(super) fn get_epoch(dir: &str, epoch: u64, judge: &Judge) -> S3Request {
    let request = S3Request::new(Method::Get, &epoch_key(dir, epoch), MAX_LOCK_OBJECT_BYTES);
    match judge
        .observation
        .as_ref()
        .filter(|o| o.state.record.token == epoch)
    {
        Some(o) => request.header("if-none-match", &o.state.etag),
        None => request,
    }
}

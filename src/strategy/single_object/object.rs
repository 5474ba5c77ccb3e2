//! The lock object on the wire: a GET (conditional when this client has
//! seen the object before), a conditional PUT of a record (never one over
//! the size readers accept), and the reading of a GET's reply into a
//! `LockState`.

use crate::prelude::*;

use crate::error::Error;
use crate::expiry::{server_time, Judge};
use crate::lease::check_writable_size;
use crate::lock_object::semaphore::SemaphoreRecord;
use crate::lock_object::{too_large, LockRecord, LockState, MAX_LOCK_OBJECT_BYTES};
use crate::stores::s3::{Method, S3Request, S3Response, UNREADABLE_HEADER};

const JSON: &str = "application/json";

pub(super) fn get(object_key: &str, judge: &Judge) -> S3Request {
    let request = S3Request::new(Method::Get, object_key, MAX_LOCK_OBJECT_BYTES);
    match judge.cached_etag() {
        // Unchanged since we last read it: 304, no body.
        Some(etag) => request.header("if-none-match", etag),
        None => request,
    }
}

pub(super) fn put(
    object_key: &str,
    condition: (&str, &str),
    record: &LockRecord,
) -> Result<S3Request, Error> {
    put_body(object_key, condition, record.to_json())
}

/// A conditional PUT of a lock object's JSON (a lock's or a semaphore's),
/// refused (`invalid-argument`) when no reader would accept it back.
pub(super) fn put_body(
    object_key: &str,
    condition: (&str, &str),
    json: Vec<u8>,
) -> Result<S3Request, Error> {
    check_writable_size(object_key, &json)?;
    // Error replies to a PUT are small; the success body is empty.
    Ok(
        S3Request::new(Method::Put, object_key, MAX_LOCK_OBJECT_BYTES)
            .header(condition.0, condition.1)
            .body(JSON, json),
    )
}

/// Reads a GET reply: `None` for a missing object, the state for a present
/// one (a 304 reuses the state observed before), an error otherwise.
pub(crate) fn read_lock(
    key: &str,
    object_key: &str,
    r: S3Response,
    now_ms: u64,
    judge: &Judge,
) -> Result<Option<LockState>, Error> {
    match r.status {
        404 if r.is_missing_object() => Ok(None),
        304 => match &judge.observation {
            Some(o) => {
                let semaphore = o.state.semaphore.as_ref().map(|s| s.record.clone());
                let state = o.state.clone();
                judged(
                    key,
                    state.record,
                    semaphore,
                    state.etag,
                    state.last_modified_ms,
                    &r,
                    now_ms,
                    judge,
                )
                .map(Some)
            }
            // We sent no If-None-Match: a store that answers 304 anyway.
            None => Err(r.into_error()),
        },
        200 => {
            if let Some(reason) = r.header(UNREADABLE_HEADER) {
                return Err(Error::corrupt(object_key, reason));
            }
            if let Some(len) = r.body_too_large {
                return Err(Error::corrupt(object_key, too_large(len)));
            }
            let etag = r.read_etag(object_key)?;
            let record = LockRecord::from_json(&r.body)
                .map_err(|reason| Error::corrupt(object_key, reason))?;
            let semaphore = SemaphoreRecord::from_json(&r.body)
                .transpose()
                .map_err(|reason| Error::corrupt(object_key, reason))?;
            let modified = server_time(&r, "last-modified");
            judged(key, record, semaphore, etag, modified, &r, now_ms, judge).map(Some)
        }
        _ => Err(r.into_error()),
    }
}

/// The state of a record read (or confirmed by a 304) in reply `r`.
#[allow(clippy::too_many_arguments)]
fn judged(
    key: &str,
    record: LockRecord,
    semaphore: Option<SemaphoreRecord>,
    etag: String,
    last_modified_ms: Option<u64>,
    r: &S3Response,
    now_ms: u64,
    judge: &Judge,
) -> Result<LockState, Error> {
    let (live, expires_in_ms, semaphore) = match semaphore {
        // A semaphore is live while any holder is; a waiter for a slot
        // waits for the first to expire.
        Some(sem) => {
            let state = judge.judge_semaphore(sem, last_modified_ms, r, now_ms)?;
            let first = state
                .holders
                .iter()
                .filter(|j| j.live)
                .map(|j| j.expires_in_ms)
                .min();
            (first.is_some(), first.unwrap_or(0), Some(Box::new(state)))
        }
        None => {
            let (live, expires_in_ms) = judge.judge(&record, &etag, r, now_ms)?;
            (live, expires_in_ms, None)
        }
    };
    Ok(LockState {
        key: key.to_string(),
        record,
        etag,
        live,
        expires_in_ms,
        last_modified_ms,
        date_ms: server_time(r, "date"),
        semaphore,
    })
}

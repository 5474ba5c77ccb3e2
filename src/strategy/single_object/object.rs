//! The lock object on the wire: a GET (conditional when this client has
//! seen the object before), a conditional PUT of a record, and the reading
//! of a GET's reply into a `LockState`.

use crate::prelude::*;

use crate::error::Error;
use crate::expiry::{server_time, Judge};
use crate::lock_object::{too_large, LockRecord, LockState, MAX_LOCK_OBJECT_BYTES};
use crate::s3::{Method, S3Request, S3Response};

const JSON: &str = "application/json";

pub(super) fn get(object_key: &str, judge: &Judge) -> S3Request {
    let request = S3Request::new(Method::Get, object_key, MAX_LOCK_OBJECT_BYTES);
    match judge.cached_etag() {
        // Unchanged since we last read it: 304, no body.
        Some(etag) => request.header("if-none-match", etag),
        None => request,
    }
}

pub(super) fn put(object_key: &str, condition: (&str, &str), record: &LockRecord) -> S3Request {
    // Error replies to a PUT are small; the success body is empty.
    S3Request::new(Method::Put, object_key, MAX_LOCK_OBJECT_BYTES)
        .header(condition.0, condition.1)
        .body(JSON, record.to_json())
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
        304 => match judge.unchanged(&r, now_ms) {
            Some(state) => state.map(Some),
            // We sent no If-None-Match: a store that answers 304 anyway.
            None => Err(r.into_error()),
        },
        200 => {
            if let Some(len) = r.body_too_large {
                return Err(Error::corrupt(object_key, too_large(len)));
            }
            let etag = r.read_etag(object_key)?;
            let record = LockRecord::from_json(&r.body)
                .map_err(|reason| Error::corrupt(object_key, reason))?;
            let (live, expires_in_ms) = judge.judge(&record, &etag, &r, now_ms)?;
            Ok(Some(LockState {
                key: key.to_string(),
                record,
                etag,
                live,
                expires_in_ms,
                last_modified_ms: server_time(&r, "last-modified"),
            }))
        }
        _ => Err(r.into_error()),
    }
}

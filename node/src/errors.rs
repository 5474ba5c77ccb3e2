//! How a failure reaches JavaScript: a rejection whose message is a marker
//! and a JSON object (the error kind as the contract names it, the host's
//! message, and what the error says besides), which the package's
//! JavaScript (`lib/errors.js`) turns into an `S3LeaseError`. One shape for
//! every call, so no failure of the host is told two ways. No secret is in
//! it: the host's errors carry none.

use crate::convert;
use s3_lease_host::Error;
use serde_json::{json, Map, Value};

/// What `lib/errors.js` looks for at the start of a rejection's message.
pub const MARKER: &str = "S3LEASE_ERROR ";

/// The host's error as JavaScript gets it.
pub fn from_host(e: &Error) -> napi::Error {
    let mut info = Map::new();
    info.insert("code".into(), e.kind().name().into());
    info.insert("message".into(), e.to_string().into());
    info.insert("transient".into(), e.is_transient().into());
    let mut put = |name: &str, value: Option<Value>| {
        if let Some(value) = value {
            info.insert(name.into(), value);
        }
    };
    put("status", e.status().map(Value::from));
    put("storeCode", e.code().map(Value::from));
    put("requestId", e.request_id().map(Value::from));
    put("field", e.field().map(Value::from));
    put("key", e.key().map(Value::from));
    put("objectKey", e.object_key().map(Value::from));
    put("ourToken", e.our_token().map(Value::from));
    put("storedToken", e.stored_token().map(Value::from));
    put(
        "waitedMs",
        e.waited()
            .map(|d| Value::from(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))),
    );
    put("holder", e.holder().map(convert::lock_state_json));
    if let Some(store) = e.store() {
        put("store", Some(store.name().into()));
        put("endpoint", Some(store.endpoint().into()));
        put("bucket", Some(store.bucket().into()));
    }
    rejection(Value::Object(info))
}

/// A failure of the addon's own, of kind `code` (a contract case name:
/// `invalid-argument`, `host`, ...).
pub fn plain(code: &str, message: &str) -> napi::Error {
    rejection(json!({ "code": code, "message": message, "transient": false }))
}

/// A wait the caller gave up on (its `AbortSignal` aborted): the
/// JavaScript rejects with the signal's reason instead.
pub fn aborted() -> napi::Error {
    rejection(json!({ "code": "aborted", "message": "aborted", "transient": false }))
}

fn rejection(info: Value) -> napi::Error {
    napi::Error::new(napi::Status::GenericFailure, format!("{MARKER}{info}"))
}

/// `Result<T, host Error>` as a napi result.
pub trait OrReject<T> {
    fn or_reject(self) -> napi::Result<T>;
}

impl<T> OrReject<T> for Result<T, Error> {
    fn or_reject(self) -> napi::Result<T> {
        self.map_err(|e| from_host(&e))
    }
}

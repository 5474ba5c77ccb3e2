//! The seal key kept in the store, for clients without a configured
//! `seal-key`: 256 random bits in one object (or the store's item)
//! beside the locks, `<key-prefix>.s3-lease-seal-key`:
//!
//! ```json
//! {"purpose":"s3-lease: the key that seals leases; reading it lets one forge them","seal_key":"<64 hex digits>"}
//! ```
//!
//! A client reads it once, on its first call that seals or checks a lease,
//! and keeps it for its life. When it is missing, the client creates it
//! from its own randomness with `If-None-Match: *` (each store's own
//! create-only write); when another client created it first (a 412,
//! or a 409 while both wrote), it reads the winner's. So every client of a
//! prefix ends with the one key stored, and a lease sealed by one is
//! accepted by all. Nothing else is ever written there: `lease::object_key`
//! refuses every lock or fenced object key ending with its name.
//!
//! Deleting the object rotates the key: clients created afterwards make a
//! new one and refuse every lease sealed under the old; running clients
//! keep the old until they restart.

use crate::prelude::*;

use crate::error::{Error, S3Error};
use crate::limits::MAX_REREADS;
use crate::protocol::{is_ambiguous, Operation, Step};
use crate::sigv4::hex;
use crate::stores::s3::{Method, S3Request, S3Response, UNREADABLE_HEADER};
use core::fmt;
use serde_json::Value;

const KEY_BYTES: usize = 32;
/// The key object is about 150 bytes; anything far larger is not ours.
const MAX_KEY_OBJECT_BYTES: usize = 1024;
const PURPOSE: &str = "s3-lease: the key that seals leases; reading it lets one forge them";

/// The stored key's 256 bits. `Debug` never prints them.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredKey([u8; KEY_BYTES]);

impl fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StoredKey(<redacted>)")
    }
}

impl StoredKey {
    pub fn from_bytes(bytes: [u8; KEY_BYTES]) -> Self {
        StoredKey(bytes)
    }

    /// A fresh key from `next`, a source of random words (the `Io`'s,
    /// `wasi:random/random` in the component).
    pub fn random(mut next: impl FnMut() -> u64) -> Self {
        let mut bytes = [0u8; KEY_BYTES];
        for chunk in bytes.chunks_mut(8) {
            chunk.copy_from_slice(&next().to_le_bytes());
        }
        StoredKey(bytes)
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    fn to_body(&self) -> Vec<u8> {
        format!(
            "{{\"purpose\":\"{PURPOSE}\",\"seal_key\":\"{}\"}}",
            hex(&self.0)
        )
        .into_bytes()
    }

    /// The key in a key object's body; the error is a reason for
    /// `corrupt-lock-object`, never the body (it may hold a key).
    fn from_body(body: &[u8]) -> Result<Self, String> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|_| "the seal key object is not JSON".to_string())?;
        let digits = value
            .get("seal_key")
            .and_then(Value::as_str)
            .ok_or("the seal key object has no \"seal_key\" string")?;
        let wrong = || format!("\"seal_key\" is not {} hex digits", 2 * KEY_BYTES);
        if digits.len() != 2 * KEY_BYTES || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(wrong());
        }
        let mut bytes = [0u8; KEY_BYTES];
        for (byte, pair) in bytes.iter_mut().zip(digits.as_bytes().chunks(2)) {
            let pair = core::str::from_utf8(pair).map_err(|_| wrong())?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| wrong())?;
        }
        Ok(StoredKey(bytes))
    }
}

enum Phase {
    Reading,
    Creating,
}

/// Reads the key object, creating it when it is missing (see the module
/// comment). 1 request when it exists; 2 for the client that creates it;
/// 3 for one that loses the race to create it.
pub struct LoadSealKey {
    object_key: String,
    /// Ours, stored only if nobody's is.
    fresh: StoredKey,
    creates: u32,
    /// Why our last create failed, for when we give up.
    last_error: Option<Error>,
    phase: Phase,
}

impl LoadSealKey {
    /// `object_key` is `lease::seal_key_object(prefix)`; `fresh` the key to
    /// store if there is none.
    pub fn new(object_key: String, fresh: StoredKey) -> Self {
        LoadSealKey {
            object_key,
            fresh,
            creates: 0,
            last_error: None,
            phase: Phase::Reading,
        }
    }

    fn read(&mut self) -> Step<StoredKey> {
        self.phase = Phase::Reading;
        Step::Send(S3Request::new(
            Method::Get,
            &self.object_key,
            MAX_KEY_OBJECT_BYTES,
        ))
    }

    fn create(&mut self) -> Step<StoredKey> {
        if self.creates >= MAX_REREADS {
            return Step::Done(Err(self.last_error.take().unwrap_or_else(|| {
                Error::S3(S3Error {
                    status: 0,
                    code: String::new(),
                    message: format!(
                        "the seal key object {:?} could not be created",
                        self.object_key
                    ),
                    request_id: String::new(),
                })
            })));
        }
        self.creates += 1;
        self.phase = Phase::Creating;
        Step::Send(
            S3Request::new(Method::Put, &self.object_key, MAX_KEY_OBJECT_BYTES)
                .header("if-none-match", "*")
                .body("application/json", self.fresh.to_body()),
        )
    }

    fn parse(&self, r: &S3Response) -> Result<StoredKey, Error> {
        let corrupt = |reason: String| Error::corrupt(&self.object_key, reason);
        if let Some(reason) = r.header(UNREADABLE_HEADER) {
            return Err(corrupt(reason.to_string()));
        }
        if let Some(len) = r.body_too_large {
            return Err(corrupt(format!(
                "the seal key object is {len} bytes; at most {MAX_KEY_OBJECT_BYTES}"
            )));
        }
        StoredKey::from_body(&r.body).map_err(corrupt)
    }
}

impl Operation for LoadSealKey {
    type Output = StoredKey;

    fn start(&mut self, _now_ms: u64) -> Step<StoredKey> {
        self.read()
    }

    fn on_response(&mut self, r: S3Response, _now_ms: u64) -> Step<StoredKey> {
        match self.phase {
            Phase::Reading => match r.status {
                200 => Step::Done(self.parse(&r)),
                _ if r.is_missing_object() => self.create(),
                _ => Step::Done(Err(r.into_error())),
            },
            Phase::Creating => match r.status {
                200 => Step::Done(Ok(self.fresh.clone())),
                // Another client's key is there (412), or was being
                // written with ours (409), or ours may have landed (a
                // 5xx): whatever is stored now is the key.
                409 | 412 => {
                    self.last_error = Some(r.into_error());
                    self.read()
                }
                _ if is_ambiguous(&r) => {
                    self.last_error = Some(r.into_error());
                    self.read()
                }
                _ => Step::Done(Err(r.into_error())),
            },
        }
    }

    fn on_transport_error(&mut self, error: Error, _now_ms: u64) -> Step<StoredKey> {
        match self.phase {
            // Our create may have landed: read what is there.
            Phase::Creating => {
                self.last_error = Some(error);
                self.read()
            }
            Phase::Reading => Step::Done(Err(error)),
        }
    }
}

#[cfg(test)]
mod tests;

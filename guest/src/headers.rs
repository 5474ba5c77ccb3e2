//! A lease carried across an HTTP hop: a gate (wasi:http middleware)
//! acquires per request and forwards the request with the grant stamped on
//! it; the function behind it makes fenced writes under that grant
//! (`Held::from_forwarded`) and leaves the release to the gate.
//!
//! Three headers, defined here once:
//!
//! - [`LEASE`] (`s3-lease-lease`): the whole sealed lease record, the one
//!   the downstream acts on. `v1.` then the record as JSON (the WIT field
//!   names: `key`, `token`, `holder-id`, `etag`, `expires-at-ms`,
//!   `acquired-at-ms`, `ttl-ms`, `metadata`, `seal`) in base64url without
//!   padding. JSON because keys and metadata are any UTF-8; base64url
//!   because its alphabet is a valid header value everywhere, with no
//!   comma for a proxy to split at and nothing to escape; `v1.` so a
//!   later encoding can be told apart. A lease with short metadata takes
//!   about 400 bytes; metadata counts about 4/3 of its JSON length.
//! - [`TOKEN`] (`s3-lease-token`): the fencing token in decimal, for
//!   logs and for code that only passes the token on.
//! - [`HOLDER`] (`s3-lease-holder`): the holder id, every byte outside
//!   `!`..`~`, and `%`, `"` and `\` themselves, percent-encoded
//!   ([`escape_holder`]).
//!
//! The lease is sealed, so a changed one is refused by the component; but
//! it is a bearer capability: whoever reads it can write fenced under it
//! and release it. A gate removes any `s3-lease-*` header a caller sent
//! before stamping its own, and the function is reachable only through
//! the gate. Reading never panics: anything malformed is
//! `Error::InvalidHeader` naming the header.

use crate::error::Error;
use crate::types::Lease;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Map, Value};

/// The whole sealed lease: `v1.` and base64url of its JSON.
pub const LEASE: &str = "s3-lease-lease";
/// The fencing token, decimal.
pub const TOKEN: &str = "s3-lease-token";
/// The holder id, percent-encoded outside `!`..`~`.
pub const HOLDER: &str = "s3-lease-holder";

/// The encoding's version prefix.
const V1: &str = "v1.";

/// The longest lease value read: a lease with 4096 bytes of metadata,
/// every byte escaped in JSON, stays below it; anything longer is refused
/// before it is decoded.
pub const MAX_LEASE_VALUE_LEN: usize = 64 * 1024;

impl Lease {
    /// The [`LEASE`] header's value.
    pub fn to_header_value(&self) -> String {
        let json = json!({
            "key": self.key,
            "token": self.token,
            "holder-id": self.holder_id,
            "etag": self.etag,
            "expires-at-ms": self.expires_at_ms,
            "acquired-at-ms": self.acquired_at_ms,
            "ttl-ms": self.ttl_ms,
            "metadata": self.metadata,
            "seal": self.seal,
        });
        format!("{V1}{}", URL_SAFE_NO_PAD.encode(json.to_string()))
    }

    /// Reads a [`LEASE`] header's value (surrounding spaces ignored).
    pub fn from_header_value(value: &str) -> Result<Lease, Error> {
        let bad = |reason: &str| Error::InvalidHeader {
            name: LEASE,
            reason: reason.to_string(),
        };
        let value = value.trim_matches([' ', '\t']);
        if value.len() > MAX_LEASE_VALUE_LEN {
            return Err(bad("longer than any lease"));
        }
        let encoded = value
            .strip_prefix(V1)
            .ok_or_else(|| bad("does not start with `v1.`"))?;
        let bytes = URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|_| bad("is not base64url without padding"))?;
        let json: Value =
            serde_json::from_slice(&bytes).map_err(|_| bad("does not hold a JSON lease"))?;
        let object = json
            .as_object()
            .ok_or_else(|| bad("does not hold a JSON object"))?;
        let string = |name: &str| field(object, name, Value::as_str).map(str::to_string);
        let number = |name: &str| field(object, name, Value::as_u64);
        Ok(Lease {
            key: string("key")?,
            token: number("token")?,
            holder_id: string("holder-id")?,
            etag: string("etag")?,
            expires_at_ms: number("expires-at-ms")?,
            acquired_at_ms: number("acquired-at-ms")?,
            ttl_ms: number("ttl-ms")?,
            metadata: string("metadata")?,
            seal: string("seal")?,
        })
    }

    /// The three headers a gate stamps on a forwarded request, in the
    /// order [`LEASE`], [`TOKEN`], [`HOLDER`].
    pub fn header_values(&self) -> [(&'static str, String); 3] {
        [
            (LEASE, self.to_header_value()),
            (TOKEN, self.token.to_string()),
            (HOLDER, escape_holder(&self.holder_id)),
        ]
    }

    /// The forwarded lease from a request's headers (`get` returns a
    /// header's value by its lowercase name): [`LEASE`] is required; a
    /// [`TOKEN`] or [`HOLDER`] that is present must agree with it, so a
    /// request stamped by two gates, or half rewritten, is refused.
    pub fn from_headers<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Result<Lease, Error> {
        let lease = Lease::from_header_value(get(LEASE).ok_or(Error::InvalidHeader {
            name: LEASE,
            reason: "is missing".into(),
        })?)?;
        if let Some(token) = get(TOKEN) {
            if parse_token(token)? != lease.token {
                return Err(disagrees(TOKEN));
            }
        }
        if let Some(holder) = get(HOLDER) {
            if percent_decode(holder.trim_matches([' ', '\t'])).as_deref()
                != Some(&*lease.holder_id)
            {
                return Err(disagrees(HOLDER));
            }
        }
        Ok(lease)
    }
}

/// Reads a [`TOKEN`] header's value: decimal digits only.
pub fn parse_token(value: &str) -> Result<u64, Error> {
    let value = value.trim_matches([' ', '\t']);
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::InvalidHeader {
            name: TOKEN,
            reason: "is not a decimal number".into(),
        });
    }
    value.parse().map_err(|_| Error::InvalidHeader {
        name: TOKEN,
        reason: "is larger than any token".into(),
    })
}

/// Reads a [`HOLDER`] header's value back into the holder id.
pub fn parse_holder(value: &str) -> Result<String, Error> {
    percent_decode(value.trim_matches([' ', '\t'])).ok_or(Error::InvalidHeader {
        name: HOLDER,
        reason: "is not a percent-encoded UTF-8 holder id".into(),
    })
}

fn disagrees(name: &'static str) -> Error {
    Error::InvalidHeader {
        name,
        reason: format!("disagrees with {LEASE}"),
    }
}

fn field<'v, T>(
    object: &'v Map<String, Value>,
    name: &str,
    read: impl Fn(&'v Value) -> Option<T>,
) -> Result<T, Error> {
    object
        .get(name)
        .and_then(read)
        .ok_or_else(|| Error::InvalidHeader {
            name: LEASE,
            reason: format!("has no valid {name:?}"),
        })
}

/// A holder id as a header value ([`HOLDER`]'s encoding, also the gate's
/// `s3-lease-held-by`): visible ASCII as is, every other byte and `%`, `"`
/// and `\` percent-encoded, so any id is a valid header value, is never
/// mistaken for a quoted string, and reads back exactly ([`parse_holder`]).
pub fn escape_holder(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (b'!'..=b'~').contains(&b) && !matches!(b, b'%' | b'"' | b'\\') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn percent_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let hex = tail.get(..2)?;
            let hex = std::str::from_utf8(hex).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests;

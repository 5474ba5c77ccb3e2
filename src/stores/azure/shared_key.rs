//! Azure Storage Shared Key signing, sans I/O, as `sigv4` is for AWS.
//!
//! The caller gives the request as it goes on the wire (method, the
//! encoded path, raw query pairs, headers, `x-ms-date` among them) and
//! gets back the `Authorization` value: `SharedKey <account>:<signature>`,
//! the signature being the base64 HMAC-SHA256, under the decoded account
//! key, of Azure's string to sign:
//!
//! ```text
//! VERB \n Content-Encoding \n Content-Language \n Content-Length \n
//! Content-MD5 \n Content-Type \n Date \n If-Modified-Since \n If-Match \n
//! If-None-Match \n If-Unmodified-Since \n Range \n
//! <x-ms-* headers, lowercased, sorted: name:value \n each>
//! /<account><encoded path> [\n name:value for each query parameter]
//! ```
//!
//! A `Content-Length` of 0 is signed as empty (versions 2015-02-21 on).
//! Nothing reads a clock: `x-ms-date` is the caller's header, so tests pin
//! signatures, and the cross-check against Microsoft's Python SDK
//! (`tests/shared_key_azure_sdk.rs`) signs the same inputs.

use crate::prelude::*;

use crate::sigv4::hmac;
use core::fmt;

/// The service version every request names (`x-ms-version`): it fixes the
/// string to sign above and the replies' shapes.
pub const API_VERSION: &str = "2024-11-04";

/// An account key, decoded from its base64. `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct AccountKey(Vec<u8>);

impl AccountKey {
    /// The key from its base64 form, as the portal and connection strings
    /// give it; `None` when it is not base64, or empty.
    pub fn from_base64(text: &str) -> Option<Self> {
        crate::base64::decode(text.trim())
            .filter(|bytes| !bytes.is_empty())
            .map(AccountKey)
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for AccountKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AccountKey(<redacted>)")
    }
}

/// What gets signed. `path` is exactly as sent (each segment encoded).
#[derive(Debug, Clone, Copy)]
pub struct SignedRequest<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// Raw (decoded) query pairs.
    pub query: &'a [(String, String)],
    /// Every header sent; names in any case.
    pub headers: &'a [(String, String)],
}

/// The standard headers of the string to sign, in its order.
const STANDARD_HEADERS: [&str; 11] = [
    "content-encoding",
    "content-language",
    "content-length",
    "content-md5",
    "content-type",
    "date",
    "if-modified-since",
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "range",
];

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Azure's string to sign for `req`, by the account `account`.
pub fn string_to_sign(account: &str, req: &SignedRequest<'_>) -> String {
    let mut out = String::new();
    out.push_str(req.method);
    out.push('\n');
    for name in STANDARD_HEADERS {
        let value = header(req.headers, name).unwrap_or_default();
        if !(name == "content-length" && value == "0") {
            out.push_str(value);
        }
        out.push('\n');
    }
    // Sorted by byte: every x-ms name we send differs from the others
    // first at a letter, where Azure's own collation agrees.
    let mut ms: Vec<(String, &str)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.as_str()))
        .filter(|(k, _)| k.starts_with("x-ms-"))
        .collect();
    sort_by(&mut ms, |a, b| a.0 > b.0);
    for (name, value) in ms {
        out.push_str(&name);
        out.push(':');
        out.push_str(value);
        out.push('\n');
    }
    out.push('/');
    out.push_str(account);
    out.push_str(if req.path.is_empty() { "/" } else { req.path });
    let mut names: Vec<String> = req
        .query
        .iter()
        .map(|(k, _)| k.to_ascii_lowercase())
        .collect();
    sort_by(&mut names, |a, b| a > b);
    names.dedup();
    for name in names {
        let mut values: Vec<&str> = req
            .query
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(&name))
            .map(|(_, v)| v.as_str())
            .collect();
        sort_by(&mut values, |a, b| a > b);
        out.push('\n');
        out.push_str(&name);
        out.push(':');
        out.push_str(&crate::text::join(values, ","));
    }
    out
}

/// The `Authorization` header's value for `req`.
pub fn authorization(account: &str, key: &AccountKey, req: &SignedRequest<'_>) -> String {
    let signature = hmac(key.bytes(), string_to_sign(account, req).as_bytes());
    format!("SharedKey {account}:{}", crate::base64::encode(&signature))
}

/// Stable insertion sort for a request's few headers (std's sorts cost
/// the component more; see `sigv4`).
fn sort_by<T>(items: &mut [T], greater: impl Fn(&T, &T) -> bool) {
    for i in 1..items.len() {
        let mut j = i;
        while j > 0 && greater(&items[j - 1], &items[j]) {
            items.swap(j - 1, j);
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_string_to_sign_has_azures_lines_in_azures_order() {
        let headers = pairs(&[
            ("x-ms-version", API_VERSION),
            ("X-MS-Date", "Fri, 26 Jun 2015 23:39:12 GMT"),
            ("Content-Length", "0"),
            ("If-None-Match", "*"),
            ("x-ms-meta-s3lease_token", "7"),
            ("Content-Type", "application/json"),
            ("x-ms-blob-type", "BlockBlob"),
            ("host", "not signed"),
        ]);
        let query = pairs(&[("Comp", "b"), ("comp", "a"), ("restype", "container")]);
        let req = SignedRequest {
            method: "PUT",
            path: "/devstoreaccount1/locks/a%20b/k",
            query: &query,
            headers: &headers,
        };
        assert_eq!(
            string_to_sign("devstoreaccount1", &req),
            "PUT\n\n\n\n\napplication/json\n\n\n\n*\n\n\n\
             x-ms-blob-type:BlockBlob\nx-ms-date:Fri, 26 Jun 2015 23:39:12 GMT\n\
             x-ms-meta-s3lease_token:7\nx-ms-version:2024-11-04\n\
             /devstoreaccount1/devstoreaccount1/locks/a%20b/k\ncomp:a,b\nrestype:container"
        );
    }

    #[test]
    fn a_length_is_signed_unless_zero() {
        let headers = pairs(&[("content-length", "12"), ("if-match", "\"0x1\"")]);
        let req = SignedRequest {
            method: "PUT",
            path: "/c/b",
            query: &[],
            headers: &headers,
        };
        assert!(string_to_sign("acct", &req)
            .starts_with("PUT\n\n\n12\n\n\n\n\n\"0x1\"\n\n\n\n/acct/c/b"));
    }

    /// Pinned with Python's `hmac` and `base64` over the same string: the
    /// signature is the base64 HMAC-SHA256 under the decoded key.
    #[test]
    fn signs_with_the_decoded_key() {
        let key = AccountKey::from_base64("a2V5").unwrap();
        assert_eq!(key.bytes(), b"key");
        let req = SignedRequest {
            method: "GET",
            path: "/c/b",
            query: &[],
            headers: &[],
        };
        assert_eq!(
            authorization("acct", &key, &req),
            "SharedKey acct:Z2vBfDVCHIb5mbYHxF0FzA+5gxuwaVi1MWkkww+RcfI="
        );
        assert_eq!(format!("{key:?}"), "AccountKey(<redacted>)");
        assert!(AccountKey::from_base64("not base64!").is_none());
        assert!(AccountKey::from_base64("").is_none());
    }
}

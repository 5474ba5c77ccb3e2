//! AWS Signature Version 4, sans I/O.
//!
//! The caller builds the request (method, authority, an already-encoded path,
//! raw query pairs, headers) and gets back the headers to add. Nothing here
//! reads a clock or the network: the timestamp is an argument, so signing is a
//! pure function that tests pin to the published AWS examples and to botocore.
//!
//! S3 rules apply to the path: it is signed exactly as sent (each key segment
//! encoded once, `/` kept, no normalization). Query pairs are given raw and
//! encoded here with the strict RFC 3986 set.

use crate::prelude::*;

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// SHA-256 of an empty body, the value S3 expects for GET/HEAD/DELETE.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// AWS keys: defined once for the core, the host crate and the guest
/// crate. `Debug` never prints the secret or the session token.
pub use s3_lease_keep::records::Credentials;

/// What gets signed. `path` must already be URI-encoded as it goes on the wire.
#[derive(Debug, Clone)]
pub struct SigningRequest<'a> {
    pub method: &'a str,
    /// The `Host` header value: `host` or `host:port` exactly as sent.
    pub host: &'a str,
    pub path: &'a str,
    /// Raw (unencoded) query pairs; a bare `?acl` is `("acl", "")`.
    pub query: &'a [(String, String)],
    /// Headers to sign besides `host`, `x-amz-date` and `x-amz-security-token`
    /// (which this function adds). Names in any case.
    pub headers: &'a [(String, String)],
    /// Hex SHA-256 of the body, or `UNSIGNED-PAYLOAD`.
    pub payload_sha256_hex: &'a str,
}

/// Where and when: region, service (`s3`) and the signing instant.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    pub region: &'a str,
    pub service: &'a str,
    /// Seconds since the Unix epoch.
    pub unix_seconds: u64,
}

/// Signs `req` and returns the headers to add to it, in this order:
/// `x-amz-date`, `x-amz-security-token` (when set), `authorization`.
pub fn sign(
    req: &SigningRequest<'_>,
    creds: &Credentials,
    scope: Scope<'_>,
) -> Vec<(String, String)> {
    let amz_date = amz_date(scope.unix_seconds);
    let date = &amz_date[..8];

    let mut headers: Vec<(String, String)> = Vec::with_capacity(req.headers.len() + 3);
    headers.push(("host".into(), req.host.to_string()));
    headers.push(("x-amz-date".into(), amz_date.clone()));
    if let Some(token) = &creds.session_token {
        headers.push(("x-amz-security-token".into(), token.clone()));
    }
    for (name, value) in req.headers {
        headers.push((name.to_ascii_lowercase(), value.clone()));
    }
    let (canonical_headers, signed_headers) = canonical_headers(&mut headers);

    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        req.method,
        if req.path.is_empty() { "/" } else { req.path },
        canonical_query(req.query),
        canonical_headers,
        signed_headers,
        req.payload_sha256_hex
    );
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{credential_scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );

    let k_date = hmac(
        format!("AWS4{}", creds.secret_access_key).as_bytes(),
        date.as_bytes(),
    );
    let k_region = hmac(&k_date, scope.region.as_bytes());
    let k_service = hmac(&k_region, scope.service.as_bytes());
    let k_signing = hmac(&k_service, b"aws4_request");
    let signature = hex(&hmac(&k_signing, string_to_sign.as_bytes()));

    let mut out = vec![("x-amz-date".to_string(), amz_date)];
    if let Some(token) = &creds.session_token {
        out.push(("x-amz-security-token".to_string(), token.clone()));
    }
    out.push((
        "authorization".to_string(),
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={signed_headers}, Signature={signature}",
            creds.access_key_id
        ),
    ));
    out
}

/// Sorted `name:value` lines (values trimmed, inner runs of spaces folded,
/// repeated names joined with `,`) and the `;`-joined signed header list.
fn canonical_headers(headers: &mut [(String, String)]) -> (String, String) {
    // Stable sort keeps repeated headers in the order given, as AWS requires.
    insertion_sort_by(headers, |a, b| a.0 > b.0);
    let mut lines = String::new();
    let mut names: Vec<&str> = Vec::new();
    for (name, value) in headers.iter() {
        let value = fold_spaces(value);
        if names.last() == Some(&name.as_str()) {
            lines.pop(); // the newline of the previous value of this name
            lines.push(',');
        } else {
            names.push(name);
            lines.push_str(name);
            lines.push(':');
        }
        lines.push_str(&value);
        lines.push('\n');
    }
    (lines, crate::text::join(names, ";"))
}

fn fold_spaces(value: &str) -> String {
    // SigV4 "trimall": trim, and fold every inner run of whitespace to one space.
    crate::text::join(value.split_whitespace(), " ")
}

/// Query pairs encoded with the strict set and sorted by key, then value.
pub fn canonical_query(query: &[(String, String)]) -> String {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k, true), uri_encode(v, true)))
        .collect();
    insertion_sort_by(&mut pairs, |a, b| a > b);
    let parts = pairs.iter().map(|(k, v)| format!("{k}={v}"));
    crate::text::join(parts, "&")
}

/// A stable sort for the handful of headers and query pairs a request has.
/// std's sorts are built for large inputs; their instantiations cost the
/// component about 12 KB.
fn insertion_sort_by<T>(items: &mut [T], greater: impl Fn(&T, &T) -> bool) {
    for i in 1..items.len() {
        let mut j = i;
        while j > 0 && greater(&items[j - 1], &items[j]) {
            items.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// RFC 3986 percent-encoding as SigV4 defines it: everything but
/// `A-Z a-z 0-9 - . _ ~` is encoded, and `/` too unless `encode_slash` is false.
pub fn uri_encode(input: &str, encode_slash: bool) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(input.len());
    for &byte in input.as_bytes() {
        let keep = byte.is_ascii_alphanumeric()
            || matches!(byte, b'-' | b'.' | b'_' | b'~')
            || (byte == b'/' && !encode_slash);
        if keep {
            out.push(byte as char);
        } else {
            out.push('%');
            out.push(HEX[(byte >> 4) as usize] as char);
            out.push(HEX[(byte & 0xf) as usize] as char);
        }
    }
    out
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

pub(crate) fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length, so this never fails; were it to, an
    // empty signature is refused by the server as a typed error, not a trap.
    let Ok(mut mac) = <HmacSha256 as KeyInit>::new_from_slice(key) else {
        return Vec::new();
    };
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 0xf) as usize] as char);
    }
    out
}

/// `YYYYMMDDTHHMMSSZ` for a Unix time, in UTC.
pub fn amz_date(unix_seconds: u64) -> String {
    let days = unix_seconds / 86_400;
    let secs = unix_seconds % 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        secs / 3600,
        (secs % 3600) / 60,
        secs % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests;

//! S3 requests and replies as plain data: the protocol emits `S3Request`s,
//! `prepare` turns one into a signed `HttpRequest`, a transport sends it and
//! hands back an `S3Response`. Nothing here does I/O.

use crate::prelude::*;

use crate::sigv4::{self, Scope, SigningRequest};
use crate::stores::Reach;
use s3_lease_keep::vocabulary::Addressing;

mod config;
pub mod dialects;
mod endpoint;
pub mod lifecycle;
mod list;
mod reply;
mod request;
pub mod versions;
mod xml;

#[cfg(any(test, feature = "testing"))]
pub mod model;

pub use config::{S3Bucket, PROFILE};
pub use endpoint::{described, not_the_store, Endpoint, NOT_THE_STORE_HEADER};
pub use list::*;
pub use reply::{S3Response, UNREADABLE_HEADER};
pub use request::*;
pub use xml::{error_body, xml_escape, xml_text};

pub use versions::{parse_versions, versions_request, ListedVersion, VersionMarker, VersionsPage};

/// The header that carries the SHA-256 of the body, signed with the request.
pub const PAYLOAD_HASH: &str = "x-amz-content-sha256";

/// An MD5 (base64, as `Content-MD5` carries one) the body does not have,
/// for a declared SHA-256 (`PAYLOAD_HASH`) the body does not have: its
/// first 16 bytes. (Equal to the body's MD5 only by a 2^-128 chance.)
/// `None` when the declared hash is the body's. How a store that checks a
/// body's MD5 rather than its SHA-256 carries the preflight's probe.
pub fn wrong_digest(declared: &str, body: &[u8]) -> Option<String> {
    if declared.eq_ignore_ascii_case(&sigv4::sha256_hex(body)) {
        return None;
    }
    let bytes: Vec<u8> = declared
        .as_bytes()
        .chunks(2)
        .take(16)
        .map(|pair| {
            let text = core::str::from_utf8(pair).unwrap_or("00");
            u8::from_str_radix(text, 16).unwrap_or(0xff)
        })
        .collect();
    Some(crate::base64::encode(&bytes))
}

fn is_conditional_write(req: &S3Request) -> bool {
    matches!(req.method, Method::Put | Method::Delete)
        && req
            .headers
            .iter()
            .any(|(k, _)| k == "if-match" || k == "if-none-match")
}

/// Signs `req` for `bucket`, as `config` reaches it, at `unix_seconds`.
pub fn prepare(
    config: Reach<'_>,
    bucket: &S3Bucket,
    req: &S3Request,
    unix_seconds: u64,
) -> HttpRequest {
    let (authority, mut path) = match bucket.addressing {
        Addressing::Path => (
            config.endpoint_authority.to_string(),
            format!("/{}", sigv4::uri_encode(&bucket.bucket, true)),
        ),
        Addressing::VirtualHosted => (
            format!("{}.{}", bucket.bucket, config.endpoint_authority),
            String::new(),
        ),
    };
    if !req.object_key.is_empty() || path.is_empty() {
        path.push('/');
        path.push_str(&sigv4::uri_encode(&req.object_key, false));
    }

    // A request may declare its own payload hash: the preflight sends a
    // wrong one on purpose, to see whether the store checks it.
    let mut headers = req.headers.clone();
    let payload_hash = match req.headers.iter().find(|(k, _)| k == PAYLOAD_HASH) {
        Some((_, declared)) => declared.clone(),
        None => {
            let hash = sigv4::sha256_hex(&req.body);
            headers.push((PAYLOAD_HASH.into(), hash.clone()));
            hash
        }
    };
    // What the endpoint's dialect needs on a conditional write (`dialects`).
    let dialect = dialects::of_host(config.endpoint_authority);
    if let Some((name, value)) = dialect.and_then(|d| d.conditional_write_header) {
        if is_conditional_write(req) {
            headers.push((name.into(), value.into()));
        }
    }
    let signing = SigningRequest {
        method: req.method.as_str(),
        host: &authority,
        path: &path,
        query: &req.query,
        headers: &headers,
        payload_sha256_hex: &payload_hash,
    };
    let scope = Scope {
        region: &bucket.region,
        service: "s3",
        unix_seconds,
    };
    headers.extend(sigv4::sign(&signing, &bucket.credentials, scope));
    // Unsigned: hosts may rewrite it, and S3 needs it on every PUT.
    if req.method == Method::Put || !req.body.is_empty() {
        headers.push(("content-length".into(), req.body.len().to_string()));
    }

    let query = sigv4::canonical_query(&req.query);
    http_request(config, req, authority, path, &query, headers)
}

/// The request that sends `req` as `config` reaches its store: to
/// `authority`, at `path` with `query` (encoded), with `headers`, and the
/// body as it is.
pub fn http_request(
    config: Reach<'_>,
    req: &S3Request,
    authority: String,
    path: String,
    query: &str,
    headers: Vec<(String, String)>,
) -> HttpRequest {
    let path_and_query = if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    };
    HttpRequest {
        method: req.method,
        scheme: config.scheme,
        authority,
        path_and_query,
        headers,
        body: req.body.clone(),
        timeout_ms: timeout_ms(config, req),
        max_response_bytes: req.max_response_bytes,
    }
}

/// The bound on one request: the configured timeout, or the request's own
/// tighter one (`within_ms`, an elector's time left to its deadline).
pub fn timeout_ms(config: Reach<'_>, req: &S3Request) -> u32 {
    req.within_ms.map_or(config.request_timeout_ms, |w| {
        w.min(config.request_timeout_ms)
    })
}

#[cfg(test)]
mod tests;

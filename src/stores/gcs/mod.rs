//! Google Cloud Storage as the store: the single-object protocol, spoken
//! to a bucket through GCS's JSON API.
//!
//! GCS's S3-compatible XML API ignores `If-Match` and `If-None-Match` on
//! writes, so a lock cannot rest on it. Its JSON API has what
//! single-object needs under other names: every write of an object gets a
//! new *generation* (a number), and an upload or delete with
//! `ifGenerationMatch=<g>` applies only while the object's generation is
//! `g` (`0`: while there is none), evaluated atomically; a refused one is
//! 412. So the generation is the protocol's ETag:
//!
//! | request the protocol emits | GCS JSON API |
//! |---|---|
//! | GET (`If-None-Match: g`) | `GET /storage/v1/b/<bucket>/o/<key>?alt=media&ifGenerationNotMatch=g` (the media, its generation in `X-Goog-Generation`) |
//! | HEAD | `GET /storage/v1/b/<bucket>/o/<key>` (the object's JSON resource) |
//! | PUT (`If-None-Match: *` / `If-Match: g`) | `POST /upload/storage/v1/b/<bucket>/o?uploadType=multipart&ifGenerationMatch=0` / `=g`: the resource's JSON, then the media |
//! | DELETE (`If-Match: g`) | `DELETE /storage/v1/b/<bucket>/o/<key>?ifGenerationMatch=g` |
//! | LIST (ListObjectsV2) | `GET /storage/v1/b/<bucket>/o?prefix=…&maxResults=…&pageToken=…&startOffset=…` |
//! | GET `?lifecycle` (the preflight) | `GET /storage/v1/b/<bucket>?fields=lifecycle` (the bucket's lifecycle rules, as JSON) |
//! | `x-amz-meta-s3lease-token` (fenced writes) | the object's metadata `s3lease-token` (`X-Goog-Meta-S3lease-Token` on a media GET) |
//! | a declared `x-amz-content-sha256` that is not the body's (the preflight's probe) | an `md5Hash` that is not the media's |
//!
//! authorized by a bearer token, or by nothing (an emulator). Replies come
//! back in the S3 shapes the protocol reads (see `reply`): the generation
//! as a quoted ETag, the `updated` time as `Last-Modified`.
//!
//! As on every store whose ETags are not hashes, a generation names exactly one write (equal bytes written
//! twice get two), so the fenced writes' equal-bytes limit does not arise.
//! GCS takes about one write per second per object: `config` refuses a
//! ttl or an elector retry period that would write faster.

use crate::prelude::*;

mod config;
pub mod lifecycle;
mod reply;

#[cfg(any(test, feature = "testing"))]
pub mod model;

#[cfg(test)]
mod tests;

pub use config::{GcsBucket, GcsCredential, GCS_MIN_RETRY_PERIOD_MS, GCS_MIN_TTL_MS, PROFILE};
pub use reply::read_reply;

use crate::json_out::JsonObject;
use crate::sigv4;
use crate::stores::s3::{HttpRequest, Method, S3Request, PAYLOAD_HASH};
use crate::stores::Reach;

/// S3's metadata prefix, as the protocol names its headers.
pub const S3_META: &str = "x-amz-meta-";
/// GCS's, on a media GET's reply.
pub const GCS_META: &str = "x-goog-meta-";
/// The generation of the object a media GET returned.
pub const GENERATION_HEADER: &str = "x-goog-generation";

/// A generation no object has: what a condition that names no generation
/// (an ETag this client never got from GCS, such as the preflight's wrong
/// one) becomes. GCS's generations are microsecond write times, so the
/// largest int64 is one in the year 294247; sending the ETag as it is
/// would be refused as malformed (400) rather than compared.
pub const NO_GENERATION: &str = "9223372036854775807";

/// The generation an ETag names: `"123"` or `123` → `123`.
pub fn generation_of(etag: &str) -> &str {
    let bare = etag.trim().trim_matches('"');
    let decimal = !bare.is_empty() && bare.len() <= 19 && bare.bytes().all(|b| b.is_ascii_digit());
    if decimal && bare.parse::<i64>().is_ok() {
        bare
    } else {
        NO_GENERATION
    }
}

/// The ETag the protocol is given for a generation: quoted, as S3's are.
pub fn etag_of(generation: &str) -> String {
    format!("\"{generation}\"")
}

/// An S3 metadata header's name as a GCS metadata key:
/// `x-amz-meta-s3lease-token` → `s3lease-token`.
pub fn gcs_metadata_key(s3_name: &str) -> Option<String> {
    let lower = s3_name.to_ascii_lowercase();
    lower.strip_prefix(S3_META).map(str::to_string)
}

/// The S3 metadata header of a GCS metadata key (or `X-Goog-Meta-*`
/// header name, in any case).
pub fn s3_metadata_name(gcs_key: &str) -> String {
    let lower = gcs_key.to_ascii_lowercase();
    let key = lower.strip_prefix(GCS_META).unwrap_or(&lower);
    format!("{S3_META}{key}")
}

/// `/storage/v1/b/<bucket>/o`, the bucket's objects.
fn objects_path(bucket: &GcsBucket) -> String {
    format!(
        "/storage/v1/b/{}/o",
        sigv4::uri_encode(&bucket.bucket, true)
    )
}

/// `/storage/v1/b/<bucket>/o/<key>`: the key is one path segment, its
/// slashes encoded.
pub fn object_path(bucket: &GcsBucket, object_key: &str) -> String {
    format!(
        "{}/{}",
        objects_path(bucket),
        sigv4::uri_encode(object_key, true)
    )
}

fn header<'a>(req: &'a S3Request, name: &str) -> Option<&'a str> {
    req.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Whether `req` is a ListObjectsV2 of the bucket.
pub fn is_list(req: &S3Request) -> bool {
    req.object_key.is_empty() && req.query.iter().any(|(k, _)| k == "list-type")
}

/// Whether `req` reads the bucket's lifecycle rules (S3's
/// GetBucketLifecycleConfiguration, the preflight's): on GCS, the bucket's
/// metadata, its `lifecycle` field.
pub fn is_lifecycle(req: &S3Request) -> bool {
    req.object_key.is_empty() && req.query.iter().any(|(k, _)| k == "lifecycle")
}

/// The request for `req` at `unix_seconds` (unused: GCS signs nothing
/// with the time; kept for the one shape every store's `prepare` has).
pub fn prepare(
    config: Reach<'_>,
    bucket: &GcsBucket,
    req: &S3Request,
    _unix_seconds: u64,
) -> HttpRequest {
    let mut headers = Vec::new();
    let mut query: Vec<(String, String)> = Vec::new();
    let mut body = Vec::new();
    let (method, path) = match req.method {
        Method::Get if is_list(req) => {
            for (name, value) in &req.query {
                let name = match name.as_str() {
                    "prefix" => "prefix",
                    "max-keys" => "maxResults",
                    "continuation-token" => "pageToken",
                    // Inclusive on GCS: `reply` leaves the key itself out.
                    "start-after" => "startOffset",
                    _ => continue,
                };
                query.push((name.into(), value.clone()));
            }
            (Method::Get, objects_path(bucket))
        }
        Method::Get if is_lifecycle(req) => {
            query.push(("fields".into(), "lifecycle".into()));
            (
                Method::Get,
                format!("/storage/v1/b/{}", sigv4::uri_encode(&bucket.bucket, true)),
            )
        }
        Method::Get | Method::Head => {
            if req.method == Method::Get {
                query.push(("alt".into(), "media".into()));
            }
            if let Some(etag) = header(req, "if-none-match") {
                query.push(("ifGenerationNotMatch".into(), generation_of(etag).into()));
            }
            if let Some(etag) = header(req, "if-match") {
                query.push(("ifGenerationMatch".into(), generation_of(etag).into()));
            }
            (Method::Get, object_path(bucket, &req.object_key))
        }
        Method::Put => {
            query.push(("uploadType".into(), "multipart".into()));
            if let Some(condition) = write_condition(req) {
                query.push(condition);
            }
            let (content_type, multipart) = multipart(req);
            headers.push(("content-type".into(), content_type));
            body = multipart;
            (
                Method::Post,
                format!(
                    "/upload/storage/v1/b/{}/o",
                    sigv4::uri_encode(&bucket.bucket, true)
                ),
            )
        }
        Method::Delete => {
            if let Some(condition) = write_condition(req) {
                query.push(condition);
            }
            (Method::Delete, object_path(bucket, &req.object_key))
        }
        // The protocol sends no POST to an object store.
        Method::Post => (Method::Post, object_path(bucket, &req.object_key)),
    };
    if method == Method::Post || method == Method::Delete || !body.is_empty() {
        headers.push(("content-length".into(), body.len().to_string()));
    }
    if let GcsCredential::Bearer(token) = &bucket.credential {
        headers.push(("authorization".into(), format!("Bearer {token}")));
    }
    let query = sigv4::canonical_query(&query);
    let authority = config.endpoint_authority.to_string();
    // The store's own method and body (a multipart upload) for the protocol's.
    HttpRequest {
        method,
        body,
        ..crate::stores::s3::http_request(config, req, authority, path, &query, headers)
    }
}

/// A write's precondition as a query parameter: `If-None-Match: *` is
/// generation 0 (no live object), `If-Match: g` generation `g`.
fn write_condition(req: &S3Request) -> Option<(String, String)> {
    if let Some(etag) = header(req, "if-match") {
        return Some(("ifGenerationMatch".into(), generation_of(etag).into()));
    }
    match header(req, "if-none-match") {
        Some(c) if c.trim() == "*" => Some(("ifGenerationMatch".into(), "0".into())),
        Some(etag) => Some(("ifGenerationNotMatch".into(), generation_of(etag).into())),
        None => None,
    }
}

/// A multipart upload's body and its `Content-Type`: the object's
/// resource as JSON (name, content type, metadata, and a wrong `md5Hash`
/// when the request declared a payload hash that is not its body's), then
/// the media.
fn multipart(req: &S3Request) -> (String, Vec<u8>) {
    let content_type = header(req, "content-type").unwrap_or("application/octet-stream");
    let mut metadata = JsonObject::default();
    let mut any_metadata = false;
    let mut wrong_md5 = None;
    for (name, value) in &req.headers {
        if let Some(key) = gcs_metadata_key(name) {
            metadata.str(&key, value);
            any_metadata = true;
        } else if name.eq_ignore_ascii_case(PAYLOAD_HASH) {
            wrong_md5 = crate::stores::s3::wrong_digest(value, &req.body);
        }
    }
    // Fields in sorted order, as `JsonObject` expects of its callers.
    let mut resource = JsonObject::default();
    resource.str("contentType", content_type);
    if let Some(md5) = &wrong_md5 {
        resource.str("md5Hash", md5);
    }
    if any_metadata {
        resource.raw("metadata", &metadata.finish());
    }
    resource.str("name", &req.object_key);
    let resource = resource.finish();
    let boundary = boundary_for(&[&req.body, &resource]);
    let mut body = Vec::with_capacity(req.body.len() + resource.len() + 256);
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n").as_bytes(),
    );
    body.extend_from_slice(&resource);
    body.extend_from_slice(
        format!("\r\n--{boundary}\r\nContent-Type: {content_type}\r\n\r\n").as_bytes(),
    );
    body.extend_from_slice(&req.body);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/related; boundary={boundary}"), body)
}

/// A multipart boundary that occurs in no part (a fenced object's bytes
/// and a key are the caller's): a fixed one, numbered on until its
/// delimiter is in none.
fn boundary_for(parts: &[&[u8]]) -> String {
    let mut n = 0u32;
    loop {
        let boundary = format!("s3-lease-part-{n}");
        let delimiter = format!("--{boundary}");
        let found = parts.iter().any(|part| {
            part.windows(delimiter.len())
                .any(|w| w == delimiter.as_bytes())
        });
        if !found {
            return boundary;
        }
        n += 1;
    }
}

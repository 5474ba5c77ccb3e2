//! GCS's replies read back into the S3 shapes the protocol reads.
//!
//! Successes come as S3's: a media GET with its generation as the ETag
//! (GCS's own `ETag` is a hash of the bytes, and no condition names it),
//! its `X-Goog-Meta-*` as `x-amz-meta-*`; an object's JSON resource (the
//! reply to an upload, or to the metadata GET a HEAD becomes) as headers
//! alone: the generation as the ETag, `updated` as `Last-Modified`, the
//! metadata; a listing's JSON as a ListObjectsV2 `<ListBucketResult>`.
//! Errors (`{"error":{"code":…,"message":…,"errors":[{"reason":…}]}}`, or
//! a media GET's plain-text 404) become an S3 error body under the status
//! that means the same to the protocol:
//!
//! - 412 (`conditionNotMet`) stays 412, code `PreconditionFailed`: a lost
//!   race, or a stale generation.
//! - 404 is `NoSuchKey`, or `NoSuchBucket` when it says the bucket does
//!   not exist, or answers an upload or a listing (which need no object).
//! - 401 (a missing, expired or wrong token) is `InvalidToken` under 403:
//!   a new token may fix it, and the host fetches one and sends the call
//!   again, as for AWS's `ExpiredToken`; 403 (a token without the right
//!   to the bucket) is `AccessDenied`.
//! - 429 (`rateLimitExceeded`: more than about one write a second to an
//!   object) stays 429, which the driver sends again; 5xx stay as they are.
//!
//! Messages keep their first line; the request id is
//! `x-guploader-uploadid` when GCS sends one.

use crate::prelude::*;

use super::{etag_of, is_list, s3_metadata_name, GCS_META, GENERATION_HEADER, S3_META};
use crate::stores::s3::{Method, S3Request, S3Response, NOT_THE_STORE_HEADER, UNREADABLE_HEADER};
use serde_json::{Map, Value};

/// GCS's request id header (lowercased, as replies' headers are).
const REQUEST_ID: &str = "x-guploader-uploadid";

/// The S3 reply `req` would have had, from GCS's reply `r` to it.
pub fn read_reply(req: &S3Request, r: S3Response) -> S3Response {
    let mut headers = Vec::with_capacity(r.headers.len());
    for (name, value) in r.headers {
        let lower = name.to_ascii_lowercase();
        // Only GCS's metadata counts; its `ETag` is an MD5 no condition
        // names (the generation is ours); and the translations' own
        // headers mean nothing from a server.
        if lower.starts_with(S3_META)
            || lower == "etag"
            || lower == UNREADABLE_HEADER
            || lower == NOT_THE_STORE_HEADER
        {
            continue;
        }
        if lower.starts_with(GCS_META) {
            headers.push((s3_metadata_name(&lower), value));
        } else {
            headers.push((lower, value));
        }
    }
    let json = if r.body_too_large.is_none() {
        match serde_json::from_slice::<Value>(&r.body) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        }
    } else {
        None
    };
    let mut r = S3Response { headers, ..r };
    if let Some(what) = not_gcs(req, &r, json.as_ref()) {
        // As it came, marked: the driver ends the operation on it.
        r.headers.push((NOT_THE_STORE_HEADER.into(), what));
        return r;
    }
    if r.status >= 400 {
        return error_reply(req, r, json.as_ref());
    }
    match (req.method, r.status) {
        (Method::Get, 200) if is_list(req) => list_reply(req, r, json.as_ref()),
        (Method::Get, _) => with_generation_etag(r),
        (Method::Head | Method::Put, 200) => match &json {
            Some(resource) => resource_reply(r, resource, req.method == Method::Put),
            None => r,
        },
        _ => r,
    }
}

/// A media GET's reply (or its 304) with the generation as the ETag.
fn with_generation_etag(mut r: S3Response) -> S3Response {
    if let Some(generation) = r.header(GENERATION_HEADER).map(str::to_string) {
        r.headers.push(("etag".into(), etag_of(generation.trim())));
    }
    r
}

/// The JSON resource of an object, as the headers of a HEAD's or PUT's
/// reply: the generation as the ETag, `updated` as `Last-Modified`, the
/// metadata as `x-amz-meta-*` (a HEAD's), the size and content type.
fn resource_reply(mut r: S3Response, resource: &Map<String, Value>, write: bool) -> S3Response {
    let text = |name: &str| resource.get(name).and_then(Value::as_str);
    if let Some(generation) = text("generation") {
        r.headers.push(("etag".into(), etag_of(generation)));
    }
    if let Some(ms) = text("updated").and_then(crate::http_date::parse_rfc3339_ms) {
        r.headers
            .push(("last-modified".into(), crate::http_date::format(ms / 1000)));
    }
    if !write {
        if let Some(Value::Object(metadata)) = resource.get("metadata") {
            for (key, value) in metadata {
                if let Some(value) = value.as_str() {
                    r.headers.push((s3_metadata_name(key), value.to_string()));
                }
            }
        }
        if let Some(content_type) = text("contentType") {
            r.headers
                .retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
            r.headers
                .push(("content-type".into(), content_type.to_string()));
        }
    }
    // S3 answers a write, and a HEAD, with headers alone.
    r.body.clear();
    r.headers.retain(|(k, _)| k != "content-length");
    r
}

/// A listing's JSON (`{"items":[{"name":…}],"nextPageToken":…}`) as
/// ListObjectsV2's XML. GCS's `startOffset` is inclusive and S3's
/// `start-after` is not: the key itself is left out.
fn list_reply(req: &S3Request, mut r: S3Response, json: Option<&Map<String, Value>>) -> S3Response {
    let Some(listing) = json else {
        return r;
    };
    let after = req
        .query
        .iter()
        .find(|(k, _)| k == "start-after")
        .map(|(_, v)| v.as_str());
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
    );
    let mut count = 0;
    if let Some(Value::Array(items)) = listing.get("items") {
        for item in items {
            let Some(name) = item.get("name").and_then(Value::as_str) else {
                continue;
            };
            if Some(name) == after {
                continue;
            }
            count += 1;
            xml.push_str("<Contents><Key>");
            xml.push_str(&crate::stores::s3::xml_escape(name));
            xml.push_str("</Key>");
            if let Some(generation) = item.get("generation").and_then(Value::as_str) {
                xml.push_str("<ETag>");
                xml.push_str(&crate::stores::s3::xml_escape(&etag_of(generation)));
                xml.push_str("</ETag>");
            }
            xml.push_str("</Contents>");
        }
    }
    let next = listing
        .get("nextPageToken")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty());
    xml.push_str(&format!("<KeyCount>{count}</KeyCount>"));
    xml.push_str(&format!("<IsTruncated>{}</IsTruncated>", next.is_some()));
    if let Some(token) = next {
        xml.push_str("<NextContinuationToken>");
        xml.push_str(&crate::stores::s3::xml_escape(token));
        xml.push_str("</NextContinuationToken>");
    }
    xml.push_str("</ListBucketResult>");
    r.body = xml.into_bytes();
    r.headers
        .retain(|(k, _)| k != "content-length" && k != "content-type");
    r.headers
        .push(("content-type".into(), "application/xml".into()));
    r
}

/// What a reply has that no GCS JSON API reply has, when it shows the
/// endpoint is not GCS's (`s3::not_the_store`): GCS answers an error with
/// a JSON `error` object (a media GET's 404 with a line of plain text), a
/// media GET with the object's `X-Goog-Generation`, an upload, a
/// metadata GET and a listing with a JSON object. Other statuses (403,
/// 412, 429, 5xx, a proxy's 502) are read as they are; a body too large
/// to read is not judged by its body.
/// A media GET's plain-text 404 as GCS words it (`No such object: b/k`, a
/// missing bucket's `The specified bucket does not exist.`) or
/// fake-gcs-server does (`Not Found`). Narrow on purpose: any web server
/// answers text to a path it lacks (Go's `404 page not found`, a SeaweedFS
/// filer's or master's port), and taking that for a missing lock would let
/// `status` report a key as never locked from a server that is not GCS.
fn is_gcs_media_404(text: &str) -> bool {
    let line = text.trim();
    line.starts_with("No such object")
        || line.starts_with("No such bucket")
        || line.contains("bucket does not exist")
        || line == "Not Found"
}

fn not_gcs(req: &S3Request, r: &S3Response, json: Option<&Map<String, Value>>) -> Option<String> {
    let has = |name: &str| r.header(name).is_some();
    let status = r.status;
    let target = crate::stores::s3::described(req);
    let readable = r.body_too_large.is_none();
    let media_get = req.method == Method::Get && !is_list(req) && !super::is_lifecycle(req);
    if status == 404 && readable {
        let json_error = json.is_some_and(|j| j.get("error").is_some_and(Value::is_object));
        let text = String::from_utf8_lossy(&r.body);
        let gcs_404 = json_error || (media_get && is_gcs_media_404(&text));
        if !gcs_404 {
            return Some(format!(
                "{target} with 404 and no GCS error (GCS sends a JSON error object, \
                 or for a media GET a line of text such as \"No such object\")"
            ));
        }
    }
    if !(200..300).contains(&status) {
        return None;
    }
    match req.method {
        Method::Get if media_get && !has(GENERATION_HEADER) => Some(format!(
            "{target} with {status} and no X-Goog-Generation (GCS sends every object's generation)"
        )),
        Method::Put if status != 200 => Some(format!(
            "{target} with {status} (GCS answers an upload with 200 and the object's JSON resource)"
        )),
        Method::Put | Method::Head
            if readable && json.is_none_or(|j| j.get("generation").is_none()) =>
        {
            Some(format!(
                "{target} with {status} and no JSON object resource with a generation \
                 (what GCS answers {})",
                if req.method == Method::Put {
                    "an upload with"
                } else {
                    "a metadata GET with"
                }
            ))
        }
        Method::Get if !media_get && readable && json.is_none() => Some(format!(
            "{target} with {status} and no JSON listing (what GCS lists objects in)"
        )),
        _ => None,
    }
}

fn error_reply(req: &S3Request, r: S3Response, json: Option<&Map<String, Value>>) -> S3Response {
    let error = json.and_then(|j| j.get("error"));
    let (reason, message) = match error {
        Some(e) => {
            let reason = e
                .get("errors")
                .and_then(Value::as_array)
                .and_then(|errors| errors.first())
                .and_then(|first| first.get("reason"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let message = e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            (reason, message)
        }
        // A media GET's 404, or a page from something in between.
        None => (String::new(), String::from_utf8_lossy(&r.body).into_owned()),
    };
    if error.is_none() && !matches!(r.status, 401 | 403 | 404) {
        // Not GCS's (a proxy's page, an empty 5xx): as it came.
        return r;
    }
    let message = message
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .chars()
        .take(200)
        .collect::<String>();
    // An upload or a listing needs only the bucket: their 404 is its
    // (fake-gcs-server says no more than "Not Found"); on an object, GCS
    // says when it is the bucket that is missing.
    let lower = message.to_ascii_lowercase();
    let missing_bucket = req.method == Method::Put
        || is_list(req)
        || lower.contains("bucket does not exist")
        || lower.starts_with("no such bucket");
    let (status, code) = match r.status {
        412 => (412, "PreconditionFailed".to_string()),
        404 if missing_bucket => (404, "NoSuchBucket".to_string()),
        404 => (404, "NoSuchKey".to_string()),
        401 => (403, "InvalidToken".to_string()),
        403 => (403, "AccessDenied".to_string()),
        429 => (429, "SlowDown".to_string()),
        status if !reason.is_empty() => (status, reason),
        status => (status, format!("Http{status}")),
    };
    let request_id = r.header(REQUEST_ID).unwrap_or_default().to_string();
    let body = crate::stores::s3::error_body(&code, &message, &request_id);
    let mut headers = r.headers;
    headers.retain(|(k, _)| k != "content-length" && k != "content-type");
    headers.push(("content-type".into(), "application/xml".into()));
    S3Response {
        status,
        headers,
        body,
        body_too_large: None,
    }
}

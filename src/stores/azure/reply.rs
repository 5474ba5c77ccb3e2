//! Azure's replies read back into the S3 shapes the protocol reads.
//!
//! Successes come as S3's (Put Blob's 201 as PutObject's 200, Delete
//! Blob's 202 as DeleteObject's 204), with the blob's `x-ms-meta-*` as the
//! `x-amz-meta-*` the fenced writes read. Errors (`<Error><Code>…</Code><Message>…</Message></Error>`,
//! or for a HEAD only the `x-ms-error-code` header; the request id in
//! `x-ms-request-id`) become an S3 error body with the same code, under the
//! status that means the same to the protocol:
//!
//! - 409 `BlobAlreadyExists` → 412: `If-None-Match: *` met a blob, the
//!   create lost (S3 answers 412 there, and 409 means "try again").
//! - 412 `ConditionNotMet` stays 412; 404 `BlobNotFound` stays 404.
//! - 404 `ContainerNotFound` is `no-such-bucket`.
//! - 403 `AuthenticationFailed` whose detail says the request's date was
//!   too old or in the future → `RequestTimeTooSkewed`, so the driver signs
//!   again on the server's clock; any other 403 is `access-denied`.
//! - anything else keeps its status (5xx stay ambiguous for writes; 503
//!   `ServerBusy` and 500 `OperationTimedOut` may or may not have applied).
//!
//! Messages keep their first line: Azure adds the request id and time, and
//! an authentication error's detail (the string it signed) is never kept.

use crate::prelude::*;

use super::{s3_metadata_name, S3_META};
use crate::stores::s3::{
    xml_text, Method, S3Request, S3Response, NOT_THE_STORE_HEADER, UNREADABLE_HEADER,
};

/// Azure's request id header (lowercased, as replies' headers are).
const REQUEST_ID: &str = "x-ms-request-id";
/// The error code of every error reply, HEAD's included.
const ERROR_CODE: &str = "x-ms-error-code";

/// The S3 reply `req` would have had, from Azure's reply `r` to it.
pub fn read_reply(req: &S3Request, r: S3Response) -> S3Response {
    let mut headers = Vec::with_capacity(r.headers.len());
    for (name, value) in r.headers {
        // Only Azure's metadata counts, and the translations' own
        // header means nothing from a server.
        if name.starts_with(S3_META)
            || name.eq_ignore_ascii_case(UNREADABLE_HEADER)
            || name.eq_ignore_ascii_case(NOT_THE_STORE_HEADER)
        {
            continue;
        }
        match s3_metadata_name(&name) {
            Some(s3) => headers.push((s3, value)),
            None => headers.push((name, value)),
        }
    }
    if let Some(what) = not_azure(req, &headers, r.status, &r.body) {
        // As it came, marked: the driver ends the operation on it.
        headers.push((NOT_THE_STORE_HEADER.into(), what));
        return S3Response { headers, ..r };
    }
    let status = match (req.method, r.status) {
        (Method::Put, 201) => 200,
        (Method::Delete, 202) => 204,
        (_, status) => status,
    };
    let r = S3Response {
        status,
        headers,
        ..r
    };
    if r.status < 400 {
        return r;
    }
    error_reply(r)
}

/// What a reply has that no Blob service reply has, when it shows the
/// endpoint is not Azure's (`s3::not_the_store`): Azure sends its request
/// id on every reply, and an error code on every error, a 404 included
/// (`x-ms-error-code`, HEAD's too). Other statuses (403, 409, 412, 5xx, a
/// proxy's 502) are read as they are.
fn not_azure(
    req: &S3Request,
    headers: &[(String, String)],
    status: u16,
    body: &[u8],
) -> Option<String> {
    let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let target = crate::stores::s3::described(req);
    if status == 404 && !has(ERROR_CODE) {
        let body = String::from_utf8_lossy(body);
        if xml_text(&body, "Code").is_none_or(|c| c.is_empty()) {
            return Some(format!(
                "{target} with 404 and no Azure error code (Azure sends x-ms-error-code, \
                 such as BlobNotFound)"
            ));
        }
    }
    if (200..300).contains(&status) && !has(REQUEST_ID) {
        return Some(format!(
            "{target} with {status} and no x-ms-request-id (Azure sends one on every reply)"
        ));
    }
    None
}

fn error_reply(r: S3Response) -> S3Response {
    let body = String::from_utf8_lossy(&r.body);
    let code = xml_text(&body, "Code")
        .or_else(|| r.header(ERROR_CODE).map(str::to_string))
        .unwrap_or_default();
    let message = xml_text(&body, "Message").unwrap_or_default();
    let message = message
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let detail = xml_text(&body, "AuthenticationErrorDetail").unwrap_or_default();
    let (status, code) = match (r.status, code.as_str()) {
        (409, "BlobAlreadyExists") => (412, code),
        (403, "AuthenticationFailed") if detail.contains("Request date header") => {
            (403, "RequestTimeTooSkewed".to_string())
        }
        (status, _) => (status, code),
    };
    if code.is_empty() && message.is_empty() {
        // Not Azure's (a proxy's page, an empty 5xx): as it came.
        return r;
    }
    let request_id = r.header(REQUEST_ID).unwrap_or_default().to_string();
    let body = crate::stores::s3::error_body(&code, &message, &request_id);
    S3Response {
        status,
        headers: r.headers,
        body,
        body_too_large: None,
    }
}

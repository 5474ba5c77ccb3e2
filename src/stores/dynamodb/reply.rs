//! DynamoDB's replies read back into the S3 shapes the protocol reads.
//!
//! Errors (`{"__type": "...#Name", "message": "..."}` with the request id
//! in `x-amzn-RequestId`) become an S3 error body with the same code,
//! message and request id, under the status that means the same to the
//! protocol:
//!
//! - `ConditionalCheckFailedException` → 412: the condition failed.
//! - `TransactionConflictException` → 409: re-read and decide again.
//! - throttling (`ProvisionedThroughputExceededException`,
//!   `ThrottlingException`, `RequestLimitExceeded`) → 429: refused, not
//!   applied; the driver retries it with backoff.
//! - `ResourceNotFoundException` → 404 `no-such-bucket`: no such table.
//! - refused credentials or signatures → 403 `access-denied`; an expired
//!   signature (our clock is off) → 403 `RequestTimeTooSkewed`.
//! - anything else keeps its status (5xx stay ambiguous for writes).

use crate::prelude::*;

use super::{decode_item, version_of, TARGET_HEADER};
use crate::stores::s3::{Method, S3Request, S3Response, NOT_THE_STORE_HEADER, UNREADABLE_HEADER};
use serde_json::Value;

/// DynamoDB's request id header (lowercased, as replies' headers are).
const REQUEST_ID: &str = "x-amzn-requestid";

/// Throttling: refused before anything was applied.
pub const THROTTLING_CODES: [&str; 3] = [
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
];

/// The S3 reply `req` would have had, from DynamoDB's reply `r` to its
/// translation.
pub fn read_reply(req: &S3Request, mut r: S3Response) -> S3Response {
    r.headers
        .retain(|(k, _)| !k.eq_ignore_ascii_case(NOT_THE_STORE_HEADER));
    if let Some(what) = not_dynamodb(req, &r) {
        // As it came, marked: the driver ends the operation on it.
        r.headers.push((NOT_THE_STORE_HEADER.into(), what));
        return r;
    }
    if r.status != 200 {
        return error_reply(r);
    }
    if r.body_too_large.is_some() {
        return r;
    }
    match req.method {
        Method::Post => r,
        Method::Put => S3Response {
            status: 200,
            headers: with_etag(r.headers, &version_of(&req.body)),
            body: Vec::new(),
            body_too_large: None,
        },
        Method::Delete => S3Response {
            status: 204,
            body: Vec::new(),
            ..r
        },
        Method::Get | Method::Head => item_reply(req, r),
    }
}

/// What `r` has that no DynamoDB reply has, when it shows the endpoint is
/// not DynamoDB (`s3::not_the_store`): DynamoDB answers 200 with a JSON
/// object and its request id, and never 404 (a missing table is a 400
/// with a `__type`). Other statuses (400, 403, 5xx, a proxy's 502) are
/// read as they are.
fn not_dynamodb(req: &S3Request, r: &S3Response) -> Option<String> {
    let target = crate::stores::s3::described(req);
    let status = r.status;
    if status == 404 && dynamodb_error(&r.body).is_none() {
        return Some(format!(
            "{target} with 404 and no DynamoDB error (DynamoDB answers JSON \
             with a __type, never 404)"
        ));
    }
    if !(200..300).contains(&status) {
        return None;
    }
    if status != 200 {
        return Some(format!("{target} with {status} (DynamoDB answers 200)"));
    }
    if r.header(REQUEST_ID).is_none() {
        return Some(format!(
            "{target} with 200 and no x-amzn-RequestId (DynamoDB sends one on every reply)"
        ));
    }
    let json = serde_json::from_slice::<Value>(&r.body);
    if r.body_too_large.is_none() && !matches!(json, Ok(Value::Object(_))) {
        return Some(format!(
            "{target} with 200 and a body that is not a JSON object (DynamoDB's always is)"
        ));
    }
    None
}

fn item_reply(req: &S3Request, r: S3Response) -> S3Response {
    let parsed: Result<Value, _> = serde_json::from_slice(&r.body);
    let Ok(Value::Object(reply)) = parsed else {
        return synthesized(
            r,
            502,
            "InvalidReply",
            "the GetItem reply is not a JSON object",
        );
    };
    let Some(item) = reply.get("Item") else {
        return synthesized(r, 404, "NoSuchKey", "no item for this key");
    };
    let Value::Object(item) = item else {
        return synthesized(
            r,
            502,
            "InvalidReply",
            "the GetItem reply's Item is not an object",
        );
    };
    match decode_item(item) {
        Ok((version, body)) => {
            let unchanged = req
                .headers
                .iter()
                .any(|(k, v)| k == "if-none-match" && *v == version);
            let headers = with_etag(r.headers, &version);
            if unchanged {
                S3Response {
                    status: 304,
                    headers,
                    body: Vec::new(),
                    body_too_large: None,
                }
            } else {
                S3Response {
                    status: 200,
                    headers,
                    body: if req.method == Method::Head {
                        Vec::new()
                    } else {
                        body
                    },
                    body_too_large: None,
                }
            }
        }
        // The protocol reports it as `corrupt-lock-object`, for this key.
        Err(reason) => {
            let mut headers = r.headers;
            headers.push((
                UNREADABLE_HEADER.into(),
                format!("the DynamoDB item is not a lock: {reason}"),
            ));
            S3Response {
                status: 200,
                headers,
                body: Vec::new(),
                body_too_large: None,
            }
        }
    }
}

fn with_etag(mut headers: Vec<(String, String)>, version: &str) -> Vec<(String, String)> {
    // Ours to set, never the server's.
    headers.retain(|(k, _)| k != "etag" && !k.eq_ignore_ascii_case(UNREADABLE_HEADER));
    headers.push(("etag".into(), version.into()));
    headers
}

/// DynamoDB's error `{"__type": "com.amazonaws.dynamodb.v20120810#Name",
/// "message": "..."}`: the name after `#`, and the message (`Message` in
/// some errors).
fn dynamodb_error(body: &[u8]) -> Option<(String, String)> {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    let kind = map.get("__type").and_then(Value::as_str)?;
    let code = kind.rsplit('#').next().unwrap_or(kind).to_string();
    let message = map
        .get("message")
        .or_else(|| map.get("Message"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some((code, first_paragraph(message)))
}

/// The message up to its first blank line. DynamoDB's signature errors go
/// on with the canonical request it expected, which holds every signed
/// header's value, the session token among them: never kept.
fn first_paragraph(message: &str) -> String {
    let cut = message
        .find("\n\n")
        .or_else(|| message.find("The Canonical String"))
        .unwrap_or(message.len());
    message[..cut].trim_end().to_string()
}

fn error_reply(r: S3Response) -> S3Response {
    let Some((code, message)) = dynamodb_error(&r.body) else {
        // Not DynamoDB's JSON (a proxy's page, an empty 5xx): as it came.
        return r;
    };
    let status = match code.as_str() {
        "ConditionalCheckFailedException" => 412,
        "TransactionConflictException" => 409,
        c if THROTTLING_CODES.contains(&c) => 429,
        "ResourceNotFoundException" => 404,
        "InvalidSignatureException" if message.contains("Signature expired") => {
            return synthesized(r, 403, "RequestTimeTooSkewed", &message);
        }
        "AccessDeniedException"
        | "UnrecognizedClientException"
        | "InvalidSignatureException"
        | "IncompleteSignatureException"
        | "MissingAuthenticationTokenException"
        | "ExpiredTokenException" => 403,
        _ => r.status,
    };
    synthesized(r, status, &code, &message)
}

/// A reply with an S3 error body: what `S3Response::s3_error` reads.
fn synthesized(r: S3Response, status: u16, code: &str, message: &str) -> S3Response {
    let request_id = r.header(REQUEST_ID).unwrap_or_default().to_string();
    let body = crate::stores::s3::error_body(code, message, &request_id);
    let mut headers = r.headers;
    headers.retain(|(k, _)| k != TARGET_HEADER);
    S3Response {
        status,
        headers,
        body,
        body_too_large: None,
    }
}

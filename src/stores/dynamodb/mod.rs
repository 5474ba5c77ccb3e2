//! DynamoDB as the store: the single-object protocol, spoken to a table.
//!
//! The single-object strategy needs a register with compare-and-swap: read
//! it with its version, write it only if it is absent or still at the
//! version read. A DynamoDB item keyed by `key` is exactly that, so the
//! strategy's requests are translated here rather than written twice:
//!
//! | S3 request the protocol emits | DynamoDB call (JSON 1.0, SigV4 `dynamodb`) |
//! |---|---|
//! | GET (`If-None-Match: v`) | GetItem, `ConsistentRead` (a 304 when the version is `v`) |
//! | PUT `If-None-Match: *` | PutItem, `attribute_not_exists(key)` |
//! | PUT `If-Match: v` | PutItem, `lease_version = v` (and `token = t` with `S3Request::if_token`) |
//! | DELETE `If-Match: v` | DeleteItem, `lease_version = v` |
//! | POST with `x-amz-target` | that call, its body as given (the preflight's table checks) |
//!
//! and the replies back into the S3 shapes the protocol reads: the item's
//! version as the ETag, `ConditionalCheckFailedException` as 412, throttling
//! as 429, a missing table as `no-such-bucket` (see `reply`). Every
//! guarantee of single-object holds unchanged: the token is a counter in
//! the item, release keeps the item (so tokens never restart), a write
//! whose reply was lost is recognised by its write id.
//!
//! The item keeps the dynamodb-lease design's `key` and `lease_version` and adds `token`,
//! `holder` and `lease_body`, the lock object itself (see `item`). It
//! never carries the dynamodb-lease design's `lease_expiry`, the table's TTL attribute, so
//! no TTL sweep deletes it and its token counter. Expiry is judged by the
//! client's expiry clock on the record, never by the TTL sweeper.

use crate::prelude::*;

mod config;
mod item;
mod reply;
pub(crate) mod table;

#[cfg(any(test, feature = "testing"))]
pub mod model;

#[cfg(test)]
mod tests;

pub use config::{DynamoDbTable, PROFILE};
pub use item::{decode_item, encode_item, version_of, BODY_ATTRIBUTE, HOLDER_ATTRIBUTE};
pub use reply::read_reply;

use crate::sigv4::{self, Scope, SigningRequest};
use crate::stores::s3::{HttpRequest, Method, S3Request};
use crate::stores::Reach;
use serde_json::{json, Value};

/// The JSON 1.0 protocol's content type.
pub const CONTENT_TYPE: &str = "application/x-amz-json-1.0";
/// Every call's `X-Amz-Target` starts with the API version.
pub const TARGET_PREFIX: &str = "DynamoDB_20120810.";
/// The header a raw call (`Method::Post`) names its operation in.
pub const TARGET_HEADER: &str = "x-amz-target";
/// The table's partition key, as in the dynamodb-lease design.
pub const KEY_ATTRIBUTE: &str = "key";
/// The item's version: the ETag of the S3 translation.
pub const VERSION_ATTRIBUTE: &str = "lease_version";
/// Seconds since the epoch: the dynamodb-lease design's TTL attribute. Our items never
/// carry it (see `item`).
pub const EXPIRY_ATTRIBUTE: &str = "lease_expiry";
/// The fencing token, a number: the one attribute of ours a TTL on it
/// would act on.
pub const TOKEN_ATTRIBUTE: &str = "token";

/// A raw DynamoDB call, e.g. `call("DescribeTable", json!({...}))`.
pub fn call(operation: &str, body: &Value, max_response_bytes: usize) -> S3Request {
    let mut req = S3Request::new(Method::Post, "", max_response_bytes)
        .header(TARGET_HEADER, &format!("{TARGET_PREFIX}{operation}"));
    req.body = serde_json::to_vec(body).unwrap_or_default();
    req
}

/// The DynamoDB operation a request becomes, and its JSON body.
pub fn translate(table: &str, req: &S3Request) -> (String, Vec<u8>) {
    let key = json!({ KEY_ATTRIBUTE: { "S": req.object_key } });
    let (operation, mut body) = match req.method {
        Method::Post => {
            let target = header(req, TARGET_HEADER).unwrap_or_default();
            let operation = target.strip_prefix(TARGET_PREFIX).unwrap_or(target);
            return (operation.to_string(), req.body.clone());
        }
        Method::Get | Method::Head => (
            "GetItem",
            json!({ "TableName": table, "Key": key, "ConsistentRead": true }),
        ),
        Method::Put => (
            "PutItem",
            json!({ "TableName": table, "Item": encode_item(&req.object_key, &req.body) }),
        ),
        Method::Delete => ("DeleteItem", json!({ "TableName": table, "Key": key })),
    };
    if matches!(req.method, Method::Put | Method::Delete) {
        add_condition(&mut body, req);
    }
    (
        operation.to_string(),
        serde_json::to_vec(&body).unwrap_or_default(),
    )
}

/// `If-None-Match: *` and `If-Match: v` (with `S3Request::if_token`,
/// and the token) as condition expressions. `key` is a reserved word in
/// expressions, hence the `#k` name.
fn add_condition(body: &mut Value, req: &S3Request) {
    let (expression, names, values) = if header(req, "if-none-match") == Some("*") {
        (
            "attribute_not_exists(#k)",
            json!({ "#k": KEY_ATTRIBUTE }),
            None,
        )
    } else if let Some(version) = header(req, "if-match") {
        match req.if_token {
            // The token too: a record at this version with another token
            // is refused by the table, at no extra cost.
            Some(token) => (
                "#v = :v AND #t = :t",
                json!({ "#v": VERSION_ATTRIBUTE, "#t": TOKEN_ATTRIBUTE }),
                Some(json!({ ":v": { "S": version }, ":t": { "N": token.to_string() } })),
            ),
            None => (
                "#v = :v",
                json!({ "#v": VERSION_ATTRIBUTE }),
                Some(json!({ ":v": { "S": version } })),
            ),
        }
    } else {
        return;
    };
    if let Value::Object(map) = body {
        map.insert("ConditionExpression".into(), expression.into());
        map.insert("ExpressionAttributeNames".into(), names);
        if let Some(values) = values {
            map.insert("ExpressionAttributeValues".into(), values);
        }
    }
}

fn header<'a>(req: &'a S3Request, name: &str) -> Option<&'a str> {
    req.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Signs `req`, translated for `table`, as `config` reaches it, at
/// `unix_seconds`: a POST to `/` of the endpoint, as every DynamoDB call is.
pub fn prepare(
    config: Reach<'_>,
    table: &DynamoDbTable,
    req: &S3Request,
    unix_seconds: u64,
) -> HttpRequest {
    let (operation, body) = translate(&table.table, req);
    let mut headers = vec![
        ("content-type".to_string(), CONTENT_TYPE.to_string()),
        (
            TARGET_HEADER.to_string(),
            format!("{TARGET_PREFIX}{operation}"),
        ),
    ];
    let payload_hash = sigv4::sha256_hex(&body);
    let signing = SigningRequest {
        method: "POST",
        host: config.endpoint_authority,
        path: "/",
        query: &[],
        headers: &headers,
        payload_sha256_hex: &payload_hash,
    };
    let scope = Scope {
        region: &table.region,
        service: "dynamodb",
        unix_seconds,
    };
    headers.extend(sigv4::sign(&signing, &table.credentials, scope));
    headers.push(("content-length".into(), body.len().to_string()));
    HttpRequest {
        method: Method::Post,
        scheme: config.scheme,
        authority: config.endpoint_authority.to_string(),
        path_and_query: "/".into(),
        headers,
        body,
        timeout_ms: crate::stores::s3::timeout_ms(config, req),
        // The lock object arrives escaped inside the item's JSON.
        max_response_bytes: req
            .max_response_bytes
            .saturating_mul(2)
            .saturating_add(REPLY_OVERHEAD_BYTES),
    }
}

/// A GetItem reply's attributes besides the lock object.
const REPLY_OVERHEAD_BYTES: usize = 8 * 1024;

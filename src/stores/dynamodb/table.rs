//! The DynamoDB table checks that run before the condition probes on a
//! DynamoDB store: DescribeTable (the key schema the lock items need) and
//! DescribeTimeToLive (that the table's TTL cannot sweep a lock item).

use crate::prelude::*;

use crate::capability::{Capability, CapabilityResult, Verdict};
use crate::stores::dynamodb::{
    self, BODY_ATTRIBUTE, EXPIRY_ATTRIBUTE, HOLDER_ATTRIBUTE, KEY_ATTRIBUTE, TOKEN_ATTRIBUTE,
    VERSION_ATTRIBUTE,
};
use crate::stores::s3::{S3Request, S3Response};
use serde_json::{json, Value};

/// Replies to these calls are small.
const MAX_REPLY_BYTES: usize = 64 * 1024;

pub(crate) fn describe_table(table: &str) -> S3Request {
    dynamodb::call(
        "DescribeTable",
        &json!({ "TableName": table }),
        MAX_REPLY_BYTES,
    )
}

pub(crate) fn describe_ttl(table: &str) -> S3Request {
    dynamodb::call(
        "DescribeTimeToLive",
        &json!({ "TableName": table }),
        MAX_REPLY_BYTES,
    )
}

fn result(
    capability: Capability,
    verdict: Verdict,
    r: Option<&S3Response>,
    detail: String,
) -> CapabilityResult {
    CapabilityResult {
        capability,
        verdict,
        status: r.map(|r| r.status),
        code: r
            .filter(|r| r.status >= 300)
            .map(|r| r.s3_error().code)
            .unwrap_or_default(),
        detail,
        silent: false,
    }
}

fn json_of(r: &S3Response) -> Option<Value> {
    serde_json::from_slice(&r.body).ok()
}

/// The key schema from a DescribeTable reply: one HASH key `key` of type S.
pub(crate) fn key_schema(r: Option<&S3Response>, failure: Option<&str>) -> CapabilityResult {
    let c = Capability::TableKeySchema;
    let Some(reply) = r else {
        let why = failure.unwrap_or("no reply");
        return result(c, Verdict::Unknown, None, format!("DescribeTable: {why}"));
    };
    if reply.status != 200 {
        let e = reply.s3_error();
        return result(
            c,
            Verdict::Unknown,
            r,
            format!("DescribeTable was refused: {e}"),
        );
    }
    let table = json_of(reply).and_then(|v| v.get("Table").cloned());
    let Some(table) = table else {
        return result(
            c,
            Verdict::Unknown,
            r,
            "DescribeTable's reply has no Table".into(),
        );
    };
    let keys: Vec<(String, String)> = table
        .get("KeySchema")
        .and_then(Value::as_array)
        .map(|keys| {
            keys.iter()
                .map(|k| {
                    let field =
                        |f: &str| k.get(f).and_then(Value::as_str).unwrap_or("?").to_string();
                    (field("AttributeName"), field("KeyType"))
                })
                .collect()
        })
        .unwrap_or_default();
    let key_type = table
        .get("AttributeDefinitions")
        .and_then(Value::as_array)
        .and_then(|defs| {
            defs.iter()
                .find(|d| d.get("AttributeName").and_then(Value::as_str) == Some(KEY_ATTRIBUTE))
        })
        .and_then(|d| d.get("AttributeType").and_then(Value::as_str))
        .unwrap_or("?");
    let status = table
        .get("TableStatus")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let shown: Vec<String> = keys.iter().map(|(n, t)| format!("{n} ({t})")).collect();
    let shown = crate::text::join(shown.iter().map(String::as_str), ", ");
    let right = keys.len() == 1
        && keys[0] == (KEY_ATTRIBUTE.to_string(), "HASH".to_string())
        && key_type == "S";
    if right {
        result(
            c,
            Verdict::Pass,
            r,
            format!("the table is {status}, keyed by one string partition key `key`, as lock items need"),
        )
    } else {
        result(
            c,
            Verdict::Fail,
            r,
            format!(
                "the table's key is {shown} (`key` is of type {key_type}); lock items need exactly one \
                 partition key `key` of type S (string): create a table for the locks with that key"
            ),
        )
    }
}

/// Where the table's TTL is, from a DescribeTimeToLive reply. Our items
/// never carry `lease_expiry` (see `dynamodb::item`), so a TTL sweeps
/// none of them, wherever it is, unless it is on `token`, the one number
/// they carry: that fails, and closes the gate (`verdict`).
pub(crate) fn ttl(r: Option<&S3Response>, failure: Option<&str>) -> CapabilityResult {
    let c = Capability::TtlAttribute;
    let Some(reply) = r else {
        let why = failure.unwrap_or("no reply");
        return result(
            c,
            Verdict::Unknown,
            None,
            format!("DescribeTimeToLive: {why}"),
        );
    };
    if reply.status != 200 {
        let e = reply.s3_error();
        return result(
            c,
            Verdict::Unknown,
            r,
            format!("DescribeTimeToLive was refused: {e}"),
        );
    }
    let description = json_of(reply).and_then(|v| v.get("TimeToLiveDescription").cloned());
    let field = |f: &str| {
        description
            .as_ref()
            .and_then(|d| d.get(f))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let status = field("TimeToLiveStatus").unwrap_or_else(|| "DISABLED".into());
    let attribute = field("AttributeName");
    // ENABLING and DISABLING may sweep too.
    let sweeps = status != "DISABLED";
    let (verdict, detail) = match attribute.as_deref() {
        Some(TOKEN_ATTRIBUTE) if sweeps => (
            Verdict::Fail,
            format!(
                "TTL is {status} on token, the number each lock item keeps its fencing token \
                 in: a sweep could delete an item and its key's counter, and the key's tokens \
                 would start again. Put TTL on lease_expiry (for dynamodb-lease clients' items) or \
                 turn it off"
            ),
        ),
        Some(name) if sweeps => {
            let ours = [
                KEY_ATTRIBUTE,
                VERSION_ATTRIBUTE,
                BODY_ATTRIBUTE,
                HOLDER_ATTRIBUTE,
            ];
            let why = if ours.contains(&name) {
                "which s3-lease's items carry only as a string, and a TTL ignores strings"
            } else if name == EXPIRY_ATTRIBUTE {
                "which s3-lease's items never carry (it sweeps dynamodb-lease clients' expired items)"
            } else {
                "which s3-lease's items never carry"
            };
            (
                Verdict::Pass,
                format!(
                    "TTL is {status} on {name:?}, {why}: it never sweeps a lock item, so no \
                     key's token counter is lost"
                ),
            )
        }
        _ => (
            Verdict::Pass,
            format!(
                "TTL is {status}: nothing is swept. s3-lease's items carry no TTL attribute \
                 in any case, and stay with their token counters"
            ),
        ),
    };
    result(c, verdict, r, detail)
}

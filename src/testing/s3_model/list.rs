//! ListObjectsV2 over the model's keys: prefix, start-after, max-keys and a
//! continuation token, in byte order, as S3 pages them.

use super::dates::iso8601;
use super::{escape_xml, Object, Refusal};
use std::collections::BTreeMap;
use std::ops::Bound;

/// S3 never returns more keys than this in one page, whatever was asked.
const MAX_KEYS_LIMIT: usize = 1000;

/// What a ListObjectsV2 request asks for.
struct ListQuery<'a> {
    prefix: &'a str,
    start_after: &'a str,
    continuation_token: Option<&'a str>,
    max_keys: usize,
}

fn query<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn read_query(q: &[(String, String)]) -> Result<ListQuery<'_>, Refusal> {
    if query(q, "list-type") != Some("2") {
        return Err(Refusal::bad_request(
            "InvalidRequest",
            "only ListObjectsV2 (list-type=2) is modelled on the bucket",
        ));
    }
    let max_keys = match query(q, "max-keys") {
        None => MAX_KEYS_LIMIT as u64,
        Some(v) => v.trim().parse::<u64>().map_err(|_| {
            Refusal::bad_request("InvalidArgument", "max-keys must be a non-negative integer")
        })?,
    };
    Ok(ListQuery {
        prefix: query(q, "prefix").unwrap_or_default(),
        start_after: query(q, "start-after").unwrap_or_default(),
        continuation_token: query(q, "continuation-token"),
        max_keys: usize::try_from(max_keys)
            .unwrap_or(MAX_KEYS_LIMIT)
            .min(MAX_KEYS_LIMIT),
    })
}

/// The ListBucketResult body for `q` (the request's query), or why not.
pub(super) fn list(
    objects: &BTreeMap<String, Object>,
    q: &[(String, String)],
) -> Result<String, Refusal> {
    let q = read_query(q)?;
    // Our tokens are the last key of the previous page; S3 ignores
    // start-after once a token is given.
    let after = q.continuation_token.unwrap_or(q.start_after);
    // Keys under a prefix are contiguous in byte order: start at whichever
    // of the prefix and `after` comes later, stop at the first key outside.
    let lower = if after >= q.prefix {
        Bound::Excluded(after)
    } else {
        Bound::Included(q.prefix)
    };
    let mut matching = objects
        .range::<str, _>((lower, Bound::Unbounded))
        .take_while(|(key, _)| key.starts_with(q.prefix));
    let page: Vec<(&String, &Object)> = matching.by_ref().take(q.max_keys).collect();
    // With max-keys 0 there is no last key to continue from: say not
    // truncated, or a client following IsTruncated would never stop.
    let truncated = !page.is_empty() && matching.next().is_some();

    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    xml.push_str("<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    xml.push_str("<Name>bucket</Name>");
    xml.push_str(&format!("<Prefix>{}</Prefix>", escape_xml(q.prefix)));
    xml.push_str(&format!(
        "<KeyCount>{}</KeyCount><MaxKeys>{}</MaxKeys><IsTruncated>{truncated}</IsTruncated>",
        page.len(),
        q.max_keys
    ));
    if !q.start_after.is_empty() {
        xml.push_str(&format!(
            "<StartAfter>{}</StartAfter>",
            escape_xml(q.start_after)
        ));
    }
    if let Some(token) = q.continuation_token {
        xml.push_str(&format!(
            "<ContinuationToken>{}</ContinuationToken>",
            escape_xml(token)
        ));
    }
    for (key, object) in &page {
        xml.push_str(&format!(
            "<Contents><Key>{}</Key><LastModified>{}</LastModified><ETag>{}</ETag>\
             <Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
            escape_xml(key),
            iso8601(object.last_modified_ms),
            escape_xml(&object.etag),
            object.body.len()
        ));
    }
    if let (true, Some((last, _))) = (truncated, page.last()) {
        xml.push_str(&format!(
            "<NextContinuationToken>{}</NextContinuationToken>",
            escape_xml(last)
        ));
    }
    xml.push_str("</ListBucketResult>");
    Ok(xml)
}

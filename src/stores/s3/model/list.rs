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

/// The short and empty pages the model is told to serve (see `S3Model`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Paging {
    /// At most this many keys per page.
    pub page_keys: Option<usize>,
    /// Answer with an empty, truncated page if a token can resume it.
    pub empty: bool,
}

/// A token naming the position `after`: keys above it come next. Any
/// string below the prefix means "from the prefix on" (see `lower` below),
/// and a token must not be empty; `None` when nothing can name it.
fn token_for(after: &str, prefix: &str) -> Option<String> {
    if !after.is_empty() {
        return Some(after.to_string());
    }
    let mut below = prefix.to_string();
    below.pop();
    (!below.is_empty()).then_some(below)
}

/// The ListBucketResult body for `q` (the request's query), or why not,
/// and whether it is an empty page served because `paging.empty` said so.
pub(super) fn list(
    objects: &BTreeMap<String, Object>,
    q: &[(String, String)],
    paging: Paging,
) -> Result<(String, bool), Refusal> {
    let q = read_query(q)?;
    // Our tokens are the last key of the previous page; S3 ignores
    // start-after once a token is given.
    let after = q.continuation_token.unwrap_or(q.start_after);
    let empty_token = match q.max_keys {
        0 => None,
        _ if paging.empty => token_for(after, q.prefix),
        _ => None,
    };
    let max_keys = match (empty_token.is_some(), paging.page_keys) {
        (true, _) => 0,
        (false, Some(limit)) => q.max_keys.min(limit.max(1)),
        (false, None) => q.max_keys,
    };
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
    let page: Vec<(&String, &Object)> = matching.by_ref().take(max_keys).collect();
    // With max-keys 0 there is no last key to continue from: say not
    // truncated, or a client following IsTruncated would never stop. An
    // injected empty page is truncated, with a token that resumes it.
    let next_token = match (&empty_token, page.last()) {
        (Some(token), _) => Some(token.clone()),
        (None, Some((last, _))) if matching.next().is_some() => Some(last.to_string()),
        _ => None,
    };
    let truncated = next_token.is_some();

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
    if let Some(token) = &next_token {
        xml.push_str(&format!(
            "<NextContinuationToken>{}</NextContinuationToken>",
            escape_xml(token)
        ));
    }
    xml.push_str("</ListBucketResult>");
    Ok((xml, empty_token.is_some()))
}

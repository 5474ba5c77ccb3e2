//! ListObjectsV2: the requests for a page of keys, and the page read.

use crate::prelude::*;

use super::request::{Method, S3Request};
use super::xml::{snippet, xml_text};

/// Largest ListObjectsV2 page we read: 200 keys of up to 1 KiB, escaped.
pub const MAX_LIST_BYTES: usize = 1024 * 1024;
/// Keys per ListObjectsV2 page.
pub const LIST_PAGE_KEYS: u32 = 200;

/// A ListObjectsV2 request for keys under `prefix`, after `start_after`.
pub fn list_request(prefix: &str, start_after: Option<&str>) -> S3Request {
    let mut req = S3Request::new(Method::Get, "", MAX_LIST_BYTES);
    req.query = vec![
        ("list-type".into(), "2".into()),
        ("max-keys".into(), LIST_PAGE_KEYS.to_string()),
        ("prefix".into(), prefix.into()),
    ];
    if let Some(after) = start_after {
        req.query.push(("start-after".into(), after.into()));
    }
    req
}

/// The next page of a listing under `prefix`: `token` is the previous
/// page's `NextContinuationToken` (S3 then ignores any start-after).
pub fn list_continue(prefix: &str, token: &str) -> S3Request {
    let mut req = list_request(prefix, None);
    req.query.push(("continuation-token".into(), token.into()));
    req
}

/// One page of a ListObjectsV2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    pub keys: Vec<String>,
    pub truncated: bool,
    /// `NextContinuationToken`, when the reply has a non-empty one. A
    /// truncated page may hold fewer keys than asked, or none: only this
    /// token continues it for sure.
    pub next_token: Option<String>,
}

/// Reads a ListObjectsV2 reply body: the keys of its `<Contents>` entries.
/// The error is a reason: what was wrong, never the whole body.
pub fn parse_list(body: &[u8]) -> Result<ListPage, String> {
    let body = core::str::from_utf8(body).map_err(|_| "the LIST reply is not UTF-8".to_string())?;
    if !body.contains("<ListBucketResult") {
        return Err(format!("not a ListBucketResult: {}", snippet(body)));
    }
    let mut keys = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("<Contents>") {
        let entry = &rest[start..];
        let end = entry
            .find("</Contents>")
            .ok_or("a <Contents> entry is not closed")?;
        let key = xml_text(&entry[..end], "Key").ok_or("a <Contents> entry has no <Key>")?;
        keys.push(key);
        rest = &entry[end..];
    }
    let truncated = xml_text(body, "IsTruncated").is_some_and(|t| t.trim() == "true");
    // The keys are escaped, so the tag cannot occur inside one.
    let next_token = xml_text(body, "NextContinuationToken").filter(|t| !t.is_empty());
    Ok(ListPage {
        keys,
        truncated,
        next_token,
    })
}

//! ListObjectVersions (`GET /?versions`) on the model: a bucket that never
//! versioned, as S3 lists one: each object once, its version id `null`,
//! in byte order, paged by max-keys and key-marker (and the model's short
//! pages, `list_page_keys`).

use super::dates::iso8601;
use super::{escape_xml, Object, Refusal};
use std::collections::BTreeMap;
use std::ops::Bound;

/// S3 never lists more versions than this in one page.
const MAX_KEYS_LIMIT: usize = 1000;

fn query<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The ListVersionsResult body for `q` (the request's query), or why not.
pub(super) fn list_versions(
    objects: &BTreeMap<String, Object>,
    q: &[(String, String)],
    page_keys: Option<usize>,
) -> Result<String, Refusal> {
    let asked = match query(q, "max-keys") {
        None => MAX_KEYS_LIMIT,
        Some(v) => v.trim().parse::<usize>().map_err(|_| {
            Refusal::bad_request("InvalidArgument", "max-keys must be a non-negative integer")
        })?,
    };
    let max_keys = asked
        .min(MAX_KEYS_LIMIT)
        .min(page_keys.map_or(usize::MAX, |p| p.max(1)));
    let prefix = query(q, "prefix").unwrap_or_default();
    let marker = query(q, "key-marker").unwrap_or_default();
    let lower = if marker >= prefix {
        Bound::Excluded(marker)
    } else {
        Bound::Included(prefix)
    };
    let mut matching = objects
        .range::<str, _>((lower, Bound::Unbounded))
        .take_while(|(key, _)| key.starts_with(prefix));
    let page: Vec<(&String, &Object)> = matching.by_ref().take(max_keys).collect();
    let next = match page.last() {
        Some((last, _)) if matching.next().is_some() => Some(last.as_str()),
        _ => None,
    };
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    xml.push_str("<ListVersionsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    xml.push_str(&format!(
        "<Name>bucket</Name><Prefix>{}</Prefix><KeyMarker>{}</KeyMarker>\
         <VersionIdMarker></VersionIdMarker><MaxKeys>{asked}</MaxKeys>\
         <IsTruncated>{}</IsTruncated>",
        escape_xml(prefix),
        escape_xml(marker),
        next.is_some()
    ));
    if let Some(next) = next {
        xml.push_str(&format!(
            "<NextKeyMarker>{}</NextKeyMarker><NextVersionIdMarker>null</NextVersionIdMarker>",
            escape_xml(next)
        ));
    }
    for (key, object) in &page {
        xml.push_str(&format!(
            "<Version><Key>{}</Key><VersionId>null</VersionId><IsLatest>true</IsLatest>\
             <LastModified>{}</LastModified><ETag>{}</ETag><Size>{}</Size>\
             <StorageClass>STANDARD</StorageClass></Version>",
            escape_xml(key),
            iso8601(object.last_modified_ms),
            escape_xml(&object.etag),
            object.body.len()
        ));
    }
    xml.push_str("</ListVersionsResult>");
    Ok(xml)
}

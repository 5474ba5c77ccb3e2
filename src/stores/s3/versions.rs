//! ListObjectVersions (`GET /?versions`): every version of the objects
//! under a prefix, and the delete markers between them, as a verifier of
//! fenced objects reads them. S3 lists a key's versions newest first, and
//! keys in byte order; a bucket that was never versioned lists each object
//! once, its version id `null`.

use crate::prelude::*;

use super::xml::snippet;
use super::{xml_text, Method, S3Request};
use crate::http_date::parse_rfc3339_ms;

/// Versions asked for per page (S3's own limit): the listing's cost is one
/// request per this many versions, or more where the store pages shorter.
pub const VERSIONS_PAGE_KEYS: u32 = 1000;
/// Largest page we read: 1,000 entries of a key of up to 1 KiB, escaped,
/// and their fields.
pub const MAX_VERSIONS_LIST_BYTES: usize = 5 * 1024 * 1024;

/// A ListObjectVersions request for `prefix`, after the position the
/// previous page's `NextKeyMarker` and `NextVersionIdMarker` name.
pub fn versions_request(prefix: &str, after: Option<&VersionMarker>) -> S3Request {
    let mut req = S3Request::new(Method::Get, "", MAX_VERSIONS_LIST_BYTES);
    req.query = vec![
        ("versions".into(), String::new()),
        ("max-keys".into(), VERSIONS_PAGE_KEYS.to_string()),
        ("prefix".into(), prefix.into()),
    ];
    if let Some(after) = after {
        req.query.push(("key-marker".into(), after.key.clone()));
        if let Some(id) = &after.version_id {
            req.query.push(("version-id-marker".into(), id.clone()));
        }
    }
    req
}

/// Where a truncated page ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionMarker {
    pub key: String,
    /// Absent when the page ended between keys.
    pub version_id: Option<String>,
}

/// One entry of a versions listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedVersion {
    pub key: String,
    /// `null` for a version written while the bucket was not versioning.
    pub version_id: String,
    /// The store's time of the write, ms since the Unix epoch.
    pub last_modified_ms: u64,
    pub delete_marker: bool,
}

/// One page of a ListObjectVersions reply, its entries in the reply's
/// order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionsPage {
    pub entries: Vec<ListedVersion>,
    pub truncated: bool,
    /// Set when the page is truncated and names where it ended.
    pub next: Option<VersionMarker>,
}

/// Reads a ListObjectVersions reply body. The error is a reason: what was
/// wrong, never the whole body.
pub fn parse_versions(body: &[u8]) -> Result<VersionsPage, String> {
    let body =
        core::str::from_utf8(body).map_err(|_| "the versions listing is not UTF-8".to_string())?;
    if !body.contains("<ListVersionsResult") {
        return Err(format!("not a ListVersionsResult: {}", snippet(body)));
    }
    let mut entries = Vec::new();
    let mut rest = body;
    loop {
        let version = rest.find("<Version>").map(|at| (at, "Version"));
        let marker = rest.find("<DeleteMarker>").map(|at| (at, "DeleteMarker"));
        let (start, tag) = match (version, marker) {
            (Some(v), Some(m)) => v.min(m),
            (Some(found), None) | (None, Some(found)) => found,
            (None, None) => break,
        };
        let entry = &rest[start..];
        let close = format!("</{tag}>");
        let end = entry
            .find(&close)
            .ok_or_else(|| format!("a <{tag}> entry is not closed"))?;
        let fields = &entry[..end];
        let key = xml_text(fields, "Key").ok_or_else(|| format!("a <{tag}> entry has no <Key>"))?;
        let version_id = xml_text(fields, "VersionId")
            .filter(|id| !id.is_empty())
            .ok_or_else(|| format!("a <{tag}> entry has no <VersionId>"))?;
        let last_modified_ms = xml_text(fields, "LastModified")
            .and_then(|t| parse_rfc3339_ms(&t))
            .ok_or_else(|| format!("a <{tag}> entry has no readable <LastModified>"))?;
        entries.push(ListedVersion {
            key,
            version_id,
            last_modified_ms,
            delete_marker: tag == "DeleteMarker",
        });
        rest = &entry[end..];
    }
    let truncated = xml_text(body, "IsTruncated").is_some_and(|t| t.trim() == "true");
    // Keys and ids are escaped, so these tags cannot occur inside one.
    let next = xml_text(body, "NextKeyMarker")
        .filter(|k| truncated && !k.is_empty())
        .map(|key| VersionMarker {
            key,
            version_id: xml_text(body, "NextVersionIdMarker").filter(|id| !id.is_empty()),
        });
    Ok(VersionsPage {
        entries,
        truncated,
        next,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page as S3 writes one: a key's versions newest first, a delete
    /// marker between them, truncated after the second key's first version.
    const PAGE: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
        <ListVersionsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
        <Name>bucket</Name><Prefix>data/</Prefix><KeyMarker></KeyMarker>\
        <VersionIdMarker></VersionIdMarker><NextKeyMarker>data/b&amp;c</NextKeyMarker>\
        <NextVersionIdMarker>v&lt;3</NextVersionIdMarker><MaxKeys>1000</MaxKeys>\
        <IsTruncated>true</IsTruncated>\
        <Version><Key>data/a</Key><VersionId>v2</VersionId><IsLatest>false</IsLatest>\
        <LastModified>2026-01-02T03:04:06.500Z</LastModified><ETag>&quot;e&quot;</ETag>\
        <Size>3</Size><StorageClass>STANDARD</StorageClass></Version>\
        <DeleteMarker><Key>data/a</Key><VersionId>dm</VersionId><IsLatest>true</IsLatest>\
        <LastModified>2026-01-02T03:04:07.000Z</LastModified></DeleteMarker>\
        <Version><Key>data/a</Key><VersionId>v1</VersionId><IsLatest>false</IsLatest>\
        <LastModified>2026-01-02T03:04:05.000Z</LastModified></Version>\
        <Version><LastModified>2026-01-02T03:04:08Z</LastModified><VersionId>v&lt;3</VersionId>\
        <Key>data/b&amp;c</Key></Version>\
        </ListVersionsResult>";

    #[test]
    fn reads_versions_and_delete_markers_in_the_reply_order() {
        let page = parse_versions(PAGE.as_bytes()).unwrap();
        let seen: Vec<(&str, &str, u64, bool)> = page
            .entries
            .iter()
            .map(|v| {
                (
                    v.key.as_str(),
                    v.version_id.as_str(),
                    v.last_modified_ms % 100_000,
                    v.delete_marker,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("data/a", "v2", 46_500, false),
                ("data/a", "dm", 47_000, true),
                ("data/a", "v1", 45_000, false),
                ("data/b&c", "v<3", 48_000, false),
            ]
        );
        assert!(page.truncated);
        assert_eq!(
            page.next,
            Some(VersionMarker {
                key: "data/b&c".into(),
                version_id: Some("v<3".into())
            })
        );
    }

    #[test]
    fn a_last_page_names_no_marker_and_an_unversioned_bucket_lists_null_ids() {
        let body = "<ListVersionsResult><IsTruncated>false</IsTruncated>\
            <NextKeyMarker>x</NextKeyMarker><Version><Key>k</Key><VersionId>null</VersionId>\
            <LastModified>2026-01-02T03:04:05.000Z</LastModified></Version></ListVersionsResult>";
        let page = parse_versions(body.as_bytes()).unwrap();
        assert_eq!(page.entries[0].version_id, "null");
        assert!(!page.truncated);
        assert_eq!(page.next, None);
    }

    #[test]
    fn broken_entries_are_reasons() {
        for (body, reason) in [
            ("<ListBucketResult/>", "not a ListVersionsResult"),
            ("<ListVersionsResult><Version><Key>k</Key>", "not closed"),
            (
                "<ListVersionsResult><Version><VersionId>1</VersionId></Version>",
                "no <Key>",
            ),
            (
                "<ListVersionsResult><DeleteMarker><Key>k</Key></DeleteMarker>",
                "no <VersionId>",
            ),
            (
                "<ListVersionsResult><Version><Key>k</Key><VersionId>1</VersionId>\
                 <LastModified>yesterday</LastModified></Version>",
                "no readable <LastModified>",
            ),
        ] {
            let err = parse_versions(body.as_bytes()).unwrap_err();
            assert!(err.contains(reason), "{body}: {err}");
        }
        assert!(parse_versions(&[0xff, 0xfe]).is_err());
    }

    #[test]
    fn requests_name_the_markers_of_the_page_before() {
        let first = versions_request("data/", None);
        assert_eq!(first.object_key, "");
        assert_eq!(
            super::super::described(&first),
            "a LIST of the bucket's versions"
        );
        assert!(first
            .query
            .iter()
            .any(|(k, v)| k == "versions" && v.is_empty()));
        let next = versions_request(
            "data/",
            Some(&VersionMarker {
                key: "data/b".into(),
                version_id: Some("v3".into()),
            }),
        );
        assert!(next.query.contains(&("key-marker".into(), "data/b".into())));
        assert!(next
            .query
            .contains(&("version-id-marker".into(), "v3".into())));
    }
}

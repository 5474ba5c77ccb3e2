//! Azure Blob Storage as the store: the single-object protocol, spoken to a
//! container.
//!
//! Azure's Blob service has what single-object rests on: `If-None-Match: *`
//! and `If-Match: <etag>` on Put Blob (and Delete Blob), evaluated
//! atomically, strong consistency, `Last-Modified` and `Date` on replies,
//! 304 for a read whose `If-None-Match` names the blob's ETag. So the
//! protocol's requests go through nearly as they are:
//!
//! | request the protocol emits | Azure |
//! |---|---|
//! | GET, HEAD (`If-None-Match: e`) | Get Blob, Get Blob Properties |
//! | PUT (`If-None-Match: *` / `If-Match: e`) | Put Blob, `x-ms-blob-type: BlockBlob` |
//! | DELETE (`If-Match: e`) | Delete Blob |
//! | `x-amz-meta-s3lease-token` (fenced writes) | `x-ms-meta-s3lease_token` (a C# identifier, as Azure's metadata names must be) |
//! | a declared `x-amz-content-sha256` that is not the body's (the preflight's probe) | a `Content-MD5` that is not the body's |
//!
//! at `/<container>/<blob>` of the account's endpoint (with `path`
//! addressing, `/<account>/<container>/<blob>`: Azurite and other
//! emulators), authorized by Shared Key (`shared_key`), a SAS token in the
//! query, or a bearer token. Replies come back in the S3 shapes the
//! protocol reads (see `reply`): Azure's 409 `BlobAlreadyExists` is the
//! 412 of a lost create, `ContainerNotFound` is `no-such-bucket`.
//!
//! Unlike S3's, Azure's ETags are not a hash of the bytes: every write
//! gets a new one. What the protocol takes from an ETag holds the more:
//! an `If-Match` names exactly one write, so a client's remembered
//! (etag, token) of its own write is still that write's, and the fenced
//! writes' equal-bytes limit (an older holder's `If-Match` passing over a
//! newer write of the same bytes) does not arise.

use crate::prelude::*;

mod config;
mod reply;
pub mod shared_key;

#[cfg(any(test, feature = "testing"))]
pub mod model;

#[cfg(test)]
mod tests;

pub use config::{AzureBlob, AzureCredential, PROFILE};
pub use reply::read_reply;

use crate::sigv4;
use crate::stores::s3::{HttpRequest, Method, S3Request, PAYLOAD_HASH};
use crate::stores::Reach;
use s3_lease_keep::vocabulary::Addressing;
use shared_key::{SignedRequest, API_VERSION};

/// S3's metadata prefix, as the protocol names its headers.
pub const S3_META: &str = "x-amz-meta-";
/// Azure's.
pub const AZURE_META: &str = "x-ms-meta-";

/// An S3 metadata header's name on Azure: `x-amz-meta-s3lease-token`
/// becomes `x-ms-meta-s3lease_token` (Azure refuses a hyphen there).
pub fn azure_metadata_name(s3_name: &str) -> Option<String> {
    let lower = s3_name.to_ascii_lowercase();
    let name = lower.strip_prefix(S3_META)?;
    Some(format!("{AZURE_META}{}", name.replace('-', "_")))
}

/// The reverse, for replies.
pub fn s3_metadata_name(azure_name: &str) -> Option<String> {
    let lower = azure_name.to_ascii_lowercase();
    let name = lower.strip_prefix(AZURE_META)?;
    Some(format!("{S3_META}{}", name.replace('_', "-")))
}

/// The path of `object_key` in `blob`'s container, encoded as sent.
pub fn blob_path(addressing: Addressing, blob: &AzureBlob, object_key: &str) -> String {
    let mut path = String::new();
    if addressing == Addressing::Path {
        path.push('/');
        path.push_str(&blob.account);
    }
    path.push('/');
    path.push_str(&blob.container);
    if !object_key.is_empty() {
        path.push('/');
        path.push_str(&sigv4::uri_encode(object_key, false));
    }
    path
}

/// The request's headers as Azure takes them: metadata renamed, S3's own
/// (`x-amz-*`) left out, a wrong declared payload hash as a wrong
/// `Content-MD5`.
fn azure_headers(req: &S3Request) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    for (name, value) in &req.headers {
        let lower = name.to_ascii_lowercase();
        if let Some(azure) = azure_metadata_name(&lower) {
            headers.push((azure, value.clone()));
        } else if lower == PAYLOAD_HASH {
            if let Some(md5) = crate::stores::s3::wrong_digest(value, &req.body) {
                headers.push(("content-md5".into(), md5));
            }
        } else if !lower.starts_with("x-amz-") {
            headers.push((lower, value.clone()));
        }
    }
    headers
}

/// Signs `req` for `blob`'s container, as `config` reaches it, at
/// `unix_seconds` (the `x-ms-date`).
pub fn prepare(
    config: Reach<'_>,
    blob: &AzureBlob,
    req: &S3Request,
    unix_seconds: u64,
) -> HttpRequest {
    let path = blob_path(blob.addressing, blob, &req.object_key);
    let mut headers = azure_headers(req);
    headers.push(("x-ms-date".into(), crate::http_date::format(unix_seconds)));
    headers.push(("x-ms-version".into(), API_VERSION.into()));
    if req.method == Method::Put {
        headers.push(("x-ms-blob-type".into(), "BlockBlob".into()));
    }
    // Signed (Shared Key signs Content-Length), and Azure needs it on every PUT.
    if req.method == Method::Put || !req.body.is_empty() {
        headers.push(("content-length".into(), req.body.len().to_string()));
    }
    let mut query = sigv4::canonical_query(&req.query);
    match &blob.credential {
        AzureCredential::SharedKey(key) => {
            let signing = SignedRequest {
                method: req.method.as_str(),
                path: &path,
                query: &req.query,
                headers: &headers,
            };
            let authorization = shared_key::authorization(&blob.account, key, &signing);
            headers.push(("authorization".into(), authorization));
        }
        AzureCredential::Bearer(token) => {
            headers.push(("authorization".into(), format!("Bearer {token}")));
        }
        AzureCredential::Sas(token) => {
            if !query.is_empty() {
                query.push('&');
            }
            query.push_str(token);
        }
    }
    let authority = config.endpoint_authority.to_string();
    crate::stores::s3::http_request(config, req, authority, path, &query, headers)
}

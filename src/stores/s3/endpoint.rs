//! A wrong endpoint, found from its first reply: a server that is not the
//! configured store at all, before anything is written.

use crate::prelude::*;

use super::reply::S3Response;
use super::request::{Method, S3Request};
use super::xml::xml_text;
use crate::error::Error;
use crate::stores::profile::Profile;

/// Where a client's requests go, as a reply showing that it is not the
/// configured store names it (`not_the_store`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub store: &'static Profile,
    /// `scheme://authority`, as configured.
    pub url: String,
}

/// Set on a reply by a store's translation of its replies into S3's that found
/// the server's reply is not its store's at all: what came back and what
/// the store sends (`not_the_store` reads it). Never taken from a server.
pub const NOT_THE_STORE_HEADER: &str = "x-s3lease-not-the-store";

/// The configuration error for a reply that shows `endpoint` is not the
/// configured store at all (a SeaweedFS filer's or master's port, any web
/// server), or `None` for a reply the store could have sent. The one
/// definition: the driver applies it to every reply of every operation
/// (`driver::run`), so a wrong endpoint ends the first request, before
/// anything is written. An S3 reply is judged here; a translated store's
/// by its translation, before it is read as S3's (`NOT_THE_STORE_HEADER`).
///
/// Only what real S3 and every compatible store we know (SeaweedFS,
/// MinIO, R2, Ceph...) all do is required, so none is refused: a 404 to a
/// GET, PUT or DELETE carries an XML error with a `<Code>` (NoSuchKey,
/// NoSuchBucket...); a PUT succeeds with 200 and the written object's
/// ETag; a GET of an object succeeds with its ETag; a LIST succeeds with a
/// `<ListBucketResult>`. Other statuses (5xx, 403, 409, 412...) are read as
/// they are: transient, or already typed. HEAD replies have no body, and
/// one too large to read is not judged by its body.
pub fn not_the_store(endpoint: &Endpoint, req: &S3Request, reply: &S3Response) -> Option<Error> {
    let what = match reply.header(NOT_THE_STORE_HEADER) {
        Some(what) => what.to_string(),
        None if endpoint.store.replies_as_s3 => not_s3_reply(req, reply)?,
        None => return None,
    };
    let not = endpoint.store.wrong_endpoint_hint;
    Some(Error::invalid_config(
        "endpoint",
        format!("{} answered {what}: {not}", endpoint.url),
    ))
}

/// What a request is, as a wrong endpoint's error says what it answered.
pub fn described(req: &S3Request) -> String {
    let asks = |name: &str| req.query.iter().any(|(k, _)| k == name);
    if req.object_key.is_empty() && asks("list-type") {
        "a LIST of the bucket".to_string()
    } else if req.object_key.is_empty() && asks("versions") {
        "a LIST of the bucket's versions".to_string()
    } else {
        format!("{} {:?}", req.method.as_str(), req.object_key)
    }
}

/// What `reply` to `req` has that S3's would not, and what S3 sends there.
fn not_s3_reply(req: &S3Request, reply: &S3Response) -> Option<String> {
    let is_list = req.object_key.is_empty() && req.query.iter().any(|(k, _)| k == "list-type");
    // A bucket's subresource (the preflight's `?lifecycle`): no ETag.
    let of_bucket = req.object_key.is_empty() && !is_list;
    let target = described(req);
    let status = reply.status;
    let readable = reply.body_too_large.is_none();
    match req.method {
        Method::Head | Method::Post => None,
        _ if status == 404 => {
            let body = String::from_utf8_lossy(&reply.body);
            let has_code =
                body.contains("<Error") && xml_text(&body, "Code").is_some_and(|c| !c.is_empty());
            (readable && !has_code).then(|| {
                format!(
                    "{target} with 404 and no S3 error body (S3 sends <Error> with a <Code> \
                     such as NoSuchKey or NoSuchBucket)"
                )
            })
        }
        _ if !(200..300).contains(&status) => None,
        Method::Put if status != 200 => Some(format!(
            "{target} with {status} (S3 answers a write with 200 and the object's ETag)"
        )),
        Method::Put | Method::Get if !is_list && !of_bucket && reply.etag().is_none() => Some(
            format!("{target} with {status} and no ETag (S3 sends every object's ETag)"),
        ),
        Method::Get
            if is_list
                && readable
                && !reply.body.windows(17).any(|w| w == b"<ListBucketResult") =>
        {
            Some(format!(
                "{target} with {status} and no <ListBucketResult> (what S3 lists keys in)"
            ))
        }
        _ => None,
    }
}

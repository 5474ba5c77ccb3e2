//! The protocol's replies: an `S3Response` as a transport hands it back
//! (or a store's translation makes it), its headers, its S3 error, and the
//! crate's error it means.

use crate::prelude::*;

use super::request::Body;
use super::xml::{snippet, xml_text};
use crate::error::{Error, S3Error};
use core::fmt;

/// A reply, headers lowercased. `Debug` never shows a body that holds a
/// seal key (see `Body`).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct S3Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Set (to the announced or observed length) when the body was longer
    /// than the request's limit and was left unread.
    pub body_too_large: Option<u64>,
}

impl fmt::Debug for S3Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Response")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body", &Body(&self.body))
            .field("body_too_large", &self.body_too_large)
            .finish()
    }
}

impl S3Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A 404 for the object itself (S3's NoSuchKey; some stores send no
    /// body), as opposed to a missing bucket.
    pub fn is_missing_object(&self) -> bool {
        self.status == 404 && !is_missing_store(&self.s3_error().code)
    }

    pub fn etag(&self) -> Option<&str> {
        self.header("etag").filter(|e| !e.is_empty())
    }

    /// The etag of an object we read (GET, HEAD): without one we cannot
    /// write it conditionally, so the object counts as unreadable.
    pub fn read_etag(&self, object_key: &str) -> Result<String, Error> {
        self.etag()
            .map(str::to_string)
            .ok_or_else(|| Error::corrupt(object_key, "the reply carried no ETag"))
    }

    /// The etag of an object we just wrote (PUT): without one the server
    /// broke the protocol, an S3 error.
    pub fn written_etag(&self, object_key: &str) -> Result<String, Error> {
        self.etag().map(str::to_string).ok_or_else(|| {
            Error::S3(S3Error {
                message: format!("the PUT reply for {object_key:?} carried no ETag"),
                ..self.s3_error()
            })
        })
    }

    /// The S3 error this reply carries: code, message and request id from
    /// the XML body when there is one, else from the headers alone (HEAD
    /// replies and proxies' HTML pages have no S3 XML).
    pub fn s3_error(&self) -> S3Error {
        let body = String::from_utf8_lossy(&self.body);
        let code = xml_text(&body, "Code").unwrap_or_default();
        let mut message = xml_text(&body, "Message").unwrap_or_default();
        if code.is_empty() && message.is_empty() && !body.trim().is_empty() {
            message = format!("non-S3 reply: {}", snippet(&body));
        }
        let request_id = self
            .header("x-amz-request-id")
            .map(str::to_string)
            .or_else(|| xml_text(&body, "RequestId"))
            .unwrap_or_default();
        S3Error {
            status: self.status,
            code,
            message,
            request_id,
        }
    }

    /// 403 `RequestTimeTooSkewed`: the server refused our signing time.
    pub fn is_clock_skew(&self) -> bool {
        self.status == 403 && self.s3_error().code == "RequestTimeTooSkewed"
    }

    /// The typed error for a reply the protocol did not expect.
    pub fn into_error(self) -> Error {
        let e = self.s3_error();
        match (e.status, e.code.as_str()) {
            (_, code) if is_missing_store(code) => Error::NoSuchBucket(e),
            (409, "ConditionalRequestConflict" | "TransactionConflictException") => {
                Error::Conflict(e)
            }
            (_, "RequestTimeTooSkewed") => Error::ClockSkewed(e),
            (403, _) | (_, "AccessDenied" | "InvalidAccessKeyId" | "SignatureDoesNotMatch") => {
                Error::AccessDenied(e)
            }
            _ => Error::S3(e),
        }
    }
}

/// Set on a reply by a store's translation that found the
/// record unreadable: the reason, reported as `corrupt-lock-object`.
pub const UNREADABLE_HEADER: &str = "x-s3lease-unreadable";

/// The store itself is missing: S3's bucket, or another store's table or
/// container, by the code its translation keeps.
pub(super) fn is_missing_store(code: &str) -> bool {
    matches!(
        code,
        "NoSuchBucket" | "ResourceNotFoundException" | "ContainerNotFound"
    )
}

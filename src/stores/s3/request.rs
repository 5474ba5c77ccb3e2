//! The protocol's requests: an `S3Request` as the protocol emits it, and
//! the signed `HttpRequest` a store's `prepare` makes of it. `Debug` never
//! shows a secret.

use crate::prelude::*;

use crate::stores::Scheme;
use core::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Put,
    Delete,
    /// A store's own call (a JSON API's POST); S3 takes none.
    Post,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Post => "POST",
        }
    }
}

/// A request on one object (or, with an empty key, on the bucket).
/// `Debug` never shows a body that holds a seal key (see `Body`).
#[derive(Clone, PartialEq, Eq)]
pub struct S3Request {
    pub method: Method,
    /// Full object key, prefix included.
    pub object_key: String,
    pub query: Vec<(String, String)>,
    /// Extra headers, lowercase: `if-match`, `if-none-match`, `content-type`.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Bodies longer than this are not read (see `S3Response::body_too_large`).
    pub max_response_bytes: usize,
    /// A bound on this request tighter than the configured request
    /// timeout: an elector's leader sets it to the time left before its
    /// renew deadline (`driver::Within`), so no request outlives it.
    pub within_ms: Option<u32>,
    /// With `If-Match`: write only if the stored record's token is also
    /// this. A store whose condition can test it checks it there; S3 cannot, and
    /// ignores it (a writer that needs it there reads first: see
    /// `strategy::single_object::RewriteOwn`).
    pub if_token: Option<u64>,
}

impl S3Request {
    pub fn new(method: Method, object_key: &str, max_response_bytes: usize) -> Self {
        S3Request {
            method,
            object_key: object_key.to_string(),
            query: Vec::new(),
            headers: Vec::new(),
            body: Vec::new(),
            max_response_bytes,
            within_ms: None,
            if_token: None,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn body(mut self, content_type: &str, body: Vec<u8>) -> Self {
        self.body = body;
        self.header("content-type", content_type)
    }
}

impl fmt::Debug for S3Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Request")
            .field("method", &self.method)
            .field("object_key", &self.object_key)
            .field("query", &self.query)
            .field("headers", &self.headers)
            .field("body", &Body(&self.body))
            .field("max_response_bytes", &self.max_response_bytes)
            .field("within_ms", &self.within_ms)
            .field("if_token", &self.if_token)
            .finish()
    }
}

/// A body as `Debug` shows it: as its bytes, unless it holds the stored
/// seal key (the key object's `seal_key` field, read or written, on S3 or
/// inside another store's item), which anyone who saw it could forge leases
/// with.
pub(super) struct Body<'a>(pub(super) &'a [u8]);

/// What marks a body that holds the seal key (`seal::stored`).
pub const SECRET_BODY_MARKER: &[u8] = b"seal_key";

impl fmt::Debug for Body<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let marker = SECRET_BODY_MARKER;
        if self.0.windows(marker.len()).any(|w| w == marker) {
            return write!(f, "<redacted: {} bytes>", self.0.len());
        }
        fmt::Debug::fmt(self.0, f)
    }
}

/// A signed request ready for any HTTP client. `Debug` shows every header
/// name but never the value of one that carries a credential (see
/// `is_secret_header`): requests end up in logs and panic messages.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: Method,
    pub scheme: Scheme,
    /// `host[:port]`; HTTP stacks send it as the Host header, which is signed.
    pub authority: String,
    pub path_and_query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout_ms: u32,
    pub max_response_bytes: usize,
}

/// Headers whose values are credentials: the signature (which, with the
/// request, is a replayable credential for up to 15 minutes) and the
/// session token. Names compared in any case.
pub fn is_secret_header(name: &str) -> bool {
    [
        "authorization",
        "proxy-authorization",
        "x-amz-security-token",
    ]
    .iter()
    .any(|secret| name.eq_ignore_ascii_case(secret))
}

/// A path and query as `Debug` shows it: a SAS token's signature
/// (`sig=`), a credential as long as the token lives, redacted.
fn shown_path(path_and_query: &str) -> String {
    let Some((path, query)) = path_and_query.split_once('?') else {
        return path_and_query.to_string();
    };
    let params = query.split('&').map(|p| match p.split_once('=') {
        Some((name, _)) if name.eq_ignore_ascii_case("sig") => format!("{name}=<redacted>"),
        _ => p.to_string(),
    });
    format!("{path}?{}", crate::text::join(params, "&"))
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, v)| {
                let shown = if is_secret_header(k) { "<redacted>" } else { v };
                (k.as_str(), shown)
            })
            .collect();
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("scheme", &self.scheme)
            .field("authority", &self.authority)
            .field("path_and_query", &shown_path(&self.path_and_query))
            .field("headers", &headers)
            .field("body", &Body(&self.body))
            .field("timeout_ms", &self.timeout_ms)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

//! S3 requests and replies as plain data: the protocol emits `S3Request`s,
//! `prepare` turns one into a signed `HttpRequest`, a transport sends it and
//! hands back an `S3Response`. Nothing here does I/O.

use crate::prelude::*;

use crate::config::{Addressing, ClientConfig, Scheme};
use crate::error::{Error, S3Error};
use crate::sigv4::{self, Scope, SigningRequest};
use crate::stores::profile::Profile;
use core::fmt;

mod config;
pub mod dialects;
pub mod lifecycle;
pub mod versions;

#[cfg(any(test, feature = "testing"))]
pub mod model;

pub use config::{S3Bucket, PROFILE};

pub use versions::{parse_versions, versions_request, ListedVersion, VersionMarker, VersionsPage};

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
struct Body<'a>(&'a [u8]);

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

/// Set on a reply by a store's translation that found the
/// record unreadable: the reason, reported as `corrupt-lock-object`.
pub const UNREADABLE_HEADER: &str = "x-s3lease-unreadable";

/// The store itself is missing: S3's bucket, or another store's table or
/// container, by the code its translation keeps.
fn is_missing_store(code: &str) -> bool {
    matches!(
        code,
        "NoSuchBucket" | "ResourceNotFoundException" | "ContainerNotFound"
    )
}

/// The header that carries the SHA-256 of the body, signed with the request.
pub const PAYLOAD_HASH: &str = "x-amz-content-sha256";

/// An MD5 (base64, as `Content-MD5` carries one) the body does not have,
/// for a declared SHA-256 (`PAYLOAD_HASH`) the body does not have: its
/// first 16 bytes. (Equal to the body's MD5 only by a 2^-128 chance.)
/// `None` when the declared hash is the body's. How a store that checks a
/// body's MD5 rather than its SHA-256 carries the preflight's probe.
pub fn wrong_digest(declared: &str, body: &[u8]) -> Option<String> {
    if declared.eq_ignore_ascii_case(&sigv4::sha256_hex(body)) {
        return None;
    }
    let bytes: Vec<u8> = declared
        .as_bytes()
        .chunks(2)
        .take(16)
        .map(|pair| {
            let text = core::str::from_utf8(pair).unwrap_or("00");
            u8::from_str_radix(text, 16).unwrap_or(0xff)
        })
        .collect();
    Some(crate::base64::encode(&bytes))
}

fn is_conditional_write(req: &S3Request) -> bool {
    matches!(req.method, Method::Put | Method::Delete)
        && req
            .headers
            .iter()
            .any(|(k, _)| k == "if-match" || k == "if-none-match")
}

/// Signs `req` for `bucket`, as `config` reaches it, at `unix_seconds`.
pub fn prepare(
    config: &ClientConfig,
    bucket: &S3Bucket,
    req: &S3Request,
    unix_seconds: u64,
) -> HttpRequest {
    let (authority, mut path) = match bucket.addressing {
        Addressing::Path => (
            config.endpoint_authority.clone(),
            format!("/{}", sigv4::uri_encode(&bucket.bucket, true)),
        ),
        Addressing::VirtualHosted => (
            format!("{}.{}", bucket.bucket, config.endpoint_authority),
            String::new(),
        ),
    };
    if !req.object_key.is_empty() || path.is_empty() {
        path.push('/');
        path.push_str(&sigv4::uri_encode(&req.object_key, false));
    }

    // A request may declare its own payload hash: the preflight sends a
    // wrong one on purpose, to see whether the store checks it.
    let mut headers = req.headers.clone();
    let payload_hash = match req.headers.iter().find(|(k, _)| k == PAYLOAD_HASH) {
        Some((_, declared)) => declared.clone(),
        None => {
            let hash = sigv4::sha256_hex(&req.body);
            headers.push((PAYLOAD_HASH.into(), hash.clone()));
            hash
        }
    };
    // What the endpoint's dialect needs on a conditional write (`dialects`).
    let dialect = dialects::of_host(&config.endpoint_authority);
    if let Some((name, value)) = dialect.and_then(|d| d.conditional_write_header) {
        if is_conditional_write(req) {
            headers.push((name.into(), value.into()));
        }
    }
    let signing = SigningRequest {
        method: req.method.as_str(),
        host: &authority,
        path: &path,
        query: &req.query,
        headers: &headers,
        payload_sha256_hex: &payload_hash,
    };
    let scope = Scope {
        region: &bucket.region,
        service: "s3",
        unix_seconds,
    };
    headers.extend(sigv4::sign(&signing, &bucket.credentials, scope));
    // Unsigned: hosts may rewrite it, and S3 needs it on every PUT.
    if req.method == Method::Put || !req.body.is_empty() {
        headers.push(("content-length".into(), req.body.len().to_string()));
    }

    let query = sigv4::canonical_query(&req.query);
    let path_and_query = if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    };
    HttpRequest {
        method: req.method,
        scheme: config.scheme,
        authority,
        path_and_query,
        headers,
        body: req.body.clone(),
        timeout_ms: timeout_ms(config, req),
        max_response_bytes: req.max_response_bytes,
    }
}

/// The bound on one request: the configured timeout, or the request's own
/// tighter one (`within_ms`, an elector's time left to its deadline).
pub fn timeout_ms(config: &ClientConfig, req: &S3Request) -> u32 {
    req.within_ms.map_or(config.request_timeout_ms, |w| {
        w.min(config.request_timeout_ms)
    })
}

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

/// The text of the first `<tag>…</tag>`, XML entities decoded. S3 error
/// bodies are flat, and LIST entries are read one at a time, so this is all
/// the XML we need.
/// `text` escaped for an XML element's content or an attribute.
pub fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An S3 error body (`<Error>` with its `Code`, `Message` and
/// `RequestId`), as `S3Response::s3_error` reads it: what a store
/// translation makes of its store's error.
pub fn error_body(code: &str, message: &str, request_id: &str) -> Vec<u8> {
    format!(
        "<Error><Code>{}</Code><Message>{}</Message><RequestId>{}</RequestId></Error>",
        xml_escape(code),
        xml_escape(message),
        xml_escape(request_id)
    )
    .into_bytes()
}

pub(crate) fn xml_text(body: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = body.find(&open)? + open.len();
    let len = body[start..].find(&close)?;
    Some(decode_entities(&body[start..start + len]))
}

/// Decodes XML's five named entities and numeric references (`&#34;`,
/// `&#x22;`); anything else is kept as it is.
fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let tail = &rest[amp..];
        let decoded = tail.find(';').and_then(|semi| {
            let name = &tail[1..semi];
            let c = match name {
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "amp" => Some('&'),
                _ => name
                    .strip_prefix("#x")
                    .map(|hex| u32::from_str_radix(hex, 16))
                    .or_else(|| name.strip_prefix('#').map(str::parse::<u32>))
                    .and_then(Result::ok)
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, semi + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &tail[len..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn snippet(body: &str) -> String {
    let flat = crate::text::join(body.split_whitespace(), " ");
    let mut cut: String = flat.chars().take(200).collect();
    if cut.len() < flat.len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{RawConfig, Store};
    use crate::sigv4::Credentials;
    use crate::stores::prepare;

    fn config(addressing: Addressing, token: Option<&str>) -> ClientConfig {
        ClientConfig::validate(RawConfig::of(Store::S3(S3Bucket {
            endpoint: "http://127.0.0.1:8333".into(),
            region: "us-east-1".into(),
            bucket: "locks".into(),
            addressing,
            credentials: Credentials {
                access_key_id: "AKID".into(),
                secret_access_key: "secret".into(),
                session_token: token.map(str::to_string),
            },
        })))
        .unwrap()
    }

    fn header<'a>(r: &'a HttpRequest, name: &str) -> Option<&'a str> {
        r.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn path_style_encodes_the_key_once_and_keeps_slashes() {
        let req = S3Request::new(Method::Get, "a b/c+d/é", 100);
        let http = prepare(&config(Addressing::Path, None), &req, 0);
        assert_eq!(http.authority, "127.0.0.1:8333");
        assert_eq!(http.path_and_query, "/locks/a%20b/c%2Bd/%C3%A9");
        assert_eq!(
            header(&http, "x-amz-content-sha256"),
            Some(sigv4::EMPTY_SHA256)
        );
        assert!(header(&http, "authorization")
            .unwrap()
            .contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date,"));
        assert_eq!(header(&http, "content-length"), None);
    }

    #[test]
    fn virtual_hosted_puts_the_bucket_in_the_host() {
        let mut req = S3Request::new(Method::Get, "", 100);
        req.query = vec![
            ("list-type".into(), "2".into()),
            ("prefix".into(), "a b".into()),
        ];
        let http = prepare(&config(Addressing::VirtualHosted, None), &req, 0);
        assert_eq!(http.authority, "locks.127.0.0.1:8333");
        assert_eq!(http.path_and_query, "/?list-type=2&prefix=a%20b");
    }

    #[test]
    fn puts_carry_length_hash_and_signed_conditions() {
        let req = S3Request::new(Method::Put, "k", 100)
            .header("if-none-match", "*")
            .body("application/json", b"{}".to_vec());
        let http = prepare(&config(Addressing::Path, Some("tok")), &req, 0);
        assert_eq!(header(&http, "content-length"), Some("2"));
        assert_eq!(
            header(&http, "x-amz-content-sha256"),
            Some(sigv4::sha256_hex(b"{}").as_str())
        );
        assert_eq!(header(&http, "x-amz-security-token"), Some("tok"));
        let auth = header(&http, "authorization").unwrap();
        assert!(auth.contains(
            "SignedHeaders=content-type;host;if-none-match;x-amz-content-sha256;x-amz-date;x-amz-security-token,"
        ));
    }

    fn on(endpoint: &str) -> ClientConfig {
        let mut c = config(Addressing::VirtualHosted, None);
        c.endpoint_authority = endpoint.into();
        c
    }

    #[test]
    fn conditional_writes_to_tigris_carry_the_signed_consistency_header() {
        const TIGRIS_CONSISTENT: &str = "x-tigris-consistent";
        let put = S3Request::new(Method::Put, "k", 100)
            .header("if-match", "\"e\"")
            .body("application/json", b"{}".to_vec());
        let create = S3Request::new(Method::Put, "k", 100)
            .header("if-none-match", "*")
            .body("application/json", b"{}".to_vec());
        let delete = S3Request::new(Method::Delete, "k", 100).header("if-match", "\"e\"");
        let plain_put = S3Request::new(Method::Put, "k", 100).body("text/plain", b"x".to_vec());
        let plain_delete = S3Request::new(Method::Delete, "k", 100);
        let read = S3Request::new(Method::Get, "k", 100).header("if-none-match", "\"e\"");
        for tigris in [
            "t3.storage.dev",
            "fly.storage.tigris.dev",
            "T3.Storage.Dev:443",
        ] {
            for req in [&put, &create, &delete] {
                let http = prepare(&on(tigris), req, 0);
                assert_eq!(header(&http, TIGRIS_CONSISTENT), Some("true"), "{tigris}");
                let auth = header(&http, "authorization").unwrap();
                assert!(auth.contains(";x-tigris-consistent,"), "{tigris}: {auth}");
            }
            for req in [&plain_put, &plain_delete, &read] {
                let http = prepare(&on(tigris), req, 0);
                assert_eq!(header(&http, TIGRIS_CONSISTENT), None, "{tigris}");
            }
        }
        for other in [
            "s3.us-east-1.amazonaws.com",
            "127.0.0.1:8333",
            "nyc3.digitaloceanspaces.com",
            "storage.dev.example.com",
            "notstorage.dev",
            "mytigris.dev",
        ] {
            for req in [&put, &create, &delete] {
                let http = prepare(&on(other), req, 0);
                assert_eq!(header(&http, TIGRIS_CONSISTENT), None, "{other}");
            }
        }
    }

    #[test]
    fn debug_of_a_signed_request_never_shows_its_credentials() {
        let req = S3Request::new(Method::Put, "k", 100)
            .header("if-none-match", "*")
            .body("application/json", b"{}".to_vec());
        let http = prepare(
            &config(Addressing::Path, Some("SESSION-TOKEN-xyz")),
            &req,
            0,
        );
        let auth = header(&http, "authorization").unwrap().to_string();
        let signature = auth.rsplit("Signature=").next().unwrap().to_string();
        assert_eq!(signature.len(), 64, "{auth}");
        let shown = format!("{http:?}");
        for secret in [
            auth.as_str(),
            signature.as_str(),
            "SESSION-TOKEN-xyz",
            "secret",
        ] {
            assert!(!shown.contains(secret), "{secret:?} in {shown}");
        }
        // What was sent stays visible: the names, and the other values.
        for visible in [
            "\"authorization\"",
            "\"x-amz-security-token\"",
            "if-none-match",
        ] {
            assert!(shown.contains(visible), "{visible} missing from {shown}");
        }
        assert!(shown.contains(&sigv4::sha256_hex(b"{}")), "{shown}");
        // Pretty-printing takes the same path.
        assert!(!format!("{http:#?}").contains(&signature));
    }

    #[test]
    fn a_declared_payload_hash_is_signed_in_place_of_the_real_one() {
        let wrong = sigv4::sha256_hex(b"other bytes");
        let req = S3Request::new(Method::Put, "k", 100)
            .header(PAYLOAD_HASH, &wrong)
            .body("text/plain", b"these bytes".to_vec());
        let http = prepare(&config(Addressing::Path, None), &req, 0);
        let hashes: Vec<_> = http
            .headers
            .iter()
            .filter(|(k, _)| k == PAYLOAD_HASH)
            .collect();
        assert_eq!(hashes.len(), 1, "{:?}", http.headers);
        assert_eq!(hashes[0].1, wrong);
        assert_eq!(http.body, b"these bytes");
    }

    fn reply(status: u16, body: &str, headers: &[(&str, &str)]) -> S3Response {
        crate::testing::response(status, headers, body)
    }

    #[test]
    fn xml_errors_become_typed_errors() {
        let body = "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The bucket &amp; more</Message><RequestId>R1</RequestId></Error>";
        match reply(404, body, &[]).into_error() {
            Error::NoSuchBucket(e) => {
                assert_eq!(
                    (e.code.as_str(), e.message.as_str(), e.request_id.as_str()),
                    ("NoSuchBucket", "The bucket & more", "R1")
                );
            }
            other => panic!("{other:?}"),
        }
        let denied = "<Error><Code>SignatureDoesNotMatch</Code></Error>";
        assert!(
            matches!(reply(403, denied, &[("x-amz-request-id", "H")]).into_error(), Error::AccessDenied(e) if e.request_id == "H")
        );
        assert!(matches!(
            reply(403, "", &[]).into_error(),
            Error::AccessDenied(_)
        ));
        let conflict = "<Error><Code>ConditionalRequestConflict</Code></Error>";
        assert!(matches!(
            reply(409, conflict, &[]).into_error(),
            Error::Conflict(_)
        ));
    }

    #[test]
    fn list_replies_give_their_keys_decoded() {
        let body = "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"x\"><Name>b</Name>\
            <IsTruncated>true</IsTruncated>\
            <Contents><Key>k/epoch-1.json</Key><ETag>&#34;ab&#34;</ETag></Contents>\
            <Contents><Key>a &amp; b&#x2F;&#233;&bogus;</Key></Contents>\
            <KeyCount>2</KeyCount><NextContinuationToken>1/a+&amp;=</NextContinuationToken>\
            </ListBucketResult>";
        let page = parse_list(body.as_bytes()).unwrap();
        assert_eq!(page.keys, ["k/epoch-1.json", "a & b/é&bogus;"]);
        assert!(page.truncated);
        assert_eq!(page.next_token.as_deref(), Some("1/a+&="));
        let empty = "<ListBucketResult><IsTruncated>false</IsTruncated><KeyCount>0</KeyCount></ListBucketResult>";
        assert_eq!(
            parse_list(empty.as_bytes()).unwrap(),
            ListPage {
                keys: vec![],
                truncated: false,
                next_token: None,
            }
        );
        // An empty token continues nothing.
        let blank = "<ListBucketResult><IsTruncated>true</IsTruncated>\
            <NextContinuationToken></NextContinuationToken></ListBucketResult>";
        let page = parse_list(blank.as_bytes()).unwrap();
        assert_eq!((page.truncated, page.next_token), (true, None));
        for bad in [
            &b"<html>busy</html>"[..],
            b"\xff\xfe",
            b"<ListBucketResult><Contents><Key>x</Key>",
            b"<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
        ] {
            assert!(
                parse_list(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn list_requests_query_the_bucket() {
        let req = list_request("p/k/epoch-", Some("p/k/epoch-7"));
        let http = prepare(&config(Addressing::Path, None), &req, 0);
        assert_eq!(
            http.path_and_query,
            "/locks?list-type=2&max-keys=200&prefix=p%2Fk%2Fepoch-&start-after=p%2Fk%2Fepoch-7"
        );
    }

    #[test]
    fn continuations_carry_the_token_and_no_start_after() {
        let req = list_continue("p/k/epoch-", "opaque/+=");
        let http = prepare(&config(Addressing::Path, None), &req, 0);
        assert_eq!(
            http.path_and_query,
            "/locks?continuation-token=opaque%2F%2B%3D&list-type=2&max-keys=200&prefix=p%2Fk%2Fepoch-"
        );
    }

    const ENDPOINT: &str = "http://127.0.0.1:8888";

    fn judged(req: &S3Request, reply: &S3Response) -> Option<String> {
        let endpoint = Endpoint {
            store: &PROFILE,
            url: ENDPOINT.into(),
        };
        not_the_store(&endpoint, req, reply).map(|e| match e {
            Error::InvalidConfig { field, reason } => {
                assert_eq!(field, "endpoint");
                assert!(reason.starts_with(ENDPOINT), "{reason}");
                assert!(reason.contains("not an S3 endpoint"), "{reason}");
                reason
            }
            other => panic!("{other:?}"),
        })
    }

    const NO_SUCH_KEY: &str = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code>\
        <Message>The specified key does not exist.</Message></Error>";

    #[test]
    fn a_404_without_an_s3_error_body_is_no_s3_store() {
        for method in [Method::Get, Method::Put, Method::Delete] {
            let req = S3Request::new(method, "locks/.s3-lease-seal-key", 100);
            for body in [
                "",
                "<html><h1>404 Not Found</h1></html>",
                "404 page not found\n",
            ] {
                let reason = judged(&req, &reply(404, body, &[])).unwrap();
                assert!(
                    reason.contains(&format!(
                        "answered {} \"locks/.s3-lease-seal-key\" with 404 and no S3 error body",
                        method.as_str()
                    )),
                    "{reason}"
                );
            }
            // S3's own 404s: the key, or the bucket.
            assert_eq!(judged(&req, &reply(404, NO_SUCH_KEY, &[])), None);
            let bucket = "<Error><Code>NoSuchBucket</Code></Error>";
            assert_eq!(judged(&req, &reply(404, bucket, &[])), None);
            // An <Error> without a code is not S3's either.
            assert!(judged(&req, &reply(404, "<Error></Error>", &[])).is_some());
        }
        let list = list_request("locks/k/epoch-", None);
        assert!(judged(&list, &reply(404, "", &[])).is_some());
        // A HEAD has no body to judge; a body too large to read is not judged.
        let head = S3Request::new(Method::Head, "k", 100);
        assert_eq!(judged(&head, &reply(404, "", &[])), None);
        let get = S3Request::new(Method::Get, "k", 100);
        let huge = S3Response {
            body_too_large: Some(1 << 30),
            ..reply(404, "", &[])
        };
        assert_eq!(judged(&get, &huge), None);
    }

    #[test]
    fn a_write_is_s3_s_only_as_200_with_an_etag() {
        let put = S3Request::new(Method::Put, "k", 100).body("application/json", b"{}".to_vec());
        // A SeaweedFS filer: 201 and no ETag.
        let reason = judged(&put, &reply(201, "{\"name\":\"k\",\"size\":2}", &[])).unwrap();
        assert!(reason.contains("answered PUT \"k\" with 201"), "{reason}");
        let reason = judged(&put, &reply(200, "", &[])).unwrap();
        assert!(reason.contains("with 200 and no ETag"), "{reason}");
        assert!(judged(&put, &reply(200, "", &[("etag", "")])).is_some());
        assert!(judged(&put, &reply(204, "", &[("etag", "\"e\"")])).is_some());
        assert_eq!(judged(&put, &reply(200, "", &[("etag", "\"e\"")])), None);
    }

    #[test]
    fn an_object_read_is_s3_s_only_with_its_etag() {
        let get = S3Request::new(Method::Get, "k", 100);
        let reason = judged(&get, &reply(200, "{}", &[])).unwrap();
        assert!(
            reason.contains("answered GET \"k\" with 200 and no ETag"),
            "{reason}"
        );
        assert_eq!(judged(&get, &reply(200, "{}", &[("etag", "\"e\"")])), None);
        // Not modified: no body, and S3's ETag is not required of it here.
        assert_eq!(judged(&get, &reply(304, "", &[])), None);
    }

    #[test]
    fn a_listing_is_s3_s_only_as_a_list_bucket_result() {
        let list = list_request("locks/k/epoch-", None);
        let reason = judged(&list, &reply(200, "<html>Filer</html>", &[])).unwrap();
        assert!(
            reason.contains("answered a LIST of the bucket with 200 and no <ListBucketResult>"),
            "{reason}"
        );
        let page = "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"x\"><KeyCount>0</KeyCount></ListBucketResult>";
        assert_eq!(judged(&list, &reply(200, page, &[])), None);
        // A listing needs no ETag; a page too large to read is not judged.
        let huge = S3Response {
            body_too_large: Some(1 << 30),
            ..reply(200, "", &[])
        };
        assert_eq!(judged(&list, &huge), None);
    }

    #[test]
    fn other_statuses_are_read_as_before_whatever_their_body() {
        for method in [Method::Get, Method::Put, Method::Delete, Method::Head] {
            let req = S3Request::new(method, "k", 100);
            for status in [400, 403, 409, 412, 429, 500, 501, 502, 503, 504] {
                for body in ["", "<html>busy</html>"] {
                    assert_eq!(judged(&req, &reply(status, body, &[])), None, "{status}");
                }
            }
        }
        // A delete's success, and a HEAD's, carry nothing to judge.
        for method in [Method::Delete, Method::Head] {
            let req = S3Request::new(method, "k", 100);
            assert_eq!(judged(&req, &reply(204, "", &[])), None);
            assert_eq!(judged(&req, &reply(200, "", &[])), None);
        }
        // A store's own call (POST) is not S3's.
        let post = S3Request::new(Method::Post, "", 100);
        assert_eq!(judged(&post, &reply(404, "", &[])), None);
    }

    #[test]
    fn html_from_a_proxy_is_still_a_clean_error() {
        let html = "<html>\n<body><h1>502 Bad Gateway</h1>\n</body></html>";
        match reply(502, html, &[]).into_error() {
            Error::S3(e) => {
                assert_eq!(e.status, 502);
                assert_eq!(e.code, "");
                assert!(e.message.contains("502 Bad Gateway"), "{}", e.message);
            }
            other => panic!("{other:?}"),
        }
    }
}

//! One in-memory S3, faithful where locks care: ETags are the MD5 of the
//! bytes (equal bytes, equal ETag, whatever the metadata), `Last-Modified`
//! and `Date` are whole seconds of the server's own clock, conditional
//! writes follow AWS (or, by switch, SeaweedFS and weaker stores), LIST
//! pages in byte order. Every unit test and the simulation talk to this one
//! store, so a protocol cannot pass against a friendlier rule than S3's.
//!
//! It answers any `S3Request` and never panics: what it does not model is a
//! 400 with an S3 error body.

pub mod dates;
mod list;
mod versions;

#[cfg(test)]
mod tests;

pub use dates::http_date;

use crate::stores::s3::{Method, S3Request, S3Response};
use md5::{Digest, Md5};
use std::collections::BTreeMap;

/// S3 refuses longer keys.
const MAX_KEY_BYTES: usize = 1024;
/// What S3 stores when a PUT names no content type.
const DEFAULT_CONTENT_TYPE: &str = "binary/octet-stream";

/// How a store answers `If-Match` on a key that does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissingIfMatch {
    /// AWS: 404 NoSuchKey.
    #[default]
    NotFound,
    /// SeaweedFS: 412 PreconditionFailed.
    PreconditionFailed,
}

/// One stored object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub body: Vec<u8>,
    /// `"<md5 hex>"`, quotes included, as S3 sends it.
    pub etag: String,
    /// Whole seconds: S3 keeps no finer `Last-Modified`.
    pub last_modified_ms: u64,
    pub content_type: String,
    /// `x-amz-meta-*` headers, names lowercase.
    pub metadata: Vec<(String, String)>,
}

impl Object {
    /// What a plain PUT of `body` at `now_ms` stores.
    pub fn new(body: Vec<u8>, now_ms: u64) -> Self {
        Object {
            etag: etag_of(&body),
            body,
            last_modified_ms: whole_seconds(now_ms),
            content_type: DEFAULT_CONTENT_TYPE.to_string(),
            metadata: Vec::new(),
        }
    }

    /// Adds one `x-amz-meta-*` header (the name is lowercased).
    pub fn with_metadata(mut self, name: &str, value: &str) -> Self {
        self.metadata
            .push((name.to_ascii_lowercase(), value.to_string()));
        self
    }
}

/// S3's ETag of a single-part upload: the MD5 of the bytes, quoted. Metadata
/// and content type are never part of it.
pub fn etag_of(body: &[u8]) -> String {
    let digest = Md5::digest(body);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

fn whole_seconds(ms: u64) -> u64 {
    ms - ms % 1000
}

/// The store, its clock and the faults it is told to show.
#[derive(Debug, Clone)]
pub struct S3Model {
    pub objects: BTreeMap<String, Object>,
    /// The server's clock, ms since the Unix epoch.
    pub now_ms: u64,
    /// The answer to `If-Match` (PUT or DELETE) on a missing key.
    pub missing_if_match: MissingIfMatch,
    /// Answer the next this-many conditional writes (PUT or DELETE with
    /// `If-Match` or `If-None-Match`) with 409 ConditionalRequestConflict,
    /// before evaluating them: what S3 says when writes to a key race.
    pub conflicts: u32,
    /// 501 NotImplemented to any request carrying `If-Match`: a store
    /// without it.
    pub if_match_unsupported: bool,
    /// Ignore `If-Match` and `If-None-Match` entirely: every writer wins.
    pub ignore_conditions: bool,
    /// GET and HEAD with `If-None-Match` equal to the current ETag answer
    /// 304 Not Modified.
    pub conditional_get: bool,
    /// A PUT whose declared `x-amz-content-sha256` is not the hash of its
    /// body answers 400, as AWS does (SeaweedFS stores it).
    pub checks_payload_hash: bool,
    /// At most this many keys on a LIST page, whatever `max-keys` asks: S3
    /// may return fewer keys than asked, with `IsTruncated` and a token.
    /// `None`: as many as asked.
    pub list_page_keys: Option<usize>,
    /// The next this-many LIST replies come back empty but truncated, their
    /// token resuming where they started, as S3 may answer (a page of
    /// deleted keys). A listing from the very start under an empty or
    /// one-character prefix has no position a token could name: answered
    /// as usual, and not counted.
    pub empty_list_pages: u32,
    /// Refuse the next this-many requests with 400 `ExpiredToken`, as S3
    /// answers a request signed with temporary keys past their expiry.
    pub expired_token_next: u32,
    pub next_request_id: u64,
    /// The bucket's lifecycle configuration, as GetBucketLifecycleConfiguration
    /// returns it (`GET /?lifecycle`); `None`: 404
    /// `NoSuchLifecycleConfiguration`, as S3 answers for a bucket without.
    pub lifecycle: Option<String>,
}

/// An error reply in the making: status, S3 code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refusal {
    status: u16,
    code: &'static str,
    message: &'static str,
}

impl Refusal {
    fn bad_request(code: &'static str, message: &'static str) -> Self {
        Refusal {
            status: 400,
            code,
            message,
        }
    }

    fn no_such_key() -> Self {
        Refusal {
            status: 404,
            code: "NoSuchKey",
            message: "The specified key does not exist.",
        }
    }

    fn precondition_failed() -> Self {
        Refusal {
            status: 412,
            code: "PreconditionFailed",
            message: "At least one of the pre-conditions you specified did not hold",
        }
    }

    fn conflict() -> Self {
        Refusal {
            status: 409,
            code: "ConditionalRequestConflict",
            message: "A conflicting conditional operation is currently in progress against this resource. Please try again.",
        }
    }

    fn not_implemented() -> Self {
        Refusal {
            status: 501,
            code: "NotImplemented",
            message: "A header you provided implies functionality that is not implemented",
        }
    }
}

/// The conditions a request carries, values trimmed.
struct Conditions<'a> {
    if_match: Option<&'a str>,
    if_none_match: Option<&'a str>,
}

impl<'a> Conditions<'a> {
    fn of(req: &'a S3Request) -> Self {
        Conditions {
            if_match: header(req, "if-match"),
            if_none_match: header(req, "if-none-match"),
        }
    }

    fn any(&self) -> bool {
        self.if_match.is_some() || self.if_none_match.is_some()
    }
}

fn header<'a>(req: &'a S3Request, name: &str) -> Option<&'a str> {
    req.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

/// Whether a condition's ETag names `etag`. `*` names any object; S3 takes
/// the ETag quoted or bare.
fn names(condition: &str, etag: &str) -> bool {
    let bare = |e: &str| e.trim().trim_matches('"').to_string();
    condition == "*" || bare(condition) == bare(etag)
}

/// XML text: the five characters XML reserves, escaped.
fn escape_xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

impl S3Model {
    /// An empty bucket at `now_ms`, with AWS's answers and no faults.
    pub fn new(now_ms: u64) -> Self {
        S3Model {
            objects: BTreeMap::new(),
            now_ms,
            missing_if_match: MissingIfMatch::NotFound,
            conflicts: 0,
            if_match_unsupported: false,
            ignore_conditions: false,
            conditional_get: true,
            checks_payload_hash: true,
            list_page_keys: None,
            empty_list_pages: 0,
            expired_token_next: 0,
            next_request_id: 1,
            lifecycle: None,
        }
    }

    pub fn advance(&mut self, ms: u64) {
        self.now_ms = self.now_ms.saturating_add(ms);
    }

    pub fn object(&self, key: &str) -> Option<&Object> {
        self.objects.get(key)
    }

    /// Stores `body` under `key` as a plain PUT would, without a request
    /// (another writer, an operator): no faults, no request id. Returns the
    /// ETag.
    pub fn put_object(&mut self, key: &str, body: &[u8]) -> String {
        let object = Object::new(body.to_vec(), self.now_ms);
        let etag = object.etag.clone();
        self.objects.insert(key.to_string(), object);
        etag
    }

    /// Answers one request as S3 would, at `now_ms`.
    pub fn handle(&mut self, req: &S3Request) -> S3Response {
        let request_id = format!("{:016X}", self.next_request_id);
        self.next_request_id = self.next_request_id.wrapping_add(1);
        let outcome = if self.expired_token_next > 0 {
            self.expired_token_next -= 1;
            Err(Refusal::bad_request(
                "ExpiredToken",
                "The provided token has expired.",
            ))
        } else if req.object_key.is_empty() {
            self.on_bucket(req)
        } else if req.object_key.len() > MAX_KEY_BYTES {
            Err(Refusal::bad_request(
                "KeyTooLongError",
                "Your key is too long",
            ))
        } else {
            match req.method {
                Method::Get | Method::Head => self.read(req),
                Method::Put => self.put(req),
                Method::Delete => self.delete(req),
                Method::Post => Err(Refusal::bad_request(
                    "InvalidRequest",
                    "S3 takes no POST on an object here",
                )),
            }
        };
        let reply = outcome.unwrap_or_else(|refusal| error_reply(&refusal, &request_id));
        self.finish(req, reply, request_id)
    }

    /// Headers every reply carries, and the body as our transport hands it
    /// over: none for HEAD, none (but its length) past the request's limit.
    fn finish(&self, req: &S3Request, mut reply: S3Response, request_id: String) -> S3Response {
        reply.headers.push(("date".into(), http_date(self.now_ms)));
        reply.headers.push(("x-amz-request-id".into(), request_id));
        if req.method == Method::Head {
            reply.body.clear();
            return reply;
        }
        reply
            .headers
            .push(("content-length".into(), reply.body.len().to_string()));
        if reply.body.len() > req.max_response_bytes {
            reply.body_too_large = Some(reply.body.len() as u64);
            reply.body.clear();
        }
        reply
    }

    fn on_bucket(&mut self, req: &S3Request) -> Result<S3Response, Refusal> {
        if req.method != Method::Get {
            return Err(Refusal::bad_request(
                "InvalidRequest",
                "only ListObjectsV2, ListObjectVersions (of an unversioned bucket) and GetBucketLifecycleConfiguration are modelled on the bucket",
            ));
        }
        if req.query.iter().any(|(k, _)| k == "lifecycle") {
            return match &self.lifecycle {
                Some(xml) => Ok(S3Response {
                    status: 200,
                    headers: vec![("content-type".into(), "application/xml".into())],
                    body: xml.clone().into_bytes(),
                    body_too_large: None,
                }),
                None => Err(Refusal {
                    status: 404,
                    code: "NoSuchLifecycleConfiguration",
                    message: "The lifecycle configuration does not exist",
                }),
            };
        }
        if req.query.iter().any(|(k, _)| k == "versions") {
            let xml = versions::list_versions(&self.objects, &req.query, self.list_page_keys)?;
            return Ok(S3Response {
                status: 200,
                headers: vec![("content-type".into(), "application/xml".into())],
                body: xml.into_bytes(),
                body_too_large: None,
            });
        }
        let paging = list::Paging {
            page_keys: self.list_page_keys,
            empty: self.empty_list_pages > 0,
        };
        let (xml, emptied) = list::list(&self.objects, &req.query, paging)?;
        if emptied {
            self.empty_list_pages -= 1;
        }
        Ok(S3Response {
            status: 200,
            headers: vec![("content-type".into(), "application/xml".into())],
            body: xml.into_bytes(),
            body_too_large: None,
        })
    }

    /// GET and HEAD of an object (`finish` drops HEAD's body).
    fn read(&self, req: &S3Request) -> Result<S3Response, Refusal> {
        let conditions = Conditions::of(req);
        if self.if_match_unsupported && conditions.if_match.is_some() {
            return Err(Refusal::not_implemented());
        }
        let object = self
            .objects
            .get(&req.object_key)
            .ok_or_else(Refusal::no_such_key)?;
        if !self.ignore_conditions {
            if conditions.if_match.is_some_and(|c| !names(c, &object.etag)) {
                return Err(Refusal::precondition_failed());
            }
            let unchanged = conditions
                .if_none_match
                .is_some_and(|c| names(c, &object.etag));
            if self.conditional_get && unchanged {
                return Ok(S3Response {
                    status: 304,
                    headers: vec![
                        ("etag".into(), object.etag.clone()),
                        ("last-modified".into(), http_date(object.last_modified_ms)),
                    ],
                    ..S3Response::default()
                });
            }
        }
        let mut headers = vec![
            ("etag".into(), object.etag.clone()),
            ("last-modified".into(), http_date(object.last_modified_ms)),
            ("content-type".into(), object.content_type.clone()),
        ];
        if req.method == Method::Head {
            headers.push(("content-length".into(), object.body.len().to_string()));
        }
        headers.extend(object.metadata.iter().cloned());
        Ok(S3Response {
            status: 200,
            headers,
            body: object.body.clone(),
            body_too_large: None,
        })
    }

    /// The checks a conditional write passes before it is evaluated: an
    /// injected 409, then a store without `If-Match`.
    fn admit_write(&mut self, conditions: &Conditions) -> Result<(), Refusal> {
        if conditions.any() && self.conflicts > 0 {
            self.conflicts -= 1;
            return Err(Refusal::conflict());
        }
        if self.if_match_unsupported && conditions.if_match.is_some() {
            return Err(Refusal::not_implemented());
        }
        Ok(())
    }

    /// `If-Match` against the key's current object, on PUT and DELETE.
    fn check_if_match(&self, key: &str, if_match: Option<&str>) -> Result<(), Refusal> {
        let Some(wanted) = if_match else {
            return Ok(());
        };
        match self.objects.get(key) {
            None => Err(match self.missing_if_match {
                MissingIfMatch::NotFound => Refusal::no_such_key(),
                MissingIfMatch::PreconditionFailed => Refusal::precondition_failed(),
            }),
            Some(object) if !names(wanted, &object.etag) => Err(Refusal::precondition_failed()),
            Some(_) => Ok(()),
        }
    }

    fn put(&mut self, req: &S3Request) -> Result<S3Response, Refusal> {
        let declared = header(req, crate::stores::s3::PAYLOAD_HASH);
        if self.checks_payload_hash
            && declared.is_some_and(|d| d != crate::sigv4::sha256_hex(&req.body))
        {
            return Err(Refusal::bad_request(
                "XAmzContentSHA256Mismatch",
                "The provided 'x-amz-content-sha256' header does not match what was computed.",
            ));
        }
        let conditions = Conditions::of(req);
        self.admit_write(&conditions)?;
        if !self.ignore_conditions {
            match conditions.if_none_match {
                None => {}
                Some("*") if self.objects.contains_key(&req.object_key) => {
                    return Err(Refusal::precondition_failed());
                }
                Some("*") => {}
                // PutObject takes only `*`; an ETag here is refused by AWS.
                Some(_) => return Err(Refusal::not_implemented()),
            }
            self.check_if_match(&req.object_key, conditions.if_match)?;
        }
        let object = Object {
            etag: etag_of(&req.body),
            body: req.body.clone(),
            last_modified_ms: whole_seconds(self.now_ms),
            content_type: header(req, "content-type")
                .unwrap_or(DEFAULT_CONTENT_TYPE)
                .to_string(),
            metadata: req
                .headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
                .filter(|(k, _)| k.starts_with("x-amz-meta-"))
                .collect(),
        };
        let etag = object.etag.clone();
        self.objects.insert(req.object_key.clone(), object);
        Ok(S3Response {
            status: 200,
            headers: vec![("etag".into(), etag)],
            ..S3Response::default()
        })
    }

    /// DeleteObject: `If-Match` as on PUT; deleting a missing key without
    /// a condition succeeds, as on S3.
    fn delete(&mut self, req: &S3Request) -> Result<S3Response, Refusal> {
        let conditions = Conditions::of(req);
        self.admit_write(&conditions)?;
        if !self.ignore_conditions {
            self.check_if_match(&req.object_key, conditions.if_match)?;
        }
        self.objects.remove(&req.object_key);
        Ok(S3Response {
            status: 204,
            ..S3Response::default()
        })
    }
}

/// S3's 404 for a missing object, as the model sends it: a test's
/// scripted "missing" reply (a bare 404 is no S3 store's: `s3::not_the_store`).
pub fn no_such_key() -> S3Response {
    error_reply(&Refusal::no_such_key(), "scripted")
}

/// S3's 409 `ConditionalRequestConflict`, "try again", as a script answers.
pub fn conflict() -> S3Response {
    error_reply(&Refusal::conflict(), "scripted")
}

fn error_reply(refusal: &Refusal, request_id: &str) -> S3Response {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{}</Code><Message>{}</Message><RequestId>{}</RequestId></Error>",
        refusal.code,
        escape_xml(refusal.message),
        escape_xml(request_id)
    );
    S3Response {
        status: refusal.status,
        headers: vec![("content-type".into(), "application/xml".into())],
        body: body.into_bytes(),
        body_too_large: None,
    }
}

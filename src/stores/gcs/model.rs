//! An in-memory Google Cloud Storage JSON API, faithful where locks care:
//! buckets of objects, each write a new *generation* (a unique, rising,
//! microsecond-like number, never a hash: equal bytes written twice get
//! two), multipart uploads, media and metadata GETs and DELETEs with
//! `ifGenerationMatch` / `ifGenerationNotMatch` evaluated atomically (an
//! upload's and a delete's alike, as GCS does; fake-gcs-server ignores a
//! delete's), 304 for a GET whose `ifGenerationNotMatch` names the
//! object's generation, whole-second `Last-Modified` and `Date`, `updated`
//! as RFC 3339 in the JSON resource, metadata as `X-Goog-Meta-*` on a
//! media GET, a wrong `md5Hash` refused, and requests authorized as GCS
//! does: bearer tokens it was told to accept, or none when anonymous
//! callers may write (an emulator). Errors come as GCS sends them: a JSON
//! `error` object (412 `conditionNotMet`, 404 `notFound`, 401
//! `authError`, 429 `rateLimitExceeded`, 503 `backendError`), except a
//! media GET's 404, a line of plain text; the request id in
//! `X-GUploader-UploadID`.
//!
//! Switches for what tests need: `rate_limit` (GCS's limit of about one
//! write a second per object: a second write within 1 s is 429),
//! `ignore_delete_conditions` (fake-gcs-server's DELETE), `busy_next`
//! (503s), and short LIST pages (`list_page`).
//!
//! `handle` takes a request the protocol emits, prepares it as a client
//! of the model's bucket would (`gcs::prepare`), answers the HTTP request,
//! and reads the reply back as the protocol does (`gcs::read_reply`): the
//! store the simulation and unit tests run GCS clients against.

use super::{GcsBucket, GcsCredential};
use crate::config::{ClientConfig, Store};
use crate::stores::gcs;
use crate::stores::s3::model::http_date;
use crate::stores::s3::{HttpRequest, Method, S3Request, S3Response};
use crate::testing::model_io::{Model, ModelIo};
use crate::testing::uri::{percent_decode, split_target};
use md5::{Digest, Md5};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The bucket every test client uses.
pub const BUCKET: &str = "locks";
/// fake-gcs-server's usual port, as the model's clients name it.
pub const ENDPOINT: &str = "http://127.0.0.1:4443";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcsObject {
    pub body: Vec<u8>,
    pub generation: u64,
    /// Milliseconds (GCS keeps microseconds; `updated` shows them).
    pub updated_ms: u64,
    pub content_type: String,
    /// Metadata keys (as given) and values.
    pub metadata: Vec<(String, String)>,
}

pub struct GcsModel {
    /// Bucket → object name → object.
    pub buckets: BTreeMap<String, BTreeMap<String, GcsObject>>,
    pub now_ms: u64,
    /// Bearer tokens accepted.
    pub bearer_tokens: Vec<String>,
    /// Requests without `Authorization` are served (an emulator, a bucket
    /// open to all). On by default, as fake-gcs-server.
    pub anonymous: bool,
    /// A second write (upload or delete) to one object within 1 s of the
    /// last is refused with 429 `rateLimitExceeded`, unapplied.
    pub rate_limit: bool,
    /// A DELETE's `ifGenerationMatch` is ignored, as fake-gcs-server does.
    pub ignore_delete_conditions: bool,
    /// The next this many writes are refused with 503 `backendError`
    /// before anything is applied.
    pub busy_next: u32,
    /// The most objects one LIST page holds, whatever `maxResults` asks.
    pub list_page: usize,
    /// The client config `handle` prepares with.
    pub client: ClientConfig,
    /// The buckets' `lifecycle` resource, as the bucket's metadata shows
    /// it (`{"rule": [...]}`); `None`: no lifecycle rules (GCS then leaves
    /// the field out).
    pub lifecycle: Option<serde_json::Value>,
    last_generation: u64,
    /// Object name → when it was last written, for `rate_limit`.
    last_write_ms: BTreeMap<String, u64>,
    next_request_id: u64,
}

/// An error reply in the making.
struct Refusal {
    status: u16,
    reason: &'static str,
    message: String,
    /// A media GET's 404: plain text, not JSON.
    text: bool,
}

fn refuse(status: u16, reason: &'static str, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        reason,
        message: message.into(),
        text: false,
    }
}

fn condition_not_met() -> Refusal {
    refuse(
        412,
        "conditionNotMet",
        "At least one of the pre-conditions you specified did not hold.",
    )
}

fn no_such_object(bucket: &str, name: &str) -> Refusal {
    refuse(404, "notFound", format!("No such object: {bucket}/{name}"))
}

fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A generation condition's number; a malformed one is GCS's 400.
fn generation_param(query: &[(String, String)], name: &str) -> Result<Option<u64>, Refusal> {
    match param(query, name) {
        None => Ok(None),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .and_then(|g| u64::try_from(g).ok())
            .map(Some)
            .ok_or_else(|| refuse(400, "invalid", format!("Invalid value for {name}: {v}"))),
    }
}

/// A client config of the model's bucket, anonymous.
pub fn client_config(bucket: &str) -> ClientConfig {
    let mut raw = crate::testing::raw_config(
        crate::config::Strategy::SingleObject,
        crate::expiry::ExpiryClock::Server,
    );
    raw.store = Store::Gcs(GcsBucket {
        endpoint: ENDPOINT.into(),
        bucket: bucket.into(),
        credential: GcsCredential::Anonymous,
    });
    ClientConfig::validate(raw).expect("the model's client config is valid")
}

/// The parts of a `multipart/related` body: each part's headers
/// (lowercased) and bytes.
type Part = (Vec<(String, String)>, Vec<u8>);

fn multipart_parts(content_type: &str, body: &[u8]) -> Option<Vec<Part>> {
    let boundary = content_type
        .split(';')
        .map(str::trim)
        .find_map(|p| p.strip_prefix("boundary="))?
        .trim_matches('"');
    let delimiter = format!("--{boundary}");
    let find = |hay: &[u8], from: usize| {
        hay.get(from..)?
            .windows(delimiter.len())
            .position(|w| w == delimiter.as_bytes())
            .map(|i| i + from)
    };
    let mut parts = Vec::new();
    let mut at = find(body, 0)? + delimiter.len();
    loop {
        if body.get(at..at + 2) == Some(b"--") {
            return Some(parts);
        }
        let start = at + 2; // the CRLF after the delimiter
        let end = find(body, start)?;
        // The CRLF before the next delimiter belongs to it.
        let part = body.get(start..end.checked_sub(2)?)?;
        let split = part.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = std::str::from_utf8(&part[..split]).ok()?;
        let headers = head
            .split("\r\n")
            .filter_map(|line| line.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        parts.push((headers, part[split + 4..].to_vec()));
        at = end + delimiter.len();
    }
}

impl GcsModel {
    /// One empty bucket, `BUCKET`, at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        let mut buckets = BTreeMap::new();
        buckets.insert(BUCKET.to_string(), BTreeMap::new());
        GcsModel {
            buckets,
            now_ms,
            bearer_tokens: Vec::new(),
            anonymous: true,
            rate_limit: false,
            ignore_delete_conditions: false,
            busy_next: 0,
            list_page: 2,
            client: client_config(BUCKET),
            lifecycle: None,
            last_generation: 0,
            last_write_ms: BTreeMap::new(),
            next_request_id: 1,
        }
    }

    pub fn advance(&mut self, ms: u64) {
        self.now_ms = self.now_ms.saturating_add(ms);
    }

    /// The object `name` of the test bucket.
    pub fn object(&self, name: &str) -> Option<&GcsObject> {
        self.buckets.get(BUCKET)?.get(name)
    }

    /// A protocol request of the model's client: prepared, answered, read back.
    pub fn handle(&mut self, req: &S3Request) -> S3Response {
        let config = self.client.clone();
        self.handle_for(&config, req)
    }

    /// `handle` for a client configured with `config` (another credential,
    /// another bucket).
    pub fn handle_for(&mut self, config: &ClientConfig, req: &S3Request) -> S3Response {
        let Store::Gcs(credential) = &config.store else {
            return S3Response {
                status: 400,
                ..S3Response::default()
            };
        };
        let http = gcs::prepare(config.reach(), credential, req, self.now_ms / 1000);
        let mut reply = self.handle_http(&http);
        if reply.body.len() > req.max_response_bytes {
            reply.body_too_large = Some(reply.body.len() as u64);
            reply.body.clear();
        }
        gcs::read_reply(req, reply)
    }

    /// One HTTP request, answered as GCS's JSON API would.
    pub fn handle_http(&mut self, req: &HttpRequest) -> S3Response {
        let request_id = format!("ABPtcPmodel{:08}", self.next_request_id);
        self.next_request_id += 1;
        let outcome = self.authorized(req).and_then(|()| self.serve(req));
        let mut reply = match outcome {
            Ok(reply) => reply,
            Err(refusal) => error_reply(&refusal),
        };
        reply.headers.push(("date".into(), http_date(self.now_ms)));
        reply
            .headers
            .push(("x-guploader-uploadid".into(), request_id));
        reply
    }

    fn authorized(&self, req: &HttpRequest) -> Result<(), Refusal> {
        match header(req, "authorization") {
            Some(auth) => match auth.strip_prefix("Bearer ") {
                Some(token) if self.bearer_tokens.iter().any(|t| t == token) => Ok(()),
                _ => Err(refuse(401, "authError", "Invalid Credentials")),
            },
            None if self.anonymous => Ok(()),
            None => Err(refuse(
                401,
                "required",
                "Anonymous caller does not have storage.objects.get access to the Google Cloud Storage object.",
            )),
        }
    }

    fn serve(&mut self, req: &HttpRequest) -> Result<S3Response, Refusal> {
        let (path, query) = split_target(&req.path_and_query);
        let not_found = || refuse(404, "notFound", "Not Found");
        let (upload, rest) = match path.strip_prefix("/upload/storage/v1/b/") {
            Some(rest) => (true, rest),
            None => (
                false,
                path.strip_prefix("/storage/v1/b/").ok_or_else(not_found)?,
            ),
        };
        // The bucket's metadata: `GET /storage/v1/b/<bucket>`.
        if !upload && req.method == Method::Get && !rest.contains('/') {
            let bucket = percent_decode(rest);
            if !self.buckets.contains_key(&bucket) {
                return Err(refuse(
                    404,
                    "notFound",
                    "The specified bucket does not exist.",
                ));
            }
            let mut resource = serde_json::json!({ "kind": "storage#bucket", "name": bucket });
            if let Some(lifecycle) = &self.lifecycle {
                resource["lifecycle"] = lifecycle.clone();
            }
            return Ok(json_reply(200, &resource));
        }
        let (bucket, objects) = rest.split_once('/').ok_or_else(not_found)?;
        let bucket = percent_decode(bucket);
        let name = match objects.strip_prefix("o") {
            Some("") => None,
            Some(rest) => Some(percent_decode(
                rest.strip_prefix('/').ok_or_else(not_found)?,
            )),
            None => return Err(not_found()),
        };
        let media = param(&query, "alt") == Some("media");
        if !self.buckets.contains_key(&bucket) {
            let mut refusal = refuse(404, "notFound", "The specified bucket does not exist.");
            refusal.text = media;
            return Err(refusal);
        }
        match (req.method, upload, name) {
            (Method::Post, true, None) => self.upload(req, &query, &bucket),
            (Method::Get, false, None) => self.list(&query, &bucket),
            (Method::Get, false, Some(name)) => self.read(&query, &bucket, &name, media),
            (Method::Delete, false, Some(name)) => self.delete(&query, &bucket, &name),
            _ => Err(refuse(405, "methodNotAllowed", "Method not allowed.")),
        }
    }

    fn objects(&mut self, bucket: &str) -> &mut BTreeMap<String, GcsObject> {
        self.buckets.entry(bucket.to_string()).or_default()
    }

    fn read(
        &mut self,
        query: &[(String, String)],
        bucket: &str,
        name: &str,
        media: bool,
    ) -> Result<S3Response, Refusal> {
        let Some(object) = self.objects(bucket).get(name).cloned() else {
            let mut refusal = no_such_object(bucket, name);
            refusal.text = media;
            return Err(refusal);
        };
        if generation_param(query, "ifGenerationMatch")?.is_some_and(|g| g != object.generation) {
            return Err(condition_not_met());
        }
        if generation_param(query, "ifGenerationNotMatch")? == Some(object.generation) {
            return Ok(S3Response {
                status: 304,
                ..S3Response::default()
            });
        }
        if !media {
            return Ok(json_reply(200, &resource_of(bucket, name, &object)));
        }
        let mut headers = vec![
            ("content-type".to_string(), object.content_type.clone()),
            ("content-length".into(), object.body.len().to_string()),
            ("etag".into(), format!("\"{}\"", md5_base64(&object.body))),
            ("last-modified".into(), http_date(object.updated_ms)),
            ("x-goog-generation".into(), object.generation.to_string()),
            ("x-goog-metageneration".into(), "1".into()),
            (
                "x-goog-hash".into(),
                format!("md5={}", md5_base64(&object.body)),
            ),
            (
                "x-goog-stored-content-length".into(),
                object.body.len().to_string(),
            ),
        ];
        for (k, v) in &object.metadata {
            headers.push((format!("{}{k}", gcs::GCS_META), v.clone()));
        }
        Ok(S3Response {
            status: 200,
            headers,
            body: object.body,
            body_too_large: None,
        })
    }

    /// The write's conditions against the object now.
    fn check(query: &[(String, String)], current: Option<&GcsObject>) -> Result<(), Refusal> {
        let generation = current.map_or(0, |o| o.generation);
        if generation_param(query, "ifGenerationMatch")?.is_some_and(|g| g != generation) {
            return Err(condition_not_met());
        }
        if generation_param(query, "ifGenerationNotMatch")? == Some(generation) {
            return Err(condition_not_met());
        }
        Ok(())
    }

    /// Throttling before anything is applied: `busy_next`, then GCS's
    /// limit of about one write a second per object.
    fn admit_write(&mut self, name: &str) -> Result<(), Refusal> {
        if self.busy_next > 0 {
            self.busy_next -= 1;
            return Err(refuse(503, "backendError", "Backend Error"));
        }
        let recent = self
            .last_write_ms
            .get(name)
            .is_some_and(|&at| self.now_ms < at + 1000);
        if self.rate_limit && recent {
            return Err(refuse(
                429,
                "rateLimitExceeded",
                "The object exceeded the rate limit for object mutation operations (create, update, and delete). Please reduce your request rate. See https://cloud.google.com/storage/docs/gcs429.",
            ));
        }
        Ok(())
    }

    /// A unique generation above every earlier one, near the time in
    /// microseconds, as GCS's are.
    fn new_generation(&mut self) -> u64 {
        let generation = (self.now_ms * 1000 + 17).max(self.last_generation + 1);
        self.last_generation = generation;
        generation
    }

    fn upload(
        &mut self,
        req: &HttpRequest,
        query: &[(String, String)],
        bucket: &str,
    ) -> Result<S3Response, Refusal> {
        if param(query, "uploadType") != Some("multipart") {
            return Err(refuse(
                400,
                "invalid",
                "Only multipart uploads are modelled.",
            ));
        }
        let bad = || refuse(400, "badContent", "Invalid multipart request.");
        let parts = multipart_parts(header(req, "content-type").unwrap_or_default(), &req.body)
            .ok_or_else(bad)?;
        let [(_, resource_json), (media_headers, media)] = parts.as_slice() else {
            return Err(bad());
        };
        let Ok(Value::Object(resource)) = serde_json::from_slice::<Value>(resource_json) else {
            return Err(refuse(400, "parseError", "Parse Error"));
        };
        let Some(name) = resource.get("name").and_then(Value::as_str) else {
            return Err(refuse(400, "required", "Required"));
        };
        let name = name.to_string();
        let content_type = resource
            .get("contentType")
            .and_then(Value::as_str)
            .or_else(|| {
                media_headers
                    .iter()
                    .find(|(k, _)| k == "content-type")
                    .map(|(_, v)| v.as_str())
            })
            .unwrap_or("application/octet-stream")
            .to_string();
        let mut metadata = Vec::new();
        if let Some(Value::Object(m)) = resource.get("metadata") {
            for (k, v) in m {
                let Some(v) = v.as_str() else {
                    return Err(refuse(400, "invalid", "Invalid metadata value."));
                };
                metadata.push((k.clone(), v.to_string()));
            }
        }
        if let Some(md5) = resource.get("md5Hash").and_then(Value::as_str) {
            let actual = md5_base64(media);
            if md5 != actual {
                return Err(refuse(
                    400,
                    "invalid",
                    format!("Provided MD5 hash \"{md5}\" doesn't match calculated MD5 hash \"{actual}\"."),
                ));
            }
        }
        self.admit_write(&name)?;
        Self::check(query, self.objects(bucket).get(&name))?;
        let object = GcsObject {
            body: media.clone(),
            generation: self.new_generation(),
            updated_ms: self.now_ms,
            content_type,
            metadata,
        };
        let reply = json_reply(200, &resource_of(bucket, &name, &object));
        self.last_write_ms.insert(name.clone(), self.now_ms);
        self.objects(bucket).insert(name, object);
        Ok(reply)
    }

    fn delete(
        &mut self,
        query: &[(String, String)],
        bucket: &str,
        name: &str,
    ) -> Result<S3Response, Refusal> {
        let current = self.objects(bucket).get(name).cloned();
        if current.is_none() {
            return Err(no_such_object(bucket, name));
        }
        self.admit_write(name)?;
        if !self.ignore_delete_conditions {
            Self::check(query, current.as_ref())?;
        }
        self.objects(bucket).remove(name);
        self.last_write_ms.insert(name.to_string(), self.now_ms);
        Ok(S3Response {
            status: 204,
            ..S3Response::default()
        })
    }

    /// A page of names under `prefix` from `startOffset` (inclusive), at
    /// most `maxResults` and `list_page`; the page token is the last name
    /// given.
    fn list(&mut self, query: &[(String, String)], bucket: &str) -> Result<S3Response, Refusal> {
        let prefix = param(query, "prefix").unwrap_or_default().to_string();
        let wanted = match param(query, "maxResults") {
            None => 1000,
            Some(v) => v.parse::<usize>().map_err(|_| {
                refuse(400, "invalid", format!("Invalid value for maxResults: {v}"))
            })?,
        };
        let limit = wanted.min(self.list_page).max(1);
        let offset = param(query, "startOffset").unwrap_or_default().to_string();
        let after = param(query, "pageToken").map(str::to_string);
        let objects = self.objects(bucket);
        let mut names = objects
            .iter()
            .filter(|(name, _)| name.starts_with(&prefix) && name.as_str() >= offset.as_str())
            .filter(|(name, _)| after.as_ref().is_none_or(|a| name.as_str() > a.as_str()));
        let page: Vec<_> = names.by_ref().take(limit).collect();
        let more = names.next().is_some();
        let items: Vec<Value> = page
            .iter()
            .map(|(name, object)| resource_of(bucket, name, object))
            .collect();
        let mut listing = json!({ "kind": "storage#objects" });
        if !items.is_empty() {
            listing["items"] = Value::Array(items);
        }
        if let (true, Some((last, _))) = (more, page.last()) {
            listing["nextPageToken"] = Value::String((*last).clone());
        }
        Ok(json_reply(200, &listing))
    }
}

fn md5_base64(bytes: &[u8]) -> String {
    crate::base64::encode(&Md5::digest(bytes))
}

/// An object's JSON resource, as GCS returns it.
fn resource_of(bucket: &str, name: &str, object: &GcsObject) -> Value {
    let mut metadata = Map::new();
    for (k, v) in &object.metadata {
        metadata.insert(k.clone(), Value::String(v.clone()));
    }
    let mut resource = json!({
        "kind": "storage#object",
        "id": format!("{bucket}/{name}/{}", object.generation),
        "name": name,
        "bucket": bucket,
        "generation": object.generation.to_string(),
        "metageneration": "1",
        "contentType": object.content_type,
        "storageClass": "STANDARD",
        "size": object.body.len().to_string(),
        "md5Hash": md5_base64(&object.body),
        "etag": "CJ+7s8rF0YkDEAE=",
        "timeCreated": crate::http_date::format_rfc3339(object.updated_ms),
        "updated": crate::http_date::format_rfc3339(object.updated_ms),
    });
    if !metadata.is_empty() {
        resource["metadata"] = Value::Object(metadata);
    }
    resource
}

fn json_reply(status: u16, value: &Value) -> S3Response {
    S3Response {
        status,
        headers: vec![(
            "content-type".into(),
            "application/json; charset=UTF-8".into(),
        )],
        body: value.to_string().into_bytes(),
        body_too_large: None,
    }
}

fn error_reply(refusal: &Refusal) -> S3Response {
    if refusal.text {
        return S3Response {
            status: refusal.status,
            headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())],
            body: refusal.message.clone().into_bytes(),
            body_too_large: None,
        };
    }
    let domain = match refusal.reason {
        "rateLimitExceeded" => "usageLimits",
        _ => "global",
    };
    let body = json!({
        "error": {
            "code": refusal.status,
            "message": refusal.message,
            "errors": [{ "message": refusal.message, "domain": domain, "reason": refusal.reason }],
        }
    });
    json_reply(refusal.status, &body)
}

impl Model for GcsModel {
    fn handle(&mut self, request: &S3Request) -> S3Response {
        GcsModel::handle(self, request)
    }
    fn advance(&mut self, ms: u64) {
        GcsModel::advance(self, ms);
    }
    fn now_ms(&self) -> u64 {
        self.now_ms
    }
    fn store_kind(&self) -> &'static crate::stores::profile::Profile {
        &crate::stores::gcs::PROFILE
    }
}

/// One client talking to the GCS model: the `Io` of unit tests, its wall
/// clock the model's.
pub type GcsIo = ModelIo<GcsModel>;

impl GcsIo {
    /// A client of an empty GCS model whose clock reads `now_ms`.
    /// (Not `new`: `ModelIo::new` is the S3 model's.)
    pub fn starting_at(now_ms: u64) -> Self {
        ModelIo::of(GcsModel::new(now_ms))
    }
}

//! An in-memory Azure Blob service, faithful where locks care: one
//! account's containers of block blobs, Put Blob, Get Blob, Get Blob
//! Properties (HEAD) and Delete Blob with `If-Match` and `If-None-Match`
//! evaluated atomically, a new ETag on every write (`"0x8D…"`, never a
//! hash of the bytes: equal bytes written twice get two ETags),
//! whole-second `Last-Modified` and `Date`, `x-ms-meta-*` metadata whose
//! names must be C# identifiers, `Content-MD5` checked, and requests
//! authorized as Azure does: Shared Key signatures recomputed from what
//! arrived, SAS signatures and bearer tokens it was told to accept.
//! Errors come as Azure sends them: 409 `BlobAlreadyExists`, 412
//! `ConditionNotMet`, 404 `BlobNotFound` / `ContainerNotFound`, 403
//! `AuthenticationFailed`, in an XML body (HEAD: none) and in
//! `x-ms-error-code`, the request id in `x-ms-request-id`.
//!
//! `handle` takes a request the protocol emits, signs it as a client of
//! the model's account would (`azure::prepare`), answers the HTTP request,
//! and reads the reply back as the protocol does (`azure::read_reply`):
//! the store the simulation and unit tests run Azure clients against.

use super::{AzureBlob, AzureCredential};
use crate::config::{ClientConfig, Store};
use crate::stores::azure;
use crate::stores::azure::shared_key::{self, AccountKey, SignedRequest};
use crate::stores::s3::model::http_date;
use crate::stores::s3::{HttpRequest, Method, S3Request, S3Response};
use crate::testing::model_io::{Model, ModelIo};
use crate::testing::uri::{percent_decode, split_target};
use md5::{Digest, Md5};
use std::collections::BTreeMap;

/// Azurite's well-known development account and key.
pub const ACCOUNT: &str = "devstoreaccount1";
pub const ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// The container every test client uses.
pub const CONTAINER: &str = "locks";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    pub body: Vec<u8>,
    pub etag: String,
    /// Whole seconds.
    pub last_modified_ms: u64,
    pub content_type: String,
    /// `x-ms-meta-*` names (lowercased) and values.
    pub metadata: Vec<(String, String)>,
}

pub struct AzureModel {
    pub account: String,
    pub key: AccountKey,
    /// Container name → blob name → blob.
    pub containers: BTreeMap<String, BTreeMap<String, Blob>>,
    pub now_ms: u64,
    /// SAS signatures (`sig=`) accepted, as a SAS the account issued.
    pub sas_signatures: Vec<String>,
    /// Bearer tokens accepted.
    pub bearer_tokens: Vec<String>,
    /// The next this many writes are refused with 503 `ServerBusy`
    /// before anything is applied: Azure's throttling.
    pub busy_next: u32,
    /// The client config `handle` signs with.
    pub client: ClientConfig,
    next_etag: u64,
    next_request_id: u64,
}

/// An error reply in the making.
struct Refusal {
    status: u16,
    code: &'static str,
    message: &'static str,
    /// An authentication failure's `AuthenticationErrorDetail`.
    detail: Option<String>,
}

fn refuse(status: u16, code: &'static str, message: &'static str) -> Refusal {
    Refusal {
        status,
        code,
        message,
        detail: None,
    }
}

/// Azure refuses a request dated further than this from its clock.
const MAX_DATE_SKEW_MS: u64 = 15 * 60 * 1000;

fn condition_not_met() -> Refusal {
    refuse(
        412,
        "ConditionNotMet",
        "The condition specified using HTTP conditional header(s) is not met.",
    )
}

fn blob_not_found() -> Refusal {
    refuse(404, "BlobNotFound", "The specified blob does not exist.")
}

fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// `*`, or the blob's own ETag (quoted as sent, or bare).
fn names(condition: &str, etag: &str) -> bool {
    let bare = |e: &str| e.trim().trim_matches('"').to_string();
    condition.trim() == "*" || bare(condition) == bare(etag)
}

/// A C# identifier, as Azure requires of metadata names.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A client config of the model's account, path addressing, Shared Key.
pub fn client_config(container: &str) -> ClientConfig {
    let mut raw = crate::testing::raw_config(
        crate::config::Strategy::SingleObject,
        crate::expiry::ExpiryClock::Server,
    );
    raw.store = Store::AzureBlob(AzureBlob {
        endpoint: "http://127.0.0.1:10000".into(),
        addressing: crate::config::Addressing::Path,
        account: ACCOUNT.into(),
        container: container.into(),
        credential: AzureCredential::shared_key(ACCOUNT_KEY).expect("the dev key is base64"),
    });
    ClientConfig::validate(raw).expect("the model's client config is valid")
}

impl AzureModel {
    /// Azurite's account with one empty container, `CONTAINER`, at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        let mut containers = BTreeMap::new();
        containers.insert(CONTAINER.to_string(), BTreeMap::new());
        AzureModel {
            account: ACCOUNT.into(),
            key: AccountKey::from_base64(ACCOUNT_KEY).expect("the dev key is base64"),
            containers,
            now_ms,
            sas_signatures: Vec::new(),
            bearer_tokens: Vec::new(),
            busy_next: 0,
            client: client_config(CONTAINER),
            next_etag: 1,
            next_request_id: 1,
        }
    }

    pub fn advance(&mut self, ms: u64) {
        self.now_ms = self.now_ms.saturating_add(ms);
    }

    /// The blob `name` of the test container.
    pub fn blob(&self, name: &str) -> Option<&Blob> {
        self.containers.get(CONTAINER)?.get(name)
    }

    /// A protocol request of the model's client: signed, answered, read back.
    pub fn handle(&mut self, req: &S3Request) -> S3Response {
        let config = self.client.clone();
        self.handle_for(&config, req)
    }

    /// `handle` for a client configured with `config` (another credential,
    /// another container).
    pub fn handle_for(&mut self, config: &ClientConfig, req: &S3Request) -> S3Response {
        let Store::AzureBlob(blob) = &config.store else {
            return S3Response {
                status: 400,
                ..S3Response::default()
            };
        };
        let http = azure::prepare(config.reach(), blob, req, self.now_ms / 1000);
        let mut reply = self.handle_http(&http);
        if reply.body.len() > req.max_response_bytes {
            reply.body_too_large = Some(reply.body.len() as u64);
            reply.body.clear();
        }
        azure::read_reply(req, reply)
    }

    /// One HTTP request, answered as Azure's Blob service would.
    pub fn handle_http(&mut self, req: &HttpRequest) -> S3Response {
        let request_id = format!("{:08x}-0000-0000-0000-model{:07}", self.next_request_id, 0);
        self.next_request_id += 1;
        let outcome = self.authorized(req).and_then(|()| self.serve(req));
        let mut reply = match outcome {
            Ok(reply) => reply,
            Err(refusal) => self.error_reply(req, &refusal, &request_id),
        };
        reply.headers.push(("date".into(), http_date(self.now_ms)));
        reply.headers.push(("x-ms-request-id".into(), request_id));
        reply.headers.push((
            "x-ms-version".into(),
            crate::stores::azure::shared_key::API_VERSION.into(),
        ));
        if req.method == Method::Head {
            reply.body.clear();
        }
        reply
    }

    fn error_reply(&self, req: &HttpRequest, refusal: &Refusal, request_id: &str) -> S3Response {
        let body = if req.method == Method::Head {
            Vec::new()
        } else {
            let detail = refusal
                .detail
                .as_ref()
                .map(|d| format!("<AuthenticationErrorDetail>{d}</AuthenticationErrorDetail>"))
                .unwrap_or_default();
            format!(
                "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{}</Code><Message>{}\nRequestId:{request_id}\nTime:2023-11-14T22:13:20.0000000Z</Message>{detail}</Error>",
                refusal.code, refusal.message
            )
            .into_bytes()
        };
        S3Response {
            status: refusal.status,
            headers: vec![
                ("x-ms-error-code".into(), refusal.code.into()),
                ("content-type".into(), "application/xml".into()),
            ],
            body,
            body_too_large: None,
        }
    }

    /// Shared Key recomputed over what arrived; a SAS or a bearer token
    /// among those accepted. Every request names a version and a date.
    fn authorized(&self, req: &HttpRequest) -> Result<(), Refusal> {
        let failed = || {
            refuse(
                403,
                "AuthenticationFailed",
                "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.",
            )
        };
        if header(req, "x-ms-version").is_none() {
            return Err(refuse(
                400,
                "MissingRequiredHeader",
                "An HTTP header that's mandatory for this request is not specified.",
            ));
        }
        let (path, query) = split_target(&req.path_and_query);
        if let Some(auth) = header(req, "authorization") {
            if let Some(token) = auth.strip_prefix("Bearer ") {
                return if self.bearer_tokens.iter().any(|t| t == token) {
                    Ok(())
                } else {
                    Err(refuse(
                        401,
                        "InvalidAuthenticationInfo",
                        "Server failed to authenticate the request. Please refer to the information in the www-authenticate header.",
                    ))
                };
            }
            let Some(date) = header(req, "x-ms-date") else {
                return Err(failed());
            };
            let skew = crate::http_date::parse_ms(date).map(|d| d.abs_diff(self.now_ms));
            if skew.is_none_or(|s| s > MAX_DATE_SKEW_MS) {
                let too_old = crate::http_date::parse_ms(date).is_some_and(|d| d < self.now_ms);
                return Err(Refusal {
                    detail: Some(format!(
                        "Request date header {}: '{date}'",
                        if too_old { "too old" } else { "is in future" }
                    )),
                    ..failed()
                });
            }
            let signing = SignedRequest {
                method: req.method.as_str(),
                path,
                query: &query,
                headers: &req.headers,
            };
            let expected = shared_key::authorization(&self.account, &self.key, &signing);
            return if auth == expected {
                Ok(())
            } else {
                Err(failed())
            };
        }
        match query.iter().find(|(k, _)| k == "sig") {
            Some((_, sig)) if self.sas_signatures.iter().any(|s| s == sig) => Ok(()),
            Some(_) => Err(failed()),
            None => Err(refuse(
                404,
                "ResourceNotFound",
                "The specified resource does not exist.",
            )),
        }
    }

    fn serve(&mut self, req: &HttpRequest) -> Result<S3Response, Refusal> {
        let (path, _) = split_target(&req.path_and_query);
        let path = percent_decode(path);
        let rest = path.strip_prefix('/').unwrap_or(&path);
        // Emulator addressing puts the account first.
        let rest = rest
            .strip_prefix(&format!("{}/", self.account))
            .unwrap_or(rest);
        let (container, name) = rest.split_once('/').unwrap_or((rest, ""));
        if !self.containers.contains_key(container) {
            return Err(refuse(
                404,
                "ContainerNotFound",
                "The specified container does not exist.",
            ));
        }
        if name.is_empty() {
            return Err(refuse(
                400,
                "InvalidQueryParameterValue",
                "Only blob operations are modelled.",
            ));
        }
        let (container, name) = (container.to_string(), name.to_string());
        match req.method {
            Method::Get | Method::Head => self.read(req, &container, &name),
            Method::Put => self.put(req, &container, &name),
            Method::Delete => self.delete(req, &container, &name),
            Method::Post => Err(refuse(
                405,
                "UnsupportedHttpVerb",
                "The resource doesn't support the specified HTTP verb.",
            )),
        }
    }

    fn blobs(&mut self, container: &str) -> &mut BTreeMap<String, Blob> {
        self.containers.entry(container.to_string()).or_default()
    }

    fn read(
        &mut self,
        req: &HttpRequest,
        container: &str,
        name: &str,
    ) -> Result<S3Response, Refusal> {
        let blob = self
            .blobs(container)
            .get(name)
            .cloned()
            .ok_or_else(blob_not_found)?;
        if header(req, "if-match").is_some_and(|c| !names(c, &blob.etag)) {
            return Err(condition_not_met());
        }
        let mut headers = vec![
            ("etag".to_string(), blob.etag.clone()),
            ("last-modified".into(), http_date(blob.last_modified_ms)),
        ];
        if header(req, "if-none-match").is_some_and(|c| names(c, &blob.etag)) {
            return Ok(S3Response {
                status: 304,
                headers,
                ..S3Response::default()
            });
        }
        headers.push(("content-type".into(), blob.content_type.clone()));
        headers.push(("content-length".into(), blob.body.len().to_string()));
        headers.push(("x-ms-blob-type".into(), "BlockBlob".into()));
        for (k, v) in &blob.metadata {
            headers.push((k.clone(), v.clone()));
        }
        Ok(S3Response {
            status: 200,
            headers,
            body: blob.body,
            body_too_large: None,
        })
    }

    /// The write's conditions against the blob now.
    fn check(req: &HttpRequest, current: Option<&Blob>) -> Result<(), Refusal> {
        if let Some(wanted) = header(req, "if-match") {
            match current {
                Some(b) if names(wanted, &b.etag) => {}
                _ => return Err(condition_not_met()),
            }
        }
        match (header(req, "if-none-match"), current) {
            (Some(c), Some(_)) if c.trim() == "*" => Err(refuse(
                409,
                "BlobAlreadyExists",
                "The specified blob already exists.",
            )),
            (Some(c), Some(b)) if names(c, &b.etag) => Err(condition_not_met()),
            _ => Ok(()),
        }
    }

    fn admit_write(&mut self) -> Result<(), Refusal> {
        if self.busy_next > 0 {
            self.busy_next -= 1;
            return Err(refuse(
                503,
                "ServerBusy",
                "The server is currently unable to receive requests. Please retry your request.",
            ));
        }
        Ok(())
    }

    fn new_etag(&mut self) -> String {
        let etag = format!("\"0x8DC{:012X}\"", self.next_etag);
        self.next_etag += 1;
        etag
    }

    fn put(
        &mut self,
        req: &HttpRequest,
        container: &str,
        name: &str,
    ) -> Result<S3Response, Refusal> {
        if header(req, "x-ms-blob-type") != Some("BlockBlob") {
            return Err(refuse(
                400,
                "MissingRequiredHeader",
                "An HTTP header that's mandatory for this request is not specified.",
            ));
        }
        let mut metadata = Vec::new();
        for (k, v) in &req.headers {
            let lower = k.to_ascii_lowercase();
            if let Some(meta) = lower.strip_prefix(azure::AZURE_META) {
                if !is_identifier(meta) {
                    return Err(refuse(
                        400,
                        "InvalidMetadata",
                        "The metadata specified is invalid. It has characters that are not permitted.",
                    ));
                }
                metadata.push((lower.clone(), v.clone()));
            }
        }
        if let Some(md5) = header(req, "content-md5") {
            let actual = crate::base64::encode(&Md5::digest(&req.body));
            if md5 != actual {
                return Err(refuse(
                    400,
                    "Md5Mismatch",
                    "The MD5 value specified in the request did not match with the MD5 value calculated by the server.",
                ));
            }
        }
        self.admit_write()?;
        Self::check(req, self.blobs(container).get(name))?;
        let blob = Blob {
            body: req.body.clone(),
            etag: self.new_etag(),
            last_modified_ms: self.now_ms - self.now_ms % 1000,
            content_type: header(req, "content-type")
                .unwrap_or("application/octet-stream")
                .to_string(),
            metadata,
        };
        let headers = vec![
            ("etag".to_string(), blob.etag.clone()),
            ("last-modified".into(), http_date(blob.last_modified_ms)),
            (
                "content-md5".into(),
                crate::base64::encode(&Md5::digest(&blob.body)),
            ),
            ("x-ms-request-server-encrypted".into(), "true".into()),
        ];
        self.blobs(container).insert(name.to_string(), blob);
        Ok(S3Response {
            status: 201,
            headers,
            ..S3Response::default()
        })
    }

    fn delete(
        &mut self,
        req: &HttpRequest,
        container: &str,
        name: &str,
    ) -> Result<S3Response, Refusal> {
        self.admit_write()?;
        let current = self.blobs(container).get(name).cloned();
        if current.is_none() {
            return Err(blob_not_found());
        }
        Self::check(req, current.as_ref())?;
        self.blobs(container).remove(name);
        Ok(S3Response {
            status: 202,
            headers: vec![("x-ms-delete-type-permanent".into(), "true".into())],
            ..S3Response::default()
        })
    }
}

impl Model for AzureModel {
    fn handle(&mut self, request: &S3Request) -> S3Response {
        AzureModel::handle(self, request)
    }
    fn advance(&mut self, ms: u64) {
        AzureModel::advance(self, ms);
    }
    fn now_ms(&self) -> u64 {
        self.now_ms
    }
    fn store_kind(&self) -> &'static crate::stores::profile::Profile {
        &crate::stores::azure::PROFILE
    }
}

/// One client talking to the Azure model: the `Io` of unit tests, its wall
/// clock the model's.
pub type AzureIo = ModelIo<AzureModel>;

impl AzureIo {
    /// A client of an empty Azure model whose clock reads `now_ms`.
    /// (Not `new`: `ModelIo::new` is the S3 model's.)
    pub fn starting_at(now_ms: u64) -> Self {
        ModelIo::of(AzureModel::new(now_ms))
    }
}

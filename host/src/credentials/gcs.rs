//! Google's Application Default Credentials (ADC), as Google's client
//! libraries find them, for Google Cloud Storage: access tokens with the
//! `devstorage.read_write` scope, from
//!
//! 1. the file `GOOGLE_APPLICATION_CREDENTIALS` names: a service-account
//!    key (a JWT signed RS256 with its key, exchanged at the key's
//!    `token_uri`) or an `authorized_user` file (its refresh token
//!    exchanged);
//! 2. else gcloud's ADC file (`gcloud auth application-default login`):
//!    `$CLOUDSDK_CONFIG/application_default_credentials.json`, else
//!    `~/.config/gcloud/application_default_credentials.json`;
//! 3. else the metadata server of a Google Cloud machine
//!    (`metadata.google.internal`, or `GCE_METADATA_HOST`), asked with
//!    `Metadata-Flavor: Google`.
//!
//! A [`TokenSource`]: a live client refreshes the token ahead of its
//! expiry (usually an hour) and installs it with `set-gcs-credential`.
//! No error, log or `Debug` output carries a key, a refresh token, a
//! client secret, a signed assertion or an access token.

use super::aws_chain::on_own_thread;
use super::percent_encode;
use super::tokens::{AccessToken, TokenSource};
use crate::engine::own_runtime::OwnRuntime;
use crate::error::Error;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How requests to Google Cloud Storage are authorized. `Debug` never
/// shows the token.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GcsCredential {
    /// An OAuth 2.0 access token with a storage scope
    /// (`devstorage.read_write` or `cloud-platform`), sent as
    /// `Authorization: Bearer`. It expires (usually within the hour): see
    /// [`GcsBuilder::token_source`](crate::GcsBuilder::token_source) for
    /// one kept fresh.
    BearerToken(String),
    /// No `Authorization` header: an emulator that checks none
    /// (fake-gcs-server), or a bucket anyone may write to.
    Anonymous,
}

impl fmt::Debug for GcsCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GcsCredential::BearerToken(_) => "BearerToken(<redacted>)",
            GcsCredential::Anonymous => "Anonymous",
        })
    }
}

/// The scope the tokens are asked for: reading and writing objects.
pub const STORAGE_SCOPE: &str = "https://www.googleapis.com/auth/devstorage.read_write";
/// The metadata server's host on a Google Cloud machine.
pub const METADATA_HOST: &str = "metadata.google.internal";
/// Where `authorized_user` files are exchanged when they name no `token_uri`.
pub const TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// How long a signed assertion is good for (Google takes at most an hour).
const ASSERTION_LIFETIME: Duration = Duration::from_secs(3600);
/// An access token's lifetime when a reply does not say (Google's is an
/// hour): refreshing early is harmless, never refreshing is not.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);
/// The largest token reply read.
const MAX_REPLY: usize = 1 << 20;

/// The field errors name.
const FIELD: &str = "gcs-credential";

/// Google Cloud Storage access tokens from Application Default Credentials
/// (see the module), or from one source named outright. Blocking: each
/// fetch is one HTTPS (or, to the metadata server, HTTP) request, bounded
/// by a timeout. `Debug` shows where the tokens come from, nothing secret.
pub struct GoogleCredentials {
    source: Source,
    scope: String,
    timeout: Duration,
    /// Made at the first fetch: a runtime and a connection pool.
    http: OnceLock<Result<TokenHttp, String>>,
}

enum Source {
    ServiceAccount {
        origin: String,
        client_email: String,
        private_key_id: Option<String>,
        key: jsonwebtoken::EncodingKey,
        token_uri: String,
    },
    AuthorizedUser {
        origin: String,
        client_id: String,
        client_secret: String,
        refresh_token: String,
        token_uri: String,
    },
    Metadata {
        /// `http://metadata.google.internal`, or `GCE_METADATA_HOST`'s.
        root: String,
        /// Where ADC looked before (for the error when there is no
        /// metadata server either); empty when named outright.
        looked: Vec<String>,
    },
}

impl fmt::Debug for GoogleCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GoogleCredentials")
            .field("source", &self.describe())
            .field("scope", &self.scope)
            .finish()
    }
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::invalid_config(FIELD, reason.into())
}

impl GoogleCredentials {
    /// Application Default Credentials from the process's environment
    /// and files (see the module).
    pub fn from_env() -> Result<Self, Error> {
        Self::from_vars(&|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// Application Default Credentials with the variables from `var`
    /// (`GOOGLE_APPLICATION_CREDENTIALS`, `CLOUDSDK_CONFIG`, `HOME`,
    /// `APPDATA` on Windows, `GCE_METADATA_HOST`); the files are read
    /// here, the metadata server is first asked at the first fetch. A
    /// named file that cannot be read or used is an error, as in Google's
    /// libraries (no fallback past it).
    pub fn from_vars(var: &impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let mut looked = Vec::new();
        if let Some(path) = var("GOOGLE_APPLICATION_CREDENTIALS") {
            return Self::from_file_named(Path::new(&path), "GOOGLE_APPLICATION_CREDENTIALS");
        }
        looked.push("GOOGLE_APPLICATION_CREDENTIALS: not set".to_string());
        match gcloud_adc_file(var) {
            Some(path) if path.is_file() => {
                return Self::from_file_named(&path, "gcloud's application default credentials")
            }
            Some(path) => looked.push(format!(
                "gcloud's application default credentials, {}: no such file",
                path.display()
            )),
            None => looked.push(
                "gcloud's application default credentials: neither CLOUDSDK_CONFIG nor HOME is set"
                    .to_string(),
            ),
        }
        let host = var("GCE_METADATA_HOST").unwrap_or_else(|| METADATA_HOST.to_string());
        let mut credentials = Self::metadata_server(host);
        if let Source::Metadata { looked: l, .. } = &mut credentials.source {
            *l = looked;
        }
        Ok(credentials)
    }

    /// The tokens of a service-account key file or an `authorized_user`
    /// file (what `gcloud auth application-default login` writes).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::from_file_named(path.as_ref(), "the credentials file")
    }

    fn from_file_named(path: &Path, named_by: &str) -> Result<Self, Error> {
        let origin = format!("{} ({named_by})", path.display());
        let text = std::fs::read_to_string(path)
            .map_err(|e| invalid(format!("cannot read {origin}: {e}")))?;
        Self::from_json_at(&text, origin)
    }

    /// The tokens of a service-account key or an `authorized_user`
    /// credential given as its JSON text (kept in a secret store, say).
    pub fn from_json(json: &str) -> Result<Self, Error> {
        Self::from_json_at(json, "the credentials JSON".to_string())
    }

    fn from_json_at(json: &str, origin: String) -> Result<Self, Error> {
        // serde_json's errors name a line and column, never the text.
        let value: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| invalid(format!("{origin} is not JSON: {e}")))?;
        let field = |name: &str| {
            value
                .get(name)
                .and_then(|v| v.as_str())
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        let required =
            |name: &str| field(name).ok_or_else(|| invalid(format!("{origin} has no {name}")));
        let source = match field("type").as_deref() {
            Some("service_account") => {
                let key =
                    jsonwebtoken::EncodingKey::from_rsa_pem(required("private_key")?.as_bytes())
                        .map_err(|_| {
                            invalid(format!(
                                "{origin}: its private_key is not an RSA key in PEM"
                            ))
                        })?;
                Source::ServiceAccount {
                    client_email: required("client_email")?,
                    private_key_id: field("private_key_id"),
                    key,
                    token_uri: field("token_uri").unwrap_or_else(|| TOKEN_URI.to_string()),
                    origin,
                }
            }
            Some("authorized_user") => Source::AuthorizedUser {
                client_id: required("client_id")?,
                client_secret: required("client_secret")?,
                refresh_token: required("refresh_token")?,
                token_uri: field("token_uri").unwrap_or_else(|| TOKEN_URI.to_string()),
                origin,
            },
            Some(other) => {
                return Err(invalid(format!(
                    "{origin} is of type {other:?}, which is not supported here: use a \
                     service-account key (service_account), gcloud's user credentials \
                     (authorized_user), or the metadata server"
                )))
            }
            None => return Err(invalid(format!("{origin} has no type"))),
        };
        Ok(Self::of(source))
    }

    /// The default service account's tokens from the metadata server at
    /// `host` (`metadata.google.internal`, or an emulator's `host:port`).
    pub fn metadata_server(host: impl Into<String>) -> Self {
        let host = host.into();
        let root = match host.contains("://") {
            true => host.trim_end_matches('/').to_string(),
            false => format!("http://{}", host.trim_end_matches('/')),
        };
        Self::of(Source::Metadata {
            root,
            looked: Vec::new(),
        })
    }

    fn of(source: Source) -> Self {
        GoogleCredentials {
            source,
            scope: STORAGE_SCOPE.to_string(),
            timeout: Duration::from_secs(10),
            http: OnceLock::new(),
        }
    }

    /// Another scope than `devstorage.read_write` (`cloud-platform`, say).
    /// `authorized_user` credentials keep the scopes they were granted.
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = scope.into();
        self
    }

    /// How long one token request may take (default 10 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Where the tokens come from, for logs (nothing secret).
    pub fn describe(&self) -> String {
        match &self.source {
            Source::ServiceAccount {
                origin,
                client_email,
                ..
            } => format!("service account {client_email}, key in {origin}"),
            Source::AuthorizedUser { origin, .. } => format!("user credentials in {origin}"),
            Source::Metadata { root, .. } => format!("the metadata server at {root}"),
        }
    }

    /// A token fetched now, `now` being the wall time (a signed
    /// assertion's issue time, and what the reply's `expires_in` counts
    /// from).
    pub fn token_at(&self, now: SystemTime) -> Result<AccessToken, Error> {
        let client = self
            .http
            .get_or_init(|| TokenHttp::new().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| invalid(format!("cannot start an HTTPS client: {e}")))?;
        match &self.source {
            Source::ServiceAccount {
                origin,
                client_email,
                private_key_id,
                key,
                token_uri,
            } => {
                let assertion =
                    self.assertion(client_email, private_key_id, key, token_uri, now)?;
                let body = format!(
                    "grant_type={}&assertion={}",
                    percent_encode("urn:ietf:params:oauth:grant-type:jwt-bearer"),
                    percent_encode(&assertion)
                );
                let reply = client.send(post(token_uri, body), self.timeout);
                read_token(reply, token_uri, now, &[&assertion])
                    .map_err(|why| invalid(format!("the service account key in {origin}: {why}")))
            }
            Source::AuthorizedUser {
                origin,
                client_id,
                client_secret,
                refresh_token,
                token_uri,
            } => {
                let body = format!(
                    "grant_type=refresh_token&client_id={}&client_secret={}&refresh_token={}",
                    percent_encode(client_id),
                    percent_encode(client_secret),
                    percent_encode(refresh_token)
                );
                let reply = client.send(post(token_uri, body), self.timeout);
                read_token(reply, token_uri, now, &[client_secret, refresh_token])
                    .map_err(|why| invalid(format!("the user credentials in {origin}: {why}")))
            }
            Source::Metadata { root, looked } => {
                let url = format!(
                    "{root}/computeMetadata/v1/instance/service-accounts/default/token?scopes={}",
                    percent_encode(&self.scope)
                );
                let request = http::Request::get(&url)
                    .header("Metadata-Flavor", "Google")
                    .body(Full::new(Bytes::new()));
                let reply = client.send(request, self.timeout).and_then(|reply| {
                    // A Google metadata server says so on every reply;
                    // something else answering the name is not one.
                    match reply.flavor.as_deref() {
                        Some("Google") => Ok(reply),
                        _ => Err(format!(
                            "{url} answered without Metadata-Flavor: Google (not a metadata server)"
                        )),
                    }
                });
                read_token(reply, &url, now, &[]).map_err(|why| match looked.is_empty() {
                    true => invalid(format!("the metadata server: {why}")),
                    false => invalid(format!(
                        "no Google credentials found; looked in, in order:\n- {}\n- the metadata \
                         server, {root} (GCE_METADATA_HOST): {why}",
                        looked.join("\n- ")
                    )),
                })
            }
        }
    }

    /// The JWT a service account signs to ask for a token (RFC 7523).
    fn assertion(
        &self,
        client_email: &str,
        private_key_id: &Option<String>,
        key: &jsonwebtoken::EncodingKey,
        token_uri: &str,
        now: SystemTime,
    ) -> Result<String, Error> {
        let iat = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = private_key_id.clone();
        let claims = serde_json::json!({
            "iss": client_email,
            "scope": self.scope,
            "aud": token_uri,
            "iat": iat,
            "exp": iat + ASSERTION_LIFETIME.as_secs(),
        });
        jsonwebtoken::encode(&header, &claims, key).map_err(|e| {
            invalid(format!(
                "signing the token request with the key failed: {e}"
            ))
        })
    }
}

impl TokenSource for GoogleCredentials {
    fn fetch(&self) -> Result<AccessToken, Error> {
        self.token_at(SystemTime::now())
    }

    fn describe(&self) -> String {
        GoogleCredentials::describe(self)
    }
}

/// gcloud's ADC file: in `CLOUDSDK_CONFIG`, else in gcloud's own folder.
fn gcloud_adc_file(var: &impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    const NAME: &str = "application_default_credentials.json";
    if let Some(dir) = var("CLOUDSDK_CONFIG") {
        return Some(Path::new(&dir).join(NAME));
    }
    if cfg!(windows) {
        if let Some(dir) = var("APPDATA") {
            return Some(Path::new(&dir).join("gcloud").join(NAME));
        }
    }
    var("HOME").map(|home| Path::new(&home).join(".config/gcloud").join(NAME))
}

fn post(url: &str, form: String) -> Result<http::Request<Full<Bytes>>, http::Error> {
    http::Request::post(url)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(Full::new(Bytes::from(form)))
}

/// A token endpoint's (or the metadata server's) JSON: `access_token`,
/// `expires_in` seconds. `secrets`: what was sent, never echoed.
fn read_token(
    reply: Result<Reply, String>,
    url: &str,
    now: SystemTime,
    secrets: &[&str],
) -> Result<AccessToken, String> {
    let reply = reply?;
    let json: serde_json::Value = serde_json::from_slice(&reply.body).unwrap_or_default();
    if reply.status != 200 {
        // OAuth's own words (`error`, `error_description`), never the body
        // as it came: whatever an endpoint echoes stays out of errors.
        let text = |name: &str| json.get(name).and_then(|v| v.as_str()).unwrap_or("");
        let mut why = match (text("error"), text("error_description")) {
            ("", "") => "no reason given".to_string(),
            (e, "") | ("", e) => e.to_string(),
            (e, d) => format!("{e}: {d}"),
        };
        for secret in secrets.iter().filter(|s| !s.is_empty()) {
            why = why.replace(secret, "<redacted>");
        }
        let why: String = why.chars().take(200).collect();
        return Err(format!("{url} answered HTTP {}: {why}", reply.status));
    }
    let token = json
        .get("access_token")
        .and_then(|v| v.as_str())
        .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_graphic()))
        .ok_or_else(|| format!("{url}'s reply has no usable access_token"))?;
    let lifetime = json
        .get("expires_in")
        .and_then(|v| v.as_u64().or_else(|| v.as_str()?.trim().parse().ok()))
        .map_or(DEFAULT_LIFETIME, Duration::from_secs);
    // A lifetime past what the clock holds (a reply's digits, not ours to
    // trust) counts as none given, not as a panic.
    let expires = now.checked_add(lifetime);
    Ok(AccessToken::new(token, expires))
}

/// What a token request got back.
struct Reply {
    status: u16,
    /// The `Metadata-Flavor` header.
    flavor: Option<String>,
    body: Bytes,
}

/// The HTTP(S) client of the token requests: rustls on ring with the
/// webpki roots, as the component's requests, on a small runtime of its
/// own (a fetch blocks; its caller may be in some other runtime).
struct TokenHttp {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    runtime: OwnRuntime,
}

impl TokenHttp {
    fn new() -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        })
        .with_no_client_auth();
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        // No idle connections kept: fetches are an hour apart, and between
        // them this runtime does not run, so a pooled connection the server
        // closed meanwhile would only be found dead when reused.
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build(connector);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(TokenHttp {
            client,
            runtime: OwnRuntime::new(runtime),
        })
    }

    /// Sends `request`, reads the whole reply within `timeout`.
    fn send(
        &self,
        request: Result<http::Request<Full<Bytes>>, http::Error>,
        timeout: Duration,
    ) -> Result<Reply, String> {
        let request = request.map_err(|e| format!("a request that cannot be sent: {e}"))?;
        let url = without_query(&request.uri().to_string());
        let client = self.client.clone();
        let exchange = async move {
            let response = client.request(request).await.map_err(|e| {
                let mut text = e.to_string();
                let mut next = std::error::Error::source(&e);
                while let Some(cause) = next {
                    text.push_str(&format!(": {cause}"));
                    next = cause.source();
                }
                text
            })?;
            let status = response.status().as_u16();
            let flavor = response
                .headers()
                .get("metadata-flavor")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = http_body_util::Limited::new(response.into_body(), MAX_REPLY)
                .collect()
                .await
                .map_err(|e| format!("reading the reply: {e}"))?
                .to_bytes();
            Ok::<_, String>(Reply {
                status,
                flavor,
                body,
            })
        };
        on_own_thread(&self.runtime, async {
            tokio::time::timeout(timeout, exchange)
                .await
                .unwrap_or_else(|_| Err(format!("no reply within {timeout:?}")))
        })
        .map_err(|e| format!("{url}: {e}"))
    }
}

/// A URL as errors show it: no query (the metadata server's scopes are no
/// secret, but nothing after `?` needs showing).
fn without_query(url: &str) -> String {
    url.split(['?', '#']).next().unwrap_or_default().to_string()
}

/// A store's credential as the client's one credential type, for
/// [`Client::set_credential`](crate::Client::set_credential).
impl From<GcsCredential> for super::Credential {
    fn from(credential: GcsCredential) -> Self {
        super::Credential::Gcs(credential)
    }
}

#[cfg(test)]
mod test_key;
#[cfg(test)]
mod tests;

//! A Google Cloud Storage bucket as the store (through GCS's JSON API),
//! and the credential that authorizes its requests.

use super::{KeysFrom, OwnSettings, Store, StoreConfig};
use crate::credentials::{GoogleCredentials, SharedTokenSource};
use crate::error::Error;
use crate::types::Credential;
use std::time::Duration;

pub use crate::types::GcsCredential;

/// GCS's own endpoint (the JSON API's root).
const GCS_ENDPOINT: &str = "https://storage.googleapis.com";

/// Builds the [`StoreConfig`] of a Google Cloud Storage bucket (the WIT
/// store `gcs`). GCS takes no region, addressing or AWS keys. `Debug`
/// shows no secret.
///
/// ```
/// use s3_lease_host::{GcsBuilder, GcsCredential};
/// // An emulator (fake-gcs-server) checks no credential.
/// let config = GcsBuilder::new("locks", GcsCredential::Anonymous)
///     .endpoint("http://127.0.0.1:4443")
///     .build();
/// assert_eq!(config.bucket(), Some("locks"));
/// assert_eq!(config.store_name(), "Google Cloud Storage");
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
#[must_use]
pub struct GcsBuilder {
    pub(crate) endpoint: String,
    pub(crate) bucket: String,
    pub(crate) credential: GcsCredential,
    /// Where a live client takes fresh access tokens from (Application
    /// Default Credentials, say); `credential` is then the first one
    /// fetched. `None`: the credential above, fixed.
    pub(crate) token_source: Option<SharedTokenSource>,
}

impl GcsBuilder {
    /// `bucket` on GCS itself (`https://storage.googleapis.com`).
    pub fn new(bucket: impl Into<String>, credential: GcsCredential) -> Self {
        GcsBuilder {
            endpoint: GCS_ENDPOINT.to_string(),
            bucket: bucket.into(),
            credential,
            token_source: None,
        }
    }

    /// An emulator's root (fake-gcs-server: `http://127.0.0.1:4443`) or a
    /// proxy's, instead of GCS's own.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = url.into();
        self
    }

    /// Access tokens from `source` (a
    /// [`GoogleCredentials`](crate::credentials::GoogleCredentials), say):
    /// the first fetched now, the next ones installed by a live client
    /// before they expire.
    pub fn token_source(mut self, source: SharedTokenSource) -> Result<Self, Error> {
        self.credential = GcsCredential::BearerToken(source.latest()?.token);
        self.token_source = Some(source);
        Ok(self)
    }

    pub fn build(self) -> StoreConfig {
        StoreConfig::of(self.build_store())
    }
}

impl StoreConfig {
    /// A Google Cloud Storage bucket's config (`bucket`, else
    /// `S3LEASE_BUCKET`), reached as Google's client libraries reach it:
    ///
    /// - `STORAGE_EMULATOR_HOST` (`host:port` or a URL): that emulator,
    ///   with no credential (the libraries send none to an emulator);
    /// - else `S3LEASE_ENDPOINT`: that endpoint; an `http://` one (an
    ///   emulator) with no credential, since a bearer token never travels
    ///   unencrypted; an `https://` one with the tokens below;
    /// - else GCS itself (`https://storage.googleapis.com`) with
    ///   Application Default Credentials ([`GoogleCredentials`]: the key or
    ///   user credentials file `GOOGLE_APPLICATION_CREDENTIALS` names, else
    ///   gcloud's ADC file, else the metadata server), the first token
    ///   fetched here, the next ones by a live client before each expires.
    ///
    /// `S3LEASE_SEAL_KEY` as for S3. With no credentials anywhere, an
    /// `invalid-config` error says where it looked.
    pub fn from_gcs_vars(
        bucket: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        super::env::read_as::<GcsBuilder>(bucket, &var)
    }
}

impl OwnSettings for GcsBuilder {
    const KIND: &'static str = "gcs";
    const NAME: &'static str = "Google Cloud Storage";
    const PLACE: &'static str = "bucket";
    const AWS_KEYS: bool = false;

    /// As [`StoreConfig::from_gcs_vars`] reads it (the AWS keys' source
    /// plays no part).
    fn from_vars(
        bucket: &str,
        var: &dyn Fn(&str) -> Option<String>,
        _keys: KeysFrom,
    ) -> Result<Self, Error> {
        let bucket = match bucket {
            "" => var("S3LEASE_BUCKET").ok_or_else(|| {
                Error::invalid_config(
                    "S3LEASE_BUCKET",
                    "is not set: a gcs store needs its bucket (--bucket)",
                )
            })?,
            given => given.to_string(),
        };
        let (endpoint, anonymous) = gcs_endpoint(var)?;
        let mut builder = GcsBuilder::new(bucket, GcsCredential::Anonymous);
        if let Some(endpoint) = endpoint {
            builder = builder.endpoint(endpoint);
        }
        if !anonymous {
            let adc = GoogleCredentials::from_vars(&var)?;
            builder = builder.token_source(SharedTokenSource::new(adc))?;
        }
        Ok(builder)
    }

    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn place(&self) -> &str {
        &self.bucket
    }

    fn with_endpoint(self, url: String) -> Self {
        self.endpoint(url)
    }

    fn build_store(self) -> Store {
        Store::Gcs(self)
    }

    /// About a second: GCS answers faster writers of one object with 429.
    fn min_write_interval(&self) -> Option<Duration> {
        Some(Duration::from_secs(1))
    }

    fn token_source(&self) -> Option<&SharedTokenSource> {
        self.token_source.as_ref()
    }

    fn bearer(&self, token: String) -> Option<Credential> {
        Some(Credential::Gcs(GcsCredential::BearerToken(token)))
    }
}

/// A GCS store's endpoint, if not GCS's own, and whether it takes no
/// credential (an emulator's).
fn gcs_endpoint(var: &dyn Fn(&str) -> Option<String>) -> Result<(Option<String>, bool), Error> {
    if let Some(url) = var("S3LEASE_ENDPOINT") {
        return match url
            .split_once("://")
            .map(|(scheme, _)| scheme.to_ascii_lowercase())
        {
            Some(scheme) if scheme == "http" => Ok((Some(url), true)),
            Some(scheme) if scheme == "https" => Ok((Some(url), false)),
            _ => Err(Error::invalid_config(
                "S3LEASE_ENDPOINT",
                "is not an http:// or https:// URL",
            )),
        };
    }
    if let Some(host) = var("STORAGE_EMULATOR_HOST") {
        // Google's libraries take `host:port` as well as a URL.
        let url = match host.contains("://") {
            true => host,
            false => format!("http://{host}"),
        };
        return Ok((Some(url.trim_end_matches('/').to_string()), true));
    }
    Ok((None, false))
}

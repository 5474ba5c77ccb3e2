//! A Google Cloud Storage bucket as the store (through GCS's JSON API),
//! and the credential that authorizes its requests.

use super::{Store, StoreConfig};
use crate::credentials::SharedTokenSource;
use crate::error::Error;

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
        StoreConfig::of(Store::Gcs(self))
    }
}

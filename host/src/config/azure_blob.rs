//! An Azure Blob Storage container as the store, and the credential that
//! authorizes its requests.

use super::{KeysFrom, OwnSettings, Store, StoreConfig};
use crate::credentials::azure::{self, AccountAuth};
use crate::credentials::SharedTokenSource;
use crate::error::Error;
use crate::types::Credential;

pub use crate::types::AzureCredential;

/// Builds the [`StoreConfig`] of an Azure Blob Storage container (the WIT
/// store `azure-blob`). Azure takes no region, bucket, addressing or AWS
/// keys. `Debug` shows no secret.
#[derive(Clone, PartialEq, Eq, Debug)]
#[must_use]
pub struct AzureBlobBuilder {
    pub(crate) endpoint: String,
    /// The account goes first in every path (emulators: Azurite).
    pub(crate) path_style: bool,
    pub(crate) account: String,
    pub(crate) container: String,
    pub(crate) credential: AzureCredential,
    /// Where a live client takes fresh bearer tokens from (a managed
    /// identity); `credential` is then the first one fetched. `None`: the
    /// credential above, fixed.
    pub(crate) token_source: Option<SharedTokenSource>,
}

impl AzureBlobBuilder {
    /// `container` of `account` (`https://<account>.blob.core.windows.net`).
    pub fn new(
        account: impl Into<String>,
        container: impl Into<String>,
        credential: AzureCredential,
    ) -> Self {
        let account = account.into();
        AzureBlobBuilder {
            endpoint: format!("https://{account}.blob.core.windows.net"),
            path_style: false,
            account,
            container: container.into(),
            credential,
            token_source: None,
        }
    }

    /// An emulator's root (Azurite: `http://127.0.0.1:10000`) instead of
    /// the account's own; the account then goes first in every path.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = url.into();
        self.path_style = true;
        self
    }

    /// Bearer tokens from `source` (a
    /// [`ManagedIdentity`](crate::credentials::ManagedIdentity), say): the
    /// first fetched now, the next ones installed by a live client before
    /// they expire.
    pub fn token_source(mut self, source: SharedTokenSource) -> Result<Self, Error> {
        self.credential = AzureCredential::BearerToken(source.latest()?.token);
        self.token_source = Some(source);
        Ok(self)
    }

    pub fn build(self) -> StoreConfig {
        StoreConfig::of(self.build_store())
    }
}

impl StoreConfig {
    /// An Azure Blob Storage container's config, from the variables the
    /// Azure SDKs read (see `credentials::azure`): a connection string
    /// (`AZURE_STORAGE_CONNECTION_STRING`), else `AZURE_STORAGE_ACCOUNT`
    /// with `AZURE_STORAGE_KEY` or `AZURE_STORAGE_SAS_TOKEN`, else the
    /// account's managed identity (a bearer token fetched here, then kept
    /// fresh on a live client). `S3LEASE_SEAL_KEY` as for S3.
    pub fn from_azure_vars(
        container: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        super::env::read_as::<AzureBlobBuilder>(container, &var)
    }
}

impl OwnSettings for AzureBlobBuilder {
    const KIND: &'static str = "azure-blob";
    const NAME: &'static str = "Azure Blob Storage";
    const PLACE: &'static str = "container";
    const AWS_KEYS: bool = false;

    /// The container `S3LEASE_CONTAINER` names, else the bucket given (the
    /// command line's `--container`), as [`StoreConfig::from_azure_vars`]
    /// reads it (the AWS keys' source plays no part).
    fn from_vars(
        bucket: &str,
        var: &dyn Fn(&str) -> Option<String>,
        _keys: KeysFrom,
    ) -> Result<Self, Error> {
        let container = var("S3LEASE_CONTAINER")
            .or_else(|| (!bucket.is_empty()).then(|| bucket.to_string()))
            .ok_or_else(|| {
                Error::invalid_config(
                    "S3LEASE_CONTAINER",
                    "is not set: an azure-blob store needs its container (--container)",
                )
            })?;
        let account = azure::from_vars(&var)?;
        let (credential, identity) = match account.auth {
            AccountAuth::Credential(c) => (c, None),
            // Replaced by the first token, fetched below.
            AccountAuth::ManagedIdentity(m) => {
                (AzureCredential::BearerToken(String::new()), Some(m))
            }
        };
        let mut builder = AzureBlobBuilder::new(account.account, container, credential);
        builder.endpoint = account.endpoint;
        builder.path_style = account.path_style;
        if let Some(identity) = identity {
            builder = builder.token_source(SharedTokenSource::new(identity))?;
        }
        Ok(builder)
    }

    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn place(&self) -> &str {
        &self.container
    }

    fn with_endpoint(self, url: String) -> Self {
        self.endpoint(url)
    }

    fn build_store(self) -> Store {
        Store::AzureBlob(self)
    }

    fn token_source(&self) -> Option<&SharedTokenSource> {
        self.token_source.as_ref()
    }

    fn bearer(&self, token: String) -> Option<Credential> {
        Some(Credential::Azure(AzureCredential::BearerToken(token)))
    }
}

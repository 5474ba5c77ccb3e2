//! An Azure Blob Storage container as the store, and the credential that
//! authorizes its requests.

use super::{Store, StoreConfig};
use crate::credentials::SharedTokenSource;
use crate::error::Error;

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
        StoreConfig::of(Store::AzureBlob(self))
    }
}

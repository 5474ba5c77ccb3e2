//! An Azure Blob Storage container as the store, and the credential that
//! authorizes its requests.

use super::{wit_record, Store, StoreConfig};
use crate::convert;
use crate::credentials::SharedTokenSource;
use crate::engine::bindings::{self as wit, Store as WitStore};
use crate::error::Error;
use crate::types::{Addressing, Credentials};

pub use crate::types::AzureCredential;

/// Builds the [`StoreConfig`] of an Azure Blob Storage container (the WIT
/// store `azure-blob`). Azure takes no region, bucket, addressing or AWS
/// keys. `Debug` shows no secret.
#[derive(Clone, PartialEq, Eq, Debug)]
#[must_use]
pub struct AzureBlobBuilder {
    pub(super) endpoint: String,
    /// The account goes first in every path (emulators: Azurite).
    pub(super) path_style: bool,
    pub(super) account: String,
    pub(super) container: String,
    pub(super) credential: AzureCredential,
    /// Where a live client takes fresh bearer tokens from (a managed
    /// identity); `credential` is then the first one fetched. `None`: the
    /// credential above, fixed.
    pub(super) token_source: Option<SharedTokenSource>,
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

    pub(super) fn to_wit(&self) -> wit::Config {
        let addressing = match self.path_style {
            true => Addressing::Path,
            false => Addressing::VirtualHosted,
        };
        let blob = wit::AzureBlob {
            account: self.account.clone(),
            container: self.container.clone(),
            credential: convert::azure_credential(&self.credential),
        };
        // The region and the AWS keys are AWS's: the component reads
        // neither for Azure.
        wit_record(
            &self.endpoint,
            "azure",
            "",
            addressing,
            convert::credentials(&Credentials::new("", "")),
            Some(WitStore::AzureBlob(blob)),
        )
    }
}

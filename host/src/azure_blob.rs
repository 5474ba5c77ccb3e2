//! The Azure Blob Storage store's own config types: the container, and
//! the credential that authorizes its requests.

use crate::credentials::SharedTokenSource;
use std::fmt;

/// How requests to an Azure Blob Storage account are authorized. `Debug`
/// never shows the key, the SAS or the token.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AzureCredential {
    /// The account's key (base64, as the portal shows it): Shared Key.
    AccountKey(String),
    /// A shared access signature (the query string, with or without `?`).
    Sas(String),
    /// An OAuth bearer token for `https://storage.azure.com/` (a managed
    /// identity's, say); see [`AzureBlob::token_source`] for one kept
    /// fresh.
    BearerToken(String),
}

impl fmt::Debug for AzureCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AzureCredential::AccountKey(_) => "AccountKey(<redacted>)",
            AzureCredential::Sas(_) => "Sas(<redacted>)",
            AzureCredential::BearerToken(_) => "BearerToken(<redacted>)",
        })
    }
}

/// An Azure Blob Storage container that keeps the locks in place of a
/// bucket (the WIT store `azure-blob`). `Debug` shows no secret.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct AzureBlob {
    pub account: String,
    pub container: String,
    pub credential: AzureCredential,
    /// Where a live client takes fresh bearer tokens from (a managed
    /// identity); `credential` is then the first one fetched. `None`: the
    /// credential above, fixed.
    pub token_source: Option<SharedTokenSource>,
}

impl AzureBlob {
    pub fn new(
        account: impl Into<String>,
        container: impl Into<String>,
        credential: AzureCredential,
    ) -> Self {
        AzureBlob {
            account: account.into(),
            container: container.into(),
            credential,
            token_source: None,
        }
    }
}

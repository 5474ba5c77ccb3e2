//! An Azure Blob Storage store's configuration: the account, the container
//! the locks live in, and how requests are authorized. Checked here, at
//! construction, so every request can be built and signed without failing.

use crate::prelude::*;

use crate::error::Error;
use crate::stores::azure::shared_key::AccountKey;
use crate::stores::profile::{LifecycleRules, Profile};
use core::fmt;
use s3_lease_keep::vocabulary::Addressing;

/// What Azure Blob Storage is and does (see `Profile`): no listing (its
/// clients use single-object).
pub const PROFILE: Profile = Profile {
    name: "azure-blob",
    lists_keys: false,
    records_write_times: true,
    holds_objects: true,
    condition_checks_token: false,
    min_write_interval_ms: 0,
    keeps_token_floor: true,
    replies_as_s3: false,
    wrong_endpoint_hint: "not an Azure Blob endpoint (the account's blob service?)",
    lists_fenced_objects: false,
    lists_versions: false,
    payload_hash: Some("Content-MD5"),
    lifecycle: LifecycleRules::Unreadable(
        "Azure's lifecycle management is a policy of the storage account, which this \
         container's credentials cannot read: make sure no rule of it deletes (or moves to the \
         archive tier) blobs under",
    ),
};

/// Where the locks are kept on Azure (the WIT `azure-store`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AzureBlob {
    /// The account's blob endpoint, or an emulator's root.
    pub endpoint: String,
    /// `Path`: the account goes first in every path (an emulator's).
    pub addressing: Addressing,
    /// The storage account (`devstoreaccount1` on Azurite).
    pub account: String,
    pub container: String,
    pub credential: AzureCredential,
}

/// How requests to the account are authorized. `Debug` shows only which.
#[derive(Clone, PartialEq, Eq)]
pub enum AzureCredential {
    /// The account key: every request is signed with Shared Key.
    SharedKey(AccountKey),
    /// A shared access signature: its query string (without `?`) is
    /// added to every request's URL, which carries no `Authorization`.
    Sas(String),
    /// An OAuth 2.0 access token (Microsoft Entra ID, a managed identity),
    /// sent as `Authorization: Bearer`.
    Bearer(String),
}

impl fmt::Debug for AzureCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AzureCredential::SharedKey(_) => "SharedKey(<redacted>)",
            AzureCredential::Sas(_) => "Sas(<redacted>)",
            AzureCredential::Bearer(_) => "Bearer(<redacted>)",
        })
    }
}

const CREDENTIAL_FIELD: &str = "store.azure-blob.credential";

impl AzureCredential {
    /// An account key as the portal and connection strings give it (base64).
    pub fn shared_key(base64: &str) -> Result<Self, Error> {
        AccountKey::from_base64(base64)
            .map(AzureCredential::SharedKey)
            .ok_or_else(|| {
                Error::invalid_config(
                    CREDENTIAL_FIELD,
                    "the shared key is not an account key (padded standard base64)",
                )
            })
    }

    /// A SAS token, with or without its leading `?`.
    pub fn sas(token: &str) -> Result<Self, Error> {
        let token = token.strip_prefix('?').unwrap_or(token);
        // Reasons never repeat the token.
        if !printable(token) || token.contains('#') {
            return Err(Error::invalid_config(
                CREDENTIAL_FIELD,
                "the SAS token must be a non-empty query string of printable ASCII without spaces or '#'",
            ));
        }
        if !token.split('&').any(|p| p.starts_with("sig=")) {
            return Err(Error::invalid_config(
                CREDENTIAL_FIELD,
                "the SAS token has no sig= parameter",
            ));
        }
        Ok(AzureCredential::Sas(token.to_string()))
    }

    pub fn bearer(token: &str) -> Result<Self, Error> {
        if !printable(token) {
            return Err(Error::invalid_config(
                CREDENTIAL_FIELD,
                "the bearer token must be non-empty printable ASCII without spaces",
            ));
        }
        Ok(AzureCredential::Bearer(token.to_string()))
    }
}

fn printable(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_graphic())
}

impl AzureBlob {
    pub(crate) fn check(&self) -> Result<(), Error> {
        check(self)
    }

    pub(crate) fn set_credential(&mut self, credential: AzureCredential) -> Result<(), Error> {
        check_credential(&credential)?;
        self.credential = credential;
        Ok(())
    }
}

/// Azure's rules: an account is 3 to 24 lowercase letters and digits; a
/// container 3 to 63 lowercase letters, digits and single hyphens, starting
/// and ending with a letter or digit.
fn check(blob: &AzureBlob) -> Result<(), Error> {
    let account = &blob.account;
    if !(3..=24).contains(&account.len())
        || !account
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    {
        return Err(Error::invalid_config(
            "store.azure-blob.account",
            format!("{account:?}: must be 3 to 24 lowercase letters and digits"),
        ));
    }
    let container = &blob.container;
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if !(3..=63).contains(&container.len())
        || !container.chars().all(allowed)
        || container.starts_with('-')
        || container.ends_with('-')
        || container.contains("--")
    {
        return Err(Error::invalid_config(
            "store.azure-blob.container",
            format!(
                "{container:?}: must be 3 to 63 lowercase letters, digits and single hyphens, \
                 starting and ending with a letter or digit"
            ),
        ));
    }
    check_credential(&blob.credential)
}

/// The constructors above check a credential; one built by hand is
/// checked again.
fn check_credential(credential: &AzureCredential) -> Result<(), Error> {
    match credential {
        AzureCredential::SharedKey(_) => Ok(()),
        AzureCredential::Sas(token) => AzureCredential::sas(token).map(|_| ()),
        AzureCredential::Bearer(token) => AzureCredential::bearer(token).map(|_| ()),
    }
}

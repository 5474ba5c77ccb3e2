//! An Azure Blob Storage store for `Config`: its credential, and the
//! account read from the variables the host crate reads (those the Azure
//! SDKs read), minus the managed identity, which a guest cannot fetch.

use super::{Addressing, Config, Store};
use crate::error::Error;
// A BTreeMap, not a HashMap: std's hasher seeds itself through
// `wasi:random/insecure-seed`, an import the component would gain for it.
use std::collections::BTreeMap;
use std::fmt;

/// How requests to an Azure account are authorized (the contract's
/// `azure-credential`, named as the host crate names it). Never in `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub enum AzureCredential {
    /// The account key (base64, as the portal and connection strings give
    /// it): the component signs every request with Shared Key.
    AccountKey(String),
    /// A shared access signature's query string (with or without `?`),
    /// with read, write and delete on the container's blobs.
    Sas(String),
    /// An OAuth 2.0 access token for `https://storage.azure.com/`; it
    /// expires, so replace it with `Client::set_credential`.
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

/// Azurite's well-known development account and key (public, in
/// Microsoft's documentation), for `UseDevelopmentStorage=true`.
const DEV_ACCOUNT: &str = "devstoreaccount1";
const DEV_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const CONNECTION_STRING: &str = "AZURE_STORAGE_CONNECTION_STRING";

/// Where an account is and how to reach it, as the variables say.
pub(crate) struct Account {
    /// `https://<account>.blob.core.windows.net`, or an emulator's root.
    pub endpoint: String,
    /// The account goes first in every path (an emulator: Azurite).
    pub path_style: bool,
    pub account: String,
    pub credential: AzureCredential,
}

/// `AZURE_STORAGE_CONNECTION_STRING`, else `AZURE_STORAGE_ACCOUNT` with
/// `AZURE_STORAGE_KEY` or `AZURE_STORAGE_SAS_TOKEN`.
pub(crate) fn from_vars(var: &impl Fn(&str) -> Option<String>) -> Result<Account, Error> {
    if let Some(connection) = var(CONNECTION_STRING) {
        return from_connection_string(&connection);
    }
    let account = var("AZURE_STORAGE_ACCOUNT").ok_or(Error::MissingEnv {
        name: "AZURE_STORAGE_ACCOUNT",
    })?;
    let credential = match (var("AZURE_STORAGE_KEY"), var("AZURE_STORAGE_SAS_TOKEN")) {
        (Some(key), _) => AzureCredential::AccountKey(key),
        (None, Some(sas)) => AzureCredential::Sas(sas),
        // A managed identity's token needs a fetch this crate cannot make:
        // pass one with `Config::azure_blob` and `BearerToken` instead.
        (None, None) => {
            return Err(Error::MissingEnv {
                name: "AZURE_STORAGE_KEY",
            })
        }
    };
    Ok(Account {
        endpoint: format!("https://{account}.blob.core.windows.net"),
        path_style: false,
        account,
        credential,
    })
}

/// A connection string's settings (`Name=value;…`, names in any case,
/// values may hold `=`), as the host crate reads them. Errors never echo a
/// part: it may be a secret.
fn from_connection_string(text: &str) -> Result<Account, Error> {
    let invalid = |expected: &'static str| Error::InvalidEnv {
        name: CONNECTION_STRING,
        expected,
    };
    let mut get = BTreeMap::new();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part
            .split_once('=')
            .ok_or(invalid("`Name=value` parts separated by `;`"))?;
        get.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    let dev = get
        .get("usedevelopmentstorage")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let account = match (get.get("accountname"), dev) {
        (Some(a), _) => a.clone(),
        (None, true) => DEV_ACCOUNT.to_string(),
        (None, false) => return Err(invalid("a connection string with an AccountName")),
    };
    let credential = match (get.get("accountkey"), get.get("sharedaccesssignature"), dev) {
        (Some(key), _, _) => AzureCredential::AccountKey(key.clone()),
        (None, Some(sas), _) => AzureCredential::Sas(sas.clone()),
        (None, None, true) => AzureCredential::AccountKey(DEV_KEY.to_string()),
        (None, None, false) => {
            return Err(invalid(
                "a connection string with an AccountKey or a SharedAccessSignature",
            ))
        }
    };
    let blob_endpoint = match (get.get("blobendpoint"), dev) {
        (Some(e), _) => e.trim_end_matches('/').to_string(),
        (None, true) => format!("http://127.0.0.1:10000/{DEV_ACCOUNT}"),
        (None, false) => {
            let protocol = get
                .get("defaultendpointsprotocol")
                .map_or("https", String::as_str);
            let suffix = get
                .get("endpointsuffix")
                .map_or("core.windows.net", String::as_str);
            format!("{protocol}://{account}.blob.{suffix}")
        }
    };
    // A blob endpoint with a path (an emulator's: `http://host:port/account`)
    // is the root with the account in every path.
    let (scheme, rest) = blob_endpoint.split_once("://").ok_or(invalid(
        "a connection string whose BlobEndpoint has a scheme",
    ))?;
    let (endpoint, path_style) = match rest.split_once('/') {
        None => (blob_endpoint.clone(), false),
        Some((host, path)) if path == account => (format!("{scheme}://{host}"), true),
        Some(_) => {
            return Err(invalid(
                "a connection string whose BlobEndpoint's path is the account alone",
            ))
        }
    };
    Ok(Account {
        endpoint,
        path_style,
        account,
        credential,
    })
}

impl Config {
    /// A container of an Azure Blob Storage account:
    /// `https://<account>.blob.core.windows.net`, virtual-hosted. For an
    /// emulator (Azurite), set its root as the endpoint and path
    /// addressing (the account then goes first in every path).
    pub fn azure_blob(
        account: impl Into<String>,
        container: impl Into<String>,
        credential: AzureCredential,
    ) -> Config {
        let account = account.into();
        Config::of(Store::AzureBlob {
            endpoint: format!("https://{account}.blob.core.windows.net"),
            addressing: Addressing::VirtualHosted,
            account,
            container: container.into(),
            credential,
        })
    }
}

impl Config {
    /// `from_vars`'s Azure Blob Storage store (see there).
    pub(super) fn from_azure_vars(var: &impl Fn(&str) -> Option<String>) -> Result<Config, Error> {
        let container = var("S3LEASE_CONTAINER")
            .or_else(|| var("S3LEASE_BUCKET"))
            .ok_or(Error::MissingEnv {
                name: "S3LEASE_CONTAINER",
            })?;
        let account = from_vars(var)?;
        let addressing = match account.path_style {
            true => Addressing::Path,
            false => Addressing::VirtualHosted,
        };
        let mut config = Config::azure_blob(account.account, container, account.credential)
            .with_endpoint(account.endpoint)
            .with_addressing(addressing);
        config.key_prefix = var("S3LEASE_KEY_PREFIX");
        config.seal_key = var("S3LEASE_SEAL_KEY");
        Ok(config)
    }
}

/// The credential as the contract's.
#[cfg(target_family = "wasm")]
impl AzureCredential {
    pub(crate) fn to_contract(&self) -> crate::bindings::types::AzureCredential {
        use crate::bindings::types as raw;
        match self {
            AzureCredential::AccountKey(key) => raw::AzureCredential::SharedKey(key.clone()),
            AzureCredential::Sas(sas) => raw::AzureCredential::Sas(sas.clone()),
            AzureCredential::BearerToken(token) => raw::AzureCredential::Bearer(token.clone()),
        }
    }
}

#[cfg(test)]
mod tests;

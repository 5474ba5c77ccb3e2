//! An Azure Blob Storage account and its credential, taken from the
//! variables as the Azure SDKs take them:
//!
//! - a connection string (`AZURE_STORAGE_CONNECTION_STRING`): `AccountName`,
//!   `AccountKey` or `SharedAccessSignature`, `BlobEndpoint` or
//!   `DefaultEndpointsProtocol` and `EndpointSuffix`, or
//!   `UseDevelopmentStorage=true` (Azurite's well-known account);
//! - else `AZURE_STORAGE_ACCOUNT` with `AZURE_STORAGE_KEY` or
//!   `AZURE_STORAGE_SAS_TOKEN`;
//! - else the machine's managed identity ([`ManagedIdentity`]).

pub mod managed_identity;

/// The name [`AccessToken`](crate::credentials::AccessToken) had when only
/// Azure took bearer tokens.
pub type AzureToken = crate::credentials::AccessToken;

use crate::error::Error;
use managed_identity::ManagedIdentity;
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
    /// identity's, say); see [`AzureBlobBuilder::token_source`](crate::AzureBlobBuilder::token_source) for one
    /// kept fresh.
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
/// Microsoft's documentation).
pub const DEV_ACCOUNT: &str = "devstoreaccount1";
pub const DEV_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// Where an Azure account is and how to authorize requests to it, as
/// the variables say.
#[derive(Clone, Debug)]
pub(crate) struct AzureAccount {
    /// `https://<account>.blob.core.windows.net`, or an emulator's root.
    pub endpoint: String,
    /// The account goes first in every path (emulators: Azurite).
    pub path_style: bool,
    pub account: String,
    pub auth: AccountAuth,
}

/// A credential in hand, or the managed identity's tokens.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum AccountAuth {
    Credential(AzureCredential),
    ManagedIdentity(ManagedIdentity),
}

fn invalid(field: &str, reason: impl Into<String>) -> Error {
    Error::invalid_config(field, reason.into())
}

/// The account from the usual Azure variables (see the module).
pub(crate) fn from_vars(var: &impl Fn(&str) -> Option<String>) -> Result<AzureAccount, Error> {
    if let Some(connection) = var("AZURE_STORAGE_CONNECTION_STRING") {
        return from_connection_string(&connection);
    }
    let account = var("AZURE_STORAGE_ACCOUNT").ok_or_else(|| {
        invalid(
            "AZURE_STORAGE_ACCOUNT",
            "is not set, nor AZURE_STORAGE_CONNECTION_STRING: an azure-blob store needs its account",
        )
    })?;
    let auth = if let Some(key) = var("AZURE_STORAGE_KEY") {
        AccountAuth::Credential(AzureCredential::AccountKey(key))
    } else if let Some(sas) = var("AZURE_STORAGE_SAS_TOKEN") {
        AccountAuth::Credential(AzureCredential::Sas(sas))
    } else {
        AccountAuth::ManagedIdentity(ManagedIdentity::from_vars(var))
    };
    Ok(AzureAccount {
        endpoint: format!("https://{account}.blob.core.windows.net"),
        path_style: false,
        account,
        auth,
    })
}

/// A connection string's settings (`Name=value;…`; values may hold `=`).
pub(crate) fn from_connection_string(text: &str) -> Result<AzureAccount, Error> {
    const FIELD: &str = "AZURE_STORAGE_CONNECTION_STRING";
    let mut get = std::collections::HashMap::new();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, value)) = part.split_once('=') else {
            // Never echo the part: it may be a secret.
            return Err(invalid(FIELD, "a part is not Name=value"));
        };
        get.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    let dev = get
        .get("usedevelopmentstorage")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let account = match (get.get("accountname"), dev) {
        (Some(a), _) => a.clone(),
        (None, true) => DEV_ACCOUNT.to_string(),
        (None, false) => return Err(invalid(FIELD, "has no AccountName")),
    };
    let credential = match (get.get("accountkey"), get.get("sharedaccesssignature"), dev) {
        (Some(key), _, _) => AzureCredential::AccountKey(key.clone()),
        (None, Some(sas), _) => AzureCredential::Sas(sas.clone()),
        (None, None, true) => AzureCredential::AccountKey(DEV_KEY.to_string()),
        (None, None, false) => {
            return Err(invalid(
                FIELD,
                "has neither AccountKey nor SharedAccessSignature",
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
    let (endpoint, path_style) = split_endpoint(&blob_endpoint, &account)?;
    Ok(AzureAccount {
        endpoint,
        path_style,
        account,
        auth: AccountAuth::Credential(credential),
    })
}

/// A blob endpoint with a path (an emulator's: `http://host:port/account`)
/// is the root with the account in every path; without one, the account's
/// own host.
fn split_endpoint(blob_endpoint: &str, account: &str) -> Result<(String, bool), Error> {
    let (scheme, rest) = blob_endpoint.split_once("://").ok_or_else(|| {
        invalid(
            "AZURE_STORAGE_CONNECTION_STRING",
            format!("BlobEndpoint {blob_endpoint:?} has no scheme"),
        )
    })?;
    match rest.split_once('/') {
        None => Ok((blob_endpoint.to_string(), false)),
        Some((host, path)) if path == account => Ok((format!("{scheme}://{host}"), true)),
        Some(_) => Err(invalid(
            "AZURE_STORAGE_CONNECTION_STRING",
            format!(
                "BlobEndpoint {blob_endpoint:?}: a path must be the account ({account:?}) alone"
            ),
        )),
    }
}

/// A store's credential as the client's one credential type, for
/// [`Client::set_credential`](crate::Client::set_credential).
impl From<AzureCredential> for super::Credential {
    fn from(credential: AzureCredential) -> Self {
        super::Credential::Azure(credential)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::azure::managed_identity::IMDS_ENDPOINT;

    fn key(k: &str) -> AccountAuth {
        AccountAuth::Credential(AzureCredential::AccountKey(k.into()))
    }

    fn sas(s: &str) -> AccountAuth {
        AccountAuth::Credential(AzureCredential::Sas(s.into()))
    }

    use crate::credentials::vars;

    #[test]
    fn connection_strings_as_the_sdks_read_them() {
        let s = from_connection_string("UseDevelopmentStorage=true").unwrap();
        assert_eq!(
            (s.endpoint.as_str(), s.path_style, s.account.as_str()),
            ("http://127.0.0.1:10000", true, DEV_ACCOUNT)
        );
        assert_eq!(s.auth, key(DEV_KEY));
        let s = from_connection_string(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5==;\
             BlobEndpoint=http://127.0.0.1:41000/devstoreaccount1;",
        )
        .unwrap();
        assert_eq!(
            (s.endpoint.as_str(), s.path_style),
            ("http://127.0.0.1:41000", true)
        );
        assert_eq!(s.auth, key("a2V5=="));
        let s = from_connection_string(
            "AccountName=acct;SharedAccessSignature=sv=2024-11-04&sig=a%2Bb%3D;EndpointSuffix=core.chinacloudapi.cn",
        )
        .unwrap();
        assert_eq!(
            (s.endpoint.as_str(), s.path_style),
            ("https://acct.blob.core.chinacloudapi.cn", false)
        );
        assert_eq!(s.auth, sas("sv=2024-11-04&sig=a%2Bb%3D"));
        for bad in [
            "AccountKey=secret-key-value",
            "AccountName=a",
            "AccountName=a;AccountKey=secret-key-value;BlobEndpoint=http://h/other",
            "just-a-secret-key-value",
        ] {
            let e = from_connection_string(bad).unwrap_err().to_string();
            assert!(!e.contains("secret-key-value"), "{e}");
        }
        let shown = format!(
            "{:?}",
            from_connection_string("UseDevelopmentStorage=true").unwrap()
        );
        assert!(!shown.contains(&DEV_KEY[..16]), "{shown}");
    }

    #[test]
    fn the_usual_variables() {
        let s = from_vars(&vars(&[
            ("AZURE_STORAGE_ACCOUNT", "acct"),
            ("AZURE_STORAGE_KEY", "a2V5"),
        ]))
        .unwrap();
        assert_eq!(s.endpoint, "https://acct.blob.core.windows.net");
        assert_eq!(s.auth, key("a2V5"));
        let s = from_vars(&vars(&[
            ("AZURE_STORAGE_ACCOUNT", "acct"),
            ("AZURE_STORAGE_SAS_TOKEN", "?sig=x"),
        ]))
        .unwrap();
        assert_eq!(s.auth, sas("?sig=x"));
        let s = from_vars(&vars(&[
            ("AZURE_STORAGE_ACCOUNT", "acct"),
            ("AZURE_CLIENT_ID", "id-1"),
        ]))
        .unwrap();
        let AccountAuth::ManagedIdentity(m) = s.auth else {
            panic!("no managed identity")
        };
        assert_eq!(
            (m.endpoint.as_str(), m.client_id.as_deref()),
            (IMDS_ENDPOINT, Some("id-1"))
        );
        let e = from_vars(&vars(&[])).unwrap_err();
        assert!(e.to_string().contains("AZURE_STORAGE_ACCOUNT"), "{e}");
    }
}

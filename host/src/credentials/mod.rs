//! Where a client's credentials come from, and how a live client gets new
//! ones before the old ones expire.
//!
//! - [`CredentialsSource`]: anything that hands out credentials (the AWS
//!   chain, a vault, a test's fake).
//! - [`AwsChain`]: the AWS SDKs' own chain (`aws-config`): environment,
//!   shared config and credentials files (static keys, `credential_process`,
//!   `role_arn`, SSO), web identity, ECS and EKS container credentials,
//!   EC2 instance metadata.
//! - `SdkProvider` (feature `aws-sdk-config`): the credentials provider of
//!   an `aws_config::SdkConfig` a service has already loaded.
//! - [`TokenSource`]: anything that hands out bearer tokens;
//!   [`ManagedIdentity`], an Azure machine's own for Azure Storage;
//!   [`GoogleCredentials`], Google's Application Default Credentials for
//!   Google Cloud Storage (a service-account key, gcloud's user
//!   credentials, or the metadata server).
//! - A client connected with a source keeps its credentials fresh on a
//!   thread of its own (`refresh`), and on a store's `ExpiredToken` or
//!   `InvalidAccessKeyId` (Azure: `InvalidAuthenticationInfo`) fetches new
//!   ones once and retries once.

mod aws_chain;
pub mod azure;
pub mod gcs;
pub(crate) mod refresh;
#[cfg(feature = "aws-sdk-config")]
mod sdk_provider;
mod tokens;

pub use aws_chain::AwsChain;
pub use azure::managed_identity::{self, ManagedIdentity};
pub use azure::AzureToken;
/// The module's name before each store's credentials had a folder of their own.
#[doc(hidden)]
pub use gcs as google;
pub use gcs::GoogleCredentials;
#[cfg(feature = "aws-sdk-config")]
pub use sdk_provider::SdkProvider;
pub use tokens::{AccessToken, SharedTokenSource, TokenSource};

/// Percent-encoding for a form or a query (RFC 3986's unreserved kept),
/// as the token services' requests need it.
pub(crate) fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Settings from a list of pairs, as tests give them.
#[cfg(test)]
pub(crate) fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: std::collections::HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

use crate::error::Error;
use crate::types::Credentials;
use azure::AzureCredential;
use gcs::GcsCredential;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// A store's credential, as [`Client::set_credential`](crate::Client::set_credential)
/// replaces it: of the client's store's kind (AWS keys for an AWS store).
/// `Debug` shows no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    Aws(Credentials),
    Azure(AzureCredential),
    Gcs(GcsCredential),
}

/// Credentials as a source handed them out. `Debug` shows neither the
/// secret key nor the session token.
#[derive(Clone)]
#[non_exhaustive]
pub struct FetchedCredentials {
    pub credentials: Credentials,
    /// When they stop working; `None` for long-term keys.
    pub expires: Option<SystemTime>,
    /// Which source gave them (`Environment`, `Profile`, `IMDSv2`, ...).
    pub source: String,
}

impl FetchedCredentials {
    /// `credentials` from `source` (a name for logs and errors), good
    /// until `expires` (`None`: long-term keys).
    pub fn new(
        credentials: Credentials,
        expires: Option<SystemTime>,
        source: impl Into<String>,
    ) -> Self {
        FetchedCredentials {
            credentials,
            expires,
            source: source.into(),
        }
    }
}

impl fmt::Debug for FetchedCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchedCredentials")
            .field("access_key_id", &self.credentials.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self
                    .credentials
                    .session_token
                    .as_ref()
                    .map(|_| "<redacted>"),
            )
            .field("expires", &self.expires)
            .field("source", &self.source)
            .finish()
    }
}

/// Hands out credentials, fresh ones on every call (a client calls it
/// ahead of expiry, and once after the store refused the old ones).
/// Errors must not carry secrets.
pub trait CredentialsSource: Send + Sync + 'static {
    fn fetch(&self) -> Result<FetchedCredentials, Error>;
}

/// A [`CredentialsSource`] a client refreshes from, in a [`StoreConfig`]
/// (compared by identity: two configs are equal when they share it). It
/// keeps the last credentials fetched, so that clients connected from one
/// config do not each fetch them again.
///
/// [`StoreConfig`]: crate::StoreConfig
#[derive(Clone)]
pub struct SharedSource {
    source: Arc<dyn CredentialsSource>,
    /// The last fetch, and when it was made.
    last: Arc<Mutex<Option<(SystemTime, FetchedCredentials)>>>,
}

impl SharedSource {
    pub fn new(source: impl CredentialsSource) -> Self {
        Self::from_arc(Arc::new(source))
    }

    /// A source the caller keeps a handle on too.
    pub fn from_arc(source: Arc<dyn CredentialsSource>) -> Self {
        SharedSource {
            source,
            last: Arc::default(),
        }
    }

    /// Fetches from the source now, and keeps what it gave.
    pub fn fetch(&self) -> Result<FetchedCredentials, Error> {
        let fetched = self.source.fetch()?;
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((SystemTime::now(), fetched.clone()));
        Ok(fetched)
    }

    /// Which source gave the last credentials fetched, and when they
    /// expire (nothing secret).
    pub fn last_source(&self) -> Option<(String, Option<SystemTime>)> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.as_ref().map(|(_, f)| (f.source.clone(), f.expires))
    }

    /// The last credentials fetched, unless they are due for a refresh
    /// (or there are none yet): then a fetch.
    pub fn latest(&self) -> Result<FetchedCredentials, Error> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match last {
            Some((at, f))
                if refresh::due_at(at, f.expires).is_none_or(|due| due > SystemTime::now()) =>
            {
                Ok(f)
            }
            _ => self.fetch(),
        }
    }
}

impl PartialEq for SharedSource {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.source, &other.source)
    }
}

impl Eq for SharedSource {}

impl fmt::Debug for SharedSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedSource(..)")
    }
}

/// One set of credentials, the same every time: [`StoreConfig::from_vars`]'s
/// keys as a source.
///
/// [`StoreConfig::from_vars`]: crate::StoreConfig::from_vars
pub struct StaticCredentials(pub Credentials);

impl CredentialsSource for StaticCredentials {
    fn fetch(&self) -> Result<FetchedCredentials, Error> {
        Ok(FetchedCredentials {
            credentials: self.0.clone(),
            expires: None,
            source: "Static".into(),
        })
    }
}

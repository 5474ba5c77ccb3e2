//! Where the locks live and how to reach them: one builder per store
//! ([`S3Builder`], [`DynamoDbBuilder`], [`AzureBlobBuilder`], [`GcsBuilder`]), each making a
//! [`StoreConfig`] that holds that store and nothing of another's; or
//! [`StoreConfig::from_env`], which picks the store from the environment.

mod aws;
mod azure_blob;
mod dynamodb;
mod env;
mod gcs;
mod s3;
#[cfg(feature = "aws-sdk-config")]
mod sdk;
#[cfg(test)]
mod tests;

pub use azure_blob::{AzureBlobBuilder, AzureCredential};
pub use dynamodb::DynamoDbBuilder;
pub use env::AwsKeys;
pub use gcs::{GcsBuilder, GcsCredential};
pub use s3::S3Builder;

use crate::credentials::{SharedSource, SharedTokenSource};
use crate::error::Error;
use crate::types::{Credential, ExpiryClock, Strategy};
use std::fmt;
use std::time::Duration;

/// One store where the locks live (an S3 bucket, a DynamoDB table, an
/// Azure Blob Storage container or a Google Cloud Storage bucket) and the
/// settings every store shares. `Debug` never shows a secret key, a
/// session token, an Azure or GCS credential or the seal key.
///
/// Made by a store's builder, or by [`StoreConfig::from_env`] (the store
/// the environment names, with the AWS chain's, Azure's or Google's
/// credentials):
///
/// ```
/// use s3_lease_host::{Addressing, Credentials, S3Builder, StoreConfig};
/// let config: StoreConfig = S3Builder::new("locks", "us-east-1", Credentials::new("AKID", "secret"))
///     .endpoint("http://127.0.0.1:9000")
///     .addressing(Addressing::VirtualHosted)
///     .build()
///     .with_key_prefix("locks/");
/// assert_eq!(config.bucket(), Some("locks"));
/// ```
///
/// A setting of one store does not exist on another's builder: addressing
/// is S3's (an Azure account's follows from its endpoint),
///
/// ```compile_fail,E0599
/// use s3_lease_host::{Addressing, AzureBlobBuilder, AzureCredential};
/// let azure = AzureBlobBuilder::new("acct", "locks", AzureCredential::Sas("sv=1".into()))
///     .addressing(Addressing::VirtualHosted);
/// ```
///
/// and a config holds one store, so an Azure one has no table to set:
///
/// ```compile_fail,E0609
/// use s3_lease_host::{AzureBlobBuilder, AzureCredential};
/// let mut config =
///     AzureBlobBuilder::new("acct", "locks", AzureCredential::Sas("sv=1".into())).build();
/// config.dynamodb_table = Some("locks".into());
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreConfig {
    store: Store,
    /// Prepended to every key this client names (`locks/`, say).
    pub key_prefix: Option<String>,
    /// How long one request may take before the component gives it up
    /// (whole milliseconds; default the component's, 10 s).
    pub request_timeout: Option<Duration>,
    pub strategy: Option<Strategy>,
    pub expiry_clock: Option<ExpiryClock>,
    /// Run the store preflight before the first grant; refuse to grant on
    /// a store that fails it. Default: false.
    pub preflight: Option<bool>,
    /// A secret the seal of every lease derives from: only clients with
    /// the same seal key accept each other's leases (the WIT config's
    /// `seal-key`). Default: none; leases are sealed with a random key kept
    /// in the store, and any client of the store and key prefix accepts
    /// them, whatever its credentials.
    pub seal_key: Option<String>,
    /// Keep the grant log (the WIT config's `audit`; docs/audit.md): a
    /// create-only record after every grant and release, which
    /// [`crate::Client::audit`] reads and [`crate::Client::audit_verify`]
    /// proves. Default: false.
    pub audit: Option<bool>,
}

/// The one store a config holds, with that store's own settings.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum Store {
    S3(S3Builder),
    DynamoDb(DynamoDbBuilder),
    AzureBlob(AzureBlobBuilder),
    Gcs(GcsBuilder),
}

impl StoreConfig {
    fn of(store: Store) -> Self {
        StoreConfig {
            store,
            key_prefix: None,
            request_timeout: None,
            strategy: None,
            expiry_clock: None,
            preflight: None,
            seal_key: None,
            audit: None,
        }
    }

    /// The same store reached at `url` instead (a proxy, an emulator);
    /// S3 and Azure addressing become path-style, as such endpoints want.
    pub fn with_endpoint(mut self, url: impl Into<String>) -> Self {
        self.store = match self.store {
            Store::S3(s3) => Store::S3(s3.endpoint(url)),
            Store::DynamoDb(table) => Store::DynamoDb(table.endpoint(url)),
            Store::AzureBlob(azure) => Store::AzureBlob(azure.endpoint(url)),
            Store::Gcs(gcs) => Store::Gcs(gcs.endpoint(url)),
        };
        self
    }

    /// An AWS store's credentials from `source` instead (a caller's own
    /// provider: the Node package's `credentials:` function), the first
    /// ones fetched now unless `source` has fresh ones, the next by a live
    /// client before they expire. An `invalid-config` error on Azure and
    /// GCS, whose credentials are tokens (see their builders'
    /// `token_source`).
    pub fn with_credentials_source(mut self, source: SharedSource) -> Result<Self, Error> {
        self.store = match self.store {
            Store::S3(s3) => Store::S3(s3.credentials_source(source)?),
            Store::DynamoDb(table) => Store::DynamoDb(table.credentials_source(source)?),
            Store::AzureBlob(_) | Store::Gcs(_) => {
                return Err(Error::invalid_config(
                    "credentials",
                    "a credentials source gives AWS keys; an Azure or GCS store takes tokens",
                ))
            }
        };
        Ok(self)
    }

    pub fn with_key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = Some(prefix.into());
        self
    }

    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = Some(timeout);
        self
    }

    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = Some(strategy);
        self
    }

    pub fn with_expiry_clock(mut self, clock: ExpiryClock) -> Self {
        self.expiry_clock = Some(clock);
        self
    }

    /// Run the store preflight before the first grant.
    pub fn with_preflight(mut self, preflight: bool) -> Self {
        self.preflight = Some(preflight);
        self
    }

    /// Keep the grant log (see [`StoreConfig::audit`]).
    pub fn with_audit(mut self, audit: bool) -> Self {
        self.audit = Some(audit);
        self
    }

    pub fn with_seal_key(mut self, key: impl Into<String>) -> Self {
        self.seal_key = Some(key.into());
        self
    }

    /// The store's name as errors and messages name it: `S3`, `DynamoDB`,
    /// `Azure Blob Storage` or `Google Cloud Storage`.
    pub fn store_name(&self) -> &'static str {
        match &self.store {
            Store::S3(_) => "S3",
            Store::DynamoDb(_) => "DynamoDB",
            Store::AzureBlob(_) => "Azure Blob Storage",
            Store::Gcs(_) => "Google Cloud Storage",
        }
    }

    /// The shortest time between two writes of one object the store takes,
    /// where it has one: about a second on GCS (it answers faster writers
    /// with 429). The component refuses a ttl or an elector retry period
    /// that would renew faster (`invalid-config`); a caller choosing
    /// periods for a user (the command line's `run` and `elect`) keeps to it.
    pub fn min_write_interval(&self) -> Option<std::time::Duration> {
        match &self.store {
            Store::Gcs(_) => Some(std::time::Duration::from_secs(1)),
            _ => None,
        }
    }

    /// The store as `S3LEASE_STORE` (and the contract's `store`) names it:
    /// `s3`, `dynamodb`, `azure-blob` or `gcs`.
    pub fn store_kind(&self) -> &'static str {
        match &self.store {
            Store::S3(_) => "s3",
            Store::DynamoDb(_) => "dynamodb",
            Store::AzureBlob(_) => "azure-blob",
            Store::Gcs(_) => "gcs",
        }
    }

    /// The store's endpoint: S3's, DynamoDB's, the Azure account's or GCS's.
    pub fn endpoint(&self) -> &str {
        match &self.store {
            Store::S3(s3) => &s3.aws.endpoint,
            Store::DynamoDb(table) => &table.aws.endpoint,
            Store::AzureBlob(azure) => &azure.endpoint,
            Store::Gcs(gcs) => &gcs.endpoint,
        }
    }

    /// The AWS region (S3 and DynamoDB); `None` on Azure and GCS.
    pub fn region(&self) -> Option<&str> {
        self.aws().map(|aws| aws.region.as_str())
    }

    /// The bucket, when the locks are in S3 or in Google Cloud Storage.
    pub fn bucket(&self) -> Option<&str> {
        match &self.store {
            Store::S3(s3) => Some(&s3.bucket),
            Store::Gcs(gcs) => Some(&gcs.bucket),
            _ => None,
        }
    }

    /// The table, when the locks are in DynamoDB.
    pub fn table(&self) -> Option<&str> {
        match &self.store {
            Store::DynamoDb(table) => Some(&table.table),
            _ => None,
        }
    }

    /// The container, when the locks are in Azure Blob Storage.
    pub fn container(&self) -> Option<&str> {
        match &self.store {
            Store::AzureBlob(azure) => Some(&azure.container),
            _ => None,
        }
    }

    /// Where this store's errors happened, as they name it: its kind,
    /// endpoint (without secrets) and bucket, table or container.
    pub(crate) fn error_store(&self) -> crate::error::ErrorStore {
        let bucket = self.bucket().or(self.table()).or(self.container());
        crate::error::ErrorStore::new(self.store_name(), self.endpoint(), bucket.unwrap_or(""))
    }

    /// Where an AWS store's credentials are refreshed from, if anywhere
    /// (`None`: fixed keys, or an Azure or GCS store).
    pub fn credentials_source(&self) -> Option<&SharedSource> {
        self.aws().and_then(|aws| aws.source.as_ref())
    }

    /// Where an Azure or GCS store's bearer tokens are refreshed from, if
    /// anywhere (`None`: a fixed credential, or an AWS store).
    pub fn token_source(&self) -> Option<&SharedTokenSource> {
        match &self.store {
            Store::AzureBlob(azure) => azure.token_source.as_ref(),
            Store::Gcs(gcs) => gcs.token_source.as_ref(),
            _ => None,
        }
    }

    fn aws(&self) -> Option<&aws::AwsAccess> {
        match &self.store {
            Store::S3(s3) => Some(&s3.aws),
            Store::DynamoDb(table) => Some(&table.aws),
            Store::AzureBlob(_) | Store::Gcs(_) => None,
        }
    }

    /// The store and its own settings.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// A bearer token as this store's credential (a token source's fresh
    /// one); `None` on a store that takes keys, not tokens.
    pub(crate) fn bearer(&self, token: String) -> Option<Credential> {
        match &self.store {
            Store::S3(_) | Store::DynamoDb(_) => None,
            Store::AzureBlob(_) => Some(Credential::Azure(AzureCredential::BearerToken(token))),
            Store::Gcs(_) => Some(Credential::Gcs(GcsCredential::BearerToken(token))),
        }
    }
}

impl fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreConfig")
            .field("store", &self.store)
            .field("key_prefix", &self.key_prefix)
            .field("request_timeout", &self.request_timeout)
            .field("strategy", &self.strategy)
            .field("expiry_clock", &self.expiry_clock)
            .field("preflight", &self.preflight)
            .field("seal_key", &self.seal_key.as_ref().map(|_| "<redacted>"))
            .field("audit", &self.audit)
            .finish()
    }
}

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
#[cfg(test)]
mod tests;

pub use azure_blob::AzureBlobBuilder;
pub use dynamodb::DynamoDbBuilder;
pub use env::AwsKeys;
pub use gcs::GcsBuilder;
pub use s3::S3Builder;

use crate::credentials::{SharedSource, SharedTokenSource};
use crate::error::Error;
use crate::types::{Credential, ExpiryClock, Strategy};
pub(crate) use env::KeysFrom;
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

/// `$body` for the store `$store` holds, bound to `$s` (its builder): the
/// one place a choice over the stores is spelled out.
macro_rules! each_store {
    ($store:expr, $s:ident => $body:expr) => {
        match $store {
            Store::S3($s) => $body,
            Store::DynamoDb($s) => $body,
            Store::AzureBlob($s) => $body,
            Store::Gcs($s) => $body,
        }
    };
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
    /// addressing becomes path-style where the store has a choice, as such
    /// endpoints want.
    pub fn with_endpoint(mut self, url: impl Into<String>) -> Self {
        let url = url.into();
        self.store = each_store!(self.store, s => s.with_endpoint(url).build_store());
        self
    }

    /// An AWS store's credentials from `source` instead (a caller's own
    /// provider: the Node package's `credentials:` function), the first
    /// ones fetched now unless `source` has fresh ones, the next by a live
    /// client before they expire. An `invalid-config` error on a store
    /// whose credentials are tokens (see its builder's `token_source`).
    pub fn with_credentials_source(mut self, source: SharedSource) -> Result<Self, Error> {
        self.store = each_store!(self.store, s => s.with_credentials_source(source)?.build_store());
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

    /// The store's name as errors and messages name it (`S3`, say).
    pub fn store_name(&self) -> &'static str {
        each_store!(&self.store, s => name_of(s))
    }

    /// The shortest time between two writes of one object the store takes,
    /// where it has one (a store that answers faster writers with 429).
    /// The component refuses a ttl or an elector retry period that would
    /// renew faster (`invalid-config`); a caller choosing periods for a
    /// user (the command line's `run` and `elect`) keeps to it.
    pub fn min_write_interval(&self) -> Option<Duration> {
        each_store!(&self.store, s => s.min_write_interval())
    }

    /// The store as `S3LEASE_STORE` (and the contract's `store`) names it
    /// (`s3`, say).
    pub fn store_kind(&self) -> &'static str {
        each_store!(&self.store, s => kind_of(s))
    }

    /// The store's endpoint.
    pub fn endpoint(&self) -> &str {
        each_store!(&self.store, s => s.endpoint())
    }

    /// The AWS region, on a store that signs for one.
    pub fn region(&self) -> Option<&str> {
        self.aws().map(|aws| aws.region.as_str())
    }

    /// The bucket, when the store keeps the locks in a bucket.
    pub fn bucket(&self) -> Option<&str> {
        self.place_called("bucket")
    }

    /// The table, when the store keeps the locks in a table.
    pub fn table(&self) -> Option<&str> {
        self.place_called("table")
    }

    /// The container, when the store keeps the locks in a container.
    pub fn container(&self) -> Option<&str> {
        self.place_called("container")
    }

    fn place_called(&self, noun: &str) -> Option<&str> {
        let (called, place) = each_store!(&self.store, s => (place_noun_of(s), s.place()));
        (called == noun).then_some(place)
    }

    /// Where this store's errors happened, as they name it: its kind,
    /// endpoint (without secrets) and bucket, table or container.
    pub(crate) fn error_store(&self) -> crate::error::ErrorStore {
        let (noun, place) = each_store!(&self.store, s => (place_noun_of(s), s.place()));
        crate::error::ErrorStore::new(self.store_name(), noun, self.endpoint(), place)
    }

    /// Where an AWS store's credentials are refreshed from, if anywhere
    /// (`None`: fixed keys, or a store that takes tokens).
    pub fn credentials_source(&self) -> Option<&SharedSource> {
        self.aws().and_then(|aws| aws.source.as_ref())
    }

    /// Where a store's bearer tokens are refreshed from, if anywhere
    /// (`None`: a fixed credential, or a store that takes keys).
    pub fn token_source(&self) -> Option<&SharedTokenSource> {
        each_store!(&self.store, s => s.token_source())
    }

    fn aws(&self) -> Option<&aws::AwsAccess> {
        each_store!(&self.store, s => s.aws())
    }

    /// The store and its own settings.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// A bearer token as this store's credential (a token source's fresh
    /// one); `None` on a store that takes keys, not tokens.
    pub(crate) fn bearer(&self, token: String) -> Option<Credential> {
        each_store!(&self.store, s => s.bearer(token))
    }
}

/// What the host's generic code asks of one store's own settings. Each
/// store's file answers for its builder, so a store is its file and a case
/// of [`Store`], not a branch in every accessor.
pub(crate) trait OwnSettings: Sized {
    /// As `S3LEASE_STORE` and the contract's `store` name it.
    const KIND: &'static str;
    /// As errors and messages name it.
    const NAME: &'static str;
    /// What the store calls the place its locks are kept in.
    const PLACE: &'static str;
    /// Whether its requests are signed with AWS keys (so it takes a
    /// credentials source).
    const AWS_KEYS: bool;

    /// Reads the store from the variables (`S3LEASE_STORE` named it): see
    /// [`StoreConfig::from_vars`]. `place` is the bucket the caller gave.
    fn from_vars(
        place: &str,
        var: &dyn Fn(&str) -> Option<String>,
        keys: KeysFrom,
    ) -> Result<Self, Error>;
    fn endpoint(&self) -> &str;
    /// The bucket, table or container.
    fn place(&self) -> &str;
    fn with_endpoint(self, url: String) -> Self;
    fn build_store(self) -> Store;
    fn min_write_interval(&self) -> Option<Duration> {
        None
    }
    fn aws(&self) -> Option<&aws::AwsAccess> {
        None
    }
    fn with_credentials_source(self, _source: SharedSource) -> Result<Self, Error> {
        Err(Error::invalid_config(
            "credentials",
            format!(
                "a credentials source gives AWS keys; {} takes tokens",
                Self::NAME
            ),
        ))
    }
    fn token_source(&self) -> Option<&SharedTokenSource> {
        None
    }
    fn bearer(&self, _token: String) -> Option<Credential> {
        None
    }
}

fn name_of<T: OwnSettings>(_: &T) -> &'static str {
    T::NAME
}

fn kind_of<T: OwnSettings>(_: &T) -> &'static str {
    T::KIND
}

fn place_noun_of<T: OwnSettings>(_: &T) -> &'static str {
    T::PLACE
}

/// Reads one store from the variables: see [`OwnSettings::from_vars`].
pub(crate) type ReadStore =
    fn(&str, &dyn Fn(&str) -> Option<String>, KeysFrom) -> Result<Store, Error>;

/// One store's reader, by the name `S3LEASE_STORE` gives it.
pub(crate) struct StoreKind {
    pub(crate) name: &'static str,
    pub(crate) aws_keys: bool,
    pub(crate) read: ReadStore,
}

const fn kind<T: OwnSettings>() -> StoreKind {
    StoreKind {
        name: T::KIND,
        aws_keys: T::AWS_KEYS,
        read: |place, var, keys| T::from_vars(place, var, keys).map(T::build_store),
    }
}

/// Every store, the first the default (`S3LEASE_STORE` unset).
pub(crate) const STORE_KINDS: &[StoreKind] = &[
    kind::<S3Builder>(),
    kind::<DynamoDbBuilder>(),
    kind::<AzureBlobBuilder>(),
    kind::<GcsBuilder>(),
];

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

//! The client's configuration: the contract's `config` record as a builder
//! that starts from the contract's defaults, and `Config::from_vars`, the
//! environment's variables read as the host crate and the command line
//! read them. Secrets never reach `Debug`.

use crate::error::Error;
use std::fmt;
use std::time::Duration;

/// The contract's names for addressing, strategies and expiry clocks
/// (default strategy `SingleObject`; default expiry clock `Server`, or
/// `Observed` on DynamoDB), defined once for the component, the host crate
/// and this crate.
pub use s3_lease_keep::vocabulary::{Addressing, ExpiryClock, Strategy};

// Each store's builder, credential and variables, in its own file.
mod azure_blob;
mod dynamodb;
mod gcs;

/// AWS keys, for S3 and DynamoDB: `Credentials::new(id, secret)`, then
/// `with_session_token` for temporary ones. The secret and the session
/// token never reach `Debug`. Defined once for the component, the host
/// crate and this crate.
pub use s3_lease_keep::records::Credentials;

pub use azure_blob::AzureCredential;
pub use gcs::GcsCredential;

/// Where the locks are kept, with that store's own endpoint, place and
/// credential (the contract's `store`). Credentials never reach `Debug`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Store {
    /// Objects in an S3 bucket (AWS's, or any S3-compatible store's).
    S3 {
        /// `http://host[:port]` or `https://host[:port]`, with no path.
        endpoint: String,
        /// The signing region, e.g. `us-east-1`.
        region: String,
        bucket: String,
        addressing: Addressing,
        credentials: Credentials,
    },
    /// Items in a DynamoDB table, at DynamoDB's endpoint (or a local one's).
    DynamoDb {
        endpoint: String,
        region: String,
        table: String,
        credentials: Credentials,
    },
    /// Blobs in a container of an Azure Blob Storage account; the endpoint
    /// is the account's blob endpoint (virtual-hosted), or an emulator's
    /// root (path addressing: the account goes first in every path).
    AzureBlob {
        endpoint: String,
        addressing: Addressing,
        account: String,
        container: String,
        credential: AzureCredential,
    },
    /// Objects in a Google Cloud Storage bucket, through its JSON API; the
    /// endpoint is `https://storage.googleapis.com` (or an emulator's).
    Gcs {
        endpoint: String,
        bucket: String,
        credential: GcsCredential,
    },
}

/// A store's credential, as `Client::set_credential` replaces it (the
/// contract's `credential`): of the client's store's kind (AWS keys for
/// S3 and DynamoDB). Never in `Debug`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    Aws(Credentials),
    Azure(AzureCredential),
    Gcs(GcsCredential),
}

/// Everything a client needs to reach its store: the store, and the
/// settings every store shares. `None` fields take the contract's defaults
/// (`wit/lease.wit`, record `config`).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    pub store: Store,
    /// Prepended to every lock key, e.g. `locks/`.
    pub key_prefix: Option<String>,
    /// Bound on each HTTP request (default 10 s).
    pub request_timeout: Option<Duration>,
    pub strategy: Option<Strategy>,
    pub expiry_clock: Option<ExpiryClock>,
    /// Check the store before the first grant (default: no).
    pub preflight: Option<bool>,
    /// The secret leases are sealed with (default: a random key kept in
    /// the store). Never reaches `Debug`.
    pub seal_key: Option<String>,
    /// Keep the grant log (default: no): a create-only record after each
    /// grant and release, which `audit`, `audit_verify` and `audit_prune`
    /// read (docs/audit.md).
    pub audit: Option<bool>,
}

impl Config {
    /// `store` with every shared setting at its default.
    pub fn of(store: Store) -> Config {
        Config {
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

    /// A bucket on an S3 endpoint of your own (MinIO, SeaweedFS, a proxy):
    /// path addressing, as the host crate and the command line choose for
    /// a custom endpoint; `with_addressing` changes it.
    pub fn s3(
        endpoint: impl Into<String>,
        region: impl Into<String>,
        bucket: impl Into<String>,
        credentials: Credentials,
    ) -> Config {
        Config::of(Store::S3 {
            endpoint: endpoint.into(),
            region: region.into(),
            bucket: bucket.into(),
            addressing: Addressing::Path,
            credentials,
        })
    }

    /// A bucket on AWS S3 itself: `https://s3.<region>.amazonaws.com`,
    /// virtual-hosted addressing.
    pub fn aws(
        region: impl Into<String>,
        bucket: impl Into<String>,
        credentials: Credentials,
    ) -> Config {
        let region = region.into();
        let endpoint = format!("https://s3.{region}.amazonaws.com");
        Config::s3(endpoint, region, bucket, credentials).with_addressing(Addressing::VirtualHosted)
    }

    /// The store's endpoint.
    pub fn endpoint(&self) -> &str {
        match &self.store {
            Store::S3 { endpoint, .. }
            | Store::DynamoDb { endpoint, .. }
            | Store::AzureBlob { endpoint, .. }
            | Store::Gcs { endpoint, .. } => endpoint,
        }
    }

    /// The same store at another endpoint (an emulator, a proxy).
    pub fn with_endpoint(mut self, url: impl Into<String>) -> Config {
        match &mut self.store {
            Store::S3 { endpoint, .. }
            | Store::DynamoDb { endpoint, .. }
            | Store::AzureBlob { endpoint, .. }
            | Store::Gcs { endpoint, .. } => *endpoint = url.into(),
        }
        self
    }

    /// How an S3 bucket or an Azure account is addressed; nothing for
    /// DynamoDB and GCS, which have one way.
    pub fn with_addressing(mut self, addressing: Addressing) -> Config {
        match &mut self.store {
            Store::S3 { addressing: a, .. } | Store::AzureBlob { addressing: a, .. } => {
                *a = addressing
            }
            Store::DynamoDb { .. } | Store::Gcs { .. } => {}
        }
        self
    }

    pub fn with_key_prefix(mut self, key_prefix: impl Into<String>) -> Config {
        self.key_prefix = Some(key_prefix.into());
        self
    }

    pub fn with_request_timeout(mut self, timeout: Duration) -> Config {
        self.request_timeout = Some(timeout);
        self
    }

    pub fn with_strategy(mut self, strategy: Strategy) -> Config {
        self.strategy = Some(strategy);
        self
    }

    pub fn with_expiry_clock(mut self, expiry_clock: ExpiryClock) -> Config {
        self.expiry_clock = Some(expiry_clock);
        self
    }

    pub fn with_preflight(mut self, preflight: bool) -> Config {
        self.preflight = Some(preflight);
        self
    }

    pub fn with_seal_key(mut self, seal_key: impl Into<String>) -> Config {
        self.seal_key = Some(seal_key.into());
        self
    }

    /// Keep the grant log (see [`Config::audit`]).
    pub fn with_audit(mut self, audit: bool) -> Config {
        self.audit = Some(audit);
        self
    }

    pub fn with_store(mut self, store: Store) -> Config {
        self.store = store;
        self
    }

    /// The key prefix, `""` when none: what fenced object keys are often
    /// built on (fenced writes take full keys; the prefix is not added).
    pub fn key_prefix(&self) -> &str {
        self.key_prefix.as_deref().unwrap_or("")
    }

    /// The config from variables, as `Config::from_env` reads them from
    /// `wasi:cli/environment` (`var` returns `None` for an unset one; an
    /// empty value counts as unset):
    ///
    /// - `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`: an endpoint of your
    ///   own, addressed by path; unset: AWS's own for the region, by
    ///   virtual host. `S3LEASE_ADDRESSING` (`path` or `virtual-hosted`)
    ///   overrides either.
    /// - `AWS_REGION`, else `AWS_DEFAULT_REGION`; default `us-east-1`.
    /// - `S3LEASE_BUCKET`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`:
    ///   required. `AWS_SESSION_TOKEN`, `S3LEASE_KEY_PREFIX`,
    ///   `S3LEASE_SEAL_KEY`: optional.
    /// - `S3LEASE_STORE=dynamodb` with `S3LEASE_TABLE`: the locks in that
    ///   table (no bucket needed), at `AWS_ENDPOINT_URL_DYNAMODB`, else
    ///   `AWS_ENDPOINT_URL`, else AWS's for the region.
    /// - `S3LEASE_STORE=azure-blob`: the container `S3LEASE_CONTAINER`,
    ///   else `S3LEASE_BUCKET`, of the account in
    ///   `AZURE_STORAGE_CONNECTION_STRING` (`AccountName`, `AccountKey` or
    ///   `SharedAccessSignature`, `BlobEndpoint` or
    ///   `DefaultEndpointsProtocol` and `EndpointSuffix`, or
    ///   `UseDevelopmentStorage=true`), else `AZURE_STORAGE_ACCOUNT` with
    ///   `AZURE_STORAGE_KEY` or `AZURE_STORAGE_SAS_TOKEN`, as the host
    ///   crate reads them; no AWS variable is needed. The host crate's
    ///   last resort, a managed identity, is not read here: pass its token
    ///   to `Config::azure_blob` as `AzureCredential::BearerToken`.
    ///
    /// The first variable missing or refused is named in the error
    /// (`MissingEnv`, `InvalidEnv`).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Config, Error> {
        let var = |name: &str| var(name).filter(|v| !v.is_empty());
        let required = |name: &'static str| var(name).ok_or(Error::MissingEnv { name });
        let table = match var("S3LEASE_STORE")
            .map(|s| s.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("s3") => None,
            Some("dynamodb") => Some(required("S3LEASE_TABLE")?),
            Some("azure-blob") => return Config::from_azure_vars(&var),
            Some(_) => {
                return Err(Error::InvalidEnv {
                    name: "S3LEASE_STORE",
                    expected: "s3, dynamodb or azure-blob",
                })
            }
        };
        let service_endpoint = if table.is_some() {
            "AWS_ENDPOINT_URL_DYNAMODB"
        } else {
            "AWS_ENDPOINT_URL_S3"
        };
        let custom_endpoint = var(service_endpoint).or_else(|| var("AWS_ENDPOINT_URL"));
        let region = var("AWS_REGION")
            .or_else(|| var("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        let addressing = match var("S3LEASE_ADDRESSING").as_deref() {
            Some("path") => Addressing::Path,
            Some("virtual-hosted") => Addressing::VirtualHosted,
            Some(_) => {
                return Err(Error::InvalidEnv {
                    name: "S3LEASE_ADDRESSING",
                    expected: "path or virtual-hosted",
                })
            }
            None if custom_endpoint.is_some() => Addressing::Path,
            None => Addressing::VirtualHosted,
        };
        let aws_endpoint = match table {
            Some(_) => format!("https://dynamodb.{region}.amazonaws.com"),
            None => format!("https://s3.{region}.amazonaws.com"),
        };
        let bucket = match table {
            Some(_) => String::new(),
            None => required("S3LEASE_BUCKET")?,
        };
        let mut credentials = Credentials::new(
            required("AWS_ACCESS_KEY_ID")?,
            required("AWS_SECRET_ACCESS_KEY")?,
        );
        credentials.session_token = var("AWS_SESSION_TOKEN");
        let endpoint = custom_endpoint.unwrap_or(aws_endpoint);
        let store = match table {
            Some(table) => Store::DynamoDb {
                endpoint,
                region,
                table,
                credentials,
            },
            None => Store::S3 {
                endpoint,
                region,
                bucket,
                addressing,
                credentials,
            },
        };
        let mut config = Config::of(store);
        config.key_prefix = var("S3LEASE_KEY_PREFIX");
        config.seal_key = var("S3LEASE_SEAL_KEY");
        Ok(config)
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("store", &self.store)
            .field("key_prefix", &self.key_prefix)
            .field("request_timeout", &self.request_timeout)
            .field("strategy", &self.strategy)
            .field("expiry_clock", &self.expiry_clock)
            .field("preflight", &self.preflight)
            .field("seal_key", &self.seal_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// The crossing into the contract's types of the store and a credential
/// (the rest of the configuration crosses in `convert`).
#[cfg(target_family = "wasm")]
mod to_contract {
    use super::{Credential, Store};
    use crate::bindings::types as raw;
    use s3_lease_keep::twins::FromTwin;

    impl Store {
        /// The store as the contract's.
        pub(crate) fn to_contract(&self) -> raw::Store {
            match self {
                Store::S3 {
                    endpoint,
                    region,
                    bucket,
                    addressing,
                    credentials: keys,
                } => raw::Store::S3(raw::S3Store {
                    endpoint: endpoint.clone(),
                    region: region.clone(),
                    bucket: bucket.clone(),
                    addressing: (*addressing).into(),
                    credentials: FromTwin::from_twin(keys.clone()),
                }),
                Store::DynamoDb {
                    endpoint,
                    region,
                    table,
                    credentials: keys,
                } => raw::Store::Dynamodb(raw::DynamodbStore {
                    endpoint: endpoint.clone(),
                    region: region.clone(),
                    table: table.clone(),
                    credentials: FromTwin::from_twin(keys.clone()),
                }),
                Store::AzureBlob {
                    endpoint,
                    addressing,
                    account,
                    container,
                    credential,
                } => raw::Store::AzureBlob(raw::AzureStore {
                    endpoint: endpoint.clone(),
                    addressing: (*addressing).into(),
                    account: account.clone(),
                    container: container.clone(),
                    credential: credential.to_contract(),
                }),
                Store::Gcs {
                    endpoint,
                    bucket,
                    credential,
                } => raw::Store::Gcs(raw::GcsStore {
                    endpoint: endpoint.clone(),
                    bucket: bucket.clone(),
                    credential: credential.to_contract(),
                }),
            }
        }
    }

    impl Credential {
        /// The credential as the contract's.
        pub(crate) fn to_contract(&self) -> raw::Credential {
            match self {
                Credential::Aws(c) => raw::Credential::Aws(FromTwin::from_twin(c.clone())),
                Credential::Azure(c) => raw::Credential::Azure(c.to_contract()),
                Credential::Gcs(c) => raw::Credential::Gcs(c.to_contract()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<Config, Error> {
        Config::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    const KEYS: [(&str, &str); 3] = [
        ("S3LEASE_BUCKET", "b"),
        ("AWS_ACCESS_KEY_ID", "AKID"),
        ("AWS_SECRET_ACCESS_KEY", "very-secret"),
    ];

    /// An S3 config's endpoint, addressing and region.
    fn s3(c: &Config) -> (&str, Addressing, &str) {
        match &c.store {
            Store::S3 {
                endpoint,
                addressing,
                region,
                ..
            } => (endpoint, *addressing, region),
            other => panic!("not an S3 store: {other:?}"),
        }
    }

    #[test]
    fn aws_itself_is_addressed_by_virtual_host() {
        let c = from(&KEYS).unwrap();
        assert_eq!(
            s3(&c),
            (
                "https://s3.us-east-1.amazonaws.com",
                Addressing::VirtualHosted,
                "us-east-1"
            )
        );
        assert_eq!(
            c,
            Config::aws("us-east-1", "b", Credentials::new("AKID", "very-secret"))
        );
    }

    #[test]
    fn an_endpoint_of_your_own_is_addressed_by_path_unless_told() {
        let mut vars = KEYS.to_vec();
        vars.push(("AWS_ENDPOINT_URL", "http://127.0.0.1:8333"));
        vars.push(("AWS_REGION", "eu-west-1"));
        let c = from(&vars).unwrap();
        assert_eq!(
            s3(&c),
            ("http://127.0.0.1:8333", Addressing::Path, "eu-west-1")
        );
        vars.push(("AWS_ENDPOINT_URL_S3", "http://s3.local:9000"));
        vars.push(("S3LEASE_ADDRESSING", "virtual-hosted"));
        vars.push(("S3LEASE_KEY_PREFIX", "locks/"));
        let c = from(&vars).unwrap();
        assert_eq!(
            s3(&c),
            (
                "http://s3.local:9000",
                Addressing::VirtualHosted,
                "eu-west-1"
            )
        );
        assert_eq!(c.key_prefix(), "locks/");
    }

    #[test]
    fn a_missing_or_empty_variable_is_named() {
        for skipped in KEYS.map(|(name, _)| name) {
            let vars: Vec<_> = KEYS
                .iter()
                .filter(|(n, _)| *n != skipped)
                .copied()
                .collect();
            assert_eq!(from(&vars), Err(Error::MissingEnv { name: skipped }));
            let mut empty = vars.clone();
            empty.push((skipped, ""));
            assert_eq!(from(&empty), Err(Error::MissingEnv { name: skipped }));
        }
        let mut vars = KEYS.to_vec();
        vars.push(("S3LEASE_ADDRESSING", "sideways"));
        let e = from(&vars).unwrap_err();
        assert_eq!(
            e.to_string(),
            "S3LEASE_ADDRESSING is not path or virtual-hosted"
        );
    }

    #[test]
    fn dynamodb_needs_its_table_not_a_bucket() {
        let mut vars = KEYS[1..].to_vec();
        vars.push(("S3LEASE_STORE", "dynamodb"));
        assert_eq!(
            from(&vars),
            Err(Error::MissingEnv {
                name: "S3LEASE_TABLE"
            })
        );
        vars.push(("S3LEASE_TABLE", "locks"));
        let c = from(&vars).unwrap();
        assert_eq!(
            c,
            Config::dynamodb(
                "us-east-1",
                "locks",
                Credentials::new("AKID", "very-secret")
            )
        );
        assert_eq!(c.endpoint(), "https://dynamodb.us-east-1.amazonaws.com");
    }

    #[test]
    fn debug_hides_the_secrets() {
        let mut vars = KEYS.to_vec();
        vars.push(("AWS_SESSION_TOKEN", "session-secret"));
        vars.push(("S3LEASE_SEAL_KEY", "seal-secret"));
        let shown = format!("{:?}", from(&vars).unwrap());
        for secret in ["very-secret", "session-secret", "seal-secret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("AKID"), "{shown}");
    }
}

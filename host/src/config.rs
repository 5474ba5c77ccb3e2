//! The client configuration, from code or from the usual AWS (or Azure)
//! variables.

use crate::azure_blob::{AzureBlob, AzureCredential};
use crate::bindings::{Config, Store};
use crate::convert;
use crate::credentials::azure::{self, AccountAuth};
use crate::credentials::{AwsChain, SharedSource, SharedTokenSource};
use crate::types::{Addressing, Credentials, ExpiryClock, Strategy};
use crate::Error;
use std::fmt;
use std::time::Duration;

/// Where the locks live and how to reach them. `Debug` never shows the
/// secret key, the session token or the seal key.
///
/// Made by [`S3Config::from_env`] (the AWS chain, as the SDKs read it),
/// [`S3Config::from_sdk_config`] (an `SdkConfig` the service already
/// has), [`S3Config::new`], [`S3Config::dynamodb`] or
/// [`S3Config::azure_blob`] (keys in hand), then changed with the `with_*`
/// methods or its fields.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct S3Config {
    /// `https://s3.<region>.amazonaws.com`, or any S3-compatible endpoint.
    pub endpoint: String,
    pub region: String,
    pub bucket: String,
    pub addressing: Addressing,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
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
    /// in the store, and any client of the bucket and key prefix accepts
    /// them, whatever its credentials.
    pub seal_key: Option<String>,
    /// Keep the locks in this DynamoDB table instead of the bucket (the WIT
    /// `store`); `endpoint` is then DynamoDB's. Default: none, S3.
    pub dynamodb_table: Option<String>,
    /// Keep the locks in this Azure Blob Storage container instead (the
    /// WIT store `azure-blob`): `endpoint` and `addressing` are then the
    /// account's, and the AWS fields unused. Default: none.
    pub azure_blob: Option<AzureBlob>,
    /// Where a client takes its credentials from and refreshes them
    /// (`access_key_id`, `secret_access_key` and `session_token` are then
    /// only the first ones fetched). Set by
    /// [`S3Config::from_env`]; `None`: the fields above, fixed.
    pub credentials_source: Option<SharedSource>,
}

impl S3Config {
    /// A bucket on AWS's own S3 in `region`, virtual-hosted addressing,
    /// with fixed keys; everything else at its default.
    pub fn new(
        bucket: impl Into<String>,
        region: impl Into<String>,
        credentials: Credentials,
    ) -> Self {
        let region = region.into();
        S3Config {
            endpoint: format!("https://s3.{region}.amazonaws.com"),
            region,
            bucket: bucket.into(),
            addressing: Addressing::VirtualHosted,
            access_key_id: credentials.access_key_id,
            secret_access_key: credentials.secret_access_key,
            session_token: credentials.session_token,
            key_prefix: None,
            request_timeout: None,
            strategy: None,
            expiry_clock: None,
            preflight: None,
            seal_key: None,
            dynamodb_table: None,
            azure_blob: None,
            credentials_source: None,
        }
    }

    /// A container of an Azure Blob Storage account
    /// (`https://<account>.blob.core.windows.net`); an emulator's root
    /// (Azurite: `http://127.0.0.1:10000`) with [`S3Config::with_endpoint`].
    /// A bearer token that must be kept fresh: then
    /// [`S3Config::with_azure_token_source`].
    pub fn azure_blob(
        account: impl Into<String>,
        container: impl Into<String>,
        credential: AzureCredential,
    ) -> Self {
        let blob = AzureBlob::new(account, container, credential);
        // Azure takes no region, bucket or AWS keys: the component ignores these.
        let mut config = Self::new("", "azure", Credentials::new("", ""));
        config.endpoint = format!("https://{}.blob.core.windows.net", blob.account);
        config.azure_blob = Some(blob);
        config
    }

    /// A DynamoDB table on AWS in `region`, with fixed keys.
    pub fn dynamodb(
        table: impl Into<String>,
        region: impl Into<String>,
        credentials: Credentials,
    ) -> Self {
        let mut config = Self::new("", region, credentials);
        config.endpoint = format!("https://dynamodb.{}.amazonaws.com", config.region);
        config.dynamodb_table = Some(table.into());
        config
    }

    /// From an `SdkConfig` the service has already loaded (with
    /// `aws_config::load_defaults` or its own builder): its region, its
    /// endpoint URL if it names one (then path-style addressing), and its
    /// credentials provider, which a live client refreshes from as the
    /// SDK's own clients would. `table` keeps the locks in DynamoDB rather
    /// than `bucket`. Fetches credentials once, here.
    pub fn from_sdk_config(
        sdk: &aws_config::SdkConfig,
        bucket: &str,
        table: Option<&str>,
    ) -> Result<Self, Error> {
        let region = sdk
            .region()
            .map(|r| r.to_string())
            .ok_or_else(|| Error::invalid_config("region", "the SdkConfig names no region"))?;
        let provider = sdk.credentials_provider().ok_or_else(|| {
            Error::invalid_config("credentials", "the SdkConfig has no credentials provider")
        })?;
        let source = SharedSource::new(crate::credentials::SdkProvider::new(provider)?);
        let first = source.fetch()?;
        let mut config = match table {
            Some(table) => Self::dynamodb(table, region, first.credentials),
            None => Self::new(bucket, region, first.credentials),
        };
        if let Some(url) = sdk.endpoint_url() {
            config = config.with_endpoint(url);
        }
        config.credentials_source = Some(source);
        Ok(config)
    }

    /// An S3-compatible endpoint (or a local DynamoDB) instead of AWS's;
    /// addressing becomes path-style, as most such stores want (change it
    /// after with [`S3Config::with_addressing`]).
    pub fn with_endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = url.into();
        self.addressing = Addressing::Path;
        self
    }

    pub fn with_addressing(mut self, addressing: Addressing) -> Self {
        self.addressing = addressing;
        self
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

    pub fn with_seal_key(mut self, key: impl Into<String>) -> Self {
        self.seal_key = Some(key.into());
        self
    }

    /// An Azure client's bearer tokens from `source` (a
    /// [`ManagedIdentity`](crate::credentials::ManagedIdentity), say): the
    /// first fetched now, the next ones installed by a live client before
    /// they expire. An `invalid-config` error on a config that is not an
    /// Azure Blob store's.
    pub fn with_azure_token_source(mut self, source: SharedTokenSource) -> Result<Self, Error> {
        let Some(blob) = &mut self.azure_blob else {
            return Err(Error::invalid_config(
                "credentials",
                "an Azure token source is for an azure-blob store (S3Config::azure_blob)",
            ));
        };
        blob.credential = AzureCredential::BearerToken(source.latest()?.token);
        blob.token_source = Some(source);
        Ok(self)
    }

    /// Credentials from `source`, fetched now and refreshed by a live
    /// client before they expire.
    pub fn with_credentials_source(mut self, source: SharedSource) -> Result<Self, Error> {
        let first = source.latest()?.credentials;
        self.access_key_id = first.access_key_id;
        self.secret_access_key = first.secret_access_key;
        self.session_token = first.session_token;
        self.credentials_source = Some(source);
        Ok(self)
    }

    /// From the environment and the AWS configuration files, as the AWS
    /// SDKs read them: credentials and region from the AWS chain
    /// ([`AwsChain`]: environment, profile files, web identity, container
    /// credentials, instance metadata), refreshed on a live client; the
    /// rest as [`S3Config::from_vars`] reads it. Credentials are fetched
    /// once here; with none anywhere, an `invalid-config` error lists where
    /// it looked. `S3LEASE_STORE=azure-blob`: an Azure container instead, as
    /// [`S3Config::from_azure_vars`] reads it.
    pub fn from_env(bucket: &str) -> Result<Self, Error> {
        Self::from_aws(bucket, |name| {
            std::env::var(name).ok().filter(|v| !v.is_empty())
        })
    }

    /// [`S3Config::from_env`] with the settings other than credentials from
    /// `var` (the command line passes its flags through it). The region is
    /// `var`'s `AWS_REGION` or `AWS_DEFAULT_REGION`, else the profile's,
    /// else (on AWS's own endpoint) instance metadata's, else `us-east-1`.
    pub fn from_aws(bucket: &str, var: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        if on_azure(&var) {
            return Self::from_azure_vars(&azure_container(bucket, &var)?, var);
        }
        let given_region = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION"));
        let on_aws = custom_endpoint(&var).is_none();
        let chain = AwsChain::load(given_region, on_aws)?;
        let region = chain.region().unwrap_or_else(|| "us-east-1".to_string());
        let source = SharedSource::new(chain);
        let first = source.fetch()?;
        let mut config = Self::settings(bucket, &var, region, first.credentials)?;
        config.credentials_source = Some(source);
        Ok(config)
    }

    /// Static keys only, from `var`: `AWS_ENDPOINT_URL_S3` or
    /// `AWS_ENDPOINT_URL` (default AWS itself), `AWS_REGION` or
    /// `AWS_DEFAULT_REGION` (default `us-east-1`), `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`; `S3LEASE_ADDRESSING`
    /// (`path` or `virtual-hosted`; default path for a custom endpoint,
    /// virtual-hosted on AWS) and `S3LEASE_SEAL_KEY` (the optional seal
    /// key). Missing keys are an `invalid-config` error naming the
    /// variable. `S3LEASE_STORE=dynamodb` with `S3LEASE_TABLE` keeps the
    /// locks in that DynamoDB table; its endpoint is then
    /// `AWS_ENDPOINT_URL_DYNAMODB` or `AWS_ENDPOINT_URL` (default AWS's in
    /// the region). `S3LEASE_STORE=azure-blob`: [`S3Config::from_azure_vars`].
    /// Tests pass a map.
    pub fn from_vars(bucket: &str, var: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        if on_azure(&var) {
            return Self::from_azure_vars(&azure_container(bucket, &var)?, var);
        }
        let region = var("AWS_REGION")
            .or_else(|| var("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".to_string());
        let required = |name: &str| {
            var(name).ok_or_else(|| {
                Error::invalid_config(
                    name,
                    "is not set (the S3 credentials come from the usual AWS variables)",
                )
            })
        };
        let mut credentials = Credentials::new(
            required("AWS_ACCESS_KEY_ID")?,
            required("AWS_SECRET_ACCESS_KEY")?,
        );
        credentials.session_token = var("AWS_SESSION_TOKEN");
        Self::settings(bucket, &var, region, credentials)
    }

    /// An Azure Blob Storage container's config, from the variables the
    /// Azure SDKs read (see `credentials::azure`): a connection string
    /// (`AZURE_STORAGE_CONNECTION_STRING`), else `AZURE_STORAGE_ACCOUNT`
    /// with `AZURE_STORAGE_KEY` or `AZURE_STORAGE_SAS_TOKEN`, else the
    /// account's managed identity (a bearer token fetched here, then kept
    /// fresh on a live client). `S3LEASE_SEAL_KEY` as for S3.
    pub fn from_azure_vars(
        container: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let account = azure::from_vars(&var)?;
        let (credential, identity) = match account.auth {
            AccountAuth::Credential(c) => (c, None),
            // Replaced by the first token, fetched below.
            AccountAuth::ManagedIdentity(m) => {
                (AzureCredential::BearerToken(String::new()), Some(m))
            }
        };
        let mut config = Self::azure_blob(account.account, container, credential);
        config.endpoint = account.endpoint;
        if account.path_style {
            config.addressing = Addressing::Path;
        }
        config.seal_key = var("S3LEASE_SEAL_KEY");
        match identity {
            Some(identity) => config.with_azure_token_source(SharedTokenSource::new(identity)),
            None => Ok(config),
        }
    }

    fn settings(
        bucket: &str,
        var: &impl Fn(&str) -> Option<String>,
        region: String,
        credentials: Credentials,
    ) -> Result<Self, Error> {
        let table = dynamodb_table(var)?;
        let custom_endpoint = custom_endpoint(var);
        let addressing = match var("S3LEASE_ADDRESSING").as_deref() {
            Some("path") => Addressing::Path,
            Some("virtual-hosted") => Addressing::VirtualHosted,
            Some(other) => {
                return Err(Error::invalid_config(
                    "S3LEASE_ADDRESSING",
                    format!("{other:?} is neither `path` nor `virtual-hosted`"),
                ))
            }
            None if custom_endpoint.is_some() => Addressing::Path,
            None => Addressing::VirtualHosted,
        };
        let endpoint = match (&table, custom_endpoint) {
            (_, Some(endpoint)) => endpoint,
            (Some(_), None) => format!("https://dynamodb.{region}.amazonaws.com"),
            (None, None) => format!("https://s3.{region}.amazonaws.com"),
        };
        Ok(S3Config {
            endpoint,
            region,
            bucket: bucket.to_string(),
            addressing,
            access_key_id: credentials.access_key_id,
            secret_access_key: credentials.secret_access_key,
            session_token: credentials.session_token,
            key_prefix: None,
            request_timeout: None,
            strategy: None,
            expiry_clock: None,
            preflight: None,
            seal_key: var("S3LEASE_SEAL_KEY"),
            dynamodb_table: table,
            azure_blob: None,
            credentials_source: None,
        })
    }

    /// The WIT record the component takes (with `unstable-raw`, for
    /// callers that drive an instance call by call).
    #[cfg(feature = "unstable-raw")]
    pub fn wit_config(&self) -> Config {
        self.to_wit()
    }

    pub(crate) fn to_wit(&self) -> Config {
        Config {
            endpoint: self.endpoint.clone(),
            region: self.region.clone(),
            bucket: self.bucket.clone(),
            addressing: convert::addressing(self.addressing),
            credentials: crate::bindings::Credentials {
                access_key_id: self.access_key_id.clone(),
                secret_access_key: self.secret_access_key.clone(),
                session_token: self.session_token.clone(),
            },
            key_prefix: self.key_prefix.clone(),
            request_timeout_ms: self
                .request_timeout
                .map(|t| u32::try_from(t.as_millis()).unwrap_or(u32::MAX)),
            strategy: self.strategy.map(convert::strategy),
            expiry_clock: self.expiry_clock.map(convert::expiry_clock),
            preflight: self.preflight,
            seal_key: self.seal_key.clone(),
            store: match &self.azure_blob {
                Some(blob) => Some(Store::AzureBlob(convert::azure_blob(blob))),
                None => self.dynamodb_table.clone().map(Store::Dynamodb),
            },
        }
    }
}

/// The endpoint a custom store is at: the service's own variable, as the
/// AWS SDKs read it, else `AWS_ENDPOINT_URL`.
fn custom_endpoint(var: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let service = if on_dynamodb(var) {
        "AWS_ENDPOINT_URL_DYNAMODB"
    } else {
        "AWS_ENDPOINT_URL_S3"
    };
    var(service).or_else(|| var("AWS_ENDPOINT_URL"))
}

fn on_dynamodb(var: &impl Fn(&str) -> Option<String>) -> bool {
    var("S3LEASE_STORE").is_some_and(|s| s.eq_ignore_ascii_case("dynamodb"))
}

fn on_azure(var: &impl Fn(&str) -> Option<String>) -> bool {
    var("S3LEASE_STORE").is_some_and(|s| s.eq_ignore_ascii_case("azure-blob"))
}

/// `S3LEASE_CONTAINER`, else the bucket given (the command line's `--container`).
fn azure_container(bucket: &str, var: &impl Fn(&str) -> Option<String>) -> Result<String, Error> {
    var("S3LEASE_CONTAINER")
        .or_else(|| (!bucket.is_empty()).then(|| bucket.to_string()))
        .ok_or_else(|| {
            Error::invalid_config(
                "S3LEASE_CONTAINER",
                "is not set: an azure-blob store needs its container (--container)",
            )
        })
}

/// `S3LEASE_STORE` (`s3`, the default, `dynamodb` or `azure-blob`) and
/// `S3LEASE_TABLE`.
fn dynamodb_table(var: &impl Fn(&str) -> Option<String>) -> Result<Option<String>, Error> {
    match var("S3LEASE_STORE")
        .map(|s| s.to_ascii_lowercase())
        .as_deref()
    {
        None | Some("s3") => Ok(None),
        Some("dynamodb") => var("S3LEASE_TABLE").map(Some).ok_or_else(|| {
            Error::invalid_config(
                "S3LEASE_TABLE",
                "is not set: a dynamodb store needs its table (--table)",
            )
        }),
        Some(other) => Err(Error::invalid_config(
            "S3LEASE_STORE",
            format!("{other:?} is none of `s3`, `dynamodb` and `azure-blob`"),
        )),
    }
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Config")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("bucket", &self.bucket)
            .field("addressing", &self.addressing)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .field("key_prefix", &self.key_prefix)
            .field("request_timeout", &self.request_timeout)
            .field("strategy", &self.strategy)
            .field("expiry_clock", &self.expiry_clock)
            .field("preflight", &self.preflight)
            .field("seal_key", &self.seal_key.as_ref().map(|_| "<redacted>"))
            .field("dynamodb_table", &self.dynamodb_table)
            .field("azure_blob", &self.azure_blob)
            .field("credentials_source", &self.credentials_source)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn takes_region_endpoint_and_credentials_from_an_sdk_config() {
        use aws_credential_types::provider::SharedCredentialsProvider;
        let sdk = aws_config::SdkConfig::builder()
            .region(aws_config::Region::new("eu-west-1"))
            .endpoint_url("http://127.0.0.1:9000")
            .credentials_provider(SharedCredentialsProvider::new(
                aws_credential_types::Credentials::new(
                    "AKIDSDK",
                    "s3cr3t-value",
                    Some("t0ken-value".into()),
                    None,
                    "test",
                ),
            ))
            .build();
        let c = S3Config::from_sdk_config(&sdk, "locks", None).unwrap();
        assert_eq!(
            (c.region.as_str(), c.endpoint.as_str(), c.addressing),
            ("eu-west-1", "http://127.0.0.1:9000", Addressing::Path)
        );
        assert_eq!(c.access_key_id, "AKIDSDK");
        assert_eq!(c.session_token.as_deref(), Some("t0ken-value"));
        assert!(
            c.credentials_source.is_some(),
            "refreshed from the provider"
        );
        let text = format!("{c:?}");
        assert!(
            !text.contains("s3cr3t") && !text.contains("t0ken"),
            "{text}"
        );

        let d = S3Config::from_sdk_config(&sdk, "", Some("locks")).unwrap();
        assert_eq!(d.dynamodb_table.as_deref(), Some("locks"));
        let bare = aws_config::SdkConfig::builder().build();
        let e = S3Config::from_sdk_config(&bare, "locks", None).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidConfig);
    }

    #[test]
    fn builds_from_keys_in_hand() {
        let c = S3Config::new("locks", "us-west-2", Credentials::new("AKID", "secret"))
            .with_key_prefix("locks/")
            .with_request_timeout(Duration::from_secs(3));
        assert_eq!(c.endpoint, "https://s3.us-west-2.amazonaws.com");
        assert_eq!(c.addressing, Addressing::VirtualHosted);
        assert_eq!(c.to_wit().request_timeout_ms, Some(3_000));
        let d = S3Config::dynamodb("locks", "us-west-2", Credentials::new("AKID", "secret"));
        assert_eq!(d.endpoint, "https://dynamodb.us-west-2.amazonaws.com");
    }

    #[test]
    fn reads_the_aws_variables() {
        let c = S3Config::from_vars(
            "locks",
            vars(&[
                ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000"),
                ("AWS_DEFAULT_REGION", "eu-west-1"),
                ("AWS_ACCESS_KEY_ID", "AKID"),
                ("AWS_SECRET_ACCESS_KEY", "s3cr3t-value"),
                ("AWS_SESSION_TOKEN", "t0ken-value"),
                ("S3LEASE_SEAL_KEY", "se4l-key-value"),
            ]),
        )
        .unwrap();
        assert_eq!(c.endpoint, "http://127.0.0.1:9000");
        assert_eq!(c.region, "eu-west-1");
        assert_eq!(c.addressing, Addressing::Path);
        assert_eq!(c.seal_key.as_deref(), Some("se4l-key-value"));
        assert_eq!(c.to_wit().seal_key.as_deref(), Some("se4l-key-value"));
        let debug = format!("{c:?}");
        assert!(
            !debug.contains("s3cr3t") && !debug.contains("t0ken") && !debug.contains("se4l"),
            "{debug}"
        );

        let aws = S3Config::from_vars(
            "b",
            vars(&[("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "s")]),
        )
        .unwrap();
        assert_eq!(aws.endpoint, "https://s3.us-east-1.amazonaws.com");
        assert_eq!(aws.addressing, Addressing::VirtualHosted);
        assert_eq!(aws.seal_key, None);
    }

    #[test]
    fn a_dynamodb_store_takes_its_table_and_its_endpoint() {
        let keys = [("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "s")];
        let with = |extra: &[(&str, &str)]| {
            let mut all = keys.to_vec();
            all.extend_from_slice(extra);
            S3Config::from_vars("", vars(&all))
        };
        let c = with(&[("S3LEASE_STORE", "dynamodb"), ("S3LEASE_TABLE", "locks")]).unwrap();
        assert_eq!(c.endpoint, "https://dynamodb.us-east-1.amazonaws.com");
        assert_eq!(c.to_wit().store, Some(Store::Dynamodb("locks".into())));
        let c = with(&[
            ("S3LEASE_STORE", "dynamodb"),
            ("S3LEASE_TABLE", "locks"),
            ("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1"),
            ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:2"),
        ])
        .unwrap();
        assert_eq!(c.endpoint, "http://127.0.0.1:2");
        let err = with(&[("S3LEASE_STORE", "dynamodb")]).unwrap_err();
        assert!(err.to_string().contains("S3LEASE_TABLE"), "{err}");
        let err = with(&[("S3LEASE_STORE", "redis")]).unwrap_err();
        assert!(err.to_string().contains("S3LEASE_STORE"), "{err}");
        let c = with(&[
            ("S3LEASE_STORE", "azure-blob"),
            ("S3LEASE_CONTAINER", "locks"),
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                "UseDevelopmentStorage=true",
            ),
        ])
        .unwrap();
        assert_eq!(
            (c.endpoint.as_str(), c.addressing),
            ("http://127.0.0.1:10000", Addressing::Path)
        );
        match c.to_wit().store {
            Some(Store::AzureBlob(b)) => {
                assert_eq!(
                    (b.account.as_str(), b.container.as_str()),
                    ("devstoreaccount1", "locks")
                )
            }
            other => panic!("{other:?}"),
        }
        let err = with(&[("S3LEASE_STORE", "azure-blob")]).unwrap_err();
        assert!(err.to_string().contains("S3LEASE_CONTAINER"), "{err}");
        assert_eq!(with(&[]).unwrap().to_wit().store, None);
    }

    #[test]
    fn builds_an_azure_container_and_shows_none_of_its_secrets() {
        for credential in [
            AzureCredential::AccountKey("s3cr3t-key".into()),
            AzureCredential::Sas("sv=1&sig=s3cr3t-sas".into()),
            AzureCredential::BearerToken("s3cr3t-token".into()),
        ] {
            let c =
                S3Config::azure_blob("acct", "locks", credential.clone()).with_key_prefix("locks/");
            assert_eq!(c.endpoint, "https://acct.blob.core.windows.net");
            assert_eq!(c.addressing, Addressing::VirtualHosted);
            let Some(Store::AzureBlob(b)) = c.to_wit().store else {
                panic!("not an Azure store")
            };
            assert_eq!(
                (b.account.as_str(), b.container.as_str()),
                ("acct", "locks")
            );
            assert_eq!(b.credential, convert::azure_credential(&credential));
            let text = format!("{c:?} {credential:?} {:?}", c.azure_blob);
            assert!(!text.contains("s3cr3t"), "{text}");
        }
        let local = S3Config::azure_blob("devstoreaccount1", "c", AzureCredential::Sas("x".into()))
            .with_endpoint("http://127.0.0.1:10000");
        assert_eq!(local.addressing, Addressing::Path);
    }

    /// Tokens handed out by a test: each fetch a new one.
    struct Counter(std::sync::atomic::AtomicU32);

    impl crate::credentials::TokenSource for Counter {
        fn fetch(&self) -> Result<crate::credentials::AzureToken, Error> {
            let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(crate::credentials::AzureToken::new(
                format!("s3cr3t-token-{n}"),
                None,
            ))
        }
    }

    #[test]
    fn a_token_source_gives_the_first_token_and_only_to_an_azure_store() {
        let source = SharedTokenSource::new(Counter(0.into()));
        let c = S3Config::azure_blob("acct", "c", AzureCredential::BearerToken(String::new()))
            .with_azure_token_source(source.clone())
            .unwrap();
        let blob = c.azure_blob.clone().unwrap();
        assert_eq!(
            blob.credential,
            AzureCredential::BearerToken("s3cr3t-token-0".into())
        );
        assert_eq!(blob.token_source, Some(source.clone()));
        let text = format!("{c:?} {source:?} {:?}", source.latest().unwrap());
        assert!(!text.contains("s3cr3t"), "{text}");
        let err = S3Config::new("b", "us-east-1", Credentials::new("a", "s"))
            .with_azure_token_source(source)
            .unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidConfig);
    }

    #[test]
    fn a_missing_credential_names_its_variable() {
        let err = S3Config::from_vars("b", vars(&[("AWS_ACCESS_KEY_ID", "a")])).unwrap_err();
        assert!(err.to_string().contains("AWS_SECRET_ACCESS_KEY"), "{err}");
    }
}

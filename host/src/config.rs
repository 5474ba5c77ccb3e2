//! The client configuration, from code or from the usual AWS variables.

use crate::bindings::{
    AddressingStyle, AzureBlob, Config, Credentials, ExpiryClock, Store, Strategy,
};
use crate::credentials::azure::{self, AzureAuth, AzureStore};
use crate::credentials::{AwsChain, SharedSource};
use crate::Error;
use std::fmt;

/// Where the locks live and how to reach them. `Debug` never shows the
/// secret key, the session token or the seal key.
#[derive(Clone, PartialEq, Eq)]
pub struct S3Config {
    /// `https://s3.<region>.amazonaws.com`, or any S3-compatible endpoint.
    pub endpoint: String,
    pub region: String,
    pub bucket: String,
    pub addressing: AddressingStyle,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    pub key_prefix: Option<String>,
    pub request_timeout_ms: Option<u32>,
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
    /// account's, and the AWS fields unused. Set by
    /// [`S3Config::from_azure_vars`]. Default: none.
    pub azure: Option<AzureStore>,
    /// Where a client takes its credentials from and refreshes them
    /// (`access_key_id`, `secret_access_key` and `session_token` are then
    /// only the first ones fetched). Set by
    /// [`S3Config::from_env`]; `None`: the fields above, fixed.
    pub credentials_source: Option<SharedSource>,
}

impl S3Config {
    /// From the environment and the AWS configuration files, as the AWS
    /// SDKs read them: credentials and region from the AWS chain
    /// ([`AwsChain`]: environment, profile files, web identity, container
    /// credentials, instance metadata), refreshed on a live client; the
    /// rest as [`S3Config::from_vars`] reads it. Credentials are fetched
    /// once here; with none anywhere, an `invalid-config` error lists where
    /// it looked.
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
    /// the region). Tests pass a map.
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
        let credentials = Credentials {
            access_key_id: required("AWS_ACCESS_KEY_ID")?,
            secret_access_key: required("AWS_SECRET_ACCESS_KEY")?,
            session_token: var("AWS_SESSION_TOKEN"),
        };
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
        let store = azure::from_vars(container, &var)?;
        let credentials_source = match &store.credential {
            AzureAuth::ManagedIdentity(identity) => {
                let source = SharedSource::new(identity.clone());
                source.fetch()?;
                Some(source)
            }
            AzureAuth::SharedKey(_) | AzureAuth::Sas(_) => None,
        };
        Ok(S3Config {
            endpoint: store.endpoint.clone(),
            // Azure takes no region and no AWS keys: the component ignores these.
            region: "azure".into(),
            bucket: String::new(),
            addressing: if store.path_style {
                AddressingStyle::Path
            } else {
                AddressingStyle::VirtualHosted
            },
            access_key_id: String::new(),
            secret_access_key: String::new(),
            session_token: None,
            key_prefix: None,
            request_timeout_ms: None,
            strategy: None,
            expiry_clock: None,
            preflight: None,
            seal_key: var("S3LEASE_SEAL_KEY"),
            dynamodb_table: None,
            azure: Some(store),
            credentials_source,
        })
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
            Some("path") => AddressingStyle::Path,
            Some("virtual-hosted") => AddressingStyle::VirtualHosted,
            Some(other) => {
                return Err(Error::invalid_config(
                    "S3LEASE_ADDRESSING",
                    format!("{other:?} is neither `path` nor `virtual-hosted`"),
                ))
            }
            None if custom_endpoint.is_some() => AddressingStyle::Path,
            None => AddressingStyle::VirtualHosted,
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
            request_timeout_ms: None,
            strategy: None,
            expiry_clock: None,
            preflight: None,
            seal_key: var("S3LEASE_SEAL_KEY"),
            dynamodb_table: table,
            azure: None,
            credentials_source: None,
        })
    }

    /// The WIT record the component takes.
    pub fn to_wit(&self) -> Config {
        Config {
            endpoint: self.endpoint.clone(),
            region: self.region.clone(),
            bucket: self.bucket.clone(),
            addressing: self.addressing,
            credentials: Credentials {
                access_key_id: self.access_key_id.clone(),
                secret_access_key: self.secret_access_key.clone(),
                session_token: self.session_token.clone(),
            },
            key_prefix: self.key_prefix.clone(),
            request_timeout_ms: self.request_timeout_ms,
            strategy: self.strategy,
            expiry_clock: self.expiry_clock,
            preflight: self.preflight,
            seal_key: self.seal_key.clone(),
            store: match &self.azure {
                Some(azure) => Some(Store::AzureBlob(AzureBlob {
                    account: azure.account.clone(),
                    container: azure.container.clone(),
                    credential: azure.wit_credential(None),
                })),
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

/// `S3LEASE_STORE` (`s3`, the default, or `dynamodb`) and `S3LEASE_TABLE`.
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
            .field("request_timeout_ms", &self.request_timeout_ms)
            .field("strategy", &self.strategy)
            .field("expiry_clock", &self.expiry_clock)
            .field("preflight", &self.preflight)
            .field("seal_key", &self.seal_key.as_ref().map(|_| "<redacted>"))
            .field("dynamodb_table", &self.dynamodb_table)
            .field("azure", &self.azure)
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
        assert_eq!(c.addressing, AddressingStyle::Path);
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
        assert_eq!(aws.addressing, AddressingStyle::VirtualHosted);
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
            ("http://127.0.0.1:10000", AddressingStyle::Path)
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
    fn a_missing_credential_names_its_variable() {
        let err = S3Config::from_vars("b", vars(&[("AWS_ACCESS_KEY_ID", "a")])).unwrap_err();
        assert!(err.to_string().contains("AWS_SECRET_ACCESS_KEY"), "{err}");
    }
}

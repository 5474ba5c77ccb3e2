//! A [`StoreConfig`] from the environment: the store `S3LEASE_STORE` names
//! (`s3`, the default, `dynamodb`, `azure-blob` or `gcs`), reached as the
//! AWS (Azure, Google) SDKs read their variables and files.

use super::{
    AzureBlobBuilder, AzureCredential, DynamoDbBuilder, GcsBuilder, GcsCredential, S3Builder,
    StoreConfig,
};
use crate::credentials::azure::{self, AccountAuth};
use crate::credentials::{AwsChain, GoogleCredentials, SharedSource, SharedTokenSource};
use crate::error::Error;
use crate::types::{Addressing, Credentials};

impl StoreConfig {
    /// From the environment and the AWS configuration files, as the AWS
    /// SDKs read them: credentials and region from the AWS chain
    /// ([`AwsChain`]: environment, profile files, web identity, container
    /// credentials, instance metadata), refreshed on a live client; the
    /// rest as [`StoreConfig::from_vars`] reads it. Credentials are fetched
    /// once here; with none anywhere, an `invalid-config` error lists where
    /// it looked. `S3LEASE_STORE=azure-blob`: an Azure container instead, as
    /// [`StoreConfig::from_azure_vars`] reads it; `S3LEASE_STORE=gcs`: a
    /// Google Cloud Storage bucket, as [`StoreConfig::from_gcs_vars`] reads it.
    pub fn from_env(bucket: &str) -> Result<Self, Error> {
        Self::from_aws(bucket, |name| {
            std::env::var(name).ok().filter(|v| !v.is_empty())
        })
    }

    /// [`StoreConfig::from_env`] with the settings other than credentials
    /// from `var` (the command line passes its flags through it). The
    /// region is `var`'s `AWS_REGION` or `AWS_DEFAULT_REGION`, else the
    /// profile's, else (on AWS's own endpoint) instance metadata's, else
    /// `us-east-1`.
    pub fn from_aws(bucket: &str, var: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        if on_azure(&var) {
            return Self::from_azure_vars(&azure_container(bucket, &var)?, var);
        }
        if on_gcs(&var) {
            return Self::from_gcs_vars(bucket, var);
        }
        let given_region = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION"));
        let on_aws = custom_endpoint(&var).is_none();
        let chain = AwsChain::load(given_region, on_aws)?;
        let region = chain.region().unwrap_or_else(|| "us-east-1".to_string());
        let source = SharedSource::new(chain);
        let first = source.fetch()?;
        aws_store(bucket, &var, region, first.credentials, Some(source))
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
    /// the region). `S3LEASE_STORE=azure-blob`:
    /// [`StoreConfig::from_azure_vars`]; `S3LEASE_STORE=gcs`:
    /// [`StoreConfig::from_gcs_vars`]. Tests pass a map.
    pub fn from_vars(bucket: &str, var: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        if on_azure(&var) {
            return Self::from_azure_vars(&azure_container(bucket, &var)?, var);
        }
        if on_gcs(&var) {
            return Self::from_gcs_vars(bucket, var);
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
        aws_store(bucket, &var, region, credentials, None)
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
        let mut builder = AzureBlobBuilder::new(account.account, container, credential);
        builder.endpoint = account.endpoint;
        builder.path_style = account.path_style;
        if let Some(identity) = identity {
            builder = builder.token_source(SharedTokenSource::new(identity))?;
        }
        let mut config = builder.build();
        config.seal_key = var("S3LEASE_SEAL_KEY");
        Ok(config)
    }
}

impl StoreConfig {
    /// A Google Cloud Storage bucket's config (`bucket`, else
    /// `S3LEASE_BUCKET`), reached as Google's client libraries reach it:
    ///
    /// - `STORAGE_EMULATOR_HOST` (`host:port` or a URL): that emulator,
    ///   with no credential (the libraries send none to an emulator);
    /// - else `S3LEASE_ENDPOINT`: that endpoint; an `http://` one (an
    ///   emulator) with no credential, since a bearer token never travels
    ///   unencrypted; an `https://` one with the tokens below;
    /// - else GCS itself (`https://storage.googleapis.com`) with
    ///   Application Default Credentials ([`GoogleCredentials`]: the key or
    ///   user credentials file `GOOGLE_APPLICATION_CREDENTIALS` names, else
    ///   gcloud's ADC file, else the metadata server), the first token
    ///   fetched here, the next ones by a live client before each expires.
    ///
    /// `S3LEASE_SEAL_KEY` as for S3. With no credentials anywhere, an
    /// `invalid-config` error says where it looked.
    pub fn from_gcs_vars(
        bucket: &str,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let bucket = match bucket {
            "" => var("S3LEASE_BUCKET").ok_or_else(|| {
                Error::invalid_config(
                    "S3LEASE_BUCKET",
                    "is not set: a gcs store needs its bucket (--bucket)",
                )
            })?,
            given => given.to_string(),
        };
        let (endpoint, anonymous) = gcs_endpoint(&var)?;
        let mut builder = GcsBuilder::new(bucket, GcsCredential::Anonymous);
        if let Some(endpoint) = endpoint {
            builder = builder.endpoint(endpoint);
        }
        if !anonymous {
            let adc = GoogleCredentials::from_vars(&var)?;
            builder = builder.token_source(SharedTokenSource::new(adc))?;
        }
        let mut config = builder.build();
        config.seal_key = var("S3LEASE_SEAL_KEY");
        Ok(config)
    }
}

/// A GCS store's endpoint, if not GCS's own, and whether it takes no
/// credential (an emulator's).
fn gcs_endpoint(var: &impl Fn(&str) -> Option<String>) -> Result<(Option<String>, bool), Error> {
    if let Some(url) = var("S3LEASE_ENDPOINT") {
        return match url
            .split_once("://")
            .map(|(scheme, _)| scheme.to_ascii_lowercase())
        {
            Some(scheme) if scheme == "http" => Ok((Some(url), true)),
            Some(scheme) if scheme == "https" => Ok((Some(url), false)),
            _ => Err(Error::invalid_config(
                "S3LEASE_ENDPOINT",
                "is not an http:// or https:// URL",
            )),
        };
    }
    if let Some(host) = var("STORAGE_EMULATOR_HOST") {
        // Google's libraries take `host:port` as well as a URL.
        let url = match host.contains("://") {
            true => host,
            false => format!("http://{host}"),
        };
        return Ok((Some(url.trim_end_matches('/').to_string()), true));
    }
    Ok((None, false))
}

/// An S3 bucket's config, or a DynamoDB table's when `S3LEASE_STORE` says
/// so, with `credentials` (refreshed from `source`, if any).
fn aws_store(
    bucket: &str,
    var: &impl Fn(&str) -> Option<String>,
    region: String,
    credentials: Credentials,
    source: Option<SharedSource>,
) -> Result<StoreConfig, Error> {
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
    let mut config = match table {
        Some(table) => {
            let mut dynamodb = DynamoDbBuilder::new(table, region, credentials);
            dynamodb.aws.source = source;
            if let Some(url) = custom_endpoint {
                dynamodb = dynamodb.endpoint(url);
            }
            dynamodb.build()
        }
        None => {
            let mut s3 = S3Builder::new(bucket, region, credentials);
            s3.aws.source = source;
            if let Some(url) = custom_endpoint {
                s3 = s3.endpoint(url);
            }
            s3.addressing(addressing).build()
        }
    };
    config.seal_key = var("S3LEASE_SEAL_KEY");
    Ok(config)
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

fn on_gcs(var: &impl Fn(&str) -> Option<String>) -> bool {
    var("S3LEASE_STORE").is_some_and(|s| s.eq_ignore_ascii_case("gcs"))
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

/// `S3LEASE_STORE` (`s3`, the default, `dynamodb`, `azure-blob` or `gcs`) and
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
            format!("{other:?} is none of `s3`, `dynamodb`, `azure-blob` and `gcs`"),
        )),
    }
}

//! A [`StoreConfig`] from the environment: the store `S3LEASE_STORE` names
//! (`s3`, the default, `dynamodb`, `azure-blob` or `gcs`), reached as the
//! AWS (Azure, Google) SDKs read their variables and files; and
//! [`StoreConfig::from_settings`], the command line's `S3LEASE_*`
//! settings read once for every front end (the command line, the Python
//! and Node packages).

use super::{
    AzureBlobBuilder, AzureCredential, DynamoDbBuilder, GcsBuilder, GcsCredential, S3Builder,
    StoreConfig,
};
use crate::credentials::azure::{self, AccountAuth};
use crate::credentials::{AwsChain, GoogleCredentials, SharedSource, SharedTokenSource};
use crate::error::Error;
use crate::types::{Addressing, Credentials, ExpiryClock, Strategy};

/// Where [`StoreConfig::from_settings`] takes an S3 or DynamoDB store's
/// keys from (an Azure or GCS store reads its own credentials).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AwsKeys {
    /// The AWS chain ([`AwsChain`]), as the AWS SDKs and the command line
    /// find them, refreshed on a live client.
    Chain,
    /// Fixed keys: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
    /// `AWS_SESSION_TOKEN` as the settings give them.
    Given,
    /// A program's own source (a boto3 session, an AWS SDK provider): the
    /// first keys fetched here, the next ones by a live client.
    Source(SharedSource),
}

impl StoreConfig {
    /// The store the command line's settings name, each read through
    /// `setting` by its variable's name (a caller answers with its flag or
    /// argument, else the environment as it chooses to read it):
    ///
    /// - `S3LEASE_BUCKET`, `S3LEASE_STORE`, `S3LEASE_TABLE`,
    ///   `S3LEASE_CONTAINER`, `S3LEASE_ADDRESSING`, `S3LEASE_SEAL_KEY`, and
    ///   the AWS, Azure and Google variables, as [`StoreConfig::from_aws`]
    ///   reads them; `S3LEASE_ENDPOINT` and `S3LEASE_REGION` win over the
    ///   AWS SDKs' endpoint variables and `AWS_REGION` (so a command run
    ///   under the lock can be told where the locks are without moving its
    ///   own AWS calls);
    /// - the client's own: `S3LEASE_PREFIX`, `S3LEASE_STRATEGY`
    ///   (`single-object`, `epoch-objects`), `S3LEASE_EXPIRY_CLOCK`
    ///   (`server`, `holder`, `observed`), and `S3LEASE_CHECK_STORE` and
    ///   `S3LEASE_AUDIT` (the grant log) as yes or no (`1`, `true`, `yes`,
    ///   `on`, `y`, `t`, or `0`, `false`, `no`, `off`, `n`, `f`; any case).
    ///
    /// An S3 or DynamoDB store's keys come from `keys`. A value none of
    /// these take is an `invalid-config` error naming its variable.
    pub fn from_settings(
        setting: impl Fn(&str) -> Option<String>,
        keys: AwsKeys,
    ) -> Result<Self, Error> {
        let var = |name: &str| s3lease_first(name, &setting);
        let bucket = var("S3LEASE_BUCKET").unwrap_or_default();
        let mut config = match keys {
            AwsKeys::Chain => Self::from_aws(&bucket, var)?,
            AwsKeys::Given => Self::from_vars(&bucket, var)?,
            AwsKeys::Source(_) if on_azure(&var) || on_gcs(&var) => {
                return Err(Error::invalid_config(
                    "credentials",
                    "a credentials source gives AWS keys; an Azure or GCS store reads its own",
                ))
            }
            AwsKeys::Source(source) => {
                let first = source.fetch()?.credentials;
                Self::from_vars(&bucket, |name| match name {
                    "AWS_ACCESS_KEY_ID" => Some(first.access_key_id.clone()),
                    "AWS_SECRET_ACCESS_KEY" => Some(first.secret_access_key.clone()),
                    "AWS_SESSION_TOKEN" => first.session_token.clone(),
                    _ => var(name),
                })?
                .with_credentials_source(source)?
            }
        };
        config.key_prefix = var("S3LEASE_PREFIX");
        config.strategy = named(
            &var,
            "S3LEASE_STRATEGY",
            &[Strategy::SingleObject, Strategy::EpochObjects],
            |s| s.name(),
        )?;
        config.expiry_clock = named(
            &var,
            "S3LEASE_EXPIRY_CLOCK",
            &[
                ExpiryClock::Server,
                ExpiryClock::Holder,
                ExpiryClock::Observed,
            ],
            |c| c.name(),
        )?;
        config.preflight = yes_or_no_var(&var, "S3LEASE_CHECK_STORE")?;
        config.audit = yes_or_no_var(&var, "S3LEASE_AUDIT")?;
        Ok(config)
    }
}

/// The variable `name` as a yes or a no, if set (see `yes_or_no`).
fn yes_or_no_var(var: &impl Fn(&str) -> Option<String>, name: &str) -> Result<Option<bool>, Error> {
    var(name)
        .map(|v| {
            yes_or_no(&v).ok_or_else(|| {
                Error::invalid_config(
                    name,
                    format!("{v:?} is neither yes (1, true, yes, on) nor no (0, false, no, off)"),
                )
            })
        })
        .transpose()
}

/// The variable `name` as the host's readers should see it: the command
/// line's `S3LEASE_ENDPOINT` before the AWS SDKs' endpoint variables, its
/// `S3LEASE_REGION` before `AWS_REGION`, the rest as `setting` has them
/// (empty is unset).
fn s3lease_first(name: &str, setting: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let given = |name: &str| setting(name).filter(|v| !v.is_empty());
    match name {
        "AWS_ENDPOINT_URL" | "AWS_ENDPOINT_URL_S3" | "AWS_ENDPOINT_URL_DYNAMODB" => {
            given("S3LEASE_ENDPOINT").or_else(|| given(name))
        }
        "AWS_REGION" => given("S3LEASE_REGION").or_else(|| given(name)),
        _ => given(name),
    }
}

/// The case of `cases` whose contract name the variable `name` holds, if
/// set.
fn named<T: Copy>(
    var: &impl Fn(&str) -> Option<String>,
    name: &str,
    cases: &[T],
    case_name: impl Fn(T) -> &'static str,
) -> Result<Option<T>, Error> {
    let Some(value) = var(name) else {
        return Ok(None);
    };
    match cases.iter().find(|c| case_name(**c) == value) {
        Some(case) => Ok(Some(*case)),
        None => {
            let names: Vec<&str> = cases.iter().map(|c| case_name(*c)).collect();
            Err(Error::invalid_config(
                name,
                format!("{value:?} is none of {}", names.join(", ")),
            ))
        }
    }
}

/// A yes or a no as the command line's flags read one from the
/// environment (clap's literals), any case.
fn yes_or_no(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "y" | "t" => Some(true),
        "0" | "false" | "no" | "off" | "n" | "f" => Some(false),
        _ => None,
    }
}

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

#[cfg(test)]
mod settings_tests {
    use super::*;
    use crate::credentials::{CredentialsSource, FetchedCredentials};
    use crate::error::ErrorKind;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn settings(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    const KEYS: [(&str, &str); 2] = [
        ("AWS_ACCESS_KEY_ID", "AKID"),
        ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
    ];

    fn given(pairs: &[(&str, &str)]) -> Result<StoreConfig, Error> {
        let all: Vec<(&str, &str)> = pairs.iter().chain(KEYS.iter()).copied().collect();
        StoreConfig::from_settings(settings(&all), AwsKeys::Given)
    }

    #[test]
    fn the_command_lines_endpoint_and_region_win_over_the_aws_sdks() {
        let aws_only = [
            ("S3LEASE_BUCKET", "locks"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:1"),
            ("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:2"),
            ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:3"),
            ("AWS_REGION", "us-west-2"),
        ];
        let c = given(&aws_only).unwrap();
        assert_eq!(
            (c.bucket(), c.endpoint(), c.region()),
            (Some("locks"), "http://127.0.0.1:2", Some("us-west-2"))
        );
        let mut ours = aws_only.to_vec();
        ours.extend([
            ("S3LEASE_ENDPOINT", "http://127.0.0.1:9"),
            ("S3LEASE_REGION", "eu-west-1"),
        ]);
        let c = given(&ours).unwrap();
        assert_eq!(
            (c.endpoint(), c.region()),
            ("http://127.0.0.1:9", Some("eu-west-1"))
        );
        ours.extend([("S3LEASE_STORE", "dynamodb"), ("S3LEASE_TABLE", "t")]);
        let t = given(&ours).unwrap();
        assert_eq!(
            (t.table(), t.endpoint(), t.region()),
            (Some("t"), "http://127.0.0.1:9", Some("eu-west-1"))
        );
        // Empty is unset, as the command line reads its variables.
        let c = given(&[("S3LEASE_BUCKET", "locks"), ("S3LEASE_ENDPOINT", "")]).unwrap();
        assert_eq!(c.endpoint(), "https://s3.us-east-1.amazonaws.com");
    }

    #[test]
    fn the_clients_own_settings_are_read_by_their_contract_names() {
        let c = given(&[
            ("S3LEASE_BUCKET", "locks"),
            ("S3LEASE_PREFIX", "jobs/"),
            ("S3LEASE_STRATEGY", "epoch-objects"),
            ("S3LEASE_EXPIRY_CLOCK", "holder"),
            ("S3LEASE_CHECK_STORE", "Yes"),
            ("S3LEASE_AUDIT", "1"),
        ])
        .unwrap();
        assert_eq!(c.audit, Some(true));
        assert_eq!(c.key_prefix.as_deref(), Some("jobs/"));
        assert_eq!(c.strategy, Some(Strategy::EpochObjects));
        assert_eq!(c.expiry_clock, Some(ExpiryClock::Holder));
        assert_eq!(c.preflight, Some(true));
        for (no, prefix) in [("off", ""), ("0", "")] {
            let c = given(&[
                ("S3LEASE_BUCKET", "locks"),
                ("S3LEASE_CHECK_STORE", no),
                ("S3LEASE_PREFIX", prefix),
            ])
            .unwrap();
            assert_eq!((c.preflight, c.key_prefix), (Some(false), None));
        }
        let plain = given(&[("S3LEASE_BUCKET", "locks")]).unwrap();
        assert_eq!(
            (
                plain.strategy,
                plain.expiry_clock,
                plain.preflight,
                plain.audit
            ),
            (None, None, None, None)
        );
    }

    #[test]
    fn a_value_none_takes_is_refused_naming_its_variable() {
        for (name, value) in [
            ("S3LEASE_STRATEGY", "fastest"),
            ("S3LEASE_EXPIRY_CLOCK", "sundial"),
            ("S3LEASE_CHECK_STORE", "maybe"),
            ("S3LEASE_AUDIT", "sometimes"),
            ("S3LEASE_STORE", "floppy"),
        ] {
            let e = given(&[("S3LEASE_BUCKET", "locks"), (name, value)]).unwrap_err();
            assert_eq!(
                (e.kind(), e.field()),
                (ErrorKind::InvalidConfig, Some(name)),
                "{e}"
            );
            assert!(e.to_string().contains(value), "{e}");
        }
        // Given keys are the settings' own, not the environment's.
        let e = StoreConfig::from_settings(settings(&[("S3LEASE_BUCKET", "b")]), AwsKeys::Given)
            .unwrap_err();
        assert_eq!(e.field(), Some("AWS_ACCESS_KEY_ID"), "{e}");
    }

    /// Fixed keys, counting how often they are asked for.
    struct Counted(Arc<AtomicUsize>);

    impl CredentialsSource for Counted {
        fn fetch(&self) -> Result<FetchedCredentials, Error> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(FetchedCredentials::new(
                Credentials::new("AKIDSOURCE", "from-source"),
                None,
                "the test's",
            ))
        }
    }

    #[test]
    fn a_source_gives_the_first_keys_on_aws_stores_and_is_refused_unasked_on_the_others() {
        let fetches = Arc::new(AtomicUsize::new(0));
        let source = SharedSource::new(Counted(fetches.clone()));
        let bucket = settings(&[
            ("S3LEASE_BUCKET", "locks"),
            ("S3LEASE_ENDPOINT", "http://127.0.0.1:9"),
        ]);
        let c = StoreConfig::from_settings(&bucket, AwsKeys::Source(source.clone())).unwrap();
        assert_eq!(c.credentials_source(), Some(&source));
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        for store in [
            &[
                ("S3LEASE_STORE", "gcs"),
                ("S3LEASE_BUCKET", "b"),
                ("S3LEASE_ENDPOINT", "http://127.0.0.1:9"),
            ][..],
            &[
                ("S3LEASE_STORE", "azure-blob"),
                ("S3LEASE_CONTAINER", "c"),
                ("AZURE_STORAGE_ACCOUNT", "acct"),
                ("AZURE_STORAGE_SAS_TOKEN", "sv=1"),
            ][..],
        ] {
            let e = StoreConfig::from_settings(settings(store), AwsKeys::Source(source.clone()))
                .unwrap_err();
            assert_eq!(e.field(), Some("credentials"), "{e}");
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1, "asked for nothing");
    }
}

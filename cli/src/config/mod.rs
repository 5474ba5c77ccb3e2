//! The store's configuration from the flags and the environment, and
//! what a nested `s3-lease` in `run` and `elect`'s command is told of it.

use crate::args::{Cli, ExpiryClockArg, StoreArg, StrategyArg};
use crate::duration;
use crate::exit::{self, Failure};
use s3_lease_host::{AwsKeys, ExpiryClock, StoreConfig, Strategy};
use std::time::Duration;

/// Where the credentials came from, for `run` and `elect`'s first line:
/// the AWS chain's source, or where an Azure or GCS store's tokens come from.
pub(crate) fn credentials_line(config: &StoreConfig) -> Option<String> {
    let (source, expires) = match config.credentials_source() {
        Some(aws) => aws.last_source()?,
        None => config.token_source()?.last_source()?,
    };
    Some(match expires {
        Some(at) => {
            let left = at
                .duration_since(std::time::SystemTime::now())
                .unwrap_or_default();
            format!(
                "credentials from {source}, temporary (expire in {}); refreshed before they do",
                duration::show(Duration::from_secs(left.as_secs()))
            )
        }
        None => format!("credentials from {source}"),
    })
}

/// The store the flags and the environment name, with its credentials.
pub(crate) fn store_config(cli: &Cli) -> Result<StoreConfig, Failure> {
    let on_dynamodb = cli.store == Some(StoreArg::Dynamodb);
    let on_azure = cli.store == Some(StoreArg::AzureBlob);
    let on_gcs = cli.store == Some(StoreArg::Gcs);
    if on_gcs && cli.bucket.is_none() {
        return Err(Failure::new(
            exit::CONFIG,
            "no bucket: --store gcs needs --bucket NAME (or S3LEASE_BUCKET)",
        ));
    }
    if on_azure && cli.container.is_none() {
        return Err(Failure::new(
            exit::CONFIG,
            "no container: --store azure-blob needs --container NAME (or S3LEASE_CONTAINER)",
        ));
    }
    if cli.bucket.is_none() && !(on_dynamodb || on_azure) {
        return Err(Failure::new(
            exit::CONFIG,
            "no bucket: pass --bucket or set S3LEASE_BUCKET (or --store dynamodb --table NAME)",
        ));
    }
    if on_dynamodb && cli.table.is_none() {
        return Err(Failure::new(
            exit::CONFIG,
            "no table: --store dynamodb needs --table NAME (or S3LEASE_TABLE)",
        ));
    }
    check_endpoints(cli)?;
    // The host reads the settings as the Python and Node packages have
    // them read (S3LEASE_ENDPOINT and S3LEASE_REGION over the AWS
    // variables); credentials and region from the AWS chain (as the AWS
    // CLI finds them; GCS: Google's Application Default Credentials),
    // refreshed while we run. What clap read (a flag, else its variable)
    // is the setting; --endpoint and --region win over their variables;
    // the rest is the environment's.
    let setting = |name: &str| match name {
        "S3LEASE_BUCKET" => cli.bucket.clone(),
        "S3LEASE_STORE" => cli.store.map(|s| {
            match s {
                StoreArg::S3 => "s3",
                StoreArg::Dynamodb => "dynamodb",
                StoreArg::AzureBlob => "azure-blob",
                StoreArg::Gcs => "gcs",
            }
            .to_string()
        }),
        "S3LEASE_TABLE" => cli.table.clone(),
        "S3LEASE_CONTAINER" => cli.container.clone(),
        "S3LEASE_PREFIX" => cli.prefix.clone(),
        "S3LEASE_STRATEGY" => cli.strategy.map(|s| {
            match s {
                StrategyArg::SingleObject => Strategy::SingleObject,
                StrategyArg::EpochObjects => Strategy::EpochObjects,
            }
            .name()
            .to_string()
        }),
        "S3LEASE_EXPIRY_CLOCK" => cli.expiry_clock.map(|c| {
            match c {
                ExpiryClockArg::Server => ExpiryClock::Server,
                ExpiryClockArg::Holder => ExpiryClock::Holder,
                ExpiryClockArg::Observed => ExpiryClock::Observed,
            }
            .name()
            .to_string()
        }),
        "S3LEASE_CHECK_STORE" => cli.check_store.then(|| "1".to_string()),
        ENDPOINT_VAR => cli.endpoint.clone().or_else(|| env_var(name)),
        REGION_VAR => cli.region.clone().or_else(|| env_var(name)),
        _ => env_var(name),
    };
    let mut config = StoreConfig::from_settings(setting, AwsKeys::Chain)?;
    config.audit = cli.audit.then_some(true);
    Ok(config)
}

/// Where `run` and `elect` tell a nested s3-lease the store is (and
/// where a user can, without touching what other AWS tools read).
const ENDPOINT_VAR: &str = "S3LEASE_ENDPOINT";
const REGION_VAR: &str = "S3LEASE_REGION";

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The endpoint given, and where: `--endpoint`, else `S3LEASE_ENDPOINT`,
/// else the AWS variables as the AWS SDKs read them (the store's own
/// service variable, then `AWS_ENDPOINT_URL`). `None`: the store's own
/// endpoint in the region. A gcs store reads no AWS variable (the AWS
/// tools' endpoint is not Google's); its emulator's
/// `STORAGE_EMULATOR_HOST` is read by the host, and a nested s3-lease
/// inherits it.
pub(crate) fn endpoint_in_use(cli: &Cli) -> Option<(&'static str, String)> {
    let names: &[&'static str] = match cli.store {
        Some(StoreArg::Gcs) => &[ENDPOINT_VAR],
        Some(StoreArg::Dynamodb) => &[
            ENDPOINT_VAR,
            "AWS_ENDPOINT_URL_DYNAMODB",
            "AWS_ENDPOINT_URL",
        ],
        _ => &[ENDPOINT_VAR, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"],
    };
    match &cli.endpoint {
        Some(endpoint) => Some(("--endpoint", endpoint.clone())),
        None => names
            .iter()
            .find_map(|&name| env_var(name).map(|v| (name, v))),
    }
}

/// An endpoint with a user name or password in it is refused without
/// echoing it (the password would land in logs and cron mail), naming
/// where it came from.
fn check_endpoints(cli: &Cli) -> Result<(), Failure> {
    if let Some((source, endpoint)) = endpoint_in_use(cli) {
        let rest = endpoint
            .split_once("://")
            .map_or(endpoint.as_str(), |(_, rest)| rest);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.contains('@') {
            let code = if source == "--endpoint" {
                exit::USAGE
            } else {
                exit::CONFIG
            };
            let keys = match cli.store {
                Some(StoreArg::Gcs) => {
                    "the credentials as GOOGLE_APPLICATION_CREDENTIALS (or gcloud's)"
                }
                _ => "the keys as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a profile)",
            };
            return Err(Failure::new(
                code,
                format!(
                    "{source} carries a user name or password (before an `@`); not shown here. \
                     Give the endpoint as scheme://host[:port], and {keys}"
                ),
            ));
        }
    }
    Ok(())
}

/// What a nested `s3-lease` in the command needs to find the same locks:
/// in `S3LEASE_*` variables only. The command's AWS variables stay as
/// they were: the AWS SDKs and CLI read `AWS_ENDPOINT_URL` for every
/// service, so setting it to the lock store would send a job's own AWS
/// calls there. `endpoint`: the one given, if any (else the store's own,
/// which a nested call finds as we did).
pub(crate) fn child_env(config: &StoreConfig, endpoint: Option<String>) -> Vec<(String, String)> {
    let bucket = config.bucket().unwrap_or_default().to_string();
    let mut env = vec![("S3LEASE_BUCKET".to_string(), bucket)];
    if let Some(region) = config.region() {
        if let Some(endpoint) = &endpoint {
            env.push((ENDPOINT_VAR.into(), endpoint.clone()));
        }
        env.push((REGION_VAR.into(), region.to_string()));
    }
    if let Some(prefix) = &config.key_prefix {
        env.push(("S3LEASE_PREFIX".into(), prefix.clone()));
    }
    if config.store_kind() != "s3" {
        env.push(("S3LEASE_STORE".into(), config.store_kind().into()));
    }
    // GCS: the endpoint, if given; an emulator's STORAGE_EMULATOR_HOST and
    // the credentials' variables are inherited.
    if config.store_kind() == "gcs" {
        if let Some(endpoint) = &endpoint {
            env.push((ENDPOINT_VAR.into(), endpoint.clone()));
        }
    }
    if let Some(table) = config.table() {
        env.push(("S3LEASE_TABLE".into(), table.to_string()));
    }
    // The account's credentials are the environment's, inherited.
    if let Some(container) = config.container() {
        env.push(("S3LEASE_CONTAINER".into(), container.to_string()));
    }
    // A lease's seal covers the strategy: a nested `fenced put` must use
    // the same one, and judge expiry the same way.
    if let Some(strategy) = config.strategy {
        env.push(("S3LEASE_STRATEGY".into(), strategy.name().into()));
    }
    if let Some(clock) = config.expiry_clock {
        env.push(("S3LEASE_EXPIRY_CLOCK".into(), clock.name().into()));
    }
    // A nested `release` records its release in the same grant log.
    if config.audit == Some(true) {
        env.push(("S3LEASE_AUDIT".into(), "1".into()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn cli(args: &[&str]) -> Cli {
        let mut all = vec!["s3-lease"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["status", "k"]);
        Cli::try_parse_from(all).expect("flags parse")
    }

    #[test]
    fn store_gcs_with_a_bucket_and_an_emulators_endpoint() {
        let cli = cli(&[
            "--store",
            "gcs",
            "--bucket",
            "locks",
            "--endpoint",
            "http://127.0.0.1:4443",
        ]);
        assert!(cli.store == Some(StoreArg::Gcs));
        assert_eq!(
            endpoint_in_use(&cli),
            Some(("--endpoint", "http://127.0.0.1:4443".to_string()))
        );
        // An http:// endpoint takes no credential: nothing is fetched.
        let config = store_config(&cli).unwrap_or_else(|f| panic!("{}", f.message));
        assert_eq!(
            (config.store_name(), config.endpoint(), config.bucket()),
            (
                "Google Cloud Storage",
                "http://127.0.0.1:4443",
                Some("locks")
            )
        );
        let env = child_env(&config, endpoint_in_use(&cli).map(|(_, e)| e));
        for pair in [
            ("S3LEASE_BUCKET", "locks"),
            ("S3LEASE_STORE", "gcs"),
            ("S3LEASE_ENDPOINT", "http://127.0.0.1:4443"),
        ] {
            assert!(
                env.iter().any(|(k, v)| (k.as_str(), v.as_str()) == pair),
                "{pair:?} not in {env:?}"
            );
        }
        assert!(!env.iter().any(|(k, _)| k == "S3LEASE_REGION"), "{env:?}");
    }

    #[test]
    fn store_gcs_needs_a_bucket() {
        if std::env::var_os("S3LEASE_BUCKET").is_some() {
            return;
        }
        let failure = store_config(&cli(&["--store", "gcs"])).unwrap_err();
        assert_eq!(failure.code, exit::CONFIG);
        assert!(
            failure.message.contains("--store gcs needs --bucket"),
            "{}",
            failure.message
        );
    }

    #[test]
    fn a_gcs_endpoint_with_a_password_is_refused_unshown() {
        let failure = store_config(&cli(&[
            "--store",
            "gcs",
            "--bucket",
            "b",
            "--endpoint",
            "http://user:hunter2@127.0.0.1:4443",
        ]))
        .unwrap_err();
        assert_eq!(failure.code, exit::USAGE);
        assert!(!failure.message.contains("hunter2"), "{}", failure.message);
        assert!(
            failure.message.contains("GOOGLE_APPLICATION_CREDENTIALS"),
            "{}",
            failure.message
        );
    }

    /// Tokens from a test, an hour long.
    struct HourTokens;

    impl s3_lease_host::credentials::TokenSource for HourTokens {
        fn fetch(&self) -> Result<s3_lease_host::credentials::AccessToken, s3_lease_host::Error> {
            let expires = std::time::SystemTime::now() + Duration::from_secs(3600);
            Ok(s3_lease_host::credentials::AccessToken::new(
                "ya29.s3cr3t",
                Some(expires),
            ))
        }

        fn describe(&self) -> String {
            "the test's tokens".into()
        }
    }

    #[test]
    fn the_credentials_line_names_where_a_gcs_stores_tokens_come_from() {
        use s3_lease_host::credentials::SharedTokenSource;
        use s3_lease_host::{GcsBuilder, GcsCredential};
        let fixed = GcsBuilder::new("b", GcsCredential::Anonymous).build();
        assert_eq!(credentials_line(&fixed), None);
        let config = GcsBuilder::new("b", GcsCredential::Anonymous)
            .token_source(SharedTokenSource::new(HourTokens))
            .unwrap()
            .build();
        let line = credentials_line(&config).unwrap();
        assert!(
            line.starts_with("credentials from the test's tokens, temporary (expire in 59m")
                && line.ends_with("refreshed before they do")
                && !line.contains("s3cr3t"),
            "{line}"
        );
    }

    #[test]
    fn the_store_flag_takes_gcs_and_the_help_says_how_gcs_is_reached() {
        use clap::CommandFactory;
        let mut command = Cli::command();
        let help = command.render_long_help().to_string();
        for part in [
            "objects in a Google Cloud Storage bucket (gcs",
            "STORAGE_EMULATOR_HOST",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "GCE_METADATA_HOST",
            "[possible values: s3, dynamodb, azure-blob, gcs]",
        ] {
            assert!(help.contains(part), "{part:?} not in the help:\n{help}");
        }
    }
}

//! The store's configuration from the flags and the environment, and
//! what a nested `s3-lease` in `run` and `elect`'s command is told of it.

mod azure_blob;
mod dynamodb;
mod gcs;
mod s3;

use crate::duration;
use crate::exit::{self, Failure};
use clap::{Args, ValueEnum};
use s3_lease_host::{AwsKeys, ExpiryClock, StoreConfig, Strategy};
use std::time::Duration;

/// Where the locks are kept, how the store is reached and how its locks
/// are taken: the flags every store shares, each store's own, and the
/// client's settings (what a `StoreConfig` is made of).
#[derive(Args)]
pub(crate) struct StoreFlags {
    /// The bucket that holds the locks (on a store that keeps them in one).
    #[arg(long, env = "S3LEASE_BUCKET", global = true)]
    pub(crate) bucket: Option<String>,
    /// Where the locks are kept: objects in the bucket (s3, the default),
    /// items in a DynamoDB table (dynamodb, with --table), blobs in an
    /// Azure Blob Storage container (azure-blob, with --container; the
    /// account from AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT
    /// with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, else its managed
    /// identity), or objects in a Google Cloud Storage bucket (gcs, with
    /// --bucket; through its JSON API, credentials as below).
    #[arg(
        long = "store",
        value_name = "STORE",
        value_enum,
        env = "S3LEASE_STORE",
        global = true
    )]
    pub(crate) kind: Option<StoreArg>,
    #[command(flatten)]
    pub(crate) container: azure_blob::ContainerFlag,
    #[command(flatten)]
    pub(crate) table: dynamodb::TableFlag,
    /// Store endpoint (default: S3LEASE_ENDPOINT, else AWS_ENDPOINT_URL_S3
    /// or AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL, else AWS S3 or
    /// DynamoDB in the region; gcs: S3LEASE_ENDPOINT, else
    /// STORAGE_EMULATOR_HOST, else https://storage.googleapis.com).
    #[arg(long, global = true)]
    pub(crate) endpoint: Option<String>,
    /// Region (default: S3LEASE_REGION, AWS_REGION, AWS_DEFAULT_REGION, the
    /// profile's, us-east-1).
    #[arg(long, global = true)]
    pub(crate) region: Option<String>,
    /// How expiry is judged (default: server on S3, observed on DynamoDB);
    /// all users of a key must agree.
    #[arg(long, value_enum, env = "S3LEASE_EXPIRY_CLOCK", global = true)]
    pub(crate) expiry_clock: Option<ExpiryClockArg>,
    /// Prefix of every lock object (e.g. `locks/`).
    #[arg(long, env = "S3LEASE_PREFIX", global = true)]
    pub(crate) prefix: Option<String>,
    /// Lock strategy; all users of a key must agree.
    #[arg(long, value_enum, env = "S3LEASE_STRATEGY", global = true)]
    pub(crate) strategy: Option<StrategyArg>,
    /// Run the store preflight before the first grant, and refuse to take a
    /// lock (exit 81) on a store that would not keep it safe.
    #[arg(long, env = "S3LEASE_CHECK_STORE", global = true)]
    pub(crate) check_store: bool,
    /// Keep the grant log: a create-only record in the store after every
    /// grant and release (`s3-lease audit` reads it; docs/audit.md).
    #[arg(long, env = "S3LEASE_AUDIT", global = true)]
    pub(crate) audit: bool,
}

impl StoreFlags {
    /// The store `--store` names (S3 when none).
    pub(crate) fn store(&self) -> &'static CliStore {
        self.kind.unwrap_or(StoreArg::S3).store()
    }

    /// A store's own setting (`S3LEASE_TABLE`, say) from its own flag.
    fn own_setting(&self, name: &str) -> Option<String> {
        match name {
            dynamodb::TABLE_VAR => self.table.table.clone(),
            azure_blob::CONTAINER_VAR => self.container.container.clone(),
            _ => None,
        }
    }
}

/// The stores `--store` takes (the contract's names).
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StoreArg {
    S3,
    Dynamodb,
    AzureBlob,
    Gcs,
}

impl StoreArg {
    /// What the command line knows of the store, in its own file.
    pub(crate) fn store(self) -> &'static CliStore {
        match self {
            StoreArg::S3 => &s3::STORE,
            StoreArg::Dynamodb => &dynamodb::STORE,
            StoreArg::AzureBlob => &azure_blob::STORE,
            StoreArg::Gcs => &gcs::STORE,
        }
    }

    /// The store with the contract's name `name`.
    fn named(name: &str) -> Option<StoreArg> {
        StoreArg::value_variants()
            .iter()
            .copied()
            .find(|kind| kind.store().name == name)
    }
}

/// The lock strategy (`--strategy`).
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum StrategyArg {
    SingleObject,
    EpochObjects,
}

/// How expiry is judged (`--expiry-clock`).
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ExpiryClockArg {
    Server,
    Holder,
    Observed,
}

/// What the command line knows of one store beyond the host's config.
pub(crate) struct CliStore {
    /// `--store`'s value and the contract's name (`S3LEASE_STORE`).
    pub(crate) name: &'static str,
    /// The flags it needs beside `--store`, checked before anything is read.
    pub(crate) check: fn(&StoreFlags) -> Result<(), Failure>,
    /// Where its endpoint is read from after `S3LEASE_ENDPOINT`, in order.
    pub(crate) endpoint_vars: &'static [&'static str],
    /// How to give its credentials instead of in an endpoint.
    pub(crate) keys_hint: &'static str,
    /// Its paragraph of `--help`, if any.
    pub(crate) help: &'static str,
    /// What a nested s3-lease needs of it beyond the settings every store
    /// shares, given the endpoint in use, if one was given.
    pub(crate) child_env: ChildEnv,
}

/// Adds a store's own variables for a nested s3-lease (see
/// [`CliStore::child_env`]).
pub(crate) type ChildEnv = fn(&StoreConfig, Option<&str>, &mut Vec<(String, String)>);

/// The stores' paragraphs of `--help`, in `--store`'s order.
pub(crate) fn stores_help() -> String {
    StoreArg::value_variants()
        .iter()
        .map(|kind| kind.store().help)
        .filter(|help| !help.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A flag a store needs, missing: the configuration error that says so.
fn missing(what: &str) -> Failure {
    Failure::new(exit::CONFIG, what.to_string())
}

/// Where the credentials came from, for `run` and `elect`'s first line:
/// the AWS chain's source, or where a store's tokens come from.
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
pub(crate) fn store_config(flags: &StoreFlags) -> Result<StoreConfig, Failure> {
    (flags.store().check)(flags)?;
    check_endpoints(flags)?;
    // The host reads the settings as the Python and Node packages have
    // them read (S3LEASE_ENDPOINT and S3LEASE_REGION over the AWS
    // variables); credentials and region as the store's own tools find
    // them, refreshed while we run. What clap read (a flag, else its
    // variable) is the setting; --endpoint and --region win over their
    // variables; the rest is the environment's.
    let setting = |name: &str| match name {
        "S3LEASE_BUCKET" => flags.bucket.clone(),
        "S3LEASE_STORE" => flags.kind.map(|kind| kind.store().name.to_string()),
        "S3LEASE_PREFIX" => flags.prefix.clone(),
        "S3LEASE_STRATEGY" => flags.strategy.map(|s| {
            match s {
                StrategyArg::SingleObject => Strategy::SingleObject,
                StrategyArg::EpochObjects => Strategy::EpochObjects,
            }
            .name()
            .to_string()
        }),
        "S3LEASE_EXPIRY_CLOCK" => flags.expiry_clock.map(|c| {
            match c {
                ExpiryClockArg::Server => ExpiryClock::Server,
                ExpiryClockArg::Holder => ExpiryClock::Holder,
                ExpiryClockArg::Observed => ExpiryClock::Observed,
            }
            .name()
            .to_string()
        }),
        "S3LEASE_CHECK_STORE" => flags.check_store.then(|| "1".to_string()),
        ENDPOINT_VAR => flags.endpoint.clone().or_else(|| env_var(name)),
        REGION_VAR => flags.region.clone().or_else(|| env_var(name)),
        _ => flags.own_setting(name).or_else(|| env_var(name)),
    };
    let mut config = StoreConfig::from_settings(setting, AwsKeys::Chain)?;
    config.audit = flags.audit.then_some(true);
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
/// else the variables the store's own tools read (an AWS store's service
/// variable, then `AWS_ENDPOINT_URL`). `None`: the store's own endpoint.
/// A store whose tools read other variables (an emulator's host, say)
/// has them read by the host, and a nested s3-lease inherits them.
pub(crate) fn endpoint_in_use(flags: &StoreFlags) -> Option<(&'static str, String)> {
    match &flags.endpoint {
        Some(endpoint) => Some(("--endpoint", endpoint.clone())),
        None => std::iter::once(ENDPOINT_VAR)
            .chain(flags.store().endpoint_vars.iter().copied())
            .find_map(|name| env_var(name).map(|v| (name, v))),
    }
}

/// An endpoint with a user name or password in it is refused without
/// echoing it (the password would land in logs and cron mail), naming
/// where it came from.
fn check_endpoints(flags: &StoreFlags) -> Result<(), Failure> {
    if let Some((source, endpoint)) = endpoint_in_use(flags) {
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
            return Err(Failure::new(
                code,
                format!(
                    "{source} carries a user name or password (before an `@`); not shown here. \
                     Give the endpoint as scheme://host[:port], and {}",
                    flags.store().keys_hint
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
    if config.store_kind() != StoreArg::S3.store().name {
        env.push(("S3LEASE_STORE".into(), config.store_kind().into()));
    }
    if let Some(store) = StoreArg::named(config.store_kind()) {
        (store.store().child_env)(config, endpoint.as_deref(), &mut env);
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
mod tests;

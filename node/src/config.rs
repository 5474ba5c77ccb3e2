//! A store's configuration from `Client.connect`'s options, read by the
//! host's own readers (`StoreConfig::from_aws` and `from_vars`, the ones
//! the command line uses): an option stands in for the variable the AWS,
//! Azure and Google SDKs would read, and an option not given falls back to
//! that variable in the environment. `S3LEASE_*` variables are read only
//! by `Client.fromEnv` (its JavaScript passes them as options), so that a
//! program's explicit `connect` is not redirected by them.

use crate::errors;
use napi_derive::napi;
use s3_lease_host::{Error, ExpiryClock, SharedSource, StoreConfig, Strategy};
use std::time::Duration;

/// What `Client.connect` takes, as its JavaScript passes it on.
#[napi(object)]
#[derive(Default, Clone)]
pub struct ConnectOptions {
    /// `s3` (the default), `dynamodb`, `azure-blob` or `gcs`.
    pub store: Option<String>,
    pub bucket: Option<String>,
    pub table: Option<String>,
    pub container: Option<String>,
    pub endpoint: Option<String>,
    pub region: Option<String>,
    /// `path` or `virtual-hosted`.
    pub addressing: Option<String>,
    pub prefix: Option<String>,
    pub strategy: Option<String>,
    pub expiry_clock: Option<String>,
    pub preflight: Option<bool>,
    pub seal_key: Option<String>,
    pub request_timeout_ms: Option<f64>,
    pub instances: Option<u32>,
    /// Fixed AWS keys (`credentials: { accessKeyId, ... }`).
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    /// An Azure storage account: its name with a key or a SAS, or a
    /// connection string.
    pub account: Option<String>,
    pub account_key: Option<String>,
    pub sas_token: Option<String>,
    pub connection_string: Option<String>,
}

const KEY_VARS: [&str; 3] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
];

impl ConnectOptions {
    /// The option that stands in for the variable `name`.
    fn given(&self, name: &str) -> Option<String> {
        match name {
            "AWS_ENDPOINT_URL"
            | "AWS_ENDPOINT_URL_S3"
            | "AWS_ENDPOINT_URL_DYNAMODB"
            | "S3LEASE_ENDPOINT" => self.endpoint.clone(),
            "AWS_REGION" => self.region.clone(),
            "AWS_ACCESS_KEY_ID" => self.access_key_id.clone(),
            "AWS_SECRET_ACCESS_KEY" => self.secret_access_key.clone(),
            "AWS_SESSION_TOKEN" => self.session_token.clone(),
            "S3LEASE_STORE" => self.store.clone(),
            "S3LEASE_BUCKET" => self.bucket.clone(),
            "S3LEASE_TABLE" => self.table.clone(),
            "S3LEASE_CONTAINER" => self.container.clone(),
            "S3LEASE_ADDRESSING" => self.addressing.clone(),
            "S3LEASE_SEAL_KEY" => self.seal_key.clone(),
            "AZURE_STORAGE_ACCOUNT" => self.account.clone(),
            "AZURE_STORAGE_KEY" => self.account_key.clone(),
            "AZURE_STORAGE_SAS_TOKEN" => self.sas_token.clone(),
            "AZURE_STORAGE_CONNECTION_STRING" => self.connection_string.clone(),
            _ => None,
        }
        .filter(|v| !v.is_empty())
    }

    /// The option, else the environment's variable (never an `S3LEASE_*`
    /// one, nor the other AWS keys when keys were given).
    fn var(&self, name: &str) -> Option<String> {
        let keys_given = self.access_key_id.is_some();
        let ours = name.starts_with("S3LEASE_") || (keys_given && KEY_VARS.contains(&name));
        self.given(name)
            .or_else(|| (!ours).then(|| std::env::var(name).ok()).flatten())
            .filter(|v| !v.is_empty())
    }
}

/// The store `options` name, with its credentials: fixed keys if given,
/// else `provider`'s (fetched now, refreshed by the client before they
/// expire), else the AWS chain's (Azure's, Google's). Blocking: it may
/// fetch credentials.
pub fn store_config(
    options: &ConnectOptions,
    provider: Option<SharedSource>,
) -> napi::Result<StoreConfig> {
    let bucket = options.bucket.clone().unwrap_or_default();
    let config = match provider {
        Some(source) => with_provider(options, &bucket, source),
        None if options.access_key_id.is_some() => {
            StoreConfig::from_vars(&bucket, |name| options.var(name))
        }
        None => StoreConfig::from_aws(&bucket, |name| options.var(name)),
    };
    let mut config = config.map_err(|e| errors::from_host(&e))?;
    config.key_prefix = options.prefix.clone().filter(|p| !p.is_empty());
    config.strategy = options.strategy.as_deref().map(strategy).transpose()?;
    config.expiry_clock = options
        .expiry_clock
        .as_deref()
        .map(expiry_clock)
        .transpose()?;
    config.preflight = options.preflight;
    if let Some(ms) = options.request_timeout_ms {
        config.request_timeout = Some(duration_ms("requestTimeout", ms)?);
    }
    Ok(config)
}

/// The first credentials from `source`, then the store as with fixed
/// keys, refreshed from `source`.
fn with_provider(
    options: &ConnectOptions,
    bucket: &str,
    source: SharedSource,
) -> Result<StoreConfig, Error> {
    let first = source.fetch()?.credentials;
    let config = StoreConfig::from_vars(bucket, |name| match name {
        "AWS_ACCESS_KEY_ID" => Some(first.access_key_id.clone()),
        "AWS_SECRET_ACCESS_KEY" => Some(first.secret_access_key.clone()),
        "AWS_SESSION_TOKEN" => first.session_token.clone(),
        _ => options.var(name),
    })?;
    config.with_credentials_source(source)
}

fn strategy(name: &str) -> napi::Result<Strategy> {
    match name {
        "single-object" => Ok(Strategy::SingleObject),
        "epoch-objects" => Ok(Strategy::EpochObjects),
        other => Err(errors::plain(
            "invalid-config",
            &format!("strategy {other:?} is neither `single-object` nor `epoch-objects`"),
        )),
    }
}

fn expiry_clock(name: &str) -> napi::Result<ExpiryClock> {
    match name {
        "server" => Ok(ExpiryClock::Server),
        "holder" => Ok(ExpiryClock::Holder),
        "observed" => Ok(ExpiryClock::Observed),
        other => Err(errors::plain(
            "invalid-config",
            &format!("expiryClock {other:?} is none of `server`, `holder` and `observed`"),
        )),
    }
}

/// Milliseconds from JavaScript (a number) as a duration: whole, not
/// negative, not NaN; an `invalid-argument` error naming `what` otherwise.
pub fn duration_ms(what: &str, ms: f64) -> napi::Result<Duration> {
    if !ms.is_finite() || ms < 0.0 || ms.fract() != 0.0 {
        return Err(errors::plain(
            "invalid-argument",
            &format!("{what} must be a whole number of milliseconds, not {ms}"),
        ));
    }
    // Past what a u64 of milliseconds holds is "forever" anyway.
    Ok(Duration::from_millis(if ms >= u64::MAX as f64 {
        u64::MAX
    } else {
        ms as u64
    }))
}

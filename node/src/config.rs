//! A store's configuration from `Client.connect`'s options, read by the
//! host's own reader (`StoreConfig::from_settings`, the one the command
//! line and the Python package use): an option stands for one of the
//! command line's variables (or the AWS or Azure SDKs'), and an option not
//! given falls back to the variable the AWS, Azure or Google SDK would
//! read. `S3LEASE_*` variables are read only by `Client.fromEnv`, so that
//! a program's explicit `connect` is not redirected by them.

use crate::errors;
use napi_derive::napi;
use s3_lease_host::{AwsKeys, SharedSource, StoreConfig};
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
    /// Keep the grant log (docs/audit.md).
    pub audit: Option<bool>,
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
    /// `Client.fromEnv`: the command line's `S3LEASE_*` variables are read
    /// too (under the options given).
    pub from_env: Option<bool>,
}

const KEY_VARS: [&str; 3] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
];

impl ConnectOptions {
    /// The option that stands for the command line's variable `name`.
    fn given(&self, name: &str) -> Option<String> {
        match name {
            "S3LEASE_STORE" => self.store.clone(),
            "S3LEASE_BUCKET" => self.bucket.clone(),
            "S3LEASE_TABLE" => self.table.clone(),
            "S3LEASE_CONTAINER" => self.container.clone(),
            "S3LEASE_ENDPOINT" => self.endpoint.clone(),
            "S3LEASE_REGION" => self.region.clone(),
            "S3LEASE_ADDRESSING" => self.addressing.clone(),
            "S3LEASE_PREFIX" => self.prefix.clone(),
            "S3LEASE_STRATEGY" => self.strategy.clone(),
            "S3LEASE_EXPIRY_CLOCK" => self.expiry_clock.clone(),
            "S3LEASE_CHECK_STORE" => self.preflight.map(|yes| if yes { "1" } else { "0" }.into()),
            "S3LEASE_AUDIT" => self.audit.map(|yes| if yes { "1" } else { "0" }.into()),
            "S3LEASE_SEAL_KEY" => self.seal_key.clone(),
            "AWS_ACCESS_KEY_ID" => self.access_key_id.clone(),
            "AWS_SECRET_ACCESS_KEY" => self.secret_access_key.clone(),
            "AWS_SESSION_TOKEN" => self.session_token.clone(),
            "AZURE_STORAGE_ACCOUNT" => self.account.clone(),
            "AZURE_STORAGE_KEY" => self.account_key.clone(),
            "AZURE_STORAGE_SAS_TOKEN" => self.sas_token.clone(),
            "AZURE_STORAGE_CONNECTION_STRING" => self.connection_string.clone(),
            _ => None,
        }
        .filter(|v| !v.is_empty())
    }

    /// The option, else the environment's variable: the AWS, Azure and
    /// Google SDKs' always (as they read them), the command line's
    /// `S3LEASE_*` ones only for `Client.fromEnv` (an explicit `connect`
    /// is not redirected by them), and no AWS key beside keys given.
    fn setting(&self, name: &str) -> Option<String> {
        let ours = name.starts_with("S3LEASE_") && self.from_env != Some(true);
        let keys_given = self.access_key_id.is_some();
        self.given(name).or_else(|| {
            if ours || (keys_given && KEY_VARS.contains(&name)) {
                return None;
            }
            std::env::var(name).ok().filter(|v| !v.is_empty())
        })
    }
}

/// The store `options` name, with its credentials: fixed keys if given,
/// else `provider`'s (fetched now, refreshed by the client before they
/// expire), else the AWS chain's (Azure's, Google's). The host reads the
/// settings (`StoreConfig::from_settings`), as for the command line and
/// the Python package. Blocking: it may fetch credentials.
pub fn store_config(
    options: &ConnectOptions,
    provider: Option<SharedSource>,
) -> napi::Result<StoreConfig> {
    let keys = match provider {
        Some(source) => AwsKeys::Source(source),
        None if options.access_key_id.is_some() => AwsKeys::Given,
        None => AwsKeys::Chain,
    };
    let mut config = StoreConfig::from_settings(|name| options.setting(name), keys)
        .map_err(|e| errors::from_host(&e))?;
    if let Some(ms) = options.request_timeout_ms {
        config.request_timeout = Some(duration_ms("requestTimeout", ms)?);
    }
    Ok(config)
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

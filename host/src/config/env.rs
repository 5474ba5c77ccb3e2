//! A [`StoreConfig`] from the environment: the store `S3LEASE_STORE` names
//! (the first of `STORE_KINDS`, S3, when unset), read by that store's own
//! file as its SDKs read their variables and files; and
//! [`StoreConfig::from_settings`], the command line's `S3LEASE_*`
//! settings read once for every front end (the command line, the Python
//! and Node packages).

use super::{OwnSettings, StoreConfig, StoreKind, STORE_KINDS};
use crate::credentials::SharedSource;
use crate::error::Error;
use crate::types::{ExpiryClock, Strategy};

/// Where [`StoreConfig::from_settings`] takes an AWS store's keys from (a
/// store that takes tokens reads its own credentials).
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
    ///   each store's own variables, as [`StoreConfig::from_aws`]
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
    /// An AWS store's keys come from `keys`. A value none of
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
            AwsKeys::Source(_) if !store_kind(&var)?.aws_keys => {
                return Err(Error::invalid_config(
                    "credentials",
                    "a credentials source gives AWS keys; this store reads its own",
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
        // `AWS_ENDPOINT_URL` and each service's own (`AWS_ENDPOINT_URL_S3`).
        _ if name.starts_with("AWS_ENDPOINT_URL") => {
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
    /// ([`AwsChain`](crate::credentials::AwsChain): environment, profile
    /// files, web identity, container credentials, instance metadata),
    /// refreshed on a live client; the rest as [`StoreConfig::from_vars`]
    /// reads it. Credentials are fetched once here; with none anywhere, an
    /// `invalid-config` error lists where it looked. A store that takes
    /// tokens reads its own credentials (see its builder's `from_*_vars`).
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
        read(bucket, &var, KeysFrom::Chain)
    }

    /// Static keys only, from `var`: the store `S3LEASE_STORE` names (`s3`,
    /// the default; the others by their contract names), read by its own
    /// builder's rules. On an AWS store: `AWS_ENDPOINT_URL_<SERVICE>` or
    /// `AWS_ENDPOINT_URL` (default AWS itself), `AWS_REGION` or
    /// `AWS_DEFAULT_REGION` (default `us-east-1`), `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`; S3's
    /// `S3LEASE_ADDRESSING` (`path` or `virtual-hosted`; default path for a
    /// custom endpoint, virtual-hosted on AWS), a table store's
    /// `S3LEASE_TABLE`. On every store `S3LEASE_SEAL_KEY` (the optional
    /// seal key). Missing settings are an `invalid-config` error naming the
    /// variable. Tests pass a map.
    pub fn from_vars(bucket: &str, var: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        read(bucket, &var, KeysFrom::Variables)
    }
}

/// Where an AWS store read from variables takes its keys from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum KeysFrom {
    /// The AWS chain, refreshed on a live client.
    Chain,
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.
    Variables,
}

/// The store `S3LEASE_STORE` names, read by its own file, with the seal key.
fn read(
    bucket: &str,
    var: &dyn Fn(&str) -> Option<String>,
    keys: KeysFrom,
) -> Result<StoreConfig, Error> {
    let kind = store_kind(var)?;
    with_seal_key(StoreConfig::of((kind.read)(bucket, var, keys)?), var)
}

/// The store `T`, read by its own file from `var`, with the seal key.
pub(super) fn read_as<T: OwnSettings>(
    place: &str,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<StoreConfig, Error> {
    let store = T::from_vars(place, var, KeysFrom::Variables)?.build_store();
    with_seal_key(StoreConfig::of(store), var)
}

fn with_seal_key(
    mut config: StoreConfig,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<StoreConfig, Error> {
    config.seal_key = var("S3LEASE_SEAL_KEY");
    Ok(config)
}

/// `S3LEASE_STORE`'s store (any case), the first of [`STORE_KINDS`] when
/// unset.
fn store_kind(var: &dyn Fn(&str) -> Option<String>) -> Result<&'static StoreKind, Error> {
    let Some(name) = var("S3LEASE_STORE") else {
        return Ok(&STORE_KINDS[0]);
    };
    STORE_KINDS
        .iter()
        .find(|kind| kind.name.eq_ignore_ascii_case(&name))
        .ok_or_else(|| {
            let names: Vec<String> = STORE_KINDS
                .iter()
                .map(|k| format!("`{}`", k.name))
                .collect();
            Error::invalid_config(
                "S3LEASE_STORE",
                format!(
                    "{:?} is none of {}",
                    name.to_ascii_lowercase(),
                    names.join(", ")
                ),
            )
        })
}

#[cfg(test)]
mod tests;

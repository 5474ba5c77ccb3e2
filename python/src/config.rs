//! The store's configuration: from `Client(...)`'s arguments, or from the
//! environment the command line reads (`Client.from_env()`), with the
//! arguments given winning over it. The host reads both through one
//! function of variable names (`StoreConfig::from_aws`), so what a name
//! means is the host's, as for the command line.

use crate::credentials::PythonCredentials;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use s3_lease_host::credentials::SharedSource;
use s3_lease_host::{
    Addressing, Credentials, DynamoDbBuilder, ExpiryClock, S3Builder, StoreConfig, Strategy,
};
use std::collections::HashMap;
use std::time::Duration;

/// The arguments, by the variable each stands for.
struct Settings {
    given: HashMap<&'static str, String>,
    from_env: bool,
}

/// Which argument stands for which of the variables the host reads.
const ARGUMENTS: &[(&str, &[&str])] = &[
    ("store", &["S3LEASE_STORE"]),
    ("bucket", &["S3LEASE_BUCKET"]),
    ("table", &["S3LEASE_TABLE"]),
    ("container", &["S3LEASE_CONTAINER"]),
    // GCS reads S3LEASE_ENDPOINT; S3 and DynamoDB the AWS SDKs' names.
    (
        "endpoint",
        &[
            "S3LEASE_ENDPOINT",
            "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT_URL_S3",
            "AWS_ENDPOINT_URL_DYNAMODB",
        ],
    ),
    ("region", &["AWS_REGION"]),
    ("addressing", &["S3LEASE_ADDRESSING"]),
    ("seal_key", &["S3LEASE_SEAL_KEY"]),
    ("access_key_id", &["AWS_ACCESS_KEY_ID"]),
    ("secret_access_key", &["AWS_SECRET_ACCESS_KEY"]),
    ("session_token", &["AWS_SESSION_TOKEN"]),
    ("connection_string", &["AZURE_STORAGE_CONNECTION_STRING"]),
    ("account", &["AZURE_STORAGE_ACCOUNT"]),
    ("account_key", &["AZURE_STORAGE_KEY"]),
    ("sas_token", &["AZURE_STORAGE_SAS_TOKEN"]),
];

impl Settings {
    fn env(name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    /// The variable `name` as the host should see it: the argument that
    /// stands for it, else (from_env) the environment, where the command
    /// line's own variables come before the AWS SDKs' (`S3LEASE_ENDPOINT`,
    /// `S3LEASE_REGION`), as the command line reads them.
    fn var(&self, name: &str) -> Option<String> {
        if let Some(given) = self.given.get(name) {
            return Some(given.clone());
        }
        if !self.from_env {
            return None;
        }
        match name {
            "AWS_ENDPOINT_URL" | "AWS_ENDPOINT_URL_S3" | "AWS_ENDPOINT_URL_DYNAMODB" => {
                Self::env("S3LEASE_ENDPOINT").or_else(|| Self::env(name))
            }
            "AWS_REGION" => Self::env("S3LEASE_REGION").or_else(|| Self::env(name)),
            _ => Self::env(name),
        }
    }

    /// A setting of the client's own (`S3LEASE_PREFIX` and the like).
    fn own(&self, argument: Option<String>, variable: &str) -> Option<String> {
        argument.or_else(|| self.from_env.then(|| Self::env(variable)).flatten())
    }
}

fn text(args: &Bound<'_, PyDict>, name: &str) -> PyResult<Option<String>> {
    match args.get_item(name)? {
        Some(v) if !v.is_none() => {
            Ok(Some(v.extract::<String>().map_err(|_| {
                crate::errors::invalid_argument(format!("{name}= must be a str"))
            })?))
        }
        _ => Ok(None),
    }
}

fn config_error(field: &str, why: String) -> PyErr {
    Python::attach(|py| {
        let details = PyDict::new(py);
        let _ = details.set_item("field", field);
        crate::errors::make(py, "invalid-config", &format!("{field}: {why}"), details)
    })
}

/// The store `args` (and, with `from_env`, the environment) name.
pub(crate) fn store_config(
    args: &Bound<'_, PyDict>,
    credentials: Option<Py<PyAny>>,
    from_env: bool,
) -> PyResult<StoreConfig> {
    let mut given = HashMap::new();
    for (argument, variables) in ARGUMENTS {
        if let Some(value) = text(args, argument)? {
            for variable in *variables {
                given.insert(*variable, value.clone());
            }
        }
    }
    let settings = Settings { given, from_env };
    let bucket = settings.var("S3LEASE_BUCKET").unwrap_or_default();
    let store = settings.var("S3LEASE_STORE").unwrap_or_else(|| "s3".into());
    let on_aws_store = matches!(store.to_ascii_lowercase().as_str(), "s3" | "dynamodb");
    if store.eq_ignore_ascii_case("s3") && bucket.is_empty() {
        return Err(config_error(
            "bucket",
            "no bucket: pass bucket= or set S3LEASE_BUCKET (or store=\"dynamodb\", table=...)"
                .into(),
        ));
    }
    let var = |name: &str| settings.var(name);
    let mut config = match credentials {
        Some(session) if on_aws_store => with_session(&settings, &bucket, &store, session)?,
        Some(_) => {
            return Err(config_error(
                "credentials",
                format!(
                    "credentials= takes an AWS session (S3 and DynamoDB); a {store} store reads \
                     its own credentials"
                ),
            ))
        }
        // Keys given: those, fixed. Otherwise the AWS chain (environment,
        // profiles, web identity, containers, instance metadata; a
        // Lambda's role), or Azure's and Google's.
        None if on_aws_store && settings.given.contains_key("AWS_ACCESS_KEY_ID") => {
            StoreConfig::from_vars(&bucket, var).map_err(|e| crate::errors::to_py(&e))?
        }
        None => StoreConfig::from_aws(&bucket, var).map_err(|e| crate::errors::to_py(&e))?,
    };
    config.key_prefix = settings.own(text(args, "key_prefix")?, "S3LEASE_PREFIX");
    if let Some(strategy) = settings.own(text(args, "strategy")?, "S3LEASE_STRATEGY") {
        config.strategy = Some(match strategy.as_str() {
            "single-object" => Strategy::SingleObject,
            "epoch-objects" => Strategy::EpochObjects,
            other => {
                return Err(config_error(
                    "strategy",
                    format!("{other:?} is neither \"single-object\" nor \"epoch-objects\""),
                ))
            }
        });
    }
    if let Some(clock) = settings.own(text(args, "expiry_clock")?, "S3LEASE_EXPIRY_CLOCK") {
        config.expiry_clock = Some(match clock.as_str() {
            "server" => ExpiryClock::Server,
            "holder" => ExpiryClock::Holder,
            "observed" => ExpiryClock::Observed,
            other => {
                return Err(config_error(
                    "expiry_clock",
                    format!("{other:?} is none of \"server\", \"holder\" and \"observed\""),
                ))
            }
        });
    }
    config.preflight = match args.get_item("preflight")? {
        Some(v) if !v.is_none() => Some(v.is_truthy()?),
        _ => settings
            .own(None, "S3LEASE_CHECK_STORE")
            .map(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes")),
    };
    if let Some(timeout) = args.get_item("request_timeout")? {
        if !timeout.is_none() {
            let seconds: f64 = timeout.extract()?;
            let timeout = Duration::try_from_secs_f64(seconds).map_err(|_| {
                config_error(
                    "request_timeout",
                    format!("{seconds} is not a duration in seconds"),
                )
            })?;
            config.request_timeout = Some(timeout);
        }
    }
    Ok(config)
}

/// An S3 bucket or DynamoDB table whose keys come from a Python session.
fn with_session(
    settings: &Settings,
    bucket: &str,
    store: &str,
    session: Py<PyAny>,
) -> PyResult<StoreConfig> {
    let source = SharedSource::new(PythonCredentials { session });
    let region = settings
        .var("AWS_REGION")
        .or_else(|| settings.var("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|| "us-east-1".into());
    let placeholder = Credentials::new("", "");
    let to_py = |e: s3_lease_host::Error| crate::errors::to_py(&e);
    let mut config = if store.eq_ignore_ascii_case("dynamodb") {
        let table = settings
            .var("S3LEASE_TABLE")
            .ok_or_else(|| config_error("table", "a dynamodb store needs table=".into()))?;
        let mut builder = DynamoDbBuilder::new(table, region, placeholder);
        if let Some(url) = settings.var("AWS_ENDPOINT_URL_DYNAMODB") {
            builder = builder.endpoint(url);
        }
        builder.credentials_source(source).map_err(to_py)?.build()
    } else {
        let mut builder = S3Builder::new(bucket, region, placeholder);
        if let Some(url) = settings.var("AWS_ENDPOINT_URL_S3") {
            builder = builder.endpoint(url);
        }
        builder = match settings.var("S3LEASE_ADDRESSING").as_deref() {
            None => builder,
            Some("path") => builder.addressing(Addressing::Path),
            Some("virtual-hosted") => builder.addressing(Addressing::VirtualHosted),
            Some(other) => {
                return Err(config_error(
                    "addressing",
                    format!("{other:?} is neither \"path\" nor \"virtual-hosted\""),
                ))
            }
        };
        builder.credentials_source(source).map_err(to_py)?.build()
    };
    config.seal_key = settings.var("S3LEASE_SEAL_KEY");
    Ok(config)
}

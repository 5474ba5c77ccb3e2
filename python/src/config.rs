//! The store's configuration: from `Client(...)`'s arguments, or from the
//! environment the command line reads (`Client.from_env()`), with the
//! arguments given winning over it. Each argument stands for one of the
//! command line's variables, and the host reads them
//! (`StoreConfig::from_settings`), so what a setting means is defined once
//! for the command line and both packages.

use crate::credentials::PythonCredentials;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use s3_lease_host::{AwsKeys, SharedSource, StoreConfig};
use std::collections::HashMap;
use std::time::Duration;

/// Which argument stands for which variable.
const ARGUMENTS: &[(&str, &str)] = &[
    ("store", "S3LEASE_STORE"),
    ("bucket", "S3LEASE_BUCKET"),
    ("table", "S3LEASE_TABLE"),
    ("container", "S3LEASE_CONTAINER"),
    ("endpoint", "S3LEASE_ENDPOINT"),
    ("region", "S3LEASE_REGION"),
    ("addressing", "S3LEASE_ADDRESSING"),
    ("seal_key", "S3LEASE_SEAL_KEY"),
    ("key_prefix", "S3LEASE_PREFIX"),
    ("strategy", "S3LEASE_STRATEGY"),
    ("expiry_clock", "S3LEASE_EXPIRY_CLOCK"),
    ("access_key_id", "AWS_ACCESS_KEY_ID"),
    ("secret_access_key", "AWS_SECRET_ACCESS_KEY"),
    ("session_token", "AWS_SESSION_TOKEN"),
    ("connection_string", "AZURE_STORAGE_CONNECTION_STRING"),
    ("account", "AZURE_STORAGE_ACCOUNT"),
    ("account_key", "AZURE_STORAGE_KEY"),
    ("sas_token", "AZURE_STORAGE_SAS_TOKEN"),
];

const KEY_VARIABLES: [&str; 3] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
];

/// The arguments given, by the variable each stands for, over the
/// environment: the AWS, Azure and Google SDKs' variables always (as those
/// SDKs read them), the command line's `S3LEASE_*` ones only for
/// `from_env`, and no AWS key from the environment beside keys given.
struct Settings {
    given: HashMap<&'static str, String>,
    from_env: bool,
}

impl Settings {
    fn setting(&self, name: &str) -> Option<String> {
        if let Some(value) = self.given.get(name) {
            return Some(value.clone());
        }
        let ours = name.starts_with("S3LEASE_") && !self.from_env;
        let keys_given = self.given.contains_key("AWS_ACCESS_KEY_ID");
        if ours || (keys_given && KEY_VARIABLES.contains(&name)) {
            return None;
        }
        std::env::var(name).ok().filter(|v| !v.is_empty())
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

/// The store `args` (and, with `from_env`, the environment) name. Reading
/// credentials may wait on the network (instance metadata, a token
/// service) or on a session: the GIL is released meanwhile.
pub(crate) fn store_config(
    args: &Bound<'_, PyDict>,
    credentials: Option<Py<PyAny>>,
    from_env: bool,
) -> PyResult<StoreConfig> {
    let mut given = HashMap::new();
    for (argument, variable) in ARGUMENTS {
        if let Some(value) = text(args, argument)?.filter(|v| !v.is_empty()) {
            given.insert(*variable, value);
        }
    }
    for (argument, variable) in [
        ("preflight", "S3LEASE_CHECK_STORE"),
        ("audit", "S3LEASE_AUDIT"),
    ] {
        if let Some(value) = args.get_item(argument)?.filter(|v| !v.is_none()) {
            let yes = value.is_truthy()?;
            given.insert(variable, if yes { "1" } else { "0" }.into());
        }
    }
    let settings = Settings { given, from_env };
    let store = settings.setting("S3LEASE_STORE").unwrap_or_default();
    if matches!(store.to_ascii_lowercase().as_str(), "" | "s3")
        && settings.setting("S3LEASE_BUCKET").is_none()
    {
        return Err(config_error(
            "bucket",
            "no bucket: pass bucket= or set S3LEASE_BUCKET (or store=\"dynamodb\", table=...)"
                .into(),
        ));
    }
    // Keys given: those, fixed. A session: its keys, asked again before
    // they expire. Otherwise the AWS chain (environment, profiles, web
    // identity, containers, instance metadata; a Lambda's role), or
    // Azure's and Google's own.
    let keys = match credentials {
        Some(session) => AwsKeys::Source(SharedSource::new(PythonCredentials { session })),
        None if settings.given.contains_key("AWS_ACCESS_KEY_ID") => AwsKeys::Given,
        None => AwsKeys::Chain,
    };
    let py = args.py();
    let mut config = py
        .detach(|| StoreConfig::from_settings(|name| settings.setting(name), keys))
        .map_err(|e| crate::errors::to_py(&e))?;
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

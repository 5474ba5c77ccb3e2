//! `credentials=`: a boto3 or botocore `Session` (anything with
//! `get_credentials()`) as the host's credentials source. The host's
//! refresher asks it again ahead of the expiry it reports, and once after
//! the store refused the keys; botocore's refreshable credentials refresh
//! themselves when asked (`get_frozen_credentials`).

use pyo3::prelude::*;
use s3_lease_host::{Credentials, CredentialsSource, Error, FetchedCredentials};
use std::time::{Duration, SystemTime};

pub(crate) struct PythonCredentials {
    pub session: Py<PyAny>,
}

impl CredentialsSource for PythonCredentials {
    fn fetch(&self) -> Result<FetchedCredentials, Error> {
        Python::try_attach(|py| fetch(py, self.session.bind(py))).unwrap_or_else(|| {
            Err(Error::credentials_failed(
                "the Python interpreter is shutting down: no credentials from the session",
            ))
        })
    }
}

fn fetch(py: Python<'_>, session: &Bound<'_, PyAny>) -> Result<FetchedCredentials, Error> {
    // Exceptions from the session are named by their type only: botocore's
    // messages are safe, but a user's session object is anything.
    let failed = |what: &str, e: PyErr| {
        Error::credentials_failed(format!(
            "credentials= {what} raised {}",
            e.get_type(py)
                .name()
                .map_or_else(|_| "an exception".to_string(), |n| n.to_string())
        ))
    };
    let credentials = session
        .call_method0("get_credentials")
        .map_err(|e| failed("get_credentials()", e))?;
    if credentials.is_none() {
        return Err(Error::credentials_failed(
            "credentials= get_credentials() returned None: the session found no AWS credentials",
        ));
    }
    // A frozen copy (botocore refreshes refreshable credentials here, and
    // the three values then belong together); else the attributes.
    let frozen = match credentials.hasattr("get_frozen_credentials") {
        Ok(true) => credentials
            .call_method0("get_frozen_credentials")
            .map_err(|e| failed("get_frozen_credentials()", e))?,
        _ => credentials.clone(),
    };
    let text = |name: &str| -> Result<Option<String>, Error> {
        let value = frozen
            .getattr(name)
            .map_err(|e| failed(&format!("reading .{name}"), e))?;
        if value.is_none() {
            return Ok(None);
        }
        value
            .extract::<String>()
            .map(|v| Some(v).filter(|v| !v.is_empty()))
            .map_err(|_| Error::credentials_failed(format!("credentials= .{name} is not a str")))
    };
    let access_key = text("access_key")?
        .ok_or_else(|| Error::credentials_failed("credentials= gave no access_key"))?;
    let secret_key = text("secret_key")?
        .ok_or_else(|| Error::credentials_failed("credentials= gave no secret_key"))?;
    let mut keys = Credentials::new(access_key, secret_key);
    keys.session_token = text("token")?;
    let method = credentials
        .getattr("method")
        .ok()
        .and_then(|m| m.extract::<String>().ok())
        .unwrap_or_else(|| "get_credentials()".to_string());
    Ok(FetchedCredentials::new(
        keys,
        expiry(&credentials),
        format!("credentials= ({method})"),
    ))
}

/// When botocore's refreshable credentials expire (`_expiry_time`, an
/// aware datetime), so the host refreshes ahead of it.
fn expiry(credentials: &Bound<'_, PyAny>) -> Option<SystemTime> {
    let at = credentials.getattr("_expiry_time").ok()?;
    if at.is_none() {
        return None;
    }
    let seconds: f64 = at.call_method0("timestamp").ok()?.extract().ok()?;
    if !(seconds.is_finite() && seconds > 0.0) {
        return None;
    }
    SystemTime::UNIX_EPOCH.checked_add(Duration::try_from_secs_f64(seconds).ok()?)
}

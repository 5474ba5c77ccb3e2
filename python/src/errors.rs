//! The host's errors as Python exceptions: one class per error kind under
//! one base (defined in `s3_lease/_errors.py`), with the host's message
//! (which carries no secret) and what the error knows as attributes.

use crate::convert;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use s3_lease_host::Error;

/// The exception of a host error.
pub(crate) fn to_py(e: &Error) -> PyErr {
    Python::attach(|py| {
        let details = PyDict::new(py);
        let filled = (|| -> PyResult<()> {
            details.set_item("status", e.status())?;
            details.set_item("code", e.code())?;
            details.set_item("request_id", e.request_id())?;
            details.set_item("key", e.key())?;
            details.set_item("object_key", e.object_key())?;
            details.set_item("field", e.field())?;
            details.set_item("our_token", e.our_token())?;
            details.set_item("stored_token", e.stored_token())?;
            details.set_item("endpoint", e.endpoint())?;
            details.set_item("bucket", e.bucket())?;
            details.set_item("transient", e.is_transient())?;
            details.set_item("waited", e.waited().map(|w| w.as_secs_f64()))?;
            let holder = match e.holder() {
                Some(state) => Some(convert::lock_state(py, state)?),
                None => None,
            };
            details.set_item("holder", holder)
        })();
        match filled {
            Ok(()) => make(py, e.kind().name(), &e.to_string(), details),
            Err(err) => err,
        }
    })
}

/// An error of the extension itself (the component could not load, a
/// thread could not start): kind `host`.
pub(crate) fn host_error(message: impl Into<String>) -> PyErr {
    Python::attach(|py| make(py, "host", &message.into(), PyDict::new(py)))
}

/// An object of the parent's used in a forked child.
pub(crate) fn forked(message: String) -> PyErr {
    Python::attach(|py| make(py, "forked", &message, PyDict::new(py)))
}

/// A bad argument, found before anything was sent.
pub(crate) fn invalid_argument(message: impl Into<String>) -> PyErr {
    Python::attach(|py| make(py, "invalid-argument", &message.into(), PyDict::new(py)))
}

pub(crate) fn make(py: Python<'_>, kind: &str, message: &str, details: Bound<'_, PyDict>) -> PyErr {
    let made = py
        .import("s3_lease._errors")
        .and_then(|errors| errors.getattr("from_kind"))
        .and_then(|from_kind| from_kind.call1((kind, message, details)));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    }
}

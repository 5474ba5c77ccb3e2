//! What Python passes in, checked: durations in seconds and the lease
//! records `convert` makes, refused as `InvalidArgument` when they are not.

use crate::errors;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use s3_lease_host::LeaseRecord;
use std::time::Duration;

/// Seconds from Python as a duration, refused when negative or not finite.
pub(crate) fn seconds(name: &str, value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        errors::invalid_argument(format!("{name}={value} is not a duration in seconds"))
    })
}

/// A record as `lease_record` made it (and as the command line prints it).
pub(crate) fn record(d: &Bound<'_, PyDict>) -> PyResult<LeaseRecord> {
    fn get<T: for<'a, 'py> FromPyObject<'a, 'py>>(
        d: &Bound<'_, PyDict>,
        name: &str,
    ) -> PyResult<T> {
        match d.get_item(name)? {
            Some(v) => v.extract().map_err(|_| {
                errors::invalid_argument(format!(
                    "a lease record's `{name}` is not a {}",
                    std::any::type_name::<T>()
                ))
            }),
            None => Err(errors::invalid_argument(format!(
                "not a lease record: no `{name}`"
            ))),
        }
    }
    Ok(LeaseRecord::new(
        get::<String>(d, "key")?,
        get::<u64>(d, "token")?,
        get::<String>(d, "seal")?,
    )
    .with_holder_id(get::<String>(d, "holder_id")?)
    .with_etag(get::<String>(d, "etag")?)
    .with_expires_at_ms(get::<u64>(d, "expires_at_ms")?)
    .with_acquired_at_ms(get::<u64>(d, "acquired_at_ms")?)
    .with_ttl(Duration::from_millis(get::<u64>(d, "ttl_ms")?))
    .with_metadata(get::<String>(d, "metadata")?))
}

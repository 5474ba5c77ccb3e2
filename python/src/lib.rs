//! The extension module `s3_lease._native`: the host crate's client,
//! leases and electors for the Python package `s3_lease`, whose Python
//! half (python/s3_lease/) makes them Python's: `with` and `async with`,
//! exceptions, types. The protocol stays in the component.

mod args;
mod client;
mod config;
mod convert;
mod credentials;
mod elector;
mod errors;
mod lease;
mod pending;
mod process;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Compiles the component for this machine into `path`, for
/// `S3LEASE_PRECOMPILED` (a process then starts without compiling it or
/// reading a cache). Returns the file's size.
#[pyfunction]
fn precompile(py: Python<'_>, path: std::path::PathBuf) -> PyResult<u64> {
    py.detach(move || {
        s3_lease_host::precompile(&s3_lease_host::ComponentSource::from_env(), &path)
            .map_err(|e| format!("{e:#}"))
    })
    .map_err(errors::host_error)
}

/// How this process loaded the component (loading it now if it has not).
#[pyfunction]
fn load_report(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let process = process::current()?;
    let runtime = py
        .detach(|| process.component())
        .map_err(errors::host_error)?;
    let report = runtime.load_report();
    let d = PyDict::new(py);
    d.set_item("cache", format!("{:?}", report.cache).to_lowercase())?;
    d.set_item(
        "precompiled_refused",
        report.precompiled_refused.map(|r| r.to_string()),
    )?;
    d.set_item("seconds", report.elapsed.as_secs_f64())?;
    d.set_item("component_bytes", report.component_bytes)?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<client::Client>()?;
    m.add_class::<lease::Lease>()?;
    m.add_class::<elector::Elector>()?;
    m.add_class::<pending::Pending>()?;
    m.add_function(wrap_pyfunction!(precompile, m)?)?;
    m.add_function(wrap_pyfunction!(load_report, m)?)?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

//! The native half of the npm package `s3-lease`: the host crate
//! (`s3-lease-host`) for Node.js, through napi-rs. The package's
//! JavaScript (`node/lib`) is the API users see; this is what it calls.
//!
//! - Every call that talks to the store returns a Promise and runs on the
//!   addon's tokio runtime or the host's own threads, never on the
//!   JavaScript thread: the event loop stays free while a call waits.
//! - A lease renews itself on its client's scheduler (a thread of the
//!   host's), whether or not JavaScript runs.
//! - Errors reach JavaScript as one rejection shape (`errors`): the host's
//!   error kind as the contract names it, its message and its details; the
//!   JavaScript turns them into `S3LeaseError`.
//! - At the end of a JavaScript environment (the process, or a worker
//!   thread), the clients it connected release what they still hold
//!   (`exit`).

mod client;
mod config;
mod convert;
mod credentials;
mod elector;
mod errors;
mod exit;
mod lease;
mod slots;

use s3_lease_host::Runtime;
use std::sync::OnceLock;

/// The component, compiled (or loaded from the compile cache or a
/// precompiled file) once per process and shared by every client of every
/// thread.
fn runtime() -> napi::Result<Runtime> {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime.clone());
    }
    // Two first calls at once may both load it; one is kept.
    let loaded = Runtime::new().map_err(|e| errors::plain("host", &format!("{e:#}")))?;
    Ok(RUNTIME.get_or_init(|| loaded).clone())
}

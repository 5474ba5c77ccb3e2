//! The fixtures of the integration suite, over the product host
//! (`s3-lease-host`): nothing here is for users.
//!
//! - [`Harness`]: one `s3_lease_host::Runtime` (compiled once, pooled HTTP);
//!   [`Harness::instance`] gives each instance its own store, wall clock
//!   (skewable) and HTTP hooks that count, check and fault every request the
//!   component sends through wasi:http.
//! - [`server`]: a real S3 endpoint: SeaweedFS started on loopback, or
//!   whatever the `AWS_*` environment variables name.
//! - [`admin`]: raw S3 calls from the host (create a bucket, plant corrupt
//!   objects), signed by the crate's own SigV4 code.
//! - [`s3s_fs`]: s3s-fs, a real store that must fail the preflight.
//! - [`racing_store`]: SeaweedFS behind a server that checks conditions,
//!   then writes: racing writers all win; the preflight must refuse it.
//! - [`azurite`]: Azurite, Microsoft's Azure Storage emulator, for the
//!   azure-blob store.
//! - [`fake_gcs`]: fake-gcs-server, a Google Cloud Storage emulator, for
//!   the gcs store, behind a front that enforces what it ignores.
//! - [`simulated`]: hook rules that make SeaweedFS behave like weaker
//!   stores (conditions ignored, 501 to `If-Match`).
//! - [`records`]: a host API lease record to the bindings' lease and back.
//! - [`watchdog`]: how every test server stops when this process ends.

pub mod admin;
pub mod aws_fakes;
pub mod azurite;
pub mod bindings;
pub mod dynalite;
pub mod fake_gcs;
pub mod fault_proxy;
pub mod hooks;
pub mod instance;
pub mod racing_store;
pub mod records;
pub mod s3s_fs;
pub mod server;
pub mod simulated;
pub mod soak;
pub mod watchdog;

pub use instance::{Harness, Instance};

/// The path in environment variable `var`, else `relative` to the workspace root.
pub fn env_or_workspace_path(var: &str, relative: &str) -> std::path::PathBuf {
    if let Some(p) = std::env::var_os(var) {
        return p.into();
    }
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).join(relative)
}

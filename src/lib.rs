//! s3-lease: leases, locks and leader election on Amazon S3 conditional writes.
//!
//! The crate is a sans-IO core (`protocol`, `s3`, `sigv4`, `lock_object`,
//! `config`, `driver`) that builds and tests natively, plus, on wasm targets
//! only, the component glue: `component` (the WIT exports) and `transport`
//! (wasi:http).

pub mod client;
pub mod config;
pub mod driver;
pub mod elector;
pub mod epoch;
pub mod error;
pub mod expiry;
pub mod fenced;
pub mod http_date;
pub mod lock_object;
pub mod preflight;
pub mod protocol;
pub mod s3;
pub mod seal;
pub mod sigv4;
mod text;

/// Test support shared by the unit tests, the simulation and host-test: the
/// in-memory S3 model and the linearizability checker. Not in the component.
#[cfg(any(test, feature = "testing"))]
pub mod testing;

#[cfg(target_family = "wasm")]
mod component;
#[cfg(target_family = "wasm")]
mod proxy_world;
#[cfg(target_family = "wasm")]
mod transport;

#[cfg(target_family = "wasm")]
mod bindings {
    wit_bindgen::generate!({
        world: "s3-lease",
        path: "wit",
        generate_all,
        pub_export_macro: true,
    });
}

//! A `wasi:http` function built on s3-lease: `POST /counters/{name}/increment`
//! increments a counter object in S3 under the counter's lease, and answers
//! the new value and the lease's fencing token.
//!
//! The function imports `s3-lease:lease/lease` and never sees S3's wire
//! protocol: `wac plug --plug s3_lease.wasm` fills the import, giving one
//! component whose only imports are WASI. Routing and the counter's body are
//! plain Rust (`route`, `counter`), tested natively; `handler` is the
//! wasm-only glue.

pub mod counter;
pub mod route;

#[cfg(target_family = "wasm")]
mod handler;

#[cfg(target_family = "wasm")]
mod bindings {
    wit_bindgen::generate!({
        world: "s3-lease-example:http-function/counter",
        // The contract from the repository's `wit/` (package
        // s3-lease:lease and the WASI packages it depends on), then this
        // function's own world, which imports it by name.
        path: ["../../wit", "wit"],
        generate_all,
    });
}

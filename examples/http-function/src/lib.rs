//! A `wasi:http` function built on s3-lease: `POST /counters/{name}/increment`
//! increments a counter object in S3 under the counter's lease, and answers
//! the new value and the lease's fencing token.
//!
//! The function calls s3-lease through `s3-lease-guest` (the repository's
//! `guest/`), which imports `s3-lease:lease/lease`, and never sees S3's
//! wire protocol: `wac plug --plug s3_lease.wasm` fills the import, giving
//! one component whose only imports are WASI. Routing, the replies and the
//! counter's body are plain Rust (`route`, `reply`, `counter`), tested
//! natively; the rest is wasm-only.
//!
//! Two builds from this one source, like s3-lease itself:
//! - default: WASI 0.2, exporting `wasi:http/incoming-handler@0.2`, the
//!   guest crate importing `lease` (`handler`);
//! - `--features wasip3`: WASI 0.3, exporting `wasi:http/handler@0.3.0`,
//!   the guest crate importing `async-lease`, composed with the 0.3
//!   s3-lease component (`handler_p3`).
//!
//! The two glues make the same calls, one blocking, one awaited; what the
//! increment needs besides the calls is shared (`increment`).

pub mod counter;
pub mod reply;
pub mod route;

#[cfg(target_family = "wasm")]
mod increment;

#[cfg(all(target_family = "wasm", not(feature = "wasip3")))]
mod handler;
#[cfg(all(target_family = "wasm", feature = "wasip3"))]
mod handler_p3;

#[cfg(all(target_family = "wasm", not(feature = "wasip3")))]
mod bindings {
    wit_bindgen::generate!({
        world: "s3-lease-example:http-function/counter",
        // The WASI packages from the repository's `wit/`, then this
        // function's own world. The s3-lease import is the guest crate's.
        path: ["../../wit", "wit"],
        generate_all,
    });
}

/// The 0.3 world reads WASI 0.3.0 from the repository's `wit/p3` as well.
/// With both WASI versions in one resolve, wit-bindgen names the 0.3
/// packages' modules with their versions (`http0_3_0`); the aliases give
/// the glue the same paths as the 0.2 build's.
#[cfg(all(target_family = "wasm", feature = "wasip3"))]
mod bindings {
    pub(crate) mod generated {
        wit_bindgen::generate!({
            world: "s3-lease-example:http-function-async/counter-async",
            path: ["../../wit", "../../wit/p3", "wit", "wit/p3"],
            generate_all,
        });
    }
    pub(crate) use generated::{export, wit_future, wit_stream};
    pub(crate) mod wasi {
        pub(crate) use super::generated::wasi::http0_3_0 as http;
    }
    pub(crate) mod exports {
        pub(crate) mod wasi {
            pub(crate) use super::super::generated::exports::wasi::http0_3_0 as http;
        }
    }
}

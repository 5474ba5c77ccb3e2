//! The lease gate: `wasi:http` middleware that forwards a request only
//! while it holds the lock of the request's key (from its path or a
//! header), and answers 503 while someone else holds it. It exports the
//! HTTP handler and imports the handler it wraps, so `wac plug` puts it
//! in front of any function. docs/gate.md describes it whole.
//!
//! Two builds from this one source, like s3-lease itself:
//! - `--features wasip3`: WASI 0.3, the full gate (`handler_p3`): it
//!   forwards a request of its own stamped with the lease
//!   (`s3-lease-token`, `s3-lease-holder`, `s3-lease-lease`), renews from
//!   before the downstream is called until the response body has ended,
//!   cuts forwarding off when the claim runs out, and releases after;
//! - default: WASI 0.2 (`handler`): a 0.2 guest cannot build a request
//!   nor a response outparam, so it passes the originals through and
//!   releases when the downstream's `handle` returns; no stamped headers,
//!   no renewal.
//!
//! Both wait and hold with the gate's machines (`s3_lease_keep::gate`,
//! time passed in), which the simulation drives too. The key rules, the
//! settings, what a wait saw and the gate's own answers are plain Rust
//! (`key`, `settings`, `seen`, `attempts`, `answer`), tested natively. The
//! lease calls, the store's configuration (`Config::from_env`) and the
//! stamped headers' encoding are the guest crate's (`s3-lease-guest`),
//! which the function behind the gate reads them with.

pub mod answer;
pub mod attempts;
pub mod key;
pub mod seen;
pub mod settings;

#[cfg(all(target_family = "wasm", not(feature = "wasip3")))]
mod handler;
#[cfg(all(target_family = "wasm", feature = "wasip3"))]
mod handler_p3;

#[cfg(all(target_family = "wasm", not(feature = "wasip3")))]
mod bindings {
    wit_bindgen::generate!({
        world: "s3-lease-gate:gate/gate",
        // The contract from the repository's `wit/`, then the gate's world.
        path: ["../wit", "wit"],
        generate_all,
    });
}

/// The 0.3 world reads WASI 0.3.0 from the repository's `wit/p3` as well;
/// the aliases give the glue unversioned paths (as in examples/http-function).
#[cfg(all(target_family = "wasm", feature = "wasip3"))]
mod bindings {
    pub(crate) mod generated {
        wit_bindgen::generate!({
            world: "s3-lease-gate:gate-async/gate-async",
            path: ["../wit", "../wit/p3", "wit", "wit/p3"],
            generate_all,
        });
    }
    pub(crate) use generated::{export, wit_future, wit_stream};
    pub(crate) mod wasi {
        pub(crate) use super::generated::wasi::cli0_3_0 as cli;
        pub(crate) use super::generated::wasi::clocks0_3_0 as clocks;
        pub(crate) use super::generated::wasi::http0_3_0 as http;
        pub(crate) use super::generated::wasi::random0_3_0 as random;
    }
    pub(crate) mod exports {
        pub(crate) mod wasi {
            pub(crate) use super::super::generated::exports::wasi::http0_3_0 as http;
        }
    }
}

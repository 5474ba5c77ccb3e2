//! s3-lease: leases, locks and leader election on Amazon S3 conditional writes.
//!
//! The crate is a sans-IO core (the two strategies' state machines in
//! `strategy`, over `protocol`, `lease`, `stores`, `sigv4`, `config` and the
//! rest, run by `driver` for `client` and `elector`) that builds and tests
//! natively, plus, on wasm targets only, the component glue: `component`
//! (the WIT exports) and `transport` (wasi:http).

// The component links no std: its runtime (panic printing, stderr, env) and
// wasi-libc's malloc cost 38 KB of component (docs/size.md), and without it
// the only WASI imports are the ones `transport` calls, all inside the
// `wasi:http/proxy` world. Native builds (tests, `testing`) keep std.
#![cfg_attr(not(any(test, feature = "testing")), no_std)]

#[macro_use]
extern crate alloc;

/// What std's prelude gives other crates: every module `use`s it.
mod prelude {
    pub use alloc::boxed::Box;
    pub use alloc::string::{String, ToString};
    pub use alloc::vec::Vec;
}

// The layers, bottom to top: a module uses lower layers and those named before it in its own.
//  1. leaves: limits, text, http_date, json_out, sigv4 (signing), base64, capability
//     (preflight findings), ready (runs a future that never suspends)
//  2. lock_object: the record a lock object stores, and its state as read
//  3. error: the crate's one error enum, over what its cases carry (layers 1 and 2)
//  4. stores: each store in its own folder (its configuration check, requests, replies and
//     test model) and the registry that turns a store into the protocol's requests and
//     replies, with what it is and does (its profile)
//  5. config: the validated configuration over a store, with its strategy, expiry clock and
//     seal key; lease: Lease, Grant, where a key's object lives
//  6. expiry: when an unreleased lease has expired; seal: leases a caller cannot alter
//  7. protocol: the Operation/Step trait of every state machine, and AcquireOutcome
//  8. strategy::{single_object, epoch}, fenced, preflight, audit (the grant log): operations;
//     driver: runs them
//  9. client (an operation per call, per strategy), elector; wasm only: transport, component
pub mod audit;
pub mod base64;
pub mod capability;
pub mod client;
pub mod config;
pub mod driver;
pub mod elector;
pub mod error;
pub mod expiry;
pub mod fenced;
pub mod http_date;
pub mod json_out;
pub mod lease;
pub mod limits;
pub mod lock_object;
pub mod preflight;
pub mod protocol;
pub mod ready;
pub mod seal;
pub mod sigv4;
pub mod stores;
pub mod strategy;
mod text;

/// Test support shared by the unit tests, the simulation and host-test: the
/// in-memory S3 model and the linearizability checker. Not in the component.
#[cfg(any(test, feature = "testing"))]
pub mod testing;

#[cfg(target_family = "wasm")]
mod component;
#[cfg(target_family = "wasm")]
mod transport;

/// The WASI 0.2 component (the default build): `wit/` alone.
#[cfg(all(target_family = "wasm", not(feature = "wasip3")))]
mod bindings {
    wit_bindgen::generate!({
        world: "s3-lease",
        path: "wit",
        generate_all,
        pub_export_macro: true,
    });
}

/// The WASI 0.3 component (`--features wasip3`): `wit/`, then `wit/p3`
/// with WASI 0.3.0. With both WASI versions in one resolve, wit-bindgen
/// names the packages' modules with their versions (`http0_3_0`); the
/// aliases give the transport the same paths in both builds.
#[cfg(all(target_family = "wasm", feature = "wasip3"))]
mod bindings {
    pub(crate) mod generated {
        wit_bindgen::generate!({
            world: "s3-lease:wasip3/s3-lease-async",
            path: ["wit", "wit/p3"],
            generate_all,
            pub_export_macro: true,
        });
    }
    pub use generated::{export, exports};
    pub mod wasi {
        pub use super::generated::wasi::clocks0_3_0 as clocks;
        pub use super::generated::wasi::http0_3_0 as http;
        pub use super::generated::wasi::random0_3_0 as random;
    }
}

/// A panic in a component traps the instance whatever this does; `abort`
/// (the release profile) already printed nothing.
#[cfg(all(target_family = "wasm", not(any(test, feature = "testing"))))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

#[cfg(all(target_family = "wasm", not(any(test, feature = "testing"))))]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// The canonical ABI's allocator export, which the host calls to pass
/// strings and lists in. With std, wasi-libc exports one over its malloc;
/// wit-bindgen only supplies it on wasip1, so here it goes to ours.
#[cfg(all(target_family = "wasm", not(any(test, feature = "testing"))))]
#[unsafe(export_name = "cabi_realloc")]
unsafe extern "C" fn cabi_realloc(
    old_ptr: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    use alloc::alloc::{alloc, realloc, Layout};
    // SAFETY: the canonical ABI passes a power-of-two `align` and, with a
    // non-zero `old_len`, a block this allocator gave out with that layout.
    let ptr = unsafe {
        if old_len == 0 {
            if new_len == 0 {
                return align as *mut u8;
            }
            alloc(Layout::from_size_align_unchecked(new_len, align))
        } else {
            realloc(
                old_ptr,
                Layout::from_size_align_unchecked(old_len, align),
                new_len,
            )
        }
    };
    if ptr.is_null() {
        core::arch::wasm32::unreachable();
    }
    ptr
}

// `memcpy`, `memcmp` and friends: std would link wasi-libc for them; without
// it they come from the same static library (only the functions used).
#[cfg(all(target_family = "wasm", not(any(test, feature = "testing"))))]
#[link(name = "c")]
extern "C" {}

//! The engine: the compiled component, its instances and their stores,
//! the HTTP they send through, the clock deadlines are judged on and the
//! monotonic clock the component reads. It knows
//! nothing of the crate's API (clients, leases, electors, the crate's
//! error): those stand on it, and it on nothing of theirs.

#[cfg_attr(not(feature = "unstable-raw"), allow(dead_code, unused_imports))]
pub mod bindings;
pub mod clock;
pub(crate) mod compile_cache;
pub mod http;
pub(crate) mod local;
pub mod monotonic;
pub(crate) mod outgoing;
pub(crate) mod own_runtime;
pub(crate) mod precompiled;
#[cfg_attr(not(feature = "unstable-raw"), allow(dead_code))]
pub mod raw;
pub(crate) mod request_counts;
pub(crate) mod runtime;
pub(crate) mod source;
pub(crate) mod state;
pub(crate) mod trace;
pub(crate) mod trusted_file;

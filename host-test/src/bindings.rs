//! The host crate's bindings, under the name the suite has always used.

pub use s3_lease_host::bindings::*;

//! Fixtures for the tests of the composed HTTP function (`tests/`): where
//! the tools and components are, `wac plug`, the servers that run the
//! composed component (`wasmtime serve`, and Node through `jco serve`), and
//! a small HTTP client. This crate also builds the `wasmtime-serve` binary.
//! Nothing here is for users.

pub mod compose;
pub mod http;
pub mod serve;
pub mod tools;

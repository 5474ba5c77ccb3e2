//! Embed s3-lease in a Rust program.
//!
//! - [`Runtime`]: the component (built into this crate, or from a path),
//!   compiled once per process and cached on disk across processes
//!   ([`CompileCache`]), with pooled keep-alive HTTP(S) for its requests.
//! - [`Client`]: the WIT API with Rust types and one [`Error`] enum.
//! - [`LeaseGuard`]: a held lock that renews itself and is released on drop.
//! - [`Elector`]: leader election on a thread, with [`ElectionEvent`]s.
//!
//! ```no_run
//! use s3_lease_host::{Client, Runtime, S3Config, bindings::Options};
//! use std::time::Duration;
//! let runtime = Runtime::new()?;
//! let client = Client::connect(&runtime, &S3Config::from_env("my-bucket")?)?;
//! let options = Options { ttl_ms: 30_000, holder_id: None, metadata: None };
//! let guard = client.lock("nightly-report", &options, Duration::from_secs(60))?;
//! println!("token {}", guard.token());
//! // ... work, passing guard.token() along with every write ...
//! guard.release()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bindings;
mod client;
mod compile_cache;
mod config;
pub mod credentials;
mod elector;
mod error;
mod guard;
pub mod http;
pub mod monotonic;
pub mod raw;
mod runtime;
mod source;
pub mod stats;

/// What [`Client::preflight`] reports.
pub use bindings::{Capability, CapabilityResult, ClockOffset, PreflightReport, Verdict};
pub use client::Client;
pub use compile_cache::{CacheOutcome, CompileCache};
pub use config::S3Config;
pub use credentials::{AwsChain, CredentialsSource, FetchedCredentials, SharedSource};
pub use elector::{ElectionEvent, Elector, ElectorWatcher};
pub use error::Error;
pub use guard::{LeaseGuard, LostReason};
pub use raw::RawInstance;
pub use runtime::{Build, InstanceOptions, LoadReport, Runtime, RuntimeOptions, State};
pub use source::ComponentSource;
pub use stats::{ElectorStats, LatencyHistogram, RequestCounts};

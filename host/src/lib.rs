//! Embed s3-lease in a Rust program: leases, locks, semaphores and leader
//! election on S3 (or DynamoDB, Azure Blob Storage or Google Cloud Storage) conditional writes, the s3-lease
//! WebAssembly component running in wasmtime.
//!
//! - [`Runtime`]: the component (built into this crate, or from a path),
//!   compiled once per process and cached on disk across processes, with
//!   pooled keep-alive HTTP(S) for its requests.
//! - [`StoreConfig`]: the one store the locks live in, from the
//!   environment ([`StoreConfig::from_env`]) or from its builder
//!   ([`S3Builder`], [`DynamoDbBuilder`], [`AzureBlobBuilder`], [`GcsBuilder`]).
//! - [`Client`]: async, on tokio. Its calls run on a few instances of the
//!   component from tokio's blocking threads, so many run at once and none
//!   blocks a task; waits happen between calls.
//! - [`Lease`]: a held lease. It renews itself on its client's scheduler
//!   (one thread of the client's own for all of them, on a small runtime of
//!   its own: renewing goes on whatever runtime the caller uses, or after
//!   the one the client was connected on has ended; [`Client::stats`]),
//!   says when it is lost ([`Lease::lost`], [`Lease::watch`]), refuses its
//!   token once past its safe margin, and is released at once when dropped.
//! - [`Client::close`]: for a service shutting down, releases every lease
//!   the client holds and waits (bounded) for the releases; without it,
//!   leases still held at exit stay live on the store until their ttl runs
//!   out. No drop order or runtime shutdown panics.
//! - [`Elector`]: leader election, its role something async code can
//!   select on.
//! - [`blocking`]: the same for code that is not async.
//!
//! ```no_run
//! use s3_lease_host::{AcquireOptions, Client, Runtime, StoreConfig};
//! use std::time::Duration;
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Runtime::new()?;
//! let client = Client::connect(&runtime, &StoreConfig::from_env("my-bucket")?).await?;
//! let options = AcquireOptions::new(Duration::from_secs(30));
//! let lease = client.acquire("nightly-report", &options, Duration::from_secs(60)).await?;
//! lease.fenced_put("reports/latest.json", b"{}".to_vec(), "application/json").await?;
//! lease.release().await?;
//! # Ok(()) }
//! ```
//!
//! **What is stable.** The types this crate defines are its API: a minor
//! release may add a method, a field to a `#[non_exhaustive]` struct or a
//! case to a `#[non_exhaustive]` enum, and a contract change of the
//! component that only adds cases shows here as such an addition. The
//! generated bindings and wasmtime's types are not part of it: they are
//! public only with the `unstable-raw` feature (tests use it to reach one
//! instance directly), and may change in any release.

mod acquiring;
mod audit;
mod blocking_impl;
mod calls;
mod client;
mod closing;
mod component;
mod config;
pub mod credentials;
mod elector;
mod engine;
mod error;
mod held;
mod keeper;
mod lease;
mod observe;
mod pool;
mod random;
pub mod stats;
mod types;

// The clock every deadline is judged on: public, since a lease's and a
// leader's deadlines are its `Instant`s and a client can be given one.
pub use engine::clock;
// With `unstable-raw`, the engine's other modules at the paths they always
// had. The crate's own code names them through `engine`, so it builds
// without the feature (tests/unstable_paths.rs keeps it so).
#[cfg(feature = "unstable-raw")]
pub use engine::{bindings, http, monotonic, raw};

/// Blocking versions of the client, its leases and its electors.
pub mod blocking {
    pub use crate::blocking_impl::{BlockingSlotGrant, Client, Elector, LeaseGuard};
}

pub use audit::{AuditEnd, AuditEntry, AuditFinding, AuditFindingKind, AuditPruned, AuditReport};
pub use client::{Client, ClientOptions};
pub use closing::CloseReport;
pub use config::{
    AwsKeys, AzureBlobBuilder, AzureCredential, Credential, DynamoDbBuilder, GcsBuilder,
    GcsCredential, S3Builder, StoreConfig,
};
#[cfg(feature = "aws-sdk-config")]
pub use credentials::SdkProvider;
pub use credentials::{AwsChain, CredentialsSource, FetchedCredentials, SharedSource};
pub use elector::{Elector, ElectorWatcher};
pub use engine::compile_cache::{CacheOutcome, CompileCache};
pub use engine::precompiled::{precompile, PrecompiledRefused};
pub use engine::raw::Build;
#[cfg(feature = "unstable-raw")]
pub use engine::raw::RawInstance;
pub use engine::runtime::{LoadReport, Runtime, RuntimeOptions};
pub use engine::source::ComponentSource;
#[cfg(feature = "unstable-raw")]
pub use engine::state::{InstanceOptions, State};
pub use error::{Error, ErrorKind, ErrorStore};
pub use held::{LeaseStatus, LostReason};
pub use lease::{Lease, SlotGrant};
pub use stats::{ClientStats, ElectorStats, LatencyHistogram, RequestCounts};
pub use types::{
    AcquireOptions, Addressing, Capability, CapabilityResult, ClockOffset, Credentials,
    ElectionEvent, ElectorConfig, ExpiryClock, FenceOptions, FencedObject, FencedWrite,
    LeaseRecord, LockState, PreflightReport, Role, SemaphoreState, SlotEntry, SlotOptions,
    StopReason, Strategy, Verdict,
};

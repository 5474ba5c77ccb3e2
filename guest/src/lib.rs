//! # s3-lease-guest
//!
//! For WebAssembly components that import s3-lease (`wac plug` fills the
//! import with the s3-lease component). [`Config`] is the contract's
//! config as a builder with its defaults ([`Config::s3`], [`Config::aws`],
//! `with_*` setters) or read from the environment (`Config::from_env`,
//! the host crate's variables, through `wasi:cli/environment`; a missing
//! one is [`Error::MissingEnv`] naming it). `Client::new` validates it;
//! `Client::try_acquire` (`Option<Held>`), `Client::acquire` (waits up
//! to a `Duration`, else [`Error::Timeout`] naming the holder),
//! `Client::inspect` and `Client::fenced_get`. A `Held` lease gives
//! `token()`, `holder()`, `key()`, `lease()`, `renew()`, `fenced_put()`,
//! `fenced_put_with()`, `fenced_delete()` and `release(self)`, and
//! releases itself on drop when not released. Semaphores and the fair
//! queue: `Client::try_acquire_slot` (a `SlotAttempt`), `acquire_slot`,
//! `inspect_slots`, `leave_queue`, with [`SlotOptions`]. Leader election:
//! `Client::elector` with an [`ElectorConfig`], then `Elector::step` (a
//! typed [`Step`]) and `resign`. Also `Client::set_credential` (a
//! [`Credential`] of the store's kind) and `preflight` (a
//! [`PreflightReport`]). [`Error`] is one `#[non_exhaustive]` enum, the contract's
//! error cases and this crate's. The default build is WASI 0.2 over
//! `s3-lease:lease/lease` (blocking calls); feature `wasip3` is WASI 0.3
//! over `async-lease`: the same names and shapes, each call an `async fn`.
//! [`headers`] carries a lease across an HTTP hop (a gate acquires, the
//! function behind it writes fenced under the grant through
//! `Held::from_forwarded`, which never releases on drop).
//!
//! Only the plain types ([`Config`], [`Lease`], [`Error`], [`headers`])
//! build natively, so their tests run on the host; the client is wasm only.
//!
//! ## Drop
//!
//! A `Held` dropped without `release` (an early return, `?`) is
//! released: on WASI 0.2 at once, by a blocking call; on WASI 0.3, where
//! `drop` cannot await, by a task spawned with wit-bindgen's
//! `spawn_local` on the current component-model task, which runs when that
//! task next waits or after its export returns, before the task ends. Drop
//! one only inside an async export or `wit_bindgen::block_on` there:
//! elsewhere wit-bindgen has no task to spawn on and panics. Either way a
//! failed release is ignored, and the lease lapses after its ttl. Call
//! `release` to know it happened. A lease from `Held::from_forwarded` or
//! kept with `Held::into_lease` is never released on drop.
//!
//! ## Example
//!
//! A counter in S3, raised under its lease (`examples/http-function`).
//! With `wasip3`, every call on the client and the held lease takes
//! `.await`; nothing else changes.
//!
//! ```no_run
//! # #[cfg(all(target_family = "wasm", not(feature = "wasip3")))]
//! # fn main() -> Result<(), s3_lease_guest::Error> {
//! use s3_lease_guest::{Client, Config, Error, Options};
//! use std::time::Duration;
//!
//! let config = Config::from_env()?; // S3LEASE_BUCKET, AWS_ACCESS_KEY_ID, ...
//! let client = Client::new(&config)?;
//! let options = Options::ttl(Duration::from_secs(10)).with_metadata("counter a");
//! let held = match client.acquire_with("counters/a", &options, Duration::from_secs(5)) {
//!     Ok(held) => held,
//!     Err(Error::Timeout { holder, .. }) => {
//!         let by = holder.map(|h| h.holder_id);
//!         println!("still locked by {by:?}: nothing written");
//!         return Ok(());
//!     }
//!     Err(e) => return Err(e),
//! };
//! let object_key = format!("{}counters/a.json", config.key_prefix());
//! let value = match client.fenced_get(&object_key)? {
//!     Some(object) => String::from_utf8_lossy(&object.body).parse().unwrap_or(0),
//!     None => 0u64,
//! } + 1;
//! // S3 refuses this write (Error::Fenced) once a newer token has written.
//! held.fenced_put(&object_key, value.to_string().as_bytes(), "text/plain")?;
//! held.release() // or drop it: released then too
//! # }
//! # #[cfg(not(all(target_family = "wasm", not(feature = "wasip3"))))]
//! # fn main() {}
//! ```
//!
//! The WASI 0.3 build, the same calls awaited:
//!
//! ```no_run
//! # #[cfg(all(target_family = "wasm", feature = "wasip3"))]
//! # async fn run() -> Result<(), s3_lease_guest::Error> {
//! use s3_lease_guest::{Client, Config};
//! use std::time::Duration;
//!
//! let client = Client::new(&Config::from_env()?)?;
//! if let Some(held) = client.try_acquire("jobs/nightly", Duration::from_secs(30)).await? {
//!     held.fenced_put("jobs/nightly.json", b"{\"done\":false}", "application/json")
//!         .await?;
//!     held.release().await?;
//! }
//! # Ok(())
//! # }
//! # fn main() {}
//! ```
//!
//! A leader election, stepped by a timer: the token to write with while
//! leading, `None` otherwise.
//!
//! ```no_run
//! # #[cfg(all(target_family = "wasm", not(feature = "wasip3")))]
//! # fn main() -> Result<(), s3_lease_guest::Error> {
//! use s3_lease_guest::{Client, Config, ElectorConfig, Role};
//!
//! let client = Client::new(&Config::from_env()?)?;
//! let elector = client.elector(&ElectorConfig::new("leader").with_metadata("node-1"))?;
//! let step = elector.step(); // on every tick, at most `step.next_step_in` apart
//! if let Some(e) = &step.last_error {
//!     println!("this attempt failed, the elector keeps trying: {e}");
//! }
//! // Leading only until `step.leading_until` (the monotonic clock), unless
//! // a later step renews it.
//! let token = match &step.role {
//!     Role::Leader(lease) => Some(lease.token),
//!     Role::Follower(_) | Role::Candidate => None,
//! };
//! println!("write with {token:?}");
//! elector.resign() // when shutting down: the next leader need not wait
//! # }
//! # #[cfg(not(all(target_family = "wasm", not(feature = "wasip3"))))]
//! # fn main() {}
//! ```
//!
//! The function behind a lease gate writes under the gate's grant:
//!
//! ```no_run
//! # #[cfg(all(target_family = "wasm", not(feature = "wasip3")))]
//! # fn handle(client: &s3_lease_guest::Client, headers: &[(String, String)])
//! #     -> Result<(), s3_lease_guest::Error> {
//! use s3_lease_guest::{Held, Lease};
//!
//! // `headers`: the request's, names in lowercase.
//! let lease = Lease::from_headers(|name| {
//!     headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
//! })?;
//! let held = Held::from_forwarded(client, lease); // never released on drop
//! held.fenced_put("reports/today.json", b"{}", "application/json")?;
//! # Ok(())
//! # }
//! # fn main() {}
//! ```

pub mod headers;

mod config;
mod elector;
mod error;
mod preflight;
mod slots;
mod types;

// The configuration's public names: the builder, the stores, their
// credentials and the contract's names it takes.
pub use config::*;
pub use elector::{ElectorConfig, ElectorEvent, Role, Step, StopReason};
pub use error::{Error, S3Error};
pub use preflight::{CapabilityResult, ClockOffset, PreflightReport, Verdict};
pub use slots::{SemaphoreState, Slot, SlotOptions};
pub use types::{FenceOptions, FencedObject, FencedWrite, Lease, LockState, Options};

#[cfg(target_family = "wasm")]
mod bindings;
#[cfg(target_family = "wasm")]
mod client;
#[cfg(target_family = "wasm")]
mod convert;
#[cfg(target_family = "wasm")]
pub mod environment;

#[cfg(target_family = "wasm")]
mod calls;

#[cfg(target_family = "wasm")]
pub use client::{Client, Elector, Held, SlotAttempt};

//! The integration suite: the built component, many instances, a real S3
//! server (SeaweedFS started by the fixture, or the `AWS_*` endpoint).
//! One test binary, so one server for the whole run.

mod async_client;
mod audit;
mod azure;
mod bad_input;
mod compat;
mod component_shape;
mod contention;
mod credentials;
mod doc_snippets;
mod dynamodb;
mod elector;
mod epoch_objects;
mod error_paths;
mod fencing;
mod fencing_history;
mod gcs;
mod host_api;
mod interop;
mod keeping;
mod lifecycle;
mod lifecycle_rules;
mod lost_replies;
mod many_keys;
mod preflight;
mod request_counts;
mod retries;
mod rng;
mod s3s_fs;
mod semaphores;
mod silent_network;
mod tracing_events;
mod wasip3;
mod wrong_endpoint;

use host_test::bindings::{Error as LeaseError, Lease, Options, StoreParts};
use host_test::server::{self, Endpoint};
use host_test::{instance::component_path, Harness, Instance};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

pub fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let path = component_path();
        let harness = Harness::load(&path).unwrap_or_else(|e| panic!("{e:#}"));
        // Either build loads (scripts/test.sh runs the core cases on both).
        let build = harness.runtime().build().name();
        eprintln!(
            "integration: the {build} build of the component, {}",
            path.display()
        );
        harness
    })
}

pub fn endpoint() -> &'static Endpoint {
    server::shared()
}

/// A key prefix no other test (or earlier run against the same bucket) uses.
pub fn fresh_prefix(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("it/{test}-{nanos}-{}/", N.fetch_add(1, Ordering::Relaxed))
}

/// An instance whose client is open on `prefix`.
pub fn opened(prefix: &str) -> Instance {
    opened_with(&endpoint().config(prefix))
}

pub fn opened_with(config: &host_test::bindings::Config) -> Instance {
    let mut instance = harness().instance().expect("instantiate");
    instance
        .open(config)
        .expect("no trap")
        .expect("valid config");
    instance
}

pub fn options(ttl_ms: u64) -> Options {
    Options {
        ttl_ms,
        holder_id: None,
        metadata: None,
    }
}

pub fn named(ttl_ms: u64, holder: &str) -> Options {
    Options {
        ttl_ms,
        holder_id: Some(holder.into()),
        metadata: Some(format!("meta of {holder}")),
    }
}

/// [`options`] for the host crate's API.
pub fn acquire_options(ttl_ms: u64) -> s3_lease_host::AcquireOptions {
    s3_lease_host::AcquireOptions::new(std::time::Duration::from_millis(ttl_ms))
}

/// [`named`] for the host crate's API.
pub fn named_options(ttl_ms: u64, holder: &str) -> s3_lease_host::AcquireOptions {
    acquire_options(ttl_ms)
        .holder_id(holder)
        .metadata(format!("meta of {holder}"))
}

/// try-acquire that must not trap or fail.
pub fn try_acquire(i: &mut Instance, key: &str, o: &Options) -> Option<Lease> {
    i.try_acquire(key, o)
        .expect("no trap")
        .unwrap_or_else(|e| panic!("try-acquire failed: {e:?}"))
}

pub fn expect_err<T: std::fmt::Debug>(r: anyhow::Result<Result<T, LeaseError>>) -> LeaseError {
    match r.expect("no trap") {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e,
    }
}

/// Reads the instance's seal key now (creating it in a fresh prefix): its
/// first call that checks a lease does, and a test that counts or faults
/// the requests of the calls after it wants them to be the protocol's
/// alone. A release of a lease no grant returned checks its seal, refused
/// before any request of its own.
pub fn load_seal_key(i: &mut Instance) {
    let nobody = Lease {
        key: "seal-key-warm-up".into(),
        token: 1,
        holder_id: "nobody".into(),
        etag: "\"e\"".into(),
        expires_at_ms: 1,
        acquired_at_ms: 1,
        ttl_ms: 1,
        metadata: String::new(),
        seal: String::new(),
    };
    let refused = expect_err(i.release(&nobody));
    assert!(
        matches!(refused, LeaseError::InvalidArgument(_)),
        "{refused:?}"
    );
    i.hooks.take_requests();
}

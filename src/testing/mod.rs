//! Test support: one in-memory S3 model faithful where locks care, a
//! one-client `Io` over it, and a linearizability checker for the fenced
//! register.

pub mod azure_model;
pub mod dynamodb_model;
pub mod history;
pub mod intercept;
pub mod linearizability;
pub mod model_io;
pub mod racing;
pub mod rng;
pub mod s3_model;
pub mod sigv4_cases;
pub mod sim;
pub mod uri;

/// A write id no other call in this process gets: tests that reuse one id
/// across operations would make an operation "recognise" another's write.
pub fn write_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("test-{:012}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The sealer of clients that share one stored seal key (`seal::stored`),
/// for tests that drive operations without a client.
pub fn sealer(scope: &str) -> crate::seal::Sealer {
    crate::seal::Sealer::stored(scope, &crate::seal::StoredKey::from_bytes([7; 32]))
}

/// A config for tests over the model (no server is contacted).
pub fn raw_config(
    strategy: crate::config::Strategy,
    clock: crate::expiry::ExpiryClock,
) -> crate::config::RawConfig {
    crate::config::RawConfig {
        endpoint: "http://127.0.0.1:9000".into(),
        region: "us-east-1".into(),
        bucket: "b".into(),
        addressing: crate::config::Addressing::Path,
        credentials: crate::sigv4::Credentials {
            access_key_id: "AKID".into(),
            secret_access_key: "secret".into(),
            session_token: None,
        },
        key_prefix: Some("locks/".into()),
        request_timeout_ms: None,
        strategy: Some(strategy),
        expiry_clock: Some(clock),
        preflight: None,
        seal_key: None,
        store: None,
    }
}

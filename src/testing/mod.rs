//! Test support: one in-memory S3 model faithful where locks care, a
//! one-client `Io` over it, and a linearizability checker for the fenced
//! register.

pub mod history;
pub mod intercept;
pub mod linearizability;
pub mod model_io;
pub mod racing;
pub mod rng;
pub mod sigv4_cases;
pub mod sim;
pub mod uri;

/// A reply as a server sends it, for unit tests of how replies are read.
pub fn response(
    status: u16,
    headers: &[(&str, &str)],
    body: &str,
) -> crate::stores::s3::S3Response {
    crate::stores::s3::S3Response {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body: body.as_bytes().to_vec(),
        body_too_large: None,
    }
}

/// The reason of the wrong-endpoint error the driver's check makes of
/// `read` (a reply as the `store`'s translation read it) to `req`, if any,
/// checked to be an `invalid-config` error on `endpoint` that names the
/// test endpoint and holds `not_a` ("not a DynamoDB endpoint").
pub fn wrong_endpoint_reason(
    store: &'static crate::stores::Profile,
    req: &crate::stores::s3::S3Request,
    read: &crate::stores::s3::S3Response,
    not_a: &str,
) -> Option<String> {
    let endpoint = crate::stores::s3::Endpoint {
        store,
        url: "http://127.0.0.1:8888".into(),
    };
    crate::stores::s3::not_the_store(&endpoint, req, read).map(|e| match e {
        crate::error::Error::InvalidConfig { field, reason } => {
            assert_eq!(field, "endpoint");
            assert!(
                reason.starts_with("http://127.0.0.1:8888 answered"),
                "{reason}"
            );
            assert!(reason.contains(not_a), "{reason}");
            reason
        }
        other => panic!("{other:?}"),
    })
}

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

/// The AWS keys of tests over the models (no server checks them).
pub fn test_credentials() -> crate::sigv4::Credentials {
    crate::sigv4::Credentials {
        access_key_id: "AKID".into(),
        secret_access_key: "secret".into(),
        session_token: None,
    }
}

/// The S3 bucket of tests over the model (no server is contacted).
pub fn test_bucket() -> crate::stores::S3Bucket {
    crate::stores::S3Bucket {
        endpoint: "http://127.0.0.1:9000".into(),
        region: "us-east-1".into(),
        bucket: "b".into(),
        addressing: crate::config::Addressing::Path,
        credentials: test_credentials(),
    }
}

/// The S3 bucket of a test's config (`raw_config`'s), to change.
pub fn bucket_of(raw: &mut crate::config::RawConfig) -> &mut crate::stores::S3Bucket {
    match &mut raw.store {
        crate::config::Store::S3(bucket) => bucket,
        other => panic!("a test config of another store: {other:?}"),
    }
}

/// A DynamoDB table of tests over the model (no server is contacted).
pub fn test_table(table: &str) -> crate::stores::DynamoDbTable {
    crate::stores::DynamoDbTable {
        endpoint: "http://127.0.0.1:8000".into(),
        region: "us-east-1".into(),
        table: table.into(),
        credentials: test_credentials(),
    }
}

/// A config for tests over the model (no server is contacted): the test
/// bucket, keys under `locks/`.
pub fn raw_config(
    strategy: crate::config::Strategy,
    clock: crate::expiry::ExpiryClock,
) -> crate::config::RawConfig {
    crate::config::RawConfig {
        key_prefix: Some("locks/".into()),
        strategy: Some(strategy),
        expiry_clock: Some(clock),
        ..crate::config::RawConfig::of(crate::config::Store::S3(test_bucket()))
    }
}

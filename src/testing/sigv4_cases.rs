//! The requests the benchmark signs: the three shapes s3-lease sends most
//! (a lock GET, a conditional PUT with a body, a LIST), with temporary
//! credentials. Shared by the native timing and the wasm one
//! (`benches/sigv4_timing.rs`), so both sign exactly the same bytes.

use crate::sigv4::{self, Credentials, Scope, SigningRequest};

pub const HOST: &str = "my-locks.s3.eu-west-1.amazonaws.com";
pub const REGION: &str = "eu-west-1";
/// 2026-11-22T12:00:00Z.
pub const UNIX_SECONDS: u64 = 1_795_348_800;

pub struct Case {
    pub method: &'static str,
    pub path: &'static str,
    pub query: Vec<(String, String)>,
    /// Besides `host`, `x-amz-date` and `x-amz-security-token`.
    pub headers: Vec<(String, String)>,
    pub payload_sha256_hex: String,
}

pub fn credentials() -> Credentials {
    Credentials {
        access_key_id: "ASIAEXAMPLEBENCH0001".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
        session_token: Some("IQoJb3JpZ2luX2VjEXAMPLE-session-token-for-the-benchmark".into()),
    }
}

pub fn cases() -> Vec<Case> {
    let body = br#"{"expires_at":1795348830.0,"token":42,"holder_id":"vm/530","acquired_at":1795348800.0,"ttl_ms":30000,"write_id":"0123456789abcdef"}"#;
    let body_hash = sigv4::sha256_hex(body);
    vec![
        Case {
            method: "GET",
            path: "/locks/nightly-report",
            query: Vec::new(),
            headers: vec![
                (
                    "if-none-match".into(),
                    "\"25078c6d3a92a26ac5aef0ab6badaca2\"".into(),
                ),
                ("x-amz-content-sha256".into(), sigv4::EMPTY_SHA256.into()),
            ],
            payload_sha256_hex: sigv4::EMPTY_SHA256.into(),
        },
        Case {
            method: "PUT",
            path: "/locks/nightly-report",
            query: Vec::new(),
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("content-length".into(), body.len().to_string()),
                (
                    "if-match".into(),
                    "\"25078c6d3a92a26ac5aef0ab6badaca2\"".into(),
                ),
                ("x-amz-content-sha256".into(), body_hash.clone()),
            ],
            payload_sha256_hex: body_hash,
        },
        Case {
            method: "GET",
            path: "/",
            query: vec![
                ("list-type".into(), "2".into()),
                ("prefix".into(), "locks/nightly-report/".into()),
                (
                    "start-after".into(),
                    "locks/nightly-report/00000000000000000041".into(),
                ),
            ],
            headers: vec![("x-amz-content-sha256".into(), sigv4::EMPTY_SHA256.into())],
            payload_sha256_hex: sigv4::EMPTY_SHA256.into(),
        },
    ]
}

/// Signs `case` with s3-lease's signer; returns the `authorization` value.
pub fn sign(case: &Case, credentials: &Credentials) -> String {
    let request = SigningRequest {
        method: case.method,
        host: HOST,
        path: case.path,
        query: &case.query,
        headers: &case.headers,
        payload_sha256_hex: &case.payload_sha256_hex,
    };
    let scope = Scope {
        region: REGION,
        service: "s3",
        unix_seconds: UNIX_SECONDS,
    };
    sigv4::sign(&request, credentials, scope)
        .into_iter()
        .find(|(name, _)| name == "authorization")
        .map(|(_, value)| value)
        .unwrap_or_default()
}

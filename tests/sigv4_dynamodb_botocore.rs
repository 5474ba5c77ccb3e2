//! Cross-check of the DynamoDB requests `s3_lease::stores::dynamodb::prepare` signs
//! against botocore's own SigV4 signer for DynamoDB (`SigV4Auth`, service
//! `dynamodb`): dynalite checks no signatures, so this is what shows that
//! DynamoDB itself would accept ours.
//!
//! The requests are the calls the protocol and the preflight make (GetItem,
//! conditional PutItem and DeleteItem, DescribeTable), for keys with
//! unicode and reserved characters, with and without a session token, in
//! several regions and at several instants; `scripts/botocore_dynamodb_sigv4.py`
//! signs each at the same pinned time, and the `Authorization` headers must
//! be identical.
//!
//! Needs Python with botocore: `S3LEASE_PYTHON`, else `.venv/bin/python`.

use s3_lease::config::{ClientConfig, RawConfig, Store};
use s3_lease::sigv4::Credentials;
use s3_lease::stores::s3::{Method, S3Request};
use s3_lease::stores::DynamoDbTable;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn python() -> PathBuf {
    match std::env::var_os("S3LEASE_PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"),
    }
}

fn config(region: &str, endpoint: &str, token: Option<&str>) -> ClientConfig {
    ClientConfig::validate(RawConfig::of(Store::DynamoDb(DynamoDbTable {
        endpoint: endpoint.into(),
        region: region.into(),
        table: "locks-table_1.x".into(),
        credentials: Credentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: token.map(str::to_string),
        },
    })))
    .unwrap()
}

fn requests() -> Vec<S3Request> {
    let body = br#"{"expires_at":1700000060.5,"holder":"h \u00e9","token":7}"#.to_vec();
    let mut all = Vec::new();
    for key in ["locks/k", "a b/ü/+=&?#%", "ключ/🔒", "x"] {
        all.push(S3Request::new(Method::Get, key, 1024));
        all.push(S3Request::new(Method::Get, key, 1024).header("if-none-match", "abc"));
        all.push(
            S3Request::new(Method::Put, key, 1024)
                .header("if-none-match", "*")
                .body("application/json", body.clone()),
        );
        all.push(
            S3Request::new(Method::Put, key, 1024)
                .header("if-match", "0123456789abcdef0123456789abcdef")
                .body("application/json", body.clone()),
        );
        all.push(S3Request::new(Method::Delete, key, 1024).header("if-match", "v"));
    }
    all.push(s3_lease::stores::dynamodb::call(
        "DescribeTable",
        &serde_json::json!({ "TableName": "locks-table_1.x" }),
        1024,
    ));
    all
}

#[test]
fn dynamodb_requests_are_signed_exactly_as_botocore_signs_them() {
    let endpoints = [
        ("us-east-1", "https://dynamodb.us-east-1.amazonaws.com"),
        ("eu-west-1", "https://dynamodb.eu-west-1.amazonaws.com"),
        ("ap-southeast-2", "http://127.0.0.1:8000"),
    ];
    let times = [1_700_000_000u64, 1_234_567_890, 4_102_444_799];
    let mut cases = Vec::new();
    let mut ours = Vec::new();
    for (i, (region, endpoint)) in endpoints.iter().enumerate() {
        for (j, token) in [None, Some("FQoGZXIvYXdzE/+=token")].iter().enumerate() {
            let config = config(region, endpoint, *token);
            for (k, req) in requests().iter().enumerate() {
                let unix_seconds = times[(i + j + k) % times.len()];
                let http = s3_lease::config::ClientConfig::prepare(&config, req, unix_seconds);
                let added = [
                    "authorization",
                    "x-amz-date",
                    "x-amz-security-token",
                    "content-length",
                ];
                let headers: Vec<(String, String)> = http
                    .headers
                    .iter()
                    .filter(|(k, _)| !added.contains(&k.as_str()))
                    .cloned()
                    .collect();
                let scheme = if endpoint.starts_with("https") {
                    "https"
                } else {
                    "http"
                };
                cases.push(serde_json::json!({
                    "method": http.method.as_str(),
                    "url": format!("{scheme}://{}{}", http.authority, http.path_and_query),
                    "headers": headers,
                    "body_b64": base64(&http.body),
                    "access_key_id": "AKIDEXAMPLE",
                    "secret_access_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                    "session_token": token,
                    "region": region,
                    "unix_seconds": unix_seconds,
                }));
                let authorization = http
                    .headers
                    .iter()
                    .find(|(k, _)| k == "authorization")
                    .map(|(_, v)| v.clone())
                    .unwrap();
                ours.push(authorization);
            }
        }
    }
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/botocore_dynamodb_sigv4.py");
    let mut child = Command::new(python())
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (scripts/test.sh installs the venv)",
                python().display()
            )
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&cases).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(theirs.len(), ours.len());
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "case {i}: {}", cases[i]);
    }
    println!(
        "{} DynamoDB requests signed as botocore signs them",
        ours.len()
    );
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

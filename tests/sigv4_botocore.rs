//! Cross-check of `s3_lease::sigv4::sign` against botocore's S3 SigV4 signer.
//!
//! `scripts/botocore_sigv4_cases.py` generates a few hundred S3 requests from
//! a fixed seed (unicode and reserved characters in keys and query values,
//! duplicate query keys, bare `?acl`, conditional headers, runs of spaces in
//! header values, binary bodies, session tokens with `/+=`, several regions
//! and timestamps) and signs each with botocore at a pinned time. This test
//! signs the same inputs with our signer and requires the identical
//! `Authorization` header for every case.
//!
//! Needs Python with botocore: `S3LEASE_PYTHON`, else `.venv/bin/python`
//! (installed by `scripts/test.sh`). `S3LEASE_SIGV4_SEED` overrides the seed.

use s3_lease::sigv4::{self, Credentials, Scope, SigningRequest};
use serde::Deserialize;
use std::path::PathBuf;
use std::process::Command;

const MIN_CASES: usize = 300;

#[derive(Debug, Deserialize)]
struct Case {
    index: usize,
    method: String,
    host: String,
    bucket: Option<String>,
    key: String,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    body_b64: String,
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
    region: String,
    unix_seconds: u64,
    url: String,
    amz_date: String,
    content_sha256: String,
    signed_headers: Vec<String>,
    canonical_request: String,
    string_to_sign: String,
    authorization: String,
}

const SETUP_HINT: &str =
    "run `scripts/test.sh` (it installs the Python venv with botocore in .venv), \
     or point S3LEASE_PYTHON at a python that has botocore";

fn python() -> PathBuf {
    match std::env::var_os("S3LEASE_PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"),
    }
}

fn load_cases() -> Vec<Case> {
    let python = python();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/botocore_sigv4_cases.py");
    let mut cmd = Command::new(&python);
    cmd.arg(&script);
    if let Ok(seed) = std::env::var("S3LEASE_SIGV4_SEED") {
        cmd.arg(seed);
    }
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) => panic!(
            "cannot run {} ({e}): Python with botocore is required for this test; {SETUP_HINT}",
            python.display()
        ),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        panic!(
            "{} {} failed ({}):\n{stderr}\n{SETUP_HINT}",
            python.display(),
            script.display(),
            out.status
        );
    }
    eprint!("{stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("the case generator printed invalid JSON ({e}); stderr:\n{stderr}")
    })
}

/// Standard base64 (with `=` padding) to bytes.
fn base64_decode(s: &str) -> Vec<u8> {
    fn value(c: u8) -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("invalid base64 byte {c:#04x}"),
        }
    }
    let data = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(data.len() * 3 / 4);
    for chunk in data.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= value(c) << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        // 4 chars -> 3 bytes, 3 -> 2, 2 -> 1.
        assert!(chunk.len() >= 2, "truncated base64");
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

#[test]
fn base64_decoder_works() {
    assert_eq!(base64_decode(""), b"");
    assert_eq!(base64_decode("Zg=="), b"f");
    assert_eq!(base64_decode("Zm8="), b"fo");
    assert_eq!(base64_decode("Zm9v"), b"foo");
    assert_eq!(base64_decode("Zm9vYmFy"), b"foobar");
    assert_eq!(base64_decode("/+8="), [0xff, 0xef]);
}

/// The path as our client builds it: `/bucket/` (path style) or `/`, then the
/// key encoded once with `/` kept.
fn our_path(case: &Case) -> String {
    let prefix = match &case.bucket {
        Some(bucket) => format!("/{bucket}/"),
        None => "/".to_string(),
    };
    prefix + &sigv4::uri_encode(&case.key, false)
}

fn describe(case: &Case) -> String {
    format!(
        "case {} (seed {}):\n  method: {}\n  url: {}\n  host: {:?}\n  key: {:?}\n  path: {:?}\n  \
         query: {:?}\n  headers: {:?}\n  body: {} bytes\n  access key: {}\n  secret: {}\n  \
         session token: {:?}\n  region: {}\n  unix seconds: {} ({})\n\
         botocore canonical request:\n{}\n---\nbotocore string to sign:\n{}\n---",
        case.index,
        std::env::var("S3LEASE_SIGV4_SEED").unwrap_or_else(|_| "default".into()),
        case.method,
        case.url,
        case.host,
        case.key,
        case.path,
        case.query,
        case.headers,
        base64_decode(&case.body_b64).len(),
        case.access_key_id,
        case.secret_access_key,
        case.session_token,
        case.region,
        case.unix_seconds,
        case.amz_date,
        case.canonical_request,
        case.string_to_sign,
    )
}

/// Compares one case; `Err` describes the first difference found.
fn check(case: &Case) -> Result<(), String> {
    let path = our_path(case);
    if path != case.path {
        return Err(format!("path: ours {path:?}, botocore {:?}", case.path));
    }
    let body = base64_decode(&case.body_b64);
    let payload = sigv4::sha256_hex(&body);
    if payload != case.content_sha256 {
        return Err(format!(
            "payload hash: ours {payload}, botocore {}",
            case.content_sha256
        ));
    }

    let mut headers = vec![("x-amz-content-sha256".to_string(), payload.clone())];
    headers.extend(case.headers.iter().cloned());
    let creds = Credentials {
        access_key_id: case.access_key_id.clone(),
        secret_access_key: case.secret_access_key.clone(),
        session_token: case.session_token.clone(),
    };
    let req = SigningRequest {
        method: &case.method,
        host: &case.host,
        path: &path,
        query: &case.query,
        headers: &headers,
        payload_sha256_hex: &payload,
    };
    let scope = Scope {
        region: &case.region,
        service: "s3",
        unix_seconds: case.unix_seconds,
    };
    let out = sigv4::sign(&req, &creds, scope);
    let get = |name: &str| out.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());

    if get("x-amz-date") != Some(case.amz_date.as_str()) {
        return Err(format!(
            "x-amz-date: ours {:?}, botocore {:?}",
            get("x-amz-date"),
            case.amz_date
        ));
    }
    if get("x-amz-security-token") != case.session_token.as_deref() {
        return Err(format!(
            "x-amz-security-token: ours {:?}, botocore {:?}",
            get("x-amz-security-token"),
            case.session_token
        ));
    }
    let Some(authorization) = get("authorization") else {
        return Err(format!("no authorization header in {out:?}"));
    };
    let expected_signed = format!("SignedHeaders={},", case.signed_headers.join(";"));
    if !authorization.contains(&expected_signed) {
        return Err(format!(
            "signed headers differ: botocore signed {:?}\n  ours:     {authorization}\n  botocore: {}",
            case.signed_headers, case.authorization
        ));
    }
    if authorization != case.authorization {
        return Err(format!(
            "authorization differs\n  ours:     {authorization}\n  botocore: {}",
            case.authorization
        ));
    }
    Ok(())
}

#[test]
fn sign_matches_botocore() {
    let cases = load_cases();
    let mut compared = 0usize;
    let mut failures: Vec<(usize, String)> = Vec::new();
    for case in &cases {
        compared += 1;
        if let Err(why) = check(case) {
            failures.push((case.index, why));
        }
    }
    if let Some((index, why)) = failures.first() {
        let case = cases
            .iter()
            .find(|c| c.index == *index)
            .expect("case by index");
        let others: Vec<usize> = failures.iter().skip(1).map(|(i, _)| *i).collect();
        panic!(
            "{} of {compared} cases differ from botocore; first mismatch: {why}\n{}\nother mismatching cases: {others:?}",
            failures.len(),
            describe(case),
        );
    }
    assert!(
        compared >= MIN_CASES,
        "only {compared} cases compared, expected at least {MIN_CASES}"
    );
    eprintln!("sigv4 matches botocore on {compared} cases");
}

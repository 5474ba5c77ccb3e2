//! Cross-check of every Shared Key signature we make against Microsoft's
//! own signer: `azure-storage-blob`'s `SharedKeyCredentialPolicy`.
//!
//! A seeded generator builds a few hundred of the requests the protocol
//! sends to Azure (lock reads and conditional writes, fenced writes with
//! their `x-ms-meta-*`, tombstones, the preflight's wrong `Content-MD5`,
//! deletes), on random accounts, keys, addressing, dates and blob names
//! (unicode, reserved and percent characters, slashes), and `azure::prepare`
//! signs each as the component would. `scripts/azure_sdk_sign.py` then signs
//! exactly those requests (method, URL, headers) with the SDK's policy, and
//! every `Authorization` must be the same.
//!
//! Needs Python with azure-storage-blob: `S3LEASE_PYTHON`, else
//! `.venv/bin/python` (installed by `scripts/test.sh`).
//! `S3LEASE_SHARED_KEY_SEED` overrides the seed.

use s3_lease::config::{Addressing, ClientConfig, RawConfig, Store};
use s3_lease::expiry::ExpiryClock;
use s3_lease::fenced::{META_LOCK, META_TOKEN, META_TOMBSTONE, META_WRITE};
use s3_lease::stores::azure;
use s3_lease::stores::s3::{HttpRequest, Method, S3Request, PAYLOAD_HASH};
use s3_lease::stores::{AzureBlob, AzureCredential};
use s3_lease::testing::rng::Rng;
use serde::Deserialize;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const CASES: usize = 400;

const SETUP_HINT: &str =
    "run `scripts/test.sh` (it installs the Python venv with azure-storage-blob in .venv), \
     or point S3LEASE_PYTHON at a python that has azure-storage-blob";

fn python() -> PathBuf {
    match std::env::var_os("S3LEASE_PYTHON") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python"),
    }
}

/// Pieces of blob names: plain, and everything that needs encoding.
const NAME_PIECES: &[&str] = &[
    "locks/", "k", "a", "Z9", "-", ".", "_", "~", " ", "é", "ሴ", "😀", "+", "=", "&", "?", "%",
    "%20", "$", "!", "'", "(", ")", "*", ",", ":", "@", ";", "#", "[", "]", "中文", "/", "//",
];

fn pick(rng: &mut Rng, items: &[&'static str]) -> &'static str {
    items[rng.below(items.len() as u64) as usize]
}

fn blob_name(rng: &mut Rng) -> String {
    let mut name = String::new();
    for _ in 0..rng.range(1, 8) {
        name.push_str(pick(rng, NAME_PIECES));
    }
    name
}

fn account_key(rng: &mut Rng) -> String {
    let bytes: Vec<u8> = (0..64).map(|_| rng.next_u64() as u8).collect();
    s3_lease::base64::encode(&bytes)
}

fn config(rng: &mut Rng) -> (ClientConfig, String) {
    let account = pick(rng, &["devstoreaccount1", "acct", "locks2024"]).to_string();
    let key = account_key(rng);
    let path_style = rng.chance(0.5);
    let mut raw: RawConfig = s3_lease::testing::raw_config(
        s3_lease::config::Strategy::SingleObject,
        ExpiryClock::Server,
    );
    let endpoint = if path_style {
        "http://127.0.0.1:10000".into()
    } else {
        format!("https://{account}.blob.core.windows.net")
    };
    let addressing = if path_style {
        Addressing::Path
    } else {
        Addressing::VirtualHosted
    };
    raw.store = Store::AzureBlob(AzureBlob {
        endpoint,
        addressing,
        account,
        container: pick(rng, &["locks", "my-locks-1", "c0n"]).to_string(),
        credential: AzureCredential::shared_key(&key).unwrap(),
    });
    (ClientConfig::validate(raw).unwrap(), key)
}

/// One request of the kinds the protocol sends.
fn request(rng: &mut Rng) -> S3Request {
    let key = blob_name(rng);
    let etag = format!("\"0x8DC{:012X}\"", rng.next_u64() >> 16);
    let body =
        |rng: &mut Rng| -> Vec<u8> { (0..rng.below(300)).map(|_| rng.next_u64() as u8).collect() };
    match rng.below(7) {
        0 => S3Request::new(Method::Get, &key, 1024),
        1 => S3Request::new(Method::Get, &key, 1024).header("if-none-match", &etag),
        2 => S3Request::new(Method::Head, &key, 1024),
        3 => S3Request::new(Method::Put, &key, 1024)
            .header(
                if rng.chance(0.5) {
                    "if-match"
                } else {
                    "if-none-match"
                },
                if rng.chance(0.5) { &etag } else { "*" },
            )
            .body("application/json", body(rng)),
        // A fenced write: the token and the lock in metadata.
        4 => S3Request::new(Method::Put, &key, 1024)
            .header("if-match", &etag)
            .header(META_TOKEN, &rng.next_u64().to_string())
            .header(
                META_LOCK,
                &s3_lease::fenced::lock_identity("single-object", &blob_name(rng)),
            )
            .header(META_TOMBSTONE, pick(rng, &["true", "false"]))
            .header(META_WRITE, &format!("{:016x}", rng.next_u64()))
            .body(
                pick(
                    rng,
                    &["text/plain; charset=utf-8", "application/octet-stream", ""],
                ),
                body(rng),
            ),
        // The preflight's body with a wrong declared hash.
        5 => S3Request::new(Method::Put, &key, 1024)
            .header("if-none-match", "*")
            .header(PAYLOAD_HASH, &s3_lease::sigv4::sha256_hex(b"other bytes"))
            .body("text/plain", body(rng)),
        _ => {
            let req = S3Request::new(Method::Delete, &key, 1024);
            if rng.chance(0.5) {
                req.header("if-match", &etag)
            } else {
                req
            }
        }
    }
}

#[derive(Debug, Deserialize)]
struct Signed {
    authorization: String,
    string_to_sign: String,
}

fn header<'a>(r: &'a HttpRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn every_shared_key_signature_is_the_azure_sdks() {
    let seed: u64 = std::env::var("S3LEASE_SHARED_KEY_SEED")
        .ok()
        .map(|s| s.parse().expect("a number"))
        .unwrap_or(20_240_229);
    let mut rng = Rng::new(seed);
    let mut ours = Vec::new();
    let mut cases = Vec::new();
    for _ in 0..CASES {
        let (config, key) = config(&mut rng);
        let Store::AzureBlob(blob) = config.store.clone() else {
            unreachable!("an Azure config")
        };
        let req = request(&mut rng);
        // Any second from 1970 to 2100.
        let unix_seconds = rng.below(4_102_444_800);
        let http = azure::prepare(config.reach(), &blob, &req, unix_seconds);
        let url = format!("http://{}{}", http.authority, http.path_and_query);
        let headers: Vec<(String, String)> = http
            .headers
            .iter()
            .filter(|(k, _)| k != "authorization")
            .cloned()
            .collect();
        cases.push(serde_json::json!({
            "account": blob.account,
            "key": key,
            "method": http.method.as_str(),
            "url": url,
            "headers": headers,
        }));
        ours.push(http);
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/azure_sdk_sign.py");
    let python = python();
    let mut child = Command::new(&python)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {} ({e}); {SETUP_HINT}", python.display()));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&cases).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} failed ({}):\n{stderr}\n{SETUP_HINT}",
        script.display(),
        out.status
    );
    let signed: Vec<Signed> = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("the signer printed invalid JSON ({e}); stderr:\n{stderr}"));
    assert_eq!(signed.len(), CASES);
    let mut with_metadata = 0;
    let mut with_md5 = 0;
    for (i, (http, sdk)) in ours.iter().zip(&signed).enumerate() {
        let ours = header(http, "authorization").unwrap();
        assert_eq!(
            ours,
            sdk.authorization,
            "case {i} (seed {seed}): {} {}\nthe SDK signed:\n{}\n---\nheaders: {:?}",
            http.method.as_str(),
            http.path_and_query,
            sdk.string_to_sign,
            http.headers
        );
        with_metadata += usize::from(header(http, "x-ms-meta-s3lease_token").is_some());
        with_md5 += usize::from(header(http, "content-md5").is_some());
    }
    // The generator reached every kind of request.
    assert!(
        with_metadata > 20 && with_md5 > 20,
        "{with_metadata} {with_md5}"
    );
}

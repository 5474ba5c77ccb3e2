//! The stored formats the documents show are the ones the code writes and
//! reads. A block whose fence is preceded by `<!-- checked: NAME -->` is
//! compared with what the core produces for the inputs its prose names
//! (the inputs are below, one function per NAME):
//!
//! - a one-line block, byte for byte (the lock objects, as stored);
//! - a block spread over lines, as JSON (the same fields and values);
//! - a `text` block of requests, line for line.
//!
//! `S3LEASE_PRINT_FORMATS=1 cargo test --features testing --test
//! doc_formats -- --nocapture` prints every block as the code has it now,
//! to paste into a document after a deliberate change of format.
//! The lease JSON (`lease`, in docs/command-line.md) is printed by the
//! command line: `cli/tests/cli/formats.rs` checks it against the binary.

#[path = "support/documents.rs"]
mod documents;

use s3_lease::client::ClientCore;
use s3_lease::config::{Addressing, ClientConfig, RawConfig, Store, Strategy};
use s3_lease::lease::{Grant, Lease};
use s3_lease::lock_object::semaphore::SemaphoreRecord;
use s3_lease::lock_object::LockRecord;
use s3_lease::protocol::AcquireOutcome;
use s3_lease::ready::Ready;
use s3_lease::sigv4::Credentials;
use s3_lease::stores::s3::model::S3Model;
use s3_lease::stores::s3::{HttpRequest, Method, S3Request};
use s3_lease::stores::{
    AzureBlob, AzureCredential, DynamoDbTable, GcsBucket, GcsCredential, S3Bucket,
};
use s3_lease::testing::model_io::ModelIo;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The inputs the documents' examples name.
const NOW_MS: u64 = 1_795_374_651_533;
const KEY: &str = "jobs/nightly";
const HOLDER: &str = "node-1";
const TTL_MS: u64 = 30_000;
const METADATA: &str = "10.0.0.7:8080";
/// Each write's id is the random number drawn for it, in hex.
const GRANT_WRITE: u64 = 0x9f2c_41d0_7a3b_e815;
const RENEW_WRITE: u64 = 0x3c9e_1f0a_7b2d_4e86;
const RELEASE_WRITE: u64 = 0xd07a_3be8_159f_2c41;
/// The renew 10 s after the grant, the release 5 s after the renew.
const RENEW_AFTER_MS: u64 = 10_000;
const RELEASE_AFTER_MS: u64 = 5_000;
/// The checked blocks found elsewhere: the command line's own test has
/// the binary that prints them.
const CHECKED_ELSEWHERE: &[&str] = &["lease"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fenced block with a `<!-- checked: NAME -->` line before it.
struct Checked {
    place: String,
    name: String,
    body: String,
}

fn checked_blocks(document: &Path) -> Vec<Checked> {
    let text = fs::read_to_string(document).expect("a readable document");
    let name = document
        .strip_prefix(root())
        .unwrap_or(document)
        .display()
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(marked) = line
            .trim()
            .strip_prefix("<!-- checked: ")
            .and_then(|m| m.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.get(i + 1).map_or("", |l| l.trim());
        assert!(
            fence.starts_with("```"),
            "{name}:{}: `<!-- checked: {marked} -->` must be the line before a fence",
            i + 1
        );
        let end = lines[i + 2..]
            .iter()
            .position(|l| l.trim() == "```")
            .map(|n| i + 2 + n)
            .unwrap_or_else(|| panic!("{name}:{}: an unclosed fence", i + 2));
        found.push(Checked {
            place: format!("{name}:{}", i + 2),
            name: marked.to_string(),
            body: lines[i + 2..end].join("\n"),
        });
    }
    found
}

fn aws_credentials() -> Credentials {
    Credentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "secret".into(),
        session_token: None,
    }
}

/// An S3 bucket's config, every shared setting at its default (no prefix).
fn s3_raw(endpoint: &str, addressing: Addressing) -> RawConfig {
    RawConfig::of(Store::S3(S3Bucket {
        endpoint: endpoint.into(),
        region: "us-east-1".into(),
        bucket: "locks".into(),
        addressing,
        credentials: aws_credentials(),
    }))
}

fn s3_config(strategy: Strategy) -> ClientConfig {
    let mut raw = s3_raw("http://127.0.0.1:9000", Addressing::Path);
    raw.strategy = Some(strategy);
    ClientConfig::validate(raw).unwrap()
}

/// A client of an empty S3 model at `NOW_MS` whose seal key exists, so
/// the next random number drawn is the next write's id.
fn sealed(strategy: Strategy) -> (ClientCore, ModelIo) {
    let mut c = ClientCore::new(s3_config(strategy));
    let mut io = ModelIo::of(S3Model::new(NOW_MS));
    let object_key = c.object_key(KEY).unwrap();
    c.lock_seal(&mut io, &object_key).ready().unwrap();
    io.take_requests();
    (c, io)
}

fn grant() -> Grant {
    Grant::new(TTL_MS, HOLDER.into(), METADATA.into()).unwrap()
}

fn granted(c: &mut ClientCore, io: &mut ModelIo) -> Lease {
    io.random = GRANT_WRITE;
    match c.try_acquire(io, KEY, &grant()).ready().unwrap() {
        AcquireOutcome::Granted(lease) => lease,
        other => panic!("not granted: {other:?}"),
    }
}

fn body_of(io: &ModelIo, object_key: &str) -> String {
    let object = &io.store.objects[object_key];
    assert_eq!(object.content_type, "application/json", "{object_key}");
    String::from_utf8(object.body.clone()).unwrap()
}

/// The lock object after a grant, a renew and a release.
fn lock_objects() -> [String; 3] {
    let (mut c, mut io) = sealed(Strategy::SingleObject);
    let lease = granted(&mut c, &mut io);
    let grant = body_of(&io, KEY);
    io.advance(RENEW_AFTER_MS);
    io.random = RENEW_WRITE;
    let lease = c.rewrite(&mut io, lease, false).ready().unwrap();
    let renew = body_of(&io, KEY);
    io.advance(RELEASE_AFTER_MS);
    io.random = RELEASE_WRITE;
    c.rewrite(&mut io, lease, true).ready().unwrap();
    [grant, renew, body_of(&io, KEY)]
}

fn epoch_object() -> String {
    let (mut c, mut io) = sealed(Strategy::EpochObjects);
    granted(&mut c, &mut io);
    body_of(&io, &format!("{KEY}/epoch-00000000000000000001.json"))
}

/// The seal key's object, its 256 random bits shown as a placeholder.
fn seal_key_object() -> String {
    let (_, io) = sealed(Strategy::SingleObject);
    let mut object: Value = serde_json::from_str(&body_of(&io, ".s3-lease-seal-key")).unwrap();
    let key = object["seal_key"].as_str().unwrap();
    assert!(key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()));
    object["seal_key"] = "<64 hex digits>".into();
    object.to_string()
}

/// The requests of a first grant (its read, answered 404, the key's token
/// floor on an object store, and its create), as each store gets them.
/// Signatures and dates left out.
fn requests() -> String {
    let (mut c, mut io) = sealed(Strategy::SingleObject);
    granted(&mut c, &mut io);
    let sent: Vec<S3Request> = io.take_requests();
    assert_eq!(
        sent.iter().map(|r| r.method).collect::<Vec<_>>(),
        [Method::Get, Method::Put, Method::Put]
    );
    // DynamoDB keeps no floor: its item outlives a release, and no rule
    // deletes it.
    let is_floor = |r: &S3Request| r.object_key.contains(s3_lease::lease::FLOOR_DIR);
    assert!(is_floor(&sent[1]) && !is_floor(&sent[2]));
    let aws = |addressing| {
        ClientConfig::validate(s3_raw("https://s3.us-east-1.amazonaws.com", addressing)).unwrap()
    };
    let azure = ClientConfig::validate(RawConfig::of(Store::AzureBlob(AzureBlob {
        endpoint: "https://myaccount.blob.core.windows.net".into(),
        addressing: Addressing::VirtualHosted,
        account: "myaccount".into(),
        container: "locks".into(),
        credential: AzureCredential::shared_key("a2V5").unwrap(),
    })))
    .unwrap();
    let gcs = ClientConfig::validate(RawConfig::of(Store::Gcs(GcsBucket {
        endpoint: "https://storage.googleapis.com".into(),
        bucket: "locks".into(),
        credential: GcsCredential::Anonymous,
    })))
    .unwrap();
    let dynamodb = ClientConfig::validate(RawConfig::of(Store::DynamoDb(DynamoDbTable {
        endpoint: "https://dynamodb.us-east-1.amazonaws.com".into(),
        region: "us-east-1".into(),
        table: "locks".into(),
        credentials: aws_credentials(),
    })))
    .unwrap();
    let stores = [
        ("S3, path-style", aws(Addressing::Path)),
        ("S3, virtual-hosted", aws(Addressing::VirtualHosted)),
        ("Azure Blob Storage", azure),
        ("Google Cloud Storage", gcs),
        ("DynamoDB", dynamodb),
    ];
    let mut out = Vec::new();
    for (name, config) in stores {
        out.push(format!("{name}:"));
        let dynamodb = name == "DynamoDB";
        for request in sent.iter().filter(|r| !(dynamodb && is_floor(r))) {
            let http = s3_lease::config::ClientConfig::prepare(&config, request, NOW_MS / 1000);
            out.extend(request_lines(&http));
        }
    }
    out.join("\n")
}

/// A request as the documents show it: its line, the headers a lock
/// depends on, and a body that is not the lock object's bytes.
fn request_lines(http: &HttpRequest) -> Vec<String> {
    let mut lines = vec![format!(
        "  {} https://{}{}",
        http.method.as_str(),
        http.authority,
        http.path_and_query
    )];
    const SHOWN: &[&str] = &[
        "if-match",
        "if-none-match",
        "content-type",
        "x-ms-blob-type",
        "x-amz-target",
    ];
    for (name, value) in &http.headers {
        if SHOWN.contains(&name.to_ascii_lowercase().as_str()) {
            let value = match value.split_once("; boundary=") {
                Some((kind, _)) => format!("{kind}; boundary=…"),
                None => value.clone(),
            };
            lines.push(format!("      {name}: {value}"));
        }
    }
    let body = String::from_utf8_lossy(&http.body);
    if http.authority.starts_with("dynamodb.") {
        // The call, the item in a block of its own.
        let mut call: Value = serde_json::from_slice(&http.body).unwrap();
        if let Some(item) = call.get_mut("Item") {
            *item = "(the item below)".into();
        }
        lines.push(format!("      {call}"));
    } else if let Some(content_type) = http
        .headers
        .iter()
        .find(|(k, _)| k == "content-type")
        .and_then(|(_, v)| v.strip_prefix("multipart/related; boundary="))
    {
        // GCS: the object's resource, then its bytes.
        let delimiter = format!("--{content_type}");
        for (n, part) in body.split(delimiter.as_str()).skip(1).enumerate() {
            let Some((head, bytes)) = part.split_once("\r\n\r\n") else {
                continue;
            };
            let head = head.trim().replace("\r\n", ", ");
            let shown = if bytes.contains("\"expires_at\"") {
                "(the lock object)"
            } else if bytes.contains("\"next\"") {
                "(the token floor)"
            } else {
                bytes.trim()
            };
            lines.push(format!("      part {}: {head}: {shown}", n + 1));
        }
    }
    lines
}

/// The DynamoDB item a first grant writes, as its PutItem sends it.
fn dynamodb_item() -> Value {
    let [grant, ..] = lock_objects();
    s3_lease::stores::dynamodb::encode_item(KEY, grant.as_bytes())
}

/// The blocks of what the code writes, by name.
const WRITTEN: &[&str] = &[
    "lock-object-grant",
    "lock-object-renew",
    "lock-object-release",
    "epoch-object",
    "seal-key-object",
    "requests",
    "dynamodb-item",
];

/// What each name's block must be.
fn expected(name: &str) -> Option<String> {
    let [grant, renew, release] = lock_objects();
    Some(match name {
        "lock-object-grant" => grant,
        "lock-object-renew" => renew,
        "lock-object-release" => release,
        "epoch-object" => epoch_object(),
        "seal-key-object" => seal_key_object(),
        "requests" => requests(),
        "dynamodb-item" => serde_json::to_string_pretty(&dynamodb_item()).unwrap(),
        _ => return None,
    })
}

/// Blocks the reader is shown as read, not written: each must read as
/// the prose says.
fn check_read(name: &str, body: &str) -> Option<Result<(), String>> {
    Some(match name {
        "lock-object-plain" => {
            let r = LockRecord::from_json(body.as_bytes()).map_err(|e| e.to_string());
            r.and_then(|r| {
                let fields: Value = serde_json::from_str(body).unwrap();
                let names: Vec<&String> = fields.as_object().unwrap().keys().collect();
                if names != ["expires_at", "token"] {
                    return Err(format!("a plain client writes two fields, not {names:?}"));
                }
                if r.ttl_ms != 0 || r.renewed_at_ms != 0 || r.expires_at_ms == 0 {
                    return Err(format!("read as {r:?}"));
                }
                Ok(())
            })
        }
        // A semaphore's object, spread out: it reads as a semaphore, and
        // what the code writes for that record has the same fields.
        "semaphore-object" => match SemaphoreRecord::from_json(body.as_bytes()) {
            Some(Ok(record)) => {
                let written: Value = serde_json::from_slice(&record.to_json()).unwrap();
                let shown: Value = serde_json::from_str(body).unwrap();
                if written == shown {
                    Ok(())
                } else {
                    Err(format!("the code writes {written}"))
                }
            }
            other => Err(format!("{other:?}")),
        },
        _ => return None,
    })
}

fn same(shown: &str, expected: &str) -> bool {
    if !shown.contains('\n') {
        return shown.trim() == expected;
    }
    match (
        serde_json::from_str::<Value>(shown),
        serde_json::from_str::<Value>(expected),
    ) {
        (Ok(a), Ok(b)) => a == b,
        // Text: line for line, trailing space aside.
        _ => shown.lines().map(str::trim_end).eq(expected.lines()),
    }
}

#[test]
fn every_checked_block_is_what_the_code_writes_and_reads() {
    let mut problems = Vec::new();
    let mut seen = BTreeMap::new();
    if std::env::var_os("S3LEASE_PRINT_FORMATS").is_some() {
        for name in WRITTEN {
            println!("<!-- checked: {name} -->\n{}\n", expected(name).unwrap());
        }
    }
    for document in documents::documents(&root()) {
        for block in checked_blocks(&document) {
            *seen.entry(block.name.clone()).or_insert(0) += 1;
            if CHECKED_ELSEWHERE.contains(&block.name.as_str()) {
                continue;
            }
            if let Some(expected) = expected(&block.name) {
                if !same(&block.body, &expected) {
                    problems.push(format!(
                        "{} ({}): the code writes\n{expected}\nnot\n{}",
                        block.place, block.name, block.body
                    ));
                }
            } else if let Some(result) = check_read(&block.name, &block.body) {
                if let Err(e) = result {
                    problems.push(format!("{} ({}): {e}", block.place, block.name));
                }
            } else {
                problems.push(format!("{}: no check named {:?}", block.place, block.name));
            }
        }
    }
    // Every check has its block: a marker lost in an edit is noticed.
    for name in [
        "lock-object-grant",
        "lock-object-renew",
        "lock-object-release",
        "lock-object-plain",
        "epoch-object",
        "seal-key-object",
        "requests",
        "dynamodb-item",
        "semaphore-object",
        "lease",
    ] {
        if !seen.contains_key(name) {
            problems.push(format!("no document has a block checked as {name:?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// The examples' record agrees with itself as the format requires:
/// `expires_at` is `renewed_at` plus `ttl_ms`, on every write.
#[test]
fn the_examples_agree_as_the_format_requires() {
    let [grant, renew, release] = lock_objects();
    for (body, renewed_at) in [
        (&grant, NOW_MS),
        (&renew, NOW_MS + RENEW_AFTER_MS),
        (&release, NOW_MS + RENEW_AFTER_MS + RELEASE_AFTER_MS),
    ] {
        let r = LockRecord::from_json(body.as_bytes()).unwrap();
        assert_eq!(r.renewed_at_ms, renewed_at, "{body}");
        if r.expires_at_ms != 0 {
            assert_eq!(r.expires_at_ms, r.renewed_at_ms + r.ttl_ms, "{body}");
        }
        assert_eq!((r.token, r.acquired_at_ms), (1, NOW_MS), "{body}");
    }
}

//! `s3-lease --store dynamodb --table T`: processes take turns on a key in
//! a DynamoDB table (dynalite), `status` and `preflight` read the table, and
//! what only S3 can do is refused with exit 78 before any request.

use crate::support::{code, text, Scene};
use crate::turns::turns_on_a_fresh_key;
use host_test::dynalite;
use std::process::Command;

/// `s3-lease ARGS` on `table`, with the scene's prefix and cache.
fn on_table(scene: &Scene, table: &str, args: &[&str]) -> Command {
    let dynamo = dynalite::shared();
    scene.on_store(
        args,
        &[
            ("S3LEASE_STORE", "dynamodb"),
            ("S3LEASE_TABLE", table),
            ("AWS_ENDPOINT_URL_DYNAMODB", &dynamo.url),
            ("AWS_ACCESS_KEY_ID", &dynamo.access_key_id),
            ("AWS_SECRET_ACCESS_KEY", &dynamo.secret_access_key),
        ],
    )
}

#[test]
fn processes_take_turns_on_a_dynamodb_key_without_overlap_and_with_tokens_one_to_n() {
    let scene = Scene::new("dynamodb-turns");
    let table = dynalite::shared().fresh_table("cli-turns").unwrap();
    turns_on_a_fresh_key(&scene, 3, 4, |args| on_table(&scene, &table, args));
}

#[test]
fn the_preflight_checks_the_table_and_what_only_s3_does_is_refused() {
    let scene = Scene::new("dynamodb-refusals");
    let table = dynalite::shared().fresh_table("cli-preflight").unwrap();
    let out = on_table(&scene, &table, &["--json", "preflight"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdict = |name: &str| {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["capability"] == name)
            .map(|r| r["verdict"].as_str().unwrap().to_string())
    };
    assert_eq!(
        verdict("table-key-schema").as_deref(),
        Some("pass"),
        "{report}"
    );
    assert_eq!(verdict("if-match-put").as_deref(), Some("pass"), "{report}");
    assert_eq!(
        verdict("payload-hash"),
        None,
        "not a DynamoDB capability: {report}"
    );

    let refused = |args: &[&str], says: &str| {
        let out = on_table(&scene, &table, args).output().unwrap();
        assert_eq!(code(&out), 78, "{args:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    };
    refused(&["fenced", "get", "data"], "DynamoDB table");
    refused(
        &["--strategy", "epoch-objects", "status", "k"],
        "single-object",
    );
    refused(&["--expiry-clock", "server", "status", "k"], "observed");
    let out = on_table(&scene, &table, &["status", "k"])
        .env_remove("S3LEASE_TABLE")
        .output()
        .unwrap();
    assert_eq!(code(&out), 78, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--table"),
        "{}",
        text(&out.stderr)
    );
    let out = on_table(&scene, "no-such-table", &["status", "k"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 78, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no such table `") && text(&out.stderr).contains("(DynamoDB)"),
        "{}",
        text(&out.stderr)
    );
}

/// A loopback proxy in front of dynalite that passes everything and counts
/// the DynamoDB calls (`X-Amz-Target`) clients send through it.
struct CountingProxy {
    url: String,
    calls: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl CountingProxy {
    fn start(upstream: &str) -> CountingProxy {
        use std::io::{Read, Write};
        use std::net::{TcpListener, TcpStream};
        let upstream = upstream.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = calls.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let (mut c_in, mut s_out) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (mut s_in, mut c_out) = (server, client);
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 64 * 1024];
                    while let Ok(n) = c_in.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let chunk = String::from_utf8_lossy(&buf[..n]);
                        for part in chunk.split("DynamoDB_20120810.").skip(1) {
                            let call: String = part
                                .chars()
                                .take_while(char::is_ascii_alphanumeric)
                                .collect();
                            seen.lock().unwrap().push(call);
                        }
                        if s_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = s_out.shutdown(std::net::Shutdown::Write);
                });
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut s_in, &mut c_out);
                    let _ = c_out.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        CountingProxy { url, calls }
    }

    /// The calls seen since the last take.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

#[test]
fn status_reads_once_a_dynamodb_lease_holder_shows_as_absent_and_errors_name_dynamodb() {
    let scene = Scene::new("dynamodb-details");
    let table = dynalite::shared().fresh_table("cli-details").unwrap();
    let proxy = CountingProxy::start(&dynalite::shared().url);
    let through_proxy = |args: &[&str]| {
        let mut c = on_table(&scene, &table, args);
        c.env("AWS_ENDPOINT_URL_DYNAMODB", &proxy.url);
        c.output().unwrap()
    };

    // A plain lock: one consistent GetItem (S3's second, conditional read
    // is of no use on DynamoDB). A key never locked: one too.
    let out = on_table(
        &scene,
        &table,
        &["acquire", "held", "--holder", "h", "--ttl", "60s"],
    )
    .output()
    .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    for key in ["held", "never"] {
        proxy.take();
        let out = through_proxy(&["--json", "status", key]);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        assert_eq!(proxy.take(), ["GetItem"], "status {key}");
    }

    // An item of the dynamodb-lease design: no lease body, so no holder and no token.
    let expiry = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 60;
    let admin = dynalite::shared().admin(&table).unwrap();
    let put = admin
        .send(s3_lease::stores::dynamodb::call(
            "PutItem",
            &serde_json::json!({
                "TableName": table,
                "Item": {
                    "key": {"S": format!("{}dynamodb-lease", scene.prefix)},
                    "lease_version": {"S": "a-version-of-dynamodb-lease"},
                    "lease_expiry": {"N": expiry.to_string()},
                },
            }),
            64 * 1024,
        ))
        .unwrap();
    assert_eq!(put.status, 200, "{}", put.s3_error());
    let out = on_table(&scene, &table, &["--json", "status", "dynamodb-lease"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status[0]["live"], true, "{status}");
    assert_eq!(status[0]["holder_id"], serde_json::Value::Null, "{status}");
    assert_eq!(status[0]["token"], serde_json::Value::Null, "{status}");
    let out = on_table(&scene, &table, &["status", "dynamodb-lease"])
        .output()
        .unwrap();
    let table_out = text(&out.stdout);
    let row = table_out.lines().nth(1).unwrap_or_default();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells[..4],
        ["dynamodb-lease", "-", "-", "yes"],
        "{table_out}"
    );
    let out = on_table(&scene, &table, &["acquire", "dynamodb-lease"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 75, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("held by a client that records no holder and no token"),
        "{}",
        text(&out.stderr)
    );

    // A store's error names the store in use.
    let wrong = crate::exit_codes::wrongly_keyed_table();
    let out = on_table(&scene, &wrong, &["status", "k"]).output().unwrap();
    assert_eq!(code(&out), 69, "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("DynamoDB error: 400 ValidationException"),
        "{stderr}"
    );
    // The word, not the letters: a request id can hold "S3".
    assert!(
        !stderr
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| word == "S3"),
        "{stderr}"
    );
}

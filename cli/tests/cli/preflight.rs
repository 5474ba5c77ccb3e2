//! `s3-lease preflight` and `--check-store`: SeaweedFS passes; s3s-fs (which
//! ignores DELETE `If-Match`) fails with exit 81, and no lock is taken on it.

use crate::support::{code, text, Scene};
use host_test::aws_fakes::http::{self, Request, Response};
use host_test::s3s_fs::{self, S3sFs};
use host_test::server::Endpoint;
use host_test::server::SeaweedFs;
use serde_json::Value;

const CAPABILITIES: [&str; 11] = [
    "if-none-match-existing",
    "if-match-put",
    "if-match-missing-key",
    "if-match-delete",
    "server-dates",
    "list-start-after",
    "conditional-get",
    "payload-hash",
    "clock-offset",
    "concurrent-create",
    "concurrent-update",
];

fn verdict<'a>(report: &'a Value, capability: &str) -> &'a str {
    report["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["capability"] == capability)
        .unwrap_or_else(|| panic!("no {capability} in {report}"))["verdict"]
        .as_str()
        .expect("verdict")
}

#[test]
fn seaweedfs_passes_the_preflight_as_a_table_and_as_json() {
    let scene = Scene::new("preflight-ok");
    let out = scene.run(&["--json", "preflight"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["config_safe"], true, "{report}");
    let names: Vec<&str> = report["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["capability"].as_str().expect("name"))
        .collect();
    assert_eq!(names, CAPABILITIES, "{report}");
    for needed in [
        "if-none-match-existing",
        "if-match-put",
        "if-match-missing-key",
    ] {
        assert_eq!(verdict(&report, needed), "pass", "{report}");
    }
    assert!(report["requests"].as_u64().unwrap_or(0) >= 70, "{report}");
    for race in ["concurrent-create", "concurrent-update"] {
        assert_eq!(verdict(&report, race), "pass", "{report}");
    }
    assert!(
        report["safe_strategies"]
            .as_array()
            .is_some_and(|s| s.contains(&Value::from("single-object"))),
        "{report}"
    );

    let out = scene.run(&["preflight"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let table = text(&out.stdout);
    println!("s3-lease preflight on SeaweedFS:\n{table}");
    assert!(table.starts_with("CAPABILITY"), "{table}");
    assert!(table.contains("this configuration:  safe"), "{table}");

    // A safe store changes nothing for --check-store.
    let out = scene.run(&["--check-store", "run", "k", "--", "true"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
}

#[test]
fn s3s_fs_fails_the_preflight_and_check_store_takes_no_lock_on_it() {
    let bin = s3s_fs::binary();
    if !bin.exists() {
        let why = format!("s3s-fs is not installed at {}", bin.display());
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "{why}; under CI=true it must run"
        );
        eprintln!("\n!!!!!!!! SKIPPED the s3s-fs command-line test: {why} !!!!!!!!\n");
        return;
    }
    let server = S3sFs::start().unwrap_or_else(|e| panic!("{e:#}"));
    let scene = Scene::on(server.endpoint.clone(), "preflight-s3s");

    let out = scene.run(&["--json", "preflight"]);
    assert_eq!(code(&out), 81, "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["config_safe"], false, "{report}");
    assert_eq!(verdict(&report, "if-match-delete"), "fail", "{report}");
    let error: Value = serde_json::from_slice(&out.stderr).expect("JSON error");
    assert_eq!(error["exit_code"], 81, "{error}");

    let out = scene.run(&["preflight"]);
    assert_eq!(code(&out), 81, "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    println!(
        "s3-lease preflight on s3s-fs:\n{}{stderr}",
        text(&out.stdout)
    );
    assert!(stderr.contains("if-match-delete fail"), "{stderr}");

    // --check-store: the command never starts, and nothing is locked.
    let ran = scene.path("ran");
    let touch = format!("touch {}", ran.display());
    let out = scene.run(&["--check-store", "run", "k", "--", "sh", "-c", &touch]);
    assert_eq!(code(&out), 81, "{}", text(&out.stderr));
    assert!(!ran.exists(), "the command ran on an unsafe store");
    let out = scene.run(&["--check-store", "acquire", "k"]);
    assert_eq!(code(&out), 81, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("the store's preflight failed"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(scene.status("k")["live"], false);
    // Nor a semaphore's slot, fair or not.
    let out = scene.run(&[
        "--check-store",
        "run",
        "s",
        "--limit",
        "2",
        "--fair",
        "--",
        "sh",
        "-c",
        &touch,
    ]);
    assert_eq!(code(&out), 81, "{}", text(&out.stderr));
    assert!(
        !ran.exists(),
        "the command ran in a slot on an unsafe store"
    );
    let out = scene.run(&["--check-store", "acquire", "s", "--limit", "2"]);
    assert_eq!(code(&out), 81, "{}", text(&out.stderr));
    assert_eq!(scene.status("s")["live"], false);
}

/// A store that creates a missing bucket on the first PUT (SeaweedFS as
/// `weed mini` runs by default): the preflight must find the bucket
/// missing (exit 78), not create it by probing and call the store safe.
#[test]
fn the_preflight_finds_a_missing_bucket_before_writing_anything() {
    // The suite's compile cache is warmed on its shared store first.
    let _warm = Scene::new("preflight-missing-warm");
    let server = SeaweedFs::start_creating_buckets().unwrap_or_else(|e| panic!("{e:#}"));
    let mut endpoint = server.endpoint.clone();
    endpoint.bucket = "s3lease-never-created".into();
    let scene = Scene::on(endpoint, "preflight-missing");
    let out = scene.run(&["preflight"]);
    assert_eq!(code(&out), 78, "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no such bucket"),
        "{}",
        text(&out.stderr)
    );
    // Still no bucket: nothing was written.
    let out = scene.run(&["status", "k"]);
    assert_eq!(
        code(&out),
        78,
        "the preflight created the bucket: {}",
        text(&out.stderr)
    );
}

/// A store that checks each condition, then writes without it a while
/// later (SeaweedFS behind `host_test::racing_store`): every probe passes
/// one at a time, the race finds several winners, exit 81, naming the
/// capability and the round; `--check-store` takes no lock there.
#[test]
fn a_store_that_lets_racing_writers_all_win_is_refused_with_81() {
    let store = host_test::racing_store::RacingStore::start(
        host_test::server::shared(),
        std::time::Duration::from_millis(200),
    )
    .unwrap();
    let scene = Scene::on(store.endpoint(), "preflight-racing");
    let out = scene.run(&["preflight"]);
    assert_eq!(code(&out), 81, "{}", text(&out.stderr));
    let (table, stderr) = (text(&out.stdout), text(&out.stderr));
    println!("s3-lease preflight on a store that checks, then writes:\n{table}{stderr}");
    assert!(table.contains("concurrent-create"), "{table}");
    assert!(table.contains("round 1 of 3: "), "{table}");
    assert!(table.contains("of 8 concurrent"), "{table}");
    assert!(stderr.contains("concurrent-create fail"), "{stderr}");
    let ran = scene.path("ran");
    let touch = format!("touch {}", ran.display());
    let out = scene.run(&["--check-store", "run", "k", "--", "sh", "-c", &touch]);
    assert_eq!(code(&out), 81, "{}", text(&out.stderr));
    assert!(!ran.exists(), "the command ran on a racing store");
}

/// How a front over SeaweedFS makes it behave like another store.
#[derive(Clone, Copy)]
enum Shape {
    /// 501 NotImplemented to `If-Match` on these methods (LocalStack:
    /// DELETE), its replies carrying `headers` (a store's own).
    NotImplemented(
        &'static [&'static str],
        &'static [(&'static str, &'static str)],
    ),
    /// Google Cloud Storage's XML API: conditions on PUT dropped (every
    /// writer wins), `x-goog-*` and `x-guploader-uploadid` on replies.
    GcsXml,
    /// DigitalOcean Spaces: an `If-Match` whose ETag is quoted never matches.
    UnquotedIfMatch,
}

const NOT_IMPLEMENTED: &str =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NotImplemented</Code>\
     <Message>A header you provided implies functionality that is not implemented\
     </Message></Error>";

/// SeaweedFS behind a server that answers 501 NotImplemented to the
/// conditional requests `refused` names (`DELETE If-Match`: LocalStack's
/// shape) and passes every other request on, re-signed with the
/// endpoint's own keys (the client's signature covers what it sent).
fn not_implementing(upstream: &Endpoint, refused: &'static [&'static str]) -> Endpoint {
    front(upstream, Shape::NotImplemented(refused, &[]))
}

/// SeaweedFS behind a server shaped as `shape`, passing every request it
/// does not answer itself on, re-signed with the endpoint's own keys.
fn front(upstream: &Endpoint, shape: Shape) -> Endpoint {
    let endpoint = upstream.clone();
    let url = http::serve(std::sync::Arc::new(move |r: Request| {
        let head = r.method == "HEAD";
        let own_headers: &[(&str, &str)] = match shape {
            Shape::NotImplemented(_, headers) => headers,
            Shape::GcsXml => &[
                ("x-goog-generation", "1764312000000000"),
                ("x-goog-metageneration", "1"),
                ("x-guploader-uploadid", "ABPtcPq-front"),
            ],
            Shape::UnquotedIfMatch => &[],
        };
        let with_own = |mut response: Response| {
            for (k, v) in own_headers {
                response.headers.push((k.to_string(), v.to_string()));
            }
            response
        };
        let refused = match shape {
            Shape::NotImplemented(methods, _) => (r.header("if-match").is_some()
                && methods.contains(&r.method.as_str()))
            .then(|| Response::new(501, "application/xml", NOT_IMPLEMENTED)),
            Shape::UnquotedIfMatch => {
                let quoted = r.header("if-match").is_some_and(|v| v.starts_with('"'));
                (quoted && r.method != "GET").then(|| {
                    Response::new(
                        412,
                        "application/xml",
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error>\
                         <Code>PreconditionFailed</Code><Message>At least one of the \
                         pre-conditions you specified did not hold</Message></Error>",
                    )
                })
            }
            Shape::GcsXml => None,
        };
        if let Some(response) = refused {
            return with_own(response);
        }
        let mut forward = host_test::racing_store::forwarded(&r, &endpoint.bucket);
        // GCS's XML API never evaluates a condition on a write.
        if matches!(shape, Shape::GcsXml) && r.method == "PUT" {
            forward
                .headers
                .retain(|(k, _)| k != "if-match" && k != "if-none-match");
        }
        match endpoint.admin().and_then(|admin| admin.send(forward)) {
            Ok(reply) => with_own(Response {
                status: reply.status,
                headers: reply.headers,
                body: reply.body,
                head,
            }),
            Err(e) => Response::new(502, "text/plain", format!("{e:#}")),
        }
    }))
    .unwrap();
    Endpoint {
        url,
        ..upstream.clone()
    }
}

/// Google Cloud Storage's XML API lets every writer win: refused with 81,
/// the reason naming it (from its reply headers: the host here is
/// 127.0.0.1) and the race showing the failure.
#[test]
fn gcs_xml_api_is_refused_by_name() {
    let scene = Scene::on(
        front(host_test::server::shared(), Shape::GcsXml),
        "preflight-gcs",
    );
    let out = scene.run(&["preflight"]);
    let (table, stderr) = (text(&out.stdout), text(&out.stderr));
    println!("s3-lease preflight, GCS's XML API (simulated):\n{table}{stderr}");
    assert_eq!(code(&out), 81, "{table}{stderr}");
    assert!(
        table.contains("this is Google Cloud Storage's XML API"),
        "{table}"
    );
    assert!(table.contains("a lock on it is unsafe"), "{table}");
    let out = scene.run(&["--json", "preflight"]);
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    for raced in ["concurrent-create", "concurrent-update"] {
        assert_eq!(verdict(&report, raced), "fail", "{report}");
    }
}

/// Backblaze B2 and Alibaba OSS answer NotImplemented to conditional
/// writes: the reason names the store when its headers say which; a store
/// that does not say keeps the generic reason.
#[test]
fn b2_and_oss_are_named_beside_their_not_implemented() {
    let shared = host_test::server::shared();
    for (headers, name) in [
        (&[("x-bz-request-id", "a1b2c3")][..], Some("Backblaze B2")),
        (
            &[("x-oss-request-id", "5F1A2B")][..],
            Some("Alibaba Cloud OSS"),
        ),
        (&[][..], None),
    ] {
        let scene = Scene::on(
            front(shared, Shape::NotImplemented(&["PUT", "DELETE"], headers)),
            "preflight-named-501",
        );
        let out = scene.run(&["--json", "preflight"]);
        assert_eq!(code(&out), 81, "{}", text(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
        let put = report["results"]
            .as_array()
            .expect("results")
            .iter()
            .find(|r| r["capability"] == "if-match-put")
            .expect("if-match-put");
        let detail = put["detail"].as_str().expect("detail");
        assert_eq!(put["status"], 501, "{put}");
        match name {
            Some(name) => assert!(
                detail.contains(&format!(
                    "{name} answers so: a known store without conditional writes"
                )),
                "{detail}"
            ),
            None => assert!(!detail.contains("answers so"), "{detail}"),
        }
    }
}

/// DigitalOcean Spaces matches If-Match only on an unquoted ETag: the
/// reason says so, where a plain "refused" would leave the user guessing.
#[test]
fn an_if_match_that_wants_the_etag_unquoted_is_named() {
    let scene = Scene::on(
        front(host_test::server::shared(), Shape::UnquotedIfMatch),
        "preflight-unquoted",
    );
    let out = scene.run(&["preflight"]);
    let (table, stderr) = (text(&out.stdout), text(&out.stderr));
    println!("s3-lease preflight, If-Match only unquoted (simulated):\n{table}{stderr}");
    assert_eq!(code(&out), 81, "{table}{stderr}");
    assert!(table.contains("as DigitalOcean Spaces does"), "{table}");
    // epoch-objects sends no If-Match: safe there.
    let out = scene.run(&["--strategy", "epoch-objects", "preflight"]);
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
}

/// A capability the configuration does not need reads as what it is, not
/// `FAIL`, in a report that calls the store safe: a 501 to DELETE If-Match
/// harms neither strategy. `FAIL` stays for what rules the configuration
/// out (a 501 to PUT If-Match, which single-object needs). The JSON keeps
/// its verdicts.
#[test]
fn the_table_says_fail_only_for_what_makes_the_configuration_unsafe() {
    let shared = host_test::server::shared();
    let scene = Scene::on(
        not_implementing(shared, &["DELETE"]),
        "preflight-501-delete",
    );
    let out = scene.run(&["preflight"]);
    let table = text(&out.stdout);
    println!("s3-lease preflight, 501 to DELETE If-Match:\n{table}");
    assert_eq!(code(&out), 0, "{table}{}", text(&out.stderr));
    assert!(table.contains("this configuration:  safe"), "{table}");
    assert!(!table.contains("FAIL"), "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("if-match-delete"))
        .unwrap_or_else(|| panic!("no if-match-delete row: {table}"));
    assert!(
        row.contains("no (not needed by single-object, server clock)"),
        "{row}"
    );
    let out = scene.run(&["--json", "preflight"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(verdict(&report, "if-match-delete"), "fail", "{report}");

    let scene = Scene::on(
        not_implementing(shared, &["PUT", "DELETE"]),
        "preflight-501-put",
    );
    let out = scene.run(&["preflight"]);
    let table = text(&out.stdout);
    println!("s3-lease preflight, 501 to PUT and DELETE If-Match:\n{table}");
    assert_eq!(code(&out), 81, "{table}{}", text(&out.stderr));
    assert!(table.contains("this configuration:  NOT safe"), "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("if-match-put"))
        .unwrap_or_else(|| panic!("no if-match-put row: {table}"));
    assert!(row.contains("FAIL"), "{row}");
    // epoch-objects needs no If-Match: the same store is safe for it.
    let out = scene.run(&["--strategy", "epoch-objects", "preflight"]);
    let table = text(&out.stdout);
    assert_eq!(code(&out), 0, "{table}{}", text(&out.stderr));
    assert!(!table.contains("FAIL"), "{table}");
    assert!(
        table.contains("no (not needed by epoch-objects, server clock)"),
        "{table}"
    );
}

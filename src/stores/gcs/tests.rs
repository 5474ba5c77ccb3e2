//! The GCS store over the model: what each request becomes on the wire,
//! how it is authorized, what each call costs, and GCS's replies read back
//! as the protocol's.

use super::*;
use crate::client::ClientCore;
use crate::config::ClientConfig;
use crate::config::{RawConfig, Store, Strategy};
use crate::elector::{Elector, ElectorConfig};
use crate::error::Error;
use crate::expiry::ExpiryClock;
use crate::fenced::{Change, META_TOKEN};
use crate::lease::Grant;
use crate::protocol::AcquireOutcome;
use crate::ready::Ready;
use crate::stores::gcs::model::{GcsIo, GcsModel, BUCKET, ENDPOINT};
use crate::stores::gcs::GCS_MIN_TTL_MS;
use crate::stores::s3::S3Response;
use crate::testing::raw_config;

const START_MS: u64 = 1_700_000_000_000;

fn raw(credential: GcsCredential) -> RawConfig {
    let mut raw = raw_config(Strategy::SingleObject, ExpiryClock::Server);
    raw.expiry_clock = None;
    raw.store = Store::Gcs(GcsBucket {
        endpoint: ENDPOINT.into(),
        bucket: BUCKET.into(),
        credential,
    });
    raw
}

fn config() -> ClientConfig {
    ClientConfig::validate(raw(GcsCredential::Anonymous)).unwrap()
}

fn client() -> ClientCore {
    ClientCore::new(config())
}

fn grant(holder: &str) -> Grant {
    Grant::new(10_000, holder.into(), "meta".into()).unwrap()
}

fn header<'a>(r: &'a HttpRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// What each protocol request was, as `METHOD key`.
fn sent(io: &mut GcsIo) -> Vec<String> {
    io.take_requests()
        .iter()
        .map(|r| format!("{} {}", r.method.as_str(), r.object_key))
        .collect()
}

fn field_of<T: core::fmt::Debug>(r: Result<T, Error>) -> String {
    match r {
        Err(Error::InvalidConfig { field, .. }) => field,
        other => panic!("expected invalid-config, got {other:?}"),
    }
}

fn granted(outcome: Result<AcquireOutcome, Error>) -> crate::lease::Lease {
    match outcome {
        Ok(AcquireOutcome::Granted(lease)) => lease,
        other => panic!("not granted: {other:?}"),
    }
}

#[test]
fn config_takes_server_by_default_every_clock_and_only_single_object() {
    let c = config();
    assert_eq!(c.expiry_clock, ExpiryClock::Server);
    assert_eq!(c.store.name(), "gcs");
    for clock in [
        ExpiryClock::Holder,
        ExpiryClock::Server,
        ExpiryClock::Observed,
    ] {
        let mut r = raw(GcsCredential::Anonymous);
        r.expiry_clock = Some(clock);
        assert_eq!(ClientConfig::validate(r).unwrap().expiry_clock, clock);
    }
    let mut r = raw(GcsCredential::Anonymous);
    r.strategy = Some(Strategy::EpochObjects);
    assert_eq!(field_of(ClientConfig::validate(r)), "strategy");
    assert_eq!(c.seal_scope(), "gcs:locks");
    // GCS's bucket names.
    for bucket in [
        "ab",
        "Locks",
        "-locks",
        "locks_",
        "a/b",
        "",
        &"a".repeat(64),
    ] {
        let mut r = raw(GcsCredential::Anonymous);
        if let Store::Gcs(b) = &mut r.store {
            b.bucket = bucket.into();
        }
        assert_eq!(field_of(ClientConfig::validate(r)), "bucket", "{bucket}");
    }
    for bucket in ["my_locks-1", "a.b.c", &format!("{}.x", "a".repeat(63))] {
        let mut r = raw(GcsCredential::Anonymous);
        if let Store::Gcs(b) = &mut r.store {
            b.bucket = bucket.into();
        }
        assert!(ClientConfig::validate(r).is_ok(), "{bucket}");
    }
}

#[test]
fn a_bearer_token_is_checked_sent_and_never_shown() {
    for bad in ["two words-secret", "", "tab\tsecret"] {
        let e = GcsCredential::bearer(bad).unwrap_err();
        let shown = format!("{e} {e:?}");
        assert!(
            matches!(&e, Error::InvalidConfig { field, .. } if field == "store.gcs"),
            "{e:?}"
        );
        assert!(bad.is_empty() || !shown.contains(bad), "{shown}");
    }
    // One built by hand is checked by the config.
    let r = raw(GcsCredential::Bearer("has space".into()));
    assert_eq!(field_of(ClientConfig::validate(r)), "store.gcs");

    let token = GcsCredential::bearer("ya29.BEARER.SECRET").unwrap();
    assert_eq!(format!("{token:?}"), "Bearer(<redacted>)");
    assert_eq!(format!("{:?}", GcsCredential::Anonymous), "Anonymous");
    let c = ClientConfig::validate(raw(token.clone())).unwrap();
    let get = S3Request::new(Method::Get, "k", 1024);
    let http = crate::config::ClientConfig::prepare(&c, &get, 0);
    assert_eq!(
        header(&http, "authorization"),
        Some("Bearer ya29.BEARER.SECRET")
    );
    let shown = format!("{http:?} {c:?}");
    assert!(!shown.contains("BEARER.SECRET"), "{shown}");
    // Anonymous: no Authorization at all.
    let http = crate::config::ClientConfig::prepare(&config(), &get, 0);
    assert_eq!(header(&http, "authorization"), None);

    // The model takes the tokens it was told to, and no anonymous caller
    // once told so.
    let mut model = GcsModel::new(START_MS);
    let e = model.handle_for(&c, &get).into_error();
    assert!(
        matches!(&e, Error::AccessDenied(x) if x.status == 403),
        "{e:?}"
    );
    assert!(e.to_string().contains("Invalid Credentials"), "{e}");
    model.bearer_tokens.push("ya29.BEARER.SECRET".into());
    assert!(model.handle_for(&c, &get).is_missing_object());
    model.anonymous = false;
    let e = model.handle(&get).into_error();
    assert!(matches!(&e, Error::AccessDenied(_)), "{e:?}");
}

#[test]
fn a_ttl_under_4_s_and_a_retry_period_under_1_s_are_refused_on_gcs_only() {
    let mut io = GcsIo::starting_at(START_MS);
    let short = Grant::new(GCS_MIN_TTL_MS - 1, "a".into(), String::new()).unwrap();
    let e = client().try_acquire(&mut io, "k", &short).ready();
    assert_eq!(field_of(e), "store");
    let e = client().acquire(&mut io, "k", &short, 1_000).ready();
    assert_eq!(field_of(e), "store");
    let e = client()
        .try_acquire_slot(&mut io, "k", &short, 2, false)
        .ready();
    assert_eq!(field_of(e), "store");
    assert!(io.take_requests().is_empty(), "refused before any request");
    let ok = Grant::new(GCS_MIN_TTL_MS, "a".into(), String::new()).unwrap();
    granted(client().try_acquire(&mut io, "k", &ok).ready());

    let elector = |lease, renew, retry| ElectorConfig {
        key: "e".into(),
        lease_duration_ms: lease,
        renew_deadline_ms: renew,
        retry_period_ms: retry,
        holder_id: "h".into(),
        metadata: String::new(),
    };
    let e = Elector::new(client(), elector(15_000, 10_000, 999)).map(|_| ());
    assert_eq!(field_of(e), "store");
    let e = Elector::new(client(), elector(2_900, 2_000, 1_000)).map(|_| ());
    assert_eq!(field_of(e), "store");
    assert!(Elector::new(client(), elector(15_000, 10_000, 1_000)).is_ok());
    // Other stores take any.
    let s3 = ClientCore::new(
        ClientConfig::validate(raw_config(Strategy::SingleObject, ExpiryClock::Server)).unwrap(),
    );
    assert!(Elector::new(s3, elector(1_000, 500, 10)).is_ok());
}

#[test]
fn a_put_becomes_a_multipart_upload_on_its_generation() {
    let c = config();
    let req = S3Request::new(Method::Put, "locks/a b/é+k", 1024)
        .header("if-none-match", "*")
        .header(META_TOKEN, "7")
        .header("x-amz-meta-s3lease-write", "w1")
        .body("application/json", b"{\"x\":1}".to_vec());
    let http = crate::config::ClientConfig::prepare(&c, &req, 1_700_000_000);
    assert_eq!(http.method, Method::Post);
    assert_eq!(http.authority, "127.0.0.1:4443");
    assert_eq!(
        http.path_and_query,
        "/upload/storage/v1/b/locks/o?ifGenerationMatch=0&uploadType=multipart"
    );
    let content_type = header(&http, "content-type").unwrap();
    assert_eq!(content_type, "multipart/related; boundary=s3-lease-part-0");
    assert_eq!(
        header(&http, "content-length"),
        Some(http.body.len().to_string().as_str())
    );
    let body = String::from_utf8(http.body.clone()).unwrap();
    assert_eq!(
        body,
        "--s3-lease-part-0\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n\
         {\"contentType\":\"application/json\",\"metadata\":{\"s3lease-token\":\"7\",\"s3lease-write\":\"w1\"},\"name\":\"locks/a b/é+k\"}\
         \r\n--s3-lease-part-0\r\nContent-Type: application/json\r\n\r\n{\"x\":1}\r\n--s3-lease-part-0--\r\n"
    );
    assert!(
        http.headers
            .iter()
            .all(|(k, _)| !k.starts_with("x-amz-") && !k.starts_with("if-")),
        "{:?}",
        http.headers
    );
    // A replace names the generation; the key is one encoded segment.
    let replace = S3Request::new(Method::Put, "a/b", 10)
        .header("if-match", "\"1700000000000017\"")
        .body("text/plain", b"v".to_vec());
    let http = crate::config::ClientConfig::prepare(&c, &replace, 0);
    assert!(
        http.path_and_query
            .contains("ifGenerationMatch=1700000000000017"),
        "{}",
        http.path_and_query
    );
    let get = S3Request::new(Method::Get, "a/b", 10).header("if-none-match", "\"42\"");
    let http = crate::config::ClientConfig::prepare(&c, &get, 0);
    assert_eq!(http.method, Method::Get);
    assert_eq!(
        http.path_and_query,
        "/storage/v1/b/locks/o/a%2Fb?alt=media&ifGenerationNotMatch=42"
    );
    let head =
        crate::config::ClientConfig::prepare(&c, &S3Request::new(Method::Head, "a/b", 10), 0);
    assert_eq!(
        (head.method, head.path_and_query.as_str()),
        (Method::Get, "/storage/v1/b/locks/o/a%2Fb")
    );
    let delete = S3Request::new(Method::Delete, "a/b", 10).header("if-match", "\"42\"");
    let http = crate::config::ClientConfig::prepare(&c, &delete, 0);
    assert_eq!(
        (http.method, http.path_and_query.as_str()),
        (
            Method::Delete,
            "/storage/v1/b/locks/o/a%2Fb?ifGenerationMatch=42"
        )
    );
    // An ETag that names no generation (the preflight's wrong one) names
    // one no object has: never dropped, never sent malformed.
    let wrong = S3Request::new(Method::Delete, "a", 10).header("if-match", "\"00ab\"");
    let http = crate::config::ClientConfig::prepare(&c, &wrong, 0);
    assert!(
        http.path_and_query
            .ends_with(&format!("ifGenerationMatch={NO_GENERATION}")),
        "{}",
        http.path_and_query
    );
    // A body holding the boundary gets another.
    let tricky =
        S3Request::new(Method::Put, "k", 10).body("text/plain", b"--s3-lease-part-0".to_vec());
    let http = crate::config::ClientConfig::prepare(&c, &tricky, 0);
    assert_eq!(
        header(&http, "content-type"),
        Some("multipart/related; boundary=s3-lease-part-1")
    );
    let mut model = GcsModel::new(START_MS);
    assert_eq!(model.handle_for(&c, &tricky).status, 200);
    assert_eq!(model.object("k").unwrap().body, b"--s3-lease-part-0");
}

#[test]
fn a_wrong_declared_payload_hash_becomes_a_wrong_md5_hash() {
    let c = config();
    let body = b"these bytes".to_vec();
    let wrong = crate::sigv4::sha256_hex(b"other bytes");
    let req = S3Request::new(Method::Put, "d", 1024)
        .header("if-none-match", "*")
        .header(PAYLOAD_HASH, &wrong)
        .body("text/plain", body.clone());
    let http = crate::config::ClientConfig::prepare(&c, &req, 0);
    let text = String::from_utf8_lossy(&http.body).into_owned();
    assert!(text.contains("\"md5Hash\":\""), "{text}");
    let mut model = GcsModel::new(START_MS);
    let refused = model.handle_for(&c, &req);
    assert_eq!(refused.status, 400);
    assert!(
        refused
            .s3_error()
            .message
            .contains("doesn't match calculated MD5"),
        "{refused:?}"
    );
    assert!(model.object("d").is_none());
    // The body's own hash declares nothing wrong: no md5Hash.
    let right = S3Request::new(Method::Put, "d", 1024)
        .header(PAYLOAD_HASH, &crate::sigv4::sha256_hex(&body))
        .body("text/plain", body);
    let http = crate::config::ClientConfig::prepare(&c, &right, 0);
    assert!(!String::from_utf8_lossy(&http.body).contains("md5Hash"));
    assert_eq!(model.handle_for(&c, &right).status, 200);
}

fn gcs_error(status: u16, reason: &str, message: &str) -> S3Response {
    crate::testing::response(
        status,
        &[
            ("content-type", "application/json; charset=UTF-8"),
            ("x-guploader-uploadid", "UP-1"),
        ],
        &format!(
            "{{\"error\":{{\"code\":{status},\"message\":\"{message}\",\"errors\":[{{\"message\":\"{message}\",\"domain\":\"global\",\"reason\":\"{reason}\"}}]}}}}"
        ),
    )
}

#[test]
fn gcss_answers_are_the_protocols() {
    let put = S3Request::new(Method::Put, "k", 10).header("if-none-match", "*");
    let r = read_reply(
        &put,
        gcs_error(
            412,
            "conditionNotMet",
            "At least one of the pre-conditions you specified did not hold.",
        ),
    );
    let e = r.s3_error();
    assert_eq!(
        (r.status, e.code.as_str(), e.request_id.as_str()),
        (412, "PreconditionFailed", "UP-1")
    );
    assert_eq!(
        e.message,
        "At least one of the pre-conditions you specified did not hold."
    );
    let get = S3Request::new(Method::Get, "k", 10);
    // A media GET's 404 is text; a metadata GET's and a DELETE's JSON.
    let text = crate::testing::response(
        404,
        &[("content-type", "text/plain")],
        "No such object: locks/k",
    );
    assert!(read_reply(&get, text).is_missing_object());
    let head = S3Request::new(Method::Head, "k", 10);
    let r = read_reply(
        &head,
        gcs_error(404, "notFound", "No such object: my-bucket/k"),
    );
    assert!(
        r.is_missing_object(),
        "a bucket's name is not a missing bucket"
    );
    for (req, reply) in [
        (
            &get,
            crate::testing::response(404, &[], "The specified bucket does not exist."),
        ),
        (
            &head,
            gcs_error(404, "notFound", "The specified bucket does not exist."),
        ),
        // An upload needs no object: its 404 is the bucket's
        // (fake-gcs-server says only "Not Found").
        (&put, gcs_error(404, "Not Found", "Not Found")),
    ] {
        let r = read_reply(req, reply);
        assert!(!r.is_missing_object());
        let e = r.into_error();
        assert!(
            matches!(&e, Error::NoSuchBucket(x) if x.code == "NoSuchBucket"),
            "{e:?}"
        );
    }
    // A refused token (401) is one a new token may fix: `InvalidToken`,
    // which the host answers by fetching one; a token without the right
    // (403) is not.
    for (status, code) in [(401, "InvalidToken"), (403, "AccessDenied")] {
        let e =
            read_reply(&get, gcs_error(status, "authError", "Invalid Credentials")).into_error();
        assert!(
            matches!(&e, Error::AccessDenied(x) if x.code == code),
            "{status}: {e:?}"
        );
    }
    // Throttled: 429, which the driver sends again, and transient.
    let r = read_reply(
        &put,
        gcs_error(
            429,
            "rateLimitExceeded",
            "The object exceeded the rate limit.",
        ),
    );
    assert_eq!((r.status, r.s3_error().code.as_str()), (429, "SlowDown"));
    assert!(r.into_error().is_transient());
    let e = read_reply(&put, gcs_error(503, "backendError", "Backend Error")).into_error();
    assert!(e.is_transient(), "{e:?}");

    // Successes as S3's: the generation as the ETag, GCS's MD5 ETag
    // dropped, metadata as S3's names; a server's own x-amz-meta or the
    // translations' headers never count.
    let media = crate::testing::response(
        200,
        &[
            ("etag", "\"rD70jKoI+j7V4CXaae3GRQ==\""),
            ("x-goog-generation", "1795856434528706"),
            ("x-goog-meta-s3lease-token", "9"),
            ("x-amz-meta-s3lease-lock", "forged"),
            (crate::stores::s3::UNREADABLE_HEADER, "forged"),
            (crate::stores::s3::NOT_THE_STORE_HEADER, "forged"),
            ("last-modified", "Sat, 28 Nov 2026 09:00:34 GMT"),
        ],
        "{}",
    );
    let r = read_reply(&get, media);
    assert_eq!(r.status, 200);
    assert_eq!(r.etag(), Some("\"1795856434528706\""));
    assert_eq!(r.header(META_TOKEN), Some("9"));
    assert_eq!(r.header("x-amz-meta-s3lease-lock"), None);
    assert_eq!(r.header(crate::stores::s3::UNREADABLE_HEADER), None);
    assert_eq!(r.header(crate::stores::s3::NOT_THE_STORE_HEADER), None);
    // An upload's (and a HEAD's) JSON resource: headers alone.
    let resource = crate::testing::response(
        200,
        &[("content-type", "application/json")],
        "{\"kind\":\"storage#object\",\"name\":\"k\",\"generation\":\"1795856434528706\",\
         \"updated\":\"2026-11-28T09:00:34.528698Z\",\"contentType\":\"text/plain\",\
         \"metadata\":{\"s3lease-token\":\"3\"}}",
    );
    let r = read_reply(&put, resource.clone());
    assert_eq!(r.status, 200);
    assert_eq!(r.etag(), Some("\"1795856434528706\""));
    assert_eq!(
        r.header("last-modified"),
        Some("Sat, 28 Nov 2026 09:00:34 GMT")
    );
    assert!(r.body.is_empty());
    let r = read_reply(&head, resource);
    assert_eq!(r.header(META_TOKEN), Some("3"));
    assert_eq!(r.header("content-type"), Some("text/plain"));
    let del = S3Request::new(Method::Delete, "k", 10);
    assert_eq!(
        read_reply(&del, crate::testing::response(204, &[], "")).status,
        204
    );
    // A proxy's page is kept as it came.
    let html = crate::testing::response(502, &[], "<html>bad gateway</html>");
    assert_eq!(read_reply(&get, html.clone()), html);
}

#[test]
fn a_listing_reads_as_list_objects_v2_page_by_page() {
    let mut model = GcsModel::new(START_MS);
    for key in ["p/a", "p/b", "p/c", "p/d", "q/x"] {
        let put = S3Request::new(Method::Put, key, 10).body("text/plain", b"v".to_vec());
        assert_eq!(model.handle(&put).status, 200);
    }
    // Pages of 2 (the model's short pages), after p/a (GCS's startOffset
    // is inclusive; S3's start-after is not).
    let first = model.handle(&crate::stores::s3::list_request("p/", Some("p/a")));
    assert_eq!(first.status, 200, "{first:?}");
    let page = crate::stores::s3::parse_list(&first.body).unwrap();
    assert_eq!(page.keys, ["p/b"], "the key itself left out of the page");
    assert!(page.truncated);
    let mut keys = page.keys;
    let mut token = page.next_token;
    while let Some(t) = token {
        let reply = model.handle(&crate::stores::s3::list_continue("p/", &t));
        let page = crate::stores::s3::parse_list(&reply.body).unwrap();
        keys.extend(page.keys);
        token = page.next_token;
    }
    assert_eq!(keys, ["p/b", "p/c", "p/d"]);
    let none = model.handle(&crate::stores::s3::list_request("z/", None));
    let page = crate::stores::s3::parse_list(&none.body).unwrap();
    assert!(page.keys.is_empty() && !page.truncated);
    let http = crate::config::ClientConfig::prepare(
        &config(),
        &crate::stores::s3::list_continue("p/", "tok"),
        0,
    );
    assert_eq!(
        http.path_and_query,
        "/storage/v1/b/locks/o?maxResults=200&pageToken=tok&prefix=p%2F"
    );
}

/// The wrong endpoint's error `reply` to `req` ends this store's
/// operation with, if any.
fn judged(req: &S3Request, reply: S3Response) -> Option<String> {
    let read = read_reply(req, reply);
    crate::testing::wrong_endpoint_reason(
        &crate::stores::gcs::PROFILE,
        req,
        &read,
        "not a GCS JSON API endpoint",
    )
}

#[test]
fn a_reply_gcs_never_sends_is_a_wrong_endpoint() {
    let reply = crate::testing::response;
    let get = S3Request::new(Method::Get, "k", 1024);
    let put = S3Request::new(Method::Put, "k", 1024).body("application/json", b"{}".to_vec());
    let head = S3Request::new(Method::Head, "k", 1024);
    let del = S3Request::new(Method::Delete, "k", 1024);
    let list = crate::stores::s3::list_request("p/", None);
    // A 404 without GCS's error: empty, a page, S3's XML, a filer's.
    for req in [&get, &put, &head, &del, &list] {
        for body in [
            "",
            "<html>not here</html>",
            "<Error><Code>NoSuchBucket</Code></Error>",
            "{\"name\":\"x\"}",
        ] {
            let reason =
                judged(req, reply(404, &[], body)).unwrap_or_else(|| panic!("{req:?} {body:?}"));
            assert!(reason.contains("with 404 and no GCS error"), "{reason}");
        }
    }
    // Plain text is a media GET's 404 alone, and only GCS's words (or the
    // emulator's): any web server answers a missing path with text.
    assert_eq!(judged(&get, reply(404, &[], "Not Found")), None);
    assert_eq!(judged(&get, reply(404, &[], "No such object: b/k")), None);
    assert_eq!(
        judged(
            &get,
            reply(404, &[], "The specified bucket does not exist.")
        ),
        None
    );
    for text in ["404 page not found\n", "File not found", "nope"] {
        let reason = judged(&get, reply(404, &[], text)).unwrap_or_else(|| panic!("{text:?}"));
        assert!(reason.contains("with 404 and no GCS error"), "{reason}");
    }
    assert!(judged(&head, reply(404, &[], "Not Found")).is_some());
    assert!(judged(&del, reply(404, &[], "Not Found")).is_some());
    // A media GET's 200 without a generation: an S3 server, a web server.
    let reason = judged(&get, reply(200, &[("etag", "\"e\"")], "{}")).unwrap();
    assert!(reason.contains("no X-Goog-Generation"), "{reason}");
    // An upload's 200 that is no object resource; a 201.
    let reason = judged(&put, reply(200, &[("etag", "\"e\"")], "")).unwrap();
    assert!(reason.contains("no JSON object resource"), "{reason}");
    let reason = judged(&put, reply(201, &[], "{\"generation\":\"1\"}")).unwrap();
    assert!(reason.contains("with 201"), "{reason}");
    let reason = judged(&head, reply(200, &[], "")).unwrap();
    assert!(reason.contains("no JSON object resource"), "{reason}");
    // A listing that is S3's XML.
    let reason = judged(
        &list,
        reply(200, &[], "<ListBucketResult></ListBucketResult>"),
    )
    .unwrap();
    assert!(reason.contains("no JSON listing"), "{reason}");
    // GCS's own replies.
    assert_eq!(
        judged(&get, gcs_error(404, "notFound", "No such object: b/k")),
        None
    );
    assert_eq!(
        judged(&head, gcs_error(404, "notFound", "No such object: b/k")),
        None
    );
    assert_eq!(
        judged(&get, reply(200, &[("x-goog-generation", "5")], "{}")),
        None
    );
    assert_eq!(
        judged(
            &put,
            reply(200, &[], "{\"generation\":\"5\",\"name\":\"k\"}")
        ),
        None
    );
    assert_eq!(
        judged(&list, reply(200, &[], "{\"kind\":\"storage#objects\"}")),
        None
    );
    assert_eq!(judged(&del, reply(204, &[], "")), None);
    // Other statuses are read as before, whatever their body; a body too
    // large to read is not judged by it.
    for status in [400, 401, 403, 409, 412, 429, 500, 502, 503] {
        assert_eq!(
            judged(&get, reply(status, &[], "<html>busy</html>")),
            None,
            "{status}"
        );
    }
    let mut big = reply(404, &[], "");
    big.body_too_large = Some(1 << 20);
    assert_eq!(judged(&get, big), None);

    // Through the client: a non-GCS server ends the first call before
    // anything is written, naming the endpoint.
    let mut io = GcsIo::starting_at(START_MS);
    // (Scripted replies are as read: through the translation first.)
    let seal_get = S3Request::new(Method::Get, "locks/.s3-lease-seal-key", 1024);
    io.scripted.push_back(read_reply(
        &seal_get,
        reply(
            404,
            &[("content-type", "application/xml")],
            "<Error><Code>NoSuchBucket</Code><Message>storage</Message></Error>",
        ),
    ));
    let e = client()
        .try_acquire(&mut io, "k", &grant("a"))
        .ready()
        .unwrap_err();
    let Error::InvalidConfig { field, reason } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(field, "endpoint");
    assert!(reason.contains("http://s3.model answered"), "{reason}");
    assert_eq!(sent(&mut io), ["GET locks/.s3-lease-seal-key"]);
}

#[test]
fn each_call_costs_what_it_costs_on_s3() {
    let mut c = client();
    let mut io = GcsIo::starting_at(START_MS);
    let lease = granted(c.try_acquire(&mut io, "k", &grant("a")).ready());
    assert_eq!(lease.token, 1);
    let generation = io.store.object("locks/k").unwrap().generation;
    assert_eq!(lease.etag, format!("\"{generation}\""));
    // The bucket's first client creates its seal key, then the grant.
    assert_eq!(
        sent(&mut io),
        [
            "GET locks/.s3-lease-seal-key",
            "PUT locks/.s3-lease-seal-key",
            "GET locks/k",
            "PUT locks/.s3-lease-floor/k",
            "PUT locks/k"
        ]
    );
    io.advance(1_000);
    let lease = c.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(sent(&mut io), ["PUT locks/k"]);
    assert!(io.store.object("locks/k").unwrap().generation > generation);
    // Another client reads the seal key once, and checks a lease it did
    // not write with one GET (as on S3).
    let mut other = client();
    io.advance(1_000);
    let lease = other.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(
        sent(&mut io),
        ["GET locks/.s3-lease-seal-key", "GET locks/k", "PUT locks/k"]
    );
    io.advance(1_000);
    let lease = other.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(sent(&mut io), ["PUT locks/k"]);
    let state = c.inspect(&mut io, "k").ready().unwrap().unwrap();
    assert!(state.live && state.expires_in_ms > 0, "{state:?}");
    assert_eq!(sent(&mut io), ["GET locks/k"]);
    // Unchanged since: 304, no body.
    let again = c.inspect(&mut io, "k").ready().unwrap().unwrap();
    assert_eq!(again.record, state.record);
    assert_eq!(sent(&mut io), ["GET locks/k"]);
    io.advance(1_000);
    other.rewrite(&mut io, lease.clone(), true).ready().unwrap();
    assert_eq!(sent(&mut io), ["PUT locks/k"]);
    io.advance(1_000);
    let again = granted(other.try_acquire(&mut io, "k", &grant("b")).ready());
    assert_eq!(again.token, 2, "release kept the object and its counter");
    assert_eq!(sent(&mut io), ["PUT locks/k"]);
    // A spent lease: lost, nothing written.
    let e = c.rewrite(&mut io, lease, false).ready().unwrap_err();
    assert!(matches!(e, Error::Lost { .. }), "{e:?}");
    assert_eq!(sent(&mut io), ["GET locks/k"]);

    // Fenced writes: HEAD, PUT; the token in the metadata; read with it.
    io.advance(1_000);
    let written = other
        .fenced_write(&mut io, &again, "data/x", put_change(b"v1"), false)
        .ready()
        .unwrap();
    assert_eq!(written.token, 2);
    assert_eq!(sent(&mut io), ["HEAD data/x", "PUT data/x"]);
    let stored = io.store.object("data/x").unwrap();
    assert!(
        stored
            .metadata
            .contains(&("s3lease-token".into(), "2".into())),
        "{:?}",
        stored.metadata
    );
    let got = c.fenced_get(&mut io, "data/x").ready().unwrap().unwrap();
    assert_eq!((got.token, got.body.as_slice()), (2, &b"v1"[..]));
    assert_eq!(got.content_type, "text/plain");
    io.advance(1_000);
    other
        .fenced_write(
            &mut io,
            &again,
            "data/x",
            Change::Delete { nonce: 1 },
            false,
        )
        .ready()
        .unwrap();
    assert!(c.fenced_get(&mut io, "data/x").ready().unwrap().is_none());
}

fn put_change(body: &[u8]) -> Change {
    Change::Put {
        body: body.to_vec(),
        content_type: "text/plain".into(),
    }
}

#[test]
fn a_stale_holder_is_fenced_out_and_equal_bytes_never_pass_a_stale_generation() {
    let mut c = client();
    let mut io = GcsIo::starting_at(START_MS);
    let first = granted(c.try_acquire(&mut io, "k", &grant("a")).ready());
    c.fenced_write(&mut io, &first, "data/x", put_change(b"same"), false)
        .ready()
        .unwrap();
    let before = io.store.object("data/x").unwrap().generation;
    io.advance(1_000);
    // The same bytes again: a new generation, so a condition on the
    // earlier one never passes over it.
    c.fenced_write(&mut io, &first, "data/x", put_change(b"same"), false)
        .ready()
        .unwrap();
    assert_ne!(io.store.object("data/x").unwrap().generation, before);
    let stale = S3Request::new(Method::Put, "data/x", 100)
        .header("if-match", &format!("\"{before}\""))
        .body("text/plain", b"same".to_vec());
    assert_eq!(io.store.handle(&stale).status, 412);
    let stale_delete =
        S3Request::new(Method::Delete, "data/x", 100).header("if-match", &format!("\"{before}\""));
    assert_eq!(io.store.handle(&stale_delete).status, 412);
    assert!(io.store.object("data/x").is_some());

    io.advance(1_000);
    c.rewrite(&mut io, first.clone(), true).ready().unwrap();
    io.advance(1_000);
    let second = granted(c.try_acquire(&mut io, "k", &grant("b")).ready());
    c.fenced_write(&mut io, &second, "data/x", put_change(b"newer"), false)
        .ready()
        .unwrap();
    io.advance(1_000);
    for change in [put_change(b"late"), Change::Delete { nonce: 2 }] {
        let e = c
            .fenced_write(&mut io, &first, "data/x", change, false)
            .ready()
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Fenced {
                    our_token: 1,
                    stored_token: 2,
                    ..
                }
            ),
            "{e:?}"
        );
    }
    assert_eq!(io.store.object("data/x").unwrap().body, b"newer");
}

#[test]
fn two_clients_exclude_each_other_a_lost_race_is_412_and_a_lapsed_lease_is_taken_over() {
    let mut a = client();
    let mut b = client();
    let mut io = GcsIo::starting_at(START_MS);
    io.lose_put_replies = 3; // the seal key's create, the key's floor, the grant
    let lease = granted(a.try_acquire(&mut io, "k", &grant("a")).ready());
    assert_eq!(lease.token, 1, "a lost reply hid a grant that landed");
    let held = b.try_acquire(&mut io, "k", &grant("b")).ready().unwrap();
    assert!(matches!(held, AcquireOutcome::Held(Some(_))), "{held:?}");
    // A create that loses to another writer between its GET and its
    // PUT: GCS refuses the upload's ifGenerationMatch=0 (412), and the
    // loser reads the winner's lease.
    let mut c = client();
    let mut sneaked = false;
    let outcome = {
        let mut racing =
            crate::testing::intercept::Intercept::new(&mut io, |request, io: &mut GcsIo| {
                if request.method == Method::Put && request.object_key.ends_with("race") && !sneaked
                {
                    sneaked = true;
                    let theirs = granted(client().try_acquire(io, "race", &grant("d")).ready());
                    assert_eq!(theirs.token, 1);
                }
                None
            });
        c.try_acquire(&mut racing, "race", &grant("c"))
            .ready()
            .unwrap()
    };
    assert!(matches!(outcome, AcquireOutcome::Held(None)), "{outcome:?}");

    let requests = sent(&mut io);
    let ours: Vec<_> = requests.iter().filter(|r| r.ends_with("race")).collect();
    assert_eq!(
        ours,
        [
            "GET locks/race",
            "GET locks/race",
            "PUT locks/.s3-lease-floor/race",
            "PUT locks/race",
            "PUT locks/.s3-lease-floor/race",
            "GET locks/.s3-lease-floor/race",
            "PUT locks/race"
        ],
        "ours: GET; theirs: GET, the key's floor, PUT; then ours: the floor \
         (refused, read: just written, joined) and our PUT, refused"
    );
    let stored = &io.store.object("locks/race").unwrap().body;
    assert!(
        String::from_utf8_lossy(stored).contains("\"holder\":\"d\""),
        "{}",
        String::from_utf8_lossy(stored)
    );
    // Past its ttl plus 2 s, by the server's whole-second clock, b takes over.
    io.advance(13_000);
    let taken = granted(b.try_acquire(&mut io, "k", &grant("b")).ready());
    assert_eq!(taken.token, 2);
    let e = a.rewrite(&mut io, lease, false).ready().unwrap_err();
    assert!(matches!(e, Error::Lost { .. }), "{e:?}");
}

#[test]
fn a_missing_bucket_is_typed_and_throttling_is_retried() {
    let mut io = GcsIo::starting_at(START_MS);
    io.store.buckets.clear();
    let e = client()
        .try_acquire(&mut io, "k", &grant("a"))
        .ready()
        .unwrap_err();
    assert!(
        matches!(&e, Error::NoSuchBucket(x) if x.code == "NoSuchBucket"),
        "{e:?}"
    );
    // GCS's rate limit: a write within a second of the last is 429; a
    // lease of the shortest ttl, renewed every second, never meets it.
    let mut io = GcsIo::starting_at(START_MS);
    io.store.rate_limit = true;
    let mut c = client();
    let short = Grant::new(GCS_MIN_TTL_MS, "a".into(), String::new()).unwrap();
    let mut lease = granted(c.try_acquire(&mut io, "k", &short).ready());
    for _ in 0..20 {
        io.advance(1_000);
        lease = c.rewrite(&mut io, lease, false).ready().unwrap();
    }
    // Sooner is refused, unapplied, and the driver sends it again after
    // short pauses: still too soon, so the renew fails, transient.
    io.advance(100);
    io.take_requests();
    let e = c
        .rewrite(&mut io, lease.clone(), false)
        .ready()
        .unwrap_err();
    assert!(matches!(&e, Error::S3(x) if x.status == 429), "{e:?}");
    assert!(e.is_transient());
    assert_eq!(
        io.take_requests().len() as u32,
        1 + crate::driver::THROTTLE_RETRIES
    );
    io.advance(1_000);
    c.rewrite(&mut io, lease, false).ready().unwrap();
    // A 503 to a write may or may not have applied: the write is read
    // back, and sent again (here the key's floor, its first write).
    io.store.busy_next = 1;
    io.advance(1_000);
    io.take_requests();
    granted(c.try_acquire(&mut io, "other", &short).ready());
    assert_eq!(io.store.busy_next, 0);
    assert_eq!(
        sent(&mut io),
        [
            "GET locks/other",
            "PUT locks/.s3-lease-floor/other",
            "GET locks/.s3-lease-floor/other",
            "PUT locks/.s3-lease-floor/other",
            "PUT locks/other"
        ]
    );
}

#[test]
fn the_preflight_passes_a_bucket_and_refuses_one_that_ignores_delete_conditions() {
    use crate::capability::{Capability, Verdict};
    use crate::preflight::RACE_REQUESTS;
    let verdict = |report: &crate::preflight::Report, cap: Capability| {
        report
            .results
            .iter()
            .find(|r| r.capability == cap)
            .cloned()
            .unwrap_or_else(|| panic!("{cap:?} not reported"))
    };
    let mut io = GcsIo::starting_at(START_MS);
    let report = client().preflight(&mut io).ready().unwrap();
    for cap in [
        Capability::IfNoneMatchExisting,
        Capability::IfMatchPut,
        Capability::IfMatchMissingKey,
        Capability::IfMatchDelete,
        Capability::ServerDates,
        Capability::ConditionalGet,
        Capability::PayloadHash,
        Capability::ClockOffset,
        Capability::ConcurrentCreate,
        Capability::ConcurrentUpdate,
    ] {
        let r = verdict(&report, cap);
        assert_eq!(r.verdict, Verdict::Pass, "{cap:?}: {}", r.detail);
    }
    let create = verdict(&report, Capability::IfNoneMatchExisting);
    assert_eq!(
        (create.status, create.code.as_str()),
        (Some(412), "PreconditionFailed")
    );
    let hash = verdict(&report, Capability::PayloadHash);
    assert!(hash.detail.contains("md5Hash"), "{}", hash.detail);
    let list = verdict(&report, Capability::ListStartAfter);
    assert_eq!(list.verdict, Verdict::Fail);
    assert!(list.detail.contains("a gcs store"), "{}", list.detail);
    assert!(report.config_safe, "{report:#?}");
    assert_eq!(report.safe_strategies, [Strategy::SingleObject]);
    // 14 probes (the GET that finds a missing bucket first, the bucket's
    // lifecycle rules, no LIST) and their cleanup, then the race.
    assert_eq!(report.requests, 14 + RACE_REQUESTS);
    assert_eq!(io.take_requests().len() as u32, report.requests);
    assert!(
        io.store.buckets[BUCKET].is_empty(),
        "{:?}",
        io.store.buckets
    );

    // fake-gcs-server's DELETE: a stale generation deletes the object.
    let mut io = GcsIo::starting_at(START_MS);
    io.store.ignore_delete_conditions = true;
    let report = client().preflight(&mut io).ready().unwrap();
    let delete = verdict(&report, Capability::IfMatchDelete);
    assert_eq!(
        (delete.verdict, delete.silent),
        (Verdict::Fail, true),
        "{delete:?}"
    );
    assert!(
        !delete.detail.contains("XML API"),
        "the JSON API is not the XML one: {}",
        delete.detail
    );
    assert!(!report.config_safe);

    // A bucket behind a store that checks, then writes.
    use crate::testing::racing::{Race, Racing};
    let mut model = GcsIo::starting_at(START_MS);
    let mut racing = Racing::new(&mut model, Race::CheckThenWrite);
    let report = client().preflight(&mut racing).ready().unwrap();
    let create = verdict(&report, Capability::ConcurrentCreate);
    assert_eq!(
        (create.verdict, create.silent),
        (Verdict::Fail, true),
        "{create:?}"
    );
    assert!(!report.config_safe);
}

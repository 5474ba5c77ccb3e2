//! S3's requests as signed, its replies as read, a wrong endpoint found.

use super::*;
use crate::config::ClientConfig;
use crate::config::{RawConfig, Store};
use crate::error::Error;
use crate::sigv4::Credentials;

fn config(addressing: Addressing, token: Option<&str>) -> ClientConfig {
    ClientConfig::validate(RawConfig::of(Store::S3(S3Bucket {
        endpoint: "http://127.0.0.1:8333".into(),
        region: "us-east-1".into(),
        bucket: "locks".into(),
        addressing,
        credentials: Credentials {
            access_key_id: "AKID".into(),
            secret_access_key: "secret".into(),
            session_token: token.map(str::to_string),
        },
    })))
    .unwrap()
}

fn header<'a>(r: &'a HttpRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn path_style_encodes_the_key_once_and_keeps_slashes() {
    let req = S3Request::new(Method::Get, "a b/c+d/é", 100);
    let http = ClientConfig::prepare(&config(Addressing::Path, None), &req, 0);
    assert_eq!(http.authority, "127.0.0.1:8333");
    assert_eq!(http.path_and_query, "/locks/a%20b/c%2Bd/%C3%A9");
    assert_eq!(
        header(&http, "x-amz-content-sha256"),
        Some(sigv4::EMPTY_SHA256)
    );
    assert!(header(&http, "authorization")
        .unwrap()
        .contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date,"));
    assert_eq!(header(&http, "content-length"), None);
}

#[test]
fn virtual_hosted_puts_the_bucket_in_the_host() {
    let mut req = S3Request::new(Method::Get, "", 100);
    req.query = vec![
        ("list-type".into(), "2".into()),
        ("prefix".into(), "a b".into()),
    ];
    let http = ClientConfig::prepare(&config(Addressing::VirtualHosted, None), &req, 0);
    assert_eq!(http.authority, "locks.127.0.0.1:8333");
    assert_eq!(http.path_and_query, "/?list-type=2&prefix=a%20b");
}

#[test]
fn puts_carry_length_hash_and_signed_conditions() {
    let req = S3Request::new(Method::Put, "k", 100)
        .header("if-none-match", "*")
        .body("application/json", b"{}".to_vec());
    let http = ClientConfig::prepare(&config(Addressing::Path, Some("tok")), &req, 0);
    assert_eq!(header(&http, "content-length"), Some("2"));
    assert_eq!(
        header(&http, "x-amz-content-sha256"),
        Some(sigv4::sha256_hex(b"{}").as_str())
    );
    assert_eq!(header(&http, "x-amz-security-token"), Some("tok"));
    let auth = header(&http, "authorization").unwrap();
    assert!(auth.contains(
        "SignedHeaders=content-type;host;if-none-match;x-amz-content-sha256;x-amz-date;x-amz-security-token,"
    ));
}

fn on(endpoint: &str) -> ClientConfig {
    let mut c = config(Addressing::VirtualHosted, None);
    c.endpoint_authority = endpoint.into();
    c
}

#[test]
fn conditional_writes_to_tigris_carry_the_signed_consistency_header() {
    const TIGRIS_CONSISTENT: &str = "x-tigris-consistent";
    let put = S3Request::new(Method::Put, "k", 100)
        .header("if-match", "\"e\"")
        .body("application/json", b"{}".to_vec());
    let create = S3Request::new(Method::Put, "k", 100)
        .header("if-none-match", "*")
        .body("application/json", b"{}".to_vec());
    let delete = S3Request::new(Method::Delete, "k", 100).header("if-match", "\"e\"");
    let plain_put = S3Request::new(Method::Put, "k", 100).body("text/plain", b"x".to_vec());
    let plain_delete = S3Request::new(Method::Delete, "k", 100);
    let read = S3Request::new(Method::Get, "k", 100).header("if-none-match", "\"e\"");
    for tigris in [
        "t3.storage.dev",
        "fly.storage.tigris.dev",
        "T3.Storage.Dev:443",
    ] {
        for req in [&put, &create, &delete] {
            let http = ClientConfig::prepare(&on(tigris), req, 0);
            assert_eq!(header(&http, TIGRIS_CONSISTENT), Some("true"), "{tigris}");
            let auth = header(&http, "authorization").unwrap();
            assert!(auth.contains(";x-tigris-consistent,"), "{tigris}: {auth}");
        }
        for req in [&plain_put, &plain_delete, &read] {
            let http = ClientConfig::prepare(&on(tigris), req, 0);
            assert_eq!(header(&http, TIGRIS_CONSISTENT), None, "{tigris}");
        }
    }
    for other in [
        "s3.us-east-1.amazonaws.com",
        "127.0.0.1:8333",
        "nyc3.digitaloceanspaces.com",
        "storage.dev.example.com",
        "notstorage.dev",
        "mytigris.dev",
    ] {
        for req in [&put, &create, &delete] {
            let http = ClientConfig::prepare(&on(other), req, 0);
            assert_eq!(header(&http, TIGRIS_CONSISTENT), None, "{other}");
        }
    }
}

#[test]
fn debug_of_a_signed_request_never_shows_its_credentials() {
    let req = S3Request::new(Method::Put, "k", 100)
        .header("if-none-match", "*")
        .body("application/json", b"{}".to_vec());
    let http = ClientConfig::prepare(
        &config(Addressing::Path, Some("SESSION-TOKEN-xyz")),
        &req,
        0,
    );
    let auth = header(&http, "authorization").unwrap().to_string();
    let signature = auth.rsplit("Signature=").next().unwrap().to_string();
    assert_eq!(signature.len(), 64, "{auth}");
    let shown = format!("{http:?}");
    for secret in [
        auth.as_str(),
        signature.as_str(),
        "SESSION-TOKEN-xyz",
        "secret",
    ] {
        assert!(!shown.contains(secret), "{secret:?} in {shown}");
    }
    // What was sent stays visible: the names, and the other values.
    for visible in [
        "\"authorization\"",
        "\"x-amz-security-token\"",
        "if-none-match",
    ] {
        assert!(shown.contains(visible), "{visible} missing from {shown}");
    }
    assert!(shown.contains(&sigv4::sha256_hex(b"{}")), "{shown}");
    // Pretty-printing takes the same path.
    assert!(!format!("{http:#?}").contains(&signature));
}

#[test]
fn a_declared_payload_hash_is_signed_in_place_of_the_real_one() {
    let wrong = sigv4::sha256_hex(b"other bytes");
    let req = S3Request::new(Method::Put, "k", 100)
        .header(PAYLOAD_HASH, &wrong)
        .body("text/plain", b"these bytes".to_vec());
    let http = ClientConfig::prepare(&config(Addressing::Path, None), &req, 0);
    let hashes: Vec<_> = http
        .headers
        .iter()
        .filter(|(k, _)| k == PAYLOAD_HASH)
        .collect();
    assert_eq!(hashes.len(), 1, "{:?}", http.headers);
    assert_eq!(hashes[0].1, wrong);
    assert_eq!(http.body, b"these bytes");
}

fn reply(status: u16, body: &str, headers: &[(&str, &str)]) -> S3Response {
    crate::testing::response(status, headers, body)
}

#[test]
fn xml_errors_become_typed_errors() {
    let body = "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The bucket &amp; more</Message><RequestId>R1</RequestId></Error>";
    match reply(404, body, &[]).into_error() {
        Error::NoSuchBucket(e) => {
            assert_eq!(
                (e.code.as_str(), e.message.as_str(), e.request_id.as_str()),
                ("NoSuchBucket", "The bucket & more", "R1")
            );
        }
        other => panic!("{other:?}"),
    }
    let denied = "<Error><Code>SignatureDoesNotMatch</Code></Error>";
    assert!(
        matches!(reply(403, denied, &[("x-amz-request-id", "H")]).into_error(), Error::AccessDenied(e) if e.request_id == "H")
    );
    assert!(matches!(
        reply(403, "", &[]).into_error(),
        Error::AccessDenied(_)
    ));
    let conflict = "<Error><Code>ConditionalRequestConflict</Code></Error>";
    assert!(matches!(
        reply(409, conflict, &[]).into_error(),
        Error::Conflict(_)
    ));
}

#[test]
fn list_replies_give_their_keys_decoded() {
    let body = "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"x\"><Name>b</Name>\
        <IsTruncated>true</IsTruncated>\
        <Contents><Key>k/epoch-1.json</Key><ETag>&#34;ab&#34;</ETag></Contents>\
        <Contents><Key>a &amp; b&#x2F;&#233;&bogus;</Key></Contents>\
        <KeyCount>2</KeyCount><NextContinuationToken>1/a+&amp;=</NextContinuationToken>\
        </ListBucketResult>";
    let page = parse_list(body.as_bytes()).unwrap();
    assert_eq!(page.keys, ["k/epoch-1.json", "a & b/é&bogus;"]);
    assert!(page.truncated);
    assert_eq!(page.next_token.as_deref(), Some("1/a+&="));
    let empty = "<ListBucketResult><IsTruncated>false</IsTruncated><KeyCount>0</KeyCount></ListBucketResult>";
    assert_eq!(
        parse_list(empty.as_bytes()).unwrap(),
        ListPage {
            keys: vec![],
            truncated: false,
            next_token: None,
        }
    );
    // An empty token continues nothing.
    let blank = "<ListBucketResult><IsTruncated>true</IsTruncated>\
        <NextContinuationToken></NextContinuationToken></ListBucketResult>";
    let page = parse_list(blank.as_bytes()).unwrap();
    assert_eq!((page.truncated, page.next_token), (true, None));
    for bad in [
        &b"<html>busy</html>"[..],
        b"\xff\xfe",
        b"<ListBucketResult><Contents><Key>x</Key>",
        b"<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
    ] {
        assert!(
            parse_list(bad).is_err(),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn list_requests_query_the_bucket() {
    let req = list_request("p/k/epoch-", Some("p/k/epoch-7"));
    let http = ClientConfig::prepare(&config(Addressing::Path, None), &req, 0);
    assert_eq!(
        http.path_and_query,
        "/locks?list-type=2&max-keys=200&prefix=p%2Fk%2Fepoch-&start-after=p%2Fk%2Fepoch-7"
    );
}

#[test]
fn continuations_carry_the_token_and_no_start_after() {
    let req = list_continue("p/k/epoch-", "opaque/+=");
    let http = ClientConfig::prepare(&config(Addressing::Path, None), &req, 0);
    assert_eq!(
        http.path_and_query,
        "/locks?continuation-token=opaque%2F%2B%3D&list-type=2&max-keys=200&prefix=p%2Fk%2Fepoch-"
    );
}

const ENDPOINT: &str = "http://127.0.0.1:8888";

fn judged(req: &S3Request, reply: &S3Response) -> Option<String> {
    let endpoint = Endpoint {
        store: &PROFILE,
        url: ENDPOINT.into(),
    };
    not_the_store(&endpoint, req, reply).map(|e| match e {
        Error::InvalidConfig { field, reason } => {
            assert_eq!(field, "endpoint");
            assert!(reason.starts_with(ENDPOINT), "{reason}");
            assert!(reason.contains("not an S3 endpoint"), "{reason}");
            reason
        }
        other => panic!("{other:?}"),
    })
}

const NO_SUCH_KEY: &str = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code>\
    <Message>The specified key does not exist.</Message></Error>";

#[test]
fn a_404_without_an_s3_error_body_is_no_s3_store() {
    for method in [Method::Get, Method::Put, Method::Delete] {
        let req = S3Request::new(method, "locks/.s3-lease-seal-key", 100);
        for body in [
            "",
            "<html><h1>404 Not Found</h1></html>",
            "404 page not found\n",
        ] {
            let reason = judged(&req, &reply(404, body, &[])).unwrap();
            assert!(
                reason.contains(&format!(
                    "answered {} \"locks/.s3-lease-seal-key\" with 404 and no S3 error body",
                    method.as_str()
                )),
                "{reason}"
            );
        }
        // S3's own 404s: the key, or the bucket.
        assert_eq!(judged(&req, &reply(404, NO_SUCH_KEY, &[])), None);
        let bucket = "<Error><Code>NoSuchBucket</Code></Error>";
        assert_eq!(judged(&req, &reply(404, bucket, &[])), None);
        // An <Error> without a code is not S3's either.
        assert!(judged(&req, &reply(404, "<Error></Error>", &[])).is_some());
    }
    let list = list_request("locks/k/epoch-", None);
    assert!(judged(&list, &reply(404, "", &[])).is_some());
    // A HEAD has no body to judge; a body too large to read is not judged.
    let head = S3Request::new(Method::Head, "k", 100);
    assert_eq!(judged(&head, &reply(404, "", &[])), None);
    let get = S3Request::new(Method::Get, "k", 100);
    let huge = S3Response {
        body_too_large: Some(1 << 30),
        ..reply(404, "", &[])
    };
    assert_eq!(judged(&get, &huge), None);
}

#[test]
fn a_write_is_s3_s_only_as_200_with_an_etag() {
    let put = S3Request::new(Method::Put, "k", 100).body("application/json", b"{}".to_vec());
    // A SeaweedFS filer: 201 and no ETag.
    let reason = judged(&put, &reply(201, "{\"name\":\"k\",\"size\":2}", &[])).unwrap();
    assert!(reason.contains("answered PUT \"k\" with 201"), "{reason}");
    let reason = judged(&put, &reply(200, "", &[])).unwrap();
    assert!(reason.contains("with 200 and no ETag"), "{reason}");
    assert!(judged(&put, &reply(200, "", &[("etag", "")])).is_some());
    assert!(judged(&put, &reply(204, "", &[("etag", "\"e\"")])).is_some());
    assert_eq!(judged(&put, &reply(200, "", &[("etag", "\"e\"")])), None);
}

#[test]
fn an_object_read_is_s3_s_only_with_its_etag() {
    let get = S3Request::new(Method::Get, "k", 100);
    let reason = judged(&get, &reply(200, "{}", &[])).unwrap();
    assert!(
        reason.contains("answered GET \"k\" with 200 and no ETag"),
        "{reason}"
    );
    assert_eq!(judged(&get, &reply(200, "{}", &[("etag", "\"e\"")])), None);
    // Not modified: no body, and S3's ETag is not required of it here.
    assert_eq!(judged(&get, &reply(304, "", &[])), None);
}

#[test]
fn a_listing_is_s3_s_only_as_a_list_bucket_result() {
    let list = list_request("locks/k/epoch-", None);
    let reason = judged(&list, &reply(200, "<html>Filer</html>", &[])).unwrap();
    assert!(
        reason.contains("answered a LIST of the bucket with 200 and no <ListBucketResult>"),
        "{reason}"
    );
    let page = "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"x\"><KeyCount>0</KeyCount></ListBucketResult>";
    assert_eq!(judged(&list, &reply(200, page, &[])), None);
    // A listing needs no ETag; a page too large to read is not judged.
    let huge = S3Response {
        body_too_large: Some(1 << 30),
        ..reply(200, "", &[])
    };
    assert_eq!(judged(&list, &huge), None);
}

#[test]
fn other_statuses_are_read_as_before_whatever_their_body() {
    for method in [Method::Get, Method::Put, Method::Delete, Method::Head] {
        let req = S3Request::new(method, "k", 100);
        for status in [400, 403, 409, 412, 429, 500, 501, 502, 503, 504] {
            for body in ["", "<html>busy</html>"] {
                assert_eq!(judged(&req, &reply(status, body, &[])), None, "{status}");
            }
        }
    }
    // A delete's success, and a HEAD's, carry nothing to judge.
    for method in [Method::Delete, Method::Head] {
        let req = S3Request::new(method, "k", 100);
        assert_eq!(judged(&req, &reply(204, "", &[])), None);
        assert_eq!(judged(&req, &reply(200, "", &[])), None);
    }
    // A store's own call (POST) is not S3's.
    let post = S3Request::new(Method::Post, "", 100);
    assert_eq!(judged(&post, &reply(404, "", &[])), None);
}

#[test]
fn html_from_a_proxy_is_still_a_clean_error() {
    let html = "<html>\n<body><h1>502 Bad Gateway</h1>\n</body></html>";
    match reply(502, html, &[]).into_error() {
        Error::S3(e) => {
            assert_eq!(e.status, 502);
            assert_eq!(e.code, "");
            assert!(e.message.contains("502 Bad Gateway"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
}

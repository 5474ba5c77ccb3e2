//! Published AWS examples. The S3 ones come from the S3 API reference
//! ("Examples: Signature Calculations in AWS Signature Version 4"), the others
//! from the AWS Signature Version 4 test suite. A botocore cross-check over
//! hundreds of generated requests lives in host-test/tests/sigv4_botocore.rs.

use super::*;

fn s3_example_credentials() -> Credentials {
    Credentials {
        access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
        session_token: None,
    }
}

fn suite_credentials() -> Credentials {
    Credentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: None,
    }
}

/// 2013-05-24T00:00:00Z, the instant of the S3 examples.
const S3_EXAMPLE_TIME: u64 = 1_369_353_600;
/// 2015-08-30T12:36:00Z, the instant of the test suite.
const SUITE_TIME: u64 = 1_440_938_160;

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn signature_of(headers: &[(String, String)]) -> (String, String) {
    let auth = &headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .unwrap()
        .1;
    let signed = auth
        .split("SignedHeaders=")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    let sig = auth.split("Signature=").nth(1).unwrap();
    (signed.to_string(), sig.to_string())
}

fn s3_sign(
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
    payload: &str,
) -> (String, String) {
    let query = pairs(query);
    let headers = pairs(headers);
    let req = SigningRequest {
        method,
        host: "examplebucket.s3.amazonaws.com",
        path,
        query: &query,
        headers: &headers,
        payload_sha256_hex: payload,
    };
    let scope = Scope {
        region: "us-east-1",
        service: "s3",
        unix_seconds: S3_EXAMPLE_TIME,
    };
    signature_of(&sign(&req, &s3_example_credentials(), scope))
}

#[test]
fn s3_example_get_object_with_range() {
    let (signed, sig) = s3_sign(
        "GET",
        "/test.txt",
        &[],
        &[
            ("Range", "bytes=0-9"),
            ("x-amz-content-sha256", EMPTY_SHA256),
        ],
        EMPTY_SHA256,
    );
    assert_eq!(signed, "host;range;x-amz-content-sha256;x-amz-date");
    assert_eq!(
        sig,
        "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    );
}

#[test]
fn s3_example_put_object() {
    let body = b"Welcome to Amazon S3.";
    let payload = sha256_hex(body);
    assert_eq!(
        payload,
        "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
    );
    let path = format!("/{}", uri_encode("test$file.text", false));
    assert_eq!(path, "/test%24file.text");
    let (signed, sig) = s3_sign(
        "PUT",
        &path,
        &[],
        &[
            ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
            ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ("x-amz-content-sha256", &payload),
        ],
        &payload,
    );
    assert_eq!(
        signed,
        "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class"
    );
    assert_eq!(
        sig,
        "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
    );
}

#[test]
fn s3_example_get_bucket_lifecycle() {
    let (signed, sig) = s3_sign(
        "GET",
        "/",
        &[("lifecycle", "")],
        &[("x-amz-content-sha256", EMPTY_SHA256)],
        EMPTY_SHA256,
    );
    assert_eq!(signed, "host;x-amz-content-sha256;x-amz-date");
    assert_eq!(
        sig,
        "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
    );
}

#[test]
fn s3_example_list_objects() {
    let (_, sig) = s3_sign(
        "GET",
        "/",
        &[("prefix", "J"), ("max-keys", "2")],
        &[("x-amz-content-sha256", EMPTY_SHA256)],
        EMPTY_SHA256,
    );
    assert_eq!(
        sig,
        "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
    );
}

fn suite_sign(method: &str, query: &[(&str, &str)]) -> (String, String) {
    let query = pairs(query);
    let req = SigningRequest {
        method,
        host: "example.amazonaws.com",
        path: "/",
        query: &query,
        headers: &[],
        payload_sha256_hex: EMPTY_SHA256,
    };
    let scope = Scope {
        region: "us-east-1",
        service: "service",
        unix_seconds: SUITE_TIME,
    };
    signature_of(&sign(&req, &suite_credentials(), scope))
}

#[test]
fn suite_get_vanilla() {
    let (signed, sig) = suite_sign("GET", &[]);
    assert_eq!(signed, "host;x-amz-date");
    assert_eq!(
        sig,
        "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    );
}

#[test]
fn suite_get_vanilla_query_order_key_case() {
    let (_, sig) = suite_sign("GET", &[("Param2", "value2"), ("Param1", "value1")]);
    assert_eq!(
        sig,
        "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
    );
}

#[test]
fn suite_post_vanilla() {
    let (_, sig) = suite_sign("POST", &[]);
    assert_eq!(
        sig,
        "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"
    );
}

#[test]
fn session_token_is_signed_and_sent() {
    let creds = Credentials {
        session_token: Some("TOKEN/+=".into()),
        ..suite_credentials()
    };
    let req = SigningRequest {
        method: "GET",
        host: "example.amazonaws.com",
        path: "/",
        query: &[],
        headers: &[],
        payload_sha256_hex: EMPTY_SHA256,
    };
    let scope = Scope {
        region: "us-east-1",
        service: "service",
        unix_seconds: SUITE_TIME,
    };
    let out = sign(&req, &creds, scope);
    assert!(out.contains(&("x-amz-security-token".to_string(), "TOKEN/+=".to_string())));
    let (signed, _) = signature_of(&out);
    assert_eq!(signed, "host;x-amz-date;x-amz-security-token");
}

#[test]
fn repeated_headers_join_in_order_and_spaces_fold() {
    let mut headers = pairs(&[("x-b", "  two   words "), ("x-a", "1"), ("x-a", "2")]);
    let (lines, signed) = canonical_headers(&mut headers);
    assert_eq!(lines, "x-a:1,2\nx-b:two words\n");
    assert_eq!(signed, "x-a;x-b");
}

#[test]
fn uri_encoding_follows_the_strict_set() {
    assert_eq!(uri_encode("a b+c~d/e=é", false), "a%20b%2Bc~d/e%3D%C3%A9");
    assert_eq!(uri_encode("a/b", true), "a%2Fb");
}

#[test]
fn dates_render_in_utc() {
    assert_eq!(amz_date(0), "19700101T000000Z");
    assert_eq!(amz_date(S3_EXAMPLE_TIME), "20130524T000000Z");
    assert_eq!(amz_date(SUITE_TIME), "20150830T123600Z");
    assert_eq!(amz_date(951_782_400), "20000229T000000Z");
    assert_eq!(amz_date(4_102_444_799), "20991231T235959Z");
}

#[test]
fn debug_never_shows_secrets() {
    let creds = Credentials {
        session_token: Some("SESSIONSECRET".into()),
        ..s3_example_credentials()
    };
    let shown = format!("{creds:?}");
    assert!(shown.contains("AKIAIOSFODNN7EXAMPLE"));
    assert!(!shown.contains("wJalrXUtnFEMI"));
    assert!(!shown.contains("SESSIONSECRET"));
}

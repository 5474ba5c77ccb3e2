//! The Azure Blob store over the model: what each request becomes on the
//! wire, how it is authorized, what each call costs, and Azure's replies
//! read back as the protocol's.

use super::*;
use crate::client::ClientCore;
use crate::config::ClientConfig;
use crate::config::{RawConfig, Store, Strategy};
use crate::error::Error;
use crate::expiry::ExpiryClock;
use crate::fenced::{Change, META_TOKEN};
use crate::lease::Grant;
use crate::protocol::AcquireOutcome;
use crate::ready::Ready;
use crate::stores::azure::model::{self as azure_model, AzureIo, ACCOUNT, ACCOUNT_KEY, CONTAINER};
use crate::stores::s3::S3Response;
use crate::testing::raw_config;

const START_MS: u64 = 1_700_000_000_000;

fn raw(credential: AzureCredential) -> RawConfig {
    let mut raw = raw_config(Strategy::SingleObject, ExpiryClock::Server);
    raw.expiry_clock = None;
    raw.store = Store::AzureBlob(AzureBlob {
        endpoint: "http://127.0.0.1:10000".into(),
        addressing: crate::config::Addressing::Path,
        account: ACCOUNT.into(),
        container: CONTAINER.into(),
        credential,
    });
    raw
}

fn shared_key() -> AzureCredential {
    AzureCredential::shared_key(ACCOUNT_KEY).unwrap()
}

fn config() -> ClientConfig {
    ClientConfig::validate(raw(shared_key())).unwrap()
}

fn client() -> ClientCore {
    ClientCore::new(config())
}

fn grant(holder: &str) -> Grant {
    Grant::new(10_000, holder.into(), "meta".into()).unwrap()
}

fn blob_of(c: &ClientConfig) -> &AzureBlob {
    match &c.store {
        Store::AzureBlob(blob) => blob,
        other => panic!("not an Azure store: {other:?}"),
    }
}

fn blob_of_raw(r: &mut RawConfig) -> &mut AzureBlob {
    match &mut r.store {
        Store::AzureBlob(blob) => blob,
        other => panic!("not an Azure store: {other:?}"),
    }
}

fn header<'a>(r: &'a HttpRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// What each protocol request was, as `METHOD key`.
fn sent(io: &mut AzureIo) -> Vec<String> {
    io.take_requests()
        .iter()
        .map(|r| format!("{} {}", r.method.as_str(), r.object_key))
        .collect()
}

fn field_of(r: Result<ClientConfig, Error>) -> String {
    match r {
        Err(Error::InvalidConfig { field, .. }) => field,
        other => panic!("expected invalid-config, got {other:?}"),
    }
}

#[test]
fn config_takes_server_by_default_every_clock_and_only_single_object() {
    let c = config();
    assert_eq!(c.expiry_clock, ExpiryClock::Server);
    for clock in [
        ExpiryClock::Holder,
        ExpiryClock::Server,
        ExpiryClock::Observed,
    ] {
        let mut r = raw(shared_key());
        r.expiry_clock = Some(clock);
        assert_eq!(ClientConfig::validate(r).unwrap().expiry_clock, clock);
    }
    let mut r = raw(shared_key());
    r.strategy = Some(Strategy::EpochObjects);
    assert_eq!(field_of(ClientConfig::validate(r)), "strategy");
    assert_eq!(c.seal_scope(), "azure:devstoreaccount1/locks");
}

#[test]
fn config_refuses_bad_accounts_containers_and_credentials_without_echoing_secrets() {
    for account in ["ab", "UPPER", "has-dash", &"a".repeat(25)] {
        let mut r = raw(shared_key());
        if let Store::AzureBlob(b) = &mut r.store {
            b.account = account.into();
        }
        assert_eq!(
            field_of(ClientConfig::validate(r)),
            "store.azure-blob.account",
            "{account}"
        );
    }
    for container in [
        "ab",
        "Locks",
        "-locks",
        "locks-",
        "lo--cks",
        "a_b",
        &"a".repeat(64),
    ] {
        let mut r = raw(shared_key());
        if let Store::AzureBlob(b) = &mut r.store {
            b.container = container.into();
        }
        assert_eq!(
            field_of(ClientConfig::validate(r)),
            "store.azure-blob.container",
            "{container}"
        );
    }
    for (made, secret) in [
        (
            AzureCredential::shared_key("not base64 secret!"),
            "not base64 secret!",
        ),
        (AzureCredential::shared_key(""), ""),
        (
            AzureCredential::sas("sv=2024&se=x&sp=rw"),
            "sv=2024&se=x&sp=rw",
        ),
        (
            AzureCredential::sas("sig=has space secret"),
            "has space secret",
        ),
        (
            AzureCredential::bearer("two words-secret"),
            "two words-secret",
        ),
        (AzureCredential::bearer(""), ""),
    ] {
        let e = made.unwrap_err();
        let shown = format!("{e} {e:?}");
        assert!(
            matches!(&e, Error::InvalidConfig { field, .. } if field == "store.azure-blob.credential"),
            "{e:?}"
        );
        assert!(secret.is_empty() || !shown.contains(secret), "{shown}");
    }
    assert!(AzureCredential::sas("?sv=2024-11-04&sig=abc%2B%3D").is_ok());
    // Debug never shows a credential.
    let c = ClientConfig::validate(raw(AzureCredential::bearer("BEARER-SECRET").unwrap())).unwrap();
    let shown = format!("{c:?} {:?}", shared_key());
    assert!(
        !shown.contains("BEARER-SECRET") && !shown.contains(&ACCOUNT_KEY[..20]),
        "{shown}"
    );
}

#[test]
fn a_put_becomes_put_blob_signed_with_shared_key() {
    let c = config();
    let req = S3Request::new(Method::Put, "locks/a b/é+k", 1024)
        .header("if-none-match", "*")
        .header(META_TOKEN, "7")
        .header("x-amz-meta-s3lease-write", "w1")
        .body("application/json", b"{}".to_vec());
    let http = prepare(c.reach(), blob_of(&c), &req, 1_700_000_000);
    assert_eq!(http.method, Method::Put);
    assert_eq!(http.authority, "127.0.0.1:10000");
    assert_eq!(
        http.path_and_query,
        "/devstoreaccount1/locks/locks/a%20b/%C3%A9%2Bk"
    );
    assert_eq!(header(&http, "x-ms-blob-type"), Some("BlockBlob"));
    assert_eq!(header(&http, "x-ms-version"), Some(API_VERSION));
    assert_eq!(
        header(&http, "x-ms-date"),
        Some("Tue, 14 Nov 2023 22:13:20 GMT")
    );
    assert_eq!(header(&http, "content-length"), Some("2"));
    assert_eq!(header(&http, "if-none-match"), Some("*"));
    assert_eq!(header(&http, "x-ms-meta-s3lease_token"), Some("7"));
    assert_eq!(header(&http, "x-ms-meta-s3lease_write"), Some("w1"));
    assert!(
        http.headers.iter().all(|(k, _)| !k.starts_with("x-amz-")),
        "{:?}",
        http.headers
    );
    let auth = header(&http, "authorization").unwrap();
    assert!(auth.starts_with("SharedKey devstoreaccount1:"), "{auth}");
    // The model recomputes the signature from what arrived.
    let mut model = azure_model::AzureModel::new(START_MS);
    assert_eq!(model.handle_http(&http).status, 201);
    let mut tampered = http.clone();
    tampered.headers.retain(|(k, _)| k != "if-none-match");
    let refused = model.handle_http(&tampered);
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.header("x-ms-error-code"),
        Some("AuthenticationFailed")
    );
}

#[test]
fn virtual_hosted_addressing_leaves_the_account_out_of_the_path() {
    let mut r = raw(shared_key());
    blob_of_raw(&mut r).endpoint = "https://devstoreaccount1.blob.core.windows.net".into();
    blob_of_raw(&mut r).addressing = crate::config::Addressing::VirtualHosted;
    let c = ClientConfig::validate(r).unwrap();
    let http = prepare(
        c.reach(),
        blob_of(&c),
        &S3Request::new(Method::Get, "k", 10),
        0,
    );
    assert_eq!(http.authority, "devstoreaccount1.blob.core.windows.net");
    assert_eq!(http.path_and_query, "/locks/k");
    assert_eq!(header(&http, "content-length"), None);
    assert_eq!(header(&http, "x-ms-blob-type"), None);
}

#[test]
fn a_sas_goes_in_the_query_and_a_bearer_in_the_header_and_debug_shows_neither() {
    let sas = AzureCredential::sas("?sv=2024-11-04&sp=rwd&sig=SAS%2BSECRET%3D").unwrap();
    let c = ClientConfig::validate(raw(sas)).unwrap();
    let http = prepare(
        c.reach(),
        blob_of(&c),
        &S3Request::new(Method::Get, "k", 10),
        0,
    );
    assert_eq!(
        http.path_and_query,
        "/devstoreaccount1/locks/k?sv=2024-11-04&sp=rwd&sig=SAS%2BSECRET%3D"
    );
    assert_eq!(header(&http, "authorization"), None);
    let shown = format!("{http:?} {c:?}");
    assert!(!shown.contains("SAS%2BSECRET"), "{shown}");
    assert!(shown.contains("sig=<redacted>"), "{shown}");
    let mut model = azure_model::AzureModel::new(START_MS);
    assert_eq!(
        model
            .handle_for(&c, &S3Request::new(Method::Get, "k", 10))
            .status,
        403
    );
    model.sas_signatures.push("SAS+SECRET=".into());
    assert_eq!(
        model
            .handle_for(&c, &S3Request::new(Method::Get, "k", 10))
            .status,
        404
    );

    let bearer = AzureCredential::bearer("eyJ0eXAi.BEARER.SECRET").unwrap();
    let c = ClientConfig::validate(raw(bearer)).unwrap();
    let http = prepare(
        c.reach(),
        blob_of(&c),
        &S3Request::new(Method::Get, "k", 10),
        0,
    );
    assert_eq!(
        header(&http, "authorization"),
        Some("Bearer eyJ0eXAi.BEARER.SECRET")
    );
    assert!(!format!("{http:?} {c:?}").contains("BEARER.SECRET"));
    assert_eq!(
        model
            .handle_for(&c, &S3Request::new(Method::Get, "k", 10))
            .status,
        401
    );
    model.bearer_tokens.push("eyJ0eXAi.BEARER.SECRET".into());
    assert_eq!(
        model
            .handle_for(&c, &S3Request::new(Method::Get, "k", 10))
            .status,
        404
    );
}

#[test]
fn a_wrong_declared_payload_hash_becomes_a_wrong_content_md5() {
    let c = config();
    let body = b"these bytes".to_vec();
    let wrong = crate::sigv4::sha256_hex(b"other bytes");
    let req = S3Request::new(Method::Put, "d", 100)
        .header(PAYLOAD_HASH, &wrong)
        .body("text/plain", body.clone());
    let http = prepare(c.reach(), blob_of(&c), &req, 0);
    let md5 = header(&http, "content-md5").unwrap();
    assert_eq!(crate::base64::decode(md5).unwrap().len(), 16);
    let mut model = azure_model::AzureModel::new(START_MS);
    let refused = model.handle_for(&c, &req);
    assert_eq!(refused.status, 400);
    assert_eq!(refused.s3_error().code, "Md5Mismatch");
    // The body's own hash declares nothing wrong: no Content-MD5.
    let right = S3Request::new(Method::Put, "d", 100)
        .header(PAYLOAD_HASH, &crate::sigv4::sha256_hex(&body))
        .body("text/plain", body);
    assert_eq!(
        header(&prepare(c.reach(), blob_of(&c), &right, 0), "content-md5"),
        None
    );
    assert_eq!(model.handle_for(&c, &right).status, 200);
}

fn azure_error(status: u16, code: &str, extra: &str) -> S3Response {
    S3Response {
        status,
        headers: vec![
            ("x-ms-error-code".into(), code.into()),
            ("x-ms-request-id".into(), "req-1".into()),
        ],
        body: format!(
            "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code>\
             <Message>Words &amp; more.\nRequestId:req-1\nTime:2023-11-14T22:13:20.0Z</Message>{extra}</Error>"
        )
        .into_bytes(),
        body_too_large: None,
    }
}

#[test]
fn azures_answers_are_the_protocols() {
    let put = S3Request::new(Method::Put, "k", 10).header("if-none-match", "*");
    let r = read_reply(&put, azure_error(409, "BlobAlreadyExists", ""));
    assert_eq!(
        (r.status, r.s3_error().code.as_str()),
        (412, "BlobAlreadyExists")
    );
    let e = r.s3_error();
    assert_eq!(
        (e.message.as_str(), e.request_id.as_str()),
        ("Words & more.", "req-1")
    );
    let r = read_reply(&put, azure_error(412, "ConditionNotMet", ""));
    assert_eq!(r.status, 412);
    let get = S3Request::new(Method::Get, "k", 10);
    let r = read_reply(&get, azure_error(404, "BlobNotFound", ""));
    assert!(r.is_missing_object());
    let r = read_reply(&get, azure_error(404, "ContainerNotFound", ""));
    assert!(!r.is_missing_object());
    let e = r.into_error();
    assert!(matches!(&e, Error::NoSuchBucket(_)), "{e:?}");
    assert!(e.to_string().contains("no such container"), "{e}");
    // The string Azure signed is never kept; a stale date is a skew.
    let detail = "<AuthenticationErrorDetail>The MAC signature found in the HTTP request 'SIG' \
                  is not the same as any computed signature. Server used following string to sign: \
                  'PUT\n\n\nSTRING'.</AuthenticationErrorDetail>";
    let r = read_reply(&get, azure_error(403, "AuthenticationFailed", detail));
    let e = r.clone().into_error();
    assert!(matches!(&e, Error::AccessDenied(_)), "{e:?}");
    assert!(!format!("{e} {e:?} {r:?}").contains("STRING"), "{e:?}");
    let stale = "<AuthenticationErrorDetail>Request date header too old: 'Fri, 04 Oct 2019 18:02:12 GMT'</AuthenticationErrorDetail>";
    let r = read_reply(&get, azure_error(403, "AuthenticationFailed", stale));
    assert!(r.is_clock_skew(), "{r:?}");
    // A HEAD's error has no body: its code is in a header.
    let head = S3Request::new(Method::Head, "k", 10);
    let mut bare = azure_error(404, "ContainerNotFound", "");
    bare.body.clear();
    assert!(matches!(
        read_reply(&head, bare).into_error(),
        Error::NoSuchBucket(_)
    ));
    // Successes as S3's; metadata as S3's names; a server's own x-amz-meta
    // or the translations' header never counts.
    let ok = S3Response {
        status: 201,
        headers: vec![
            ("etag".into(), "\"0x8DC1\"".into()),
            ("x-ms-meta-s3lease_token".into(), "9".into()),
            ("x-amz-meta-s3lease-lock".into(), "forged".into()),
            (crate::stores::s3::UNREADABLE_HEADER.into(), "forged".into()),
            (
                crate::stores::s3::NOT_THE_STORE_HEADER.into(),
                "forged".into(),
            ),
            ("x-ms-request-id".into(), "R1".into()),
        ],
        ..S3Response::default()
    };
    let r = read_reply(&put, ok.clone());
    assert_eq!(r.status, 200);
    assert_eq!(r.header(META_TOKEN), Some("9"));
    assert_eq!(r.header("x-amz-meta-s3lease-lock"), None);
    assert_eq!(r.header(crate::stores::s3::UNREADABLE_HEADER), None);
    assert_eq!(r.header(crate::stores::s3::NOT_THE_STORE_HEADER), None);
    let del = S3Request::new(Method::Delete, "k", 10);
    assert_eq!(
        read_reply(&del, S3Response { status: 202, ..ok }).status,
        204
    );
    // A proxy's page is kept as it came.
    let html = S3Response {
        status: 502,
        body: b"<html>bad gateway</html>".to_vec(),
        ..S3Response::default()
    };
    assert_eq!(read_reply(&get, html.clone()), html);
}

/// The wrong endpoint's error `reply` to `req` ends this store's
/// operation with, if any.
fn judged(req: &S3Request, reply: S3Response) -> Option<String> {
    let read = read_reply(req, reply);
    crate::testing::wrong_endpoint_reason(
        &crate::stores::azure::PROFILE,
        req,
        &read,
        "not an Azure Blob endpoint",
    )
}

#[test]
fn a_reply_no_blob_service_sends_is_a_wrong_endpoint() {
    let reply = crate::testing::response;
    let id = ("x-ms-request-id", "R1");
    let get = S3Request::new(Method::Get, "k", 1024);
    let put = S3Request::new(Method::Put, "k", 1024).body("application/json", b"{}".to_vec());
    let head = S3Request::new(Method::Head, "k", 1024);
    for req in [&get, &put, &head] {
        for body in ["", "404 page not found\n", "<html>not here</html>"] {
            let reason = judged(req, reply(404, &[id], body)).unwrap();
            assert!(
                reason.contains("with 404 and no Azure error code"),
                "{reason}"
            );
        }
        // A success without Azure's request id: a filer's 201, say.
        let reason = judged(req, reply(201, &[("etag", "\"e\"")], "{}")).unwrap();
        assert!(reason.contains("no x-ms-request-id"), "{reason}");
    }
    // Azure's own replies: a 404 with its code (a HEAD's in the header).
    let not_found = "<Error><Code>BlobNotFound</Code><Message>gone</Message></Error>";
    assert_eq!(judged(&get, reply(404, &[id], not_found)), None);
    let code = ("x-ms-error-code", "BlobNotFound");
    assert_eq!(judged(&head, reply(404, &[id, code], "")), None);
    assert_eq!(judged(&put, reply(201, &[id, ("etag", "\"e\"")], "")), None);
    // Other statuses are read as before, whatever their body.
    for status in [400, 403, 409, 412, 500, 502, 503] {
        assert_eq!(
            judged(&get, reply(status, &[], "<html>busy</html>")),
            None,
            "{status}"
        );
    }
}

#[test]
fn each_call_costs_what_it_costs_on_s3() {
    let mut c = client();
    let mut io = AzureIo::starting_at(START_MS);
    let AcquireOutcome::Granted(lease) = c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap()
    else {
        panic!("not granted")
    };
    assert_eq!(lease.token, 1);
    assert!(lease.etag.starts_with("\"0x8DC"), "{}", lease.etag);
    // The container's first client creates its seal key, then the grant.
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
    let lease = c.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(sent(&mut io), ["PUT locks/k"]);
    // Another client reads the seal key once, and checks a lease it did
    // not write with one GET (as on S3).
    let mut other = client();
    let lease = other.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(
        sent(&mut io),
        ["GET locks/.s3-lease-seal-key", "GET locks/k", "PUT locks/k"]
    );
    let lease = other.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(sent(&mut io), ["PUT locks/k"]);
    let state = c.inspect(&mut io, "k").ready().unwrap().unwrap();
    assert!(state.live && state.expires_in_ms > 0, "{state:?}");
    assert_eq!(sent(&mut io), ["GET locks/k"]);
    // Unchanged since: 304, no body.
    c.inspect(&mut io, "k").ready().unwrap().unwrap();
    assert_eq!(sent(&mut io), ["GET locks/k"]);
    other.rewrite(&mut io, lease.clone(), true).ready().unwrap();
    assert_eq!(sent(&mut io), ["PUT locks/k"]);
    let AcquireOutcome::Granted(again) = other
        .try_acquire(&mut io, "k", &grant("b"))
        .ready()
        .unwrap()
    else {
        panic!("not granted")
    };
    assert_eq!(again.token, 2, "release kept the blob and its counter");
    assert_eq!(sent(&mut io), ["PUT locks/k"]);
    // A spent lease: lost, nothing written.
    let e = c.rewrite(&mut io, lease, false).ready().unwrap_err();
    assert!(matches!(e, Error::Lost { .. }), "{e:?}");
    assert_eq!(sent(&mut io), ["GET locks/k"]);

    // Fenced writes: HEAD, PUT; the token in x-ms-meta; read with it.
    let written = other
        .fenced_write(&mut io, &again, "data/x", put_change(b"v1"), false)
        .ready()
        .unwrap();
    assert_eq!(written.token, 2);
    assert_eq!(sent(&mut io), ["HEAD data/x", "PUT data/x"]);
    let stored = io.store.blob("data/x").unwrap();
    assert!(
        stored
            .metadata
            .contains(&("x-ms-meta-s3lease_token".into(), "2".into())),
        "{:?}",
        stored.metadata
    );
    let got = c.fenced_get(&mut io, "data/x").ready().unwrap().unwrap();
    assert_eq!((got.token, got.body.as_slice()), (2, &b"v1"[..]));
    assert_eq!(got.content_type, "text/plain");
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
fn a_stale_holder_is_fenced_out_and_equal_bytes_never_pass_a_stale_condition() {
    let mut c = client();
    let mut io = AzureIo::starting_at(START_MS);
    let AcquireOutcome::Granted(first) = c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap()
    else {
        panic!()
    };
    c.fenced_write(&mut io, &first, "data/x", put_change(b"same"), false)
        .ready()
        .unwrap();
    let etag_before = io.store.blob("data/x").unwrap().etag.clone();
    // The same bytes again, by the same token: Azure gives a new ETag (on
    // S3 the MD5 would be the same), so an If-Match taken before never
    // passes over it.
    c.fenced_write(&mut io, &first, "data/x", put_change(b"same"), false)
        .ready()
        .unwrap();
    assert_ne!(io.store.blob("data/x").unwrap().etag, etag_before);
    let stale = S3Request::new(Method::Put, "data/x", 100)
        .header("if-match", &etag_before)
        .body("text/plain", b"same".to_vec());
    assert_eq!(io.store.handle(&stale).status, 412);

    c.rewrite(&mut io, first.clone(), true).ready().unwrap();
    let AcquireOutcome::Granted(second) = c.try_acquire(&mut io, "k", &grant("b")).ready().unwrap()
    else {
        panic!()
    };
    c.fenced_write(&mut io, &second, "data/x", put_change(b"newer"), false)
        .ready()
        .unwrap();
    let e = c
        .fenced_write(&mut io, &first, "data/x", put_change(b"late"), false)
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

#[test]
fn two_clients_exclude_each_other_and_a_lost_grant_reply_is_recognised() {
    let mut a = client();
    let mut b = client();
    let mut io = AzureIo::starting_at(START_MS);
    io.lose_put_replies = 3; // the seal key's create, the key's floor, the grant
    let AcquireOutcome::Granted(lease) = a.try_acquire(&mut io, "k", &grant("a")).ready().unwrap()
    else {
        panic!("a lost reply hid a grant that landed")
    };
    assert_eq!(lease.token, 1);
    let held = b.try_acquire(&mut io, "k", &grant("b")).ready().unwrap();
    assert!(matches!(held, AcquireOutcome::Held(Some(_))), "{held:?}");
    // Past its ttl plus 2 s, by the server's whole-second clock, b takes over.
    io.advance(13_000);
    let AcquireOutcome::Granted(taken) = b.try_acquire(&mut io, "k", &grant("b")).ready().unwrap()
    else {
        panic!("not taken over")
    };
    assert_eq!(taken.token, 2);
    let e = a.rewrite(&mut io, lease, false).ready().unwrap_err();
    assert!(matches!(e, Error::Lost { .. }), "{e:?}");
}

#[test]
fn a_missing_container_and_a_stale_signing_clock_are_typed() {
    let mut io = AzureIo::starting_at(START_MS);
    io.store.containers.clear();
    let e = client()
        .try_acquire(&mut io, "k", &grant("a"))
        .ready()
        .unwrap_err();
    assert!(
        matches!(&e, Error::NoSuchBucket(x) if x.code == "ContainerNotFound"),
        "{e:?}"
    );
    // A client whose clock is 20 minutes slow is refused once, adopts
    // the server's Date for signing, and goes on.
    let mut io = AzureIo::starting_at(START_MS);
    let config = config();
    let mut skewed = SkewedIo {
        io: &mut io,
        config,
        offset_ms: -20 * 60 * 1000,
        refusals: 0,
    };
    let outcome = client().try_acquire(&mut skewed, "k", &grant("a")).ready();
    assert!(
        matches!(outcome, Ok(AcquireOutcome::Granted(_))),
        "{outcome:?}"
    );
    assert_eq!(skewed.refusals, 1);
}

/// Signs on a skewed clock until told the server's.
struct SkewedIo<'a> {
    io: &'a mut AzureIo,
    config: ClientConfig,
    offset_ms: i64,
    refusals: u32,
}

impl crate::driver::Io for SkewedIo<'_> {
    async fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        let now = self.io.store.now_ms.saturating_add_signed(self.offset_ms);
        let http = prepare(
            self.config.reach(),
            blob_of(&self.config),
            request,
            now / 1000,
        );
        let reply = read_reply(request, self.io.store.handle_http(&http));
        if reply.is_clock_skew() {
            self.refusals += 1;
        }
        Ok(reply)
    }
    fn correct_signing_clock(&mut self, server_ms: u64) {
        self.offset_ms = server_ms as i64 - self.io.store.now_ms as i64;
    }
    fn now_ms(&mut self) -> u64 {
        self.io.store.now_ms
    }
    fn monotonic_ms(&mut self) -> u64 {
        crate::driver::Io::monotonic_ms(self.io)
    }
    async fn sleep_ms(&mut self, ms: u64) {
        self.io.advance(ms);
    }
    fn random_u64(&mut self) -> u64 {
        crate::driver::Io::random_u64(self.io)
    }
    fn endpoint(&self) -> Option<crate::stores::s3::Endpoint> {
        Some(crate::stores::s3::Endpoint {
            store: &crate::stores::azure::PROFILE,
            url: crate::testing::model_io::MODEL_ENDPOINT.into(),
        })
    }
}

#[test]
fn the_preflight_passes_a_container_and_refuses_one_that_races() {
    use crate::capability::{Capability, Verdict};
    use crate::preflight::RACE_REQUESTS;
    use crate::testing::racing::{Race, Racing};
    let mut io = AzureIo::starting_at(START_MS);
    let report = client().preflight(&mut io).ready().unwrap();
    let verdict = |report: &crate::preflight::Report, cap: Capability| {
        report
            .results
            .iter()
            .find(|r| r.capability == cap)
            .cloned()
            .unwrap_or_else(|| panic!("{cap:?} not reported"))
    };
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
    // Azure's own answers, as the protocol reads them.
    let create = verdict(&report, Capability::IfNoneMatchExisting);
    assert_eq!(
        (create.status, create.code.as_str()),
        (Some(412), "BlobAlreadyExists")
    );
    let missing = verdict(&report, Capability::IfMatchMissingKey);
    assert_eq!(
        (missing.status, missing.code.as_str()),
        (Some(412), "ConditionNotMet")
    );
    let hash = verdict(&report, Capability::PayloadHash);
    assert_eq!(hash.code, "Md5Mismatch");
    assert!(hash.detail.contains("Content-MD5"), "{}", hash.detail);
    let list = verdict(&report, Capability::ListStartAfter);
    assert_eq!(list.verdict, Verdict::Fail);
    assert!(report.config_safe, "{report:#?}");
    assert_eq!(report.safe_strategies, [Strategy::SingleObject]);
    assert_eq!(
        report.safe_expiry_clocks,
        [
            ExpiryClock::Holder,
            ExpiryClock::Server,
            ExpiryClock::Observed
        ]
    );
    // 13 probes (the GET that finds a missing container first, no LIST)
    // and their cleanup, then the race.
    assert_eq!(report.requests, 13 + RACE_REQUESTS);
    assert_eq!(io.take_requests().len() as u32, report.requests);
    assert!(
        io.store.containers[CONTAINER].is_empty(),
        "{:?}",
        io.store.containers
    );

    // The same container behind a store that checks, then writes.
    let mut model = AzureIo::starting_at(START_MS);
    let mut racing = Racing::new(&mut model, Race::CheckThenWrite);
    let report = client().preflight(&mut racing).ready().unwrap();
    let create = verdict(&report, Capability::ConcurrentCreate);
    assert_eq!(
        (create.verdict, create.silent),
        (Verdict::Fail, true),
        "{create:?}"
    );
    assert!(
        create.detail.starts_with("round 1 of 3"),
        "{}",
        create.detail
    );
    assert!(!report.config_safe);
}

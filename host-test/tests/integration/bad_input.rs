//! Bad input never traps the instance: wrong keys, missing buckets, corrupt
//! lock objects, bad config, odd replies. Each is a typed error, and the
//! instance keeps working afterwards.

use super::*;
use host_test::bindings::{Config, Error as E, Lease};
use host_test::hooks::Fault;

/// After any error the same instance must still serve a normal call.
fn still_works(i: &mut Instance) {
    i.inspect("still-works")
        .expect("instance survived")
        .expect("inspect works");
}

#[test]
fn a_wrong_secret_is_access_denied_and_never_echoed() {
    let mut config = endpoint().config(&fresh_prefix("denied"));
    let secret = "definitely-the-wrong-secret-value";
    config.s3_mut().credentials.secret_access_key = secret.into();
    let mut i = harness().instance().unwrap();
    i.open(&config).unwrap().expect("the config is well-formed");
    match expect_err(i.try_acquire("k", &options(1_000))) {
        E::AccessDenied(e) => {
            assert_eq!(e.status, 403);
            assert!(!e.code.is_empty(), "the S3 code is kept: {e:?}");
            let shown = format!("{e:?}");
            assert!(!shown.contains(secret), "{shown}");
        }
        other => panic!("expected access-denied, got {other:?}"),
    }
    // Same for a session token the server does not know.
    config.s3_mut().credentials.session_token = Some("an-unknown-session-token".into());
    i.open(&config).unwrap().unwrap();
    assert!(matches!(
        expect_err(i.inspect("k")),
        E::AccessDenied(_) | E::S3(_)
    ));
}

#[test]
fn a_missing_bucket_is_no_such_bucket() {
    let mut config = endpoint().config("p/");
    config.s3_mut().bucket = "s3-lease-no-such-bucket-here".into();
    let mut i = harness().instance().unwrap();
    i.open(&config).unwrap().unwrap();
    match expect_err(i.try_acquire("k", &options(1_000))) {
        E::NoSuchBucket(e) => assert_eq!(e.code, "NoSuchBucket"),
        other => panic!("expected no-such-bucket, got {other:?}"),
    }
    assert!(matches!(expect_err(i.inspect("k")), E::NoSuchBucket(_)));
}

#[test]
fn corrupt_lock_objects_are_reported_and_left_as_they_were() {
    let prefix = fresh_prefix("corrupt");
    let admin = endpoint().admin().unwrap();
    let mut i = opened(&prefix);
    let ten_mb = vec![b'{'; 10 * 1024 * 1024];
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "random-bytes",
            vec![0x00, 0xff, 0x13, 0x37, 0x80, 0x7f],
            "not JSON",
        ),
        (
            "missing-token",
            br#"{"expires_at": 1.5}"#.to_vec(),
            "missing field \"token\"",
        ),
        (
            "missing-expiry",
            br#"{"token": 4}"#.to_vec(),
            "missing field \"expires_at\"",
        ),
        (
            "wrong-types",
            br#"{"expires_at": "later", "token": 1}"#.to_vec(),
            "must be a number",
        ),
        (
            "negative-token",
            br#"{"expires_at": 0, "token": -2}"#.to_vec(),
            "non-negative integer",
        ),
        ("array", b"[]".to_vec(), "expected a JSON object"),
        ("ten-megabytes", ten_mb, "10485760 bytes"),
    ];
    for (key, body, why) in cases {
        let full_key = format!("{prefix}{key}");
        let etag = admin.put(&full_key, &body).unwrap();
        for attempt in ["try-acquire", "acquire", "inspect"] {
            let err = match attempt {
                "try-acquire" => expect_err(i.try_acquire(key, &options(1_000))),
                "acquire" => expect_err(i.acquire(key, &options(1_000), 500)),
                _ => expect_err(i.inspect(key)),
            };
            match err {
                E::CorruptLockObject(c) => {
                    assert_eq!(c.object_key, full_key);
                    assert!(c.reason.contains(why), "{key} via {attempt}: {}", c.reason);
                }
                other => panic!("{key} via {attempt}: expected corrupt-lock-object, got {other:?}"),
            }
        }
        let (stored, stored_etag) = admin.get(&full_key).unwrap().expect("still there");
        assert_eq!(stored_etag, etag, "{key} was not touched");
        assert_eq!(stored.len(), body.len());
        still_works(&mut i);
    }
}

#[test]
fn bad_config_is_invalid_config_naming_the_field() {
    let good = endpoint().config("p/");
    type Spoil = Box<dyn Fn(&mut Config)>;
    let cases: Vec<(&str, Spoil)> = vec![
        (
            "endpoint",
            Box::new(|c| *c.endpoint_mut() = "ftp://example.com".into()),
        ),
        (
            "endpoint",
            Box::new(|c| *c.endpoint_mut() = "http://127.0.0.1:8333/bucket".into()),
        ),
        ("endpoint", Box::new(|c| *c.endpoint_mut() = "".into())),
        ("region", Box::new(|c| c.s3_mut().region = "us east".into())),
        ("bucket", Box::new(|c| c.s3_mut().bucket = "".into())),
        (
            "credentials.access-key-id",
            Box::new(|c| c.s3_mut().credentials.access_key_id = "".into()),
        ),
        (
            "credentials.secret-access-key",
            Box::new(|c| c.s3_mut().credentials.secret_access_key = "has spaces".into()),
        ),
        (
            "request-timeout-ms",
            Box::new(|c| c.request_timeout_ms = Some(0)),
        ),
    ];
    let mut i = harness().instance().unwrap();
    for (field, spoil) in cases {
        let mut config = good.clone();
        spoil(&mut config);
        match i.open(&config).expect("no trap") {
            Err(E::InvalidConfig(c)) => {
                assert_eq!(c.field, field, "{}", c.reason);
                assert!(!c.reason.contains("has spaces"), "secrets are not echoed");
            }
            other => panic!("{field}: expected invalid-config, got {other:?}"),
        }
    }
    i.open(&good).unwrap().unwrap();
    still_works(&mut i);
}

#[test]
fn bad_arguments_are_invalid_argument() {
    let mut i = opened(&fresh_prefix("args"));
    assert!(matches!(
        expect_err(i.try_acquire("", &options(1_000))),
        E::InvalidArgument(_)
    ));
    assert!(matches!(
        expect_err(i.try_acquire("k", &options(0))),
        E::InvalidArgument(_)
    ));
    assert!(matches!(
        expect_err(i.try_acquire(&"k".repeat(2_000), &options(1_000))),
        E::InvalidArgument(_)
    ));
    let mut big = options(1_000);
    big.metadata = Some("m".repeat(5_000));
    assert!(matches!(
        expect_err(i.try_acquire("k", &big)),
        E::InvalidArgument(_)
    ));

    // A tampered lease must never turn into an unconditional write.
    let lease = try_acquire(&mut i, "k", &options(30_000)).unwrap();
    let mut forged = lease.clone();
    forged.etag = String::new();
    assert!(matches!(
        expect_err(i.renew(&forged)),
        E::InvalidArgument(_)
    ));
    assert!(matches!(
        expect_err(i.release(&forged)),
        E::InvalidArgument(_)
    ));
    forged.etag = "\"not-the-etag\"".into();
    assert!(matches!(
        expect_err(i.release(&forged)),
        E::InvalidArgument(_)
    ));
    let state = i.inspect("k").unwrap().unwrap().unwrap();
    assert_eq!(
        (state.etag, state.live),
        (lease.etag, true),
        "the lock object is untouched"
    );
    still_works(&mut i);
}

/// On SeaweedFS, a lease whose token was lowered once renewed and
/// released, and the next grant reused a token. Now every altered field is refused before any request.
#[test]
fn an_altered_lease_is_refused_and_tokens_never_repeat() {
    let prefix = fresh_prefix("altered");
    let mut i = opened(&prefix);
    for _ in 0..2 {
        let l = try_acquire(&mut i, "k", &options(30_000)).unwrap();
        i.release(&l).unwrap().unwrap();
    }
    let lease = try_acquire(&mut i, "k", &options(30_000)).unwrap();
    assert_eq!(lease.token, 3);
    i.hooks.take_requests();
    let altered = [
        Lease {
            token: 1,
            ..lease.clone()
        },
        Lease {
            metadata: "m".repeat(100_000),
            ..lease.clone()
        },
        Lease {
            acquired_at_ms: u64::MAX,
            ..lease.clone()
        },
        Lease {
            holder_id: "someone else".into(),
            ..lease.clone()
        },
        Lease {
            seal: "v2.00000000000000000000000000000000".into(),
            ..lease.clone()
        },
        // A seal of s3-lease before 0.4's credential-free seals.
        Lease {
            seal: "v1.00000000000000000000000000000000".into(),
            ..lease.clone()
        },
    ];
    for a in &altered {
        assert!(matches!(expect_err(i.renew(a)), E::InvalidArgument(_)));
        assert!(matches!(expect_err(i.release(a)), E::InvalidArgument(_)));
        let put = i.fenced_put(a, &format!("{prefix}data"), b"x", "text/plain");
        assert!(matches!(expect_err(put), E::InvalidArgument(_)));
    }
    assert!(i.hooks.take_requests().is_empty(), "nothing was sent");
    // The genuine lease still works, from another instance too (any
    // client of the bucket and prefix): a stored lease is portable.
    let mut other = opened(&prefix);
    let renewed = other.renew(&lease).unwrap().unwrap();
    i.release(&renewed).unwrap().unwrap();
    let next = try_acquire(&mut i, "k", &options(30_000)).unwrap();
    assert_eq!(next.token, 4, "no token is ever reused");
}

/// Sealed with `seal`, as someone who read the seal key could.
fn sealed_with(seal: &s3_lease::seal::LockSeal, l: &Lease) -> Lease {
    let sealed = seal.seal(s3_lease::lease::Lease {
        key: l.key.clone(),
        token: l.token,
        holder_id: l.holder_id.clone(),
        etag: l.etag.clone(),
        expires_at_ms: l.expires_at_ms,
        acquired_at_ms: l.acquired_at_ms,
        ttl_ms: l.ttl_ms,
        metadata: l.metadata.clone(),
        seal: String::new(),
    });
    Lease {
        seal: sealed.seal,
        ..l.clone()
    }
}

/// The seal key is random and kept in the bucket, so forging a lease takes
/// read access to it. Even then, a lease sealed with it and a lower token
/// (or 70 KB of metadata) writes nothing: the stored token stays, the key
/// stays readable, and the next grant's token is above every earlier one.
#[test]
fn a_lease_sealed_with_the_key_read_from_the_bucket_never_lowers_a_token() {
    let prefix = fresh_prefix("forged");
    let (mut i, mut other) = (opened(&prefix), opened(&prefix));
    for _ in 0..2 {
        let l = try_acquire(&mut i, "k", &options(30_000)).unwrap();
        i.release(&l).unwrap().unwrap();
    }
    let lease = try_acquire(&mut i, "k", &options(30_000)).unwrap();
    assert_eq!(lease.token, 3);

    let admin = endpoint().admin().unwrap();
    let (body, _) = admin
        .get(&format!("{prefix}.s3-lease-seal-key"))
        .unwrap()
        .expect("the seal key, created by the first grant");
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let digits = json["seal_key"].as_str().expect("a seal_key");
    let bytes: Vec<u8> = (0..32)
        .map(|n| u8::from_str_radix(&digits[2 * n..2 * n + 2], 16).unwrap())
        .collect();
    let key = s3_lease::seal::StoredKey::from_bytes(bytes.try_into().unwrap());
    let seal = s3_lease::seal::Sealer::stored(&endpoint().bucket, &key)
        .for_lock(format!("single-object:{prefix}k"));
    assert_eq!(
        sealed_with(&seal, &lease),
        lease,
        "the key read seals as ours do"
    );

    let lower = sealed_with(
        &seal,
        &Lease {
            token: 1,
            ..lease.clone()
        },
    );
    let huge = sealed_with(
        &seal,
        &Lease {
            metadata: "m".repeat(70_000),
            ..lease.clone()
        },
    );
    for forged in [&lower, &huge] {
        for instance in [&mut i, &mut other] {
            instance.hooks.take_requests();
            assert!(matches!(
                expect_err(instance.renew(forged)),
                E::InvalidArgument(_)
            ));
            assert!(matches!(
                expect_err(instance.release(forged)),
                E::InvalidArgument(_)
            ));
            let sent = instance.hooks.take_requests();
            assert!(sent.iter().all(|r| r.method != "PUT"), "{sent:?}");
        }
    }
    let seen = other.inspect("k").unwrap().unwrap().unwrap();
    assert_eq!((seen.token, seen.etag.as_str()), (3, lease.etag.as_str()));
    i.release(&lease).unwrap().unwrap();
    let next = try_acquire(&mut other, "k", &options(30_000)).unwrap();
    assert_eq!(next.token, 4, "no token is ever reused");
}

#[test]
fn a_proxy_html_page_and_a_refused_connection_are_clean_errors() {
    let mut i = opened(&fresh_prefix("odd-replies"));
    i.hooks.inject(Fault::Respond {
        status: 502,
        content_type: "text/html",
        body: "<html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>".into(),
    });
    match expect_err(i.try_acquire("k", &options(1_000))) {
        E::S3(e) => {
            assert_eq!(e.status, 502);
            assert!(e.message.contains("502 Bad Gateway"), "{e:?}");
        }
        other => panic!("expected an s3 error, got {other:?}"),
    }
    i.hooks.inject(Fault::Refuse);
    assert!(matches!(expect_err(i.inspect("k")), E::Transport(t) if t.contains("refused")));

    // acquire rides out transient failures within its deadline.
    i.hooks.inject(Fault::Refuse);
    i.hooks.inject(Fault::Respond {
        status: 503,
        content_type: "application/xml",
        body: "<Error><Code>SlowDown</Code></Error>".into(),
    });
    let lease = i
        .acquire("k", &options(1_000), 10_000)
        .expect("no trap")
        .expect("granted after retries");
    assert_eq!(lease.token, 1);
    still_works(&mut i);
}

#[test]
fn token_metadata_that_is_not_a_number_is_corrupt_and_left_alone() {
    let prefix = fresh_prefix("bad-token-meta");
    let admin = endpoint().admin().unwrap();
    let object = format!("{prefix}data/x");
    let planted =
        s3_lease::stores::s3::S3Request::new(s3_lease::stores::s3::Method::Put, &object, 1 << 16)
            .header("x-amz-meta-s3lease-token", "seven")
            .body("text/plain", b"someone else's".to_vec());
    assert_eq!(admin.send(planted).unwrap().status, 200);

    let mut i = opened(&prefix);
    let lease = try_acquire(&mut i, "k", &options(30_000)).unwrap();
    for err in [
        expect_err(i.fenced_get(&object)),
        expect_err(i.fenced_put(&lease, &object, b"mine", "text/plain")),
        expect_err(i.fenced_delete(&lease, &object)),
    ] {
        match err {
            E::CorruptLockObject(c) => {
                assert_eq!(c.object_key, object);
                assert!(c.reason.contains("\"seven\""), "{}", c.reason);
            }
            other => panic!("expected corrupt-lock-object, got {other:?}"),
        }
    }
    assert_eq!(
        admin.get(&object).unwrap().unwrap().0,
        b"someone else's",
        "nothing was written"
    );
    still_works(&mut i);
}

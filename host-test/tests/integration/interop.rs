//! A plain client of the single-object design (boto3 with fencing: reads
//! `expires_at` and `token`, writes `token + 1`) and the component contend on
//! the same object. Played here by raw S3 calls from the host.

use super::*;
use s3_lease::s3::{Method, S3Request};
use serde_json::Value;

fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn a_plain_design_client_and_the_component_share_one_lock_object() {
    let prefix = fresh_prefix("interop");
    let object = format!("{prefix}lock");
    let admin = endpoint().admin().unwrap();
    let mut i = opened(&prefix);

    // The design client holds the lock, writing only its two fields.
    let body = format!(r#"{{"expires_at": {}, "token": 41}}"#, now_seconds() + 60.0);
    admin.put(&object, body.as_bytes()).unwrap();
    assert_eq!(try_acquire(&mut i, "lock", &options(30_000)), None);
    let seen = i.inspect("lock").unwrap().unwrap().unwrap();
    assert_eq!(
        (seen.token, seen.holder_id.as_str(), seen.live),
        (41, "", true)
    );

    // It lets the lock lapse; the component takes it with the next token.
    let body = format!(r#"{{"expires_at": {}, "token": 41}}"#, now_seconds() - 1.0);
    admin.put(&object, body.as_bytes()).unwrap();
    let lease = try_acquire(&mut i, "lock", &options(30_000)).expect("expired lock is taken");
    assert_eq!(lease.token, 42);

    // What the design client reads back: a float expiry in the future and an
    // integer token, so it backs off; our extra fields sit beside them.
    let (stored, etag) = admin.get(&object).unwrap().unwrap();
    let json: Value = serde_json::from_slice(&stored).unwrap();
    assert!(json["expires_at"].as_f64().unwrap() > now_seconds());
    assert_eq!(json["token"].as_u64(), Some(42));
    assert_eq!(etag, lease.etag);

    // Release: expires_at 0, token kept; the design client's CAS then wins
    // with token 43, and the component sees it.
    i.release(&lease).unwrap().unwrap();
    let (stored, etag) = admin.get(&object).unwrap().unwrap();
    let json: Value = serde_json::from_slice(&stored).unwrap();
    assert_eq!(
        (json["expires_at"].as_f64(), json["token"].as_u64()),
        (Some(0.0), Some(42))
    );
    let body = format!(r#"{{"expires_at": {}, "token": 43}}"#, now_seconds() + 60.0);
    let put = S3Request::new(Method::Put, &object, 64 * 1024)
        .header("if-match", &etag)
        .body("application/json", body.into_bytes());
    assert_eq!(
        admin.send(put).unwrap().status,
        200,
        "the design client's CAS succeeds"
    );
    assert_eq!(try_acquire(&mut i, "lock", &options(30_000)), None);
    assert_eq!(i.inspect("lock").unwrap().unwrap().unwrap().token, 43);
}

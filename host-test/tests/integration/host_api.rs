//! The host crate's typed API (`s3_lease_host::{Client, LeaseGuard,
//! Elector}`) against the real server: the guard renews in the background,
//! releases on drop and notices a lock taken from it; the elector thread
//! hands leadership over; errors are typed and keep secrets out.

use super::{endpoint, fresh_prefix, harness, options};
use host_test::bindings::{ElectorConfig, Error as LeaseError};
use s3_lease_host::{Client, ElectionEvent, Error, LostReason, S3Config};
use std::time::Duration;

fn s3_config(prefix: &str) -> S3Config {
    endpoint().host_config(prefix).unwrap()
}

fn client(prefix: &str) -> Client {
    Client::connect(harness().runtime(), &s3_config(prefix)).unwrap()
}

#[test]
fn a_guard_renews_in_the_background_and_releases_on_drop() {
    let prefix = fresh_prefix("guard");
    let (a, b) = (client(&prefix), client(&prefix));
    let guard = a
        .lock("k", &options(1_500), Duration::from_secs(5))
        .unwrap();
    std::thread::sleep(Duration::from_millis(4_000));
    assert!(
        guard.is_held(),
        "renewed past twice its ttl: {:?}",
        guard.lost()
    );
    assert_eq!(
        b.try_acquire("k", &options(1_500)).unwrap(),
        None,
        "still held"
    );
    let token = guard.token();
    drop(guard);
    let next = b
        .try_acquire("k", &options(1_500))
        .unwrap()
        .expect("released on drop");
    assert!(next.token > token);
}

#[test]
fn a_guard_notices_its_lock_taken_behind_its_back() {
    let prefix = fresh_prefix("guard-taken");
    let a = client(&prefix);
    let guard = a
        .lock("k", &options(1_500), Duration::from_secs(5))
        .unwrap();
    let admin = endpoint().admin().unwrap();
    let object = format!("{prefix}k");
    let (body, _) = admin.get(&object).unwrap().unwrap();
    let mut record: serde_json::Value = serde_json::from_slice(&body).unwrap();
    record["token"] = (guard.token() + 1).into();
    record["holder"] = "intruder".into();
    record["write"] = "intruder-write".into();
    admin.put(&object, record.to_string().as_bytes()).unwrap();
    match guard.wait_lost(Duration::from_secs(3)) {
        Some(LostReason::Taken(Some(state))) => assert_eq!(state.holder_id, "intruder"),
        other => panic!("expected taken by the intruder, got {other:?}"),
    }
    assert!(!guard.is_held());
}

#[test]
fn the_elector_thread_hands_leadership_over_on_resign() {
    let prefix = fresh_prefix("elector-thread");
    let config = |holder: &str| ElectorConfig {
        key: "leader".into(),
        lease_duration_ms: 3_000,
        renew_deadline_ms: 2_000,
        retry_period_ms: 200,
        holder_id: Some(holder.into()),
        metadata: None,
    };
    let first = client(&prefix).elect(&config("first")).unwrap();
    let lease = match first
        .events()
        .recv_timeout(Duration::from_secs(10))
        .unwrap()
    {
        ElectionEvent::BecameLeader(lease) => lease,
        other => panic!("{other:?}"),
    };
    let second = client(&prefix).elect(&config("second")).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(second.leader_lease(), None, "one leader at a time");
    first.resign().unwrap();
    let next = loop {
        match second
            .events()
            .recv_timeout(Duration::from_secs(10))
            .unwrap()
        {
            ElectionEvent::BecameLeader(l) => break l,
            ElectionEvent::LeaderChanged(_) => continue,
            other => panic!("{other:?}"),
        }
    };
    assert!(next.token > lease.token);
}

#[test]
fn errors_are_typed_and_keep_the_secret_out() {
    let prefix = fresh_prefix("typed-errors");
    let mut config = s3_config(&prefix);
    config.secret_access_key = "not-the-secret-s3lease".into();
    let c = Client::connect(harness().runtime(), &config).unwrap();
    let e = c.inspect("k").unwrap_err();
    match &e {
        Error::Lease(inner) => assert!(matches!(**inner, LeaseError::AccessDenied(_)), "{inner:?}"),
        other => panic!("{other:?}"),
    }
    let shown = format!("{e} {e:?} {config:?}");
    assert!(!shown.contains("not-the-secret-s3lease"), "{shown}");
    assert!(e.to_string().contains("403"), "{e}");
}

/// `set-credentials` on a live client, through wasmtime: wrong keys make
/// the next request (and an elector of that client) fail with the store's
/// refusal; the right keys again make it, and the lease held all along
/// still renews, since the seal no longer follows the credentials.
#[test]
fn set_credentials_swaps_a_live_clients_keys_and_keeps_its_leases() {
    use host_test::bindings::Credentials;
    let prefix = fresh_prefix("set-credentials");
    let a = client(&prefix);
    let lease = a.try_acquire("k", &options(30_000)).unwrap().expect("free");
    let e = endpoint();
    let right = Credentials {
        access_key_id: e.access_key_id.clone(),
        secret_access_key: e.secret_access_key.clone(),
        session_token: e.session_token.clone(),
    };
    let wrong = Credentials {
        access_key_id: "NOT-A-KEY-OF-THIS-STORE".into(),
        secret_access_key: "wrong-secret-wrong-secret".into(),
        session_token: None,
    };
    a.set_credentials(&wrong).unwrap();
    let refused = a.renew(&lease).unwrap_err();
    assert!(
        matches!(&refused, Error::Lease(e) if matches!(**e, LeaseError::AccessDenied(_) | LeaseError::S3(_))),
        "{refused:?}"
    );
    assert!(!format!("{refused:?} {refused}").contains("wrong-secret"));
    let empty = Credentials {
        access_key_id: String::new(),
        ..right.clone()
    };
    assert!(
        matches!(a.set_credentials(&empty), Err(Error::Lease(e)) if matches!(*e, LeaseError::InvalidConfig(_))),
        "empty keys refused, the old ones kept"
    );
    a.set_credentials(&right).unwrap();
    let renewed = a
        .renew(&lease)
        .expect("the same lease, under the keys set again");
    assert_eq!(renewed.token, lease.token);
    a.release(&renewed).unwrap();
}

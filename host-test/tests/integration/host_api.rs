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

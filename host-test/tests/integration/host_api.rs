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

/// A guard counts its lease from when the granting write was *sent*, not
/// from its reply. ttl 2 s under `holder`: the grant's PUT is answered
/// 1.5 s late (the reply still came before the lease ran out, so the grant
/// stands), then a's network is cut. b takes the key once a's lease ran
/// out, 2 s after its write was sent: by then a's guard must have stopped
/// claiming it (a guard that counted from the reply claimed it until 3.3 s).
#[test]
fn a_guard_counts_its_lease_from_the_grants_send_not_its_reply() {
    use host_test::hooks::Fault;
    use s3_lease_host::bindings::ExpiryClock;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Instant;
    let prefix = fresh_prefix("guard-from-send");
    let mut config = s3_config(&prefix);
    config.expiry_clock = Some(ExpiryClock::Holder);
    let (instance, hooks, _) = harness().test_options();
    let a = Client::connect_with(harness().runtime(), &config, instance).unwrap();
    let b = Client::connect(harness().runtime(), &config).unwrap();
    let delayed = Arc::new(AtomicBool::new(false));
    let object = format!("{prefix}k");
    hooks.add_rule(move |request: &mut http::request::Parts| {
        let grant = request.method == http::Method::PUT && request.uri.path().ends_with(&object);
        (grant && !delayed.swap(true, Ordering::SeqCst))
            .then_some(Fault::Delay(Duration::from_millis(1_500)))
    });
    let sent = Instant::now();
    let guard = a
        .try_lock("k", &options(2_000))
        .unwrap()
        .expect("granted: the reply came before the lease ran out");
    assert!(sent.elapsed() >= Duration::from_millis(1_500));
    hooks.set_cut(true);
    let taken = b
        .acquire("k", &options(2_000), Duration::from_secs(10))
        .unwrap();
    let at = sent.elapsed();
    assert!(taken.token > guard.token());
    assert!(
        !guard.is_held(),
        "{at:?} after its grant was sent, while b holds token {}, a's guard still claims the lock \
         until {:?} from then; a's requests: {:#?}",
        taken.token,
        guard.held_until().map(|u| u - sent),
        hooks.requests()
    );
    let until = guard.held_until();
    assert_eq!(until, None, "{at:?}: held until {until:?}");
}

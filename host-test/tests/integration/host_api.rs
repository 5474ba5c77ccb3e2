//! The host crate's typed API (`s3_lease_host::blocking::{Client,
//! LeaseGuard, Elector}`) against the real server: the guard renews in the
//! background, releases on drop and notices a lock taken from it; the
//! elector hands leadership over; errors are typed and keep secrets out.

use super::{acquire_options as options, endpoint, fresh_prefix, harness};
use s3_lease_host::blocking::Client;
use s3_lease_host::{
    Credentials, ElectionEvent, ElectorConfig, ErrorKind, ExpiryClock, LostReason, S3Builder,
    StoreConfig,
};
use std::time::{Duration, Instant};

fn s3_config(prefix: &str) -> StoreConfig {
    endpoint().host_config(prefix).unwrap()
}

fn client(prefix: &str) -> Client {
    Client::connect(harness().runtime(), &s3_config(prefix)).unwrap()
}

/// Waits up to `limit` for the key's lock object to say released (a
/// dropped guard releases from a thread of its own).
fn wait_released(c: &Client, key: &str, limit: Duration) {
    let started = Instant::now();
    loop {
        let state = c.inspect(key).unwrap().expect("the lock object");
        if !state.live && state.expires_at_ms == 0 {
            return;
        }
        assert!(
            started.elapsed() < limit,
            "not released {limit:?} after the drop: {state:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_guard_renews_in_the_background_and_releases_on_drop() {
    let prefix = fresh_prefix("guard");
    let (a, b) = (client(&prefix), client(&prefix));
    let guard = a
        .acquire("k", &options(1_500), Duration::from_secs(5))
        .unwrap();
    std::thread::sleep(Duration::from_millis(4_000));
    assert!(
        guard.is_held(),
        "renewed past twice its ttl: {:?}",
        guard.lost()
    );
    assert!(
        b.try_acquire("k", &options(1_500)).unwrap().is_none(),
        "still held"
    );
    let token = guard.token();
    drop(guard);
    // Well within the ttl: the lease was renewed at most a third of its
    // deadline before the drop.
    wait_released(&b, "k", Duration::from_millis(500));
    let next = b
        .try_acquire("k", &options(1_500))
        .unwrap()
        .expect("released on drop");
    assert!(next.token() > token);
}

#[test]
fn a_guard_notices_its_lock_taken_behind_its_back() {
    let prefix = fresh_prefix("guard-taken");
    let a = client(&prefix);
    let guard = a
        .acquire("k", &options(1_500), Duration::from_secs(5))
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
        Some(LostReason::Taken(Some(state))) => {
            assert_eq!(state.holder_id.as_deref(), Some("intruder"))
        }
        other => panic!("expected taken by the intruder, got {other:?}"),
    }
    assert!(!guard.is_held());
}

#[test]
fn the_elector_thread_hands_leadership_over_on_resign() {
    let prefix = fresh_prefix("elector-thread");
    let config = |holder: &str| {
        ElectorConfig::new("leader")
            .lease_duration(Duration::from_millis(3_000))
            .renew_deadline(Duration::from_millis(2_000))
            .retry_period(Duration::from_millis(200))
            .holder_id(holder)
    };
    let mut first = client(&prefix).elect(&config("first")).unwrap();
    let lease = match first
        .recv_event_timeout(Duration::from_secs(10))
        .expect("an event")
    {
        ElectionEvent::BecameLeader(lease) => lease,
        other => panic!("{other:?}"),
    };
    let mut second = client(&prefix).elect(&config("second")).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(second.leader_lease(), None, "one leader at a time");
    first.resign().unwrap();
    let next = loop {
        match second
            .recv_event_timeout(Duration::from_secs(10))
            .expect("an event")
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
    let store = endpoint();
    let keys = Credentials::new(&store.access_key_id, "not-the-secret-s3lease");
    let keys = match &store.session_token {
        Some(token) => keys.with_session_token(token.clone()),
        None => keys,
    };
    let config = S3Builder::new(&store.bucket, &store.region, keys)
        .endpoint(&store.url)
        .build()
        .with_key_prefix(prefix);
    let c = Client::connect(harness().runtime(), &config).unwrap();
    let e = c.inspect("k").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AccessDenied, "{e:?}");
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
    let prefix = fresh_prefix("set-credentials");
    let a = client(&prefix);
    // As a record: the test renews it itself.
    let lease = a
        .try_acquire("k", &options(30_000))
        .unwrap()
        .expect("free")
        .detach()
        .expect("held");
    let e = endpoint();
    let with_token = |c: Credentials| match &e.session_token {
        Some(token) => c.with_session_token(token.clone()),
        None => c,
    };
    let right = with_token(Credentials::new(
        e.access_key_id.clone(),
        e.secret_access_key.clone(),
    ));
    let wrong = Credentials::new("NOT-A-KEY-OF-THIS-STORE", "wrong-secret-wrong-secret");
    a.set_credentials(&wrong).unwrap();
    let refused = a.renew(&lease).unwrap_err();
    assert!(
        matches!(refused.kind(), ErrorKind::AccessDenied | ErrorKind::Store),
        "{refused:?}"
    );
    assert!(!format!("{refused:?} {refused}").contains("wrong-secret"));
    let empty = with_token(Credentials::new("", right.secret_access_key.clone()));
    assert!(
        matches!(a.set_credentials(&empty), Err(e) if e.kind() == ErrorKind::InvalidConfig),
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
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let prefix = fresh_prefix("guard-from-send");
    let mut config = s3_config(&prefix);
    config.expiry_clock = Some(ExpiryClock::Holder);
    let (options_a, hooks, _) = harness().test_client_options();
    let a = Client::connect_with(harness().runtime(), &config, options_a).unwrap();
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
        .try_acquire("k", &options(2_000))
        .unwrap()
        .expect("granted: the reply came before the lease ran out");
    assert!(sent.elapsed() >= Duration::from_millis(1_500));
    hooks.set_cut(true);
    let taken = b
        .acquire("k", &options(2_000), Duration::from_secs(10))
        .unwrap();
    let at = sent.elapsed();
    assert!(taken.token() > guard.token());
    assert!(
        !guard.is_held(),
        "{at:?} after its grant was sent, while b holds token {}, a's guard still claims the lock \
         until {:?} from then; a's requests: {:#?}",
        taken.token(),
        guard.held_until().map(|u| u - sent),
        hooks.requests()
    );
    let until = guard.held_until();
    assert_eq!(until, None, "{at:?}: held until {until:?}");
}

/// A grant whose reply comes after the claim it gives has run out is never
/// handed out: `try_acquire` releases it and fails with a transient error
/// (nothing held, nothing to start work under), and `acquire` releases it
/// and tries again within its wait, returning a lease that is held. ttl
/// 2 s, claim 1 s (as `s3-lease run` claims half the ttl); the first
/// granting PUT of each key is sent 1.4 s late: inside the ttl, so the
/// component grants it, but past the claim.
#[test]
fn a_grant_whose_reply_comes_after_its_claim_is_released_not_handed_out() {
    use host_test::hooks::Fault;
    use std::sync::Arc;
    use std::sync::Mutex;
    let prefix = fresh_prefix("late-grant");
    let config = s3_config(&prefix);
    let (options_a, hooks, _) = harness().test_client_options();
    let a = Client::connect_with(harness().runtime(), &config, options_a).unwrap();
    let b = client(&prefix);
    let delayed: Arc<Mutex<Vec<String>>> = Arc::default();
    let (tried_object, waited_object) = (format!("{prefix}tried"), format!("{prefix}waited"));
    let waited_path = waited_object.clone();
    hooks.add_rule(move |request: &mut http::request::Parts| {
        let path = request.uri.path().to_string();
        let lock_object = path.ends_with(&tried_object) || path.ends_with(&waited_object);
        let mut delayed = delayed.lock().unwrap();
        (request.method == http::Method::PUT && lock_object && !delayed.contains(&path)).then(
            || {
                delayed.push(path);
                Fault::Delay(Duration::from_millis(1_400))
            },
        )
    });

    let claim_half = options(2_000).deadline(Duration::from_secs(1));
    let sent = Instant::now();
    let tried = a.try_acquire("tried", &claim_half);
    let error = match tried {
        Err(e) => e,
        Ok(got) => panic!(
            "a grant that came too late ({:?}) is not handed out: {:?}; {:#?}",
            sent.elapsed(),
            got.map(|g| g.is_held()),
            hooks.requests()
        ),
    };
    assert!(error.is_transient(), "worth another attempt: {error}");
    assert!(error.to_string().contains("safe margin"), "{error}");
    // Released, not left to run out: b gets it well before a's ttl would end.
    let asked = Instant::now();
    let taken = b
        .acquire("tried", &options(2_000), Duration::from_secs(10))
        .unwrap();
    assert!(
        asked.elapsed() < Duration::from_millis(1_500),
        "the late grant was released: b waited {:?}",
        asked.elapsed()
    );
    taken.release().unwrap();

    let waited = a
        .acquire("waited", &claim_half, Duration::from_secs(10))
        .unwrap();
    assert!(
        waited.is_held(),
        "acquire hands out only a lease that is held"
    );
    let writes: Vec<String> = hooks
        .requests()
        .iter()
        .filter(|r| r.path_and_query.ends_with(&waited_path) && r.method != "GET")
        .map(|r| r.method.clone())
        .collect();
    assert!(
        writes.len() >= 3,
        "granted late, released, granted again: {writes:?}"
    );
    waited.release().unwrap();
}

/// A grant is counted from when its call began on its instance, not from
/// when it was asked for: a call that waited for its instance behind a
/// slow one (one instance; a read of another key answered 1.5 s late) is
/// not judged late by the wait, as its write was sent after it.
#[test]
fn a_grant_is_counted_from_its_call_not_from_a_wait_for_the_instance() {
    use host_test::hooks::Fault;
    let prefix = fresh_prefix("queued-grant");
    let (options_a, hooks, _) = harness().test_client_options();
    let a = Client::connect_with(harness().runtime(), &s3_config(&prefix), options_a).unwrap();
    // The seal key, read once and cached: not part of what is timed.
    a.try_acquire("warm", &options(2_000)).unwrap().unwrap();
    let slow_object = format!("{prefix}slow");
    hooks.add_rule(move |request: &mut http::request::Parts| {
        (request.method == http::Method::GET && request.uri.path().ends_with(&slow_object))
            .then_some(Fault::Delay(Duration::from_millis(1_500)))
    });
    let claim_half = options(2_000).deadline(Duration::from_secs(1));
    std::thread::scope(|s| {
        s.spawn(|| a.inspect("slow").unwrap());
        std::thread::sleep(Duration::from_millis(200));
        let asked = Instant::now();
        let guard = a
            .try_acquire("fast", &claim_half)
            .unwrap()
            .expect("free, and granted");
        assert!(
            asked.elapsed() > Duration::from_millis(1_000),
            "it waited behind the slow call ({:?})",
            asked.elapsed()
        );
        assert!(guard.is_held(), "counted from its own call: held");
        guard.release().unwrap();
    });
}

/// Every duration the API takes may be `Duration::MAX` (a caller's "for
/// ever"): none panics adding it to the clock. A wait takes it as for
/// ever, a ttl beyond the longest a lease may have is refused as an
/// invalid argument, a deadline past the ttl is the ttl, an elector's
/// durations are checked as any others, and a close waits for its
/// releases.
#[test]
fn durations_too_long_for_the_clock_never_panic() {
    let prefix = fresh_prefix("duration-max");
    let (options_a, hooks, _) = harness().test_client_options();
    let a = Client::connect_with(harness().runtime(), &s3_config(&prefix), options_a).unwrap();
    let forever = Duration::MAX;

    let guard = a.acquire("waited", &options(1_500), forever).unwrap();
    let slot = s3_lease_host::SlotOptions::new(2).fair(true);
    let in_slot = a
        .acquire_slot("slot", &options(1_500), slot, forever)
        .unwrap();
    in_slot.release().unwrap();
    let e = a
        .try_acquire("ttl", &s3_lease_host::AcquireOptions::new(forever))
        .expect_err("a ttl beyond the longest a lease may have");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let deadline = a
        .try_acquire("deadline", &options(1_500).deadline(forever))
        .unwrap()
        .expect("free");
    let left = deadline
        .held_until()
        .expect("held")
        .saturating_duration_since(Instant::now());
    assert!(
        left <= Duration::from_millis(1_500),
        "claimed past its ttl: {left:?} left"
    );
    deadline.release().unwrap();

    for config in [
        ElectorConfig::new("lead").lease_duration(forever),
        ElectorConfig::new("lead").renew_deadline(forever),
        ElectorConfig::new("lead").retry_period(forever),
    ] {
        match a.elect(&config) {
            Err(e) => assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}"),
            Ok(_) => panic!("durations out of order are refused: {config:?}"),
        }
    }
    let mut elector = a.elect(&ElectorConfig::new("lead")).unwrap();
    let event = elector.recv_event_timeout(forever);
    assert!(
        matches!(event, Some(ElectionEvent::BecameLeader(_))),
        "{event:?}"
    );
    elector.resign().unwrap();

    // Cut off, the lease is lost at its safe margin: the wait for ever
    // ends there.
    hooks.set_cut(true);
    let reason = guard.wait_lost(forever);
    assert!(matches!(reason, Some(LostReason::Expired(_))), "{reason:?}");
    hooks.set_cut(false);
    let held = a
        .try_acquire("closed", &options(1_500))
        .unwrap()
        .expect("free");
    let report = a.close(forever);
    assert!(report.all_released() && report.released == 1, "{report:?}");
    assert!(!held.is_held());
}

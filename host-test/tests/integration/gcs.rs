//! The gcs store, through the built component, against fake-gcs-server on
//! loopback (started by `host_test::fake_gcs`, behind its front that
//! enforces the DELETE precondition the fake ignores): each call's
//! requests as the host's hook sees them, lifecycle, fencing, an elector
//! handing over, a lost reply, semaphores, the preflight (through the
//! front, and on the bare fake, whose ignored delete condition it reports),
//! the GCS-only limits (ttl, retry period), a missing bucket, the
//! credential sent, a wrong endpoint, and Google's Python client sharing
//! one lock with us.

use super::request_counts::{s, shape};
use super::*;
use host_test::bindings::{
    Capability, Credential, ElectorConfig, GcsCredential, Role, SlotAttempt, SlotOptions, Verdict,
};
use host_test::fake_gcs::{self, GcsEndpoint};
use host_test::hooks::Fault;
use std::time::{Duration, Instant};

fn gcs() -> &'static GcsEndpoint {
    fake_gcs::endpoint()
}

fn on_gcs(prefix: &str) -> Instance {
    opened_with(&gcs().config(prefix))
}

/// The generation a lease's etag carries (quoted, as an ETag).
fn generation(etag: &str) -> u64 {
    etag.trim_matches('"')
        .parse()
        .unwrap_or_else(|_| panic!("not a generation: {etag}"))
}

/// The fixture itself: a fake whose DELETE ignores `ifGenerationMatch`,
/// and the front that enforces it.
#[test]
fn the_front_enforces_the_delete_precondition_the_bare_fake_ignores() {
    let started = Instant::now();
    let gcs = gcs();
    println!(
        "fake-gcs-server and its front ready in {:?}",
        started.elapsed()
    );
    let name = format!("{}obj", fresh_prefix("gcs-front"));
    let bare = fake_gcs::GcsAdmin {
        url: gcs.bare_url.clone(),
        bucket: gcs.bucket.clone(),
    };
    let front = gcs.admin();
    // The bare fake: a stale generation deletes the object.
    let first = bare.put(&name, b"one").unwrap();
    let second = bare.put(&name, b"two").unwrap();
    assert_ne!(first, second);
    assert_eq!(bare.delete(&name, Some(first)).unwrap().status, 200);
    assert!(
        bare.resource(&name).unwrap().is_none(),
        "the fake ignored it"
    );
    // The front: GCS's 412, the object kept; the right generation deletes.
    let first = front.put(&name, b"one").unwrap();
    let second = front.put(&name, b"two").unwrap();
    let refused_before = shared_refusals();
    let r = front.delete(&name, Some(first)).unwrap();
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["error"]["errors"][0]["reason"],
        "conditionNotMet"
    );
    assert_eq!(shared_refusals(), refused_before + 1);
    let kept = front.resource(&name).unwrap().expect("kept");
    assert_eq!(fake_gcs::generation_of(&kept).unwrap(), second);
    let r = front.delete(&name, Some(second)).unwrap();
    assert!(matches!(r.status, 200 | 204), "{} {}", r.status, r.text());
    assert!(front.resource(&name).unwrap().is_none());
    // Unconditional requests pass through as they are.
    assert_eq!(front.media(&name).unwrap().status, 404);
}

fn shared_refusals() -> u64 {
    fake_gcs::shared()
        .front
        .deletes_refused
        .load(std::sync::atomic::Ordering::Relaxed)
}

/// Through the front, a conditional delete and conditional replaces of
/// the same generation exclude each other: in every round exactly one of
/// them applies (without the lock the front holds across its check and
/// the delete, a replace landing between them was deleted too).
#[test]
fn through_the_front_racing_deletes_and_replaces_of_one_generation_apply_once() {
    let name = format!("{}obj", fresh_prefix("gcs-front-race"));
    let front = gcs().admin();
    for round in 0..8 {
        let generation = front.put(&name, b"start").unwrap();
        let barrier = std::sync::Barrier::new(12);
        let applied: Vec<(bool, u16)> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..12)
                .map(|n| {
                    let (front, name, barrier) = (&front, &name, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        let deleting = n % 2 == 0;
                        let r = if deleting {
                            front.delete(name, Some(generation)).unwrap()
                        } else {
                            front
                                .upload(name, b"replaced", &[], Some(generation))
                                .unwrap()
                        };
                        (deleting, r.status)
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let won: Vec<_> = applied
            .iter()
            .filter(|(_, status)| matches!(status, 200 | 204))
            .collect();
        assert_eq!(won.len(), 1, "round {round}: {applied:?}");
        assert!(
            applied
                .iter()
                .all(|(_, status)| matches!(status, 200 | 204 | 404 | 412)),
            "round {round}: {applied:?}"
        );
        let left = front.resource(&name).unwrap();
        assert_eq!(left.is_none(), won[0].0, "round {round}: {applied:?}");
        let _ = front.delete(&name, None);
    }
}

#[test]
fn each_call_costs_what_it_costs_on_s3_through_the_json_api() {
    let prefix = fresh_prefix("gcs-counts");
    let (mut a, mut b) = (on_gcs(&prefix), on_gcs(&prefix));
    let lease = try_acquire(&mut a, "k", &named(30_000, "a")).unwrap();
    assert_eq!(lease.token, 1);
    // fake-gcs-server's generations are microsecond timestamps.
    assert!(
        generation(&lease.etag) > 1_000_000_000_000_000,
        "{}",
        lease.etag
    );
    let log = a.hooks.take_requests();
    assert_eq!(
        shape(&log),
        [
            s("GET", 404),
            s("POST", 200),
            s("GET", 404),
            s("POST", 200),
            s("POST", 200)
        ],
        "the seal key created, then a grant of a free key: {log:?}"
    );
    assert!(
        log[3]
            .path_and_query
            .starts_with(&format!("/upload/storage/v1/b/{}/o?", gcs().bucket))
            && log[3].path_and_query.contains("ifGenerationMatch=0"),
        "a create is a multipart upload with ifGenerationMatch=0: {}",
        log[3].path_and_query
    );
    assert_eq!(try_acquire(&mut b, "k", &named(30_000, "b")), None);
    assert_eq!(
        shape(&b.hooks.take_requests()),
        [s("GET", 200), s("GET", 200)],
        "the seal key read; the key held"
    );
    // Held and unchanged: the fake ignores ifGenerationNotMatch (GCS
    // answers 304), so a whole read, still one request.
    assert_eq!(try_acquire(&mut b, "k", &named(30_000, "b")), None);
    assert_eq!(shape(&b.hooks.take_requests()), [s("GET", 200)]);
    let lease = a.renew(&lease).unwrap().unwrap();
    let log = a.hooks.take_requests();
    assert_eq!(shape(&log), [s("POST", 200)], "renew");
    let before = generation(&lease.etag);
    assert!(
        log[0].path_and_query.contains("ifGenerationMatch="),
        "{log:?}"
    );
    let lease = b.renew(&lease).unwrap().unwrap();
    assert_eq!(
        shape(&b.hooks.take_requests()),
        [s("GET", 200), s("POST", 200)],
        "renew of a lease another client wrote: its token checked first"
    );
    assert!(
        generation(&lease.etag) > before,
        "a new generation per write"
    );
    let seen = a.inspect("k").unwrap().unwrap().unwrap();
    assert_eq!((seen.token, seen.live), (1, true));
    assert_eq!(shape(&a.hooks.take_requests()), [s("GET", 200)], "inspect");
    b.release(&lease).unwrap().unwrap();
    assert_eq!(shape(&b.hooks.take_requests()), [s("POST", 200)], "release");
    let again = try_acquire(&mut b, "k", &named(30_000, "b")).unwrap();
    assert_eq!(again.token, 2, "release keeps the object and its counter");
    assert_eq!(shape(&b.hooks.take_requests()), [s("POST", 200)]);
    // The spent lease (b's, written by another client): its token checked
    // first, one GET finds the object moved on, lost without a write.
    let err = expect_err(a.renew(&lease));
    assert!(matches!(err, LeaseError::Lost(_)), "{err:?}");
    assert_eq!(shape(&a.hooks.take_requests()), [s("GET", 200)]);
    // Our own spent lease: its ifGenerationMatch fails (412), one GET
    // names the holder.
    let (mut c, mut d) = (on_gcs(&prefix), on_gcs(&prefix));
    let mine = try_acquire(&mut c, "j", &named(30_000, "c")).unwrap();
    let renewed = c.renew(&mine).unwrap().unwrap();
    d.release(&renewed).unwrap().unwrap();
    c.hooks.take_requests();
    let err = expect_err(c.renew(&renewed));
    assert!(matches!(err, LeaseError::Lost(_)), "{err:?}");
    assert_eq!(
        shape(&c.hooks.take_requests()),
        [s("POST", 412), s("GET", 200)]
    );
}

/// A waiting acquire takes the key over once its holder's lease expires
/// unreleased (server clock: the object's `updated` and the reply's
/// `Date`), with the next token; the old holder's renew is then lost.
#[test]
fn a_waiting_acquire_takes_over_an_expired_lease() {
    let prefix = fresh_prefix("gcs-takeover");
    let (mut a, mut b) = (on_gcs(&prefix), on_gcs(&prefix));
    let held = try_acquire(&mut a, "k", &named(4_000, "a")).unwrap();
    let started = Instant::now();
    let taken = b.acquire("k", &named(4_000, "b"), 12_000).unwrap().unwrap();
    let waited = started.elapsed();
    println!("took over after {waited:?}");
    assert_eq!(taken.token, 2);
    assert!(waited >= Duration::from_millis(2_000), "{waited:?}");
    let err = expect_err(a.renew(&held));
    assert!(matches!(err, LeaseError::Lost(_)), "{err:?}");
}

#[test]
fn a_lost_create_is_a_412_and_loses_the_race() {
    let prefix = fresh_prefix("gcs-412");
    let mut b = on_gcs(&prefix);
    load_seal_key(&mut b);
    // b reads the key missing; another writer creates it while b's create
    // is on its way.
    b.hooks.inject(Fault::Delay(Duration::ZERO));
    b.hooks.inject(Fault::Delay(Duration::from_millis(800)));
    let object = format!("{prefix}k");
    let other = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        gcs()
            .admin()
            .put(
                &object,
                br#"{"expires_at":9999999999,"token":5,"holder":"x","acquired_at":1}"#,
            )
            .unwrap();
    });
    assert_eq!(
        b.try_acquire("k", &named(30_000, "b")).unwrap().unwrap(),
        None
    );
    other.join().unwrap();
    let log = b.hooks.take_requests();
    // The read, the key's token floor, the create that lost.
    assert_eq!(
        shape(&log),
        [s("GET", 404), s("POST", 200), s("POST", 412)],
        "{log:?}"
    );
}

#[test]
fn a_stale_holder_is_fenced_out_and_the_token_is_in_the_objects_metadata() {
    let prefix = fresh_prefix("gcs-fence");
    let (mut a, mut b) = (on_gcs(&prefix), on_gcs(&prefix));
    let object = format!("{prefix}data/state.json");
    let first = try_acquire(&mut a, "k", &named(30_000, "a")).unwrap();
    let w = a
        .fenced_put(&first, &object, b"one", "application/json")
        .unwrap()
        .unwrap();
    assert_eq!((w.token, w.previous_token), (1, None));
    a.release(&first).unwrap().unwrap();
    let second = try_acquire(&mut b, "k", &named(30_000, "b")).unwrap();
    b.fenced_put(&second, &object, b"two", "application/json")
        .unwrap()
        .unwrap();
    let err = expect_err(a.fenced_put(&first, &object, b"late", "application/json"));
    assert!(
        matches!(&err, LeaseError::Fenced(f) if f.our_token == 1 && f.stored_token == 2),
        "{err:?}"
    );
    let got = a.fenced_get(&object).unwrap().unwrap().unwrap();
    assert_eq!((got.body.as_slice(), got.token), (&b"two"[..], 2));
    // What GCS holds: the token in the object's own metadata.
    let resource = gcs().admin().resource(&object).unwrap().expect("written");
    assert_eq!(resource["metadata"]["s3lease-token"], "2", "{resource}");
    assert_eq!(resource["contentType"], "application/json", "{resource}");
    b.fenced_delete(&second, &object).unwrap().unwrap();
    assert!(a.fenced_get(&object).unwrap().unwrap().is_none());
}

#[test]
fn a_grant_whose_reply_was_lost_is_recognised_by_reading_back() {
    let prefix = fresh_prefix("gcs-lost");
    let (mut a, mut b) = (on_gcs(&prefix), on_gcs(&prefix));
    load_seal_key(&mut a);
    // The read and the key's token floor pass; the grant's reply is lost.
    a.hooks.inject(Fault::Delay(Duration::ZERO));
    a.hooks.inject(Fault::Delay(Duration::ZERO));
    a.hooks.inject(Fault::LoseReply);
    let lease = try_acquire(&mut a, "k", &named(30_000, "a")).expect("granted");
    assert_eq!(lease.token, 1);
    assert_eq!(
        shape(&a.hooks.take_requests()),
        [s("GET", 404), s("POST", 200), s("POST", 200), s("GET", 200)],
        "the key's token floor; the create applied, its reply dropped, then our write id \
         read back"
    );
    assert_eq!(try_acquire(&mut b, "k", &named(30_000, "b")), None);
    let lease = a.renew(&lease).unwrap().unwrap();
    a.hooks.inject(Fault::LoseReply);
    a.release(&lease).unwrap().unwrap();
    assert_eq!(
        try_acquire(&mut b, "k", &named(30_000, "b")).map(|l| l.token),
        Some(2),
        "released for real, no ghost lease"
    );
}

#[test]
fn an_elector_leads_and_hands_over_on_resign() {
    let prefix = fresh_prefix("gcs-elector");
    let (mut a, mut b) = (on_gcs(&prefix), on_gcs(&prefix));
    // GCS's floor: a retry period of 1 s.
    let config = |holder: &str| ElectorConfig {
        key: "leader".into(),
        lease_duration_ms: 6_000,
        renew_deadline_ms: 4_000,
        retry_period_ms: 1_000,
        holder_id: Some(holder.into()),
        metadata: None,
    };
    let ea = a.elector(&config("a")).unwrap().unwrap();
    let eb = b.elector(&config("b")).unwrap().unwrap();
    let step = a.step(ea).unwrap();
    let Role::Leader(lease) = &step.role else {
        panic!("{:?}", step.role)
    };
    assert_eq!(lease.token, 1);
    assert!(matches!(b.step(eb).unwrap().role, Role::Follower(Some(_))));
    a.resign(ea).unwrap().unwrap();
    // b looks again once its retry period has passed.
    std::thread::sleep(Duration::from_millis(1_100));
    let step = b.step(eb).unwrap();
    let Role::Leader(lease) = &step.role else {
        panic!("{:?}", step.role)
    };
    assert_eq!(lease.token, 2);
}

#[test]
fn a_semaphore_admits_its_limit_and_no_more() {
    let prefix = fresh_prefix("gcs-semaphore");
    let two = SlotOptions {
        limit: 2,
        fair: false,
    };
    let mut tokens = Vec::new();
    let mut held = 0;
    for holder in ["a", "b", "c"] {
        let mut i = on_gcs(&prefix);
        match i
            .try_acquire_slot("k", &named(30_000, holder), two)
            .unwrap()
            .unwrap()
        {
            SlotAttempt::Granted(lease) => {
                held += 1;
                tokens.push(lease.token);
            }
            SlotAttempt::Full(_) => {}
            other => panic!("{holder}: {other:?}"),
        }
    }
    assert_eq!((held, tokens), (2, vec![1, 2]));
}

/// GCS takes about one write per second per object: a ttl under 4 s (a
/// lease renewed every 1.2 s at 4 s) and an elector's retry period under
/// 1 s are refused before any request; 4 s and 1 s are taken.
#[test]
fn a_ttl_under_4_s_and_a_retry_period_under_1_s_are_refused() {
    let prefix = fresh_prefix("gcs-limits");
    let mut i = on_gcs(&prefix);
    let err = expect_err(i.try_acquire("k", &named(3_999, "a")));
    assert!(
        matches!(&err, LeaseError::InvalidConfig(c) if c.reason.contains("ttl-ms 3999")),
        "{err:?}"
    );
    assert_eq!(i.hooks.take_requests().len(), 0, "refused before sending");
    let lease = try_acquire(&mut i, "k", &named(4_000, "a")).expect("4 s is taken");
    assert_eq!(lease.ttl_ms, 4_000);
    i.hooks.take_requests();
    let elector = |retry_period_ms| ElectorConfig {
        key: "leader".into(),
        lease_duration_ms: 6_000,
        renew_deadline_ms: 4_000,
        retry_period_ms,
        holder_id: Some("a".into()),
        metadata: None,
    };
    let err = expect_err(i.elector(&elector(999)));
    assert!(
        matches!(&err, LeaseError::InvalidConfig(c) if c.reason.contains("retry")),
        "{err:?}"
    );
    assert_eq!(i.hooks.take_requests().len(), 0, "refused before sending");
    i.elector(&elector(1_000)).unwrap().expect("1 s is taken");
}

#[test]
fn the_preflight_passes_the_fake_through_its_front_and_leaves_nothing() {
    let prefix = fresh_prefix("gcs-preflight");
    let mut a = on_gcs(&prefix);
    let started = Instant::now();
    let report = a.preflight().unwrap().unwrap();
    println!(
        "preflight of fake-gcs-server (front) took {:?}",
        started.elapsed()
    );
    super::preflight::print("fake-gcs-server (front)", &report);
    // What fake-gcs-server lacks and is safe without (GCS itself answers
    // 304 and checks md5Hash); the LIST probe is for S3's epoch-objects.
    assert_eq!(
        super::preflight::failing(&report),
        [
            Capability::ListStartAfter,
            Capability::ConditionalGet,
            Capability::PayloadHash
        ],
        "{report:#?}"
    );
    let delete = super::preflight::result(&report, Capability::IfMatchDelete);
    assert_eq!(delete.verdict, Verdict::Pass, "{report:#?}");
    assert!(report.config_safe, "{report:#?}");
    assert_eq!(report.requests, 72);
    assert_eq!(
        report.safe_strategies,
        [host_test::bindings::Strategy::SingleObject]
    );
    let race = super::preflight::result(&report, Capability::ConcurrentCreate);
    assert_eq!(race.verdict, Verdict::Pass, "{report:#?}");
    assert_eq!(a.hooks.take_requests().len(), report.requests as usize);
    let left = gcs()
        .admin()
        .resource(&format!("{prefix}.s3-lease-preflight/"))
        .unwrap();
    assert!(left.is_none());
    let listed = fake_gcs::send(
        &gcs().url,
        "GET",
        &format!(
            "/storage/v1/b/{}/o?prefix={}",
            gcs().bucket,
            fake_gcs::percent_encode(&prefix)
        ),
        &[],
        b"",
    )
    .unwrap()
    .json()
    .unwrap();
    let names: Vec<&str> = listed["items"]
        .as_array()
        .map(|items| items.iter().filter_map(|o| o["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        names.iter().all(|n| !n.contains(".s3-lease-preflight")),
        "scratch objects left: {names:?}"
    );
}

/// On the bare fake the preflight sees what the front hides: a DELETE
/// with a stale `ifGenerationMatch` applied, reported as silently ignored.
#[test]
fn the_preflight_reports_the_bare_fakes_ignored_delete_condition() {
    let prefix = fresh_prefix("gcs-preflight-bare");
    let mut a = opened_with(&gcs().bare_config(&prefix));
    let report = a.preflight().unwrap().unwrap();
    super::preflight::print("fake-gcs-server (bare)", &report);
    let delete = super::preflight::result(&report, Capability::IfMatchDelete);
    assert_eq!(
        (delete.verdict, delete.silent),
        (Verdict::Fail, true),
        "{report:#?}"
    );
    assert!(!report.config_safe, "{report:#?}");
}

/// fake-gcs-server answers a media GET in a missing bucket as for a
/// missing object (404 `Not Found`, where GCS says the bucket does not
/// exist); an upload there can only fail for the bucket.
#[test]
fn a_missing_bucket_is_no_such_bucket() {
    let mut config = gcs().config(&fresh_prefix("gcs-missing"));
    config.gcs_mut().bucket = "no-such-bucket".into();
    let mut i = opened_with(&config);
    let err = expect_err(i.try_acquire("k", &named(30_000, "a")));
    assert!(matches!(&err, LeaseError::NoSuchBucket(_)), "{err:?}");
}

/// A bearer token goes in `Authorization` (the fake checks none);
/// anonymous sends no `Authorization` at all; `set-gcs-credential` swaps
/// it on a live client.
#[test]
fn a_bearer_token_is_sent_and_anonymous_sends_none() {
    use std::sync::{Arc, Mutex};
    let sent = Arc::new(Mutex::new(Vec::<Option<String>>::new()));
    let watch = |i: &Instance| {
        let seen = sent.clone();
        i.hooks.add_rule(move |parts| {
            let auth = parts
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            seen.lock().unwrap().push(auth);
            None
        });
    };
    let prefix = fresh_prefix("gcs-bearer");
    let mut i =
        opened_with(&gcs().config_with(&prefix, GcsCredential::Bearer("ya29.test-token".into())));
    watch(&i);
    i.inspect("k").unwrap().unwrap();
    assert_eq!(
        sent.lock().unwrap().drain(..).collect::<Vec<_>>(),
        [Some("Bearer ya29.test-token".to_string())]
    );
    i.set_credential(&Credential::Gcs(GcsCredential::Bearer("ya29.newer".into())))
        .unwrap()
        .unwrap();
    i.inspect("k").unwrap().unwrap();
    assert_eq!(
        sent.lock().unwrap().drain(..).collect::<Vec<_>>(),
        [Some("Bearer ya29.newer".to_string())]
    );
    let mut i = on_gcs(&prefix);
    watch(&i);
    i.inspect("k").unwrap().unwrap();
    assert_eq!(sent.lock().unwrap().drain(..).collect::<Vec<_>>(), [None]);
}

/// A gcs store pointed at a server that is not GCS's JSON API (one that
/// answers every request with a bare 404) is a configuration error, and
/// nothing is written there. A missing object's media GET is a plain-text
/// 404 on GCS too, so the read passes; the upload's 404 without GCS's JSON
/// error is where it shows.
#[test]
fn a_gcs_store_at_a_bare_404_server_is_refused_at_its_first_request() {
    use host_test::aws_fakes::http::{self, Request, Response};
    use std::sync::{Arc, Mutex};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let url = http::serve(Arc::new(move |r: Request| {
        log.lock().unwrap().push(r.method.clone());
        Response::new(404, "text/plain; charset=utf-8", "404 page not found\n")
    }))
    .unwrap();
    let mut config = gcs().config(&fresh_prefix("gcs-bare-404"));
    *config.endpoint_mut() = url.clone();
    let mut i = opened_with(&config);
    match expect_err(i.try_acquire("k", &named(30_000, "a"))) {
        LeaseError::InvalidConfig(c) => {
            assert_eq!(c.field, "endpoint", "{c:?}");
            assert!(c.reason.starts_with(&url), "{}", c.reason);
        }
        other => panic!("expected invalid-config endpoint, got {other:?}"),
    }
    // Refused at the read: Go's "404 page not found" is no GCS text, so
    // nothing is uploaded, and `status` (one read) reports no key from it.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, ["GET"], "one read, refused");
    match expect_err(i.inspect("k")) {
        LeaseError::InvalidConfig(c) => assert_eq!(c.field, "endpoint", "{c:?}"),
        other => panic!("expected invalid-config endpoint, got {other:?}"),
    }
}

/// Through the host crate, configured from `STORAGE_EMULATOR_HOST` as
/// Google's libraries are: a guard renews in the background past its ttl,
/// holds the key against another client, and releases on drop.
#[test]
fn the_host_crates_guard_renews_and_releases_on_gcs() {
    use s3_lease_host::blocking::Client;
    let prefix = fresh_prefix("gcs-host");
    let client = || {
        let config = gcs().host_config(&prefix).unwrap();
        Client::connect(harness().runtime(), &config).unwrap()
    };
    let (a, b) = (client(), client());
    let guard = a
        .acquire("k", &named_options(4_000, "a"), Duration::from_secs(5))
        .unwrap();
    std::thread::sleep(Duration::from_millis(4_500));
    assert!(guard.is_held(), "renewed past its ttl: {:?}", guard.lost());
    assert!(b
        .try_acquire("k", &named_options(4_000, "b"))
        .unwrap()
        .is_none());
    let token = guard.token();
    drop(guard);
    let started = Instant::now();
    let taken = loop {
        if let Some(lease) = b.try_acquire("k", &named_options(4_000, "b")).unwrap() {
            break lease;
        }
        assert!(started.elapsed() < Duration::from_secs(2), "not released");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(taken.token(), token + 1);
}

fn python() -> std::path::PathBuf {
    host_test::env_or_workspace_path("S3LEASE_PYTHON", ".venv/bin/python")
}

/// `scripts/gcs_design_client.py ARGS` on the front, its JSON lines.
fn google_client(object: &str, args: &[&str]) -> Vec<serde_json::Value> {
    use std::process::{Command, Stdio};
    let script = host_test::env_or_workspace_path(
        "S3LEASE_GCS_DESIGN_CLIENT",
        "scripts/gcs_design_client.py",
    );
    let out = Command::new(python())
        .arg(&script)
        .args(["--bucket", &gcs().bucket, "--object", object])
        .args(args)
        .env("STORAGE_EMULATOR_HOST", &gcs().url)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): it needs google-cloud-storage",
                python().display()
            )
        });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "Google's client failed:\n{stderr}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Google's client and the component on one lock object: each side's
/// conditional write is refused when the other wrote since it read (a
/// create when it exists, a replace or delete of a generation that is no
/// longer current), and the component takes the lock over from a record
/// Google's client released.
#[test]
fn googles_client_and_the_component_exclude_each_other_by_generation() {
    let prefix = fresh_prefix("gcs-exclude");
    let object = format!("{prefix}k");
    let mut a = on_gcs(&prefix);
    let lease = try_acquire(&mut a, "k", &named(30_000, "a")).unwrap();
    let held = generation(&lease.etag);
    // Google's create-only write loses to ours.
    let r = google_client(&object, &["write", "{}", "--if-generation-match", "0"]);
    assert_eq!(r[0]["outcome"], "precondition-failed", "{r:?}");
    let read = google_client(&object, &["read"]);
    assert_eq!(read[0]["generation"], held, "{read:?}");
    // We renew: Google's write of the generation it read is refused, and
    // so is its delete of it (the front enforces what GCS does).
    let lease = a.renew(&lease).unwrap().unwrap();
    let stale = held.to_string();
    let r = google_client(&object, &["write", "{}", "--if-generation-match", &stale]);
    assert_eq!(r[0]["outcome"], "precondition-failed", "{r:?}");
    let r = google_client(&object, &["delete", "--if-generation-match", &stale]);
    assert_eq!(r[0]["outcome"], "precondition-failed", "{r:?}");
    // Google's client writes the current generation (a release in the
    // design's record): our renew of the generation we hold is refused.
    let current = generation(&lease.etag).to_string();
    let released = r#"{"expires_at": 0, "token": 1}"#;
    let r = google_client(
        &object,
        &["write", released, "--if-generation-match", &current],
    );
    assert_eq!(r[0]["outcome"], "written", "{r:?}");
    let err = expect_err(a.renew(&lease));
    assert!(matches!(err, LeaseError::Lost(_)), "{err:?}");
    // Released in Google's record: ours takes it with the next token.
    let mut b = on_gcs(&prefix);
    let taken = try_acquire(&mut b, "k", &named(30_000, "b")).expect("released");
    assert_eq!(taken.token, 2);
}

/// Google's Python client and the component share one lock object: three
/// threads of `scripts/gcs_design_client.py` (the single-object design
/// written on google-cloud-storage, generation preconditions) and three
/// instances contend for it at once. The believed intervals never overlap
/// and the tokens rise in grant order, across both sides.
#[test]
fn googles_client_and_the_component_share_one_lock_object() {
    use std::process::{Command, Stdio};
    let prefix = fresh_prefix("gcs-interop");
    let object = format!("{prefix}lock");
    let _ = (gcs(), harness());
    let now = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let start_at = now() + 2.0;
    let contend = Duration::from_secs(6);
    let components: Vec<_> = (0..3)
        .map(|n| {
            let prefix = prefix.clone();
            std::thread::spawn(move || {
                let holder = format!("component-{n}");
                let mut i = on_gcs(&prefix);
                let mut grants = Vec::new();
                let wait = start_at - now();
                if wait > 0.0 {
                    std::thread::sleep(Duration::from_secs_f64(wait));
                }
                let deadline = Instant::now() + contend;
                while Instant::now() < deadline {
                    let Some(lease) = i
                        .try_acquire("lock", &named(5_000, &holder))
                        .unwrap()
                        .unwrap()
                    else {
                        std::thread::sleep(Duration::from_millis(5 + n as u64 * 7));
                        continue;
                    };
                    let start = now();
                    std::thread::sleep(Duration::from_millis(30));
                    let lease = i.renew(&lease).unwrap().unwrap();
                    std::thread::sleep(Duration::from_millis(30));
                    let end = now();
                    i.release(&lease).unwrap().unwrap();
                    grants.push((lease.token, start, end, holder.clone()));
                    std::thread::sleep(Duration::from_millis(10));
                }
                grants
            })
        })
        .collect();
    let script = host_test::env_or_workspace_path(
        "S3LEASE_GCS_DESIGN_CLIENT",
        "scripts/gcs_design_client.py",
    );
    let out = Command::new(python())
        .arg(&script)
        .args(["--bucket", &gcs().bucket, "--object", &object, "contend"])
        .args(["--start-at", &start_at.to_string()])
        .args(["--duration", &contend.as_secs_f64().to_string()])
        .env("STORAGE_EMULATOR_HOST", &gcs().url)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): it needs google-cloud-storage",
                python().display()
            )
        });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "Google's client failed:\n{stderr}");
    let mut grants: Vec<(u64, f64, f64, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                v["token"].as_u64().unwrap(),
                v["acquired"].as_f64().unwrap(),
                v["released"].as_f64().unwrap(),
                format!("google-{}", v["thread"]),
            )
        })
        .collect();
    let google = grants.len();
    for t in components {
        grants.extend(t.join().unwrap());
    }
    let ours = grants.len() - google;
    grants.sort_by(|a, b| a.1.total_cmp(&b.1));
    println!(
        "gcs interop: {} grants (Google's client {google}, component {ours})",
        grants.len()
    );
    assert!(
        google > 3 && ours > 3,
        "both sides held the lock: Google's client {google}, ours {ours}"
    );
    for w in grants.windows(2) {
        assert!(
            w[0].0 < w[1].0,
            "tokens out of grant order: {:?} then {:?}",
            w[0],
            w[1]
        );
        assert!(
            w[0].2 <= w[1].1,
            "two holders at once: {:?} and {:?}",
            w[0],
            w[1]
        );
    }
}

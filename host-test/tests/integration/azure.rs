//! The Azure Blob store, through the built component, against Azurite on
//! loopback (started by `host_test::azurite`; it checks Shared Key
//! signatures): each call's requests as the host's hook sees them (Azure's
//! own statuses: Put Blob 201, a lost create 409), lifecycle, fencing, an
//! elector handing over, a lost reply, semaphores, the preflight with its
//! race, a container that does not exist, a wrong key, and Microsoft's
//! Python SDK sharing one lock with us.

use super::request_counts::{s, shape};
use super::*;
use host_test::azurite::{self, AzureEndpoint};
use host_test::bindings::{
    AzureCredential, Capability, ElectorConfig, Role, SlotAttempt, SlotOptions, Verdict,
};
use host_test::hooks::Fault;
use std::time::Duration;

fn azure() -> &'static AzureEndpoint {
    azurite::shared()
}

fn on_azure(prefix: &str) -> Instance {
    opened_with(&azure().config(prefix))
}

#[test]
fn each_call_costs_what_it_costs_on_s3_in_azures_own_statuses() {
    let prefix = fresh_prefix("az-counts");
    let (mut a, mut b) = (on_azure(&prefix), on_azure(&prefix));
    let lease = try_acquire(&mut a, "k", &named(30_000, "a")).unwrap();
    assert_eq!(lease.token, 1);
    assert!(
        lease.etag.starts_with("\"0x"),
        "Azurite's ETag: {}",
        lease.etag
    );
    assert_eq!(
        shape(&a.hooks.take_requests()),
        [
            s("GET", 404),
            s("PUT", 201),
            s("GET", 404),
            s("PUT", 201),
            s("PUT", 201)
        ],
        "the seal key created, then a grant of a free key"
    );
    assert_eq!(try_acquire(&mut b, "k", &named(30_000, "b")), None);
    assert_eq!(
        shape(&b.hooks.take_requests()),
        [s("GET", 200), s("GET", 200)],
        "the seal key read; the key held"
    );
    // Held and unchanged: a 304, no body.
    assert_eq!(try_acquire(&mut b, "k", &named(30_000, "b")), None);
    assert_eq!(shape(&b.hooks.take_requests()), [s("GET", 304)]);
    let lease = a.renew(&lease).unwrap().unwrap();
    assert_eq!(shape(&a.hooks.take_requests()), [s("PUT", 201)], "renew");
    let lease = b.renew(&lease).unwrap().unwrap();
    assert_eq!(
        shape(&b.hooks.take_requests()),
        [s("GET", 200), s("PUT", 201)],
        "renew of a lease another client wrote: its token checked first"
    );
    let seen = a.inspect("k").unwrap().unwrap().unwrap();
    assert_eq!((seen.token, seen.live), (1, true));
    assert_eq!(shape(&a.hooks.take_requests()), [s("GET", 200)], "inspect");
    b.release(&lease).unwrap().unwrap();
    assert_eq!(shape(&b.hooks.take_requests()), [s("PUT", 201)], "release");
    let again = try_acquire(&mut b, "k", &named(30_000, "b")).unwrap();
    assert_eq!(again.token, 2, "release keeps the blob and its counter");
    assert_eq!(shape(&b.hooks.take_requests()), [s("PUT", 201)]);
    // The spent lease is lost: its If-Match fails (412), one GET names the holder.
    let err = expect_err(a.renew(&lease));
    assert!(matches!(err, LeaseError::Lost(_)), "{err:?}");
}

#[test]
fn a_lost_create_is_azures_409_and_loses_the_race() {
    let prefix = fresh_prefix("az-409");
    let mut b = on_azure(&prefix);
    load_seal_key(&mut b);
    // b reads the key missing; another writer creates it while b's create
    // is on its way.
    b.hooks.inject(Fault::Delay(Duration::ZERO));
    b.hooks.inject(Fault::Delay(Duration::from_millis(800)));
    let object = format!("{prefix}k");
    let other = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        azure()
            .admin()
            .unwrap()
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
        [s("GET", 404), s("PUT", 201), s("PUT", 409)],
        "{log:?}"
    );
}

#[test]
fn a_stale_holder_is_fenced_out_and_the_token_is_in_x_ms_meta() {
    let prefix = fresh_prefix("az-fence");
    let (mut a, mut b) = (on_azure(&prefix), on_azure(&prefix));
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
    // What Azure holds: the token in the blob's own metadata.
    let raw = azure()
        .admin()
        .unwrap()
        .send(s3_lease::stores::s3::S3Request::new(
            s3_lease::stores::s3::Method::Head,
            &object,
            1024,
        ))
        .unwrap();
    assert_eq!(raw.header(s3_lease::fenced::META_TOKEN), Some("2"));
    b.fenced_delete(&second, &object).unwrap().unwrap();
    assert!(a.fenced_get(&object).unwrap().unwrap().is_none());
}

#[test]
fn a_grant_whose_reply_was_lost_is_recognised_by_reading_back() {
    let prefix = fresh_prefix("az-lost");
    let (mut a, mut b) = (on_azure(&prefix), on_azure(&prefix));
    load_seal_key(&mut a);
    // The read and the key's token floor pass; the grant's reply is lost.
    a.hooks.inject(Fault::Delay(Duration::ZERO));
    a.hooks.inject(Fault::Delay(Duration::ZERO));
    a.hooks.inject(Fault::LoseReply);
    let lease = try_acquire(&mut a, "k", &named(30_000, "a")).expect("granted");
    assert_eq!(lease.token, 1);
    assert_eq!(
        shape(&a.hooks.take_requests()),
        [s("GET", 404), s("PUT", 201), s("PUT", 201), s("GET", 200)],
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
    let prefix = fresh_prefix("az-elector");
    let (mut a, mut b) = (on_azure(&prefix), on_azure(&prefix));
    let config = |holder: &str| ElectorConfig {
        key: "leader".into(),
        lease_duration_ms: 6_000,
        renew_deadline_ms: 4_000,
        retry_period_ms: 500,
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
    std::thread::sleep(Duration::from_millis(600));
    let step = b.step(eb).unwrap();
    let Role::Leader(lease) = &step.role else {
        panic!("{:?}", step.role)
    };
    assert_eq!(lease.token, 2);
}

#[test]
fn a_semaphore_admits_its_limit_and_no_more() {
    let prefix = fresh_prefix("az-semaphore");
    let two = SlotOptions {
        limit: 2,
        fair: false,
    };
    let mut tokens = Vec::new();
    let mut held = 0;
    for holder in ["a", "b", "c"] {
        let mut i = on_azure(&prefix);
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

#[test]
fn the_preflight_passes_azurite_with_its_race_and_leaves_nothing() {
    let prefix = fresh_prefix("az-preflight");
    let mut a = on_azure(&prefix);
    let started = std::time::Instant::now();
    let report = a.preflight().unwrap().unwrap();
    println!("preflight of Azurite took {:?}", started.elapsed());
    super::preflight::print("Azurite", &report);
    let failing = super::preflight::failing(&report);
    assert_eq!(failing, [Capability::ListStartAfter], "{report:#?}");
    let race = super::preflight::result(&report, Capability::ConcurrentCreate);
    assert!(
        race.detail
            .starts_with("8 concurrent If-None-Match: * creates"),
        "{}",
        race.detail
    );
    assert!(report.config_safe);
    assert_eq!(
        report.safe_strategies,
        [host_test::bindings::Strategy::SingleObject]
    );
    let create = super::preflight::result(&report, Capability::IfNoneMatchExisting);
    assert_eq!(create.code, "BlobAlreadyExists");
    let hash = super::preflight::result(&report, Capability::PayloadHash);
    assert_eq!(
        (hash.verdict, hash.code.as_str()),
        (Verdict::Pass, "Md5Mismatch")
    );
    assert_eq!(report.requests, 70);
    assert_eq!(a.hooks.take_requests().len(), 70);
}

#[test]
fn a_missing_container_and_a_wrong_key_are_typed_errors() {
    let mut config = azure().config(&fresh_prefix("az-missing"));
    config.azure_mut().container = "no-such-container".into();
    let mut i = opened_with(&config);
    let err = expect_err(i.inspect("k"));
    assert!(
        matches!(&err, LeaseError::NoSuchBucket(e) if e.code == "ContainerNotFound"),
        "{err:?}"
    );
    let wrong = AzureCredential::SharedKey(s3_lease::base64::encode(&[7; 64]));
    let mut i = opened_with(&azure().config_with(&fresh_prefix("az-denied"), wrong));
    let err = expect_err(i.inspect("k"));
    let LeaseError::AccessDenied(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(e.status, 403);
    assert!(!format!("{err:?}").contains("string to sign"), "{err:?}");
}

/// Microsoft's Python SDK and the component share one lock blob: three
/// threads of `scripts/azure_design_client.py` (the single-object design
/// written on azure-storage-blob, its own Shared Key signer) and three
/// instances contend for it at once. The believed intervals never overlap
/// and the tokens rise in grant order, across both sides.
#[test]
fn microsofts_sdk_and_the_component_share_one_lock_blob() {
    use std::process::{Command, Stdio};
    use std::time::Instant;
    let prefix = fresh_prefix("az-interop");
    let blob = format!("{prefix}lock");
    let _ = (azure(), harness());
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
                let mut i = on_azure(&prefix);
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
    let python = host_test::env_or_workspace_path("S3LEASE_PYTHON", ".venv/bin/python");
    let script = host_test::env_or_workspace_path(
        "S3LEASE_AZURE_DESIGN_CLIENT",
        "scripts/azure_design_client.py",
    );
    let out = Command::new(&python)
        .arg(&script)
        .args(["--container", &azure().container, "--blob", &blob])
        .args(["--start-at", &start_at.to_string()])
        .args(["--duration", &contend.as_secs_f64().to_string()])
        .env(
            "AZURE_STORAGE_CONNECTION_STRING",
            azure().connection_string(),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): it needs azure-storage-blob",
                python.display()
            )
        });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the SDK client failed:\n{stderr}");
    let mut grants: Vec<(u64, f64, f64, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                v["token"].as_u64().unwrap(),
                v["acquired"].as_f64().unwrap(),
                v["released"].as_f64().unwrap(),
                format!("sdk-{}", v["thread"]),
            )
        })
        .collect();
    let sdk = grants.len();
    for t in components {
        grants.extend(t.join().unwrap());
    }
    let ours = grants.len() - sdk;
    grants.sort_by(|a, b| a.1.total_cmp(&b.1));
    println!(
        "azure interop: {} grants (SDK {sdk}, component {ours})",
        grants.len()
    );
    assert!(
        sdk > 3 && ours > 3,
        "both sides held the lock: SDK {sdk}, ours {ours}"
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

/// A managed identity's token, through the host crate: fetched from a fake
/// identity endpoint on loopback before the client starts, sent as
/// `Authorization: Bearer`, and replaced on the live client by the
/// credential refresher before it expires (here a 4 s token, refreshed a
/// quarter of its life ahead). Azurite takes bearer tokens only over HTTPS,
/// so what is checked is what the client sends, at the host's hook.
#[test]
fn a_managed_identitys_token_is_sent_then_refreshed_on_a_live_client() {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let identity = format!("http://{}/msi/token", listener.local_addr().unwrap());
    let served = Arc::new(AtomicU32::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            let expires = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs()
                + 4;
            let body = format!(r#"{{"access_token":"token-{n}","expires_on":"{expires}"}}"#);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let config =
        s3_lease_host::StoreConfig::from_azure_vars(&azure().container, |name| match name {
            "AZURE_STORAGE_ACCOUNT" => Some(azure().account.clone()),
            "IDENTITY_ENDPOINT" => Some(identity.clone()),
            "IDENTITY_HEADER" => Some("identity-header".into()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        served.load(Ordering::SeqCst),
        1,
        "fetched once, before the client"
    );
    // Azurite's root: path-style addressing, the account first in the path.
    let mut config = config.with_endpoint(azure().url.clone());
    config.key_prefix = Some(fresh_prefix("az-identity"));
    let (options, hooks, _clock) = harness().test_client_options();
    let sent = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = sent.clone();
    hooks.add_rule(move |parts| {
        let auth = parts
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        seen.lock().unwrap().push(auth);
        None
    });
    let client =
        s3_lease_host::blocking::Client::connect_with(harness().runtime(), &config, options)
            .unwrap();
    let _ = client.inspect("k");
    assert_eq!(
        sent.lock().unwrap().first().map(String::as_str),
        Some("Bearer token-1")
    );
    std::thread::sleep(Duration::from_millis(4_500));
    sent.lock().unwrap().clear();
    let _ = client.inspect("k");
    let later = sent.lock().unwrap().clone();
    assert!(
        later
            .iter()
            .all(|a| a.starts_with("Bearer token-") && a != "Bearer token-1"),
        "the refresher installed a newer token: {later:?}"
    );
    assert!(client.credentials_refreshes() >= 1);
}

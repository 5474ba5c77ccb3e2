//! Credentials on a live client: refreshed ahead of expiry and handed to
//! the running instance, refreshed once when the store refuses them, and a
//! leader that keeps its lease across rotations whose old keys are revoked
//! by the store itself.

use super::{acquire_options as options, endpoint, fresh_prefix, harness};
use host_test::aws_fakes::gate::{Issued, TokenGate};
use host_test::server::{Endpoint, SeaweedFs};
use s3_lease_host::blocking::{Client, Elector};
use s3_lease_host::{
    Credentials, CredentialsSource, ElectionEvent, ElectorConfig, Error, ErrorKind,
    FetchedCredentials, LeaseRecord, Role, S3Builder, SharedSource, StoreConfig,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// New gate credentials on every fetch (or the same ones, `sticky`).
struct FromGate {
    gate: Arc<TokenGate>,
    fetches: AtomicUsize,
    sticky: Mutex<Option<Issued>>,
    keep_same: bool,
}

impl CredentialsSource for FromGate {
    fn fetch(&self) -> Result<FetchedCredentials, Error> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        let mut sticky = self.sticky.lock().unwrap();
        let issued = match (&*sticky, self.keep_same) {
            (Some(i), true) => i.clone(),
            _ => self.gate.issue(Duration::from_secs(3600)),
        };
        *sticky = Some(issued.clone());
        Ok(fetched(
            &issued.access_key_id,
            &issued.secret_access_key,
            Some(&issued.session_token),
            issued.expires,
        ))
    }
}

fn fetched(
    key: &str,
    secret: &str,
    token: Option<&str>,
    expires: SystemTime,
) -> FetchedCredentials {
    let credentials = Credentials::new(key, secret);
    let credentials = match token {
        Some(token) => credentials.with_session_token(token),
        None => credentials,
    };
    FetchedCredentials::new(credentials, Some(expires), "test")
}

/// `e`'s bucket at `url`, with credentials from `source` (the first
/// fetched here).
fn refreshed_from(
    e: &Endpoint,
    url: &str,
    prefix: &str,
    source: Arc<dyn CredentialsSource>,
) -> StoreConfig {
    let keys = Credentials::new(&e.access_key_id, &e.secret_access_key);
    S3Builder::new(&e.bucket, &e.region, keys)
        .endpoint(url)
        .credentials_source(SharedSource::from_arc(source))
        .unwrap()
        .build()
        .with_key_prefix(prefix)
}

fn through_gate(prefix: &str, keep_same: bool) -> (Arc<TokenGate>, Arc<FromGate>, StoreConfig) {
    let gate = Arc::new(TokenGate::start(endpoint()).unwrap());
    let source = Arc::new(FromGate {
        gate: gate.clone(),
        fetches: AtomicUsize::new(0),
        sticky: Mutex::default(),
        keep_same,
    });
    let config = refreshed_from(endpoint(), &gate.url, prefix, source.clone());
    (gate, source, config)
}

fn current_key(source: &FromGate) -> String {
    source
        .sticky
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .access_key_id
        .clone()
}

/// Elects `client` on "leader" (renew deadline half the lease, retry a
/// sixth) and waits until it leads.
fn lead(client: &Client, lease_ms: u64) -> (Elector, LeaseRecord) {
    let mut elector = client
        .elect(
            &ElectorConfig::new("leader")
                .lease_duration(Duration::from_millis(lease_ms))
                .renew_deadline(Duration::from_millis(lease_ms / 2))
                .retry_period(Duration::from_millis(lease_ms / 6))
                .holder_id("rotating"),
        )
        .unwrap();
    let won = elector
        .recv_event_timeout(Duration::from_secs(10))
        .expect("an event");
    let ElectionEvent::BecameLeader(lease) = won else {
        panic!("{won:?}");
    };
    (elector, lease)
}

#[test]
fn a_refused_key_is_fetched_again_once_and_the_call_sent_again() {
    let prefix = fresh_prefix("creds-refused");
    let (gate, source, config) = through_gate(&prefix, false);
    let client = Client::connect(harness().runtime(), &config).unwrap();
    // As a record: the test renews it itself.
    let lease = client
        .acquire("k", &options(30_000), Duration::from_secs(5))
        .unwrap()
        .detach()
        .expect("held");
    assert_eq!(source.fetches.load(Ordering::SeqCst), 1);
    let first = current_key(&source);
    gate.revoke(&first);
    // The renew is refused (403 InvalidAccessKeyId), new keys are
    // fetched, and the renew goes again: one refusal, one extra fetch.
    let renewed = client.renew(&lease).unwrap();
    assert_eq!(renewed.token, lease.token);
    assert_eq!(gate.refusals(), vec![format!("InvalidAccessKeyId {first}")]);
    assert_eq!(source.fetches.load(Ordering::SeqCst), 2);
    client.release(&renewed).unwrap();
    assert_eq!(gate.refusals().len(), 1);
}

/// The renew's write lands, its reply is a 500 and the read-back after it
/// is refused (the keys revoked in the same outage): the host fetches new
/// keys and runs the whole renew again, whose write's condition fails on
/// the first run's landed write. That write is the holder's own grant: the
/// second run adopts it and renews, never reporting the lease lost.
#[test]
fn a_call_run_again_after_refused_keys_recognises_its_first_runs_write() {
    let prefix = fresh_prefix("creds-rerun");
    let (gate, source, config) = through_gate(&prefix, false);
    let client = Client::connect(harness().runtime(), &config).unwrap();
    let lease = client
        .acquire("k", &options(30_000), Duration::from_secs(5))
        .unwrap()
        .detach()
        .expect("held");
    gate.fail_next_put_and_revoke();
    let renewed = client
        .renew(&lease)
        .unwrap_or_else(|e| panic!("the first run's own write read as {e}"));
    assert_eq!(renewed.token, lease.token);
    assert_eq!(source.fetches.load(Ordering::SeqCst), 2);
    assert_eq!(gate.refusals().len(), 1, "{:?}", gate.refusals());
    let other = Client::connect(harness().runtime(), &config).unwrap();
    assert!(other.try_acquire("k", &options(30_000)).unwrap().is_none());
    client.release(&renewed).unwrap();
}

#[test]
fn a_source_that_gives_the_refused_key_again_gets_no_retry() {
    let prefix = fresh_prefix("creds-same");
    let (gate, source, config) = through_gate(&prefix, true);
    let client = Client::connect(harness().runtime(), &config).unwrap();
    let lease = client
        .acquire("k", &options(30_000), Duration::from_secs(5))
        .unwrap()
        .detach()
        .expect("held");
    gate.revoke(&current_key(&source));
    let err = client.renew(&lease).unwrap_err();
    assert!(
        err.kind() == ErrorKind::AccessDenied && err.code() == Some("InvalidAccessKeyId"),
        "{err}"
    );
    // One fetch after the refusal, the same key: not sent again.
    assert_eq!(source.fetches.load(Ordering::SeqCst), 2);
    assert_eq!(gate.refusals().len(), 1);
    let text = format!("{err} {err:?}");
    for secret in gate.secrets() {
        assert!(!text.contains(&secret), "{text}");
    }
}

#[test]
fn a_leader_whose_key_is_revoked_renews_with_new_ones_before_its_deadline() {
    let prefix = fresh_prefix("creds-leader-revoked");
    let (gate, source, config) = through_gate(&prefix, false);
    let client = Client::connect(harness().runtime(), &config).unwrap();
    let (mut elector, _) = lead(&client, 6_000);
    gate.revoke(&current_key(&source));
    std::thread::sleep(Duration::from_millis(4_000));
    assert!(
        matches!(elector.role(), Role::Leader(_)),
        "{:?}",
        elector.last_error()
    );
    let events: Vec<_> = std::iter::from_fn(|| elector.try_event()).collect();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ElectionEvent::StoppedLeading(_))),
        "{events:?}"
    );
    assert_eq!(gate.refusals().len(), 1, "{:?}", gate.refusals());
    elector.resign().unwrap();
}

/// Keys SeaweedFS itself knows, each living 6 s: a new one is handed out
/// once half the lifetime is gone, and SeaweedFS stops accepting each
/// when it expires (its identities reloaded on SIGHUP).
struct SeaweedKeys {
    server: Arc<SeaweedFs>,
    /// (key, secret, expires), oldest first; the last is not handed out yet.
    keys: Mutex<Vec<(String, String, SystemTime)>>,
    handed: Mutex<Vec<String>>,
    lifetime: Duration,
    /// Fetches made after the key handed out last had expired: a client
    /// that refreshes ahead makes none.
    late: AtomicUsize,
    last_expiry: Mutex<Option<SystemTime>>,
}

impl SeaweedKeys {
    fn key(n: usize) -> (String, String) {
        (
            format!("ROTATINGKEY{n:04}"),
            format!("rotating-secret-{n}/x+y"),
        )
    }

    /// Provisions the next key ahead (SeaweedFS reloads asynchronously) and
    /// drops the expired ones.
    fn reload(&self, keys: &mut Vec<(String, String, SystemTime)>) {
        let now = SystemTime::now();
        keys.retain(|(_, _, expires)| *expires > now);
        let pairs: Vec<_> = keys
            .iter()
            .map(|(k, s, _)| (k.clone(), s.clone()))
            .collect();
        self.server.set_extra_keys(&pairs).unwrap();
    }
}

impl CredentialsSource for SeaweedKeys {
    fn fetch(&self) -> Result<FetchedCredentials, Error> {
        let mut keys = self.keys.lock().unwrap();
        let mut handed = self.handed.lock().unwrap();
        let now = SystemTime::now();
        let mut last_expiry = self.last_expiry.lock().unwrap();
        if last_expiry.is_some_and(|e| e <= now) {
            self.late.fetch_add(1, Ordering::SeqCst);
        }
        // The newest handed-out key while more than half its life is left.
        let current = keys
            .iter()
            .rev()
            .find(|(k, _, e)| {
                handed.contains(k) && e.duration_since(now).is_ok_and(|l| l > self.lifetime / 2)
            })
            .cloned();
        let (key, secret, expires) = match current {
            Some(c) => c,
            None => {
                // Hand out the provisioned one, and provision its successor.
                let next = keys
                    .iter()
                    .find(|(k, _, _)| !handed.contains(k))
                    .cloned()
                    .unwrap();
                let i = keys.iter().position(|(k, _, _)| *k == next.0).unwrap();
                keys[i].2 = now + self.lifetime;
                *last_expiry = Some(keys[i].2);
                handed.push(next.0.clone());
                let (k, s) = Self::key(handed.len() + 1);
                keys.push((k, s, now + Duration::from_secs(3600)));
                self.reload(&mut keys);
                keys[i].clone()
            }
        };
        Ok(fetched(&key, &secret, None, expires))
    }
}

#[test]
fn a_leader_keeps_its_lease_across_three_rotations_revoked_by_seaweedfs() {
    let server = Arc::new(SeaweedFs::start().unwrap());
    let lifetime = Duration::from_secs(6);
    let (k1, s1) = SeaweedKeys::key(1);
    let source = Arc::new(SeaweedKeys {
        server: server.clone(),
        keys: Mutex::new(vec![(
            k1,
            s1,
            SystemTime::now() + Duration::from_secs(3600),
        )]),
        handed: Mutex::default(),
        lifetime,
        late: AtomicUsize::new(0),
        last_expiry: Mutex::default(),
    });
    source.reload(&mut source.keys.lock().unwrap());
    std::thread::sleep(Duration::from_secs(1)); // the first reload
                                                // Revokes each key at its expiry.
    let revoker = {
        let source = source.clone();
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(20);
            while Instant::now() < until {
                std::thread::sleep(Duration::from_millis(250));
                let mut keys = source.keys.lock().unwrap();
                let before = keys.len();
                keys.retain(|(_, _, e)| *e > SystemTime::now());
                if keys.len() != before {
                    source.reload(&mut keys);
                }
            }
        })
    };
    let e = &server.endpoint;
    let config = refreshed_from(e, &e.url, &fresh_prefix("creds-rotation"), source.clone());
    let client = Client::connect(harness().runtime(), &config).unwrap();
    let (mut elector, lease) = lead(&client, 4_000);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(16) {
        std::thread::sleep(Duration::from_millis(200));
        match elector.role() {
            Role::Leader(l) => assert_eq!(l.token, lease.token),
            other => panic!(
                "stopped leading after {:?}: {other:?} {:?}",
                started.elapsed(),
                elector.last_error()
            ),
        }
    }
    let events: Vec<_> = std::iter::from_fn(|| elector.try_event()).collect();
    assert!(
        events
            .iter()
            .all(|e| matches!(e, ElectionEvent::LeaderChanged(_))),
        "{events:?}"
    );
    assert_eq!(
        source.late.load(Ordering::SeqCst),
        0,
        "a key was used past its expiry"
    );
    let handed = source.handed.lock().unwrap().clone();
    assert!(handed.len() >= 4, "fewer than three rotations: {handed:?}");
    elector.resign().unwrap();
    revoker.join().unwrap();
    // SeaweedFS refuses the first key now.
    let mut old = server.endpoint.clone();
    let (k1, s1) = SeaweedKeys::key(1);
    old.access_key_id = k1;
    old.secret_access_key = s1;
    let err = old.admin().unwrap().create_bucket().unwrap_err();
    assert!(format!("{err:#}").contains("InvalidAccessKeyId"), "{err:#}");
}

//! The grant log on the real servers (docs/audit.md): turn-taking on each
//! of the four stores leaves a log that verify proves (a lease abandoned
//! and taken over back-filled by its taker on S3); a record forged to
//! overlap its predecessor is found; and on the racing store (SeaweedFS
//! behind a server that lets racing conditional writers all win) the log
//! shows the overlap the store allowed, or the grantee caught it first.

use super::*;
use host_test::racing_store::RacingStore;
use s3_lease::audit::{log_dir, record_key, Kind, Record};
use s3_lease_host::blocking::Client;
use s3_lease_host::{AcquireOptions, AuditEnd, AuditFindingKind, ErrorKind, StoreConfig};
use std::time::Duration;

fn connect(config: &StoreConfig) -> Client {
    Client::connect(harness().runtime(), &config.clone().with_audit(true)).unwrap()
}

fn options(holder: &str, ttl: Duration) -> AcquireOptions {
    AcquireOptions::new(ttl).holder_id(holder)
}

/// Two clients take `key` in turn, `rounds` times each, each releasing;
/// then a third reads and verifies the log.
fn take_turns(config: &StoreConfig, key: &str, rounds: usize) {
    let (a, b) = (connect(config), connect(config));
    for round in 0..rounds {
        for (name, c) in [("a", &a), ("b", &b)] {
            let guard = c
                .acquire(
                    key,
                    &options(name, Duration::from_secs(30)),
                    Duration::from_secs(10),
                )
                .unwrap_or_else(|e| panic!("round {round}, {name}: {e}"));
            guard.release().unwrap();
        }
    }
    let auditor = Client::connect(harness().runtime(), config).unwrap();
    let log = auditor.audit(key, None).unwrap();
    assert_eq!(log.len(), 2 * rounds, "{log:#?}");
    for (i, e) in log.iter().enumerate() {
        assert_eq!(e.holder_id, ["a", "b"][i % 2], "{e:?}");
        assert_eq!(e.ended, AuditEnd::Released, "{e:?}");
        assert!(!e.backfilled, "{e:?}");
        // The store's time of the grant (DynamoDB's reply `Date`).
        assert!(e.granted_at_ms.is_some(), "{e:?}");
    }
    assert!(
        log.windows(2).all(|w| w[1].token == w[0].token + 1),
        "{log:#?}"
    );
    let report = auditor.audit_verify(key, None).unwrap();
    assert!(report.proven(), "{report:#?}");
    assert_eq!(report.grants, 2 * rounds as u64);
    // From the last grant's own time (whole seconds on most stores: that
    // second's earlier grants too).
    let last = log.last().unwrap();
    let since = auditor.audit(key, last.granted_at_ms).unwrap();
    assert_eq!(
        since.last().map(|e| e.token),
        Some(last.token),
        "{since:#?}"
    );
    assert!(
        since.len() < log.len() || log[0].granted_at_ms == last.granted_at_ms,
        "{since:#?}"
    );
    assert!(
        since.iter().all(|e| e.granted_at_ms >= last.granted_at_ms),
        "{since:#?}"
    );
}

#[test]
fn turn_taking_leaves_a_log_verify_proves_on_s3() {
    let prefix = fresh_prefix("audit-s3");
    let config = endpoint().host_config(&prefix).unwrap();
    take_turns(&config, "turns", 3);
    let epochs = config
        .clone()
        .with_strategy(s3_lease_host::Strategy::EpochObjects);
    take_turns(&epochs, "epochs", 2);
}

#[test]
fn turn_taking_leaves_a_log_verify_proves_on_dynamodb() {
    let dynamo = host_test::dynalite::shared();
    let table = dynamo.fresh_table("audit").unwrap();
    let config = dynamo
        .host_config(&table, &fresh_prefix("audit-ddb"))
        .unwrap();
    take_turns(&config, "turns", 3);
}

#[test]
fn turn_taking_leaves_a_log_verify_proves_on_azure() {
    let config = host_test::azurite::shared()
        .host_config(&fresh_prefix("audit-azure"))
        .unwrap();
    take_turns(&config, "turns", 3);
}

#[test]
fn turn_taking_leaves_a_log_verify_proves_on_gcs() {
    let config = host_test::fake_gcs::endpoint()
        .host_config(&fresh_prefix("audit-gcs"))
        .unwrap();
    take_turns(&config, "turns", 3);
}

/// A holder that vanishes without releasing: the next grantee, after the
/// store's clock shows the lease over, records it (back-filled, written by
/// the taker) before its own grant, and verify proves the takeover.
#[test]
fn a_lease_abandoned_is_back_filled_by_its_taker_and_verify_proves_it() {
    let config = endpoint()
        .host_config(&fresh_prefix("audit-abandoned"))
        .unwrap();
    let (a, b) = (connect(&config), connect(&config));
    let ttl = Duration::from_secs(1);
    let abandoned = a.try_acquire("k", &options("a", ttl)).unwrap().unwrap();
    let token = abandoned.token();
    // Not released, no longer renewed: as a process that died holding it.
    let _ = abandoned.detach();
    let taken = b
        .acquire("k", &options("b", ttl), Duration::from_secs(20))
        .unwrap();
    assert_eq!(taken.token(), token + 1);
    taken.release().unwrap();
    let log = b.audit("k", None).unwrap();
    assert_eq!(log.len(), 2, "{log:#?}");
    assert_eq!(log[0].ended, AuditEnd::Expired, "{log:#?}");
    assert_eq!(log[1].ended, AuditEnd::Released, "{log:#?}");
    let report = b.audit_verify("k", None).unwrap();
    assert!(report.proven(), "{report:#?}");
}

/// A test with the store's keys rewrites token 2's record to say its
/// grantee took the key while token 1's lease was live on the store's
/// clock: verify reports two holders at once, naming that record.
#[test]
fn verify_finds_a_forged_overlapping_record() {
    let prefix = fresh_prefix("audit-forged");
    let config = endpoint().host_config(&prefix).unwrap();
    let (a, b) = (connect(&config), connect(&config));
    let ttl = Duration::from_secs(1);
    let first = a.try_acquire("k", &options("a", ttl)).unwrap().unwrap();
    let _ = first.detach();
    b.acquire("k", &options("b", ttl), Duration::from_secs(20))
        .unwrap()
        .release()
        .unwrap();
    assert!(b.audit_verify("k", None).unwrap().proven());

    let admin = endpoint().admin().unwrap();
    let name = record_key(&log_dir(&prefix, "k"), 2, Kind::Grant);
    let (body, _) = admin.get(&name).unwrap().expect("token 2's record");
    let mut forged = Record::from_json(&body).unwrap();
    let previous = forged.previous.as_mut().expect("what token 2 replaced");
    let written = previous.holders[0].written_at_ms.expect("a store time");
    previous.date_ms = Some(written + 200);
    admin.put(&name, &forged.to_json()).unwrap();

    let report = b.audit_verify("k", None).unwrap();
    assert!(report.overlapped && !report.proven(), "{report:#?}");
    let finding = &report.findings[0];
    assert_eq!(
        (finding.kind, finding.token),
        (AuditFindingKind::TakenWhileLive, 2),
        "{report:#?}"
    );
    assert!(finding.evidence.contains(&name), "{finding:?}");
}

/// Racing clients on a store that checks a condition, then writes: several
/// are granted one token, and their create-only records of it race too
/// (one overwrites the others). Verify finds the token held by another
/// holder than its record names, or a grantee found its token's record
/// already written (its collision check, `store-unsafe`); a round whose
/// last lock write and last record write were the same racer's leaves no
/// trace, which is why the test runs several.
#[test]
fn on_the_racing_store_the_log_shows_the_overlap_or_the_grantee_catches_it() {
    let store = RacingStore::start(endpoint(), Duration::from_millis(200)).unwrap();
    let racing = store.endpoint();
    let prefix = fresh_prefix("audit-racing");
    let config = racing.host_config(&prefix).unwrap();
    let (mut overlapped, mut caught) = (0, 0);
    for round in 0..6 {
        let key = format!("k{round}");
        let outcomes: Vec<_> = std::thread::scope(|s| {
            let racers: Vec<_> = (0..4)
                .map(|i| {
                    let (config, key) = (&config, &key);
                    s.spawn(move || {
                        let c = connect(config);
                        let holder = format!("racer-{i}");
                        let r = c.try_acquire(key, &options(&holder, Duration::from_secs(30)));
                        let r = r.map(|g| g.map(|g| (g.token(), g.detach())));
                        (c, r)
                    })
                })
                .collect();
            racers.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let granted = outcomes
            .iter()
            .filter(|(_, r)| matches!(r, Ok(Some(_))))
            .count();
        let collisions = outcomes
            .iter()
            .filter(|(_, r)| matches!(r, Err(e) if e.kind() == ErrorKind::StoreUnsafe))
            .count();
        let auditor = Client::connect(harness().runtime(), &config).unwrap();
        let report = auditor.audit_verify(&key, None).unwrap();
        println!(
            "racing round {round}: {granted} granted, {collisions} collisions caught, \
             findings {:?}",
            report
                .findings
                .iter()
                .map(|f| (f.kind.name(), f.token))
                .collect::<Vec<_>>()
        );
        overlapped += usize::from(report.overlapped);
        caught += usize::from(collisions > 0);
    }
    assert!(
        store
            .written_after_check
            .load(std::sync::atomic::Ordering::Relaxed)
            > 4
    );
    assert!(overlapped + caught > 0, "verify proved every racing round");
}

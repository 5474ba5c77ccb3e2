//! The log through the client, over every store model: turn-taking that
//! verify proves, a crash between a grant and its record back-filled by
//! the next grantee, a store that grants a token twice caught where it
//! happens and by verify, a forged record refused, pruning and `since`,
//! and `--fenced` on a versioned bucket.

use super::names::{log_dir, record_key, Kind};
use super::read::ReadLog;
use super::record::Record;
use super::timeline::Ended;
use super::verify::FindingKind;
use super::write::{RecordGrant, Recorded};
use crate::client::ClientCore;
use crate::config::{ClientConfig, ExpiryClock, Store, Strategy};
use crate::driver::{self, Io};
use crate::error::Error;
use crate::lease::{Grant, Lease};
use crate::protocol::AcquireOutcome;
use crate::ready::Ready;
use crate::stores::azure::model::AzureModel;
use crate::stores::dynamodb::model::DynamoModel;
use crate::stores::gcs::model::{self as gcs_model, GcsModel};
use crate::stores::s3::model::S3Model;
use crate::stores::s3::{Method, S3Request};
use crate::strategy::single_object::semaphore::SlotOutcome;
use crate::testing::intercept::Intercept;
use crate::testing::model_io::{Model, ModelIo};
use crate::testing::raw_config;
use std::cell::RefCell;
use std::rc::Rc;

const START_MS: u64 = 1_700_000_000_000;
const TTL_MS: u64 = 10_000;

/// A store several clients share.
type Shared<M> = Rc<RefCell<M>>;

fn audited(mut config: ClientConfig) -> ClientConfig {
    config.audit = true;
    config
}

fn s3(strategy: Strategy, clock: ExpiryClock) -> ClientConfig {
    audited(ClientConfig::validate(raw_config(strategy, clock)).unwrap())
}

fn dynamodb(clock: ExpiryClock) -> ClientConfig {
    let mut raw = raw_config(Strategy::SingleObject, clock);
    raw.store = Store::DynamoDb(crate::testing::test_table("locks"));
    audited(ClientConfig::validate(raw).unwrap())
}

fn azure() -> ClientConfig {
    audited(crate::stores::azure::model::client_config(
        crate::stores::azure::model::CONTAINER,
    ))
}

fn gcs() -> ClientConfig {
    audited(gcs_model::client_config(gcs_model::BUCKET))
}

fn grant(holder: &str) -> Grant {
    Grant::new(TTL_MS, holder.into(), String::new()).unwrap()
}

/// Tries until granted, a second of store time between tries (a
/// contender that must watch the lease for its ttl, or for the store's
/// clock, first).
fn take<I: Io, M: Model>(
    c: &mut ClientCore,
    io: &mut I,
    shared: &Shared<M>,
    holder: &str,
) -> Lease {
    for _ in 0..120 {
        match c.try_acquire(io, "k", &grant(holder)).ready() {
            Ok(AcquireOutcome::Granted(lease)) => return lease,
            Ok(AcquireOutcome::Held(_)) => shared.borrow_mut().advance(1_000),
            Err(e) => panic!("{holder}: {e:?}"),
        }
    }
    panic!("{holder} never got the key")
}

/// A: grant and release; B: grant, then crash; C: takes over once B's
/// lease expired, and releases. Verify proves it; the timeline says so.
fn turn_taking<M: Model>(store: M, config: ClientConfig) {
    let what = format!(
        "{:?}/{:?}/{}",
        config.strategy,
        config.expiry_clock,
        config.store.name()
    );
    let shared = Rc::new(RefCell::new(store));
    let mut io = ModelIo::of(shared.clone());
    let mut a = ClientCore::new(config.clone());
    let lease = take(&mut a, &mut io, &shared, "a");
    a.rewrite(&mut io, lease, true).ready().unwrap();
    let mut b = ClientCore::new(config.clone());
    let lease = take(&mut b, &mut io, &shared, "b");
    assert_eq!(lease.token, 2, "{what}");
    drop(b);
    let mut c = ClientCore::new(config.clone());
    let lease = take(&mut c, &mut io, &shared, "c");
    assert_eq!(lease.token, 3, "{what}");
    c.rewrite(&mut io, lease, true).ready().unwrap();

    let mut auditor = ClientCore::new(config);
    let report = auditor.audit_verify(&mut io, "k", None).ready().unwrap();
    assert!(report.proven(), "{what}: {report:#?}");
    assert_eq!(
        (report.first_token, report.last_token, report.grants),
        (1, 3, 3),
        "{what}"
    );
    let timeline = auditor.audit_timeline(&mut io, "k", None).ready().unwrap();
    let ends: Vec<_> = timeline
        .iter()
        .map(|e| (e.token, e.holder.as_str(), e.ended))
        .collect();
    assert_eq!(
        ends,
        [
            (1, "a", Ended::Released),
            (2, "b", Ended::Expired),
            (3, "c", Ended::Released)
        ],
        "{what}"
    );
    for entry in &timeline {
        assert!(
            entry.granted_ms.is_some() && !entry.backfilled,
            "{what}: {entry:?}"
        );
    }
}

#[test]
fn verify_proves_turn_taking_on_every_store_and_clock() {
    for (strategy, clock) in [
        (Strategy::SingleObject, ExpiryClock::Server),
        (Strategy::SingleObject, ExpiryClock::Observed),
        (Strategy::SingleObject, ExpiryClock::Holder),
        (Strategy::EpochObjects, ExpiryClock::Server),
        (Strategy::EpochObjects, ExpiryClock::Observed),
    ] {
        turn_taking(S3Model::new(START_MS), s3(strategy, clock));
    }
    for clock in [ExpiryClock::Observed, ExpiryClock::Holder] {
        turn_taking(DynamoModel::new("locks", START_MS), dynamodb(clock));
    }
    turn_taking(AzureModel::new(START_MS), azure());
    turn_taking(GcsModel::new(START_MS), gcs());
}

/// Requests to the log's folder fail before they reach the store.
fn log_unreachable(request: &S3Request) -> Option<Result<crate::stores::s3::S3Response, Error>> {
    request
        .object_key
        .contains(super::AUDIT_DIR_NAME)
        .then(|| Err(Error::Transport("connection reset".into())))
}

#[test]
fn a_grant_whose_record_cannot_be_written_is_not_used_and_its_successor_back_fills_it() {
    let config = s3(Strategy::SingleObject, ExpiryClock::Server);
    let shared = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let mut io = ModelIo::of(shared.clone());
    let mut a = ClientCore::new(config.clone());
    let lease = take(&mut a, &mut io, &shared, "a");
    a.rewrite(&mut io, lease, true).ready().unwrap();
    // B's grant lands; its record never does (a crash in between).
    let mut b = ClientCore::new(config.clone());
    let failed = {
        let mut cut = Intercept::new(&mut io, |r, _| log_unreachable(r));
        b.try_acquire(&mut cut, "k", &grant("b")).ready()
    };
    assert!(matches!(failed, Err(Error::Transport(_))), "{failed:?}");
    let mut c = ClientCore::new(config.clone());
    let lease = take(&mut c, &mut io, &shared, "c");
    assert_eq!(lease.token, 3);

    let mut auditor = ClientCore::new(config);
    let report = auditor.audit_verify(&mut io, "k", None).ready().unwrap();
    assert!(report.proven(), "{report:#?}");
    assert_eq!(report.backfilled, 1);
    let timeline = auditor.audit_timeline(&mut io, "k", None).ready().unwrap();
    let b = &timeline[1];
    assert_eq!((b.token, b.holder.as_str()), (2, "b"));
    assert!(
        b.backfilled && b.written_by == "c" && b.ended == Ended::Expired,
        "{b:?}"
    );

    // B's record, late: the back-fill says its grant was taken over.
    let dir = log_dir("locks/", "k");
    let mut late = io
        .store
        .borrow()
        .objects
        .get(&record_key(&dir, 2, Kind::Grant))
        .map(|o| Record::from_json(&o.body).unwrap())
        .unwrap();
    late.backfilled = false;
    late.written_by = "b".into();
    let recorded = driver::run(&mut io, RecordGrant::new(dir, late, false)).ready();
    assert_eq!(recorded, Ok(Recorded::TakenOver { by: "c".into() }));
}

/// The back-fill of B's grant meets S3's 409 ("try again", nothing
/// written) before C's takeover: C sends it again, and grants only once it
/// is there. (Taken for "already there", the 409 left B's grant with no
/// record: verify could not prove the log.)
#[test]
fn a_back_fill_answered_409_is_sent_again_before_the_grant() {
    for strategy in [Strategy::SingleObject, Strategy::EpochObjects] {
        let config = s3(strategy, ExpiryClock::Server);
        let shared = Rc::new(RefCell::new(S3Model::new(START_MS)));
        let mut io = ModelIo::of(shared.clone());
        let mut b = ClientCore::new(config.clone());
        let failed = {
            let mut cut = Intercept::new(&mut io, |r, _| log_unreachable(r));
            b.try_acquire(&mut cut, "k", &grant("b")).ready()
        };
        assert!(matches!(failed, Err(Error::Transport(_))), "{failed:?}");
        let mut c = ClientCore::new(config.clone());
        let mut conflicts = 2;
        let lease = {
            let mut busy = Intercept::new(&mut io, |r, _| {
                let backfill = r.method == Method::Put
                    && r.object_key.contains(super::AUDIT_DIR_NAME)
                    && r.object_key.ends_with("00000000000000000001.grant.json");
                (backfill && conflicts > 0).then(|| {
                    conflicts -= 1;
                    Ok(crate::stores::s3::model::conflict())
                })
            });
            take(&mut c, &mut busy, &shared, "c")
        };
        assert_eq!(lease.token, 2, "{strategy:?}");

        let mut auditor = ClientCore::new(config);
        let report = auditor.audit_verify(&mut io, "k", None).ready().unwrap();
        assert!(report.proven(), "{strategy:?}: {report:#?}");
        assert_eq!((report.backfilled, conflicts), (1, 0), "{strategy:?}");
    }
}

#[test]
fn a_record_written_late_by_its_own_grantee_is_taken_over_and_the_grant_not_used() {
    // As above, through the client: B's record comes only after C
    // back-filled it, and B's call reports no grant.
    let config = s3(Strategy::SingleObject, ExpiryClock::Server);
    let shared = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let mut io = ModelIo::of(shared.clone());
    let mut b = ClientCore::new(config.clone());
    let mut c = ClientCore::new(config);
    let mut c_io = ModelIo::of(shared.clone());
    c.try_acquire(&mut c_io, "k", &grant("c")).ready().unwrap();
    let mut hold_once = true;
    let mut slow = Intercept::new(&mut io, |r, _| {
        if r.object_key.contains(super::AUDIT_DIR_NAME) && std::mem::take(&mut hold_once) {
            // B stalls past its ttl before its record goes out; C takes
            // the key meanwhile and back-fills B's grant.
            let _ = take(&mut c, &mut c_io, &shared, "c");
        }
        None
    });
    shared.borrow_mut().advance(TTL_MS + 3_000);
    let outcome = b.try_acquire(&mut slow, "k", &grant("b")).ready();
    assert_eq!(outcome, Ok(AcquireOutcome::Held(None)));
}

/// Two grantees read the same lock object; the store lets the second's
/// stale write through (its condition ignored): one token, two holders.
fn granted_twice<M: Model>(store: M, config: ClientConfig) {
    let shared = Rc::new(RefCell::new(store));
    let mut io = ModelIo::of(shared.clone());
    let a = Rc::new(RefCell::new(ClientCore::new(config.clone())));
    let lease = take(&mut a.borrow_mut(), &mut io, &shared, "a");
    a.borrow_mut()
        .rewrite(&mut io, lease, true)
        .ready()
        .unwrap();
    let mut b = ClientCore::new(config.clone());
    let mut b_io = ModelIo::of(shared.clone());
    let mut a_io = ModelIo::of(shared.clone());
    let lock_key = "locks/k".to_string();
    let mut first = true;
    let a_in = a.clone();
    let mut careless = Intercept::new(&mut b_io, |r, io| {
        if r.method != Method::Put || r.object_key != lock_key {
            return None;
        }
        if std::mem::take(&mut first) {
            // A is granted between B's read and B's write.
            let lease = take(&mut a_in.borrow_mut(), &mut a_io, &shared, "a");
            assert_eq!(lease.token, 2);
        }
        let mut unconditional = r.clone();
        unconditional
            .headers
            .retain(|(k, _)| k != "if-match" && k != "if-none-match");
        unconditional.if_token = None;
        Some(io.send(&unconditional).ready())
    });
    let caught = b.try_acquire(&mut careless, "k", &grant("b")).ready();
    assert!(
        matches!(&caught, Err(e) if super::is_collision(e)),
        "{}: {caught:?}",
        config.store.name()
    );
    // This client grants nothing more on this store.
    let again = b.try_acquire(&mut careless, "other", &grant("b")).ready();
    assert!(
        matches!(&again, Err(e) if super::is_collision(e)),
        "{again:?}"
    );

    let mut auditor = ClientCore::new(config);
    let report = auditor.audit_verify(&mut io, "k", None).ready().unwrap();
    assert!(report.overlapped(), "{report:#?}");
    let repeated = report
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::TokenRepeated)
        .unwrap();
    assert_eq!(repeated.token, 2);
    assert!(repeated
        .evidence
        .iter()
        .any(|e| e.ends_with(".collision.json")));
}

#[test]
fn a_store_that_grants_a_token_twice_is_caught_by_the_grantee_and_by_verify() {
    granted_twice(
        S3Model::new(START_MS),
        s3(Strategy::SingleObject, ExpiryClock::Server),
    );
    granted_twice(
        DynamoModel::new("locks", START_MS),
        dynamodb(ExpiryClock::Observed),
    );
    granted_twice(AzureModel::new(START_MS), azure());
    granted_twice(GcsModel::new(START_MS), gcs());
}

#[test]
fn verify_refuses_a_forged_overlapping_record() {
    let config = s3(Strategy::SingleObject, ExpiryClock::Server);
    let shared = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let mut io = ModelIo::of(shared.clone());
    let mut a = ClientCore::new(config.clone());
    take(&mut a, &mut io, &shared, "a");
    let mut b = ClientCore::new(config.clone());
    take(&mut b, &mut io, &shared, "b");
    let mut auditor = ClientCore::new(config);
    assert!(auditor
        .audit_verify(&mut io, "k", None)
        .ready()
        .unwrap()
        .proven());

    // Token 2's record, rewritten to say B took the key two seconds
    // after A's last write.
    let name = record_key(&log_dir("locks/", "k"), 2, Kind::Grant);
    let mut forged = Record::from_json(&shared.borrow().objects[&name].body).unwrap();
    let p = forged.previous.as_mut().unwrap();
    let written = p.holders[0].written_at_ms.unwrap();
    p.date_ms = Some(written + 2_000);
    shared.borrow_mut().put_object(&name, &forged.to_json());
    let report = auditor.audit_verify(&mut io, "k", None).ready().unwrap();
    assert!(report.overlapped(), "{report:#?}");
    let f = &report.findings[0];
    assert_eq!((f.kind, f.token), (FindingKind::TakenWhileLive, 2));
    assert!(
        f.detail.contains(&(written + TTL_MS + 2_000).to_string()),
        "{f:?}"
    );

    // A record of a grant that never saw its predecessor (they raced):
    // C's, forged to say it replaced token 1 as B's did.
    let mut c = ClientCore::new(auditor.config.clone());
    take(&mut c, &mut io, &shared, "c");
    let three = record_key(&log_dir("locks/", "k"), 3, Kind::Grant);
    let mut raced = Record::from_json(&shared.borrow().objects[&three].body).unwrap();
    raced.previous = Record::from_json(&shared.borrow().objects[&name].body)
        .unwrap()
        .previous;
    raced.previous.as_mut().unwrap().date_ms = Some(written + 60_000);
    shared.borrow_mut().put_object(&three, &raced.to_json());
    let report = auditor.audit_verify(&mut io, "k", None).ready().unwrap();
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::MissedGrant && f.token == 3),
        "{report:#?}"
    );
}

#[test]
fn a_token_no_record_explains_is_reported() {
    let config = s3(Strategy::SingleObject, ExpiryClock::Server);
    let shared = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let mut io = ModelIo::of(shared.clone());
    let mut a = ClientCore::new(config.clone());
    for holder in ["a", "b", "c"] {
        let lease = take(&mut a, &mut io, &shared, holder);
        a.rewrite(&mut io, lease, true).ready().unwrap();
    }
    let dir = log_dir("locks/", "k");
    // Token 2's records gone: token 3's record still names it.
    for kind in [Kind::Grant, Kind::Release] {
        shared
            .borrow_mut()
            .objects
            .remove(&record_key(&dir, 2, kind));
    }
    let report = a.audit_verify(&mut io, "k", None).ready().unwrap();
    assert!(report.proven(), "{report:#?}");
    // And token 3's as well: now nothing names token 2.
    shared
        .borrow_mut()
        .objects
        .remove(&record_key(&dir, 3, Kind::Grant));
    let report = a.audit_verify(&mut io, "k", None).ready().unwrap();
    let kinds: Vec<_> = report.findings.iter().map(|f| (f.kind, f.token)).collect();
    assert_eq!(kinds, [(FindingKind::UnexplainedGap, 2)], "{report:#?}");
    assert!(!report.overlapped());
}

/// A lock object deleted (as a lifecycle rule would) and created again a
/// floor stride higher: the log is read across the stride without a read
/// per token, and verify reports only that the new object's grant cannot
/// show the lease before it ended.
#[test]
fn a_lock_object_created_again_a_stride_higher_is_read_across_the_stride() {
    let config = s3(Strategy::SingleObject, ExpiryClock::Server);
    let shared = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let mut io = ModelIo::of(shared.clone());
    let mut a = ClientCore::new(config.clone());
    let lease = take(&mut a, &mut io, &shared, "a");
    a.rewrite(&mut io, lease, true).ready().unwrap();
    shared.borrow_mut().objects.remove("locks/k");
    shared.borrow_mut().advance(2 * TTL_MS);
    let mut b = ClientCore::new(config.clone());
    let lease = take(&mut b, &mut io, &shared, "b");
    let stride = crate::strategy::floor::FLOOR_STRIDE;
    assert_eq!(lease.token, stride + 1);
    b.rewrite(&mut io, lease, true).ready().unwrap();

    let mut auditor = ClientCore::new(config);
    io.take_requests();
    let report = auditor.audit_verify(&mut io, "k", None).ready().unwrap();
    let requests = io.take_requests().len();
    assert!(requests < 40, "{requests} requests");
    let kinds: Vec<_> = report.findings.iter().map(|f| (f.kind, f.token)).collect();
    assert_eq!(
        kinds,
        [(FindingKind::NotOnStoreClock, stride + 1)],
        "{report:#?}"
    );
    assert_eq!(report.grants, 2);
    let timeline = auditor.audit_timeline(&mut io, "k", None).ready().unwrap();
    let tokens: Vec<_> = timeline.iter().map(|e| e.token).collect();
    assert_eq!(tokens, [1, stride + 1]);
}

#[test]
fn prune_drops_old_records_and_since_starts_later() {
    let config = s3(Strategy::SingleObject, ExpiryClock::Server);
    let shared = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let mut io = ModelIo::of(shared.clone());
    let mut a = ClientCore::new(config);
    let mut granted_at = Vec::new();
    for n in 0..6 {
        shared.borrow_mut().advance(60_000);
        granted_at.push(shared.borrow().now_ms);
        let lease = take(&mut a, &mut io, &shared, &format!("h{n}"));
        a.rewrite(&mut io, lease, true).ready().unwrap();
    }
    let since = a
        .audit_timeline(&mut io, "k", Some(granted_at[3]))
        .ready()
        .unwrap();
    assert_eq!(since.iter().map(|e| e.token).collect::<Vec<_>>(), [4, 5, 6]);

    let pruned = a.audit_prune(&mut io, "k", granted_at[2]).ready().unwrap();
    assert_eq!((pruned.from, pruned.below), (1, 3));
    let dir = log_dir("locks/", "k");
    for token in 1..3 {
        assert!(!shared
            .borrow()
            .objects
            .contains_key(&record_key(&dir, token, Kind::Grant)));
    }
    let report = a.audit_verify(&mut io, "k", None).ready().unwrap();
    assert!(report.proven(), "{report:#?}");
    assert_eq!((report.first_token, report.grants), (3, 4));
    // Again, later: from where the marker is.
    let pruned = a.audit_prune(&mut io, "k", granted_at[4]).ready().unwrap();
    assert_eq!((pruned.from, pruned.below), (3, 5));
    let log = driver::run(&mut io, ReadLog::new(dir, 6, None))
        .ready()
        .unwrap();
    assert_eq!((log.pruned_below, log.from), (5, 5));
}

#[test]
fn semaphore_slots_are_recorded_and_a_dropped_holder_back_filled() {
    let config = s3(Strategy::SingleObject, ExpiryClock::Server);
    let shared = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let mut io = ModelIo::of(shared.clone());
    let mut c = ClientCore::new(config.clone());
    let slot = |c: &mut ClientCore, io: &mut ModelIo<Shared<S3Model>>, holder: &str| {
        c.try_acquire_slot(io, "k", &grant(holder), 2, false)
            .ready()
            .unwrap()
    };
    let SlotOutcome::Granted(a) = slot(&mut c, &mut io, "a") else {
        panic!()
    };
    // B's slot lands, its record does not (it crashes).
    {
        let mut cut = Intercept::new(&mut io, |r, _| log_unreachable(r));
        assert!(c
            .try_acquire_slot(&mut cut, "k", &grant("b"), 2, false)
            .ready()
            .is_err());
    }
    assert!(matches!(slot(&mut c, &mut io, "x"), SlotOutcome::Full(_)));
    shared.borrow_mut().advance(TTL_MS + 3_000);
    // A renews in time (the store's clock says so too); B's slot expired.
    let a = c.rewrite(&mut io, a, false).ready().unwrap();
    let SlotOutcome::Granted(d) = slot(&mut c, &mut io, "d") else {
        panic!()
    };
    assert_eq!(d.token, 3);
    c.rewrite(&mut io, a, true).ready().unwrap();

    let report = c.audit_verify(&mut io, "k", None).ready().unwrap();
    assert!(report.proven(), "{report:#?}");
    assert_eq!((report.grants, report.backfilled), (3, 1));
    let timeline = c.audit_timeline(&mut io, "k", None).ready().unwrap();
    let ends: Vec<_> = timeline
        .iter()
        .map(|e| (e.holder.as_str(), e.ended))
        .collect();
    assert_eq!(
        ends,
        [
            ("a", Ended::Released),
            ("b", Ended::Expired),
            ("d", Ended::Held)
        ]
    );
}

#[test]
fn a_log_costs_one_write_per_grant_and_release_and_one_more_per_takeover() {
    let config = s3(Strategy::SingleObject, ExpiryClock::Server);
    let shared = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let mut io = ModelIo::of(shared.clone());
    let mut a = ClientCore::new(config.clone());
    take(&mut a, &mut io, &shared, "warm"); // the seal key, read once
    shared.borrow_mut().advance(TTL_MS + 3_000);
    io.take_requests();
    let in_log = |io: &mut ModelIo<Shared<S3Model>>| {
        let sent = io.take_requests();
        let log = sent
            .iter()
            .filter(|r| r.object_key.contains(super::AUDIT_DIR_NAME))
            .count();
        (sent.len(), log)
    };
    // A takeover of an expired lease: GET, PUT, the record, a back-fill.
    let lease = take(&mut a, &mut io, &shared, "a");
    assert_eq!(in_log(&mut io), (4, 2));
    let lease = a.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(in_log(&mut io), (1, 0), "a renew writes nothing more");
    a.rewrite(&mut io, lease, true).ready().unwrap();
    assert_eq!(in_log(&mut io), (2, 1));
    // The next grant after a release (known released: no read).
    take(&mut a, &mut io, &shared, "b");
    assert_eq!(in_log(&mut io), (2, 1));
    let bytes = shared.borrow().objects[&record_key(&log_dir("locks/", "k"), 3, Kind::Grant)]
        .body
        .len();
    assert!((400..700).contains(&bytes), "{bytes} bytes");
}

/// Epoch-objects, the seed the simulation found: A lists a key with no
/// epochs, then its floor write hangs; meanwhile B takes the key (its
/// floor, epoch 1) and keeps it, renewing, long past A's join window. A's
/// floor, read back, is old: raised a stride. A must list again before it
/// creates the stride's first epoch: B's epoch is live. (Created from the
/// old listing, A held the key beside B until B's next renew, and its
/// grant record named no epoch it followed: verify could not prove it.)
#[test]
fn a_floor_raised_after_an_old_listing_lists_again_and_finds_the_live_epoch() {
    for audit in [false, true] {
        let mut config = s3(Strategy::EpochObjects, ExpiryClock::Server);
        config.audit = audit;
        let shared = Rc::new(RefCell::new(S3Model::new(START_MS)));
        let mut io = ModelIo::of(shared.clone());
        let mut b_io = ModelIo::of(shared.clone());
        // Write ids of their own (the model's randomness is a counter).
        b_io.random = 1_000_003;
        let mut a = ClientCore::new(config.clone());
        let mut b = ClientCore::new(config.clone());
        let mut held: Option<Lease> = None;
        let outcome = {
            let mut stalled = Intercept::new(&mut io, |r, _| {
                let floor = r.method == Method::Put && r.object_key.contains(".s3-lease-floor");
                if !floor || held.is_some() {
                    return None;
                }
                let mut lease = take(&mut b, &mut b_io, &shared, "b");
                for _ in 0..30 {
                    shared.borrow_mut().advance(4_000);
                    lease = b.rewrite(&mut b_io, lease, false).ready().unwrap();
                }
                held = Some(lease);
                // The hung write, given up on: A reads the floor back.
                Some(Err(Error::Transport("timed out".into())))
            });
            a.try_acquire(&mut stalled, "k", &grant("a")).ready()
        };
        let b_lease = held.expect("A wrote its floor");
        // B keeps its lease: no epoch above its own was created.
        let renewed = b.rewrite(&mut b_io, b_lease, false).ready();
        assert!(renewed.is_ok(), "audit {audit}: B's renew: {renewed:?}");
        assert!(
            matches!(&outcome, Ok(AcquireOutcome::Held(Some(s))) if s.record.holder_id == "b"),
            "audit {audit}: A, while B holds the key: {outcome:?}"
        );
    }
}

/// `verify --fenced` through the client: on S3 it lists the prefix's
/// versions and reports a version whose token fell (the store's replies
/// to the versions listing and the versions' HEADs crafted here, as the
/// model keeps no versions); on GCS it lists no versions.
#[test]
fn verify_fenced_reports_a_version_whose_token_fell_on_s3_and_lists_none_on_gcs() {
    let config = s3(Strategy::SingleObject, ExpiryClock::Server);
    let shared = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let mut io = ModelIo::of(shared.clone());
    for holder in ["a", "b"] {
        let mut c = ClientCore::new(config.clone());
        let lease = take(&mut c, &mut io, &shared, holder);
        c.rewrite(&mut io, lease, true).ready().unwrap();
    }
    let lock = crate::fenced::lock_identity("single-object", "locks/k");
    let put = S3Request::new(Method::Put, "data/a", usize::MAX)
        .header(crate::fenced::META_LOCK, &lock)
        .header(crate::fenced::META_TOKEN, "1")
        .body("text/plain", b"x".to_vec());
    assert_eq!(shared.borrow_mut().handle(&put).status, 200);

    let versions = "<ListVersionsResult><IsTruncated>false</IsTruncated>\
        <Version><Key>data/a</Key><VersionId>new</VersionId>\
        <LastModified>2023-11-14T22:13:30.000Z</LastModified></Version>\
        <Version><Key>data/a</Key><VersionId>old</VersionId>\
        <LastModified>2023-11-14T22:13:25.000Z</LastModified></Version></ListVersionsResult>";
    let version_head = |token: &str| crate::stores::s3::S3Response {
        status: 200,
        headers: vec![
            (crate::fenced::META_LOCK.to_ascii_lowercase(), lock.clone()),
            (crate::fenced::META_TOKEN.to_ascii_lowercase(), token.into()),
        ],
        body: Vec::new(),
        body_too_large: None,
    };
    let mut auditor = ClientCore::new(config);
    let report = {
        let mut crafted = Intercept::new(&mut io, |r, _| {
            let version = r.query.iter().find(|(k, _)| k == "versionId");
            if r.query.iter().any(|(k, _)| k == "versions") {
                Some(Ok(crate::stores::s3::S3Response {
                    status: 200,
                    body: versions.as_bytes().to_vec(),
                    ..crate::stores::s3::S3Response::default()
                }))
            } else {
                version.map(|(_, id)| Ok(version_head(if id == "new" { "1" } else { "2" })))
            }
        });
        auditor
            .audit_verify(&mut crafted, "k", Some("data/"))
            .ready()
            .unwrap()
    };
    let kinds: Vec<_> = report.findings.iter().map(|f| (f.kind, f.token)).collect();
    assert_eq!(kinds, [(FindingKind::FencedTokenFell, 1)], "{report:#?}");
    assert!(report.overlapped());
    assert_eq!(
        report.findings[0].evidence,
        ["data/a?versionId=old", "data/a?versionId=new"]
    );

    let shared = Rc::new(RefCell::new(GcsModel::new(START_MS)));
    let mut io = ModelIo::of(shared.clone());
    let mut c = ClientCore::new(gcs());
    let lease = take(&mut c, &mut io, &shared, "a");
    c.rewrite(&mut io, lease, true).ready().unwrap();
    io.take_requests();
    let report = c.audit_verify(&mut io, "k", Some("data/")).ready().unwrap();
    assert!(report.proven(), "{report:#?}");
    let requests = io.take_requests();
    assert!(
        requests
            .iter()
            .all(|r| !r.query.iter().any(|(k, _)| k == "versions")),
        "{requests:#?}"
    );
}

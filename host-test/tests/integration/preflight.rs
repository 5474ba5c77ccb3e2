//! The store preflight against SeaweedFS, and against SeaweedFS made to
//! behave like weaker stores by a host hook (`host_test::simulated`): what
//! it reports, what it recommends, and the `preflight` config option
//! refusing to grant on a store that fails it.

use super::*;
use host_test::bindings::{
    Capability, CapabilityResult, Config, Error as E, PreflightReport, Strategy, Verdict,
};
use host_test::simulated;

/// The suite's own SeaweedFS, not an endpoint from the environment: the
/// differences asserted here are SeaweedFS's.
pub fn on_seaweedfs() -> bool {
    std::env::var("AWS_ENDPOINT_URL").map_or(true, |u| u.is_empty())
}

pub fn result(report: &PreflightReport, c: Capability) -> &CapabilityResult {
    report
        .results
        .iter()
        .find(|r| r.capability == c)
        .expect("every capability is reported")
}

pub fn failing(report: &PreflightReport) -> Vec<Capability> {
    report
        .results
        .iter()
        .filter(|r| r.verdict != Verdict::Pass)
        .map(|r| r.capability)
        .collect()
}

/// The report as a table, for the log (and the table in docs/stores.md).
pub fn print(store: &str, report: &PreflightReport) {
    println!("preflight of {store}: {} requests", report.requests);
    for r in &report.results {
        let status = r.status.map(|s| s.to_string()).unwrap_or_default();
        let silent = if r.silent { " SILENT" } else { "" };
        println!(
            "  {:<24} {:?}{silent} {status} {} — {}",
            format!("{:?}", r.capability),
            r.verdict,
            r.code,
            r.detail
        );
    }
    println!(
        "  safe: {:?}; clocks {:?}; recommended {:?}; config safe: {}",
        report.safe_strategies,
        report.safe_expiry_clocks,
        report.recommended_strategy,
        report.config_safe
    );
    println!("  clock offset: {:?}", report.clock_offset);
}

fn preflight(i: &mut Instance) -> PreflightReport {
    i.preflight()
        .expect("no trap")
        .unwrap_or_else(|e| panic!("preflight failed: {e:?}"))
}

/// Nothing is left under the scratch prefix.
fn assert_no_scratch_left(prefix: &str) {
    let admin = endpoint().admin().unwrap();
    let reply = admin
        .send(s3_lease::stores::s3::list_request(
            &format!("{prefix}.s3-lease-preflight/"),
            None,
        ))
        .expect("list");
    let left = s3_lease::stores::s3::parse_list(&reply.body).unwrap().keys;
    assert!(left.is_empty(), "scratch objects left: {left:?}");
}

fn with_preflight(prefix: &str, strategy: Strategy) -> Config {
    let mut config = endpoint().config(prefix);
    config.strategy = Some(strategy);
    config.preflight = Some(true);
    config
}

#[test]
fn seaweedfs_passes_with_its_differences_reported() {
    let prefix = fresh_prefix("preflight-weed");
    let mut i = opened(&prefix);
    let started = std::time::Instant::now();
    let report = preflight(&mut i);
    println!("preflight of SeaweedFS took {:?}", started.elapsed());
    print("SeaweedFS", &report);
    assert_eq!(
        report.safe_strategies,
        [Strategy::SingleObject, Strategy::EpochObjects]
    );
    assert!(report.config_safe);
    assert!(report
        .notes
        .iter()
        .any(|n| n.contains("Raced 8 concurrent writers per round")));
    for race in [Capability::ConcurrentCreate, Capability::ConcurrentUpdate] {
        let r = result(&report, race);
        assert_eq!(r.verdict, Verdict::Pass, "{race:?}: {}", r.detail);
    }
    assert_no_scratch_left(&prefix);
    if !on_seaweedfs() {
        return;
    }
    assert_eq!(failing(&report), [Capability::PayloadHash]);
    let missing = result(&report, Capability::IfMatchMissingKey);
    assert_eq!(
        missing.status,
        Some(412),
        "SeaweedFS answers 412 where AWS 404"
    );
    assert!(!result(&report, Capability::PayloadHash).silent);
    let offset = report.clock_offset.expect("SeaweedFS sends Date");
    assert!(offset.offset_ms.unsigned_abs() <= 1_000, "{offset:?}");
}

#[test]
fn a_store_that_ignores_conditions_fails_and_the_option_refuses_to_grant() {
    let prefix = fresh_prefix("preflight-ignored");
    let mut i = opened(&prefix);
    i.hooks.add_rule(simulated::ignoring_conditions(endpoint()));
    let report = preflight(&mut i);
    print("a store that ignores conditions (simulated)", &report);
    let create = result(&report, Capability::IfNoneMatchExisting);
    assert_eq!(
        (create.verdict, create.silent, create.status),
        (Verdict::Fail, true, Some(200))
    );
    assert!(result(&report, Capability::IfMatchPut).silent);
    assert!(report.safe_strategies.is_empty());
    assert_eq!(report.recommended_strategy, None);
    assert!(!report.config_safe);
    assert_no_scratch_left(&prefix);

    for strategy in [Strategy::SingleObject, Strategy::EpochObjects] {
        let mut i = opened_with(&with_preflight(&prefix, strategy));
        i.hooks.add_rule(simulated::ignoring_conditions(endpoint()));
        for round in 0..2 {
            match expect_err(i.try_acquire("k", &options(30_000))) {
                E::StoreUnsafe(r) => {
                    assert_eq!(r.capability, Capability::IfNoneMatchExisting, "{r:?}");
                    assert_eq!(r.verdict, Verdict::Fail);
                }
                other => panic!("{strategy:?}: expected store-unsafe, got {other:?}"),
            }
            let sent = i.hooks.take_requests();
            assert_eq!(
                sent.is_empty(),
                round == 1,
                "probed once, then the verdict is kept"
            );
        }
        assert!(matches!(
            expect_err(i.acquire("k", &options(30_000), 5_000)),
            E::StoreUnsafe(_)
        ));
    }
    // No lock object was written by any of them.
    let mut clean = opened(&prefix);
    assert_eq!(clean.inspect("k").unwrap().unwrap(), None);
}

#[test]
fn a_store_without_if_match_is_reported_and_epoch_objects_recommended() {
    let prefix = fresh_prefix("preflight-501");
    let mut i = opened(&prefix);
    i.hooks
        .add_rule(simulated::if_match_not_implemented(&["PUT", "DELETE"]));
    let report = preflight(&mut i);
    print("a store answering 501 to If-Match (simulated)", &report);
    let put = result(&report, Capability::IfMatchPut);
    assert_eq!(
        (put.verdict, put.status, put.code.as_str()),
        (Verdict::Fail, Some(501), "NotImplemented")
    );
    assert!(report.results.iter().all(|r| !r.silent));
    assert_eq!(report.safe_strategies, [Strategy::EpochObjects]);
    assert_eq!(report.recommended_strategy, Some(Strategy::EpochObjects));
    assert!(!report.config_safe, "the client is single-object");
    assert!(report.notes.iter().any(|n| n.contains("cannot renew")));
    assert_no_scratch_left(&prefix);

    // The option: single-object refused, naming If-Match; epoch-objects grants.
    let mut single = opened_with(&with_preflight(&prefix, Strategy::SingleObject));
    single
        .hooks
        .add_rule(simulated::if_match_not_implemented(&["PUT", "DELETE"]));
    match expect_err(single.try_acquire("k", &options(30_000))) {
        E::StoreUnsafe(r) => assert_eq!(r.capability, Capability::IfMatchPut),
        other => panic!("{other:?}"),
    }
    let mut epoch = opened_with(&with_preflight(&prefix, Strategy::EpochObjects));
    epoch
        .hooks
        .add_rule(simulated::if_match_not_implemented(&["PUT", "DELETE"]));
    assert!(try_acquire(&mut epoch, "k", &options(30_000)).is_some());
}

#[test]
fn a_501_to_delete_if_match_alone_is_reported_and_harms_neither_strategy() {
    // LocalStack's shape. Neither strategy deletes conditionally, so both
    // stay safe; the report says what the store does.
    let prefix = fresh_prefix("preflight-501-delete");
    let mut i = opened(&prefix);
    i.hooks
        .add_rule(simulated::if_match_not_implemented(&["DELETE"]));
    let report = preflight(&mut i);
    print(
        "a store answering 501 to DELETE If-Match (simulated)",
        &report,
    );
    let delete = result(&report, Capability::IfMatchDelete);
    assert_eq!((delete.verdict, delete.status), (Verdict::Fail, Some(501)));
    assert!(!delete.silent);
    assert_eq!(
        report.safe_strategies,
        [Strategy::SingleObject, Strategy::EpochObjects]
    );
    assert_no_scratch_left(&prefix);
}

#[test]
fn a_store_that_ignores_delete_if_match_fails() {
    // s3s-fs 0.14's shape, on SeaweedFS.
    let prefix = fresh_prefix("preflight-delete-ignored");
    let mut i = opened(&prefix);
    i.hooks
        .add_rule(simulated::ignoring_delete_if_match(endpoint()));
    let report = preflight(&mut i);
    print("a store that ignores DELETE If-Match (simulated)", &report);
    let delete = result(&report, Capability::IfMatchDelete);
    assert!(
        delete.silent && delete.verdict == Verdict::Fail,
        "{delete:?}"
    );
    assert!(report.safe_strategies.is_empty());
    assert_no_scratch_left(&prefix);
}

/// SeaweedFS behind a server that checks each PUT's condition itself, then
/// writes without it 200 ms later (`host_test::racing_store`): one request
/// at a time it is exact, and every probe passes; the race finds several
/// winners and the store is refused, naming the round.
#[test]
fn a_store_that_checks_then_writes_is_refused_by_the_race() {
    let store = host_test::racing_store::RacingStore::start(
        endpoint(),
        std::time::Duration::from_millis(200),
    )
    .unwrap();
    let racing = store.endpoint();
    let prefix = fresh_prefix("preflight-racing");
    let mut i = opened_with(&racing.config(&prefix));
    let report = preflight(&mut i);
    print(
        "a store that checks, then writes (SeaweedFS behind a racing server)",
        &report,
    );
    for probe in [
        Capability::IfNoneMatchExisting,
        Capability::IfMatchPut,
        Capability::IfMatchMissingKey,
    ] {
        assert_eq!(result(&report, probe).verdict, Verdict::Pass, "{probe:?}");
    }
    for race in [Capability::ConcurrentCreate, Capability::ConcurrentUpdate] {
        let r = result(&report, race);
        assert_eq!(
            (r.verdict, r.silent),
            (Verdict::Fail, true),
            "{race:?}: {r:?}"
        );
        assert!(r.detail.starts_with("round 1 of 3: "), "{}", r.detail);
        assert!(r.detail.contains("of 8 concurrent"), "{}", r.detail);
    }
    assert!(report.safe_strategies.is_empty());
    assert!(!report.config_safe);
    assert!(
        store
            .written_after_check
            .load(std::sync::atomic::Ordering::Relaxed)
            > 8
    );
    assert_no_scratch_left(&prefix);
    // And a client that preflights refuses to grant there.
    let mut guarded = opened_with(&{
        let mut c = racing.config(&prefix);
        c.preflight = Some(true);
        c
    });
    let err = guarded
        .try_acquire("k", &options(10_000))
        .unwrap()
        .unwrap_err();
    match err {
        E::StoreUnsafe(r) => assert_eq!(r.capability, Capability::ConcurrentCreate),
        other => panic!("{other:?}"),
    }
}

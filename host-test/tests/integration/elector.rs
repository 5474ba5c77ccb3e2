//! The stepwise elector against the real server: its config is validated
//! (never a trap), one elector leads and renews, `resign` hands over at
//! once, each kind of step costs what the contract says, and a leader cut
//! off from the network stops reporting itself leader before any follower
//! takes over, under every expiry clock (the follower's wall clock skewed
//! by minutes where the clock rule allows).

use super::lost_replies::{shape, strategy_config};
use super::*;
use host_test::bindings::{
    Config, ElectorConfig, ElectorEvent, Error as E, ExpiryClock, Role, StepResult, StopReason,
    Strategy,
};
use std::time::{Duration, Instant};
use wasmtime::component::ResourceAny;

/// Lease 3 s, renew deadline 2 s, retry 750 ms.
const LEASE_MS: u64 = 3_000;
const DEADLINE_MS: u64 = 2_000;
const RETRY_MS: u64 = 750;
/// Longest sleep of the stepping loops.
const STEP_CAP: Duration = Duration::from_millis(100);

fn elector_config(key: &str, holder: &str) -> ElectorConfig {
    ElectorConfig {
        key: key.into(),
        lease_duration_ms: LEASE_MS,
        renew_deadline_ms: DEADLINE_MS,
        retry_period_ms: RETRY_MS,
        holder_id: Some(holder.into()),
        metadata: Some(format!("meta of {holder}")),
    }
}

fn durations(key: &str, lease: u64, deadline: u64, retry: u64) -> ElectorConfig {
    ElectorConfig {
        key: key.into(),
        lease_duration_ms: lease,
        renew_deadline_ms: deadline,
        retry_period_ms: retry,
        holder_id: None,
        metadata: None,
    }
}

/// One elector on its own instance, and when it is due next.
struct Contender {
    name: &'static str,
    instance: Instance,
    elector: ResourceAny,
    due: Instant,
}

impl Contender {
    fn new(config: &Config, name: &'static str, key: &str) -> Self {
        let mut instance = opened_with(config);
        let elector = instance
            .elector(&elector_config(key, name))
            .expect("no trap")
            .unwrap_or_else(|e| panic!("elector {name}: {e:?}"));
        Contender {
            name,
            instance,
            elector,
            due: Instant::now(),
        }
    }

    fn step(&mut self) -> StepResult {
        let result = self
            .instance
            .step(self.elector)
            .unwrap_or_else(|e| panic!("elector {}: trap: {e:?}", self.name));
        self.due = Instant::now() + Duration::from_millis(result.next_step_in_ms);
        result
    }

    /// Sleeps until due (a step sooner than due does nothing), then steps.
    fn step_when_due(&mut self) -> StepResult {
        let now = Instant::now();
        if self.due > now {
            std::thread::sleep(self.due - now);
        }
        self.step()
    }
}

fn leads(r: &StepResult) -> Option<&Lease> {
    match &r.role {
        Role::Leader(lease) => Some(lease),
        _ => None,
    }
}

fn follows<'a>(r: &'a StepResult, holder: &str) -> &'a host_test::bindings::LockState {
    match &r.role {
        Role::Follower(Some(s)) if s.holder_id == holder && s.live => s,
        other => panic!("expected a follower of {holder}, got {other:?} ({r:?})"),
    }
}

#[test]
fn every_bad_elector_config_is_invalid_argument_never_a_trap() {
    let prefix = fresh_prefix("elector-bad");
    let seven_days = 7 * 24 * 3600 * 1000;
    let long_key = "k".repeat(1025);
    let mut cases = vec![
        ("lease 0", durations("k", 0, 0, 0)),
        ("lease 0, others set", durations("k", 0, 2_000, 500)),
        (
            "lease above 7 days",
            durations("k", seven_days + 1, 2_000, 500),
        ),
        ("renew deadline = lease", durations("k", 3_000, 3_000, 500)),
        ("renew deadline > lease", durations("k", 3_000, 4_000, 500)),
        ("renew deadline 0", durations("k", 3_000, 0, 0)),
        ("retry 0", durations("k", 3_000, 2_000, 0)),
        (
            "retry = renew deadline",
            durations("k", 3_000, 2_000, 2_000),
        ),
        (
            "retry > renew deadline",
            durations("k", 3_000, 2_000, 2_500),
        ),
        ("retry > lease", durations("k", 3_000, 2_000, 5_000)),
        (
            "u64::MAX durations",
            durations("k", u64::MAX, u64::MAX, u64::MAX),
        ),
        ("empty key", durations("", 3_000, 2_000, 500)),
        (
            "control character in key",
            durations("a\nb", 3_000, 2_000, 500),
        ),
        ("key too long", durations(&long_key, 3_000, 2_000, 500)),
    ];
    let mut empty_holder = durations("k", 3_000, 2_000, 500);
    empty_holder.holder_id = Some(String::new());
    cases.push(("empty holder id", empty_holder));
    let mut long_holder = durations("k", 3_000, 2_000, 500);
    long_holder.holder_id = Some("h".repeat(257));
    cases.push(("holder id too long", long_holder));
    let mut long_metadata = durations("k", 3_000, 2_000, 500);
    long_metadata.metadata = Some("m".repeat(4097));
    cases.push(("metadata too long", long_metadata));

    for strategy in [Strategy::SingleObject, Strategy::EpochObjects] {
        let mut i = opened_with(&strategy_config(&prefix, strategy));
        for (what, config) in &cases {
            match i.elector(config).expect("no trap") {
                Err(E::InvalidArgument(reason)) => println!("{strategy:?} {what}: {reason}"),
                Err(other) => panic!("{what}: expected invalid-argument, got {other:?}"),
                Ok(_) => panic!("{what}: accepted"),
            }
        }
        // The tightest valid durations, 0 < retry < deadline < lease.
        let tight = i
            .elector(&durations("k", 3, 2, 1))
            .expect("no trap")
            .expect("1 < 2 < 3 is valid");
        i.drop_elector(tight).expect("no trap");
        assert!(i.hooks.requests().is_empty(), "validation sends nothing");
        // The instance is still usable after all those refusals.
        assert!(i.inspect("k").expect("no trap").expect("inspect").is_none());
    }
}

fn leads_renews_and_resigns(strategy: Strategy) {
    let prefix = fresh_prefix(&format!("elector-resign-{strategy:?}"));
    let config = strategy_config(&prefix, strategy);
    let mut a = Contender::new(&config, "a", "leader");
    let mut b = Contender::new(&config, "b", "leader");

    // Alone, `a` leads on its first step.
    let first = a.step();
    let lease = leads(&first).expect("leader on the first step").clone();
    assert_eq!((lease.token, lease.holder_id.as_str()), (1, "a"));
    assert_eq!(
        first.events,
        [ElectorEvent::BecameLeader(lease.clone())],
        "{first:?}"
    );
    assert_eq!(first.last_error, None);
    assert!(first.next_step_in_ms <= RETRY_MS, "{first:?}");

    // `b` follows it.
    let seen = b.step();
    let state = follows(&seen, "a").clone();
    assert_eq!(state.token, 1);
    assert!(
        seen.events
            .iter()
            .any(|e| matches!(e, ElectorEvent::LeaderChanged(Some(s)) if s.holder_id == "a")),
        "{seen:?}"
    );

    // Stepping for longer than a lease: `a` renews and keeps leading with
    // the same token; `b` keeps following.
    let started = Instant::now();
    let mut renews = 0;
    a.instance.hooks.take_requests();
    let mut last_lease = lease.clone();
    while started.elapsed() < Duration::from_millis(LEASE_MS + 500) {
        let now = Instant::now();
        let next = a.due.min(b.due);
        if next > now {
            std::thread::sleep((next - now).min(STEP_CAP));
        }
        if Instant::now() >= a.due {
            let r = a.step();
            let l = leads(&r).unwrap_or_else(|| panic!("a stopped leading: {r:?}"));
            assert_eq!(l.token, 1);
            assert!(r.events.is_empty(), "{r:?}");
            assert_eq!(r.last_error, None);
            let log = a.instance.hooks.take_requests();
            if !log.is_empty() {
                assert_eq!(log[0].method, "PUT", "a leader's step renews: {log:?}");
                renews += 1;
                assert_ne!(l.etag, last_lease.etag, "each renew moves the etag");
            }
            last_lease = l.clone();
        }
        if Instant::now() >= b.due {
            let r = b.step();
            follows(&r, "a");
            assert!(leads(&r).is_none());
        }
    }
    println!("{strategy:?}: {renews} renews in {:?}", started.elapsed());
    assert!(renews >= 3, "renewed every retry period: {renews}");
    let seen = b.instance.inspect("leader").unwrap().unwrap().unwrap();
    assert_eq!(
        (seen.holder_id.as_str(), seen.token, seen.live),
        ("a", 1, true)
    );

    // `a` resigns: the lease is released, and `b` leads on its next step.
    a.instance
        .resign(a.elector)
        .expect("no trap")
        .expect("resign");
    // A resigned elector waits a retry period before it looks again.
    a.due = Instant::now() + Duration::from_millis(RETRY_MS);
    let released = b.instance.inspect("leader").unwrap().unwrap().unwrap();
    assert!(!released.live, "released: {released:?}");
    let r = b.step_when_due();
    let taken = leads(&r).unwrap_or_else(|| panic!("b did not lead on its next step: {r:?}"));
    assert_eq!((taken.token, taken.holder_id.as_str()), (2, "b"));
    assert!(
        r.events
            .contains(&ElectorEvent::BecameLeader(taken.clone())),
        "{r:?}"
    );
    let r = a.step_when_due();
    assert!(
        r.events
            .contains(&ElectorEvent::StoppedLeading(StopReason::Resigned)),
        "{r:?}"
    );
    assert!(leads(&r).is_none(), "{r:?}");
    follows(&r, "b");
    // Resigning when not leading is a no-op.
    a.instance
        .resign(a.elector)
        .expect("no trap")
        .expect("resign");
    b.instance
        .resign(b.elector)
        .expect("no trap")
        .expect("resign");
}

#[test]
fn single_object_elector_leads_renews_and_resigns_to_another() {
    leads_renews_and_resigns(Strategy::SingleObject);
}

#[test]
fn epoch_objects_elector_leads_renews_and_resigns_to_another() {
    leads_renews_and_resigns(Strategy::EpochObjects);
}

fn step_costs(strategy: Strategy) {
    let prefix = fresh_prefix(&format!("elector-counts-{strategy:?}"));
    let config = strategy_config(&prefix, strategy);
    let mut a = Contender::new(&config, "a", "leader");
    let mut b = Contender::new(&config, "b", "leader");
    let epoch = strategy == Strategy::EpochObjects;
    let check = |c: &mut Contender, what: &str, expected: &[&str]| {
        let log = c.instance.hooks.take_requests();
        println!(
            "{strategy:?} {what}: {} requests {:?}",
            log.len(),
            shape(&log)
        );
        assert_eq!(shape(&log), expected, "{strategy:?} {what}");
        log
    };

    // Each elector's first step reads the seal key first (GET); the
    // prefix's first creates it (GET 404, PUT). A key's first grant writes
    // its token floor before its lock object (one more PUT).
    let r = a.step();
    assert!(leads(&r).is_some(), "{r:?}");
    check(
        &mut a,
        "grant step (free key), creating the seal key",
        if epoch {
            &[
                "GET 404", "PUT 200", "LIST 200", "PUT 200", "PUT 200", "LIST 200",
            ]
        } else {
            &["GET 404", "PUT 200", "GET 404", "PUT 200", "PUT 200"]
        },
    );

    let r = b.step();
    follows(&r, "a");
    check(
        &mut b,
        "first follower step, reading the seal key",
        if epoch {
            &["GET 200", "LIST 200", "GET 200"]
        } else {
            &["GET 200", "GET 200"]
        },
    );

    // A step before it is due does nothing.
    let r = b.step();
    follows(&r, "a");
    assert!(
        r.next_step_in_ms > 0 && r.next_step_in_ms <= RETRY_MS,
        "{r:?}"
    );
    check(&mut b, "follower step before due", &[]);

    // The lock unchanged since b's last look: a conditional GET, 304.
    let r = b.step_when_due();
    follows(&r, "a");
    let log = check(
        &mut b,
        "follower step, lock unchanged",
        if epoch {
            &["LIST 200", "GET 304"]
        } else {
            &["GET 304"]
        },
    );
    assert!(log.last().unwrap().if_none_match.is_some());

    let r = a.step_when_due();
    assert!(leads(&r).is_some(), "{r:?}");
    let log = check(
        &mut a,
        "leader renew step",
        if epoch {
            &["PUT 200", "LIST 200"]
        } else {
            &["PUT 200"]
        },
    );
    assert!(log[0].if_match.is_some());
    let r = a.step();
    assert!(leads(&r).is_some(), "{r:?}");
    check(&mut a, "leader step before due", &[]);

    // The leader renewed since: the conditional GET gets the new body.
    let r = b.step_when_due();
    follows(&r, "a");
    check(
        &mut b,
        "follower step after a renew",
        if epoch {
            &["LIST 200", "GET 200"]
        } else {
            &["GET 200"]
        },
    );
}

#[test]
fn single_object_each_kind_of_step_costs_what_the_contract_says() {
    step_costs(Strategy::SingleObject);
}

#[test]
fn epoch_objects_each_kind_of_step_costs_what_the_contract_says() {
    step_costs(Strategy::EpochObjects);
}

/// Leader `a` is cut off from the network; follower `b`, its wall clock
/// `skew_ms` off, must take over only after `a` stopped reporting itself
/// leader, and only after a lease duration since `a`'s last successful
/// renew was sent.
fn cut_leader_hands_over_without_overlap(strategy: Strategy, clock: ExpiryClock, skew_ms: i64) {
    let what = format!("{strategy:?}/{clock:?}/skew {skew_ms} ms");
    let prefix = fresh_prefix(&format!("elector-cut-{strategy:?}-{clock:?}"));
    let mut config = strategy_config(&prefix, strategy);
    config.expiry_clock = Some(clock);
    let mut a = Contender::new(&config, "a", "leader");
    let mut b = Contender::new(&config, "b", "leader");
    b.instance.skew_clock_ms(skew_ms);
    let test_started = Instant::now();

    // When a's last successful renew (or grant) step began and ended.
    let mut last_ok: Option<(Instant, Instant)> = None;
    let mut a_last_leader: Option<Instant> = None;
    let mut a_stopped: Option<Instant> = None;
    let mut b_first_leader: Option<(Instant, Instant, Lease)> = None;
    let mut cut_at: Option<Instant> = None;
    let mut a_renews_before_cut = 0;

    let deadline = test_started + Duration::from_secs(18);
    loop {
        assert!(
            Instant::now() < deadline,
            "{what}: no handover in time (a stopped: {a_stopped:?}, b leads: {})",
            b_first_leader.is_some()
        );
        let now = Instant::now();
        let next = a.due.min(b.due);
        if next > now {
            std::thread::sleep((next - now).min(STEP_CAP));
        }
        if Instant::now() >= a.due {
            let before = Instant::now();
            let r = a.step();
            let after = Instant::now();
            let log = a.instance.hooks.take_requests();
            let wrote = log
                .iter()
                .any(|q| q.method == "PUT" && q.status == Some(200));
            if leads(&r).is_some() {
                a_last_leader = Some(after);
                if wrote && r.last_error.is_none() {
                    last_ok = Some((before, after));
                    if cut_at.is_none() {
                        a_renews_before_cut += 1;
                    }
                }
                assert!(
                    b_first_leader.is_none(),
                    "{what}: a leads after b took over"
                );
            }
            if cut_at.is_some() {
                assert!(!wrote, "{what}: a cut instance wrote: {log:?}");
            }
            for e in &r.events {
                if let ElectorEvent::StoppedLeading(reason) = e {
                    assert_eq!(*reason, StopReason::RenewDeadline, "{what}: {r:?}");
                    assert!(cut_at.is_some(), "{what}: stopped before the cut: {r:?}");
                    a_stopped = Some(after);
                }
            }
            // Lead and renew twice, then cut the network.
            if cut_at.is_none() && a_renews_before_cut >= 3 {
                a.instance.hooks.set_cut(true);
                cut_at = Some(Instant::now());
            }
        }
        if Instant::now() >= b.due {
            let before = Instant::now();
            let r = b.step();
            let after = Instant::now();
            if let Some(lease) = leads(&r) {
                if b_first_leader.is_none() {
                    assert!(
                        r.events
                            .contains(&ElectorEvent::BecameLeader(lease.clone())),
                        "{r:?}"
                    );
                    b_first_leader = Some((before, after, lease.clone()));
                }
            } else if cut_at.is_none() && a_last_leader.is_some() {
                follows(&r, "a");
            }
        }
        if a_stopped.is_some() && b_first_leader.is_some() {
            break;
        }
    }

    // Both step on for a while, a still cut: a never leads again, and b
    // (renewing) keeps leading.
    let until = Instant::now() + Duration::from_millis(2 * RETRY_MS);
    while Instant::now() < until {
        std::thread::sleep(
            a.due
                .min(b.due)
                .saturating_duration_since(Instant::now())
                .min(STEP_CAP),
        );
        if Instant::now() >= a.due {
            let r = a.step();
            assert!(leads(&r).is_none(), "{what}: {r:?}");
        }
        if Instant::now() >= b.due {
            let r = b.step();
            assert!(leads(&r).is_some(), "{what}: b stopped leading: {r:?}");
        }
    }

    let cut_at = cut_at.unwrap();
    let (ok_start, ok_end) = last_ok.expect("a renewed");
    let a_last_leader = a_last_leader.unwrap();
    let a_stopped = a_stopped.unwrap();
    let (b_start, b_end, b_lease) = b_first_leader.unwrap();
    let ms = |d: Duration| d.as_millis();
    println!(
        "{what}: from a's last successful renew step (began 0 ms, took {} ms): cut at {} ms, \
         a last reported leader at {} ms, reported stopped-leading at {} ms; b's taking step \
         began at {} ms, returned at {} ms; gap between a's last leadership and b's first: {} ms; \
         total {:?}",
        ms(ok_end - ok_start),
        ms(cut_at.saturating_duration_since(ok_start)),
        ms(a_last_leader - ok_start),
        ms(a_stopped - ok_start),
        ms(b_start - ok_start),
        ms(b_end - ok_start),
        ms(b_start.saturating_duration_since(a_last_leader)),
        test_started.elapsed(),
    );
    assert_eq!(b_lease.holder_id, "b");
    assert_eq!(b_lease.token, 2, "{b_lease:?}");
    // Never two leaders: a's last report of leadership came before b's
    // first step as leader began.
    assert!(
        a_last_leader < b_start,
        "{what}: overlap: a reported leader {} ms after b's taking step began",
        ms(a_last_leader - b_start)
    );
    // a stepped down at the renew deadline since it sent its last
    // successful renew: not before, and promptly after.
    // The component reads its clocks in whole milliseconds, so its
    // "2000 ms passed" may be 1999.x ms of ours: allow that 1 ms.
    let tick = Duration::from_millis(1);
    let deadline = Duration::from_millis(DEADLINE_MS);
    assert!(
        a_stopped + tick >= ok_start + deadline,
        "{what}: stepped down early: {:?} after its last renew step began",
        a_stopped - ok_start
    );
    assert!(
        a_stopped <= ok_end + deadline + Duration::from_millis(500),
        "{what}: stepped down late: {} ms after its last renew step ended",
        ms(a_stopped - ok_end)
    );
    assert!(
        a_last_leader < ok_end + deadline + Duration::from_millis(50),
        "{what}: led past its deadline"
    );
    // b took over no sooner than a lease duration after that renew was sent.
    assert!(
        b_end + tick >= ok_start + Duration::from_millis(LEASE_MS),
        "{what}: b took over {} ms after a's last renew, before the lease duration",
        ms(b_end - ok_start)
    );

    // Back online, a follows b on its next due step.
    let refused = a.instance.hooks.take_requests();
    assert!(refused.iter().all(|q| q.status.is_none()), "{refused:?}");
    a.instance.hooks.set_cut(false);
    let until = Instant::now() + Duration::from_millis(2 * RETRY_MS);
    let r = loop {
        assert!(Instant::now() < until, "{what}: a never stepped again");
        std::thread::sleep(
            a.due
                .min(b.due)
                .saturating_duration_since(Instant::now())
                .min(STEP_CAP),
        );
        if Instant::now() >= b.due {
            let r = b.step();
            assert!(leads(&r).is_some(), "{what}: b stopped leading: {r:?}");
        }
        if Instant::now() >= a.due {
            let r = a.step();
            if !a.instance.hooks.take_requests().is_empty() {
                break r;
            }
        }
    };
    follows(&r, "b");
    assert!(
        r.events
            .iter()
            .any(|e| matches!(e, ElectorEvent::LeaderChanged(Some(s)) if s.holder_id == "b")),
        "{r:?}"
    );
}

/// Several minutes ahead: far past any lease, within S3's 15-minute
/// signing window.
const SKEW_MS: i64 = 4 * 60 * 1000;

#[test]
fn a_cut_leader_hands_over_without_overlap_server_clock_skewed_follower() {
    cut_leader_hands_over_without_overlap(Strategy::SingleObject, ExpiryClock::Server, SKEW_MS);
}

#[test]
fn a_cut_leader_hands_over_without_overlap_observed_clock_skewed_follower() {
    cut_leader_hands_over_without_overlap(Strategy::SingleObject, ExpiryClock::Observed, SKEW_MS);
}

#[test]
fn a_cut_leader_hands_over_without_overlap_holder_clock() {
    cut_leader_hands_over_without_overlap(Strategy::SingleObject, ExpiryClock::Holder, 0);
}

#[test]
fn a_cut_epoch_leader_hands_over_without_overlap_server_clock_skewed_follower() {
    cut_leader_hands_over_without_overlap(Strategy::EpochObjects, ExpiryClock::Server, SKEW_MS);
}

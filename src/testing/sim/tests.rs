//! The simulation as tests: many seeds on each store, with floors that
//! show the faults and the adversaries really happened.
//!
//! - `S3LEASE_SIM_SEED=<n>` (or `S3LEASE_SIM_DYNAMODB_SEED=<n>`,
//!   `S3LEASE_SIM_AZURE_SEED=<n>`, `S3LEASE_SIM_GCS_SEED=<n>`) replays one
//!   seed and prints its setup
//!   and report;
//! - `S3LEASE_SIM_TOTAL_STEPS=<n>` hunts longer, from
//!   `S3LEASE_SIM_FIRST_SEED` (the floors below stay);
//! - `S3LEASE_SIM_TRACE=<object key>` prints every request to one object.

use super::*;

/// Events per seed: a seed runs two minutes of virtual time at most.
const STEPS_PER_SEED: u64 = 40_000;

fn env(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .map(|s| s.parse().unwrap_or_else(|_| panic!("{name} is a number")))
}

/// Runs the seeds (or replays one), failing with the seed to replay.
fn hunt(dynamodb: bool, floor_steps: u64) -> Report {
    let kind = if dynamodb {
        StoreKind::DynamoDb
    } else {
        StoreKind::S3
    };
    hunt_on(kind, floor_steps)
}

fn hunt_on(kind: StoreKind, floor_steps: u64) -> Report {
    let replay = match kind {
        StoreKind::S3 => "S3LEASE_SIM_SEED",
        StoreKind::DynamoDb => "S3LEASE_SIM_DYNAMODB_SEED",
        StoreKind::Azure => "S3LEASE_SIM_AZURE_SEED",
        StoreKind::Gcs => "S3LEASE_SIM_GCS_SEED",
    };
    if let Some(seed) = env(replay) {
        let mut rng = Rng::new(seed ^ 0x5EED_5EED_5EED_5EED);
        println!("seed {seed}: {:#?}", Setup::for_store(&mut rng, kind));
        println!("credentials: {:?}", Source::for_store(seed, kind).plan);
        let sim = Sim::on(seed, kind);
        let (report, result) = sim.run(env("S3LEASE_SIM_STEPS").unwrap_or(STEPS_PER_SEED));
        println!("{report:#?}");
        if let Err(v) = result {
            panic!("seed {seed} ({replay}={seed}): {v}");
        }
        return report;
    }
    let first = env("S3LEASE_SIM_FIRST_SEED").unwrap_or(0);
    let total = env("S3LEASE_SIM_TOTAL_STEPS")
        .unwrap_or(floor_steps)
        .max(floor_steps);
    let started = std::time::Instant::now();
    match run_store_seeds(first, STEPS_PER_SEED, total, kind) {
        Ok(report) => {
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "simulation on {kind:?}: {} seeds, {} steps in {seconds:.1} s ({:.0} steps/s, {:.1} seeds/s): {report:#?}",
                report.seeds,
                report.steps,
                report.steps as f64 / seconds,
                report.seeds as f64 / seconds,
            );
            report
        }
        Err(failed) => {
            let (seed, v, report) = *failed;
            panic!("seed {seed} (replay: {replay}={seed}): {v}\n{report:#?}")
        }
    }
}

/// Writes landed unanswered in outages that also failed what came next
/// (their read-backs), so only a later call could learn their fate; and
/// stores answered requests as timed out (400 `RequestTimeout`, 408).
fn outages_happened(r: &Report, floor: u64) {
    assert!(
        r.outages > floor && r.failed_in_outage > 4 * floor,
        "{r:#?}"
    );
    assert!(r.timeouts_answered > floor / 2, "{r:#?}");
}

#[test]
fn locks_leaders_and_semaphores_keep_their_guarantees_on_s3() {
    let r = hunt(false, 1_200_000);
    if env("S3LEASE_SIM_SEED").is_some() {
        return;
    }
    log_kept(&r, 1_000);
    // The faults really happened.
    assert!(r.lost_replies > 100 && r.never_applied > 100, "{r:#?}");
    outages_happened(&r, 2_000);
    assert!(r.timeouts_honoured > 100 && r.late_replies > 20, "{r:#?}");
    assert!(r.applied_after_giving_up > 10 && r.hung > 50, "{r:#?}");
    assert!(r.conflicts_injected > 100 && r.clock_jumps > 10, "{r:#?}");
    assert!(r.crashes > 20 && r.pauses > 20 && r.degraded > 20, "{r:#?}");
    assert!(r.suspends > 20, "{r:#?}");
    assert!(
        r.seeds_with_short_lists > 3 && r.empty_list_pages > 50,
        "{r:#?}"
    );
    assert!(r.seeds_without_if_match > 3, "{r:#?}");
    // Locks and leaders moved, and callers misbehaved.
    assert!(
        r.grants > 1_000 && r.renewals > 1_000 && r.releases > 200,
        "{r:#?}"
    );
    assert!(
        r.lost_taken + r.lost_expired > 50 && r.grants_never_held > 0,
        "{r:#?}"
    );
    assert!(r.forgeries_refused > 100 && r.spent_refused > 50, "{r:#?}");
    assert!(
        r.retakes > 20 && r.lapsed_renewed > 5 && r.resigns > 5,
        "{r:#?}"
    );
    assert!(r.fenced_accepted > 500 && r.fenced_refused > 20, "{r:#?}");
    assert!(r.objects_checked > 50, "{r:#?}");
    // Semaphores and fair queues: each key's limit reached, never passed;
    // waiters served from the queue and passed while slots were free.
    assert_eq!(r.max_slots_believed, [3, 2, 1], "{r:#?}");
    assert!(r.slot_grants > 500 && r.places_taken > 100, "{r:#?}");
    assert!(
        r.fair_grants_checked > 200 && r.fair_grants_from_queue > 100,
        "{r:#?}"
    );
    assert!(r.fair_passes > 5 && r.places_left > 10, "{r:#?}");
    assert!(
        r.slots_dropped_expired > 20 && r.places_dropped_expired > 20,
        "{r:#?}"
    );
    // Credentials expired and rotated: refreshers fetched (some fetches
    // failed), the store refused expired keys, and many requests were
    // judged fresh.
    assert!(
        r.credential_fetches > 3_000 && r.credential_fetches_failed > 100,
        "{r:#?}"
    );
    assert!(
        r.seeds_with_unhealthy_source > 5 && r.expired_refused > 5_000,
        "{r:#?}"
    );
    assert!(r.sends_judged_fresh > 50_000, "{r:#?}");
}

/// Half the seeds keep the grant log: each of their logs, after
/// back-fill, was the store's grant history and verify proved it.
fn log_kept(r: &Report, records: u64) {
    assert!(r.seeds_with_log * 3 > r.seeds, "{r:#?}");
    assert!(r.log_records > records, "{r:#?}");
}

#[test]
fn locks_leaders_and_semaphores_keep_their_guarantees_on_dynamodb() {
    let r = hunt(true, 600_000);
    if env("S3LEASE_SIM_DYNAMODB_SEED").is_some() {
        return;
    }
    log_kept(&r, 500);
    assert!(
        r.throttles_injected > 50 && r.conflicts_injected > 50,
        "{r:#?}"
    );
    outages_happened(&r, 1_000);
    assert!(r.grants > 500 && r.renewals > 500, "{r:#?}");
    assert!(r.forgeries_refused > 50 && r.spent_refused > 20, "{r:#?}");
    assert_eq!(r.fenced_accepted + r.fenced_refused, 0, "{r:#?}");
    assert_eq!(r.max_slots_believed, [3, 2, 1], "{r:#?}");
    assert!(r.slot_grants > 200 && r.fair_grants_checked > 100, "{r:#?}");
    assert!(
        r.credential_fetches > 1_500 && r.expired_refused > 2_000,
        "{r:#?}"
    );
    assert!(r.sends_judged_fresh > 20_000, "{r:#?}");
}

#[test]
fn locks_leaders_and_semaphores_keep_their_guarantees_on_azure() {
    let r = hunt_on(StoreKind::Azure, 600_000);
    if env("S3LEASE_SIM_AZURE_SEED").is_some() {
        return;
    }
    log_kept(&r, 500);
    // Writes met 503 ServerBusy, and lost replies were read back.
    assert!(r.conflicts_injected > 50 && r.lost_replies > 50, "{r:#?}");
    outages_happened(&r, 1_000);
    assert!(r.grants > 500 && r.renewals > 500, "{r:#?}");
    assert!(r.forgeries_refused > 50 && r.spent_refused > 20, "{r:#?}");
    // Fenced writes run on a container, judged linearizable.
    assert!(r.fenced_accepted > 200 && r.fenced_refused > 5, "{r:#?}");
    assert!(r.objects_checked > 20, "{r:#?}");
    assert_eq!(r.max_slots_believed, [3, 2, 1], "{r:#?}");
    assert!(r.slot_grants > 200 && r.fair_grants_checked > 100, "{r:#?}");
}

#[test]
fn locks_leaders_and_semaphores_keep_their_guarantees_on_gcs() {
    let r = hunt_on(StoreKind::Gcs, 600_000);
    if env("S3LEASE_SIM_GCS_SEED").is_some() {
        return;
    }
    log_kept(&r, 500);
    // Writes met 503 backendError and GCS's 429 rate limit, and lost
    // replies were read back.
    assert!(r.conflicts_injected > 50 && r.lost_replies > 50, "{r:#?}");
    assert!(r.throttles_injected > 50, "{r:#?}");
    outages_happened(&r, 1_000);
    assert!(r.grants > 500 && r.renewals > 500, "{r:#?}");
    assert!(r.forgeries_refused > 50 && r.spent_refused > 20, "{r:#?}");
    // Fenced writes run on a bucket, judged linearizable.
    assert!(r.fenced_accepted > 200 && r.fenced_refused > 5, "{r:#?}");
    assert!(r.objects_checked > 20, "{r:#?}");
    assert_eq!(r.max_slots_believed, [3, 2, 1], "{r:#?}");
    assert!(r.slot_grants > 200 && r.fair_grants_checked > 100, "{r:#?}");
}

/// A store that lets some conditional writes to lock objects through
/// whatever their condition grants tokens twice: a run in which holders
/// overlapped fails verify, and grantees' collision checks fire.
#[test]
fn a_careless_store_makes_verify_fail_and_the_collision_check_fire() {
    for kind in [StoreKind::S3, StoreKind::DynamoDb] {
        let (mut broken, mut failed, mut collisions, mut careless) = (0, 0, 0, 0);
        for seed in 0..12 {
            let (report, overlapped, verify_failed, met) =
                Sim::careless(seed, kind).run_careless(STEPS_PER_SEED);
            careless += report.careless_writes;
            collisions += met;
            broken += u64::from(overlapped.is_some());
            failed += u64::from(verify_failed);
            assert!(
                overlapped.is_none() || verify_failed,
                "{kind:?} seed {seed}: verify proved the log, and {overlapped:?}"
            );
        }
        println!(
            "{kind:?}: {careless} careless writes, {broken} runs with holders overlapping, \
             {failed} failing verify, {collisions} collisions recorded"
        );
        assert!(
            careless > 100 && broken > 3,
            "{kind:?}: {careless} {broken}"
        );
        assert!(
            failed >= broken && collisions > 3,
            "{kind:?}: {failed} {collisions}"
        );
    }
}

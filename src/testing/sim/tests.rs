//! The simulation as a test: at least 100,000 steps per run, over many
//! seeds. `S3LEASE_SIM_SEED=<n>` replays one seed (with its step count
//! from `S3LEASE_SIM_STEPS`, default below) and prints its report.

use super::*;

const STEPS_PER_SEED: u64 = 8_000;
const TOTAL_STEPS: u64 = 240_000;

#[test]
fn the_core_keeps_its_invariants_under_faults_skew_and_forgery() {
    if let Ok(seed) = std::env::var("S3LEASE_SIM_SEED") {
        let seed: u64 = seed.parse().expect("S3LEASE_SIM_SEED is a number");
        let steps = std::env::var("S3LEASE_SIM_STEPS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(STEPS_PER_SEED);
        match Sim::new(seed).run(steps) {
            Ok(report) => println!("seed {seed}: {report:#?}"),
            Err(v) => panic!("seed {seed} (replay: S3LEASE_SIM_SEED={seed}): {v}"),
        }
        return;
    }
    let first = std::env::var("S3LEASE_SIM_FIRST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // A longer hunt: `S3LEASE_SIM_TOTAL_STEPS=<n>` (the floors below stay).
    let total = std::env::var("S3LEASE_SIM_TOTAL_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(TOTAL_STEPS)
        .max(TOTAL_STEPS);
    let started = std::time::Instant::now();
    match run_seeds(first, STEPS_PER_SEED, total) {
        Ok(report) => {
            println!(
                "simulation: {} steps in {:.1} s: {report:?}",
                report.steps,
                started.elapsed().as_secs_f64()
            );
            // The faults and the adversaries really happened.
            assert!(report.steps >= TOTAL_STEPS);
            assert!(report.grants > 1_000, "{report:?}");
            assert!(report.lost_replies > 100 && report.refused_connections > 100);
            assert!(report.conflicts_injected > 100 && report.clock_jumps > 10);
            assert!(report.forgeries_refused > 100 && report.superseded_refused > 10);
            assert!(report.fenced_accepted > 100 && report.fenced_refused > 10);
            assert!(report.seeds_with_short_lists > 3 && report.empty_list_pages > 100);
            // Semaphores and fair queues under every clock, with their
            // adversaries: the limit reached, waiters served and passed.
            assert!(report.semaphore_keys_by_clock.iter().all(|&n| n > 10));
            assert!(report.slot_grants > 1_000 && report.slot_renewals > 1_000);
            assert!(report.plain_grants_on_semaphore_keys > 10);
            // Each key's limit reached (m0: 3, m1: 2, m2: 1), never passed.
            assert_eq!(report.max_slots_believed, [3, 2, 1], "{report:?}");
            assert!(report.fair_grants_checked > 500 && report.fair_grants_from_queue > 200);
            assert!(report.fair_passes > 10 && report.places_dropped_expired > 100);
            assert!(report.slots_dropped_expired > 100 && report.places_left > 10);
            assert!(report.slot_forgeries_refused > 100 && report.slot_superseded_refused > 50);
            assert!(report.slot_released_refused > 50 && report.lapsed_rewritten > 10);
        }
        Err((seed, v)) => panic!("seed {seed} (replay: S3LEASE_SIM_SEED={seed}): {v}"),
    }
}

/// Runs DynamoDB seeds from `first` until `total_steps` have run.
fn run_dynamodb_seeds(
    first: u64,
    steps: u64,
    total_steps: u64,
) -> Result<Report, (u64, Violation)> {
    let mut total = Report::default();
    let mut seed = first;
    while total.steps < total_steps {
        let report = Sim::on_dynamodb(seed).run(steps).map_err(|v| (seed, v))?;
        total += &report;
        seed += 1;
    }
    Ok(total)
}

/// The same clients, semaphores and faults on the DynamoDB model, plus
/// throttled calls and `TransactionConflictException`s.
/// `S3LEASE_SIM_DYNAMODB_SEED=<n>` replays one seed;
/// `S3LEASE_SIM_TOTAL_STEPS` runs a longer hunt here too.
#[test]
fn the_core_keeps_its_invariants_on_dynamodb() {
    if let Ok(seed) = std::env::var("S3LEASE_SIM_DYNAMODB_SEED") {
        let seed: u64 = seed.parse().expect("a number");
        match Sim::on_dynamodb(seed).run(STEPS_PER_SEED) {
            Ok(report) => println!("seed {seed}: {report:#?}"),
            Err(v) => panic!("seed {seed} (replay: S3LEASE_SIM_DYNAMODB_SEED={seed}): {v}"),
        }
        return;
    }
    const DYNAMODB_STEPS: u64 = 120_000;
    let total = std::env::var("S3LEASE_SIM_TOTAL_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DYNAMODB_STEPS)
        .max(DYNAMODB_STEPS);
    let started = std::time::Instant::now();
    match run_dynamodb_seeds(0, STEPS_PER_SEED, total) {
        Ok(report) => {
            println!(
                "simulation on DynamoDB: {} steps in {:.1} s: {report:?}",
                report.steps,
                started.elapsed().as_secs_f64()
            );
            assert!(report.grants > 500, "{report:?}");
            assert!(report.lost_replies > 50 && report.refused_connections > 50);
            assert!(report.conflicts_injected > 50 && report.throttles_injected > 50);
            assert!(report.forgeries_refused > 50 && report.superseded_refused > 5);
            assert_eq!(report.fenced_accepted + report.fenced_refused, 0);
            assert!(report.slot_grants > 500 && report.fair_grants_checked > 200);
            assert_eq!(report.max_slots_believed, [3, 2, 1], "{report:?}");
        }
        Err((seed, v)) => {
            panic!("seed {seed} (replay: S3LEASE_SIM_DYNAMODB_SEED={seed}): {v}")
        }
    }
}

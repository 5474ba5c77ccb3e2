//! The simulation as a test: at least 100,000 steps per run, over many
//! seeds. `S3LEASE_SIM_SEED=<n>` replays one seed (with its step count
//! from `S3LEASE_SIM_STEPS`, default below) and prints its report.

use super::*;

const STEPS_PER_SEED: u64 = 4_000;
const TOTAL_STEPS: u64 = 120_000;

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
    let started = std::time::Instant::now();
    match run_seeds(first, STEPS_PER_SEED, TOTAL_STEPS) {
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
        }
        Err((seed, v)) => panic!("seed {seed} (replay: S3LEASE_SIM_SEED={seed}): {v}"),
    }
}

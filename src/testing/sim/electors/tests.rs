//! Real electors under the simulation, as tests. A fixed set of seeds runs
//! in `cargo test`; `S3LEASE_ELECTOR_SIM_SEEDS=<n>` runs more, from
//! `S3LEASE_SIM_FIRST_SEED`; `S3LEASE_SIM_SEED=<n>` replays one seed and
//! prints its setup and report.

use super::*;

const SEEDS: u64 = 40;

fn env(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .map(|s| s.parse().unwrap_or_else(|_| panic!("{name} is a number")))
}

#[test]
fn real_electors_keep_one_leader_while_requests_hang_and_clocks_skew() {
    if let Some(seed) = env("S3LEASE_SIM_SEED") {
        let (report, result) = run_seed(seed, Caller::Watchdog);
        println!(
            "seed {seed}: {:#?}\n{report:#?}",
            Setup::new(seed, &mut rng_of(seed))
        );
        if let Err(v) = result {
            panic!("seed {seed} (replay: S3LEASE_SIM_SEED={seed}): {v}");
        }
        return;
    }
    let first = env("S3LEASE_SIM_FIRST_SEED").unwrap_or(0);
    let seeds = env("S3LEASE_ELECTOR_SIM_SEEDS").unwrap_or(SEEDS);
    let started = std::time::Instant::now();
    // `S3LEASE_SIM_SURVEY=1`: run every seed and list the failing ones
    // (to see how often a deliberately broken elector is caught).
    let survey = std::env::var_os("S3LEASE_SIM_SURVEY").is_some();
    let mut failed = Vec::new();
    let mut total = Report::default();
    for seed in first..first + seeds {
        let (report, result) = run_seed(seed, Caller::Watchdog);
        if let Err(v) = result {
            let failure = format!("seed {seed} (replay: S3LEASE_SIM_SEED={seed}): {v}");
            if !survey {
                panic!("{failure}\n{report:?}");
            }
            println!("{failure}");
            failed.push(seed);
        }
        total += &report;
    }
    assert!(
        failed.is_empty(),
        "{} seeds failed: {failed:?}\n{total:?}",
        failed.len()
    );
    println!(
        "elector simulation: {seeds} seeds in {:.1} s: {total:#?}",
        started.elapsed().as_secs_f64()
    );
    // The faults really happened, and leadership really moved.
    let t = &total;
    assert!(t.terms > 10 * seeds && t.failovers > seeds, "{t:?}");
    assert!(
        t.hung > 10 && t.timeouts_honoured > 10 && t.late_replies > 10,
        "{t:?}"
    );
    assert!(t.lost_replies > 10 && t.never_applied > 10, "{t:?}");
    assert!(t.applied_after_giving_up > 1 && t.conflicts > 1, "{t:?}");
    assert!(t.crashes > 1 && t.resigns > 1 && t.clock_jumps > 1, "{t:?}");
}

/// A caller without a watchdog (leader until a step says otherwise, as the
/// host was before the deadline fix) acts on while its step is blocked on a
/// host that ignores request timeouts: the checker must see the overlap.
#[test]
fn a_caller_without_a_watchdog_overlaps_when_the_network_goes_silent() {
    let seeds = env("S3LEASE_ELECTOR_SIM_SEEDS").unwrap_or(SEEDS);
    let mut total = Report::default();
    for seed in 0..seeds {
        let (report, result) = run_seed(seed, Caller::LastStep);
        total += &report;
        if let Err(v) = result {
            println!("without a watchdog, seed {seed}: {v}");
            // With `S3LEASE_ELECTOR_SIM_SEEDS`, survey them all.
            if env("S3LEASE_ELECTOR_SIM_SEEDS").is_none() {
                return;
            }
        }
    }
    println!("without a watchdog: {total:#?}");
    assert!(
        total.overlaps > 0,
        "no overlap without a watchdog: {total:?}"
    );
}

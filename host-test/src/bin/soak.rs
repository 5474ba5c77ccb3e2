//! The soak: processes campaign with electors and make fenced writes under
//! seeded faults, against SeaweedFS (started here) or `AWS_ENDPOINT_URL`;
//! then the recorded history is checked. Exits 1 on any violation.
//!
//!     cargo run --release -p host-test --bin soak -- --minutes 10 --instances 8 --keys 4 --seed S
//!
//! Options: `--help` (the defaults, and what each `--break` breaks:
//! every one must make the soak fail).

use anyhow::{bail, Context, Result};
use host_test::instance::component_path;
use host_test::soak::{self, Break, SoakConfig};
use host_test::{server, Harness};
use std::time::Duration;

const HELP: &str = "soak [--minutes M | --seconds S] [--instances N] [--keys K] [--slot-keys J] [--seed S] [--fault-rate F] [--verbose] [--break holder-clock|slot-limit|slot-guard|slot-queue] [--no-watchdog]
  defaults: 60 s, 8 processes, 4 keys, 3 semaphore keys, seed S3LEASE_SEED or the clock, fault rate 0.05
  --break holder-clock: every key on the holder clock under skew (must fail)
  --break slot-limit: slot members ask for one slot more than the checked limit (must fail)
  --break slot-guard: slot members ignore their guard (must fail)
  --break slot-queue: fair waiters give up their place now and then (must fail)
  --no-watchdog: members believe the last step, ignoring leading-until (must fail)";

fn parse_args() -> Result<SoakConfig> {
    let mut config = SoakConfig::new(Duration::from_secs(60), 8, 4, seed_from_env()?);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--minutes" => config.duration = Duration::from_secs(60 * value(&arg)?.parse::<u64>()?),
            "--seconds" => config.duration = Duration::from_secs(value(&arg)?.parse()?),
            "--instances" => config.instances = value(&arg)?.parse()?,
            "--keys" => config.keys = value(&arg)?.parse()?,
            "--slot-keys" => config.slot_keys = value(&arg)?.parse()?,
            "--seed" => config.seed = value(&arg)?.parse()?,
            "--fault-rate" => config.request_fault_rate = value(&arg)?.parse()?,
            "--verbose" => config.verbose = true,
            "--no-watchdog" => config.no_watchdog = true,
            "--help" | "-h" => {
                println!("{HELP}");
                std::process::exit(0);
            }
            "--break" => {
                let name = value(&arg)?;
                match Break::NAMES.iter().find(|(n, _)| *n == name) {
                    Some((_, b)) => config.broken = Some(*b),
                    None => bail!(
                        "--break takes one of {:?}, not {name:?}",
                        Break::NAMES.map(|(n, _)| n)
                    ),
                }
            }
            other => bail!("unknown argument {other:?}\n{HELP}"),
        }
    }
    if config.instances < 2 || config.keys == 0 {
        bail!("need at least 2 instances and 1 key");
    }
    Ok(config)
}

fn seed_from_env() -> Result<u64> {
    match std::env::var("S3LEASE_SEED") {
        Ok(s) => s.trim().parse().context("S3LEASE_SEED must be a u64"),
        Err(_) => Ok(soak::clock_seed()),
    }
}

fn main() -> Result<()> {
    let config = parse_args()?;
    let seed = config.seed;
    let harness = Harness::load(&component_path())?;
    let endpoint = server::shared();
    let report = soak::run(&harness, endpoint, config);
    report.print();
    if !report.passed() {
        eprintln!(
            "soak: {} violation(s); replay with --seed {seed}",
            report.violations().len()
        );
        std::process::exit(1);
    }
    println!("soak: passed (seed {seed})");
    Ok(())
}

//! `bench ceiling [STEP [SECONDS]]`: how many leases one process can hold
//! here before renews start to miss, and what runs out first. One async
//! `Client` takes leases (ttl 30 s) STEP at a time (default 2,500) and
//! holds each total for SECONDS (default 60), watching every lease once a
//! second; it stops at the first step where a renew came late or an
//! acquire timed out, and says where the CPU went.
//!
//! A lease is renewed every 9 s (a third of its 27 s guard), so it always
//! has at least 18 s left when renews keep pace. The step is *late* when
//! some lease is seen with less than `LATE_BELOW` left: at least one renew
//! period missed. The CPU split is this process's (`/proc/self/stat`)
//! against the machine's (`/proc/stat`): the rest is the store (SeaweedFS
//! on the same cores) and whatever else runs.

use super::leases::{clock_ticks_per_second, cpu_ticks, Status};
use anyhow::{Context, Result};
use host_test::server::Endpoint;
use s3_lease_host::{AcquireOptions, Client, Lease, Runtime};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

pub struct Settings {
    pub step: usize,
    pub hold: Duration,
}

const TTL: Duration = Duration::from_secs(30);
/// Less than this left on a lease means a renew period was missed.
const LATE_BELOW: Duration = Duration::from_secs(17);
const IN_FLIGHT: usize = 64;
/// An acquire that waits this long for a free key means the store or the
/// client cannot keep up (every key here is free).
const ACQUIRE_WAIT: Duration = Duration::from_secs(20);
/// The most leases it tries, whatever happens.
const MAX_LEASES: usize = 100_000;

pub fn run(endpoint: &Endpoint, prefix: &str, settings: &Settings) -> Result<()> {
    let (tokio, runtime, config) = super::leases::setup(endpoint, prefix)?;
    tokio.block_on(climb(&runtime, &config, settings))
}

/// One step's figures.
struct Step {
    held: usize,
    acquire_failures: usize,
    acquired_in: Duration,
    renews_per_s: f64,
    least_left: Duration,
    late: usize,
    lost: usize,
    own_cpu: f64,
    machine_cpu: f64,
    rss_mib: f64,
    threads: u64,
}

async fn climb(runtime: &Runtime, config: &s3_lease_host::StoreConfig, s: &Settings) -> Result<()> {
    let client = Client::connect(runtime, config).await?;
    let options = AcquireOptions::new(TTL);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    println!(
        "\nleases  acquired in  renews/s (due)  least left  late  lost  this process CPU  machine CPU  RSS      threads"
    );
    let mut leases: Vec<Lease> = Vec::new();
    let mut last_clean = 0;
    let verdict = loop {
        let step = acquire_step(&client, &options, leases.len(), s.step).await;
        let (mut got, acquire_failures, acquired_in) = step;
        leases.append(&mut got);
        let row = hold_step(&leases, s.hold, acquire_failures, acquired_in, cores).await?;
        println!(
            "{:>6}  {:>9.1} s  {:>6.0} ({:>5.0})  {:>8.1} s  {:>4}  {:>4}  {:>15.0}%  {:>10.0}%  {:>5.0} MiB  {:>3}",
            row.held,
            row.acquired_in.as_secs_f64(),
            row.renews_per_s,
            row.held as f64 / 9.0,
            row.least_left.as_secs_f64(),
            row.late,
            row.lost,
            row.own_cpu * 100.0,
            row.machine_cpu * 100.0,
            row.rss_mib,
            row.threads,
        );
        if row.late > 0 || row.lost > 0 || row.acquire_failures > 0 {
            break row;
        }
        last_clean = row.held;
        if leases.len() + s.step > MAX_LEASES {
            println!("stopped at {MAX_LEASES} leases, none late");
            return release_all(leases).await;
        }
    };
    let busy = if verdict.machine_cpu > 0.9 {
        if verdict.own_cpu > verdict.machine_cpu / 2.0 {
            "the machine's CPU, most of it this process's"
        } else {
            "the machine's CPU, most of it the store's"
        }
    } else {
        "not the CPU (the store's latency, or the network)"
    };
    println!(
        "\nceiling: {last_clean} leases held with every renew on time; at {} \
         {} renew(s) came late, {} lease(s) were lost and {} acquire(s) timed out. \
         What ran out: {busy} ({:.0}% of {cores} cores busy, {:.0}% of one core this process).",
        verdict.held,
        verdict.late,
        verdict.lost,
        verdict.acquire_failures,
        verdict.machine_cpu * 100.0,
        verdict.own_cpu * 100.0 * cores,
    );
    release_all(leases).await
}

/// Takes `count` new keys, numbered from `from`, IN_FLIGHT at a time.
async fn acquire_step(
    client: &Client,
    options: &AcquireOptions,
    from: usize,
    count: usize,
) -> (Vec<Lease>, usize, Duration) {
    let started = Instant::now();
    let mut set = JoinSet::new();
    let mut got = Vec::with_capacity(count);
    let mut failures = 0;
    let mut next = from;
    while next < from + count || !set.is_empty() {
        while next < from + count && set.len() < IN_FLIGHT {
            let (client, options, key) = (client.clone(), options.clone(), format!("c-{next:06}"));
            set.spawn(async move { client.acquire(&key, &options, ACQUIRE_WAIT).await });
            next += 1;
        }
        match set.join_next().await {
            Some(Ok(Ok(lease))) => got.push(lease),
            Some(_) => failures += 1,
            None => break,
        }
    }
    (got, failures, started.elapsed())
}

/// Watches every lease once a second for `hold`.
async fn hold_step(
    leases: &[Lease],
    hold: Duration,
    acquire_failures: usize,
    acquired_in: Duration,
    cores: f64,
) -> Result<Step> {
    let (own_before, machine_before) = (cpu_ticks()?, machine_ticks()?);
    let started = Instant::now();
    let mut last: Vec<Option<Instant>> = leases.iter().map(Lease::held_until).collect();
    let mut renews = 0u64;
    let mut least_left = TTL;
    let mut late = vec![false; leases.len()];
    let mut lost = vec![false; leases.len()];
    while started.elapsed() < hold {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = Instant::now();
        for (i, lease) in leases.iter().enumerate() {
            match lease.held_until() {
                Some(until) => {
                    if Some(until) != last[i] {
                        renews += 1;
                        last[i] = Some(until);
                    }
                    let left = until.saturating_duration_since(now);
                    least_left = least_left.min(left);
                    late[i] |= left < LATE_BELOW;
                }
                None => lost[i] = true,
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let ticks = clock_ticks_per_second() as f64;
    let own = (cpu_ticks()? - own_before) as f64 / ticks / elapsed / cores;
    let (busy, total) = machine_ticks()?;
    let machine = (busy - machine_before.0) as f64 / (total - machine_before.1).max(1) as f64;
    let status = Status::read()?;
    Ok(Step {
        held: leases.len(),
        acquire_failures,
        acquired_in,
        renews_per_s: renews as f64 / elapsed,
        least_left,
        late: late.iter().filter(|&&l| l).count(),
        lost: lost.iter().filter(|&&l| l).count(),
        own_cpu: own,
        machine_cpu: machine,
        rss_mib: status.rss_kib as f64 / 1024.0,
        threads: status.threads,
    })
}

/// The machine's busy and total CPU ticks, from the first line of /proc/stat.
fn machine_ticks() -> Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat.lines().next().context("/proc/stat is empty")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    Ok((total - idle, total))
}

async fn release_all(leases: Vec<Lease>) -> Result<()> {
    let started = Instant::now();
    let mut set = JoinSet::new();
    let mut failures = 0;
    let mut leases = leases.into_iter();
    loop {
        while set.len() < IN_FLIGHT {
            match leases.next() {
                Some(lease) => {
                    set.spawn(lease.release());
                }
                None => break,
            }
        }
        match set.join_next().await {
            Some(done) => failures += usize::from(!matches!(done, Ok(Ok(())))),
            None => break,
        }
    }
    println!(
        "released in {:.1} s, {failures} failed",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

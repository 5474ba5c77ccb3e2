//! `bench leases [N [SECONDS [TTL]]]`: the scale measurement and the soak.
//! One process holds N leases (default 10,000, ttl TTL seconds, default 30) through one async `Client` (its
//! default instances) for SECONDS (default 600) against the bench's S3
//! endpoint, while a probe takes and gives back keys of its own on the same
//! client. It reports leases lost and tokens changed (both must be 0: the
//! run fails otherwise), the process's threads and RSS, CPU time per renew,
//! the probe's acquire latency while the leases are held, and renews done
//! per second; and, window by window over the hold, renews per second, CPU
//! per renew, RSS and the scheduler's size and work per renew, so that the
//! first and last windows show whether anything grows with the time held.
//!
//! Renews are counted from the leases themselves: each renew moves a held
//! lease's `held_until`, which a sampler reads every second (a renew comes
//! every 9 s at a 30 s ttl, every 1.8 s at 6 s, so none is missed). CPU time is this process's
//! (`utime + stime` of `/proc/self/stat`) over the hold: the probe and the
//! sampler are in it, the S3 server is not.

use super::percentile;
use anyhow::{bail, Context, Result};
use host_test::server::Endpoint;
use s3_lease_host::{
    AcquireOptions, Client, ClientStats, CompileCache, ComponentSource, Lease, Runtime,
    RuntimeOptions,
};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// What to measure.
pub struct Settings {
    pub leases: usize,
    pub hold: Duration,
    pub ttl: Duration,
}

/// Acquires (and, at the end, releases) at most this many at once.
const IN_FLIGHT: usize = 64;
/// How often the sampler reads every lease.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// How often the process's threads and RSS are read.
const STATUS_EVERY: Duration = Duration::from_millis(100);
/// The probe takes a key this often, and gives it back at once.
const PROBE_EVERY: Duration = Duration::from_millis(200);
/// The probe cycles through this many keys of its own.
const PROBE_KEYS: usize = 16;
/// How many windows the hold is cut into for the report of how renews,
/// CPU and memory move with the time the leases are held (a window is at
/// least one sample long).
const WINDOWS: u32 = 10;

/// What both scale measurements run on: a tokio runtime, the component
/// with pooled HTTP, and the endpoint's config under `prefix`.
pub(super) fn setup(
    endpoint: &Endpoint,
    prefix: &str,
) -> Result<(tokio::runtime::Runtime, Runtime, s3_lease_host::StoreConfig)> {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let runtime = Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::from_env())
            .cache(CompileCache::from_env()),
    )?;
    Ok((tokio, runtime, endpoint.host_config(prefix)?))
}

pub fn run(endpoint: &Endpoint, prefix: &str, settings: &Settings) -> Result<()> {
    let (tokio, runtime, config) = setup(endpoint, prefix)?;
    let report = tokio.block_on(hold(&runtime, &config, settings))?;
    report.print(settings, &endpoint.url);
    if report.lost > 0 || report.tokens_changed > 0 {
        bail!(
            "{} lease(s) lost and {} token(s) changed while held",
            report.lost,
            report.tokens_changed
        );
    }
    Ok(())
}

/// What the run measured.
struct Report {
    threads_before: u64,
    acquired_in: Duration,
    acquire_latencies: Vec<Duration>,
    lost: usize,
    tokens_changed: usize,
    renews: u64,
    held_for: Duration,
    cpu_ms: f64,
    status: StatusPeaks,
    status_end: Status,
    probe: Vec<Duration>,
    probe_misses: usize,
    windows: Vec<Window>,
    requests: Vec<(String, u64)>,
    release_failures: usize,
    released_in: Duration,
}

async fn hold(
    runtime: &Runtime,
    config: &s3_lease_host::StoreConfig,
    s: &Settings,
) -> Result<Report> {
    let threads_before = Status::read()?.threads;
    let client = Client::connect(runtime, config).await?;
    let options = AcquireOptions::new(s.ttl);

    // Take the N leases, IN_FLIGHT at a time.
    let started = Instant::now();
    let mut slots: Vec<Option<Lease>> = (0..s.leases).map(|_| None).collect();
    let mut acquire_latencies = Vec::with_capacity(s.leases);
    let mut set = JoinSet::new();
    let mut next = 0;
    while next < s.leases || !set.is_empty() {
        while next < s.leases && set.len() < IN_FLIGHT {
            let (client, options, i) = (client.clone(), options.clone(), next);
            set.spawn(async move {
                let t = Instant::now();
                let key = format!("lease-{i:06}");
                let lease = client
                    .acquire(&key, &options, Duration::from_secs(60))
                    .await;
                (i, lease, t.elapsed())
            });
            next += 1;
        }
        if let Some(done) = set.join_next().await {
            let (i, lease, took) = done?;
            slots[i] = Some(lease.with_context(|| format!("acquiring lease-{i:06}"))?);
            acquire_latencies.push(took);
        }
    }
    let acquired_in = started.elapsed();
    let leases: Vec<Lease> = slots.into_iter().flatten().collect();
    let tokens: Vec<u64> = leases.iter().map(Lease::token).collect();

    // Hold them: sample every lease, read the process's status, probe. The
    // line below tells a profiler attaching now (scripts/profile.sh) that
    // the hold begins: what it samples from here on is the renews' work.
    println!("holding {} leases for {} s", leases.len(), s.hold.as_secs());
    let requests_before = counts(runtime);
    let cpu_before = cpu_ticks()?;
    let held_from = Instant::now();
    let until = held_from + s.hold;
    let status = tokio::spawn(watch_status(until));
    let probe = tokio::spawn(probe(client.clone(), options.clone(), until));
    let mut last: Vec<Option<Instant>> = leases.iter().map(Lease::held_until).collect();
    let mut lost = vec![false; leases.len()];
    let mut renews = 0u64;
    let window_len = (s.hold / WINDOWS).max(SAMPLE_EVERY);
    let mut window = Window::begin(held_from, renews, &client)?;
    let mut windows = Vec::new();
    loop {
        let now = Instant::now();
        if now >= until || now.saturating_duration_since(window.from) >= window_len {
            windows.push(window.end(now, renews, &client)?);
            window = Window::begin(now, renews, &client)?;
        }
        if now >= until {
            break;
        }
        tokio::time::sleep(SAMPLE_EVERY.min(until - now)).await;
        for (i, lease) in leases.iter().enumerate() {
            match lease.held_until() {
                Some(u) if Some(u) != last[i] => {
                    renews += 1;
                    last[i] = Some(u);
                }
                Some(_) => {}
                None => lost[i] = true,
            }
        }
    }
    let held_for = held_from.elapsed();
    let cpu_ms = (cpu_ticks()? - cpu_before) as f64 * 1000.0 / clock_ticks_per_second() as f64;
    let requests = diff(counts(runtime), &requests_before);
    let (probe, probe_misses) = probe.await??;
    let status = status.await??;
    let status_end = Status::read()?;
    // Seen not held by a sample, or not held now.
    let lost = leases
        .iter()
        .zip(&lost)
        .filter(|(l, &seen)| seen || l.lost_reason().is_some())
        .count();
    let tokens_changed = leases
        .iter()
        .zip(&tokens)
        .filter(|(l, &t)| l.token() != t)
        .count();

    // Give them back, IN_FLIGHT at a time (a dropped lease releases from
    // a thread of its own: N at once would be N threads).
    let released_from = Instant::now();
    let mut release_failures = 0;
    let mut leases = leases.into_iter();
    let mut set = JoinSet::new();
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
            Some(done) => release_failures += usize::from(done?.is_err()),
            None => break,
        }
    }
    Ok(Report {
        threads_before,
        acquired_in,
        acquire_latencies,
        lost,
        tokens_changed,
        renews,
        held_for,
        cpu_ms,
        status,
        status_end,
        probe,
        probe_misses,
        windows,
        requests,
        release_failures,
        released_in: released_from.elapsed(),
    })
}

/// Takes one of its own keys every `PROBE_EVERY` until `until`, timing
/// each grant, and gives it back at once: the latencies, and the attempts
/// that found the key held (none should).
async fn probe(
    client: Client,
    options: AcquireOptions,
    until: Instant,
) -> Result<(Vec<Duration>, usize)> {
    let mut latencies = Vec::new();
    let mut misses = 0;
    let mut n = 0usize;
    while Instant::now() < until {
        let key = format!("probe-{:02}", n % PROBE_KEYS);
        n += 1;
        let t = Instant::now();
        match client.try_acquire(&key, &options).await? {
            Some(lease) => {
                latencies.push(t.elapsed());
                lease.release().await?;
            }
            None => misses += 1,
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
    Ok((latencies, misses))
}

/// A stretch of the hold: what renewing cost in it, so that the first
/// and the last can be set side by side (work and memory per renew must
/// not grow with the time leases are held).
struct Window {
    from: Instant,
    renews_before: u64,
    cpu_before: u64,
    /// Filled by `end`.
    seconds: f64,
    renews: u64,
    cpu_ms: f64,
    rss_kib: u64,
    scheduled: u64,
    /// The scheduler's own count of its work and of the renews it sent.
    stats_before: ClientStats,
    steps_per_renew: f64,
}

impl Window {
    fn begin(from: Instant, renews_before: u64, client: &Client) -> Result<Window> {
        Ok(Window {
            from,
            renews_before,
            stats_before: client.stats(),
            steps_per_renew: 0.0,
            cpu_before: cpu_ticks()?,
            seconds: 0.0,
            renews: 0,
            cpu_ms: 0.0,
            rss_kib: 0,
            scheduled: 0,
        })
    }

    fn end(mut self, now: Instant, renews: u64, client: &Client) -> Result<Window> {
        self.seconds = now.saturating_duration_since(self.from).as_secs_f64();
        self.renews = renews - self.renews_before;
        self.cpu_ms =
            (cpu_ticks()? - self.cpu_before) as f64 * 1000.0 / clock_ticks_per_second() as f64;
        self.rss_kib = Status::read()?.rss_kib;
        let stats = client.stats();
        self.scheduled = stats.scheduled_entries;
        let steps = stats.scheduler_steps - self.stats_before.scheduler_steps;
        let sent = stats.renews_sent - self.stats_before.renews_sent;
        self.steps_per_renew = steps as f64 / sent.max(1) as f64;
        Ok(self)
    }
}

/// The threads and resident memory of this process, from /proc/self/status.
#[derive(Clone, Copy, Default)]
pub(super) struct Status {
    pub(super) threads: u64,
    pub(super) rss_kib: u64,
    /// The resident peak so far (`VmHWM`).
    peak_rss_kib: u64,
}

impl Status {
    pub(super) fn read() -> Result<Self> {
        let text = std::fs::read_to_string("/proc/self/status")?;
        let field = |name: &str| -> Result<u64> {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .with_context(|| format!("no {name} in /proc/self/status"))
        };
        Ok(Status {
            threads: field("Threads:")?,
            rss_kib: field("VmRSS:")?,
            peak_rss_kib: field("VmHWM:")?,
        })
    }
}

/// The most threads and RSS seen during the hold.
#[derive(Default)]
struct StatusPeaks {
    max_threads: u64,
    max_rss_kib: u64,
    samples: u64,
}

async fn watch_status(until: Instant) -> Result<StatusPeaks> {
    let mut peaks = StatusPeaks::default();
    while Instant::now() < until {
        let s = Status::read()?;
        peaks.max_threads = peaks.max_threads.max(s.threads);
        peaks.max_rss_kib = peaks.max_rss_kib.max(s.rss_kib);
        peaks.samples += 1;
        tokio::time::sleep(STATUS_EVERY).await;
    }
    Ok(peaks)
}

/// This process's CPU time so far, user and system, in clock ticks.
pub(super) fn cpu_ticks() -> Result<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The command name (field 2) is in parentheses and may hold spaces:
    // count from the last `)`. utime and stime are fields 14 and 15.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("/proc/self/stat has no command name")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |n: usize| -> Result<u64> {
        fields
            .get(n - 3)
            .and_then(|v| v.parse().ok())
            .with_context(|| format!("/proc/self/stat field {n}"))
    };
    Ok(field(14)? + field(15)?)
}

/// `getconf CLK_TCK` (100 on Linux unless it says otherwise).
pub(super) fn clock_ticks_per_second() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or(100)
}

/// The runtime's requests so far, `operation outcome` to count.
fn counts(runtime: &Runtime) -> BTreeMap<String, u64> {
    runtime
        .request_counts()
        .snapshot()
        .into_iter()
        .map(|(op, outcome, n)| (format!("{op} {outcome}"), n))
        .collect()
}

fn diff(after: BTreeMap<String, u64>, before: &BTreeMap<String, u64>) -> Vec<(String, u64)> {
    after
        .into_iter()
        .map(|(k, n)| {
            let was = before.get(&k).copied().unwrap_or(0);
            (k, n - was)
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

impl Report {
    fn print(&self, s: &Settings, url: &str) {
        let ms = |samples: &[Duration], p: f64| percentile(&mut samples.to_vec(), p);
        let mib = |kib: u64| kib as f64 / 1024.0;
        let held_s = self.held_for.as_secs_f64();
        println!(
            "\n{} leases (ttl {} s) held through one async client for {:.0} s, S3 at {url}",
            s.leases,
            s.ttl.as_secs(),
            held_s
        );
        println!(
            "  acquired in {:.1} s ({} at a time): p50 {:.2} ms, p99 {:.2} ms per acquire",
            self.acquired_in.as_secs_f64(),
            IN_FLIGHT,
            ms(&self.acquire_latencies, 0.5),
            ms(&self.acquire_latencies, 0.99)
        );
        println!(
            "  leases lost: {} (must be 0); tokens changed: {} (must be 0)",
            self.lost, self.tokens_changed
        );
        println!(
            "  renews: {} in {:.0} s, {:.1} per second; CPU per renew {:.3} ms ({:.1} s of \
             utime+stime over the hold, probe and sampler included)",
            self.renews,
            held_s,
            self.renews as f64 / held_s,
            self.cpu_ms / self.renews.max(1) as f64,
            self.cpu_ms / 1000.0
        );
        println!(
            "  threads: {} before the client, {} at the end, at most {} during the hold \
             ({} samples, every {} ms)",
            self.threads_before,
            self.status_end.threads,
            self.status.max_threads,
            self.status.samples,
            STATUS_EVERY.as_millis()
        );
        println!(
            "  RSS: {:.1} MiB at the end, at most {:.1} MiB during the hold, peak {:.1} MiB (VmHWM)",
            mib(self.status_end.rss_kib),
            mib(self.status.max_rss_kib),
            mib(self.status_end.peak_rss_kib)
        );
        println!(
            "  acquire while they are held (try-acquire of a key the probe released, every \
             {} ms): p50 {:.2} ms, p99 {:.2} ms over {} grants; {} found held",
            PROBE_EVERY.as_millis(),
            ms(&self.probe, 0.5),
            ms(&self.probe, 0.99),
            self.probe.len(),
            self.probe_misses
        );
        println!(
            "  over the hold, window by window (end of window, renews/s, CPU per renew, RSS, \
             scheduler entries, scheduler steps per renew):"
        );
        for (i, w) in self.windows.iter().enumerate() {
            println!(
                "    {:>3}: {:>6.0} s  {:>9.1}/s  {:.3} ms  {:>7.1} MiB  {:>6}  {:.2}",
                i + 1,
                w.from
                    .saturating_duration_since(self.windows[0].from)
                    .as_secs_f64()
                    + w.seconds,
                w.renews as f64 / w.seconds.max(0.001),
                w.cpu_ms / w.renews.max(1) as f64,
                mib(w.rss_kib),
                w.scheduled,
                w.steps_per_renew
            );
        }
        let requests: Vec<String> = self
            .requests
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        println!(
            "  requests during the hold (operation, status): {}",
            requests.join(", ")
        );
        println!(
            "  released in {:.1} s, {} failed",
            self.released_in.as_secs_f64(),
            self.release_failures
        );
    }
}

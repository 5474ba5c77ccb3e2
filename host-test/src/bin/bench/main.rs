//! The host's figures, side by side in one run against one S3 endpoint (a
//! local SeaweedFS unless AWS_ENDPOINT_URL is set):
//!
//! - start-to-lock: `s3-lease acquire` as a new process, from exec to the
//!   lease on stdout, with no compile cache (cold) and with it (warm);
//!   and the same inside one process (load + instantiate + first acquire);
//! - per-operation latency (p50, p99) and client CPU time per operation,
//!   for the component through pooled keep-alive HTTP, through wasmtime's
//!   default connection per request, and for a plain boto3 client of the
//!   single-object design (`scripts/design_bench.py`), with the ratios;
//! - the same operations on a DynamoDB table (`dynamodb.rs`: dynalite
//!   started here, or `S3LEASE_BENCH_TABLE`), on an Azure Blob container
//!   (`azure.rs`: Azurite started here, or `S3LEASE_BENCH_CONTAINER`) and
//!   on a Google Cloud Storage bucket (`gcs.rs`: fake-gcs-server started
//!   here, or `S3LEASE_BENCH_GCS_BUCKET`), beside S3's, through the same
//!   host and client code, with the requests each operation sent;
//! - the floor (`floor.rs`): the bare requests each operation sends,
//!   signed ahead of time and sent by a plain keep-alive client, interleaved
//!   with the component's operations, each operation's p50 as a ratio to
//!   them, and where the rest of the call's time goes;
//! - SigV4 signing of the same requests: inside a component (a wasm command
//!   in wasmtime), the same code native, and the `aws-sigv4` crate.
//!
//!     ./scripts/bench.sh [ROUNDS]     (builds what it needs, then runs this)
//!
//! `bench builds [ROUNDS]` runs only the two builds of the component side by
//! side (`builds.rs`); `bench leases [N [SECONDS [TTL]]]` only the scale
//! measurement (`leases.rs`): one process holding N leases through one
//! async client; `bench ceiling [STEP [SECONDS]]` adds leases STEP at a
//! time until renews come late, and says what ran out (`ceiling.rs`).
//!
//! Numbers, not pass/fail. It prints the machine, the commit and the build
//! profile it ran on: a debug build of wasmtime runs several times slower.

mod azure;
mod boto3;
mod builds;
mod ceiling;
mod dynamodb;
mod floor;
mod gcs;
mod leases;
mod sigv4;
mod stores;

use anyhow::{bail, Context, Result};
use host_test::server::{Endpoint, SeaweedFs};
use s3_lease_host::blocking::Client;
use s3_lease_host::{
    AcquireOptions, ClientOptions, CompileCache, ComponentSource, Runtime, RuntimeOptions,
    StoreConfig,
};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples
        .get(i)
        .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
}

/// The `s3-lease` binary built next to this one.
fn cli_path() -> Result<PathBuf> {
    let me = std::env::current_exe()?;
    let path = me.with_file_name("s3-lease");
    if !path.exists() {
        bail!(
            "{} is missing: build it in the same profile (cargo build [--release] -p s3-lease-cli)",
            path.display()
        );
    }
    Ok(path)
}

/// Exec to lease, for one new process; `precompiled` is its
/// `S3LEASE_PRECOMPILED` (empty: none, not even beside the binary).
fn cli_start_to_lock(
    e: &Endpoint,
    prefix: &str,
    key: &str,
    cache: &str,
    precompiled: &str,
) -> Result<Duration> {
    let started = Instant::now();
    let mut cmd = Command::new(cli_path()?);
    cmd.args(["acquire", key, "--ttl", "60s"])
        .env("AWS_ENDPOINT_URL", &e.url)
        .env("AWS_REGION", &e.region)
        .env("AWS_ACCESS_KEY_ID", &e.access_key_id)
        .env("AWS_SECRET_ACCESS_KEY", &e.secret_access_key)
        .env("S3LEASE_BUCKET", &e.bucket)
        .env("S3LEASE_PREFIX", prefix)
        .env("S3LEASE_CACHE_DIR", cache)
        .env("S3LEASE_PRECOMPILED", precompiled);
    let out = cmd.output()?;
    let took = started.elapsed();
    if !out.status.success() {
        bail!("s3-lease acquire: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(took)
}

/// Load + instantiate + first acquire, in this process.
fn in_process_start_to_lock(
    e: &Endpoint,
    prefix: &str,
    key: &str,
    cache: CompileCache,
    precompiled: Option<&std::path::Path>,
) -> Result<Duration> {
    let started = Instant::now();
    let mut load = RuntimeOptions::default()
        .source(ComponentSource::from_env())
        .cache(cache);
    load.precompiled = precompiled.map(PathBuf::from);
    let runtime = Runtime::with_options(load)?;
    let client = Client::connect(&runtime, &e.host_config(prefix)?)?;
    // Left to run out, as before: nothing more is sent once it is taken.
    client
        .try_acquire(key, &options())?
        .context("the key was free")?
        .detach();
    Ok(started.elapsed())
}

fn options() -> AcquireOptions {
    AcquireOptions::new(Duration::from_secs(60))
}

/// A client of one instance, as the figures before the async client were
/// taken with (each key's calls go to one instance either way).
fn one_instance() -> ClientOptions {
    ClientOptions::default().instances(1)
}

/// This process's CPU time (user + system, all threads), in ms.
fn process_cpu_ms() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `t` is.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1000.0 + t.tv_nsec as f64 / 1e6
}

/// try-acquire, renew, release and inspect through one host: p50, p99 and
/// this process's CPU per operation (the host's HTTP threads included;
/// the S3 server runs in another process).
fn per_operation(
    config: &s3_lease_host::StoreConfig,
    pooled_http: bool,
    rounds: usize,
) -> Result<[boto3::Figures; 4]> {
    let runtime = Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::from_env())
            .cache(CompileCache::from_env())
            .pooled_http(pooled_http),
    )?;
    per_operation_on(&runtime, config, rounds)
}

fn per_operation_on(
    runtime: &Runtime,
    config: &s3_lease_host::StoreConfig,
    rounds: usize,
) -> Result<[boto3::Figures; 4]> {
    let client = Client::connect_with(runtime, config, one_instance())?;
    let mut samples: [Vec<Duration>; 4] = Default::default();
    let mut cpu = [0.0f64; 4];
    let mut timed = |op: usize, call: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        let (t, c) = (Instant::now(), process_cpu_ms());
        call()?;
        cpu[op] += process_cpu_ms() - c;
        samples[op].push(t.elapsed());
        Ok(())
    };
    for round in 0..rounds {
        four_operations(&client, &format!("op-{}", round % 8), &mut timed)?;
    }
    let mut figures = [boto3::Figures {
        p50: 0.0,
        p99: 0.0,
        cpu: 0.0,
    }; 4];
    for (i, f) in figures.iter_mut().enumerate() {
        *f = boto3::Figures {
            p50: percentile(&mut samples[i], 0.5),
            p99: percentile(&mut samples[i], 0.99),
            cpu: cpu[i] / rounds.max(1) as f64,
        };
    }
    Ok(figures)
}

/// Times one call as operation `op` (0..4 in `four_operations`' order).
type Timed<'a> = dyn FnMut(usize, &mut dyn FnMut() -> Result<()>) -> Result<()> + 'a;

/// The table's operations on `key`, in order, each through `timed`:
/// try-acquire (0), renew (1), release (2), inspect (3). The grant is
/// taken as a record (`detach`): renew and release are the client's calls.
fn four_operations(client: &Client, key: &str, timed: &mut Timed) -> Result<()> {
    let mut lease = None;
    timed(0, &mut || {
        let held = client.try_acquire(key, &options())?.context("free")?;
        lease = Some(held.detach().context("held")?);
        Ok(())
    })?;
    let mut held = lease.context("granted")?;
    timed(1, &mut || {
        held = client.renew(&held)?;
        Ok(())
    })?;
    timed(2, &mut || Ok(client.release(&held)?))?;
    timed(3, &mut || {
        client.inspect(key)?;
        Ok(())
    })
}

/// Which machine, commit and component these figures came from.
fn provenance() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("unknown".into(), |o| {
            String::from_utf8_lossy(&o.stdout).trim().to_string()
        });
    let component = match ComponentSource::from_env() {
        ComponentSource::Path(p) => std::fs::metadata(&p).map_or("?".into(), |m| {
            format!("{} ({} bytes)", p.display(), m.len())
        }),
        _ => "embedded".into(),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!(
        "{cpu}, {} logical CPUs, load {}; commit {commit}; unix time {now}; component {component}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().map(str::to_string))
            .unwrap_or_else(|| "?".into()),
    )
}

fn main() -> Result<()> {
    // `bench builds [ROUNDS]`: only the two builds of the component, side by side.
    let mode = std::env::args().nth(1);
    let only_builds = mode.as_deref() == Some("builds");
    // `bench leases [N [SECONDS]]`: only the scale measurement.
    let only_leases = mode.as_deref() == Some("leases");
    let arg = |n: usize| std::env::args().nth(n);
    let rounds: usize = match (only_builds, only_leases) {
        (true, _) => arg(2).map_or(Ok(200), |r| r.parse())?,
        (_, true) => 0,
        _ if mode.as_deref() == Some("ceiling") => 0,
        _ => arg(1).map_or(Ok(200), |r| r.parse())?,
    };
    let (endpoint, _server) = match Endpoint::from_env() {
        Some(e) => (e?, None),
        None => {
            let server = SeaweedFs::start()?;
            (server.endpoint.clone(), Some(server))
        }
    };
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let prefix = format!("bench/{stamp}/");
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    if mode.as_deref() == Some("ceiling") {
        let settings = ceiling::Settings {
            step: arg(2).map_or(Ok(2_500), |n| n.parse())?,
            hold: Duration::from_secs(arg(3).map_or(Ok(60), |s| s.parse())?),
        };
        println!(
            "s3-lease benchmark: {profile} build of the host, S3 at {}\n  {}",
            endpoint.url,
            provenance()
        );
        return ceiling::run(&endpoint, &format!("{prefix}ceiling/"), &settings);
    }
    if only_leases {
        let settings = leases::Settings {
            leases: arg(2).map_or(Ok(10_000), |n| n.parse())?,
            hold: Duration::from_secs(arg(3).map_or(Ok(600), |s| s.parse())?),
            ttl: Duration::from_secs(arg(4).map_or(Ok(30), |s| s.parse())?),
        };
        println!(
            "s3-lease benchmark: {profile} build of the host, S3 at {}\n  {}",
            endpoint.url,
            provenance()
        );
        return leases::run(&endpoint, &format!("{prefix}leases/"), &settings);
    }
    println!(
        "s3-lease benchmark: {profile} build of the host, S3 at {}, {rounds} rounds\n  {}",
        endpoint.url,
        provenance()
    );

    if only_builds {
        return builds::run(&endpoint, &prefix, rounds);
    }
    println!(
        "\nstart-to-lock (ms)                  cold (no cache)   warm (cached)\n  \
         (precompiled rows: no cache either way; the first run, then the median of five)"
    );
    let cache = std::env::temp_dir().join(format!("s3lease-bench-cache-{stamp}"));
    let cache_str = cache.display().to_string();
    match cli_path() {
        Ok(_) => {
            let cold = cli_start_to_lock(&endpoint, &prefix, "cli-cold", &cache_str, "")?;
            let mut warm: Vec<Duration> = (0..5)
                .map(|i| {
                    let key = format!("cli-warm-{i}");
                    cli_start_to_lock(&endpoint, &prefix, &key, &cache_str, "")
                })
                .collect::<Result<_>>()?;
            println!(
                "  s3-lease acquire (new process)    {:>15.1}   {:>13.1}",
                cold.as_secs_f64() * 1000.0,
                percentile(&mut warm, 0.5)
            );
            // Precompiled (`s3-lease precompile`), no cache: each run is a
            // cold start; the first, then the median of five more.
            let file = std::env::temp_dir().join(format!("s3lease-bench-{stamp}.cwasm"));
            let file_str = file.display().to_string();
            let made = Command::new(cli_path()?)
                .args(["precompile", "--out", &file_str])
                .output()?;
            if !made.status.success() {
                bail!(
                    "s3-lease precompile: {}",
                    String::from_utf8_lossy(&made.stderr)
                );
            }
            let mut runs: Vec<Duration> = (0..6)
                .map(|i| {
                    let key = format!("cli-precompiled-{i}");
                    cli_start_to_lock(&endpoint, &prefix, &key, "", &file_str)
                })
                .collect::<Result<_>>()?;
            let first = runs.remove(0);
            println!(
                "  s3-lease acquire, precompiled     {:>15.1}   {:>13.1}",
                first.as_secs_f64() * 1000.0,
                percentile(&mut runs, 0.5)
            );
            let _ = std::fs::remove_file(&file);
        }
        Err(e) => println!("  s3-lease acquire: skipped ({e})"),
    }
    let cold = in_process_start_to_lock(&endpoint, &prefix, "in-cold", CompileCache::Off, None)?;
    let mut warm: Vec<Duration> = (0..5)
        .map(|i| {
            in_process_start_to_lock(
                &endpoint,
                &prefix,
                &format!("in-warm-{i}"),
                CompileCache::Dir(cache.clone()),
                None,
            )
        })
        .collect::<Result<_>>()?;
    println!(
        "  load+instantiate+acquire          {:>15.1}   {:>13.1}",
        cold.as_secs_f64() * 1000.0,
        percentile(&mut warm, 0.5)
    );
    let file = std::env::temp_dir().join(format!("s3lease-bench-in-{stamp}.cwasm"));
    s3_lease_host::precompile(&ComponentSource::from_env(), &file)?;
    let mut runs: Vec<Duration> = (0..6)
        .map(|i| {
            let key = format!("in-precompiled-{i}");
            in_process_start_to_lock(&endpoint, &prefix, &key, CompileCache::Off, Some(&file))
        })
        .collect::<Result<_>>()?;
    let first = runs.remove(0);
    println!(
        "  the same, precompiled             {:>15.1}   {:>13.1}",
        first.as_secs_f64() * 1000.0,
        percentile(&mut runs, 0.5)
    );
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_dir_all(&cache);

    let pooled = per_operation(
        &endpoint.host_config(&format!("{prefix}pooled/"))?,
        true,
        rounds,
    )?;
    let default = per_operation(
        &endpoint.host_config(&format!("{prefix}default/"))?,
        false,
        rounds,
    )?;
    let design = boto3::run(&endpoint, rounds);
    println!(
        "\nper operation (ms; cpu: this client's CPU per operation)\n\
         {:<14} {:>27} {:>27} {:>27} {:>17}",
        "",
        "component, pooled HTTP",
        "component, per-request",
        "boto3 (design client)",
        "pooled / boto3"
    );
    println!(
        "{:<14} {:>9}{:>9}{:>9} {:>9}{:>9}{:>9} {:>9}{:>9}{:>9} {:>8}{:>9}",
        "operation", "p50", "p99", "cpu", "p50", "p99", "cpu", "p50", "p99", "cpu", "p50", "cpu"
    );
    for (i, name) in boto3::OPERATIONS.iter().enumerate() {
        let (p, d) = (pooled[i], default[i]);
        let b = design.as_ref().ok().map(|b| b[i]);
        let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        println!(
            "{name:<14} {:>9.2}{:>9.2}{:>9.3} {:>9.2}{:>9.2}{:>9.3} {:>9}{:>9}{:>9} {:>8}{:>9}",
            p.p50,
            p.p99,
            p.cpu,
            d.p50,
            d.p99,
            d.cpu,
            cell(b.map(|b| b.p50)),
            cell(b.map(|b| b.p99)),
            b.map_or("-".into(), |b| format!("{:.3}", b.cpu)),
            cell(b.map(|b| p.p50 / b.p50)),
            cell(b.map(|b| p.cpu / b.cpu)),
        );
    }
    if let Err(e) = &design {
        println!("  boto3 client: skipped ({e:#})");
    }
    println!(
        "  (try-acquire here is of a key this client released a round before: 1 request for \
         the component, GET + PUT for the design client)"
    );

    // The four stores side by side, in this one run.
    // Each server stays up while its store is measured (`Figures::of` runs
    // inside the closure that owns it) and stops after.
    let measured = |name, store: Result<(&StoreConfig, String)>| match store {
        Ok((config, what)) => stores::Figures::of(config, rounds, name, what),
        Err(e) => stores::Figures::skipped(name, e),
    };
    let s3_config = endpoint.host_config(&format!("{prefix}stores-s3/"));
    let s3 = measured(
        "S3",
        s3_config
            .as_ref()
            .map(|c| (c, endpoint.url.clone()))
            .map_err(|e| anyhow::anyhow!("{e:#}")),
    );
    let dynamodb = match dynamodb::table(&format!("{prefix}dynamodb/")) {
        Ok(t) => measured("DynamoDB", Ok((&t.config, t.what.clone()))),
        Err(e) => measured("DynamoDB", Err(e)),
    };
    let azure = match azure::container(&format!("{prefix}azure/")) {
        Ok(c) => measured("Azure Blob", Ok((&c.config, c.what.clone()))),
        Err(e) => measured("Azure Blob", Err(e)),
    };
    let gcs = match gcs::bucket(&format!("{prefix}gcs/")) {
        Ok(b) => measured("GCS", Ok((&b.config, b.what.clone()))),
        Err(e) => measured("GCS", Err(e)),
    };
    stores::print(&[s3, dynamodb, azure, gcs]);

    floor::run(&endpoint, &format!("{prefix}floor/"), rounds)?.print();

    let signing = sigv4::time(&sigv4_wasm(), 20_000)?;
    println!("\nSigV4, the same 3 requests (GET, conditional PUT, LIST), ns per signature");
    match signing.in_component {
        Some(ns) => println!("  s3-lease, inside a component (wasmtime)  {ns:>9.0}"),
        None => println!(
            "  s3-lease, inside a component: skipped ({} not built)",
            sigv4_wasm().display()
        ),
    }
    println!(
        "  s3-lease, native                        {:>9.0}",
        signing.native
    );
    println!(
        "  aws-sigv4 {AWS_SIGV4_VERSION}, native                  {:>9.0}",
        signing.aws_sigv4
    );
    Ok(())
}

/// The aws-sigv4 version pinned in host-test/Cargo.toml, for the report.
const AWS_SIGV4_VERSION: &str = "1.6.4";

/// `benches/sigv4_timing.rs` built for wasm32-wasip2 (scripts/bench.sh builds it).
fn sigv4_wasm() -> PathBuf {
    host_test::env_or_workspace_path(
        "S3LEASE_SIGV4_TIMING",
        "target/sigv4-timing/wasm32-wasip2/release/examples/sigv4-timing.wasm",
    )
}

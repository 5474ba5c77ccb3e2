//! The host's figures, side by side in one run against one S3 endpoint (a
//! local SeaweedFS unless AWS_ENDPOINT_URL is set):
//!
//! - start-to-lock: `s3-lease acquire` as a new process, from exec to the
//!   lease on stdout, with no compile cache (cold) and with it (warm);
//!   and the same inside one process (load + instantiate + first acquire);
//! - per-operation latency (p50, p99) through pooled keep-alive HTTP and
//!   through wasmtime's default connection per request.
//!
//!     cargo run --release -p host-test --bin bench [-- ROUNDS]
//!
//! Numbers, not pass/fail. The profile it was built in is printed: a debug
//! build of wasmtime compiles and runs several times slower.

use anyhow::{bail, Context, Result};
use host_test::server::{Endpoint, SeaweedFs};
use s3_lease_host::bindings::Options;
use s3_lease_host::{CompileCache, ComponentSource, Runtime, RuntimeOptions, S3Config};
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

fn s3_config(e: &Endpoint, prefix: &str) -> S3Config {
    let mut c = S3Config::from_vars(&e.bucket, |name| match name {
        "AWS_ENDPOINT_URL" => Some(e.url.clone()),
        "AWS_REGION" => Some(e.region.clone()),
        "AWS_ACCESS_KEY_ID" => Some(e.access_key_id.clone()),
        "AWS_SECRET_ACCESS_KEY" => Some(e.secret_access_key.clone()),
        "AWS_SESSION_TOKEN" => e.session_token.clone(),
        _ => None,
    })
    .expect("a complete configuration");
    c.key_prefix = Some(prefix.to_string());
    c
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

/// Exec to lease, for one new process.
fn cli_start_to_lock(e: &Endpoint, prefix: &str, key: &str, cache: &str) -> Result<Duration> {
    let started = Instant::now();
    let mut cmd = Command::new(cli_path()?);
    cmd.args(["acquire", key, "--ttl", "60s"])
        .env("AWS_ENDPOINT_URL", &e.url)
        .env("AWS_REGION", &e.region)
        .env("AWS_ACCESS_KEY_ID", &e.access_key_id)
        .env("AWS_SECRET_ACCESS_KEY", &e.secret_access_key)
        .env("S3LEASE_BUCKET", &e.bucket)
        .env("S3LEASE_PREFIX", prefix)
        .env("S3LEASE_CACHE_DIR", cache);
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
) -> Result<Duration> {
    let started = Instant::now();
    let runtime = Runtime::with_options(RuntimeOptions {
        source: ComponentSource::from_env(),
        cache,
        pooled_http: true,
    })?;
    let client = s3_lease_host::Client::connect(&runtime, &s3_config(e, prefix))?;
    client
        .try_acquire(key, &options())?
        .context("the key was free")?;
    Ok(started.elapsed())
}

fn options() -> Options {
    Options {
        ttl_ms: 60_000,
        holder_id: None,
        metadata: None,
    }
}

/// p50 and p99 of try-acquire, renew, release and inspect through one host.
fn per_operation(
    e: &Endpoint,
    prefix: &str,
    pooled_http: bool,
    rounds: usize,
) -> Result<[(f64, f64); 4]> {
    let runtime = Runtime::with_options(RuntimeOptions {
        source: ComponentSource::from_env(),
        cache: CompileCache::from_env(),
        pooled_http,
    })?;
    let client = s3_lease_host::Client::connect(&runtime, &s3_config(e, prefix))?;
    let mut samples: [Vec<Duration>; 4] = Default::default();
    for round in 0..rounds {
        let key = format!("op-{}", round % 8);
        let t = Instant::now();
        let lease = client.try_acquire(&key, &options())?.context("free")?;
        samples[0].push(t.elapsed());
        let t = Instant::now();
        let lease = client.renew(&lease)?;
        samples[1].push(t.elapsed());
        let t = Instant::now();
        client.release(&lease)?;
        samples[2].push(t.elapsed());
        let t = Instant::now();
        client.inspect(&key)?;
        samples[3].push(t.elapsed());
    }
    Ok(samples.map(|mut s| (percentile(&mut s, 0.5), percentile(&mut s, 0.99))))
}

fn main() -> Result<()> {
    let rounds: usize = std::env::args().nth(1).map_or(Ok(200), |r| r.parse())?;
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
    println!(
        "s3-lease host benchmark: {profile} build, {} logical CPUs, S3 at {}, {rounds} rounds",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        endpoint.url
    );

    println!("\nstart-to-lock (ms)                  cold (no cache)   warm (cached)");
    let cache = std::env::temp_dir().join(format!("s3lease-bench-cache-{stamp}"));
    let cache_str = cache.display().to_string();
    match cli_path() {
        Ok(_) => {
            let cold = cli_start_to_lock(&endpoint, &prefix, "cli-cold", &cache_str)?;
            let mut warm: Vec<Duration> = (0..5)
                .map(|i| {
                    cli_start_to_lock(&endpoint, &prefix, &format!("cli-warm-{i}"), &cache_str)
                })
                .collect::<Result<_>>()?;
            println!(
                "  s3-lease acquire (new process)    {:>15.1}   {:>13.1}",
                cold.as_secs_f64() * 1000.0,
                percentile(&mut warm, 0.5)
            );
        }
        Err(e) => println!("  s3-lease acquire: skipped ({e})"),
    }
    let cold = in_process_start_to_lock(&endpoint, &prefix, "in-cold", CompileCache::Off)?;
    let mut warm: Vec<Duration> = (0..5)
        .map(|i| {
            in_process_start_to_lock(
                &endpoint,
                &prefix,
                &format!("in-warm-{i}"),
                CompileCache::Dir(cache.clone()),
            )
        })
        .collect::<Result<_>>()?;
    println!(
        "  load+instantiate+acquire          {:>15.1}   {:>13.1}",
        cold.as_secs_f64() * 1000.0,
        percentile(&mut warm, 0.5)
    );
    let _ = std::fs::remove_dir_all(&cache);

    let pooled = per_operation(&endpoint, &format!("{prefix}pooled/"), true, rounds)?;
    let default = per_operation(&endpoint, &format!("{prefix}default/"), false, rounds)?;
    println!("\nper operation (ms)   pooled p50   p99   per-request p50   p99   p50 ratio");
    for (i, name) in ["try-acquire", "renew", "release", "inspect"]
        .iter()
        .enumerate()
    {
        let (p, d) = (pooled[i], default[i]);
        println!(
            "  {name:<18} {:>10.2} {:>5.2} {:>17.2} {:>5.2} {:>11.2}",
            p.0,
            p.1,
            d.0,
            d.1,
            p.0 / d.0
        );
    }
    Ok(())
}

//! Measures what docs/measured.md quotes: component size, load and instantiate
//! times, and per-operation latency and request counts against the S3
//! endpoint (a local SeaweedFS unless AWS_ENDPOINT_URL is set).
//!
//!     cargo run -p host-test --bin report [-- ROUNDS]
//!
//! Numbers, not pass/fail: nothing here asserts a speed.

use anyhow::{anyhow, Result};
use host_test::bindings::{Options, Strategy};
use host_test::instance::component_path;
use host_test::server::{Endpoint, SeaweedFs};
use host_test::{Harness, Instance};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn median_ms(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples
        .get(samples.len() / 2)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(f64::NAN)
}

/// Runs `op` once per round; returns (median ms, requests per call).
fn measure(
    i: &mut Instance,
    rounds: usize,
    mut op: impl FnMut(&mut Instance, usize) -> Result<()>,
) -> Result<(f64, f64)> {
    let mut samples = Vec::with_capacity(rounds);
    i.hooks.take_requests();
    for round in 0..rounds {
        let t = Instant::now();
        op(i, round)?;
        samples.push(t.elapsed());
    }
    let requests = i.hooks.take_requests().len() as f64 / rounds as f64;
    Ok((median_ms(samples), requests))
}

fn main() -> Result<()> {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50);
    let (endpoint, _server) = match Endpoint::from_env() {
        Some(e) => (e?, None),
        None => {
            let s = SeaweedFs::start()?;
            (s.endpoint.clone(), Some(s))
        }
    };
    let path = component_path();
    let size = std::fs::metadata(&path)?.len();
    let t = Instant::now();
    let harness = Harness::load(&path)?;
    let load = t.elapsed();
    let t = Instant::now();
    let n = 100;
    for _ in 0..n {
        harness.instance()?;
    }
    let instantiate = t.elapsed() / n;

    println!("component: {size} bytes ({})", path.display());
    println!(
        "load (compile): {:.1} ms; instantiate: {:.3} ms",
        load.as_secs_f64() * 1e3,
        instantiate.as_secs_f64() * 1e3
    );
    println!(
        "S3: {}; {rounds} rounds per operation; median latency",
        endpoint.url
    );
    for strategy in [Strategy::SingleObject, Strategy::EpochObjects] {
        table(&harness, &endpoint, strategy, rounds)?;
    }
    Ok(())
}

/// Every operation of one strategy, fenced writes included.
fn table(harness: &Harness, endpoint: &Endpoint, strategy: Strategy, rounds: usize) -> Result<()> {
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
    let prefix = format!("report/{stamp}/");
    let mut config = endpoint.config(&prefix);
    config.strategy = Some(strategy);
    let (mut a, mut b) = (harness.instance()?, harness.instance()?);
    a.open(&config)?.map_err(|e| anyhow!("{e:?}"))?;
    b.open(&config)?.map_err(|e| anyhow!("{e:?}"))?;
    let opts = Options {
        ttl_ms: 60_000,
        holder_id: Some("report-a".into()),
        metadata: None,
    };
    // A different holder: the same id would reclaim a's leases.
    let other = Options {
        holder_id: Some("report-b".into()),
        ..opts.clone()
    };
    let fail = |e| anyhow!("{e:?}");

    println!();
    println!("strategy {strategy:?}");
    println!("| operation | median ms | requests |");
    println!("|---|---|---|");

    let mut leases = Vec::new();
    let (ms, req) = measure(&mut a, rounds, |i, r| {
        let lease = i
            .try_acquire(&format!("k{r}"), &opts)?
            .map_err(fail)?
            .ok_or_else(|| anyhow!("not granted"))?;
        leases.push(lease);
        Ok(())
    })?;
    println!("| try-acquire (free key) | {ms:.2} | {req} |");
    let (ms, req) = measure(&mut b, rounds, |i, r| {
        match i.try_acquire(&format!("k{r}"), &other)?.map_err(fail)? {
            None => Ok(()),
            Some(_) => Err(anyhow!("a held key was granted")),
        }
    })?;
    println!("| try-acquire (held key) | {ms:.2} | {req} |");
    let (ms, req) = measure(&mut a, rounds, |i, r| {
        leases[r] = i.renew(&leases[r])?.map_err(fail)?;
        Ok(())
    })?;
    println!("| renew | {ms:.2} | {req} |");
    let (ms, req) = measure(&mut b, rounds, |i, r| {
        i.inspect(&format!("k{r}"))?.map_err(fail)?;
        Ok(())
    })?;
    println!("| inspect | {ms:.2} | {req} |");

    let object = |r: usize| format!("{prefix}data/o{r}");
    let (ms, req) = measure(&mut a, rounds, |i, r| {
        i.fenced_put(&leases[r], &object(r), b"first", "text/plain")?
            .map_err(fail)?;
        Ok(())
    })?;
    println!("| fenced-put (new object) | {ms:.2} | {req} |");
    let (ms, req) = measure(&mut a, rounds, |i, r| {
        i.fenced_put(&leases[r], &object(r), b"second", "text/plain")?
            .map_err(fail)?;
        Ok(())
    })?;
    println!("| fenced-put (overwrite) | {ms:.2} | {req} |");
    let (ms, req) = measure(&mut b, rounds, |i, r| {
        i.fenced_get(&object(r))?.map_err(fail)?;
        Ok(())
    })?;
    println!("| fenced-get | {ms:.2} | {req} |");

    let (ms, req) = measure(&mut a, rounds, |i, r| {
        i.release(&leases[r])?.map_err(fail)?;
        Ok(())
    })?;
    println!("| release | {ms:.2} | {req} |");
    let mut newer = Vec::new();
    let (ms, req) = measure(&mut b, rounds, |i, r| {
        let lease = i
            .try_acquire(&format!("k{r}"), &other)?
            .map_err(fail)?
            .ok_or_else(|| anyhow!("not granted"))?;
        newer.push(lease);
        Ok(())
    })?;
    println!("| try-acquire (released key) | {ms:.2} | {req} |");
    let (ms, req) = measure(&mut b, rounds, |i, r| {
        i.fenced_delete(&newer[r], &object(r))?.map_err(fail)?;
        Ok(())
    })?;
    println!("| fenced-delete | {ms:.2} | {req} |");
    let (ms, req) = measure(&mut a, rounds, |i, r| {
        match i.fenced_put(&leases[r], &object(r), b"stale", "text/plain")? {
            Err(host_test::bindings::Error::Fenced(_)) => Ok(()),
            other => Err(anyhow!("a stale write was not fenced: {other:?}")),
        }
    })?;
    println!("| fenced-put (stale, refused) | {ms:.2} | {req} |");

    // Steady state of one key handed over again and again (epoch-objects
    // then deletes one old epoch per grant).
    for lease in &newer {
        b.release(lease)?.map_err(fail)?;
    }
    let mut samples = Vec::new();
    let mut requests = 0;
    for round in 0..rounds {
        let i = if round % 2 == 0 { &mut a } else { &mut b };
        let o = if round % 2 == 0 { &opts } else { &other };
        i.hooks.take_requests();
        let t = Instant::now();
        let lease = i
            .try_acquire("handover", o)?
            .map_err(fail)?
            .ok_or_else(|| anyhow!("not granted"))?;
        samples.push(t.elapsed());
        requests += i.hooks.take_requests().len();
        i.release(&lease)?.map_err(fail)?;
    }
    println!(
        "| try-acquire (handover, steady state) | {:.2} | {} |",
        median_ms(samples),
        requests as f64 / rounds as f64
    );
    Ok(())
}

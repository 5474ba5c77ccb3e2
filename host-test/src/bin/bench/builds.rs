//! `bench builds`: the WASI 0.2 and WASI 0.3 builds of the component side
//! by side, in one run against one server: size, compile and instantiate
//! time, and each operation's latency and CPU through the host crate,
//! which loads either.

use super::boto3::OPERATIONS;
use super::{per_operation_on, percentile};
use anyhow::{Context, Result};
use host_test::server::Endpoint;
use s3_lease_host::{
    Build, CompileCache, ComponentSource, InstanceOptions, Runtime, RuntimeOptions,
};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// setup.sh's two components (or `S3LEASE_COMPONENT` and `S3LEASE_COMPONENT_P3`).
fn components() -> [(&'static str, PathBuf); 2] {
    [
        (Build::Wasip2.name(), host_test::instance::component_path()),
        (
            Build::Wasip3.name(),
            host_test::instance::component_p3_path(),
        ),
    ]
}

pub fn run(endpoint: &Endpoint, prefix: &str, rounds: usize) -> Result<()> {
    println!(
        "\nthe two builds of the component\n{:<10} {:>9} {:>12} {:>16}",
        "build", "bytes", "compile ms", "instantiate ms"
    );
    let mut runtimes = Vec::new();
    for (name, path) in components() {
        let bytes = std::fs::metadata(&path)
            .with_context(|| format!("{}", path.display()))?
            .len();
        let started = Instant::now();
        let runtime = Runtime::with_options(
            RuntimeOptions::default()
                .source(ComponentSource::Path(path))
                .cache(CompileCache::Off),
        )?;
        let compile = started.elapsed();
        // A new instance with its client open: what a serverless function
        // pays per invocation once the component is compiled.
        let config = endpoint.config(&format!("{prefix}{name}/"));
        let mut samples: Vec<Duration> = (0..50)
            .map(|_| {
                let started = Instant::now();
                let mut raw = runtime.instantiate(InstanceOptions::default())?;
                raw.open(&config)?.map_err(|e| anyhow::anyhow!("{e:?}"))?;
                Ok(started.elapsed())
            })
            .collect::<Result<_>>()?;
        println!(
            "{name:<10} {bytes:>9} {:>12.1} {:>16.3}",
            compile.as_secs_f64() * 1000.0,
            percentile(&mut samples, 0.5)
        );
        runtimes.push((name, runtime));
    }
    println!(
        "\nper operation through the host crate (ms; cpu: this process's CPU per operation)\n\
         {:<14} {:>27} {:>27}",
        "", runtimes[0].0, runtimes[1].0
    );
    println!(
        "{:<14} {:>9}{:>9}{:>9} {:>9}{:>9}{:>9}",
        "operation", "p50", "p99", "cpu", "p50", "p99", "cpu"
    );
    let mut figures = Vec::new();
    for (name, runtime) in &runtimes {
        let config = endpoint.host_config(&format!("{prefix}ops-{}/", name.replace(' ', "-")))?;
        figures.push(per_operation_on(runtime, &config, rounds)?);
    }
    for (i, op) in OPERATIONS.iter().enumerate() {
        let (a, b) = (figures[0][i], figures[1][i]);
        println!(
            "{op:<14} {:>9.2}{:>9.2}{:>9.3} {:>9.2}{:>9.2}{:>9.3}",
            a.p50, a.p99, a.cpu, b.p50, b.p99, b.cpu
        );
    }
    Ok(())
}

//! The four stores side by side, in one run: each operation's latency
//! (p50, p99), the client's CPU and the requests it sent, counted at the
//! host's sender.

use anyhow::Result;
use s3_lease_host::blocking::Client;
use s3_lease_host::{CompileCache, ComponentSource, Runtime, RuntimeOptions, StoreConfig};
use std::time::{Duration, Instant};

use super::{boto3, four_operations, one_instance, percentile, process_cpu_ms};

/// One store's figures, or why it was skipped.
pub struct Figures {
    name: &'static str,
    outcome: Result<(Vec<Row>, String)>,
}

struct Row {
    figures: boto3::Figures,
    /// Requests per call, averaged over the rounds.
    requests: f64,
}

impl Figures {
    /// The four operations on `config`, `rounds` times, through pooled
    /// keep-alive HTTP (the default), `what` naming the server.
    pub fn of(config: &StoreConfig, rounds: usize, name: &'static str, what: String) -> Figures {
        Figures {
            name,
            outcome: measure(config, rounds).map(|rows| (rows, what)),
        }
    }

    /// A store that could not be measured, and why.
    pub fn skipped(name: &'static str, error: anyhow::Error) -> Figures {
        Figures {
            name,
            outcome: Err(error),
        }
    }
}

fn total_requests(runtime: &Runtime) -> u64 {
    runtime
        .request_counts()
        .snapshot()
        .iter()
        .map(|(_, _, n)| n)
        .sum()
}

fn measure(config: &StoreConfig, rounds: usize) -> Result<Vec<Row>> {
    let runtime = Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::from_env())
            .cache(CompileCache::from_env())
            .pooled_http(true),
    )?;
    let client = Client::connect_with(&runtime, config, one_instance())?;
    let mut samples: [Vec<Duration>; 4] = Default::default();
    let mut cpu = [0.0f64; 4];
    let mut requests = [0u64; 4];
    // The first round also reads (or makes) the seal key: not counted.
    four_operations(&client, "op-warm", &mut |_, call| call())?;
    let mut timed = |op: usize, call: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        let (t, c, r) = (Instant::now(), process_cpu_ms(), total_requests(&runtime));
        call()?;
        cpu[op] += process_cpu_ms() - c;
        samples[op].push(t.elapsed());
        requests[op] += total_requests(&runtime) - r;
        Ok(())
    };
    for round in 0..rounds {
        four_operations(&client, &format!("op-{}", round % 8), &mut timed)?;
    }
    let rounds = rounds.max(1) as f64;
    Ok((0..4)
        .map(|i| Row {
            figures: boto3::Figures {
                p50: percentile(&mut samples[i], 0.5),
                p99: percentile(&mut samples[i], 0.99),
                cpu: cpu[i] / rounds,
            },
            requests: requests[i] as f64 / rounds,
        })
        .collect())
}

/// Prints the stores' figures side by side, one column group per store.
pub fn print(stores: &[Figures]) {
    println!("\nper operation, the stores side by side (ms; requests per call; pooled HTTP)");
    for store in stores {
        match &store.outcome {
            Ok((_, what)) => println!("  {}: {what}", store.name),
            Err(e) => println!("  {}: skipped ({e:#})", store.name),
        }
    }
    print!("{:<14}", "");
    for store in stores {
        print!(" {:>35}", store.name);
    }
    print!("\n{:<14}", "operation");
    for _ in stores {
        print!(" {:>8}{:>9}{:>9}{:>9}", "requests", "p50", "p99", "cpu");
    }
    println!();
    for (i, name) in boto3::OPERATIONS.iter().enumerate() {
        print!("{name:<14}");
        for store in stores {
            match &store.outcome {
                Ok((rows, _)) => {
                    let r = &rows[i];
                    print!(
                        " {:>8.2}{:>9.2}{:>9.2}{:>9.3}",
                        r.requests, r.figures.p50, r.figures.p99, r.figures.cpu
                    );
                }
                Err(_) => print!(" {:>8}{:>9}{:>9}{:>9}", "-", "-", "-", "-"),
            }
        }
        println!();
    }
}

//! The boto3 client of the single-object design (`scripts/design_bench.py`,
//! built on `scripts/design_client.py`), timed per operation in its own
//! Python process against the same endpoint.

use anyhow::{bail, Context, Result};
use host_test::server::Endpoint;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// One operation's figures, in ms: p50, p99 and client CPU per operation.
#[derive(Clone, Copy)]
pub struct Figures {
    pub p50: f64,
    pub p99: f64,
    pub cpu: f64,
}

pub const OPERATIONS: [&str; 4] = ["try-acquire", "renew", "release", "inspect"];

pub fn run(e: &Endpoint, rounds: usize) -> Result<[Figures; 4]> {
    let python = host_test::env_or_workspace_path("S3LEASE_PYTHON", ".venv/bin/python");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/design_bench.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(rounds.to_string())
        .args(["--endpoint", &e.url])
        .args(["--region", &e.region])
        .args(["--bucket", &e.bucket])
        .env("AWS_ACCESS_KEY_ID", &e.access_key_id)
        .env("AWS_SECRET_ACCESS_KEY", &e.secret_access_key)
        .env(
            "AWS_SESSION_TOKEN",
            e.session_token.as_deref().unwrap_or(""),
        )
        .output()
        .with_context(|| {
            format!(
                "running {} (scripts/setup.sh makes the venv)",
                python.display()
            )
        })?;
    if !out.status.success() {
        bail!("design_bench.py: {}", String::from_utf8_lossy(&out.stderr));
    }
    let all: Value = serde_json::from_slice(&out.stdout).context("design_bench.py output")?;
    let figure = |op: &str, field: &str| -> Result<f64> {
        all[op][field]
            .as_f64()
            .with_context(|| format!("no {op}.{field} in {all}"))
    };
    let mut figures = [Figures {
        p50: 0.0,
        p99: 0.0,
        cpu: 0.0,
    }; 4];
    for (f, op) in figures.iter_mut().zip(OPERATIONS) {
        *f = Figures {
            p50: figure(op, "p50_ms")?,
            p99: figure(op, "p99_ms")?,
            cpu: figure(op, "cpu_ms")?,
        };
    }
    Ok(figures)
}

//! The Python and Node packages' test fixtures (python/tests/conftest.py
//! and node/test/fixtures.mjs run this): the suite's own servers and fault
//! proxy, and its one history checker, so the packages' tests use what the
//! Rust suites use.
//!
//! - `package_fixtures serve`: answers one request per line on stdin with
//!   one JSON line on stdout (its fields in snake_case), until stdin
//!   closes (then every server it started stops): `s3` (SeaweedFS, started
//!   on the first ask, or the one the `AWS_*` variables name), `proxy` (a
//!   fault proxy in front of it: `{"id", "url"}`), `fault ID
//!   pass|silent|reset`, `dynamodb` (dynalite and a fresh table), `azure`
//!   (Azurite), `gcs` (fake-gcs-server behind its front).
//! - `package_fixtures turns FILE`: judges turns taken on one key of limit
//!   1 (JSON lines `{"who", "token", "sent", "acked", "start", "end"}`, in
//!   microseconds of one monotonic clock: the grant's attempt sent and
//!   answered, the stretch its process believed it held the key) with
//!   `s3_lease::testing::history`; prints what it found, exits 1 on a
//!   violation.

use anyhow::{bail, Context, Result};
use host_test::fault_proxy::{Fault, FaultProxy};
use host_test::{azurite, dynalite, fake_gcs, server};
use s3_lease::testing::history;
use serde_json::{json, Value};
use std::io::{BufRead, Write};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["serve"] => serve(),
        ["turns", file] => turns(file),
        _ => Err(anyhow::anyhow!(
            "usage: package_fixtures serve | package_fixtures turns FILE"
        )),
    };
    if let Err(e) = result {
        eprintln!("package_fixtures: {e:#}");
        std::process::exit(2);
    }
}

fn serve() -> Result<()> {
    let mut proxies: Vec<FaultProxy> = Vec::new();
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let answer =
            answer(&words, &mut proxies).unwrap_or_else(|e| json!({ "error": format!("{e:#}") }));
        let mut out = stdout.lock();
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(())
}

fn answer(words: &[&str], proxies: &mut Vec<FaultProxy>) -> Result<Value> {
    Ok(match words {
        ["s3"] => {
            let e = server::shared();
            json!({
                "url": e.url, "region": e.region, "bucket": e.bucket,
                "access_key_id": e.access_key_id, "secret_access_key": e.secret_access_key,
            })
        }
        ["proxy"] => {
            let proxy = FaultProxy::in_front_of(&server::shared().url)?;
            let url = proxy.url();
            proxies.push(proxy);
            json!({ "id": proxies.len() - 1, "url": url })
        }
        ["fault", id, fault] => {
            let proxy = proxies.get(id.parse::<usize>()?).context("no such proxy")?;
            proxy.set(match *fault {
                "pass" => Fault::Pass,
                "silent" => Fault::Silent,
                "reset" => Fault::Reset,
                other => bail!("no fault {other:?}"),
            });
            json!({ "ok": true })
        }
        ["dynamodb"] => {
            let d = dynalite::shared();
            let table = d.fresh_table("package")?;
            json!({
                "url": d.url, "region": d.region, "table": table,
                "access_key_id": d.access_key_id, "secret_access_key": d.secret_access_key,
            })
        }
        ["azure"] => {
            let a = azurite::shared();
            json!({ "connection_string": a.connection_string(), "container": a.container })
        }
        ["gcs"] => {
            let g = fake_gcs::endpoint();
            json!({ "url": g.url, "bucket": g.bucket })
        }
        _ => bail!("unknown request {words:?}"),
    })
}

fn turns(file: &str) -> Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?;
    let mut h = history::History::new(vec![history::KeySpec {
        name: "the package's processes' key".into(),
        limit: 1,
        fair: false,
        exclusion_checked: true,
        exact_acks: false,
    }]);
    let field = |run: &Value, name: &str| -> Result<u64> {
        run[name]
            .as_u64()
            .with_context(|| format!("a turn without `{name}`: {run}"))
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let run: Value = serde_json::from_str(line)?;
        let who = history::Who {
            actor: usize::try_from(field(&run, "who")?)?,
            generation: 0,
        };
        let token = field(&run, "token")?;
        h.grants.push(history::Grant {
            key: 0,
            who,
            token,
            sent: field(&run, "sent")?,
            acked: field(&run, "acked")?,
        });
        h.terms.push(history::Term {
            key: 0,
            who,
            token,
            start: field(&run, "start")?,
            end: field(&run, "end")?,
            ended_by: "its release".into(),
        });
    }
    let checked = history::check(&h);
    println!(
        "package_fixtures: {} turns judged, {} violations",
        h.terms.len(),
        checked.violations.len()
    );
    for v in &checked.violations {
        println!("  {v}");
    }
    if !checked.violations.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}

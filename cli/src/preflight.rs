//! `s3-lease preflight`: the store preflight as a table or JSON. Exits 0 when
//! the configured strategy and expiry clock are safe on the store, and
//! `STORE_UNSAFE` when they are not (naming what failed, and what would be
//! safe instead), so a deploy script can refuse a store before relying on it.

use crate::exit::{Failure, STORE_UNSAFE};
use crate::out::say;
use s3_lease_host::blocking::Client;
use s3_lease_host::{ExpiryClock, PreflightReport, StoreConfig, Strategy, Verdict};

use serde_json::{json, Value};

pub fn preflight(
    client: &Client,
    strategy: Strategy,
    clock: ExpiryClock,
    as_json: bool,
) -> Result<i32, Failure> {
    let report = client.preflight()?;
    if as_json {
        say!("{}", report_json(&report));
    } else {
        print_report(&report, strategy, clock);
    }
    if report.config_safe {
        Ok(0)
    } else {
        Err(Failure::new(
            STORE_UNSAFE,
            unsafe_summary(&report, strategy),
        ))
    }
}

/// For `run` and `elect` with `--check-store`: the elector would only
/// retry a refused grant, so the verdict is taken before campaigning (the
/// client keeps it, and gates every grant by it).
pub fn require_safe_store(client: &Client, strategy: Strategy) -> Result<(), Failure> {
    let report = client.preflight()?;
    if report.config_safe {
        Ok(())
    } else {
        Err(Failure::new(
            STORE_UNSAFE,
            unsafe_summary(&report, strategy),
        ))
    }
}

/// The expiry clock a client of `config` judges expiry by: the one
/// configured, else the component's default (`observed` on a table, whose
/// items carry no write time; `server` elsewhere).
pub fn clock_in_use(config: &StoreConfig) -> ExpiryClock {
    config.expiry_clock.unwrap_or(if config.table().is_some() {
        ExpiryClock::Observed
    } else {
        ExpiryClock::Server
    })
}

/// The table. A capability that did not pass but that this configuration
/// does not need reads as such, not `FAIL`: `FAIL` is kept for what makes
/// the store unsafe for it. The report says which strategies and clocks
/// are safe, not which result rules out which; but when the configuration
/// is safe, no result rules it out, so every one that did not pass is one
/// it does not need. (On an unsafe store every failure reads `FAIL`.)
fn print_report(report: &PreflightReport, strategy: Strategy, clock: ExpiryClock) {
    let not_needed = format!("not needed by {}, {} clock", strategy.name(), clock.name());
    let mut rows = vec![[
        "CAPABILITY".to_string(),
        "VERDICT".into(),
        "STATUS".into(),
        "CODE".into(),
        "DETAIL".into(),
    ]];
    for r in &report.results {
        let verdict = match (r.verdict, r.silent) {
            // A silent failure rules out every configuration.
            (Verdict::Fail, true) => "FAIL (silent)".to_string(),
            (Verdict::Fail, false) if report.config_safe => format!("no ({not_needed})"),
            (Verdict::Fail, false) => "FAIL".to_string(),
            (v, _) => v.name().to_string(),
        };
        rows.push([
            r.capability.name().to_string(),
            verdict,
            r.status.map_or("-".into(), |s| s.to_string()),
            if r.code.is_empty() {
                "-".into()
            } else {
                r.code.clone()
            },
            r.detail.clone(),
        ]);
    }
    crate::commands::print_table(&rows);
    say!();
    if let Some(offset) = &report.clock_offset {
        say!(
            "clock offset:        {:+.1} s (± {:.1} s; positive: this machine is ahead)",
            offset.offset_ms as f64 / 1000.0,
            offset.uncertainty_ms as f64 / 1000.0
        );
    }
    let names = |list: Vec<&'static str>| {
        if list.is_empty() {
            "none".to_string()
        } else {
            list.join(", ")
        }
    };
    say!(
        "safe strategies:     {}",
        names(report.safe_strategies.iter().map(|s| s.name()).collect())
    );
    say!(
        "safe expiry clocks:  {}",
        names(report.safe_expiry_clocks.iter().map(|c| c.name()).collect())
    );
    say!(
        "recommended:         {}",
        report
            .recommended_strategy
            .map_or("none: no strategy is safe on this store", |s| s.name())
    );
    say!(
        "this configuration:  {}",
        if report.config_safe {
            "safe"
        } else {
            "NOT safe"
        }
    );
    say!("requests sent:       {}", report.requests);
    for note in &report.notes {
        say!("note: {note}");
    }
}

/// Why the configured strategy is refused, in one line.
fn unsafe_summary(report: &PreflightReport, strategy: Strategy) -> String {
    // A silent failure (a condition ignored) is the reason nothing is safe;
    // without one, what failed or stayed unknown is.
    let silent = report.results.iter().any(|r| r.silent);
    let failed: Vec<String> = report
        .results
        .iter()
        .filter(|r| {
            if silent {
                r.silent
            } else {
                r.verdict != Verdict::Pass
            }
        })
        .map(|r| {
            let how = if r.silent { " (silent)" } else { "" };
            format!("{} {}{how}", r.capability.name(), r.verdict.name())
        })
        .collect();
    let instead = match report.recommended_strategy {
        Some(s) if s != strategy => format!("; {} is safe here", s.name()),
        Some(_) => "; another expiry clock is safe here".into(),
        None => "; no strategy is safe here".into(),
    };
    format!(
        "the store is not safe for {} with this configuration ({}){instead}",
        strategy.name(),
        failed.join(", ")
    )
}

fn report_json(report: &PreflightReport) -> Value {
    let results: Vec<Value> = report
        .results
        .iter()
        .map(|r| {
            json!({
                "capability": r.capability.name(),
                "verdict": r.verdict.name(),
                "status": r.status,
                "code": r.code,
                "detail": r.detail,
                "silent": r.silent,
            })
        })
        .collect();
    json!({
        "config_safe": report.config_safe,
        "results": results,
        "clock_offset": report.clock_offset.as_ref().map(|o| json!({
            "offset_ms": o.offset_ms,
            "uncertainty_ms": o.uncertainty_ms,
        })),
        "safe_strategies": report.safe_strategies.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "safe_expiry_clocks": report.safe_expiry_clocks.iter().map(|c| c.name()).collect::<Vec<_>>(),
        "recommended_strategy": report.recommended_strategy.map(|s| s.name()),
        "notes": report.notes,
        "requests": report.requests,
    })
}

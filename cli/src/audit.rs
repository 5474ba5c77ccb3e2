//! `s3-lease audit`: a key's grant log (docs/audit.md). `audit KEY` prints
//! its timeline, `audit verify KEY` proves from the store alone that no two
//! holders overlapped (exit 0) or names what it found (`AUDIT_OVERLAP`,
//! `AUDIT_UNPROVEN`), `audit prune KEY --before TIME` deletes old records.
//! Every time printed is the store's clock, as the records hold it; what
//! the records say (holders, details) was read from the store and is
//! escaped before it reaches a terminal.

use crate::args::{AuditArgs, AuditCmd};
use crate::commands::print_table;
use crate::exit::{self, Failure};
use crate::log::{rfc3339_ms, shown};
use crate::out::say;
use s3_lease_host::blocking::Client;
use s3_lease_host::{AuditEntry, AuditReport};
use serde_json::{json, Value};

pub fn audit(client: &Client, args: AuditArgs, as_json: bool) -> Result<i32, Failure> {
    match args.op {
        Some(AuditCmd::Verify { key, fenced }) => verify(client, &key, fenced.as_deref(), as_json),
        Some(AuditCmd::Prune { key, before }) => prune(client, &key, before, as_json),
        None => {
            // clap requires KEY without a subcommand.
            let key = args.key.unwrap_or_default();
            timeline(client, &key, args.since, as_json)
        }
    }
}

fn timeline(client: &Client, key: &str, since: Option<u64>, as_json: bool) -> Result<i32, Failure> {
    let entries = client.audit(key, since)?;
    if as_json {
        say!("{}", Value::Array(entries.iter().map(entry_json).collect()));
        return Ok(0);
    }
    let time = |ms: Option<u64>| ms.map_or("-".to_string(), rfc3339_ms);
    let mut rows = vec![[
        "TOKEN".to_string(),
        "HOLDER".into(),
        "GRANTED".into(),
        "ENDED".into(),
        "AT".into(),
        "HELD".into(),
        "WRITTEN BY".into(),
    ]];
    for e in &entries {
        let written_by = if e.backfilled {
            format!("{} (back-filled)", shown(&e.written_by))
        } else {
            shown(&e.written_by).into_owned()
        };
        rows.push([
            e.token.to_string(),
            shown(&e.holder_id).into_owned(),
            time(e.granted_at_ms),
            e.ended.name().to_string(),
            time(e.ended_at_ms),
            e.held_ms.map_or("-".to_string(), held),
            written_by,
        ]);
    }
    print_table(&rows);
    Ok(0)
}

/// `1m23.4s`, as people read a span.
fn held(ms: u64) -> String {
    let (minutes, rest) = (ms / 60_000, ms % 60_000);
    let seconds = format!("{}.{}s", rest / 1000, rest % 1000 / 100);
    match minutes {
        0 => seconds,
        m if m < 60 => format!("{m}m{seconds}"),
        m => format!("{}h{}m{seconds}", m / 60, m % 60),
    }
}

fn entry_json(e: &AuditEntry) -> Value {
    json!({
        "token": e.token,
        "holder": e.holder_id,
        "ttl_ms": e.ttl_ms,
        "granted_at_ms": e.granted_at_ms,
        "ended": e.ended.name(),
        "ended_at_ms": e.ended_at_ms,
        "held_ms": e.held_ms,
        "written_by": e.written_by,
        "backfilled": e.backfilled,
    })
}

fn verify(client: &Client, key: &str, fenced: Option<&str>, as_json: bool) -> Result<i32, Failure> {
    let report = client.audit_verify(key, fenced)?;
    if as_json {
        say!("{}", report_json(&report));
    } else {
        print_report(&report);
    }
    match (report.proven(), report.overlapped) {
        (true, _) => Ok(0),
        (false, true) => Err(Failure::new(
            exit::AUDIT_OVERLAP,
            format!(
                "the grant log of {} shows two holders at once (or a token granted twice): {}",
                shown(key),
                first_finding(&report)
            ),
        )),
        (false, false) => Err(Failure::new(
            exit::AUDIT_UNPROVEN,
            format!(
                "the grant log of {} does not prove its holders never overlapped: {}",
                shown(key),
                first_finding(&report)
            ),
        )),
    }
}

fn first_finding(report: &AuditReport) -> String {
    let n = report.findings.len();
    match report.findings.first() {
        Some(f) => format!(
            "{} at token {}{}",
            f.kind.name(),
            f.token,
            if n > 1 {
                format!(" (and {} more)", n - 1)
            } else {
                String::new()
            }
        ),
        None => String::new(),
    }
}

fn print_report(r: &AuditReport) {
    let tokens = if r.first_token > r.last_token {
        "no tokens".to_string()
    } else {
        format!("tokens {} to {}", r.first_token, r.last_token)
    };
    say!(
        "{}: {tokens}, {} grants ({} back-filled)",
        shown(&r.key),
        r.grants,
        r.backfilled
    );
    if r.proven() {
        say!("proven: no two holders overlapped");
        return;
    }
    for f in &r.findings {
        say!(
            "{} at token {}: {}",
            f.kind.name(),
            f.token,
            shown(&f.detail)
        );
        for e in &f.evidence {
            say!("  evidence: {}", shown(e));
        }
    }
}

fn report_json(r: &AuditReport) -> Value {
    json!({
        "key": r.key,
        "first_token": r.first_token,
        "last_token": r.last_token,
        "grants": r.grants,
        "backfilled": r.backfilled,
        "proven": r.proven(),
        "overlapped": r.overlapped,
        "findings": r.findings.iter().map(|f| json!({
            "kind": f.kind.name(),
            "token": f.token,
            "detail": f.detail,
            "evidence": f.evidence,
        })).collect::<Vec<_>>(),
    })
}

fn prune(client: &Client, key: &str, before_ms: u64, as_json: bool) -> Result<i32, Failure> {
    let pruned = client.audit_prune(key, before_ms)?;
    if as_json {
        say!(
            "{}",
            json!({"key": key, "first_token": pruned.first_token, "below_token": pruned.below_token})
        );
    } else if pruned.first_token >= pruned.below_token {
        say!(
            "{}: nothing to prune; the log starts at token {}",
            shown(key),
            pruned.below_token
        );
    } else {
        say!(
            "{}: pruned tokens {} to {}; the log starts at token {}",
            shown(key),
            pruned.first_token,
            pruned.below_token - 1,
            pruned.below_token
        );
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_held_read_as_people_read_them() {
        assert_eq!(held(1_234), "1.2s");
        assert_eq!(held(83_400), "1m23.4s");
        assert_eq!(held(3_723_000), "1h2m3.0s");
    }
}

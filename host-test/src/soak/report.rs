//! What a soak prints: operations, faults by kind, violations, the share
//! of time a leader existed, failover times, and what the semaphore keys
//! saw (slots granted, the most holders at once against each limit, the
//! grants checked against the queue's order).

use super::record::{Counts, Micros, Record, Violation};
use super::schedule::FaultKind;
use super::{key_name, SoakConfig};
use s3_lease::testing::history::{Checked, FencedOutcome, History};
use std::collections::BTreeMap;

/// Counts gathered from the members and the plan.
#[derive(Debug, Default)]
pub struct Stats {
    /// What the members counted.
    pub counts: Counts,
    pub faults: Vec<(FaultKind, u64)>,
    pub plan_applied: u64,
    pub plan_skipped: u64,
}

/// The verdict, and the summary it is printed with.
#[derive(Debug)]
pub struct Report {
    pub config: SoakConfig,
    pub checked: Checked,
    /// One fact per line.
    pub summary: Vec<String>,
}

/// The `q` quantile of `sorted` (nearest rank), 0 when empty.
pub fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The share of `[0, t_end]` covered by the union of `spans`.
fn covered(mut spans: Vec<(Micros, Micros)>, t_end: Micros) -> f64 {
    spans.sort();
    let (mut total, mut reach) = (0, 0);
    for (start, end) in spans {
        let (start, end) = (start.max(reach), end.min(t_end));
        if end > start {
            total += end - start;
            reach = end;
        }
    }
    if t_end > 0 {
        total as f64 / t_end as f64
    } else {
        0.0
    }
}

fn describe(name: &str, sample: &[u64]) -> String {
    format!(
        "failover after {name}: n={} p50={} ms p99={} ms max={} ms",
        sample.len(),
        quantile(sample, 0.5),
        quantile(sample, 0.99),
        sample.last().copied().unwrap_or(0)
    )
}

impl Report {
    pub fn new(config: SoakConfig, record: &Record, checked: Checked, stats: Stats) -> Self {
        let summary = summary(&config, record, &checked, &stats);
        Report {
            config,
            checked,
            summary,
        }
    }

    pub fn violations(&self) -> &[Violation] {
        &self.checked.violations
    }

    pub fn passed(&self) -> bool {
        self.checked.violations.is_empty()
    }

    /// Prints the summary; on failure, the violations (the first 50) and
    /// how to replay.
    pub fn print(&self) {
        for line in &self.summary {
            println!("soak: {line}");
        }
        if self.passed() {
            return;
        }
        for v in self.checked.violations.iter().take(50) {
            println!("soak: VIOLATION {v}");
        }
        if self.checked.violations.len() > 50 {
            println!("soak: ... and {} more", self.checked.violations.len() - 50);
        }
        println!(
            "soak: FAILED; replay the plan with --seed {}",
            self.config.seed
        );
    }
}

/// The summary, one fact per line.
fn summary(c: &SoakConfig, record: &Record, checked: &Checked, stats: &Stats) -> Vec<String> {
    let (history, s, keys) = (&record.history, &stats.counts, c.keys);
    let outcome = |f: fn(&FencedOutcome) -> bool, zombie: bool| {
        let ops = history.fenced.iter().filter(|op| !zombie || op.zombie);
        ops.filter(|op| f(&op.outcome)).count()
    };
    let written = outcome(|o| matches!(o, FencedOutcome::Written { .. }), false);
    let deleted = outcome(|o| matches!(o, FencedOutcome::Deleted), false);
    let fenced = outcome(|o| matches!(o, FencedOutcome::Fenced { .. }), false);
    let unknown = outcome(|o| matches!(o, FencedOutcome::Unknown(_)), false);
    let zombie = outcome(|_| true, true);
    let zombie_refused = outcome(|o| matches!(o, FencedOutcome::Fenced { .. }), true);
    let elected_terms = history.terms.iter().filter(|t| t.key < keys);
    let mut lines = vec![
        format!(
            "seed {}: {} processes x {} keys for {} s, request fault rate {}{}",
            c.seed,
            c.instances,
            c.keys,
            c.duration.as_secs(),
            c.request_fault_rate,
            if c.no_watchdog {
                ", --no-watchdog (members ignore leading-until)"
            } else {
                ""
            }
        ),
        format!(
            "operations: {} terms ({} grants), {} elector events, {} fenced calls ({written} written, {deleted} deleted, {fenced} fenced, {unknown} unknown), {} S3 requests",
            elected_terms.count(),
            history.grants.iter().filter(|g| g.key < keys).count(),
            s.events,
            history.fenced.len(),
            s.requests
        ),
        format!(
            "writes after a pause with the old lease: {zombie} ({zombie_refused} refused by the fence)"
        ),
    ];
    let total: u64 = stats.faults.iter().map(|(_, n)| n).sum();
    lines.push(format!("faults injected: {total}"));
    for (kind, n) in &stats.faults {
        lines.push(format!("  {:<38} {n}", kind.name()));
    }
    lines.push(format!(
        "elector errors (retried by the elector): {:?}",
        s.step_errors
    ));
    let t_end = u64::try_from(c.duration.as_micros()).unwrap_or(u64::MAX);
    let availability: Vec<f64> = (0..keys)
        .map(|k| {
            let terms = history.terms.iter().filter(|t| t.key == k);
            covered(terms.map(|t| (t.start, t.end)).collect(), t_end)
        })
        .collect();
    let avail: Vec<String> = availability
        .iter()
        .enumerate()
        .map(|(k, a)| format!("{} {:.1}%", key_name(k), 100.0 * a))
        .collect();
    let mean = availability.iter().sum::<f64>() / availability.len().max(1) as f64;
    lines.push(format!(
        "a leader existed {:.1}% of the time ({})",
        100.0 * mean,
        avail.join(", ")
    ));
    lines.extend(failover_lines(record));
    lines.extend(slot_lines(history, keys, s, checked));
    lines.push(format!(
        "checked: {} fenced objects ({} calls) linearizable; {} overlaps tolerated on holder-clock keys",
        checked.objects, checked.object_ops, checked.tolerated_overlaps
    ));
    let mut by_invariant: BTreeMap<&str, usize> = BTreeMap::new();
    for v in &checked.violations {
        *by_invariant.entry(v.invariant).or_default() += 1;
    }
    lines.push(format!(
        "violations: {} {:?}",
        checked.violations.len(),
        by_invariant
    ));
    lines
}

/// From a crash or pause of a leader to the next grant on its key.
fn failover_lines(record: &Record) -> Vec<String> {
    let (mut crash, mut pause, mut unmeasured) = (Vec::new(), Vec::new(), 0);
    for f in &record.leader_faults {
        let terms = record.history.terms.iter();
        let next = terms
            .filter(|t| t.key == f.key && t.start >= f.at)
            .map(|t| t.start)
            .min();
        match next {
            Some(at) if f.crash => crash.push(at.saturating_sub(f.at) / 1_000),
            Some(at) => pause.push(at.saturating_sub(f.at) / 1_000),
            None => unmeasured += 1,
        }
    }
    let mut all = [crash.clone(), pause.clone()].concat();
    for sample in [&mut crash, &mut pause, &mut all] {
        sample.sort_unstable();
    }
    let mut lines = vec![
        describe("a leader's crash or pause", &all),
        format!("  {}", describe("a crash", &crash)),
        format!("  {}", describe("a pause", &pause)),
    ];
    if unmeasured > 0 {
        lines.push(format!(
            "  ({unmeasured} leader faults had no successor before the end)"
        ));
    }
    lines
}

/// The semaphore keys' lines (none without semaphore keys): they follow
/// the `keys` elected keys in the history.
fn slot_lines(history: &History, keys: usize, s: &Counts, checked: &Checked) -> Vec<String> {
    let slot_keys = &history.keys[keys.min(history.keys.len())..];
    if slot_keys.is_empty() {
        return Vec::new();
    }
    let slot_grants = history.grants.iter().filter(|g| g.key >= keys).count();
    let slot_terms = history.terms.iter().filter(|t| t.key >= keys).count();
    let mut lines = vec![
        format!(
            "semaphores: {slot_grants} slots granted, {slot_terms} believed slot terms; attempts answered granted {}, queued {}, full {}, failed {}",
            s.granted, s.queued, s.full, s.failed
        ),
        format!(
            "  slots given back {} ({} of those releases failed); lost before that: {} taken, {} expired (guard); {} granted past the guard's deadline{}",
            s.released,
            s.release_failed,
            s.lost_taken,
            s.lost_expired,
            s.never_held,
            if s.left_queue > 0 {
                format!("; places given up on purpose {}", s.left_queue)
            } else {
                String::new()
            }
        ),
    ];
    for (j, spec) in slot_keys.iter().enumerate() {
        let key = keys + j;
        let mut wait_ms: Vec<u64> = history
            .waits
            .iter()
            .filter(|w| w.key == key)
            .filter_map(|w| w.granted.map(|(_, at, _)| (at - w.start) / 1_000))
            .collect();
        wait_ms.sort_unstable();
        let max = checked.max_open.get(key).copied().unwrap_or(0);
        lines.push(format!(
            "  {}: {} grants, {} terms, at most {max} believed holders at once (limit {}), wait p50 {} ms p99 {} ms",
            spec.name,
            history.grants.iter().filter(|g| g.key == key).count(),
            history.terms.iter().filter(|t| t.key == key).count(),
            spec.limit,
            quantile(&wait_ms, 0.5),
            quantile(&wait_ms, 0.99)
        ));
    }
    if slot_keys.iter().any(|k| k.fair) {
        let c = checked;
        lines.push(format!(
            "  fair queues: {} waits joined a queue ({} kept their place throughout); {} grants checked against the queue's order, {} of them made while an earlier waiter still waited",
            c.fair_waits, c.fair_waits_kept, c.fair_grants_checked, c.fair_grants_past_a_waiter
        ));
    }
    lines
}

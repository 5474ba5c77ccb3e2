//! What a soak prints: operations, faults by kind, violations, the share
//! of time a leader existed, failover times, and what the semaphore keys
//! saw (slots granted, the most holders at once against each limit, the
//! grants checked against the queue's order).

use super::record::{Counts, Micros, Record, Violation};
use super::schedule::FaultKind;
use super::{key_name, SoakConfig};
use s3_lease::testing::history::{Checked, FencedOutcome};
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

#[derive(Debug, Default)]
pub struct FencedCounts {
    pub written: u64,
    pub deleted: u64,
    pub fenced: u64,
    pub unknown: u64,
    /// Writes with a lease from before a pause past it, made without stepping.
    pub zombie: u64,
    pub zombie_refused: u64,
}

#[derive(Debug)]
pub struct Report {
    pub config: SoakConfig,
    pub stats: Stats,
    pub checked: Checked,
    /// Elected keys, before the semaphore keys in `checked.max_open`.
    pub history_keys: usize,
    pub grants: usize,
    /// Believed terms of leadership, all keys.
    pub terms: usize,
    pub fenced: FencedCounts,
    /// Per key: the share of the run in which some member believed it led.
    pub availability: Vec<f64>,
    /// From a crash or pause of a leader to the next grant on its key, ms.
    pub failover_crash_ms: Vec<u64>,
    pub failover_pause_ms: Vec<u64>,
    /// Leader faults with no later grant before the end of the run.
    pub failover_unmeasured: usize,
    /// Per semaphore key: its name and limit, slots granted, believed terms.
    pub slot_keys: Vec<SlotKeyFigures>,
}

#[derive(Debug)]
pub struct SlotKeyFigures {
    pub name: String,
    pub limit: u32,
    pub fair: bool,
    pub grants: usize,
    pub terms: usize,
    /// Per granted wait, from its first attempt to its grant's answer, ms.
    pub wait_ms: Vec<u64>,
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

impl Report {
    pub fn new(config: SoakConfig, record: &Record, checked: Checked, stats: Stats) -> Self {
        let history = &record.history;
        let keys = config.keys;
        let t_end = u64::try_from(config.duration.as_micros()).unwrap_or(u64::MAX);
        let mut fenced = FencedCounts::default();
        for op in &history.fenced {
            match op.outcome {
                FencedOutcome::Written { .. } => fenced.written += 1,
                FencedOutcome::Deleted => fenced.deleted += 1,
                FencedOutcome::Fenced { .. } => fenced.fenced += 1,
                FencedOutcome::Unknown(_) => fenced.unknown += 1,
            }
            if op.zombie {
                fenced.zombie += 1;
                if matches!(op.outcome, FencedOutcome::Fenced { .. }) {
                    fenced.zombie_refused += 1;
                }
            }
        }
        let availability = (0..keys)
            .map(|k| {
                let spans = history
                    .terms
                    .iter()
                    .filter(|t| t.key == k)
                    .map(|t| (t.start, t.end))
                    .collect();
                covered(spans, t_end)
            })
            .collect();
        let (mut crash, mut pause, mut unmeasured) = (Vec::new(), Vec::new(), 0);
        for f in &record.leader_faults {
            let next = history
                .terms
                .iter()
                .filter(|t| t.key == f.key && t.start >= f.at)
                .map(|t| t.start)
                .min();
            match next {
                Some(at) => {
                    let ms = at.saturating_sub(f.at) / 1_000;
                    if f.crash {
                        crash.push(ms)
                    } else {
                        pause.push(ms)
                    }
                }
                None => unmeasured += 1,
            }
        }
        crash.sort_unstable();
        pause.sort_unstable();
        let slot_keys = history.keys[keys.min(history.keys.len())..]
            .iter()
            .enumerate()
            .map(|(j, spec)| {
                let key = keys + j;
                let mut wait_ms: Vec<u64> = history
                    .waits
                    .iter()
                    .filter(|w| w.key == key)
                    .filter_map(|w| w.granted.map(|(_, at, _)| (at - w.start) / 1_000))
                    .collect();
                wait_ms.sort_unstable();
                SlotKeyFigures {
                    name: spec.name.clone(),
                    limit: spec.limit,
                    fair: spec.fair,
                    grants: history.grants.iter().filter(|g| g.key == key).count(),
                    terms: history.terms.iter().filter(|t| t.key == key).count(),
                    wait_ms,
                }
            })
            .collect();
        Report {
            config,
            stats,
            checked,
            history_keys: keys,
            grants: history.grants.iter().filter(|g| g.key < keys).count(),
            terms: history.terms.iter().filter(|t| t.key < keys).count(),
            fenced,
            availability,
            failover_crash_ms: crash,
            failover_pause_ms: pause,
            failover_unmeasured: unmeasured,
            slot_keys,
        }
    }

    pub fn violations(&self) -> &[Violation] {
        &self.checked.violations
    }

    pub fn passed(&self) -> bool {
        self.checked.violations.is_empty()
    }

    pub fn fenced_calls(&self) -> u64 {
        let f = &self.fenced;
        f.written + f.deleted + f.fenced + f.unknown
    }

    pub fn failover_all_ms(&self) -> Vec<u64> {
        let mut all = [
            self.failover_crash_ms.clone(),
            self.failover_pause_ms.clone(),
        ]
        .concat();
        all.sort_unstable();
        all
    }

    /// The summary, one fact per line.
    pub fn summary(&self) -> Vec<String> {
        let c = &self.config;
        let s = &self.stats.counts;
        let f = &self.fenced;
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
                "operations: {} terms ({} grants), {} elector events, {} fenced calls ({} written, {} deleted, {} fenced, {} unknown), {} S3 requests",
                self.terms,
                self.grants,
                s.events,
                self.fenced_calls(),
                f.written,
                f.deleted,
                f.fenced,
                f.unknown,
                s.requests
            ),
            format!(
                "writes after a pause with the old lease: {} ({} refused by the fence)",
                f.zombie, f.zombie_refused
            ),
        ];
        let faults = &self.stats.faults;
        let total: u64 = faults.iter().map(|(_, n)| n).sum();
        lines.push(format!("faults injected: {total}"));
        for (kind, n) in faults {
            lines.push(format!("  {:<38} {n}", kind.name()));
        }
        lines.push(format!(
            "elector errors (retried by the elector): {:?}",
            s.step_errors
        ));
        let avail: Vec<String> = self
            .availability
            .iter()
            .enumerate()
            .map(|(k, a)| format!("{} {:.1}%", key_name(k), 100.0 * a))
            .collect();
        let mean = self.availability.iter().sum::<f64>() / self.availability.len().max(1) as f64;
        lines.push(format!(
            "a leader existed {:.1}% of the time ({})",
            100.0 * mean,
            avail.join(", ")
        ));
        let describe = |name: &str, sample: &[u64]| {
            format!(
                "failover after {name}: n={} p50={} ms p99={} ms max={} ms",
                sample.len(),
                quantile(sample, 0.5),
                quantile(sample, 0.99),
                sample.last().copied().unwrap_or(0)
            )
        };
        lines.push(describe(
            "a leader's crash or pause",
            &self.failover_all_ms(),
        ));
        lines.push(format!(
            "  {}",
            describe("a crash", &self.failover_crash_ms)
        ));
        lines.push(format!(
            "  {}",
            describe("a pause", &self.failover_pause_ms)
        ));
        if self.failover_unmeasured > 0 {
            lines.push(format!(
                "  ({} leader faults had no successor before the end)",
                self.failover_unmeasured
            ));
        }
        lines.extend(self.slot_summary());
        lines.push(format!(
            "checked: {} fenced objects ({} calls) linearizable; {} overlaps tolerated on holder-clock keys",
            self.checked.objects, self.checked.object_ops, self.checked.tolerated_overlaps
        ));
        let mut by_invariant: BTreeMap<&str, usize> = BTreeMap::new();
        for v in &self.checked.violations {
            *by_invariant.entry(v.invariant).or_default() += 1;
        }
        lines.push(format!(
            "violations: {} {:?}",
            self.checked.violations.len(),
            by_invariant
        ));
        lines
    }

    /// The semaphore keys' lines (none without semaphore keys).
    fn slot_summary(&self) -> Vec<String> {
        if self.slot_keys.is_empty() {
            return Vec::new();
        }
        let s = &self.stats.counts;
        let grants: usize = self.slot_keys.iter().map(|k| k.grants).sum();
        let terms: usize = self.slot_keys.iter().map(|k| k.terms).sum();
        let mut lines = vec![
            format!(
                "semaphores: {grants} slots granted, {terms} believed slot terms; attempts answered granted {}, queued {}, full {}, failed {}",
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
        for (j, k) in self.slot_keys.iter().enumerate() {
            let max = self
                .checked
                .max_open
                .get(self.history_keys + j)
                .copied()
                .unwrap_or(0);
            lines.push(format!(
                "  {}: {} grants, {} terms, at most {max} believed holders at once (limit {}), wait p50 {} ms p99 {} ms",
                k.name,
                k.grants,
                k.terms,
                k.limit,
                quantile(&k.wait_ms, 0.5),
                quantile(&k.wait_ms, 0.99)
            ));
        }
        if self.slot_keys.iter().any(|k| k.fair) {
            let c = &self.checked;
            lines.push(format!(
                "  fair queues: {} waits joined a queue ({} kept their place throughout); {} grants checked against the queue's order, {} of them made while an earlier waiter still waited",
                c.fair_waits, c.fair_waits_kept, c.fair_grants_checked, c.fair_grants_past_a_waiter
            ));
        }
        lines
    }

    /// Prints the summary; on failure, the violations (the first 50) and
    /// how to replay.
    pub fn print(&self) {
        for line in self.summary() {
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

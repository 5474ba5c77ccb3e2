//! The proof, from the store alone: a key's records (`read::Log`) and its
//! lock object as read now. It shows, or finds where it cannot show:
//!
//! - tokens rise with no repeat: no token has two grants (a collision
//!   record, or a grant's record that names another holder than the one
//!   its successor replaced), and no grant replaced a token at or above
//!   its own;
//! - no grant raced another: each grant replaced the token just below its
//!   own, or tokens no record names (an unexplained gap, below);
//! - each grant came after the lease it replaced had ended: released, or
//!   expired by the expiry rule's own margin on the store's clock (the
//!   lease's last write's `Last-Modified`, or the `Date` on which the
//!   grantee first saw it unchanged, plus its ttl plus 2 s, before the
//!   `Date` of the read the grant decided on), or taken over by its own
//!   holder id (a restarted process reclaiming its lock or slot, as
//!   documented);
//! - a semaphore's grant left fewer than its limit of other holders live;
//! - every token in the log is explained: by its record, a back-fill, or
//!   what a later grant (or the lock object) says of it.
//!
//! Under these assumptions: the store's conditional writes (a grant's
//! compare-and-swap is what makes its `previous` the state it replaced),
//! its clock (the times above are all its own, and rate is all that must
//! hold of it), and the records being the grantees' (anyone who can write
//! the bucket can forge them, as they can the lock objects).

use crate::prelude::*;

use super::names::{record_key, Kind};
use super::read::{Log, GAP_RUN};
use super::record::{PreviousHolder, Record};
use crate::expiry::SERVER_SLACK_MS;
use crate::lock_object::LockState;
use crate::strategy::floor::FLOOR_STRIDE;

/// What a finding shows: the contract's names, defined once in `keep`.
pub use s3_lease_keep::vocabulary::AuditFindingKind as FindingKind;

/// One thing verify found, with its evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    /// The token it is about.
    pub token: u64,
    /// What was seen, with the times (store clock, ms since the epoch).
    pub detail: String,
    /// The records (or objects) it rests on, by full object key.
    pub evidence: Vec<String>,
}

/// What verify found of one key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    pub key: String,
    /// The tokens examined (none when `first > last`).
    pub first_token: u64,
    pub last_token: u64,
    /// Grant records found, and those of them back-filled.
    pub grants: u64,
    pub backfilled: u64,
    pub findings: Vec<Finding>,
}

impl Report {
    /// No finding: the log proves no two holders overlapped.
    pub fn proven(&self) -> bool {
        self.findings.is_empty()
    }

    /// Some finding shows an overlap.
    pub fn overlapped(&self) -> bool {
        self.findings.iter().any(|f| f.kind.is_overlap())
    }
}

/// Verifies `key`'s log, `dir` its folder, against the lock object as
/// read now (`current`; `None` when there is none).
pub fn verify(key: &str, dir: &str, log: &Log, current: Option<&LockState>) -> Report {
    let mut v = Verifier {
        dir,
        log,
        findings: Vec::new(),
        floor_start: None,
    };
    let last = log
        .found
        .iter()
        .map(|f| f.token)
        .max()
        .unwrap_or(0)
        .max(log.until);
    let mut report = Report {
        key: key.to_string(),
        first_token: log.from,
        last_token: last,
        ..Report::default()
    };
    for f in &log.found {
        if let Err(reason) = &f.record {
            v.find(
                FindingKind::Unreadable,
                f.token,
                format!(
                    "the {} record of token {} cannot be read: {reason}",
                    f.kind.name(),
                    f.token
                ),
                vec![f.name.clone()],
            );
        }
    }
    // A key whose first record is of a grant that created its lock object
    // at a floor stride's first token (`strategy::floor`): its floor was
    // raised before any grant (an attempt whose create never landed), and
    // no token below was granted.
    let floor_start = log
        .found
        .first()
        .filter(|f| f.kind == Kind::Grant)
        .and_then(|f| f.record.as_ref().ok())
        .filter(|r| r.previous.is_none() && r.token > 1 && r.token % FLOOR_STRIDE == 1)
        .map(|r| r.token);
    v.floor_start = floor_start;
    for token in log.tokens_read(last) {
        if floor_start.is_some_and(|start| token < start) {
            continue;
        }
        if let Some(c) = log.record(token, Kind::Collision) {
            v.collision(token, c);
        }
        match log.record(token, Kind::Grant) {
            Some(g) => {
                report.grants += 1;
                report.backfilled += u64::from(g.backfilled);
                if !g.backfilled {
                    v.grant(g);
                }
            }
            None if log.of(token, Kind::Grant).is_some() => {} // unreadable: found above
            None => v.gap(token, current),
        }
    }
    // The lock object as read now holds a token whose record names
    // another holder: the store let two grants of that token land (their
    // records raced as well, and one overwrote the other).
    if let Some(s) = current.filter(|s| s.semaphore.is_none() && s.record.token > 0) {
        let t = s.record.token;
        if let Some(g) = log.record(t, Kind::Grant) {
            if g.holder != s.record.holder_id {
                v.find(
                    FindingKind::TokenRepeated,
                    t,
                    format!(
                        "token {t} is recorded as granted to {:?}, and the lock object holds it \
                         for {:?}",
                        g.holder, s.record.holder_id
                    ),
                    vec![v.name(t, Kind::Grant)],
                );
            }
        }
    }
    v.findings.sort_by_key(|f| (f.token, f.kind));
    report.findings = v.findings;
    report
}

struct Verifier<'a> {
    dir: &'a str,
    log: &'a Log,
    findings: Vec<Finding>,
    /// See `floor_start` in `verify`.
    floor_start: Option<u64>,
}

impl Verifier<'_> {
    fn find(&mut self, kind: FindingKind, token: u64, detail: String, evidence: Vec<String>) {
        self.findings.push(Finding {
            kind,
            token,
            detail,
            evidence,
        });
    }

    fn name(&self, token: u64, kind: Kind) -> String {
        record_key(self.dir, token, kind)
    }

    fn collision(&mut self, token: u64, c: &Record) {
        let first = self.log.record(token, Kind::Grant).map_or_else(
            || "a grant whose record is gone".to_string(),
            |g| format!("{:?}", g.holder),
        );
        self.find(
            FindingKind::TokenRepeated,
            token,
            format!(
                "token {token} was granted twice: to {first} and to {:?}, whose record of it met \
                 the first one's",
                c.holder
            ),
            vec![
                self.name(token, Kind::Grant),
                self.name(token, Kind::Collision),
            ],
        );
    }

    /// A token with no grant record: explained by a later grant that
    /// replaced it, or by the lock object holding it now.
    fn gap(&mut self, token: u64, current: Option<&LockState>) {
        let held = current.map(|s| s.record.token);
        if token < self.log.pruned_below || self.before_next_stride(token, held) {
            return;
        }
        let named_later = self.log.found.iter().any(|f| {
            f.kind == Kind::Grant
                && f.record.as_ref().is_ok_and(|r| {
                    r.previous
                        .as_ref()
                        .is_some_and(|p| p.holders.iter().any(|h| h.token == token))
                })
        });
        let held_now = current.is_some_and(|s| match &s.semaphore {
            Some(sem) => sem.record.holders.iter().any(|e| e.token == token),
            None => s.record.token == token,
        });
        if !named_later && !held_now {
            self.find(
                FindingKind::UnexplainedGap,
                token,
                format!(
                    "no record of token {token}'s grant, and no later grant nor the lock object \
                     names it: a grant by a client without the log, or records deleted"
                ),
                vec![self.name(token, Kind::Grant)],
            );
        }
    }

    /// Whether `token` is in the run of tokens without records the reader
    /// passed before going on at the next floor stride, where a grant
    /// created the lock object again (reported at that grant: whether the
    /// lease before it had ended is not shown), or holds it now (`held`:
    /// its record is still to come).
    fn before_next_stride(&self, token: u64, held: Option<u64>) -> bool {
        self.log.skipped.iter().any(|(from, to)| {
            *from > token
                && from - token <= GAP_RUN
                && !self
                    .log
                    .found
                    .iter()
                    .any(|f| (token..*from).contains(&f.token))
                && to.checked_add(1).is_some_and(|start| {
                    held == Some(start)
                        || self
                            .log
                            .record(start, Kind::Grant)
                            .is_some_and(|r| r.previous.is_none())
                })
        })
    }

    fn grant(&mut self, g: &Record) {
        let t = g.token;
        let me = self.name(t, Kind::Grant);
        let Some(p) = &g.previous else {
            if t > 1 && t > self.log.pruned_below && self.floor_start != Some(t) {
                self.find(
                    FindingKind::NotOnStoreClock,
                    t,
                    format!(
                        "the grant of token {t} replaced no lock object it read: whether the \
                         lease of token {} had ended is not shown",
                        t - 1
                    ),
                    vec![me],
                );
            }
            return;
        };
        if p.token >= t {
            self.find(
                FindingKind::TokenRepeated,
                t,
                format!(
                    "the grant of token {t} replaced a lock object at token {}: tokens did not rise",
                    p.token
                ),
                vec![me.clone()],
            );
        }
        let between = p.token.saturating_add(1)..t;
        let missed = self.log.found.iter().filter_map(|f| match &f.record {
            Ok(r) if f.kind == Kind::Grant && between.contains(&f.token) => Some(r),
            _ => None,
        });
        let missed: Vec<&Record> = missed.collect();
        for missed in missed {
            let skipped = missed.token;
            let detail = format!(
                "the grant of token {t} ({:?}) replaced token {} and never saw token \
                 {skipped}'s grant ({:?}): both were granted from the same state",
                g.holder, p.token, missed.holder
            );
            let evidence = vec![me.clone(), self.name(skipped, Kind::Grant)];
            self.find(FindingKind::MissedGrant, t, detail, evidence);
        }
        for h in &p.holders {
            if let Some(theirs) = self.log.record(h.token, Kind::Grant) {
                if theirs.holder != h.holder {
                    let detail = format!(
                        "token {} was granted to {:?} (its record) and to {:?} (the holder the \
                         grant of token {t} replaced)",
                        h.token, theirs.holder, h.holder
                    );
                    let evidence = vec![self.name(h.token, Kind::Grant), me.clone()];
                    self.find(FindingKind::TokenRepeated, h.token, detail, evidence);
                }
            }
        }
        let live = p.holders.iter().filter(|h| h.live).count() as u64;
        if live >= u64::from(g.limit.max(1)) {
            self.find(
                FindingKind::OverLimit,
                t,
                format!(
                    "the grant of token {t} left {live} other holders live on a key that admits {}",
                    g.limit
                ),
                vec![me.clone()],
            );
        }
        for h in p.holders.iter().filter(|h| !h.live && !h.released) {
            if h.holder == g.holder {
                continue; // its own holder id, reclaiming its lock or slot
            }
            self.ended(g, p.date_ms, h, &me);
        }
    }

    /// Whether the store's times show `h`'s lease over when grant `g` read
    /// the key (at `date`).
    fn ended(&mut self, g: &Record, date: Option<u64>, h: &PreviousHolder, me: &str) {
        let t = g.token;
        let ends = |since: Option<u64>| {
            since.map(|s| s.saturating_add(h.ttl_ms).saturating_add(SERVER_SLACK_MS))
        };
        let by_write = ends(h.written_at_ms);
        let by_sight = ends(h.first_date_ms);
        let (Some(date), Some(end)) = (date, by_write.or(by_sight)) else {
            self.find(
                FindingKind::NotOnStoreClock,
                t,
                format!(
                    "the grant of token {t} took over token {}'s lease ({:?}), unreleased, and \
                     the store's times that would show it over are not in the record",
                    h.token, h.holder
                ),
                vec![me.to_string()],
            );
            return;
        };
        let shown = [by_write, by_sight]
            .into_iter()
            .flatten()
            .any(|end| date > end);
        if !shown {
            self.find(
                FindingKind::TakenWhileLive,
                t,
                format!(
                    "the grant of token {t} ({:?}) read the key at {date} (store clock, ms) and \
                     took over token {}'s lease ({:?}), unreleased, which ran until {end} by its \
                     last write and its ttl of {} ms",
                    g.holder, h.token, h.holder, h.ttl_ms
                ),
                vec![me.to_string(), self.name(h.token, Kind::Grant)],
            );
        }
    }
}

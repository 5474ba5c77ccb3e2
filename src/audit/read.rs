//! Reads a key's records, token by token: GETs only, which every store
//! answers the same way (not every store is listed here, and a listing
//! would not save the GET of each record verify reads).
//!
//! First the prune marker (`names::marker_key`): tokens below it were
//! pruned. Then, with a `since` time, a binary search for the first grant
//! at or after it (grants' store times rise with their tokens). Then each
//! token up to the key's current one (the caller reads it from the lock
//! object): its grant, release and collision records. 1 + 3 GETs per
//! token, plus about log2(tokens) with `since`.
//!
//! A key's tokens are not always dense: a lock object created again above
//! its token floor (`strategy::floor`) starts a stride higher, at the next
//! multiple of `FLOOR_STRIDE` plus 1. After `GAP_RUN` tokens in a row with
//! no record the reader goes on from there (the tokens between are in
//! `Log::skipped`), so a log never costs a read per token of a stride.

use crate::prelude::*;

use super::names::{marker_key, record_key, Kind};
use super::record::{Record, MAX_RECORD_BYTES};
use crate::error::Error;
use crate::expiry::server_time;
use crate::json_out::JsonObject;
use crate::protocol::{Operation, Step};
use crate::stores::s3::{Method, S3Request, S3Response, UNREADABLE_HEADER};
use crate::strategy::floor::FLOOR_STRIDE;

/// Tokens in a row with no record after which the reader goes on at the
/// next floor stride (see the module comment). Each is a gap verify
/// reports unless something explains it.
pub const GAP_RUN: u64 = 4;

/// The first token of the stride above `token`'s: where a lock object
/// created again above its floor starts.
pub fn next_stride_start(token: u64) -> Option<u64> {
    (token / FLOOR_STRIDE)
        .checked_add(1)?
        .checked_mul(FLOOR_STRIDE)?
        .checked_add(1)
}
use serde_json::Value;

/// One record found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub token: u64,
    pub kind: Kind,
    /// Its full object key.
    pub name: String,
    /// The record, or why it could not be read.
    pub record: Result<Record, String>,
    /// When the store wrote it (`Last-Modified`), when the store says.
    pub written_ms: Option<u64>,
}

/// A key's log as read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Log {
    /// Records of tokens below this were pruned (0: none).
    pub pruned_below: u64,
    /// The prune marker's etag, when there is one.
    pub marker_etag: Option<String>,
    /// The tokens read: `from ..= until` (none when `from > until`).
    pub from: u64,
    pub until: u64,
    /// In token order, then grant, release, collision.
    pub found: Vec<Found>,
    /// Ranges of tokens (inclusive) not read: after `GAP_RUN` tokens with
    /// no record, up to the next floor stride's first token.
    pub skipped: Vec<(u64, u64)>,
}

impl Log {
    pub fn of(&self, token: u64, kind: Kind) -> Option<&Found> {
        self.found
            .iter()
            .find(|f| f.token == token && f.kind == kind)
    }

    /// The readable record of `token` of `kind`.
    pub fn record(&self, token: u64, kind: Kind) -> Option<&Record> {
        self.of(token, kind).and_then(|f| f.record.as_ref().ok())
    }

    /// Whether the reader read `token`'s records (it is not in a skipped
    /// range).
    pub fn read_token(&self, token: u64) -> bool {
        !self.skipped.iter().any(|(a, b)| (*a..=*b).contains(&token))
    }

    /// The tokens read, `from ..= until` without the skipped ranges.
    pub fn tokens_read(&self, until: u64) -> impl Iterator<Item = u64> + '_ {
        let mut next = Some(self.from);
        core::iter::from_fn(move || loop {
            let t = next.filter(|t| *t <= until)?;
            match self.skipped.iter().find(|(a, b)| (*a..=*b).contains(&t)) {
                Some((_, b)) => next = b.checked_add(1),
                None => {
                    next = t.checked_add(1);
                    return Some(t);
                }
            }
        })
    }
}

/// The prune marker's body: `{"below":<token>}`.
pub fn marker_body(below: u64) -> Vec<u8> {
    let mut o = JsonObject::default();
    o.u64("below", below);
    o.finish()
}

/// The token in a prune marker's body.
pub fn marker_below(body: &[u8]) -> Result<u64, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|_| "the prune marker is not JSON".to_string())?;
    value
        .get("below")
        .and_then(Value::as_u64)
        .ok_or_else(|| "the prune marker has no \"below\" token".to_string())
}

enum Phase {
    Marker,
    /// Looking for the first grant at or after `since`: tokens in
    /// `lo..hi`, probing `probe` (moving up past missing records).
    Searching {
        lo: u64,
        hi: u64,
        probe: u64,
        /// Missing records passed on the way up from the first probe.
        missing: u64,
    },
    Reading {
        token: u64,
        kind: Kind,
    },
}

/// Reads a key's log (see the module comment).
pub struct ReadLog {
    dir: String,
    since_ms: Option<u64>,
    until: u64,
    /// Stop once `from` is known (prune's search): read no records.
    search_only: bool,
    log: Log,
    phase: Phase,
    /// Tokens in a row read with no record (see `GAP_RUN`).
    empty_run: u64,
}

impl ReadLog {
    /// `until`: the key's current token (the lock object's counter).
    pub fn new(dir: String, until: u64, since_ms: Option<u64>) -> Self {
        ReadLog {
            dir,
            since_ms,
            until,
            search_only: false,
            log: Log::default(),
            phase: Phase::Marker,
            empty_run: 0,
        }
    }

    /// Only the marker and the search: the log's `from` and `until`, no
    /// records.
    pub fn search_only(mut self) -> Self {
        self.search_only = true;
        self
    }

    fn get(name: &str) -> Step<Log> {
        Step::Send(S3Request::new(Method::Get, name, MAX_RECORD_BYTES))
    }

    fn start_reading(&mut self, from: u64) -> Step<Log> {
        self.log.from = from;
        self.log.until = self.until;
        if self.search_only {
            return Step::Done(Ok(core::mem::take(&mut self.log)));
        }
        self.next(from, None)
    }

    /// The next record to read after (`token`, `kind`), or the log.
    fn next(&mut self, token: u64, after: Option<Kind>) -> Step<Log> {
        let (token, kind) = match after {
            None => (token, Kind::Grant),
            Some(Kind::Grant) => (token, Kind::Release),
            Some(Kind::Release) => (token, Kind::Collision),
            Some(Kind::Collision) => {
                let any = self.log.found.last().is_some_and(|f| f.token == token);
                self.empty_run = if any { 0 } else { self.empty_run + 1 };
                let next = match token.checked_add(1) {
                    Some(next) if self.empty_run >= GAP_RUN => {
                        self.empty_run = 0;
                        let start = next_stride_start(token).unwrap_or(u64::MAX);
                        let last_skipped = start.saturating_sub(1).min(self.until);
                        if next <= last_skipped {
                            self.log.skipped.push((next, last_skipped));
                        }
                        start
                    }
                    Some(next) => next,
                    None => return Step::Done(Ok(core::mem::take(&mut self.log))),
                };
                (next, Kind::Grant)
            }
        };
        if token > self.until {
            return Step::Done(Ok(core::mem::take(&mut self.log)));
        }
        self.phase = Phase::Reading { token, kind };
        Self::get(&record_key(&self.dir, token, kind))
    }

    fn search(&mut self, lo: u64, hi: u64) -> Step<Log> {
        if lo >= hi {
            return self.start_reading(lo);
        }
        let probe = lo + (hi - lo) / 2;
        self.phase = Phase::Searching {
            lo,
            hi,
            probe,
            missing: 0,
        };
        Self::get(&record_key(&self.dir, probe, Kind::Grant))
    }

    fn after_marker(&mut self) -> Step<Log> {
        let from = self.log.pruned_below.max(1);
        match self.since_ms {
            Some(_) => self.search(from, self.until.saturating_add(1)),
            None => self.start_reading(from),
        }
    }
}

fn read_found(token: u64, kind: Kind, name: String, r: &S3Response) -> Found {
    let record = match r.header(UNREADABLE_HEADER) {
        Some(reason) => Err(reason.to_string()),
        None if r.body_too_large.is_some() => {
            Err(format!("the record is over {MAX_RECORD_BYTES} bytes"))
        }
        None => Record::from_json(&r.body).and_then(|record| {
            if record.token != token || record.kind != kind {
                Err(format!(
                    "it says it is token {}'s {} record",
                    record.token,
                    record.kind.name()
                ))
            } else {
                Ok(record)
            }
        }),
    };
    Found {
        token,
        kind,
        name,
        record,
        written_ms: server_time(r, "last-modified"),
    }
}

impl Operation for ReadLog {
    type Output = Log;

    fn start(&mut self, _now_ms: u64) -> Step<Log> {
        self.phase = Phase::Marker;
        Self::get(&marker_key(&self.dir))
    }

    fn on_response(&mut self, r: S3Response, _now_ms: u64) -> Step<Log> {
        let missing = r.is_missing_object();
        if r.status != 200 && !missing {
            return Step::Done(Err(r.into_error()));
        }
        match core::mem::replace(&mut self.phase, Phase::Marker) {
            Phase::Marker => {
                if !missing {
                    match marker_below(&r.body) {
                        Ok(below) => {
                            self.log.pruned_below = below;
                            self.log.marker_etag = r.etag().map(str::to_string);
                        }
                        Err(reason) => {
                            return Step::Done(Err(Error::corrupt(&marker_key(&self.dir), reason)))
                        }
                    }
                }
                self.after_marker()
            }
            Phase::Searching {
                lo,
                hi,
                probe,
                missing: passed,
            } => {
                let since = self.since_ms.unwrap_or(0);
                if missing {
                    // No grant here: look further up, within the range
                    // (past a run of missing ones, at the next stride).
                    let next = match passed + 1 >= GAP_RUN {
                        true => next_stride_start(probe),
                        false => probe.checked_add(1),
                    };
                    let first = probe.saturating_sub(passed);
                    return match next {
                        Some(next) if next < hi => {
                            self.phase = Phase::Searching {
                                lo,
                                hi,
                                probe: next,
                                missing: next - first,
                            };
                            Self::get(&record_key(&self.dir, next, Kind::Grant))
                        }
                        _ => self.search(lo, first),
                    };
                }
                let name = record_key(&self.dir, probe, Kind::Grant);
                let at = read_found(probe, Kind::Grant, name, &r)
                    .record
                    .ok()
                    .and_then(|rec| rec.write.at_ms());
                match at {
                    Some(at) if at < since => self.search(probe + 1, hi),
                    _ => self.search(lo, probe),
                }
            }
            Phase::Reading { token, kind } => {
                if !missing {
                    let name = record_key(&self.dir, token, kind);
                    self.log.found.push(read_found(token, kind, name, &r));
                }
                self.next(token, Some(kind))
            }
        }
    }
}

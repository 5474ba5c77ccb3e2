//! Drops the records of a key's grants made before a time: finds the
//! first grant at or after it (as `read` does for `since`), raises the
//! prune marker to that token (so verify starts there, and calls nothing
//! below it a gap), then deletes the grant, release and collision records
//! of every token from the old marker up to it. A prune cut short leaves
//! some records below the marker, which nothing reads; a lifecycle rule on
//! the log's folder removes them as it removes any old record
//! (docs/audit.md).

use crate::prelude::*;

use super::names::{marker_key, record_key, Kind};
use super::read::{marker_body, Log};
use super::record::MAX_RECORD_BYTES;
use crate::error::Error;
use crate::protocol::{Operation, Step};
use crate::stores::s3::{Method, S3Request, S3Response};

/// How many tokens' records a prune may delete in one call: a bound on
/// its requests (3 per token); prune again for more.
pub const MAX_PRUNED_TOKENS: u64 = 10_000;

enum Phase {
    Marking,
    Deleting { token: u64, kind: Kind },
}

/// Prunes a log whose marker and first kept token `searched` found.
pub struct Prune {
    dir: String,
    /// The marker as read (its etag), and the tokens to drop.
    marker_etag: Option<String>,
    from: u64,
    below: u64,
    phase: Phase,
}

/// What a prune did: the tokens whose records it deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    pub from: u64,
    pub below: u64,
}

impl Prune {
    /// `searched`: `read::ReadLog::search_only`'s log with the prune time
    /// as `since`.
    pub fn new(dir: String, searched: &Log) -> Self {
        let marker_etag = searched.marker_etag.clone();
        let from = searched.pruned_below.max(1);
        let below = searched.from.min(from.saturating_add(MAX_PRUNED_TOKENS));
        Prune {
            dir,
            marker_etag,
            from,
            below,
            phase: Phase::Marking,
        }
    }

    fn delete(&mut self, token: u64, kind: Kind) -> Step<Pruned> {
        if token >= self.below {
            return Step::Done(Ok(Pruned {
                from: self.from,
                below: self.below,
            }));
        }
        self.phase = Phase::Deleting { token, kind };
        Step::Send(S3Request::new(
            Method::Delete,
            &record_key(&self.dir, token, kind),
            MAX_RECORD_BYTES,
        ))
    }
}

impl Operation for Prune {
    type Output = Pruned;

    fn start(&mut self, _now_ms: u64) -> Step<Pruned> {
        if self.below <= self.from {
            return Step::Done(Ok(Pruned {
                from: self.from,
                below: self.from,
            }));
        }
        let condition = match &self.marker_etag {
            Some(etag) => ("if-match", etag.as_str()),
            None => ("if-none-match", "*"),
        };
        Step::Send(
            S3Request::new(Method::Put, &marker_key(&self.dir), MAX_RECORD_BYTES)
                .header(condition.0, condition.1)
                .body("application/json", marker_body(self.below)),
        )
    }

    fn on_response(&mut self, r: S3Response, _now_ms: u64) -> Step<Pruned> {
        match self.phase {
            Phase::Marking => match r.status {
                200 => self.delete(self.from, Kind::Grant),
                // Another prune moved the marker meanwhile: run again.
                409 | 412 => Step::Done(Err(Error::Conflict(r.s3_error()))),
                _ => Step::Done(Err(r.into_error())),
            },
            Phase::Deleting { token, kind } => {
                if !(200..300).contains(&r.status) && !r.is_missing_object() {
                    return Step::Done(Err(r.into_error()));
                }
                match kind {
                    Kind::Grant => self.delete(token, Kind::Release),
                    Kind::Release => self.delete(token, Kind::Collision),
                    Kind::Collision => self.delete(token.saturating_add(1), Kind::Grant),
                }
            }
        }
    }
}

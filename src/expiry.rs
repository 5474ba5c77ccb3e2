//! When has an unreleased lease expired? Three answers, one per
//! `expiry-clock` of the config:
//!
//! - `holder`: `expires_at`, written on the holder's wall clock, against
//!   the reader's wall clock. The single-object design's rule, kept so
//!   plain clients of that design can share the lock; it needs
//!   synchronized clocks.
//! - `server`: the object's `Last-Modified` plus its ttl plus
//!   `SERVER_SLACK_MS`, against the `Date` of the same reply. Only the S3
//!   server's clock enters: a reply without either time is refused, never
//!   judged by the reader's clock instead.
//! - `observed` (client-go's rule): the reader has seen the same ETag,
//!   unchanged, for the ttl plus `observed_slack_ms` on its own monotonic
//!   clock. No clock is compared with another; a reader that has never
//!   seen the object waits a full ttl.
//!
//! A lock record makes two claims, `expires_at` and `ttl_ms`, and the
//! reader holds it to the later. With `renewed_at` (when the record was
//! written, on its writer's clock) both are durations from the write, so
//! the ttl the rules above judge by is the longer of `ttl_ms` and
//! `expires_at` minus `renewed_at` (`holder`: `renewed_at` plus that),
//! and no clock enters that did not before. Our writers make the two
//! agree; a writer that did not (a 30 s `expires_at` beside a 4 s
//! `ttl_ms`) is held to the 30 s on every clock. A record with a ttl but
//! no `renewed_at` (an earlier build's, or another client's) cannot place
//! `expires_at` but on a wall clock: `server` and `observed` hold it both
//! to their rule and to the design's (`expires_at` against the reader's
//! wall clock): the reader's clock can only make it wait longer. A record
//! without a ttl (a plain design client's) is judged by the design's rule
//! under every clock. A semaphore's entries carry no `renewed_at`: their
//! ttl decides under `server` and `observed`, their `expires_at` under
//! `holder`, as before (only s3-lease's semaphore writers write them).
//!
//! The holder's side is the same under all three: a lease counts from when
//! its last write was *sent*, for its ttl, on the holder's clock. What the
//! rules assume is that clocks run at nearly the same rate, never that they
//! agree.

use crate::prelude::*;

/// The config's choice of rule; defined with the rest of the config, below
/// `s3`, which this module reads replies of.
pub use crate::config::ExpiryClock;
use crate::error::{Error, S3Error};
use crate::lock_object::semaphore::{Entry, Judged, SemaphoreRecord, SemaphoreState};
use crate::lock_object::{LockRecord, LockState};
use crate::stores::s3::S3Response;

/// Added under `server`: 1 s because `Last-Modified` and `Date` are whole
/// seconds, 1 s for the time between the server reading the object and
/// stamping `Date` on the reply.
pub const SERVER_SLACK_MS: u64 = 2_000;

/// Added under `observed`: the reader's and the holder's clocks may run at
/// slightly different rates (1% of the ttl), plus 100 ms for scheduling.
pub fn observed_slack_ms(ttl_ms: u64) -> u64 {
    100 + ttl_ms / 100
}

/// What this client last read of a key, and for how long (monotonic) it
/// has seen that ETag unchanged. Kept by the client between calls; also
/// lets a GET ask `If-None-Match` and accept a 304 in place of the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub state: LockState,
    pub seen_for_ms: u64,
    /// A semaphore's entries, by write id: how long this client has seen
    /// each unchanged (an entry outlives the object's ETag, which every
    /// holder's renew changes).
    pub entries_seen_for_ms: Vec<(String, u64)>,
    /// The server's `Date` on the reply in which this client first saw
    /// the ETag (when it had one): the store's own clock for how long the
    /// object stayed unchanged (see `Judge::on_store_clock`).
    pub first_date_ms: Option<u64>,
    /// The same for each semaphore entry, by write id.
    pub entries_first_date_ms: Vec<(String, u64)>,
}

/// How one reader judges expiry in one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judge {
    pub clock: ExpiryClock,
    pub observation: Option<Observation>,
    /// With the grant log on (see `audit`): an unreleased lease also stays
    /// live until the store's own clock shows it over, so every takeover
    /// the log records is one `audit::verify` can prove.
    pub on_store_clock: bool,
}

impl Judge {
    pub fn new(clock: ExpiryClock, observation: Option<Observation>) -> Self {
        Judge {
            clock,
            observation,
            on_store_clock: false,
        }
    }

    /// The same rule, also waiting for the store's clock (the grant log's
    /// judge: see `on_store_clock`).
    pub fn on_store_clock(mut self, on: bool) -> Self {
        self.on_store_clock = on;
        self
    }

    /// The same judge without its memory: for a full read after which
    /// nothing seen before applies.
    pub fn forgetting(&self) -> Self {
        Judge::new(self.clock, None).on_store_clock(self.on_store_clock)
    }

    /// The holder rule, with no memory: what plain reads use by default.
    pub fn holder() -> Self {
        Judge::new(ExpiryClock::Holder, None)
    }

    /// The ETag to send as `If-None-Match`, when this client has read the
    /// object before.
    pub fn cached_etag(&self) -> Option<&str> {
        self.observation.as_ref().map(|o| o.state.etag.as_str())
    }

    /// A 304 reply: the state observed before, judged again now. `None`
    /// when nothing was observed (then the 304 makes no sense).
    pub fn unchanged(&self, r: &S3Response, now_ms: u64) -> Option<Result<LockState, Error>> {
        let o = self.observation.as_ref()?;
        Some(
            self.judge(&o.state.record, &o.state.etag, r, now_ms)
                .map(|(live, expires_in_ms)| LockState {
                    live,
                    expires_in_ms,
                    date_ms: server_time(r, "date"),
                    ..o.state.clone()
                }),
        )
    }

    /// Liveness and time left for `record` with `etag`, read at `now_ms`
    /// (reader's wall clock) from reply `r`. Returns `(live, expires_in_ms)`,
    /// or, under `server`, an error when the reply lacks the server's times.
    pub fn judge(
        &self,
        record: &LockRecord,
        etag: &str,
        r: &S3Response,
        now_ms: u64,
    ) -> Result<(bool, u64), Error> {
        if record.expires_at_ms == 0 {
            return Ok((false, 0));
        }
        // A record without a ttl (a plain design client) can only be
        // judged by the rule it was written for.
        if record.ttl_ms == 0 && record.renewed_at_ms == 0 {
            return Ok(holder_rule(record.expires_at_ms, now_ms));
        }
        let (ttl_ms, holder_expiry_ms, unplaced) = match record.claimed_duration_ms() {
            Some(d) => (d, record.renewed_at_ms.saturating_add(d), false),
            // A ttl, and an `expires_at` it cannot be compared with.
            None => (record.ttl_ms, record.expires_at_ms, true),
        };
        let by_clock = match self.clock {
            ExpiryClock::Holder => holder_rule(holder_expiry_ms, now_ms),
            ExpiryClock::Server => {
                let modified = server_time(r, "last-modified").or_else(|| {
                    self.observation
                        .as_ref()
                        .filter(|o| o.state.etag == etag)
                        .and_then(|o| o.state.last_modified_ms)
                });
                // No times, no judgement: the holder's clock is what this
                // configuration chose not to trust, so falling back to it
                // could grant a live lease away. Epoch-objects refuses too.
                let date = server_time(r, "date").ok_or_else(|| lacks(r, "date"))?;
                let modified = modified.ok_or_else(|| lacks(r, "last-modified"))?;
                server_rule_since(modified, ttl_ms, date)
            }
            ExpiryClock::Observed => {
                let seen = self
                    .observation
                    .as_ref()
                    .filter(|o| o.state.etag == etag)
                    .map_or(0, |o| o.seen_for_ms);
                observed_rule(ttl_ms, seen)
            }
        };
        let judged = if unplaced {
            later(by_clock, holder_rule(record.expires_at_ms, now_ms))
        } else {
            by_clock
        };
        if !self.on_store_clock || judged.0 {
            return Ok(judged);
        }
        let seen = self.observation.as_ref().filter(|o| o.state.etag == etag);
        let written =
            server_time(r, "last-modified").or(seen.and_then(|o| o.state.last_modified_ms));
        let first_seen = seen.and_then(|o| o.first_date_ms);
        Ok(store_clock_rule(ttl_ms, written, first_seen, r))
    }
}

/// With the grant log on: whether the store's clock shows a lease of
/// `ttl_ms` over in reply `r`, from its last write's server time
/// (`written`), or else from the `Date` on which this reader first saw it
/// unchanged (`first_seen`: the write came before). Live, for as long as
/// the store's clock says, until one of them does; as judged by the rule
/// when the reply has no `Date` (a store that keeps no time: `audit::verify`
/// then reports the takeover as not shown on the store's clock).
fn store_clock_rule(
    ttl_ms: u64,
    written: Option<u64>,
    first_seen: Option<u64>,
    r: &S3Response,
) -> (bool, u64) {
    let Some(date) = server_time(r, "date") else {
        return (false, 0);
    };
    let since = written.or(first_seen).unwrap_or(date);
    server_rule_since(since, ttl_ms, date)
}

impl Judge {
    /// Judges each entry of a semaphore read from reply `r`, whose object
    /// was last modified at `modified_ms` (server clock, when known).
    pub fn judge_semaphore(
        &self,
        record: SemaphoreRecord,
        modified_ms: Option<u64>,
        r: &S3Response,
        now_ms: u64,
    ) -> Result<SemaphoreState, Error> {
        let judge_all = |entries: &[Entry]| -> Result<Vec<Judged>, Error> {
            entries
                .iter()
                .map(|e| self.judge_entry(e, modified_ms, r, now_ms))
                .collect()
        };
        Ok(SemaphoreState {
            holders: judge_all(&record.holders)?,
            queue: judge_all(&record.queue)?,
            record,
        })
    }

    /// One entry by the same rules as a whole lock: its own `expires_at`
    /// (`holder`), its own last write's server time plus its ttl
    /// (`server`), or how long this reader has seen it unchanged
    /// (`observed`).
    fn judge_entry(
        &self,
        e: &Entry,
        modified_ms: Option<u64>,
        r: &S3Response,
        now_ms: u64,
    ) -> Result<Judged, Error> {
        let clock = if e.ttl_ms == 0 {
            ExpiryClock::Holder
        } else {
            self.clock
        };
        let (live, expires_in_ms) = match clock {
            ExpiryClock::Holder => holder_rule(e.expires_at_ms, now_ms),
            ExpiryClock::Server => {
                let date = server_time(r, "date").ok_or_else(|| lacks(r, "date"))?;
                let written = e
                    .written_at_ms
                    .or(modified_ms)
                    .ok_or_else(|| lacks(r, "last-modified"))?;
                server_rule_since(written, e.ttl_ms, date)
            }
            ExpiryClock::Observed => {
                let seen = self
                    .observation
                    .as_ref()
                    .and_then(|o| {
                        o.entries_seen_for_ms
                            .iter()
                            .find(|(id, _)| !id.is_empty() && *id == e.write_id)
                    })
                    .map_or(0, |(_, ms)| *ms);
                observed_rule(e.ttl_ms, seen)
            }
        };
        let (live, expires_in_ms) = if self.on_store_clock && !live {
            let first_seen = self.observation.as_ref().and_then(|o| {
                o.entries_first_date_ms
                    .iter()
                    .find(|(id, _)| !id.is_empty() && *id == e.write_id)
                    .map(|(_, date)| *date)
            });
            store_clock_rule(e.ttl_ms, e.written_at_ms.or(modified_ms), first_seen, r)
        } else {
            (live, expires_in_ms)
        };
        Ok(Judged {
            live,
            expires_in_ms,
        })
    }
}

/// The error for a reply the `server` clock cannot judge: the same case
/// (`Error::S3`, the reply's status and request id) and wording as
/// epoch-objects' `server_time_required`.
fn lacks(r: &S3Response, header: &str) -> Error {
    Error::S3(S3Error {
        message: format!(
            "the reply has no valid {header} header, which the server expiry clock needs"
        ),
        ..r.s3_error()
    })
}

/// Live until both claims have run out: each is `(live, expires_in_ms)`,
/// and one not live waits 0.
fn later(a: (bool, u64), b: (bool, u64)) -> (bool, u64) {
    (a.0 || b.0, a.1.max(b.1))
}

/// Live until the same ETag (or entry) has been seen unchanged for the
/// ttl plus the slack.
fn observed_rule(ttl_ms: u64, seen_for_ms: u64) -> (bool, u64) {
    let needed = ttl_ms.saturating_add(observed_slack_ms(ttl_ms));
    if seen_for_ms >= needed {
        (false, 0)
    } else {
        (true, needed - seen_for_ms)
    }
}

/// Live while `now <= expires_at`: expired from `expires_at + 1` on.
fn holder_rule(expires_at_ms: u64, now_ms: u64) -> (bool, u64) {
    if now_ms <= expires_at_ms {
        (true, expires_at_ms.saturating_add(1).saturating_sub(now_ms))
    } else {
        (false, 0)
    }
}

/// Live while `Date <= expires_at`. `Date` moves in whole seconds: the
/// first one past the expiry is the next whole second, and the server's
/// clock already reads at least `date`, so this wait never undershoots.
pub fn server_rule(expires_at_ms: u64, date_ms: u64) -> (bool, u64) {
    if date_ms <= expires_at_ms {
        (true, (expires_at_ms / 1000 + 1) * 1000 - date_ms)
    } else {
        (false, 0)
    }
}

/// `server_rule` for a lease of `ttl_ms` written at `written_ms` (server
/// time), with the slack of whole-second server times.
fn server_rule_since(written_ms: u64, ttl_ms: u64, date_ms: u64) -> (bool, u64) {
    server_rule(
        written_ms
            .saturating_add(ttl_ms)
            .saturating_add(SERVER_SLACK_MS),
        date_ms,
    )
}

/// A server time header (`Date`, `Last-Modified`) in ms, if valid.
pub fn server_time(r: &S3Response, header: &str) -> Option<u64> {
    r.header(header).and_then(crate::http_date::parse_ms)
}

#[cfg(test)]
mod tests;

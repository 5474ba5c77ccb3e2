//! The epoch-objects strategy as state machines, free of I/O: one object per
//! leader epoch, for stores that have `If-None-Match` but maybe no `If-Match`.
//!
//! A key's epochs live under `<prefix><key>/epoch-<20 digits>.json`; the
//! fixed width makes LIST order epoch order, and the epoch is the fencing
//! token. An epoch object is `{"expired", "validity_ms", "token", "holder",
//! "acquired_at", "metadata"}`.
//! - acquire: LIST the epochs, GET the highest; if absent, released or
//!   expired (or live but ours), PUT the next epoch with `If-None-Match: *`;
//!   then LIST once more past our epoch, since a slow client can re-create
//!   an epoch that cleanup had deleted (see `Phase::Verifying`); then delete
//!   old epochs (best effort, see `Cleanup`).
//! - validity: the highest epoch is live until its `Last-Modified` plus
//!   `validity_ms` (plus `EXPIRY_SLACK_MS`), judged against the `Date` of the
//!   same reply: the server's clock, never the reader's.
//! - renew: rewrite our own epoch object (`If-Match`, or a plain PUT on a
//!   store without it), which moves `Last-Modified`. It counts only if the
//!   reply arrives before our lease ran out by our own clock, measured from
//!   the previous write; the server then cannot have judged it expired.
//! - release: rewrite our own epoch object as `"expired": true`.

use crate::prelude::*;

use crate::error::{Error, S3Error};
use crate::expiry::{server_time, ExpiryClock, Judge, SERVER_SLACK_MS};
use crate::json_out::JsonObject;
use crate::lease::{check_writable_time, Grant, Lease};
use crate::limits::{MAX_REREADS, MAX_TTL_MS};
use crate::lock_object::{describe, epoch_ms, kind, optional_string, LockRecord, LockState};
use crate::lock_object::{too_large, MAX_LOCK_OBJECT_BYTES};
use crate::protocol::{is_ambiguous, AcquireOutcome, Operation, Step};
use crate::s3::{list_continue, list_request, parse_list, ListPage, Method, S3Request, S3Response};
use crate::seal::LockSeal;
use serde_json::Value;

/// Epochs kept by cleanup: the new one and the one it replaced.
pub const KEEP_EPOCHS: u64 = 2;
/// Old epochs deleted after one grant at most; the rest wait for the next.
pub const MAX_CLEANUP_PER_GRANT: usize = 16;

const JSON: &str = "application/json";

/// Where a key's epochs live: `<prefix><key>/`.
pub fn epoch_dir(lock_object_key: &str) -> String {
    format!("{lock_object_key}/")
}

fn listing_prefix(dir: &str) -> String {
    format!("{dir}epoch-")
}

pub fn epoch_key(dir: &str, epoch: u64) -> String {
    format!("{dir}epoch-{epoch:020}.json")
}

/// The epoch an object key names, or `None` for anything that is not exactly
/// `<dir>epoch-<20 digits>.json` (foreign keys under the prefix are ignored).
pub fn parse_epoch_key(dir: &str, key: &str) -> Option<u64> {
    let digits = key
        .strip_prefix(dir)?
        .strip_prefix("epoch-")?
        .strip_suffix(".json")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What an epoch object stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochRecord {
    pub expired: bool,
    pub validity_ms: u64,
    pub token: u64,
    pub holder_id: String,
    pub acquired_at_ms: u64,
    pub metadata: String,
    /// See `LockRecord::write_id`.
    pub write_id: String,
}

impl EpochRecord {
    /// The fields in sorted order: see `json_out`.
    pub fn to_json(&self) -> Vec<u8> {
        let mut o = JsonObject::default();
        o.seconds("acquired_at", self.acquired_at_ms);
        o.bool("expired", self.expired);
        o.str("holder", &self.holder_id);
        o.str("metadata", &self.metadata);
        o.u64("token", self.token);
        o.u64("validity_ms", self.validity_ms);
        o.str("write", &self.write_id);
        o.finish()
    }

    /// Parses the body of epoch object `epoch`. `expired` and `validity_ms`
    /// are required (the design's fields); `token`, when present, must match
    /// the epoch in the key.
    pub fn from_json(body: &[u8], epoch: u64) -> Result<Self, String> {
        if body.len() > MAX_LOCK_OBJECT_BYTES {
            return Err(too_large(body.len() as u64));
        }
        let value: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
        let Value::Object(map) = value else {
            return Err(format!("expected a JSON object, found {}", kind(&value)));
        };
        let expired = match map.get("expired") {
            Some(Value::Bool(b)) => *b,
            Some(v) => return Err(format!("\"expired\" must be a boolean, found {}", kind(v))),
            None => return Err("missing field \"expired\"".into()),
        };
        let validity_ms = match map.get("validity_ms") {
            Some(v) => v
                .as_u64()
                .filter(|ms| *ms <= MAX_TTL_MS)
                .ok_or_else(|| format!("\"validity_ms\" must be 0 ..= {MAX_TTL_MS}"))?,
            None => return Err("missing field \"validity_ms\"".into()),
        };
        match map.get("token") {
            None | Some(Value::Null) => {}
            Some(v) if v.as_u64() == Some(epoch) => {}
            Some(v) => {
                return Err(format!(
                    "\"token\" is {}, but the key names epoch {epoch}",
                    describe(v)
                ))
            }
        }
        Ok(EpochRecord {
            expired,
            validity_ms,
            token: epoch,
            holder_id: optional_string(&map, "holder")?,
            acquired_at_ms: match map.get("acquired_at") {
                None | Some(Value::Null) => 0,
                Some(v) => epoch_ms("acquired_at", v)?,
            },
            metadata: optional_string(&map, "metadata")?,
            write_id: optional_string(&map, "write")?,
        })
    }
}

/// An error for a reply that lacks what the protocol needs from the server.
fn reply_lacks(r: &S3Response, what: &str) -> Error {
    Error::S3(S3Error {
        message: what.to_string(),
        ..r.s3_error()
    })
}

fn server_time_required(r: &S3Response, header: &str) -> Result<u64, Error> {
    server_time(r, header).ok_or_else(|| {
        reply_lacks(
            r,
            &format!("the reply has no valid {header} header, which epoch-objects needs"),
        )
    })
}

/// Reads a GET of epoch object `epoch`: `None` if it is gone, else its
/// state as `judge` sees it (the server's clock, or how long this client has
/// seen it unchanged). A 304 reuses the state observed before.
fn read_epoch(
    key: &str,
    dir: &str,
    epoch: u64,
    r: S3Response,
    now_ms: u64,
    judge: &Judge,
) -> Result<Option<LockState>, Error> {
    let object_key = epoch_key(dir, epoch);
    let needs_server_time = judge.clock == ExpiryClock::Server;
    match r.status {
        404 if r.is_missing_object() => Ok(None),
        304 => {
            if needs_server_time {
                server_time_required(&r, "date")?;
            }
            match judge.unchanged(&r, now_ms) {
                Some(Ok(state)) if state.record.token == epoch => Ok(Some(state)),
                Some(Err(e)) => Err(e),
                // We asked about another epoch, or about none.
                _ => Err(r.into_error()),
            }
        }
        200 => {
            if let Some(len) = r.body_too_large {
                return Err(Error::corrupt(&object_key, too_large(len)));
            }
            let etag = r.read_etag(&object_key)?;
            let record = EpochRecord::from_json(&r.body, epoch)
                .map_err(|reason| Error::corrupt(&object_key, reason))?;
            let modified = if needs_server_time {
                server_time_required(&r, "date")?;
                Some(server_time_required(&r, "last-modified")?)
            } else {
                server_time(&r, "last-modified")
            };
            // For display: when the server's clock calls it expired.
            let expires_at_ms = match (record.expired, modified) {
                (true, _) => 0,
                (false, m) => m
                    .unwrap_or(0)
                    .saturating_add(record.validity_ms)
                    .saturating_add(SERVER_SLACK_MS),
            };
            let record = LockRecord {
                expires_at_ms,
                token: epoch,
                holder_id: record.holder_id,
                acquired_at_ms: record.acquired_at_ms,
                metadata: record.metadata,
                // 0 would mean "not recorded"; a zero validity is 1 ms.
                ttl_ms: record.validity_ms.max(1),
                write_id: record.write_id,
            };
            let (live, expires_in_ms) = judge.judge(&record, &etag, &r, now_ms)?;
            Ok(Some(LockState {
                key: key.to_string(),
                live,
                expires_in_ms,
                etag,
                record,
                last_modified_ms: modified,
            }))
        }
        _ => Err(r.into_error()),
    }
}

/// GET of epoch `epoch`, conditional when this client has seen it before.
fn get_epoch(dir: &str, epoch: u64, judge: &Judge) -> S3Request {
    let request = S3Request::new(Method::Get, &epoch_key(dir, epoch), MAX_LOCK_OBJECT_BYTES);
    match judge
        .observation
        .as_ref()
        .filter(|o| o.state.record.token == epoch)
    {
        Some(o) => request.header("if-none-match", &o.state.etag),
        None => request,
    }
}

// ---------------------------------------------------------------- listing

/// LIST requests one search for the highest epoch may send: a listing from
/// the start, then galloping and bisecting over the 64-bit epoch space.
pub const MAX_LIST_REQUESTS: u32 = 160;

/// Finds a key's epochs and the highest of them.
///
/// It lists from just below the hint (the highest epoch this client saw), or
/// from the start without one. Cleanup keeps two epochs, so one page nearly
/// always holds them all. When a page is truncated (cleanup lagging far
/// behind, or thousands of leftovers), it does not read page after page: it
/// gallops ahead by doubling steps with `start-after` and bisects back, so a
/// fresh instance finds the highest of a million epochs in about 40 LISTs.
/// If a hinted listing finds nothing, it lists from the start once.
///
/// S3 may answer a page with fewer keys than asked, or none, and still say
/// it is truncated: a truncated page without an epoch is read on with its
/// continuation token (see `continue_after`), never taken as the end.
struct Lister {
    dir: String,
    hint: u64,
    full: bool,
    requests: u32,
    /// Every epoch seen (cleanup deletes the old ones among them).
    epochs: Vec<u64>,
    /// The `start-after` epoch of the page in flight, when it is a probe.
    probe: Option<u64>,
    /// A probe found nothing above this epoch.
    ceiling: Option<u64>,
    step: u64,
}

impl Lister {
    fn new(dir: &str, hint: u64) -> Self {
        Lister {
            dir: dir.to_string(),
            hint,
            full: hint <= KEEP_EPOCHS,
            requests: 0,
            epochs: Vec::new(),
            probe: None,
            ceiling: None,
            step: u64::from(crate::s3::LIST_PAGE_KEYS),
        }
    }

    fn first(&mut self) -> S3Request {
        self.epochs.clear();
        self.probe = None;
        self.ceiling = None;
        // From the oldest epoch cleanup keeps, so the grant that follows
        // still sees the one it should delete.
        let after = (!self.full).then(|| epoch_key(&self.dir, self.hint - KEEP_EPOCHS));
        self.request(after.as_deref())
    }

    fn request(&mut self, start_after: Option<&str>) -> S3Request {
        self.requests += 1;
        list_request(&listing_prefix(&self.dir), start_after)
    }

    /// The page after `page`, which was truncated.
    fn continue_after(&mut self, page: &ListPage, r: &S3Response) -> Result<S3Request, Error> {
        if self.requests >= MAX_LIST_REQUESTS {
            return Err(self.did_not_converge());
        }
        let token = continuation(page, r, &self.dir)?;
        self.requests += 1;
        Ok(list_continue(&listing_prefix(&self.dir), token))
    }

    fn did_not_converge(&self) -> Error {
        Error::S3(S3Error {
            status: 200,
            message: format!(
                "the highest epoch under {:?} was not found in {MAX_LIST_REQUESTS} LISTs",
                listing_prefix(&self.dir)
            ),
            ..S3Error::default()
        })
    }

    fn probe_after(&mut self, epoch: u64) -> Result<Option<S3Request>, Error> {
        if self.requests >= MAX_LIST_REQUESTS {
            return Err(self.did_not_converge());
        }
        self.probe = Some(epoch);
        let key = epoch_key(&self.dir, epoch);
        Ok(Some(self.request(Some(&key))))
    }

    /// The next request, or `None` once the highest epoch is known.
    fn on_page(&mut self, r: S3Response) -> Result<Option<S3Request>, Error> {
        let page = read_page(&r)?;
        self.on_listed(&page, &r)
    }

    /// `on_page` once the reply `r` is read as `page`.
    fn on_listed(&mut self, page: &ListPage, r: &S3Response) -> Result<Option<S3Request>, Error> {
        let found: Vec<u64> = page
            .keys
            .iter()
            .filter_map(|k| parse_epoch_key(&self.dir, k))
            .collect();
        self.epochs.extend(&found);
        let probe = self.probe.take();
        if page.truncated {
            if found.is_empty() {
                // Only foreign keys on this page, or no keys at all: read
                // on, still answering the same probe. Taking it as the end
                // would miss every epoch beyond it.
                let next = self.continue_after(page, r)?;
                self.probe = probe;
                return Ok(Some(next));
            }
            // More beyond this page: gallop, or bisect below a ceiling.
            return self.search();
        }
        match probe {
            // Nothing above the probe: the highest is at most the probe.
            Some(p) if found.is_empty() => {
                self.ceiling = Some(p);
                self.search()
            }
            // A last page (after a probe or not): everything above is known.
            _ => self.finish(),
        }
    }

    /// The next probe once the last page left the highest epoch open.
    ///
    /// Invariant: `low` (the highest epoch seen, 0 for none) exists, and no
    /// epoch is above `ceiling` (a probe after it found none), so the
    /// highest lies in `low ..= ceiling`; a probe after `m` is a LIST with
    /// `start-after` epoch `m`, which lists epochs above `m` only. Probing
    /// after `m` with `low <= m < ceiling` either finds an epoch above `m`
    /// (`low` rises past `m`) or none (`ceiling` falls to `m`): the range
    /// shrinks every time, and the search ends exactly when `ceiling ==
    /// low`, the highest then known. Stopping at `ceiling == low + 1` (as
    /// it once did) never asked whether epoch `ceiling` itself exists: with
    /// dense epochs 1..201 it found 200.
    fn search(&mut self) -> Result<Option<S3Request>, Error> {
        let low = self.highest().unwrap_or(0);
        match self.ceiling {
            Some(ceiling) if ceiling <= low => self.finish(),
            Some(ceiling) => self.probe_after(low + (ceiling - low) / 2),
            // No ceiling yet: gallop by doubling steps. Nothing can be
            // above `u64::MAX`.
            None if low == u64::MAX => self.finish(),
            None => {
                self.step = self.step.saturating_mul(2);
                self.probe_after(low.saturating_add(self.step))
            }
        }
    }

    fn finish(&mut self) -> Result<Option<S3Request>, Error> {
        if self.epochs.is_empty() && !self.full {
            self.full = true;
            return Ok(Some(self.first()));
        }
        Ok(None)
    }

    fn highest(&self) -> Option<u64> {
        self.epochs.iter().copied().max()
    }
}

/// Looks for any epoch above `mine`, following pages past foreign keys:
/// after a create, and after every renew or release, a higher epoch means
/// ours is superseded. It fails closed: "nothing higher" only from a page
/// that is not truncated; a truncated page (short, empty, or all foreign
/// keys) is followed with its continuation token, and one without a token,
/// or more than `MAX_LIST_REQUESTS` pages, is an error, never a grant.
struct HigherCheck {
    dir: String,
    pages: u32,
}

enum Higher {
    Found,
    None,
    Next(S3Request),
}

impl HigherCheck {
    fn start(dir: &str, mine: u64) -> (Self, S3Request) {
        let check = HigherCheck {
            dir: dir.to_string(),
            pages: 1,
        };
        let request = list_request(&listing_prefix(dir), Some(&epoch_key(dir, mine)));
        (check, request)
    }

    fn on_page(&mut self, r: S3Response) -> Result<Higher, Error> {
        let page = read_page(&r)?;
        // Every key of the page sorts after ours, so any epoch on it is higher.
        if page
            .keys
            .iter()
            .filter_map(|k| parse_epoch_key(&self.dir, k))
            .next()
            .is_some()
        {
            return Ok(Higher::Found);
        }
        if !page.truncated {
            return Ok(Higher::None);
        }
        if self.pages >= MAX_LIST_REQUESTS {
            return Err(reply_lacks_list(&self.dir));
        }
        let token = continuation(&page, &r, &self.dir)?;
        self.pages += 1;
        Ok(Higher::Next(list_continue(
            &listing_prefix(&self.dir),
            token,
        )))
    }
}

fn reply_lacks_list(dir: &str) -> Error {
    Error::S3(S3Error {
        status: 200,
        message: format!(
            "more than {MAX_LIST_REQUESTS} LIST pages without an epoch under {:?}",
            listing_prefix(dir)
        ),
        ..S3Error::default()
    })
}

/// The token that continues truncated `page`. Without one the rest of the
/// listing cannot be read, and what it holds cannot be known: an error.
fn continuation<'a>(page: &'a ListPage, r: &S3Response, dir: &str) -> Result<&'a str, Error> {
    page.next_token.as_deref().ok_or_else(|| {
        reply_lacks(
            r,
            &format!(
                "a truncated LIST page under {:?} has no NextContinuationToken to read on from",
                listing_prefix(dir)
            ),
        )
    })
}

fn read_page(r: &S3Response) -> Result<ListPage, Error> {
    if r.status != 200 {
        return Err(r.clone().into_error());
    }
    if let Some(len) = r.body_too_large {
        return Err(reply_lacks(
            r,
            &format!("the LIST reply is {len} bytes, more than this client reads"),
        ));
    }
    parse_list(&r.body)
        .map_err(|reason| reply_lacks(r, &format!("unreadable ListObjectsV2 reply: {reason}")))
}

// ------------------------------------------------------------ try-acquire

enum Phase {
    Listing,
    Reading(u64),
    Creating(Lease),
    /// Our create may have landed (its reply was lost): read our epoch and
    /// look for our write id.
    Recognising(Lease, Error),
    Verifying(Lease, HigherCheck),
}

pub struct EpochTryAcquire {
    key: String,
    dir: String,
    grant: Grant,
    seal: LockSeal,
    judge: Judge,
    write_id: String,
    lister: Lister,
    phase: Phase,
    rereads: u32,
    /// A create of ours went out without a clear answer and may land late.
    ambiguous: bool,
    /// When the first create was sent: whichever attempt lands, the lease
    /// counts from here (the earliest), never from a later attempt.
    first_create_ms: Option<u64>,
}

/// A try-acquire's outcome and the old epoch objects to delete after it.
pub type EpochOutcome = (AcquireOutcome, Vec<String>);

impl EpochTryAcquire {
    /// `hint`: the highest epoch this client has seen on the key (0: none);
    /// `write_id`: recorded in the epoch we create, to recognise it after a
    /// lost reply.
    pub fn new(
        key: String,
        dir: String,
        grant: Grant,
        seal: LockSeal,
        judge: Judge,
        write_id: String,
        hint: u64,
    ) -> Self {
        EpochTryAcquire {
            lister: Lister::new(&dir, hint),
            key,
            dir,
            grant,
            seal,
            judge,
            write_id,
            phase: Phase::Listing,
            rereads: 0,
            ambiguous: false,
            first_create_ms: None,
        }
    }

    fn decide_after_listing(&mut self, now_ms: u64) -> Step<EpochOutcome> {
        let hint = self.lister.hint;
        match self.lister.highest() {
            Some(h) if h >= hint => {
                self.phase = Phase::Reading(h);
                Step::Send(get_epoch(&self.dir, h, &self.judge))
            }
            // Nothing at or above the epoch this client saw last: it was
            // wiped, but tokens must not go back.
            Some(_) | None => self.create(hint, now_ms),
        }
    }

    fn create(&mut self, previous: u64, now_ms: u64) -> Step<EpochOutcome> {
        let Some(epoch) = previous.checked_add(1) else {
            return Step::Done(Err(Error::corrupt(
                &epoch_key(&self.dir, previous),
                "the epoch is at its maximum and cannot rise",
            )));
        };
        let started_ms = *self.first_create_ms.get_or_insert(now_ms);
        let g = &self.grant;
        let expires_at_ms = started_ms.saturating_add(g.ttl_ms);
        if let Err(e) = check_writable_time(expires_at_ms) {
            return Step::Done(Err(e));
        }
        let record = EpochRecord {
            expired: false,
            validity_ms: g.ttl_ms,
            token: epoch,
            holder_id: g.holder_id.clone(),
            acquired_at_ms: now_ms,
            metadata: g.metadata.clone(),
            write_id: self.write_id.clone(),
        };
        let lease = Lease {
            key: self.key.clone(),
            token: epoch,
            holder_id: g.holder_id.clone(),
            etag: String::new(),
            expires_at_ms,
            acquired_at_ms: now_ms,
            ttl_ms: g.ttl_ms,
            metadata: g.metadata.clone(),
            seal: String::new(),
        };
        self.phase = Phase::Creating(lease);
        Step::Send(
            S3Request::new(
                Method::Put,
                &epoch_key(&self.dir, epoch),
                MAX_LOCK_OBJECT_BYTES,
            )
            .header("if-none-match", "*")
            .body(JSON, record.to_json()),
        )
    }

    /// The epoch we read vanished, or the store asked us to retry: list again.
    fn reread(&mut self, r: S3Response) -> Step<EpochOutcome> {
        if self.rereads >= MAX_REREADS {
            return Step::Done(Err(match r.into_error() {
                Error::S3(e) => Error::Conflict(e),
                other => other,
            }));
        }
        self.rereads += 1;
        self.phase = Phase::Listing;
        Step::Send(self.lister.first())
    }

    /// Reads our own epoch to learn whether our create landed.
    fn recognise(&mut self, lease: Lease, error: Error) -> Step<EpochOutcome> {
        self.ambiguous = true;
        if self.rereads >= MAX_REREADS {
            return Step::Done(Err(error));
        }
        self.rereads += 1;
        let request = S3Request::new(
            Method::Get,
            &epoch_key(&self.dir, lease.token),
            MAX_LOCK_OBJECT_BYTES,
        );
        self.phase = Phase::Recognising(lease, error);
        Step::Send(request)
    }

    fn verify(&mut self, lease: Lease) -> Step<EpochOutcome> {
        let (check, request) = HigherCheck::start(&self.dir, lease.token);
        self.phase = Phase::Verifying(lease, check);
        Step::Send(request)
    }

    /// Old epochs to delete once `epoch` is granted, oldest first.
    fn cleanup(&self, epoch: u64) -> Vec<String> {
        let old = oldest_distinct(&self.lister.epochs, |e| {
            e.saturating_add(KEEP_EPOCHS) <= epoch
        });
        old.into_iter().map(|e| epoch_key(&self.dir, e)).collect()
    }
}

/// The smallest distinct `epochs` that pass `wanted`, ascending, at most
/// `MAX_CLEANUP_PER_GRANT`: picked one by one rather than sorted (a sort
/// instantiation costs the component kilobytes).
fn oldest_distinct(epochs: &[u64], wanted: impl Fn(u64) -> bool) -> Vec<u64> {
    let mut old: Vec<u64> = Vec::new();
    while old.len() < MAX_CLEANUP_PER_GRANT {
        let above = old.last().copied();
        let next = epochs
            .iter()
            .copied()
            .filter(|&e| wanted(e) && above.is_none_or(|a| e > a))
            .min();
        match next {
            Some(e) => old.push(e),
            None => break,
        }
    }
    old
}

impl Operation for EpochTryAcquire {
    type Output = EpochOutcome;

    fn start(&mut self, _now_ms: u64) -> Step<EpochOutcome> {
        Step::Send(self.lister.first())
    }

    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<EpochOutcome> {
        match core::mem::replace(&mut self.phase, Phase::Listing) {
            Phase::Listing => match self.lister.on_page(r) {
                Ok(Some(next)) => Step::Send(next),
                Ok(None) => self.decide_after_listing(now_ms),
                Err(e) => Step::Done(Err(e)),
            },
            // Cleaned up after a newer grant between our LIST and GET.
            Phase::Reading(_) if r.status == 404 && r.is_missing_object() => self.reread(r),
            Phase::Reading(epoch) => {
                match read_epoch(&self.key, &self.dir, epoch, r, now_ms, &self.judge) {
                    Ok(Some(s)) if s.live && s.record.holder_id != self.grant.holder_id => {
                        Step::Done(Ok((AcquireOutcome::Held(Some(s)), Vec::new())))
                    }
                    Ok(_) => self.create(epoch, now_ms),
                    Err(e) => Step::Done(Err(e)),
                }
            }
            Phase::Creating(mut lease) => match r.status {
                200 => {
                    let ours = epoch_key(&self.dir, lease.token);
                    match r.written_etag(&ours) {
                        Ok(etag) => {
                            lease.etag = etag;
                            self.verify(lease)
                        }
                        Err(e) => Step::Done(Err(e)),
                    }
                }
                // Lost the race, unless our own earlier create landed late.
                412 if self.ambiguous => self.recognise(lease, r.into_error()),
                412 => Step::Done(Ok((AcquireOutcome::Held(None), Vec::new()))),
                _ if r.status == 409 || r.is_missing_object() => self.reread(r),
                _ if is_ambiguous(&r) => self.recognise(lease, r.into_error()),
                _ => Step::Done(Err(r.into_error())),
            },
            Phase::Recognising(mut lease, error) => match r.status {
                404 if r.is_missing_object() => {
                    // It did not land: create it again (same write id).
                    self.create(lease.token.saturating_sub(1), now_ms)
                }
                200 => match EpochRecord::from_json(&r.body, lease.token) {
                    Ok(found) if found.write_id == self.write_id => {
                        match r.read_etag(&epoch_key(&self.dir, lease.token)) {
                            Ok(etag) => {
                                lease.etag = etag;
                                self.verify(lease)
                            }
                            Err(e) => Step::Done(Err(e)),
                        }
                    }
                    // Someone else's epoch: we lost the race.
                    _ => Step::Done(Ok((AcquireOutcome::Held(None), Vec::new()))),
                },
                _ => Step::Done(Err(error)),
            },
            // Our create succeeded, but if the epoch had existed and been
            // cleaned up after a newer one, we re-created a stale epoch: a
            // newer one is listed. Then the grant is void. If this LIST
            // fails, the error is returned and our fresh epoch blocks the
            // key until its validity runs out, as a crashed holder's would.
            Phase::Verifying(lease, mut check) => match check.on_page(r) {
                Ok(Higher::Next(request)) => {
                    self.phase = Phase::Verifying(lease, check);
                    Step::Send(request)
                }
                // Our epoch exists; a failed check would leave it blocking
                // the key with nobody holding it. Check again, a few times.
                Err(e) if e.is_transient() && self.rereads < MAX_REREADS => {
                    self.rereads += 1;
                    self.verify(lease)
                }
                Ok(Higher::Found) => Step::Done(Ok((AcquireOutcome::Held(None), Vec::new()))),
                // Granted, but known only after it lapsed: no lease.
                Ok(Higher::None) if now_ms > lease.expires_at_ms => {
                    Step::Done(Ok((AcquireOutcome::Held(None), Vec::new())))
                }
                Ok(Higher::None) => {
                    let cleanup = self.cleanup(lease.token);
                    let lease = self.seal.seal(lease);
                    Step::Done(Ok((AcquireOutcome::Granted(lease), cleanup)))
                }
                Err(e) => Step::Done(Err(e)),
            },
        }
    }

    fn on_transport_error(&mut self, error: Error, _now_ms: u64) -> Step<EpochOutcome> {
        match core::mem::replace(&mut self.phase, Phase::Listing) {
            Phase::Creating(lease) => self.recognise(lease, error),
            Phase::Recognising(lease, _) => self.recognise(lease, error),
            Phase::Verifying(lease, _) if self.rereads < MAX_REREADS => {
                self.rereads += 1;
                self.verify(lease)
            }
            _ => Step::Done(Err(error)),
        }
    }
}

/// Deletes old epoch objects one by one, ignoring failures: cleanup keeps
/// listings short but is never needed for safety.
pub struct Cleanup {
    keys: Vec<String>,
}

impl Cleanup {
    pub fn new(mut keys: Vec<String>) -> Self {
        keys.reverse();
        Cleanup { keys }
    }

    fn next(&mut self) -> Step<()> {
        match self.keys.pop() {
            Some(key) => Step::Send(S3Request::new(Method::Delete, &key, MAX_LOCK_OBJECT_BYTES)),
            None => Step::Done(Ok(())),
        }
    }
}

impl Operation for Cleanup {
    type Output = ();
    fn start(&mut self, _now_ms: u64) -> Step<()> {
        self.next()
    }
    fn on_response(&mut self, _r: S3Response, _now_ms: u64) -> Step<()> {
        self.next()
    }
}

// ---------------------------------------------------------------- inspect

pub struct EpochInspect {
    key: String,
    dir: String,
    judge: Judge,
    lister: Lister,
    reading: Option<u64>,
    rereads: u32,
}

impl EpochInspect {
    pub fn new(key: String, dir: String, judge: Judge, hint: u64) -> Self {
        EpochInspect {
            lister: Lister::new(&dir, hint),
            key,
            dir,
            judge,
            reading: None,
            rereads: 0,
        }
    }
}

impl Operation for EpochInspect {
    type Output = Option<LockState>;

    fn start(&mut self, _now_ms: u64) -> Step<Self::Output> {
        Step::Send(self.lister.first())
    }

    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<Self::Output> {
        if let Some(epoch) = self.reading.take() {
            return match read_epoch(&self.key, &self.dir, epoch, r, now_ms, &self.judge) {
                // Cleaned up after a newer grant between our LIST and GET.
                Ok(None) if self.rereads < MAX_REREADS => {
                    self.rereads += 1;
                    Step::Send(self.lister.first())
                }
                result => Step::Done(result),
            };
        }
        match self.lister.on_page(r) {
            Ok(Some(next)) => Step::Send(next),
            Ok(None) => match self.lister.highest() {
                None => Step::Done(Ok(None)),
                Some(epoch) => {
                    self.reading = Some(epoch);
                    Step::Send(get_epoch(&self.dir, epoch, &self.judge))
                }
            },
            Err(e) => Step::Done(Err(e)),
        }
    }
}

// ------------------------------------------------------- renew / release

/// Rewrites our own epoch object, `If-Match` on the etag of our last write:
/// renew (same record, new `Last-Modified`) or release (`"expired": true`).
/// Then it lists past our epoch: a higher epoch (a takeover, or our own
/// holder id taking the key again) means ours is superseded and the lease
/// is lost, whatever the write did. Never a write without a condition: on a
/// store that answers 501 to `If-Match`, renew and release fail and the
/// lease lapses after its validity.
pub struct EpochRewrite {
    lease: Lease,
    dir: String,
    seal: LockSeal,
    release: bool,
    write_id: String,
    attempts: u32,
    sent_at_ms: u64,
    phase: RewritePhase,
}

enum RewritePhase {
    Writing,
    /// Our write may have landed (its reply was lost): reading our epoch
    /// to look for our write id.
    Recognising(Error),
    /// The write landed with this etag; looking for a higher epoch.
    Verifying(String, HigherCheck),
    /// Our epoch was superseded: reading who holds the key now, for `lost`.
    Inspecting(Box<EpochInspect>),
}

impl EpochRewrite {
    pub fn renew(lease: Lease, dir: String, seal: LockSeal, write_id: String) -> Self {
        Self::new(lease, dir, seal, write_id, false)
    }

    pub fn release(lease: Lease, dir: String, seal: LockSeal, write_id: String) -> Self {
        Self::new(lease, dir, seal, write_id, true)
    }

    fn new(lease: Lease, dir: String, seal: LockSeal, write_id: String, release: bool) -> Self {
        EpochRewrite {
            lease,
            dir,
            seal,
            release,
            write_id,
            attempts: 0,
            sent_at_ms: 0,
            phase: RewritePhase::Writing,
        }
    }

    fn write(&mut self, now_ms: u64) -> Step<Lease> {
        let l = &self.lease;
        let record = EpochRecord {
            expired: self.release,
            validity_ms: l.ttl_ms,
            token: l.token,
            holder_id: l.holder_id.clone(),
            acquired_at_ms: l.acquired_at_ms,
            metadata: l.metadata.clone(),
            // Also makes every renew's bytes, so its etag, new.
            write_id: self.write_id.clone(),
        };
        let request = S3Request::new(
            Method::Put,
            &epoch_key(&self.dir, l.token),
            MAX_LOCK_OBJECT_BYTES,
        )
        .header("if-match", &l.etag)
        .body(JSON, record.to_json());
        // The first attempt's time: when a later reply tells us only that
        // one of our attempts landed, the lease counts from the earliest.
        if self.attempts == 0 {
            self.sent_at_ms = now_ms;
        }
        self.phase = RewritePhase::Writing;
        Step::Send(request)
    }

    fn lost(&self) -> Step<Lease> {
        self.lost_to(None)
    }

    fn lost_to(&self, current: Option<LockState>) -> Step<Lease> {
        Step::Done(Err(Error::Lost {
            key: self.lease.key.clone(),
            token: self.lease.token,
            current: current.map(Box::new),
        }))
    }

    /// Our epoch was superseded: find who holds the key now (LIST, GET) to
    /// name them in `lost`.
    fn inspect(&mut self, now_ms: u64) -> Step<Lease> {
        let judge = Judge::new(ExpiryClock::Server, None);
        let mut op = EpochInspect::new(
            self.lease.key.clone(),
            self.dir.clone(),
            judge,
            self.lease.token,
        );
        let step = op.start(now_ms);
        self.phase = RewritePhase::Inspecting(Box::new(op));
        self.forward(step)
    }

    fn forward(&mut self, step: Step<Option<LockState>>) -> Step<Lease> {
        match step {
            Step::Send(request) => Step::Send(request),
            // Whatever the reading found (or failed to), the lease is lost.
            Step::Done(found) => self.lost_to(found.ok().flatten()),
        }
    }

    /// Our write landed with `etag`: unless it came too late, look for a
    /// newer epoch.
    fn landed(&mut self, etag: String, now_ms: u64) -> Step<Lease> {
        // A renew that landed after our expiry may have come after a
        // reader judged the epoch expired and created the next one.
        if !self.release && now_ms > self.lease.expires_at_ms {
            return self.lost();
        }
        let (check, request) = HigherCheck::start(&self.dir, self.lease.token);
        self.phase = RewritePhase::Verifying(etag, check);
        Step::Send(request)
    }

    /// Reads our epoch to learn whether a write without a clear answer landed.
    fn recognise(&mut self, error: Error) -> Step<Lease> {
        if self.attempts >= MAX_REREADS {
            return Step::Done(Err(error));
        }
        self.attempts += 1;
        self.phase = RewritePhase::Recognising(error);
        Step::Send(S3Request::new(
            Method::Get,
            &epoch_key(&self.dir, self.lease.token),
            MAX_LOCK_OBJECT_BYTES,
        ))
    }

    fn on_recognising(&mut self, r: S3Response, error: Error, now_ms: u64) -> Step<Lease> {
        if r.status != 200 {
            return if r.is_missing_object() {
                self.inspect(now_ms)
            } else {
                Step::Done(Err(error))
            };
        }
        let object_key = epoch_key(&self.dir, self.lease.token);
        let etag = match r.read_etag(&object_key) {
            Ok(etag) => etag,
            Err(e) => return Step::Done(Err(e)),
        };
        match EpochRecord::from_json(&r.body, self.lease.token) {
            Ok(found) if found.write_id == self.write_id => self.landed(etag, now_ms),
            // Untouched: ours did not land; write again.
            _ if etag == self.lease.etag => self.write(now_ms),
            _ => self.inspect(now_ms),
        }
    }

    fn on_written(&mut self, r: S3Response, now_ms: u64) -> Step<Lease> {
        match r.status {
            200 => match r.written_etag(&epoch_key(&self.dir, self.lease.token)) {
                Ok(etag) => self.landed(etag, now_ms),
                Err(e) => Step::Done(Err(e)),
            },
            501 => Step::Done(Err(Error::S3(S3Error {
                message: "the store does not support If-Match, which renewing or releasing an \
                          epoch-objects lease needs; the lease lapses after its ttl"
                    .into(),
                ..r.s3_error()
            }))),
            409 if self.attempts < MAX_REREADS => {
                self.attempts += 1;
                self.write(now_ms)
            }
            // A failed condition after an earlier attempt that may have
            // landed: ours or someone else's?
            412 if self.attempts > 0 => self.recognise(r.into_error()),
            _ if r.status == 412 || r.is_missing_object() => self.inspect(now_ms),
            _ if is_ambiguous(&r) => self.recognise(r.into_error()),
            _ => Step::Done(Err(r.into_error())),
        }
    }
}

impl Operation for EpochRewrite {
    type Output = Lease;

    fn start(&mut self, now_ms: u64) -> Step<Lease> {
        if let Err(e) = self
            .seal
            .check(&self.lease)
            .and(self.lease.check_as_returned())
        {
            return Step::Done(Err(e));
        }
        // Past our expiry a successor may exist; writing could only make a
        // dead epoch look alive.
        if now_ms > self.lease.expires_at_ms {
            return self.lost();
        }
        self.write(now_ms)
    }

    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<Lease> {
        match core::mem::replace(&mut self.phase, RewritePhase::Writing) {
            RewritePhase::Writing => self.on_written(r, now_ms),
            RewritePhase::Recognising(error) => self.on_recognising(r, error, now_ms),
            RewritePhase::Inspecting(mut op) => {
                let step = op.on_response(r, now_ms);
                self.phase = RewritePhase::Inspecting(op);
                self.forward(step)
            }
            RewritePhase::Verifying(etag, mut check) => match check.on_page(r) {
                Ok(Higher::Next(request)) => {
                    self.phase = RewritePhase::Verifying(etag, check);
                    Step::Send(request)
                }
                Ok(Higher::Found) => self.inspect(now_ms),
                Err(e) if e.is_transient() && self.attempts < MAX_REREADS => {
                    self.attempts += 1;
                    self.landed(etag, now_ms)
                }
                Ok(Higher::None) => Step::Done(Ok(self.seal.seal(Lease {
                    etag,
                    expires_at_ms: if self.release {
                        0
                    } else {
                        self.sent_at_ms.saturating_add(self.lease.ttl_ms)
                    },
                    ..self.lease.clone()
                }))),
                Err(e) => Step::Done(Err(e)),
            },
        }
    }

    fn on_transport_error(&mut self, error: Error, now_ms: u64) -> Step<Lease> {
        match core::mem::replace(&mut self.phase, RewritePhase::Writing) {
            RewritePhase::Writing | RewritePhase::Recognising(_) => self.recognise(error),
            RewritePhase::Verifying(etag, _) if self.attempts < MAX_REREADS => {
                self.attempts += 1;
                self.landed(etag, now_ms)
            }
            // Whatever we were reading for `lost`, the lease is lost.
            RewritePhase::Inspecting(_) => self.lost(),
            RewritePhase::Verifying(..) => Step::Done(Err(error)),
        }
    }
}

#[cfg(test)]
mod tests;

//! The log's writes, each a create-only PUT of one record.
//!
//! A grantee that takes over (or a semaphore's grantee that drops) a lease
//! its holder never released first writes that lease's record from what
//! the lock object held, marked as back-filled by it (`Backfiller`, before
//! its granting write: a grant a holder crashed before recording, or never
//! learned of, is recorded by whoever comes next, and the next one may
//! crash too). Then `RecordGrant` writes the grant's own record. When
//! that is already there, it reads it:
//!
//! - ours (the same token, holder and acquire time): our earlier write
//!   whose reply was lost, or a successor's back-fill of it, which means
//!   our grant was already taken over (`Recorded::TakenOver`);
//! - another grant's: the store granted this token twice. The grantee
//!   records that (`<token>.collision.json`) and fails with
//!   `audit::collision`; it never acts on the grant.
//!
//! `RecordRelease` writes a release's record, once, best effort: the
//! release has happened, and the next grant's record says it saw it.

use crate::prelude::*;

use super::names::{record_key, Kind};
use super::record::{Record, WriteTimes, MAX_RECORD_BYTES};
use crate::error::Error;
use crate::limits::MAX_REREADS;
use crate::lock_object::LockState;
use crate::protocol::{is_ambiguous, Operation, Step};
use crate::stores::s3::{Method, S3Request, S3Response, UNREADABLE_HEADER};

const JSON: &str = "application/json";

/// A create-only PUT of `record` in `dir`.
fn create(dir: &str, record: &Record) -> Result<S3Request, Error> {
    let name = record_key(dir, record.token, record.kind);
    let body = record.to_json();
    if body.len() > MAX_RECORD_BYTES {
        return Err(Error::InvalidArgument(format!(
            "the grant log's record {name:?} would be {} bytes; at most {MAX_RECORD_BYTES}",
            body.len()
        )));
    }
    Ok(S3Request::new(Method::Put, &name, MAX_RECORD_BYTES)
        .header("if-none-match", "*")
        .body(JSON, body))
}

/// What recording a grant found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The record is the grant's: the grant may be used.
    Ours,
    /// A successor already back-filled this grant's record (`by`, its
    /// holder id): the grant was taken over before it was recorded, and
    /// is no lease.
    TakenOver { by: String },
}

enum Phase {
    Writing,
    Reading,
    Colliding(Box<Record>),
}

/// Writes a grant's record: see the module comment.
pub struct RecordGrant {
    dir: String,
    ours: Record,
    /// The grant's condition was `If-None-Match: *` (a create), not
    /// `If-Match`: which preflight capability a collision fails.
    created: bool,
    attempts: u32,
    reads: u32,
    last_error: Option<Error>,
    phase: Phase,
}

impl RecordGrant {
    pub fn new(dir: String, ours: Record, created: bool) -> Self {
        RecordGrant {
            dir,
            ours,
            created,
            attempts: 0,
            reads: 0,
            last_error: None,
            phase: Phase::Writing,
        }
    }

    fn write(&mut self) -> Step<Recorded> {
        if self.attempts > MAX_REREADS {
            return Step::Done(Err(self.last_error.take().unwrap_or_else(|| {
                Error::Transport("the grant's record could not be written".into())
            })));
        }
        self.attempts += 1;
        self.phase = Phase::Writing;
        match create(&self.dir, &self.ours) {
            Ok(request) => Step::Send(request),
            Err(e) => Step::Done(Err(e)),
        }
    }

    fn read(&mut self, error: Error) -> Step<Recorded> {
        self.reads += 1;
        if self.reads > 2 * MAX_REREADS {
            return Step::Done(Err(error));
        }
        self.last_error = Some(error);
        self.phase = Phase::Reading;
        let name = record_key(&self.dir, self.ours.token, Kind::Grant);
        Step::Send(S3Request::new(Method::Get, &name, MAX_RECORD_BYTES))
    }

    fn found(&mut self, r: &S3Response) -> Step<Recorded> {
        let name = record_key(&self.dir, self.ours.token, Kind::Grant);
        if let Some(reason) = r.header(UNREADABLE_HEADER) {
            return Step::Done(Err(Error::corrupt(&name, reason)));
        }
        let theirs = match Record::from_json(&r.body) {
            Ok(record) => record,
            Err(reason) => return Step::Done(Err(Error::corrupt(&name, reason))),
        };
        if theirs.same_grant(&self.ours) {
            if theirs.backfilled && theirs.written_by != self.ours.written_by {
                return Step::Done(Ok(Recorded::TakenOver {
                    by: theirs.written_by,
                }));
            }
            return Step::Done(Ok(Recorded::Ours));
        }
        // Another grant of our token: say so where verify will find it.
        let mut collision = self.ours.clone();
        collision.kind = Kind::Collision;
        match create(&self.dir, &collision) {
            Ok(request) => {
                self.phase = Phase::Colliding(Box::new(theirs));
                Step::Send(request)
            }
            Err(_) => self.collided(&theirs),
        }
    }

    fn collided(&self, theirs: &Record) -> Step<Recorded> {
        Step::Done(Err(super::collision(
            &self.ours.key,
            self.ours.token,
            self.created,
            &self.ours.holder,
            theirs,
        )))
    }
}

impl Operation for RecordGrant {
    type Output = Recorded;

    fn start(&mut self, _now_ms: u64) -> Step<Recorded> {
        self.write()
    }

    fn on_response(&mut self, r: S3Response, _now_ms: u64) -> Step<Recorded> {
        match core::mem::replace(&mut self.phase, Phase::Writing) {
            Phase::Writing => match r.status {
                200 => Step::Done(Ok(Recorded::Ours)),
                // There already: ours from an earlier attempt, a
                // successor's back-fill of ours, or another grant's.
                409 | 412 => self.read(r.into_error()),
                _ if is_ambiguous(&r) => self.read(r.into_error()),
                _ => Step::Done(Err(r.into_error())),
            },
            Phase::Reading => match r.status {
                200 => self.found(&r),
                // Not there (a 409 while another write of it was under
                // way, or our ambiguous write did not land): again.
                _ if r.is_missing_object() => self.write(),
                _ if is_ambiguous(&r) => self.read(r.into_error()),
                _ => Step::Done(Err(r.into_error())),
            },
            Phase::Colliding(theirs) => self.collided(&theirs),
        }
    }

    fn on_transport_error(&mut self, error: Error, _now_ms: u64) -> Step<Recorded> {
        match core::mem::replace(&mut self.phase, Phase::Writing) {
            Phase::Writing | Phase::Reading => self.read(error),
            Phase::Colliding(theirs) => self.collided(&theirs),
        }
    }
}

/// What a lock's grant leaves for the grant log: the back-filler of a
/// lease taken over unreleased (set when the log is on), the lock object
/// its write replaced (`None`: it created it) and the store's times of
/// that write. Kept by both strategies' grant operations.
#[derive(Debug, Clone, Default)]
pub struct GrantTrail {
    pub backfiller: Option<Backfiller>,
    pub replaced: Option<LockState>,
    pub write_times: WriteTimes,
}

/// What a grantee writes back-fills as, and where: set on the grant
/// operations when the log is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backfiller {
    pub dir: String,
    pub key: String,
    /// The grantee's holder id.
    pub written_by: String,
    pub strategy: String,
    pub limit: u32,
    pub clock: String,
}

impl Backfiller {
    /// The create-only PUTs of the records of the leases in `state` that
    /// were never released and that the grant drops: every holder whose
    /// token `kept` does not name (a lock's one holder, with `kept`
    /// naming none).
    pub fn requests(&self, state: &LockState, kept: impl Fn(u64) -> bool) -> Vec<S3Request> {
        let holders: Vec<(u64, &str, u64, u64, Option<u64>)> = match &state.semaphore {
            Some(sem) => sem
                .record
                .holders
                .iter()
                .map(|e| {
                    let written = e.written_at_ms.or(state.last_modified_ms);
                    (
                        e.token,
                        e.holder_id.as_str(),
                        e.acquired_at_ms,
                        e.ttl_ms,
                        written,
                    )
                })
                .collect(),
            None if state.record.expires_at_ms == 0 => Vec::new(),
            None => vec![(
                state.record.token,
                state.record.holder_id.as_str(),
                state.record.acquired_at_ms,
                state.record.ttl_ms,
                state.last_modified_ms,
            )],
        };
        holders
            .into_iter()
            .filter(|(token, ..)| *token > 0 && !kept(*token))
            .filter_map(|(token, holder, acquired_at_ms, ttl_ms, written)| {
                let record = Record {
                    kind: Kind::Grant,
                    key: self.key.clone(),
                    token,
                    holder: holder.to_string(),
                    acquired_at_ms,
                    ttl_ms,
                    strategy: self.strategy.clone(),
                    limit: self.limit,
                    clock: self.clock.clone(),
                    write: WriteTimes {
                        etag: state.etag.clone(),
                        date_ms: state.date_ms,
                        modified_ms: written,
                    },
                    previous: None,
                    written_by: self.written_by.clone(),
                    backfilled: true,
                };
                create(&self.dir, &record).ok()
            })
            .collect()
    }
}

/// Back-fills sent before a grant's write, one at a time; the write goes
/// out once each is there (written now, or already: 200 or 412). A 409 is
/// the store's "try again" (a conflicting write of the same record under
/// way, or one injected): the same back-fill is sent again, a bounded
/// number of times, never taken as written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pending {
    requests: Vec<S3Request>,
    sent: Option<S3Request>,
    conflicts: u32,
}

impl Pending {
    pub fn new(mut requests: Vec<S3Request>) -> Self {
        requests.reverse();
        Pending {
            requests,
            sent: None,
            conflicts: 0,
        }
    }

    /// The next back-fill to send, if any is left.
    pub fn next_request(&mut self) -> Option<S3Request> {
        self.sent = self.requests.pop();
        self.sent.clone()
    }

    /// A back-fill's reply: what to send next (the same back-fill again
    /// after a 409, or the next one), or `None` once every one is there.
    /// Any other reply ends the attempt, unwritten: a grant goes out only
    /// once the lease it takes is recorded.
    pub fn landed(&mut self, r: S3Response) -> Result<Option<S3Request>, Error> {
        match r.status {
            200 | 412 => Ok(self.next_request()),
            409 if self.conflicts < MAX_REREADS => {
                self.conflicts += 1;
                Ok(self.sent.clone())
            }
            _ => Err(r.into_error()),
        }
    }
}

/// Writes records late, one create-only PUT each, best effort, from the
/// last: back-fills (one already there is the holder's own: the common
/// case, it did not crash; one not written is explained by the grant's own
/// record's `previous`), and a client's own records it could not write
/// when it granted. Returns how many it wrote.
pub struct Backfill {
    dir: String,
    records: Vec<Record>,
    written: u32,
    sent: Option<S3Request>,
    conflicts: u32,
}

impl Backfill {
    pub fn new(dir: String, records: Vec<Record>) -> Self {
        Backfill {
            dir,
            records,
            written: 0,
            sent: None,
            conflicts: 0,
        }
    }

    fn next(&mut self) -> Step<u32> {
        self.conflicts = 0;
        while let Some(record) = self.records.pop() {
            if let Ok(request) = create(&self.dir, &record) {
                self.sent = Some(request.clone());
                return Step::Send(request);
            }
        }
        Step::Done(Ok(self.written))
    }
}

impl Operation for Backfill {
    type Output = u32;

    fn start(&mut self, _now_ms: u64) -> Step<u32> {
        self.next()
    }

    fn on_response(&mut self, r: S3Response, _now_ms: u64) -> Step<u32> {
        // A 409: try again (see `Pending`), a bounded number of times.
        if r.status == 409 && self.conflicts < MAX_REREADS {
            if let Some(request) = self.sent.clone() {
                self.conflicts += 1;
                return Step::Send(request);
            }
        }
        self.written += u32::from(r.status == 200);
        self.next()
    }

    fn on_transport_error(&mut self, _error: Error, _now_ms: u64) -> Step<u32> {
        self.next()
    }
}

/// Writes a release's record: one create-only PUT. Its result is
/// advisory: the release happened whatever it says.
pub struct RecordRelease {
    dir: String,
    record: Record,
}

impl RecordRelease {
    pub fn new(dir: String, record: Record) -> Self {
        RecordRelease { dir, record }
    }
}

impl Operation for RecordRelease {
    type Output = ();

    fn start(&mut self, _now_ms: u64) -> Step<()> {
        match create(&self.dir, &self.record) {
            Ok(request) => Step::Send(request),
            Err(e) => Step::Done(Err(e)),
        }
    }

    fn on_response(&mut self, r: S3Response, _now_ms: u64) -> Step<()> {
        match r.status {
            // Already there: an earlier attempt of ours.
            200 | 409 | 412 => Step::Done(Ok(())),
            _ => Step::Done(Err(r.into_error())),
        }
    }
}

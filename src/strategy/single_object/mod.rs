//! The single-object lease protocol as state machines, free of I/O.
//!
//! Each operation emits `S3Request`s and consumes `S3Response`s; a driver (the
//! wasi:http one in the component, an in-memory store in the tests) carries
//! them. Time comes in as an argument with every step.
//!
//! One JSON object per key holds `{expires_at, token, holder, ...}`:
//! - acquire: GET; if absent, PUT `If-None-Match: *` with token 1; if
//!   expired or released (or live but ours), PUT `If-Match: <etag>` with
//!   token + 1; if live and someone else's, give up.
//! - renew: PUT `If-Match: <our etag>`, same token, later expiry.
//! - release: PUT `If-Match: <our etag>`, same token, `expires_at` 0 (never
//!   DELETE: the token counter must survive).
//!
//! 412 means another writer won; 409 (ConditionalRequestConflict) and a 404
//! on an `If-Match` PUT mean the object changed under us: re-read and decide
//! again, a bounded number of times.

use crate::prelude::*;

use crate::error::Error;
use crate::expiry::{server_time, Judge};
use crate::lease::{check_writable_time, Grant, Lease};
use crate::limits::MAX_REREADS;
use crate::lock_object::{too_large, LockRecord, LockState, MAX_LOCK_OBJECT_BYTES};
use crate::protocol::{is_ambiguous, AcquireOutcome, Operation, Step};
use crate::s3::{Method, S3Request, S3Response};
use crate::seal::LockSeal;

const JSON: &str = "application/json";

fn get(object_key: &str, judge: &Judge) -> S3Request {
    let request = S3Request::new(Method::Get, object_key, MAX_LOCK_OBJECT_BYTES);
    match judge.cached_etag() {
        // Unchanged since we last read it: 304, no body.
        Some(etag) => request.header("if-none-match", etag),
        None => request,
    }
}

fn put(object_key: &str, condition: (&str, &str), record: &LockRecord) -> S3Request {
    // Error replies to a PUT are small; the success body is empty.
    S3Request::new(Method::Put, object_key, MAX_LOCK_OBJECT_BYTES)
        .header(condition.0, condition.1)
        .body(JSON, record.to_json())
}

/// Reads a GET reply: `None` for a missing object, the state for a present
/// one (a 304 reuses the state observed before), an error otherwise.
pub(crate) fn read_lock(
    key: &str,
    object_key: &str,
    r: S3Response,
    now_ms: u64,
    judge: &Judge,
) -> Result<Option<LockState>, Error> {
    match r.status {
        404 if r.is_missing_object() => Ok(None),
        304 => match judge.unchanged(&r, now_ms) {
            Some(state) => state.map(Some),
            // We sent no If-None-Match: a store that answers 304 anyway.
            None => Err(r.into_error()),
        },
        200 => {
            if let Some(len) = r.body_too_large {
                return Err(Error::corrupt(object_key, too_large(len)));
            }
            let etag = r.read_etag(object_key)?;
            let record = LockRecord::from_json(&r.body)
                .map_err(|reason| Error::corrupt(object_key, reason))?;
            let (live, expires_in_ms) = judge.judge(&record, &etag, &r, now_ms)?;
            Ok(Some(LockState {
                key: key.to_string(),
                record,
                etag,
                live,
                expires_in_ms,
                last_modified_ms: server_time(&r, "last-modified"),
            }))
        }
        _ => Err(r.into_error()),
    }
}

// ---------------------------------------------------------------- inspect

pub struct Inspect {
    key: String,
    object_key: String,
    judge: Judge,
}

impl Inspect {
    pub fn new(key: String, object_key: String, judge: Judge) -> Self {
        Inspect {
            key,
            object_key,
            judge,
        }
    }
}

impl Operation for Inspect {
    type Output = Option<LockState>;
    fn start(&mut self, _now_ms: u64) -> Step<Self::Output> {
        Step::Send(get(&self.object_key, &self.judge))
    }
    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<Self::Output> {
        Step::Done(read_lock(
            &self.key,
            &self.object_key,
            r,
            now_ms,
            &self.judge,
        ))
    }
}

// ------------------------------------------------------------ try-acquire

/// Where a try-acquire is.
enum Phase {
    Reading,
    Writing(LockRecord),
    /// Our write may have landed (its reply was lost): read and look for
    /// our write id.
    Recognising,
}

pub struct TryAcquire {
    key: String,
    object_key: String,
    grant: Grant,
    seal: LockSeal,
    judge: Judge,
    /// Stored in every record this operation writes, so it can recognise
    /// its own write after a lost reply.
    write_id: String,
    rereads: u32,
    phase: Phase,
    /// A write of ours went out without a clear answer: it may still land,
    /// so a later failed condition may be our own doing.
    ambiguous: bool,
    /// Our first write was sent without a read, on the strength of a
    /// released object this client knows (its ETag): a failed condition
    /// then means only that it changed since, not that we lost a race.
    speculative: bool,
}

impl TryAcquire {
    pub fn new(
        key: String,
        object_key: String,
        grant: Grant,
        seal: LockSeal,
        judge: Judge,
        write_id: String,
    ) -> Self {
        TryAcquire {
            key,
            object_key,
            grant,
            seal,
            judge,
            write_id,
            rereads: 0,
            phase: Phase::Reading,
            ambiguous: false,
            speculative: false,
        }
    }

    /// A released object this client read or wrote itself: released is
    /// released on every clock, so it can be taken with `If-Match` on its
    /// ETag at once, and the condition makes that safe (the write lands only
    /// if the object is still exactly that record, whose token ours tops).
    fn known_released(&self) -> Option<LockState> {
        self.judge
            .observation
            .as_ref()
            .filter(|o| o.state.record.expires_at_ms == 0)
            .map(|o| o.state.clone())
    }

    fn decide(&mut self, seen: Option<LockState>, now_ms: u64) -> Step<AcquireOutcome> {
        let (condition, previous_token) = match &seen {
            None => (("if-none-match", "*".to_string()), 0),
            Some(s) if s.live && s.record.holder_id != self.grant.holder_id => {
                return Step::Done(Ok(AcquireOutcome::Held(seen)));
            }
            Some(s) => (("if-match", s.etag.clone()), s.record.token),
        };
        let Some(token) = previous_token.checked_add(1) else {
            return Step::Done(Err(Error::corrupt(
                &self.object_key,
                "token is at its maximum and cannot rise",
            )));
        };
        let expires_at_ms = now_ms.saturating_add(self.grant.ttl_ms);
        if let Err(e) = check_writable_time(expires_at_ms) {
            return Step::Done(Err(e));
        }
        let record = LockRecord {
            expires_at_ms,
            token,
            holder_id: self.grant.holder_id.clone(),
            acquired_at_ms: now_ms,
            metadata: self.grant.metadata.clone(),
            ttl_ms: self.grant.ttl_ms,
            write_id: self.write_id.clone(),
        };
        let request = put(&self.object_key, (condition.0, &condition.1), &record);
        self.phase = Phase::Writing(record);
        Step::Send(request)
    }

    /// Reads the object again: after a 409 or a vanished object, or to
    /// recognise a write whose reply was lost.
    fn reread(&mut self, error: Error, recognise: bool) -> Step<AcquireOutcome> {
        self.speculative = false;
        if self.rereads >= MAX_REREADS {
            return Step::Done(Err(match error {
                Error::S3(e) if !recognise => Error::Conflict(e),
                other => other,
            }));
        }
        self.rereads += 1;
        self.phase = if recognise {
            Phase::Recognising
        } else {
            Phase::Reading
        };
        // A full read: a 304 cannot show our write id.
        Step::Send(get(&self.object_key, &Judge::new(self.judge.clock, None)))
    }

    fn granted(&self, record: LockRecord, etag: String, now_ms: u64) -> Step<AcquireOutcome> {
        // A grant whose reply came after its own expiry is no lease: others
        // may already have judged it expired and taken the key.
        if now_ms > record.expires_at_ms {
            return Step::Done(Ok(AcquireOutcome::Held(None)));
        }
        Step::Done(Ok(AcquireOutcome::Granted(self.seal.seal(Lease {
            key: self.key.clone(),
            token: record.token,
            holder_id: record.holder_id,
            etag,
            expires_at_ms: record.expires_at_ms,
            acquired_at_ms: record.acquired_at_ms,
            ttl_ms: self.grant.ttl_ms,
            metadata: record.metadata,
            seal: String::new(),
        }))))
    }

    fn ours(&self, s: &LockState) -> bool {
        !self.write_id.is_empty() && s.record.write_id == self.write_id
    }
}

impl Operation for TryAcquire {
    type Output = AcquireOutcome;

    fn start(&mut self, now_ms: u64) -> Step<Self::Output> {
        match self.known_released() {
            // One request instead of two: no read.
            Some(released) => {
                self.speculative = true;
                self.decide(Some(released), now_ms)
            }
            None => Step::Send(get(&self.object_key, &self.judge)),
        }
    }

    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<Self::Output> {
        match core::mem::replace(&mut self.phase, Phase::Reading) {
            Phase::Reading | Phase::Recognising => {
                match read_lock(&self.key, &self.object_key, r, now_ms, &self.judge) {
                    // Our write landed after all (its reply was lost, or it
                    // arrived late): the grant is ours.
                    Ok(Some(s)) if self.ours(&s) => self.granted(s.record, s.etag, now_ms),
                    Ok(seen) => self.decide(seen, now_ms),
                    Err(e) => Step::Done(Err(e)),
                }
            }
            Phase::Writing(record) => match r.status {
                200 => match r.written_etag(&self.object_key) {
                    Ok(etag) => self.granted(record, etag, now_ms),
                    Err(e) => Step::Done(Err(e)),
                },
                // Lost the race, unless an earlier write of ours landed
                // late and made our own condition fail.
                412 if self.ambiguous => self.reread(r.into_error(), true),
                // What we knew is stale: read what is there now.
                412 if self.speculative => self.reread(r.into_error(), false),
                412 => Step::Done(Ok(AcquireOutcome::Held(None))),
                // The object changed (or vanished) between our read and our write.
                _ if r.status == 409 || r.is_missing_object() => self.reread(r.into_error(), false),
                _ if is_ambiguous(&r) => {
                    self.ambiguous = true;
                    self.reread(r.into_error(), true)
                }
                _ => Step::Done(Err(r.into_error())),
            },
        }
    }

    fn on_transport_error(&mut self, error: Error, _now_ms: u64) -> Step<Self::Output> {
        match self.phase {
            Phase::Writing(_) => {
                self.ambiguous = true;
                self.reread(error, true)
            }
            _ => Step::Done(Err(error)),
        }
    }
}

// ------------------------------------------------------- renew / release

/// The lock object a release wrote, as a read would show it (its write id
/// aside, which only the write's own recognition needs).
pub(crate) fn released_state(lease: &Lease) -> LockState {
    LockState {
        key: lease.key.clone(),
        record: LockRecord {
            expires_at_ms: 0,
            token: lease.token,
            holder_id: lease.holder_id.clone(),
            acquired_at_ms: lease.acquired_at_ms,
            metadata: lease.metadata.clone(),
            ttl_ms: lease.ttl_ms,
            write_id: String::new(),
        },
        etag: lease.etag.clone(),
        live: false,
        expires_in_ms: 0,
        last_modified_ms: None,
    }
}

/// Rewrites our own lock object with `If-Match` on the lease's etag. On a
/// failed condition it reads the object: if it is still exactly ours (a 409
/// on a busy key) it writes again, if it holds our own write (a reply that
/// was lost) it is done, otherwise the lease is lost.
pub struct RewriteOwn {
    lease: Lease,
    object_key: String,
    seal: LockSeal,
    release: bool,
    write_id: String,
    rereads: u32,
    reading: bool,
    /// The error that sent us reading, when the write's fate was unknown.
    ambiguous: Option<Error>,
    /// The expiry our last write carries; the lease's once it succeeds.
    writing_expires_at_ms: u64,
}

impl RewriteOwn {
    pub fn renew(lease: Lease, object_key: String, seal: LockSeal, write_id: String) -> Self {
        Self::new(lease, object_key, seal, write_id, false)
    }

    pub fn release(lease: Lease, object_key: String, seal: LockSeal, write_id: String) -> Self {
        Self::new(lease, object_key, seal, write_id, true)
    }

    fn new(
        lease: Lease,
        object_key: String,
        seal: LockSeal,
        write_id: String,
        release: bool,
    ) -> Self {
        RewriteOwn {
            lease,
            object_key,
            seal,
            release,
            write_id,
            rereads: 0,
            reading: false,
            ambiguous: None,
            writing_expires_at_ms: 0,
        }
    }

    fn write(&mut self, now_ms: u64) -> Step<Lease> {
        let l = &self.lease;
        let expires_at_ms = if self.release {
            0
        } else {
            now_ms.saturating_add(l.ttl_ms)
        };
        if let Err(e) = check_writable_time(expires_at_ms) {
            return Step::Done(Err(e));
        }
        let record = LockRecord {
            expires_at_ms,
            token: l.token,
            holder_id: l.holder_id.clone(),
            acquired_at_ms: l.acquired_at_ms,
            metadata: l.metadata.clone(),
            ttl_ms: l.ttl_ms,
            write_id: self.write_id.clone(),
        };
        let request = put(&self.object_key, ("if-match", &l.etag), &record);
        self.writing_expires_at_ms = record.expires_at_ms;
        self.reading = false;
        Step::Send(request)
    }

    fn read(&mut self) -> Step<Lease> {
        self.reading = true;
        Step::Send(get(&self.object_key, &Judge::holder()))
    }

    fn lost(&self, current: Option<LockState>) -> Step<Lease> {
        Step::Done(Err(Error::Lost {
            key: self.lease.key.clone(),
            token: self.lease.token,
            current: current.map(Box::new),
        }))
    }

    /// Our write stored `etag` and `expires_at_ms`.
    fn done(&self, etag: String, expires_at_ms: u64) -> Step<Lease> {
        Step::Done(Ok(self.seal.seal(Lease {
            etag,
            expires_at_ms,
            ..self.lease.clone()
        })))
    }

    fn ambiguous(&mut self, error: Error) -> Step<Lease> {
        self.ambiguous = Some(error);
        self.read()
    }
}

impl Operation for RewriteOwn {
    /// The lease as now stored (for release: with `expires_at_ms` 0).
    type Output = Lease;

    fn start(&mut self, now_ms: u64) -> Step<Lease> {
        if let Err(e) = self
            .seal
            .check(&self.lease)
            .and(self.lease.check_as_returned())
        {
            return Step::Done(Err(e));
        }
        self.write(now_ms)
    }

    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<Lease> {
        if self.reading {
            let ours =
                |s: &LockState| !self.write_id.is_empty() && s.record.write_id == self.write_id;
            return match read_lock(
                &self.lease.key,
                &self.object_key,
                r,
                now_ms,
                &Judge::holder(),
            ) {
                // Our write landed; its reply was lost or came late. Which
                // attempt landed, the record says (its expiry, not ours).
                Ok(Some(s)) if ours(&s) => self.done(s.etag, s.record.expires_at_ms),
                Ok(Some(s)) if s.etag == self.lease.etag && self.rereads < MAX_REREADS => {
                    self.rereads += 1;
                    self.write(now_ms)
                }
                Ok(Some(s)) if s.etag == self.lease.etag => {
                    Step::Done(Err(match self.ambiguous.take() {
                        Some(e) => e,
                        None => Error::Conflict(crate::error::S3Error {
                            status: 409,
                            code: "ConditionalRequestConflict".into(),
                            message: format!("still conflicting after {MAX_REREADS} attempts"),
                            request_id: String::new(),
                        }),
                    }))
                }
                Ok(current) => self.lost(current),
                // We know the lease is gone but not who has it now.
                Err(Error::CorruptLockObject { .. }) => self.lost(None),
                Err(e) => Step::Done(Err(e)),
            };
        }
        match r.status {
            200 => match r.written_etag(&self.object_key) {
                Ok(etag) => self.done(etag, self.writing_expires_at_ms),
                Err(e) => Step::Done(Err(e)),
            },
            // Lost the condition, or the object vanished (404 on AWS): read
            // what is there to tell a busy key, or our own late write, from
            // a lost lease.
            _ if matches!(r.status, 409 | 412) || r.is_missing_object() => self.read(),
            _ if is_ambiguous(&r) => self.ambiguous(r.into_error()),
            _ => Step::Done(Err(r.into_error())),
        }
    }

    fn on_transport_error(&mut self, error: Error, _now_ms: u64) -> Step<Lease> {
        if self.reading || self.rereads >= MAX_REREADS {
            return Step::Done(Err(error));
        }
        self.rereads += 1;
        self.ambiguous(error)
    }
}

#[cfg(test)]
mod tests;

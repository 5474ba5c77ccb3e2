//! Try-acquire: GET the lock object (or skip the read when this client
//! knows it released); if absent, PUT `If-None-Match: *` with token 1; if
//! expired or released (or live but ours), PUT `If-Match: <etag>` with
//! token + 1; if live and someone else's, give up. A write whose reply was
//! lost is recognised by its write id on a re-read.

use crate::prelude::*;

use super::object::{get, put, read_lock};
use crate::error::Error;
use crate::expiry::Judge;
use crate::lease::{check_writable_time, Grant, Lease};
use crate::limits::MAX_REREADS;
use crate::lock_object::{LockRecord, LockState};
use crate::protocol::{is_ambiguous, AcquireOutcome, Operation, Step};
use crate::s3::S3Response;
use crate::seal::LockSeal;

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
            // A semaphore (or a fair lock): never overwritten as a lock,
            // which would drop its holders and queue; the client acquires
            // it as the semaphore it is.
            Some(s) if s.semaphore.is_some() => {
                return Step::Done(Ok(AcquireOutcome::Held(seen)));
            }
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
            renewed_at_ms: now_ms,
            write_id: self.write_id.clone(),
        };
        let request = match put(&self.object_key, (condition.0, &condition.1), &record) {
            Ok(request) => request,
            Err(e) => return Step::Done(Err(e)),
        };
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

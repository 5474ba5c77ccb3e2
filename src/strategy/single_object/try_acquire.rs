//! Try-acquire: GET the lock object (or skip the read when this client
//! knows it released); if absent, write the key's token floor (`floor`),
//! then PUT `If-None-Match: *` with the floor's next token (1 for a key
//! never locked before); if
//! expired or released (or live but ours), PUT `If-Match: <etag>` with
//! token + 1; if live and someone else's, give up. A write whose reply was
//! lost is recognised by its write id on a re-read.

use crate::prelude::*;

use super::object::{get, put, read_lock};
use crate::audit::{Backfiller, GrantTrail, Pending, WriteTimes};
use crate::error::Error;
use crate::expiry::Judge;
use crate::lease::{check_writable_time, Grant, Lease};
use crate::limits::MAX_REREADS;
use crate::lock_object::{LockRecord, LockState};
use crate::protocol::{is_ambiguous, AcquireOutcome, Operation, Step};
use crate::seal::LockSeal;
use crate::stores::s3::S3Request;
use crate::stores::s3::S3Response;
use crate::strategy::floor::{Floor, FloorStep};

/// Where a try-acquire is.
enum Phase {
    Reading,
    /// Recording the lease we take over (grant log), then our write.
    Backfilling(Pending, Box<(S3Request, LockRecord)>),
    /// The object is absent: writing the key's floor before creating it.
    Flooring,
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
    /// For the grant log (see `audit`): the state our last write replaced
    /// (`None`: it created the object), and the store's times of the write
    /// that granted.
    trail: GrantTrail,
    /// The key's token floor, written before the object is created
    /// (`None`: a store that keeps its counter itself).
    floor: Option<Floor>,
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
            trail: GrantTrail::default(),
            floor: None,
        }
    }

    /// Writes the key's token floor, the object `floor_key`, before
    /// creating its lock object (see `strategy::floor`).
    pub fn with_floor(mut self, floor_key: String) -> Self {
        let floor = Floor::new(floor_key, self.write_id.clone());
        // A floor written within a ttl is a concurrent creator's (or an
        // attempt's whose create never landed): joined, not raised, so a
        // new key starts at 1 (see `Floor::joining_within`).
        self.floor = Some(floor.joining_within(self.grant.ttl_ms));
        self
    }

    /// The token below a created object's first: the floor's base (0
    /// without a floor).
    fn created_base(&self) -> u64 {
        self.floor.as_ref().and_then(Floor::base).unwrap_or(0)
    }

    fn on_floor(&mut self, step: FloorStep, now_ms: u64) -> Step<AcquireOutcome> {
        match step {
            FloorStep::Send(request) => {
                self.phase = Phase::Flooring;
                Step::Send(request)
            }
            FloorStep::Base(_) => self.decide(None, now_ms),
            FloorStep::Failed(e) => Step::Done(Err(e)),
        }
    }

    /// With the grant log on: a lease taken over unreleased is recorded
    /// (back-filled) before the write that takes it.
    pub fn recording(mut self, backfiller: Backfiller) -> Self {
        self.trail.backfiller = Some(backfiller);
        self
    }

    /// After a grant: what it leaves for the grant log.
    pub fn trail(&self) -> &GrantTrail {
        &self.trail
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
        if seen.is_none() {
            // Absent: the key's floor first, once.
            if let Some(floor) = self.floor.as_mut().filter(|f| f.base().is_none()) {
                let step = floor.start();
                return self.on_floor(step, now_ms);
            }
        }
        let (condition, previous_token) = match &seen {
            None => (("if-none-match", "*".to_string()), self.created_base()),
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
        let backfills = match (&self.trail.backfiller, &seen) {
            (Some(b), Some(s)) => b.requests(s, |_| false),
            _ => Vec::new(),
        };
        self.trail.replaced = seen;
        let mut pending = Pending::new(backfills);
        match pending.next_request() {
            Some(first) => {
                self.phase = Phase::Backfilling(pending, Box::new((request, record)));
                Step::Send(first)
            }
            None => {
                self.phase = Phase::Writing(record);
                Step::Send(request)
            }
        }
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
        Step::Send(get(&self.object_key, &self.judge.forgetting()))
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
            Phase::Flooring => {
                let step = match self.floor.as_mut() {
                    Some(floor) => floor.on_response(r),
                    None => FloorStep::Failed(r.into_error()),
                };
                self.on_floor(step, now_ms)
            }
            Phase::Reading | Phase::Recognising => {
                match read_lock(&self.key, &self.object_key, r, now_ms, &self.judge) {
                    // Our write landed after all (its reply was lost, or it
                    // arrived late): the grant is ours.
                    Ok(Some(s)) if self.ours(&s) => {
                        self.trail.write_times = WriteTimes {
                            etag: s.etag.clone(),
                            date_ms: s.date_ms,
                            modified_ms: s.last_modified_ms,
                        };
                        self.granted(s.record, s.etag, now_ms)
                    }
                    Ok(seen) => self.decide(seen, now_ms),
                    Err(e) => Step::Done(Err(e)),
                }
            }
            Phase::Backfilling(mut pending, write) => match pending.landed(r) {
                Ok(next) => match next {
                    Some(next) => {
                        self.phase = Phase::Backfilling(pending, write);
                        Step::Send(next)
                    }
                    None => {
                        let (request, record) = *write;
                        self.phase = Phase::Writing(record);
                        Step::Send(request)
                    }
                },
                Err(e) => Step::Done(Err(e)),
            },
            Phase::Writing(record) => match r.status {
                200 => match r.written_etag(&self.object_key) {
                    Ok(etag) => {
                        self.trail.write_times = WriteTimes::of_reply(&etag, &r);
                        self.granted(record, etag, now_ms)
                    }
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

    fn on_transport_error(&mut self, error: Error, now_ms: u64) -> Step<Self::Output> {
        match self.phase {
            Phase::Flooring => {
                let step = match self.floor.as_mut() {
                    Some(floor) => floor.on_transport_error(error),
                    None => FloorStep::Failed(error),
                };
                self.on_floor(step, now_ms)
            }
            Phase::Writing(_) => {
                self.ambiguous = true;
                self.reread(error, true)
            }
            _ => Step::Done(Err(error)),
        }
    }
}

//! One state machine for every semaphore operation: read the object (or
//! start from what this client last wrote), plan, write with `If-Match`;
//! on a failed condition read again and plan again, a bounded number of
//! times. Many holders write one object, so a 412 here usually means
//! another holder renewed, not that we lost: the plan decides that.
//!
//! A write whose reply was lost is recognised on the re-read by the write
//! id it stored in our entry. Each write of an operation stores a write id
//! of its own: under `observed` an entry is the same while its write id
//! is, so a second entry written under the id of a first one (dropped in
//! between) would look to a reader that saw the first as old as the first,
//! and be judged expired while its holder counts on it.

use crate::prelude::*;

use super::super::object::{get, put_body, read_lock};
use super::plan::{plan, Answer, Context, Plan, Then, Wish};
use crate::audit::{Backfiller, Pending, WriteTimes};
use crate::error::Error;
use crate::expiry::Judge;
use crate::lease::Lease;
use crate::lock_object::semaphore::{Entry, SemaphoreState};
use crate::lock_object::{LockRecord, LockState};
use crate::protocol::{is_ambiguous, Operation, Step};
use crate::seal::LockSeal;
use crate::stores::s3::S3Request;
use crate::stores::s3::S3Response;
use crate::strategy::floor::{Floor, FloorStep};

/// Writes one operation may try before giving up on a busy object (kept
/// beside the record's widest form, which counts its write ids).
pub use super::room::MAX_SEMAPHORE_ATTEMPTS;

/// What a semaphore operation ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotOutcome {
    Granted(Lease),
    /// In line, the `place`-th live waiter (1-based), as last read.
    Queued {
        place: u32,
        state: Box<LockState>,
    },
    /// No slot for us now: the state read, when there was one (a plain
    /// lock holds the key, or every slot is held or claimed by waiters).
    Full(Option<Box<LockState>>),
    /// Renewed or released: the lease as now stored.
    Rewritten(Lease),
    Left,
}

/// The outcome, and what the operation last read and last wrote (for the
/// client's memory: reads feed the expiry clocks and conditional GETs,
/// writes let the next renew skip its read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub outcome: SlotOutcome,
    /// `Some(None)`: the read found no object; `None`: nothing was read.
    pub read: Option<Option<LockState>>,
    pub written: Option<LockState>,
    /// For the grant log (see `audit`): the state the write that landed
    /// replaced, as planned from, and the store's times of that write.
    pub replaced: Option<LockState>,
    pub write_times: Option<WriteTimes>,
    /// The tokens of the holders that write kept.
    pub kept: Vec<u64>,
}

enum Phase {
    Reading,
    /// Recording the holders an acquire drops unreleased (grant log),
    /// then its write.
    Backfilling(Pending, Box<(S3Request, LockState, Then)>),
    /// No object: writing the key's floor before one is created.
    Flooring,
    Writing(Box<LockState>, Then),
}

pub struct SemaphoreOp {
    key: String,
    object_key: String,
    wish: Wish,
    seal: LockSeal,
    judge: Judge,
    write_id: String,
    /// The write ids of the writes sent so far: the first is `write_id`,
    /// each later one `write_id` and its number.
    sent_ids: Vec<String>,
    /// What each of those writes was planned from, and the tokens of the
    /// holders it kept (for the grant log).
    planned: Vec<(Option<LockState>, Vec<u64>)>,
    /// What this client last wrote of the key, to plan from without a read.
    cached: Option<LockState>,
    attempts: u32,
    phase: Phase,
    /// A write of ours went out without a clear answer.
    ambiguous: bool,
    read: Option<Option<LockState>>,
    /// See `on_store_without_write_times`.
    stamps_needed: bool,
    backfiller: Option<Backfiller>,
    /// The key's token floor, written before the object is created.
    floor: Option<Floor>,
}

impl SemaphoreOp {
    pub fn new(
        key: String,
        object_key: String,
        wish: Wish,
        seal: LockSeal,
        judge: Judge,
        write_id: String,
        cached: Option<LockState>,
    ) -> Self {
        SemaphoreOp {
            key,
            object_key,
            wish,
            seal,
            judge,
            write_id,
            sent_ids: Vec::new(),
            planned: Vec::new(),
            cached,
            attempts: 0,
            phase: Phase::Reading,
            ambiguous: false,
            read: None,
            stamps_needed: true,
            backfiller: None,
            floor: None,
        }
    }

    /// Writes the key's token floor, the object `floor_key`, before an
    /// acquire creates the semaphore object (see `strategy::floor`).
    pub fn with_floor(mut self, floor_key: String) -> Self {
        let floor = Floor::new(floor_key, self.write_id.clone());
        // Joined within a ttl, as a lock's (see `Floor::joining_within`).
        let ttl_ms = match &self.wish {
            Wish::Acquire { grant, .. } => grant.ttl_ms,
            _ => 0,
        };
        self.floor = Some(floor.joining_within(ttl_ms));
        self
    }

    fn on_floor(&mut self, step: FloorStep, now_ms: u64) -> Step<Finished> {
        match step {
            FloorStep::Send(request) => {
                self.phase = Phase::Flooring;
                Step::Send(request)
            }
            FloorStep::Base(_) => self.plan_from(None, now_ms, false),
            FloorStep::Failed(e) => self.finish(Err(e)),
        }
    }

    /// With the grant log on: the holders an acquire drops unreleased are
    /// recorded (back-filled) before its write.
    pub fn recording(mut self, backfiller: Backfiller) -> Self {
        self.backfiller = Some(backfiller);
        self
    }

    /// On a store that keeps no time of a write (no `Last-Modified`),
    /// where the `server` clock cannot be configured:
    /// entries stay unstamped, since no reader of the key reads the stamp.
    /// On S3 a reply without `Last-Modified` writes nothing (a reader on
    /// `server` would misjudge an entry stamped wrong).
    pub fn on_store_without_write_times(mut self) -> Self {
        self.stamps_needed = false;
        self
    }

    fn finish(&mut self, outcome: Result<SlotOutcome, Error>) -> Step<Finished> {
        Step::Done(outcome.map(|outcome| Finished {
            outcome,
            read: self.read.take(),
            written: None,
            replaced: None,
            write_times: None,
            kept: Vec::new(),
        }))
    }

    /// A full read (a 304 cannot show our write id, nor a Last-Modified).
    fn read_again(&mut self, error: Error) -> Step<Finished> {
        if self.attempts >= MAX_SEMAPHORE_ATTEMPTS {
            return match (&self.wish, error) {
                // A busy key is no error for an attempt to acquire: the
                // caller tries again later, as after a lost race.
                (Wish::Acquire { .. }, Error::S3(e) | Error::Conflict(e))
                    if matches!(e.status, 409 | 412) =>
                {
                    let seen = self.read.clone().flatten().map(Box::new);
                    self.finish(Ok(SlotOutcome::Full(seen)))
                }
                (_, Error::S3(e)) if matches!(e.status, 409 | 412) => {
                    self.finish(Err(Error::Conflict(e)))
                }
                (_, error) => self.finish(Err(error)),
            };
        }
        self.attempts += 1;
        self.phase = Phase::Reading;
        Step::Send(get(&self.object_key, &self.judge.forgetting()))
    }

    fn plan_from(
        &mut self,
        seen: Option<LockState>,
        now_ms: u64,
        from_cache: bool,
    ) -> Step<Finished> {
        // An acquire that would create the object writes the floor first.
        let creating = seen.is_none() && matches!(self.wish, Wish::Acquire { .. });
        if creating {
            if let Some(floor) = self.floor.as_mut().filter(|f| f.base().is_none()) {
                let step = floor.start();
                return self.on_floor(step, now_ms);
            }
        }
        let write_id = match self.sent_ids.len() {
            0 => self.write_id.clone(),
            n => format!("{}.{n}", self.write_id),
        };
        let cx = Context {
            key: &self.key,
            write_id: &write_id,
            now_ms,
            stamps_needed: self.stamps_needed,
            created_base: self.floor.as_ref().and_then(Floor::base).unwrap_or(0),
        };
        match plan(&self.wish, seen.as_ref(), &cx) {
            Ok(Plan::Write {
                record,
                condition,
                then,
            }) => {
                let request = match put_body(
                    &self.object_key,
                    (condition.0, &condition.1),
                    record.to_json(),
                ) {
                    Ok(request) => request,
                    Err(e) => return self.finish(Err(e)),
                };
                let kept: Vec<u64> = record.holders.iter().map(|e| e.token).collect();
                let backfills = match (&self.backfiller, &seen, &self.wish) {
                    (Some(b), Some(s), Wish::Acquire { .. }) => {
                        b.requests(s, |token| kept.contains(&token))
                    }
                    _ => Vec::new(),
                };
                let written = written_state(&self.key, *record);
                self.sent_ids.push(write_id);
                self.planned.push((seen, kept));
                let mut pending = Pending::new(backfills);
                match pending.next_request() {
                    Some(first) => {
                        self.phase =
                            Phase::Backfilling(pending, Box::new((request, written, then)));
                        Step::Send(first)
                    }
                    None => {
                        self.phase = Phase::Writing(Box::new(written), then);
                        Step::Send(request)
                    }
                }
            }
            Ok(Plan::Answer(answer)) => {
                let state = seen.map(Box::new);
                self.finish(Ok(match answer {
                    Answer::Full => SlotOutcome::Full(state),
                    Answer::Queued(place) => SlotOutcome::Queued {
                        place,
                        state: state.unwrap_or_default(),
                    },
                    Answer::Left => SlotOutcome::Left,
                }))
            }
            // Planned from what we wrote, which lacks what a write needs
            // (or no longer holds our slot): read what is there now.
            Ok(Plan::ReadFirst) if from_cache => self.read_again(missing_last_modified()),
            Err(e @ Error::Lost { .. }) if from_cache => self.read_again(e),
            // A reply without the Last-Modified the entries need.
            Ok(Plan::ReadFirst) => self.finish(Err(missing_last_modified())),
            // Released with no clear answer, and the slot is gone: released.
            Err(Error::Lost { .. }) if self.ambiguous && matches!(self.wish, Wish::Release(_)) => {
                let outcome = self.released_lease().map(SlotOutcome::Rewritten);
                self.finish(outcome)
            }
            Err(e) => self.finish(Err(e)),
        }
    }

    /// The lease a release ends with: expiry 0, as a lock's release says.
    fn released_lease(&self) -> Result<Lease, Error> {
        match &self.wish {
            Wish::Release(l) => Ok(self.seal.seal(Lease {
                expires_at_ms: 0,
                ..l.clone()
            })),
            _ => Err(Error::InvalidArgument(
                "only a release ends released".into(),
            )),
        }
    }

    /// A read after an unclear write: is our write id in there?
    fn recognised(&self, s: &LockState) -> Option<Then> {
        let sem = s.semaphore.as_ref()?;
        let ours = |e: &&Entry| !e.write_id.is_empty() && self.sent_ids.contains(&e.write_id);
        if let Some(e) = sem.record.holders.iter().find(ours) {
            return Some(match self.wish {
                Wish::Renew(_) => Then::Renewed(e.clone()),
                _ => Then::Granted(e.clone()),
            });
        }
        let place = sem.live_queue().position(|e| ours(&e))?;
        Some(Then::Queued(place as u32 + 1))
    }

    fn succeeded(
        &mut self,
        written: LockState,
        then: Then,
        times: WriteTimes,
        now_ms: u64,
    ) -> Step<Finished> {
        // The write that landed: a grant's is known by its entry's id.
        let landed = match &then {
            Then::Granted(entry) => self.sent_ids.iter().position(|id| *id == entry.write_id),
            _ => self.planned.len().checked_sub(1),
        };
        let (replaced, kept) = landed
            .and_then(|i| self.planned.get(i).cloned())
            .unwrap_or_default();
        let outcome = match then {
            Then::Granted(entry) => {
                // A grant whose reply came after its own expiry is no lease.
                if now_ms > entry.expires_at_ms {
                    SlotOutcome::Full(None)
                } else {
                    SlotOutcome::Granted(self.lease_of(&entry, &written.etag))
                }
            }
            Then::Renewed(entry) => SlotOutcome::Rewritten(self.lease_of(&entry, &written.etag)),
            Then::Released => match self.released_lease() {
                Ok(lease) => SlotOutcome::Rewritten(lease),
                Err(e) => return self.finish(Err(e)),
            },
            Then::Queued(place) => SlotOutcome::Queued {
                place,
                state: Box::new(written.clone()),
            },
            Then::Left => SlotOutcome::Left,
        };
        Step::Done(Ok(Finished {
            outcome,
            read: self.read.take(),
            written: Some(written),
            replaced,
            write_times: Some(times),
            kept,
        }))
    }

    fn lease_of(&self, e: &Entry, etag: &str) -> Lease {
        self.seal.seal(Lease {
            key: self.key.clone(),
            token: e.token,
            holder_id: e.holder_id.clone(),
            etag: etag.to_string(),
            expires_at_ms: e.expires_at_ms,
            acquired_at_ms: e.acquired_at_ms,
            ttl_ms: e.ttl_ms,
            metadata: e.metadata.clone(),
            seal: String::new(),
        })
    }
}

/// A GET reply without `Last-Modified`: a semaphore cannot stamp the
/// entries of others without it (the store preflight's `server-dates`
/// checks that reads carry it).
fn missing_last_modified() -> Error {
    Error::S3(crate::error::S3Error {
        status: 200,
        code: String::new(),
        message: "the reply has no valid last-modified header, which a semaphore's entries need"
            .into(),
        request_id: String::new(),
    })
}

/// The design fields of a semaphore record (see `lock_object::semaphore`).
fn to_lock_record(record: &crate::lock_object::semaphore::SemaphoreRecord) -> LockRecord {
    LockRecord {
        expires_at_ms: record.expires_at_ms(),
        token: record.token,
        ttl_ms: record.ttl_ms(),
        ..LockRecord::default()
    }
}

/// The object as our write stored it, its etag filled in on success.
fn written_state(key: &str, record: crate::lock_object::semaphore::SemaphoreRecord) -> LockState {
    let live = |n: usize| {
        vec![
            crate::lock_object::semaphore::Judged {
                live: true,
                expires_in_ms: 0
            };
            n
        ]
    };
    LockState {
        key: key.to_string(),
        record: to_lock_record(&record),
        etag: String::new(),
        live: !record.holders.is_empty(),
        expires_in_ms: 0,
        last_modified_ms: None,
        date_ms: None,
        semaphore: Some(Box::new(SemaphoreState {
            holders: live(record.holders.len()),
            queue: live(record.queue.len()),
            record,
        })),
    }
}

impl Operation for SemaphoreOp {
    type Output = Finished;

    fn start(&mut self, now_ms: u64) -> Step<Finished> {
        if let Wish::Renew(lease) | Wish::Release(lease) = &self.wish {
            if let Err(e) = self.seal.check_returned(lease) {
                return Step::Done(Err(e));
            }
            // One request instead of two when nobody wrote since we did.
            if let Some(cached) = self.cached.take() {
                return self.plan_from(Some(cached), now_ms, true);
            }
        }
        Step::Send(get(&self.object_key, &self.judge))
    }

    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<Finished> {
        match core::mem::replace(&mut self.phase, Phase::Reading) {
            Phase::Flooring => {
                let step = match self.floor.as_mut() {
                    Some(floor) => floor.on_response(r),
                    None => FloorStep::Failed(r.into_error()),
                };
                self.on_floor(step, now_ms)
            }
            Phase::Reading => {
                // A recognised write's times: the object as read has it.
                let r_times = S3Response {
                    status: r.status,
                    headers: r.headers.clone(),
                    ..S3Response::default()
                };
                match read_lock(&self.key, &self.object_key, r, now_ms, &self.judge) {
                    Ok(seen) => {
                        self.read = Some(seen.clone());
                        if self.ambiguous {
                            if let Some(then) = seen.as_ref().and_then(|s| self.recognised(s)) {
                                let state = seen.unwrap_or_default();
                                let times = WriteTimes::of_reply(&state.etag, &r_times);
                                return self.succeeded(state, then, times, now_ms);
                            }
                        }
                        self.plan_from(seen, now_ms, false)
                    }
                    Err(e) => self.finish(Err(e)),
                }
            }
            Phase::Backfilling(mut pending, write) => match pending.landed(r) {
                Ok(next) => match next {
                    Some(next) => {
                        self.phase = Phase::Backfilling(pending, write);
                        Step::Send(next)
                    }
                    None => {
                        let (request, written, then) = *write;
                        self.phase = Phase::Writing(Box::new(written), then);
                        Step::Send(request)
                    }
                },
                Err(e) => self.finish(Err(e)),
            },
            Phase::Writing(written, then) => match r.status {
                200 => match r.written_etag(&self.object_key) {
                    Ok(etag) => {
                        let times = WriteTimes::of_reply(&etag, &r);
                        let written = LockState { etag, ..*written };
                        self.succeeded(written, then, times, now_ms)
                    }
                    Err(e) => self.finish(Err(e)),
                },
                // Another writer came first, or the object changed or
                // vanished: read it and plan again.
                _ if matches!(r.status, 409 | 412) || r.is_missing_object() => {
                    self.read_again(r.into_error())
                }
                _ if is_ambiguous(&r) => {
                    self.ambiguous = true;
                    self.read_again(r.into_error())
                }
                _ => self.finish(Err(r.into_error())),
            },
        }
    }

    fn on_transport_error(&mut self, error: Error, now_ms: u64) -> Step<Finished> {
        if matches!(self.phase, Phase::Flooring) {
            let step = match self.floor.as_mut() {
                Some(floor) => floor.on_transport_error(error),
                None => FloorStep::Failed(error),
            };
            return self.on_floor(step, now_ms);
        }
        match self.phase {
            Phase::Writing(..) => {
                self.ambiguous = true;
                self.read_again(error)
            }
            Phase::Reading | Phase::Backfilling(..) | Phase::Flooring => self.finish(Err(error)),
        }
    }
}

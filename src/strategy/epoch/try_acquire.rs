//! Try-acquire: LIST the epochs, GET the highest; if released or expired
//! (or live but ours), PUT the next epoch with `If-None-Match: *`; if
//! there is none, write the key's token floor (`strategy::floor`) first
//! and PUT the epoch above it (1 for a key never locked before);
//! then LIST once more past our epoch (`Phase::Verifying`), since a slow
//! client can re-create an epoch that cleanup had deleted. The grant names
//! the old epochs for `Cleanup` to delete.

use crate::prelude::*;

use super::cleanup::{oldest_distinct, KEEP_EPOCHS};
use super::lister::{Higher, HigherCheck, Lister};
use super::object::{epoch_key, get_epoch, put_epoch, read_epoch, EpochRecord};
use crate::audit::{Backfiller, GrantTrail, Pending, WriteTimes};
use crate::error::Error;
use crate::expiry::Judge;
use crate::lease::{check_writable_time, Grant, Lease};
use crate::limits::MAX_REREADS;
use crate::lock_object::MAX_LOCK_OBJECT_BYTES;
use crate::protocol::{is_ambiguous, AcquireOutcome, Operation, Step};
use crate::seal::LockSeal;
use crate::stores::s3::{Method, S3Request, S3Response};
use crate::strategy::floor::{Floor, FloorStep};

enum Phase {
    Listing,
    /// No epoch listed: writing the key's floor before the first.
    Flooring,
    Reading(u64),
    /// Recording the epoch we follow (grant log), then creating ours.
    Backfilling(Pending, u64),
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
    /// For the grant log (see `audit`): the epoch our create followed, as
    /// read (`None`: none was read), and the store's times of the create.
    trail: GrantTrail,
    /// The key's token floor, written before its first epoch.
    floor: Option<Floor>,
    /// Listed again after a floor raised (see `on_floor`).
    relisted: bool,
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
            trail: GrantTrail::default(),
            floor: None,
            relisted: false,
        }
    }

    /// Writes the key's token floor, the object `floor_key`, before
    /// creating its first epoch (see `strategy::floor`).
    pub fn with_floor(mut self, floor_key: String) -> Self {
        let floor = Floor::new(floor_key, self.write_id.clone());
        // Creators of a first epoch must agree on its number (see
        // `Floor::joining_within`): a floor written within a ttl is theirs.
        self.floor = Some(floor.joining_within(self.grant.ttl_ms));
        self
    }

    /// No epoch at or above what this client saw: the floor first (once),
    /// then the epoch above both.
    fn create_first(&mut self, hint: u64, now_ms: u64) -> Step<EpochOutcome> {
        match self.floor.as_mut() {
            Some(floor) => match floor.base() {
                Some(base) => self.create(hint.max(base), now_ms),
                None => {
                    let step = floor.start();
                    self.on_floor(step, now_ms)
                }
            },
            None => self.create(hint, now_ms),
        }
    }

    fn on_floor(&mut self, step: FloorStep, now_ms: u64) -> Step<EpochOutcome> {
        match step {
            FloorStep::Send(request) => {
                self.phase = Phase::Flooring;
                Step::Send(request)
            }
            // A floor raised (or found raised): the key's epochs were
            // gone when we listed, but that listing may be old (a floor
            // write that hung, then read back), and a whole incarnation
            // may have come and gone since: list once more, and follow
            // its highest epoch if there is one (its holder may be live,
            // and a grant record names the epoch it followed).
            FloorStep::Base(base) if base > 0 && !self.relisted => {
                self.relisted = true;
                self.lister = Lister::new(&self.dir, self.lister.hint);
                self.phase = Phase::Listing;
                Step::Send(self.lister.first())
            }
            FloorStep::Base(base) => self.create(self.lister.hint.max(base), now_ms),
            FloorStep::Failed(e) => Step::Done(Err(e)),
        }
    }

    /// With the grant log on: an epoch followed unreleased is recorded
    /// (back-filled) before ours is created.
    pub fn recording(mut self, backfiller: Backfiller) -> Self {
        self.trail.backfiller = Some(backfiller);
        self
    }

    /// After a grant: what it leaves for the grant log.
    pub fn trail(&self) -> &GrantTrail {
        &self.trail
    }

    fn decide_after_listing(&mut self, now_ms: u64) -> Step<EpochOutcome> {
        let hint = self.lister.hint;
        match self.lister.highest() {
            Some(h) if h >= hint => {
                self.phase = Phase::Reading(h);
                Step::Send(get_epoch(&self.dir, h, &self.judge))
            }
            // Nothing at or above the epoch this client saw last: it was
            // wiped (or never was), but tokens must not go back.
            Some(_) | None => {
                self.trail.replaced = None;
                self.create_first(hint, now_ms)
            }
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
        match put_epoch(&self.dir, epoch, ("if-none-match", "*"), &record) {
            Ok(request) => {
                self.phase = Phase::Creating(lease);
                Step::Send(request)
            }
            Err(e) => Step::Done(Err(e)),
        }
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

impl Operation for EpochTryAcquire {
    type Output = EpochOutcome;

    fn start(&mut self, _now_ms: u64) -> Step<EpochOutcome> {
        Step::Send(self.lister.first())
    }

    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<EpochOutcome> {
        match core::mem::replace(&mut self.phase, Phase::Listing) {
            Phase::Flooring => {
                let step = match self.floor.as_mut() {
                    Some(floor) => floor.on_response(r),
                    None => FloorStep::Failed(r.into_error()),
                };
                self.on_floor(step, now_ms)
            }
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
                    Ok(seen) => {
                        let backfills = match (&self.trail.backfiller, &seen) {
                            (Some(b), Some(s)) => b.requests(s, |_| false),
                            _ => Vec::new(),
                        };
                        self.trail.replaced = seen;
                        let mut pending = Pending::new(backfills);
                        match pending.next_request() {
                            Some(first) => {
                                self.phase = Phase::Backfilling(pending, epoch);
                                Step::Send(first)
                            }
                            None => self.create(epoch, now_ms),
                        }
                    }
                    Err(e) => Step::Done(Err(e)),
                }
            }
            Phase::Backfilling(mut pending, epoch) => match pending.landed(r) {
                Ok(next) => match next {
                    Some(next) => {
                        self.phase = Phase::Backfilling(pending, epoch);
                        Step::Send(next)
                    }
                    None => self.create(epoch, now_ms),
                },
                Err(e) => Step::Done(Err(e)),
            },
            Phase::Creating(mut lease) => match r.status {
                200 => {
                    let ours = epoch_key(&self.dir, lease.token);
                    match r.written_etag(&ours) {
                        Ok(etag) => {
                            self.trail.write_times = WriteTimes::of_reply(&etag, &r);
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
                                self.trail.write_times = WriteTimes::of_reply(&etag, &r);
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

    fn on_transport_error(&mut self, error: Error, now_ms: u64) -> Step<EpochOutcome> {
        match core::mem::replace(&mut self.phase, Phase::Listing) {
            Phase::Flooring => {
                let step = match self.floor.as_mut() {
                    Some(floor) => floor.on_transport_error(error),
                    None => FloorStep::Failed(error),
                };
                self.on_floor(step, now_ms)
            }
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

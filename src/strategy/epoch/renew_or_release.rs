//! Renew and release, one state machine (`EpochRewrite`): both rewrite our
//! own epoch object with `If-Match` on the etag of our last write, renew as
//! it was (a new `Last-Modified`), release as `"expired": true`; then both
//! look for a higher epoch, which means ours was superseded.

use crate::prelude::*;

use super::inspect::EpochInspect;
use super::lister::{Higher, HigherCheck};
use super::object::{epoch_key, put_epoch, EpochRecord};
use crate::error::{Error, S3Error};
use crate::expiry::{ExpiryClock, Judge};
use crate::lease::Lease;
use crate::limits::MAX_REREADS;
use crate::lock_object::{LockState, MAX_LOCK_OBJECT_BYTES};
use crate::protocol::{is_ambiguous, Operation, Step};
use crate::seal::LockSeal;
use crate::stores::s3::{Method, S3Request, S3Response};

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
        let request = match put_epoch(&self.dir, l.token, ("if-match", &l.etag), &record) {
            Ok(request) => request,
            Err(e) => return Step::Done(Err(e)),
        };
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
            Step::SendAll(requests) => Step::SendAll(requests),
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
            } else if error.is_transient() {
                Step::Done(Err(error))
            } else {
                // The write was refused (412), and the read failed: what
                // stopped the call is the read.
                Step::Done(Err(r.into_error()))
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
            // The lease's own epoch as another call of its holder rewrote
            // it: go on from that write.
            Ok(found) if self.own_epoch(&found) => {
                self.lease.etag = etag;
                self.write(now_ms)
            }
            _ => self.inspect(now_ms),
        }
    }

    /// Our epoch object holds this very grant, not released, at an etag
    /// this call did not write. Only its holder rewrites an epoch object
    /// (`If-Match`, after creating it with `If-None-Match`), so this is
    /// the holder's own write by another call (a renew whose reply and
    /// read-back were lost, retried as a new call with a new write id; a
    /// call the host ran again): the lease goes on from it.
    fn own_epoch(&self, found: &EpochRecord) -> bool {
        let l = &self.lease;
        !found.expired
            && found.token == l.token
            && found.holder_id == l.holder_id
            && found.acquired_at_ms == l.acquired_at_ms
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
            // A failed condition: our epoch object was rewritten, which only
            // its holder does: by an earlier attempt of this call that
            // landed, or by an earlier call of the holder's. Read it.
            412 if self.attempts < MAX_REREADS => self.recognise(r.into_error()),
            _ if r.status == 412 || r.is_missing_object() => self.inspect(now_ms),
            _ if is_ambiguous(&r) => self.recognise(r.into_error()),
            _ => Step::Done(Err(r.into_error())),
        }
    }
}

impl Operation for EpochRewrite {
    type Output = Lease;

    fn start(&mut self, now_ms: u64) -> Step<Lease> {
        if let Err(e) = self.seal.check_returned(&self.lease) {
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

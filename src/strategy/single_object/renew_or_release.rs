//! Renew and release, one state machine (`RewriteOwn`): both rewrite our
//! own lock object with `If-Match` on the lease's etag and the same token;
//! renew with a later expiry, release with `expires_at` 0 (never DELETE: the
//! token counter must survive).
//!
//! The token written is the lease's, so it must be the one stored: a lease
//! sealed by someone who read the seal key could carry a lower one, and
//! the key's next grant would repeat a token. So the write is preceded by
//! one GET that checks the object at the lease's etag holds the lease's
//! token and holder, and its `If-Match` then guarantees that the object it
//! replaces is the one checked; unless the token is already known to match
//! (`token_known`: the client wrote that very object itself, or the store
//! checks the token in the write's condition).

use crate::prelude::*;

use super::object::{get, put, read_lock};
use crate::error::Error;
use crate::expiry::Judge;
use crate::lease::{check_writable_time, Lease};
use crate::limits::MAX_REREADS;
use crate::lock_object::{LockRecord, LockState};
use crate::protocol::{is_ambiguous, Operation, Step};
use crate::seal::LockSeal;
use crate::stores::s3::S3Response;

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
            renewed_at_ms: 0,
            write_id: String::new(),
        },
        etag: lease.etag.clone(),
        live: false,
        expires_in_ms: 0,
        last_modified_ms: None,
        date_ms: None,
        semaphore: None,
    }
}

/// Where a rewrite is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Reading the object to check its token before the first write.
    Verifying,
    Writing,
    /// Reading the object after a write that failed or went unanswered.
    Reading,
}

/// Rewrites our own lock object with `If-Match` on the lease's etag (after
/// a read that checks its token, unless `token_known`). On a failed
/// condition it reads the object: if it is still exactly ours (a 409 on a
/// busy key) it writes again, if it holds our own write (a reply that was
/// lost) it is done, if it holds the lease's grant as another call of its
/// holder wrote it (`own_grant`) it writes again on that, otherwise the
/// lease is lost.
pub struct RewriteOwn {
    lease: Lease,
    object_key: String,
    seal: LockSeal,
    release: bool,
    write_id: String,
    rereads: u32,
    phase: Phase,
    /// No read before the write: see `token_known`.
    token_known: bool,
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
            phase: Phase::Writing,
            token_known: false,
            ambiguous: None,
            writing_expires_at_ms: 0,
        }
    }

    /// Writes without reading first: the caller knows that the object at
    /// the lease's etag holds the lease's token, because its client wrote
    /// that very object (an etag is a hash of the bytes, which include the
    /// token), or the store refuses the write unless the token matches
    /// (`S3Request::if_token`, on a store whose condition checks it).
    pub fn token_known(mut self) -> Self {
        self.token_known = true;
        self
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
            renewed_at_ms: now_ms,
            write_id: self.write_id.clone(),
        };
        let mut request = match put(&self.object_key, ("if-match", &l.etag), &record) {
            Ok(request) => request,
            Err(e) => return Step::Done(Err(e)),
        };
        request.if_token = Some(l.token);
        self.writing_expires_at_ms = record.expires_at_ms;
        self.phase = Phase::Writing;
        Step::Send(request)
    }

    fn read(&mut self, phase: Phase) -> Step<Lease> {
        self.phase = phase;
        Step::Send(get(&self.object_key, &Judge::holder()))
    }

    /// The object at the lease's etag holds another token or holder (or a
    /// semaphore): the lease was sealed by someone who read the seal key,
    /// and writing it would lower the key's token or rewrite another lock.
    fn altered(&self, s: &LockState) -> Option<Error> {
        let l = &self.lease;
        if s.semaphore.is_none() && s.record.token == l.token && s.record.holder_id == l.holder_id {
            return None;
        }
        let stored = match &s.semaphore {
            Some(_) => "a semaphore".to_string(),
            None => format!("token {} of {:?}", s.record.token, s.record.holder_id),
        };
        Some(Error::InvalidArgument(format!(
            "the lease of {:?} carries token {} of {:?}, but the lock object at its etag holds \
             {stored}: the lease was altered and resealed; nothing was written",
            l.key, l.token, l.holder_id
        )))
    }

    /// The object holds this very grant at another etag: its holder and
    /// token (and grant time), not released. Only the holder writes that:
    /// every grant takes the next token, the same holder's too. So it is
    /// the holder's own later write, made by another call (a renew whose
    /// reply and read-back were lost, retried as a new call with a new
    /// write id; a call the host ran again): the lease goes on from it.
    fn own_grant(&self, s: &LockState) -> bool {
        let l = &self.lease;
        s.semaphore.is_none()
            && s.record.token == l.token
            && s.record.holder_id == l.holder_id
            && s.record.acquired_at_ms == l.acquired_at_ms
            && s.record.expires_at_ms != 0
    }

    /// Goes on from the lease's own grant at etag `etag` (see `own_grant`).
    fn adopt(&mut self, etag: String) {
        self.lease.etag = etag;
    }

    fn on_verified(&mut self, r: S3Response, now_ms: u64) -> Step<Lease> {
        match read_lock(
            &self.lease.key,
            &self.object_key,
            r,
            now_ms,
            &Judge::holder(),
        ) {
            Ok(Some(s)) if s.etag == self.lease.etag => match self.altered(&s) {
                Some(e) => Step::Done(Err(e)),
                None => self.write(now_ms),
            },
            Ok(Some(s)) if self.own_grant(&s) => {
                self.adopt(s.etag);
                self.write(now_ms)
            }
            // The object changed since the lease's write, as the `If-Match`
            // would have found.
            Ok(current) => self.lost(current),
            Err(Error::CorruptLockObject { .. }) => self.lost(None),
            Err(e) => Step::Done(Err(e)),
        }
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
        self.read(Phase::Reading)
    }
}

impl Operation for RewriteOwn {
    /// The lease as now stored (for release: with `expires_at_ms` 0).
    type Output = Lease;

    fn start(&mut self, now_ms: u64) -> Step<Lease> {
        if let Err(e) = self.seal.check_returned(&self.lease) {
            return Step::Done(Err(e));
        }
        if self.token_known {
            self.write(now_ms)
        } else {
            self.read(Phase::Verifying)
        }
    }

    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<Lease> {
        if self.phase == Phase::Verifying {
            return self.on_verified(r, now_ms);
        }
        if self.phase == Phase::Reading {
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
                // Still the object the lease names: a busy key (409), or
                // one whose token the store's condition refused.
                // Or the lease's own grant, written by an earlier call of
                // its holder: adopted, and written again from this call.
                Ok(Some(s)) if s.etag == self.lease.etag || self.own_grant(&s) => {
                    match self.altered(&s) {
                        Some(e) => Step::Done(Err(e)),
                        None if self.rereads < MAX_REREADS => {
                            self.rereads += 1;
                            self.adopt(s.etag);
                            self.write(now_ms)
                        }
                        None => Step::Done(Err(match self.ambiguous.take() {
                            Some(e) => e,
                            None => Error::Conflict(crate::error::S3Error {
                                status: 409,
                                code: "ConditionalRequestConflict".into(),
                                message: format!("still conflicting after {MAX_REREADS} attempts"),
                                request_id: String::new(),
                            }),
                        })),
                    }
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
            _ if matches!(r.status, 409 | 412) || r.is_missing_object() => {
                self.read(Phase::Reading)
            }
            _ if is_ambiguous(&r) => self.ambiguous(r.into_error()),
            _ => Step::Done(Err(r.into_error())),
        }
    }

    fn on_transport_error(&mut self, error: Error, _now_ms: u64) -> Step<Lease> {
        if self.phase != Phase::Writing || self.rereads >= MAX_REREADS {
            return Step::Done(Err(error));
        }
        self.rereads += 1;
        self.ambiguous(error)
    }
}

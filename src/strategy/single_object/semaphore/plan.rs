//! What each semaphore operation writes, given what it read: pure
//! functions of the object's state, the caller's wish and the time.
//!
//! The rules every writer keeps:
//! - An entry a writer keeps is counted: a slot stays taken until some
//!   writer judges it expired by its clock and drops it, and only then is
//!   its place free. So a slot still present is one nobody has given away,
//!   and renewing it is safe whatever the renewer's clock says.
//! - Grants go to the queue's live waiters first, in queue order: the k-th
//!   live waiter (from 0) may take a slot only while more than k are free;
//!   a caller not in the queue (not fair, or new) only beyond all of them.
//! - The counter only rises: every grant takes `token + 1`, slot or plain.
//! - Growth leaves room: a write may not widen the record past the cap
//!   (see `room`), so a renew, release or leave always fits.

use crate::prelude::*;

use crate::error::Error;
use crate::lease::{check_writable_time, Grant, Lease};
use crate::lock_object::semaphore::{Entry, SemaphoreRecord, SemaphoreState};
use crate::lock_object::{LockState, MAX_LOCK_OBJECT_BYTES};

use super::room::widest_bytes;

/// What an operation wants of a semaphore.
#[derive(Debug, Clone)]
pub enum Wish {
    Acquire {
        grant: Grant,
        limit: u32,
        /// Wait in the queue; otherwise only take a slot no waiter claims.
        fair: bool,
    },
    Renew(Lease),
    Release(Lease),
    /// Give up a place in the queue (a fair acquire that stops waiting).
    Leave {
        holder_id: String,
    },
}

/// What a successful write means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then {
    /// A slot with this entry (its token) is ours.
    Granted(Entry),
    /// We are the `place`-th live waiter (1-based).
    Queued(u32),
    /// Our slot now runs to this entry's expiry.
    Renewed(Entry),
    Released,
    Left,
}

/// A plan: write this record under this condition, or answer at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    Write {
        record: Box<SemaphoreRecord>,
        /// `("if-none-match", "*")` or `("if-match", etag)`.
        condition: (&'static str, String),
        then: Then,
    },
    /// No write: no free slot for us (`Full`), or we wait in line and our
    /// place needs no renewing yet (`Queued`), or there was nothing to leave.
    Answer(Answer),
    /// The state lacks the `Last-Modified` that the entries of others must
    /// be stamped with (it is what this client wrote, whose own
    /// `Last-Modified` it cannot know, or a reply without one): read first.
    ReadFirst,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Full,
    Queued(u32),
    Left,
}

/// What the plan needs to know besides the state read.
pub struct Context<'a> {
    pub key: &'a str,
    /// A fresh random id, stored in every entry this operation writes.
    pub write_id: &'a str,
    pub now_ms: u64,
    /// Entries must be stamped with the `Last-Modified` that stored them
    /// (the `server` clock reads `written_at`). False on a store that
    /// keeps no write time, where no reader is on `server`.
    pub stamps_needed: bool,
    /// The token below the first one of an object this creates: the key's
    /// token floor (`strategy::floor`; 0 on a table).
    pub created_base: u64,
}

/// Plans `wish` on `seen` (`None`: no object).
pub fn plan(wish: &Wish, seen: Option<&LockState>, cx: &Context) -> Result<Plan, Error> {
    match wish {
        Wish::Acquire { grant, limit, fair } => acquire(grant, *limit, *fair, seen, cx),
        Wish::Renew(lease) => rewrite_own(lease, false, seen, cx),
        Wish::Release(lease) => rewrite_own(lease, true, seen, cx),
        Wish::Leave { holder_id } => leave(holder_id, seen, cx),
    }
}

fn acquire(
    grant: &Grant,
    limit: u32,
    fair: bool,
    seen: Option<&LockState>,
    cx: &Context,
) -> Result<Plan, Error> {
    let mismatch = |stored: u32| Error::LimitMismatch {
        key: cx.key.to_string(),
        stored,
        requested: limit,
    };
    let empty = |token: u64| SemaphoreRecord {
        limit,
        token,
        ..SemaphoreRecord::default()
    };
    let read = seen
        .and_then(|s| s.semaphore.as_ref())
        .map(|sem| &sem.record);
    let (mut base, condition, my_place_expiry) = match seen {
        None => (
            empty(cx.created_base),
            ("if-none-match", "*".to_string()),
            None,
        ),
        Some(s) => {
            let if_match = ("if-match", s.etag.clone());
            match &s.semaphore {
                // A plain lock: held, it is a lock of limit 1 to us; free,
                // it becomes this semaphore, its counter carried on.
                None if s.live && limit != 1 => return Err(mismatch(1)),
                None if s.live => return Ok(Plan::Answer(Answer::Full)),
                None => (empty(s.record.token), if_match, None),
                Some(sem) if sem.record.limit != limit => {
                    let anyone = sem.live_holders().chain(sem.live_queue()).next();
                    if anyone.is_some() {
                        return Err(mismatch(sem.record.limit));
                    }
                    (empty(sem.record.token), if_match, None)
                }
                Some(sem) => {
                    let mine = sem
                        .live_queue()
                        .find(|e| e.holder_id == grant.holder_id)
                        .map(|e| e.expires_at_ms);
                    let Some(kept) = live_entries(sem, s.last_modified_ms, cx) else {
                        return Ok(Plan::ReadFirst);
                    };
                    (kept, if_match, mine)
                }
            }
        }
    };
    // A holder id that finds its own live slot takes it over with a new
    // token, as it does a lock (a restarted process reclaiming its place,
    // or a grant whose reply was lost and not recognised): the slot is
    // already its own, so no waiter is passed and no holder added.
    let had_slot = base.holders.iter().any(|e| e.holder_id == grant.holder_id);
    base.holders.retain(|e| e.holder_id != grant.holder_id);
    let free = limit.saturating_sub(base.holders.len() as u32) as usize;
    let my_place = base
        .queue
        .iter()
        .position(|e| e.holder_id == grant.holder_id);
    let ahead = match (fair, my_place) {
        (true, Some(i)) => i,
        _ => base.queue.len(),
    };
    let expires_at_ms = cx.now_ms.saturating_add(grant.ttl_ms);
    check_writable_time(expires_at_ms)?;
    let entry = |token: u64| Entry {
        holder_id: grant.holder_id.clone(),
        token,
        expires_at_ms,
        acquired_at_ms: cx.now_ms,
        ttl_ms: grant.ttl_ms,
        metadata: grant.metadata.clone(),
        write_id: cx.write_id.to_string(),
        written_at_ms: None,
    };
    if (had_slot && free > 0) || free > ahead {
        let token = base
            .token
            .checked_add(1)
            .ok_or_else(|| Error::corrupt(cx.key, "token is at its maximum and cannot rise"))?;
        if let Some(i) = my_place {
            base.queue.remove(i);
        }
        let granted = entry(token);
        base.token = token;
        base.holders.push(granted.clone());
        return write(base, read, condition, Then::Granted(granted), cx);
    }
    if !fair {
        return Ok(Plan::Answer(Answer::Full));
    }
    let place = match my_place {
        Some(i) => {
            // A place is renewed every third of its ttl, judged on the
            // waiter's own clock (it wrote the expiry): others drop it only
            // a whole ttl after its last renewal. An expiry more than a ttl
            // ahead means that clock stepped back since: renew now, or the
            // place would go unrenewed for as long as the step.
            let due = my_place_expiry.is_none_or(|at| {
                let left = at.saturating_sub(cx.now_ms);
                left < grant.ttl_ms.saturating_mul(2) / 3 || left > grant.ttl_ms
            });
            if !due {
                return Ok(Plan::Answer(Answer::Queued(i as u32 + 1)));
            }
            let joined = base.queue[i].acquired_at_ms;
            base.queue[i] = Entry {
                acquired_at_ms: joined,
                ..entry(0)
            };
            i
        }
        None => {
            base.queue.push(entry(0));
            base.queue.len() - 1
        }
    };
    write(base, read, condition, Then::Queued(place as u32 + 1), cx)
}

fn rewrite_own(
    lease: &Lease,
    release: bool,
    seen: Option<&LockState>,
    cx: &Context,
) -> Result<Plan, Error> {
    let lost = || Error::Lost {
        key: lease.key.clone(),
        token: lease.token,
        current: seen.map(|s| Box::new(s.clone())),
    };
    let Some((s, sem)) = seen.and_then(|s| s.semaphore.as_ref().map(|sem| (s, sem))) else {
        return Err(lost());
    };
    let ours = |e: &Entry| e.holder_id == lease.holder_id && e.token == lease.token;
    if !sem.record.holders.iter().any(ours) {
        return Err(lost());
    }
    // Nothing is dropped here: the entries of others are kept as they are.
    let Some(mut base) = stamped(&sem.record, s.last_modified_ms, cx, ours) else {
        return Ok(Plan::ReadFirst);
    };
    let condition = ("if-match", s.etag.clone());
    let i = base.holders.iter().position(ours).ok_or_else(lost)?;
    if release {
        base.holders.remove(i);
        return write(base, Some(&sem.record), condition, Then::Released, cx);
    }
    let expires_at_ms = cx.now_ms.saturating_add(lease.ttl_ms);
    check_writable_time(expires_at_ms)?;
    let renewed = Entry {
        expires_at_ms,
        write_id: cx.write_id.to_string(),
        written_at_ms: None,
        ..base.holders[i].clone()
    };
    base.holders[i] = renewed.clone();
    write(
        base,
        Some(&sem.record),
        condition,
        Then::Renewed(renewed),
        cx,
    )
}

fn leave(holder_id: &str, seen: Option<&LockState>, cx: &Context) -> Result<Plan, Error> {
    let Some((s, sem)) = seen.and_then(|s| s.semaphore.as_ref().map(|sem| (s, sem))) else {
        return Ok(Plan::Answer(Answer::Left));
    };
    let mine = |e: &Entry| e.holder_id == holder_id;
    if !sem.record.queue.iter().any(mine) {
        return Ok(Plan::Answer(Answer::Left));
    }
    let Some(mut base) = stamped(&sem.record, s.last_modified_ms, cx, |e| {
        mine(e) && e.token == 0
    }) else {
        return Ok(Plan::ReadFirst);
    };
    base.queue.retain(|e| !mine(e));
    let condition = ("if-match", s.etag.clone());
    write(base, Some(&sem.record), condition, Then::Left, cx)
}

/// The record with only its live entries, stamped: what a writer that
/// judges the others keeps.
fn live_entries(
    sem: &SemaphoreState,
    modified_ms: Option<u64>,
    cx: &Context,
) -> Option<SemaphoreRecord> {
    let kept = SemaphoreRecord {
        limit: sem.record.limit,
        token: sem.record.token,
        holders: sem.live_holders().cloned().collect(),
        queue: sem.live_queue().cloned().collect(),
    };
    stamped(&kept, modified_ms, cx, |_| false)
}

/// Fills in `written_at` of the entries the read record's own write
/// stored (those without one), with that record's `Last-Modified`; the
/// entries `replaced` picks are about to be rewritten and need none.
/// `None` when some need it and `modified_ms` is unknown; unknown and not
/// needed (`Context::stamps_needed`), they stay unstamped.
fn stamped(
    record: &SemaphoreRecord,
    modified_ms: Option<u64>,
    cx: &Context,
    replaced: impl Fn(&Entry) -> bool,
) -> Option<SemaphoreRecord> {
    let mut out = record.clone();
    for e in out.holders.iter_mut().chain(out.queue.iter_mut()) {
        if e.written_at_ms.is_none() && !replaced(e) {
            match modified_ms {
                Some(modified) => e.written_at_ms = Some(modified),
                None if !cx.stamps_needed => {}
                None => return None,
            }
        }
    }
    Some(out)
}

/// The write of `record` over `read` (what the plan started from), when
/// it fits: see `room` for why growth is measured at its widest.
fn write(
    record: SemaphoreRecord,
    read: Option<&SemaphoreRecord>,
    condition: (&'static str, String),
    then: Then,
    cx: &Context,
) -> Result<Plan, Error> {
    let widest = widest_bytes(&record);
    if widest > MAX_LOCK_OBJECT_BYTES && widest > read.map_or(0, widest_bytes) {
        let key = cx.key;
        let growth = match then {
            Then::Queued(_) => format!("{key}'s fair queue is full: joining it"),
            _ => format!("{key} has no room for another slot: granting one"),
        };
        return Err(Error::InvalidArgument(format!(
            "{growth} would make the semaphore's object {widest} bytes at its widest (every \
             entry stamped, every time and token at full width), over the \
             {MAX_LOCK_OBJECT_BYTES} a lock object may be. That room is kept so that every \
             holder can renew and every waiter keep its place whatever the others write; try \
             again once waiters have left, or use shorter holder ids and metadata"
        )));
    }
    // Only an object this rule did not write (an earlier build's) can be
    // this full.
    let len = record.to_json().len();
    if len > MAX_LOCK_OBJECT_BYTES {
        return Err(Error::InvalidArgument(format!(
            "the semaphore's object would be {len} bytes, over the {MAX_LOCK_OBJECT_BYTES} a \
             lock object may be: fewer waiters or shorter holder ids and metadata"
        )));
    }
    Ok(Plan::Write {
        record: Box::new(record),
        condition,
        then,
    })
}

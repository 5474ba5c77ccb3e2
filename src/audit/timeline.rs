//! A key's log as an operator reads it: one entry per grant (token,
//! holder, when granted, how it ended and when, how long it was held),
//! every time the store's.

use crate::prelude::*;

use super::names::Kind;
use super::read::Log;
use super::record::{Previous, PreviousHolder, Record};
use crate::lock_object::LockState;

/// How a grant ended, as far as the store shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Released,
    /// Not released: a later grant took the key once it had expired.
    Expired,
    /// Not released: its own holder id took the key again (a restarted
    /// process reclaiming its lock).
    TakenOver,
    /// Still held, by the lock object as read now.
    Held,
    /// Nothing in the store says (the last grant, expired but not yet
    /// taken, or a lock object without it).
    Unknown,
}

impl Ended {
    pub fn name(self) -> &'static str {
        match self {
            Ended::Released => "released",
            Ended::Expired => "expired",
            Ended::TakenOver => "taken-over",
            Ended::Held => "held",
            Ended::Unknown => "unknown",
        }
    }
}

/// One grant of the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub token: u64,
    pub holder: String,
    pub ttl_ms: u64,
    /// Store time of the grant's write (`None` for a back-filled record,
    /// whose grant's write nobody saw).
    pub granted_ms: Option<u64>,
    pub ended: Ended,
    /// Store time: the release's write, or when the lease expired by its
    /// last write and ttl.
    pub ended_ms: Option<u64>,
    pub held_ms: Option<u64>,
    /// Who wrote the record: the holder, or the grantee that back-filled it.
    pub written_by: String,
    pub backfilled: bool,
}

/// The entries of `log`, in token order.
pub fn timeline(log: &Log, current: Option<&LockState>) -> Vec<Entry> {
    let grants: Vec<&Record> = log
        .found
        .iter()
        .filter(|f| f.kind == Kind::Grant)
        .filter_map(|f| f.record.as_ref().ok())
        .collect();
    grants
        .iter()
        .map(|g| {
            let granted_ms = if g.backfilled { None } else { g.write.at_ms() };
            let (ended, ended_ms) = ending(log, &grants, g, current);
            Entry {
                token: g.token,
                holder: g.holder.clone(),
                ttl_ms: g.ttl_ms,
                granted_ms,
                ended,
                ended_ms,
                held_ms: granted_ms
                    .zip(ended_ms)
                    .map(|(from, to)| to.saturating_sub(from)),
                written_by: g.written_by.clone(),
                backfilled: g.backfilled,
            }
        })
        .collect()
}

fn ending(
    log: &Log,
    grants: &[&Record],
    g: &Record,
    current: Option<&LockState>,
) -> (Ended, Option<u64>) {
    if let Some(found) = log.of(g.token, Kind::Release) {
        let at = found.record.as_ref().ok().and_then(|r| r.write.at_ms());
        return (Ended::Released, at.or(found.written_ms));
    }
    let replaced = grants.iter().find_map(|later| {
        let p = later.previous.as_ref()?;
        let h = p.holders.iter().find(|h| h.token == g.token)?;
        (!h.live).then_some((*later, p, h))
    });
    if let Some((later, p, h)) = replaced {
        return replaced_by(later, p, h);
    }
    match current {
        Some(s) if s.semaphore.is_none() && s.record.token == g.token => {
            if s.live {
                (Ended::Held, None)
            } else if s.record.expires_at_ms == 0 {
                (Ended::Released, s.last_modified_ms)
            } else {
                let at = s
                    .last_modified_ms
                    .map(|m| m.saturating_add(s.record.ttl_ms));
                (Ended::Expired, at)
            }
        }
        Some(s)
            if s.semaphore
                .as_ref()
                .is_some_and(|sem| sem.live_holders().any(|e| e.token == g.token)) =>
        {
            (Ended::Held, None)
        }
        _ => (Ended::Unknown, None),
    }
}

fn replaced_by(later: &Record, p: &Previous, h: &PreviousHolder) -> (Ended, Option<u64>) {
    if h.released {
        // The lock object read was the release's write.
        return (Ended::Released, p.modified_ms);
    }
    if h.holder == later.holder {
        return (Ended::TakenOver, p.date_ms);
    }
    let since = h.written_at_ms.or(h.first_date_ms);
    (Ended::Expired, since.map(|s| s.saturating_add(h.ttl_ms)))
}

//! The semaphore rules, judged on the store's side: on every write the
//! store applies to a semaphore key, the object before and after. (What
//! holders believe is judged by `testing::history`; this judges what
//! every writer wrote.) An entry (a slot,
//! a queue place, or a plain lock's record) is *alive* at an instant `T`
//! while `T - sent <= ttl`, where `sent` is when the write that last
//! (re)wrote it was sent: the lease rule itself, so an alive entry is one
//! its owner may still count on. Every expiry clock keeps an alive entry
//! live for any writer: `holder` compares the entry's `expires_at`
//! (`sent + ttl` on its writer's clock) with this writer's clock when it
//! planned, before the write arrived, so clocks that differ by `d` shorten
//! the window by `d` (the run's skew allowance, see `skew_ms`); `server` needs the server's `Date`
//! past the entry's `Last-Modified` (at most 1 s before its arrival, which
//! is after it was sent) plus ttl plus 2 s; `observed` needs the writer to
//! have seen the entry unchanged for ttl plus slack, and it can first have
//! seen it only once it arrived. So the checks below hold with no margin
//! for any correct writer, and any failure is a bug:
//!
//! - the limit is the key's, at most `limit` slots, each holder id once;
//! - the counter never falls; a new slot belongs to the writer and takes
//!   the counter as read plus one (creating the object, the key's floor
//!   plus one; so no token is ever stored twice, and a slot once dropped
//!   never comes back: a superseded or expired slot cannot be renewed);
//! - an entry of another holder is dropped only once it is not alive;
//! - entries of others are kept exactly, stamped (`written_at`) with the
//!   `Last-Modified` of the write that stored them (what `server` judges
//!   them by); an entry without a stamp is the writer's own;
//! - fairness, the rule of the queue: a new slot for `X` leaves a slot for
//!   every alive waiter ahead of `X` (all alive waiters if `X` has no
//!   place): `limit - alive other holders > alive waiters ahead`. With a
//!   limit of 1 that is strict queue order among alive waiters: nobody is
//!   granted while an alive waiter is ahead. With a limit of N it is not:
//!   the k-th waiter may take a slot before those ahead of it take theirs,
//!   while more than k are free, since a slot stays for each of them
//!   (counted as `fair_passes`). A waiter whose place was let expire (it
//!   crashed, stopped polling, or its requests were too slow) may be
//!   passed; it joins again at the back.

use super::setup::{ActorKind, SemKey, Setup, PREFIX, SEMAPHORE_KEYS};
use super::Report;
use crate::expiry::ExpiryClock;
use crate::lock_object::semaphore::{Entry, SemaphoreRecord};
use crate::lock_object::LockRecord;
use crate::stores::s3::model::Object;
use crate::stores::s3::{Method, S3Request};
use crate::testing::history::{violation, Violation};
use std::collections::{BTreeMap, BTreeSet};

/// An entry's identity in the store: a slot by holder and token, a queue
/// place by holder.
type EntryId = (bool, String, u64);

fn slot_id(e: &Entry) -> EntryId {
    (false, e.holder_id.clone(), e.token)
}

fn place_id(e: &Entry) -> EntryId {
    (true, e.holder_id.clone(), 0)
}

/// When the write that last rewrote each stored entry of a key was sent.
#[derive(Debug, Default)]
struct KeyLog {
    sent: BTreeMap<EntryId, u64>,
}

#[derive(Debug)]
pub struct StoreRules {
    keys: BTreeMap<&'static str, KeyLog>,
    /// The store keeps no write times (DynamoDB): entries of others are
    /// kept exactly, unstamped as they were.
    without_write_times: bool,
    /// Per semaphore key: how much sooner than `sent + ttl` a correct
    /// writer may judge an entry expired. Under `holder`, the writers'
    /// wall clocks differ by up to twice the skew the run allows (the rule
    /// needs them in sync to within the margin holders keep); under the
    /// other clocks, nothing.
    skew_ms: [u64; 3],
}

/// A lock object as the checks see it: a semaphore, or a plain lock as a
/// semaphore of limit 1 whose one slot is its record (none once released).
struct View {
    limit: Option<u32>,
    token: u64,
    holders: Vec<Entry>,
    queue: Vec<Entry>,
}

fn view(key: &str, o: &Object) -> Result<View, Violation> {
    let bad = |reason: String| violation("semaphore objects parse", format!("{key}: {reason}"));
    match SemaphoreRecord::from_json(&o.body) {
        Some(Ok(r)) => Ok(View {
            limit: Some(r.limit),
            token: r.token,
            holders: r.holders,
            queue: r.queue,
        }),
        Some(Err(reason)) => Err(bad(reason)),
        None => {
            let r = LockRecord::from_json(&o.body).map_err(bad)?;
            let holders = if r.expires_at_ms == 0 {
                Vec::new()
            } else {
                vec![Entry {
                    holder_id: r.holder_id,
                    token: r.token,
                    expires_at_ms: r.expires_at_ms,
                    acquired_at_ms: r.acquired_at_ms,
                    ttl_ms: r.ttl_ms,
                    metadata: r.metadata,
                    write_id: r.write_id,
                    written_at_ms: None,
                }]
            };
            Ok(View {
                limit: None,
                token: r.token,
                holders,
                queue: Vec::new(),
            })
        }
    }
}

impl StoreRules {
    pub fn new(setup: &Setup) -> Self {
        let skew = |n: usize| {
            let group = setup.semaphores[n];
            if group.clock != ExpiryClock::Holder {
                return 0;
            }
            // Two wall clocks each off by up to the skew, and monotonic
            // rates off by up to 200 ppm each over a ttl.
            2 * setup.max_skew_ms(ActorKind::Slots(n)) + group.ttl_ms / 2_000 + 1
        };
        StoreRules {
            keys: BTreeMap::new(),
            without_write_times: setup.dynamodb,
            skew_ms: [skew(0), skew(1), skew(2)],
        }
    }

    /// The semaphore key whose lock object `object_key` is.
    fn key(object_key: &str) -> Option<&'static SemKey> {
        let name = object_key.strip_prefix(PREFIX)?;
        SEMAPHORE_KEYS.iter().find(|k| k.name == name)
    }

    /// Whether `request` writes a semaphore key's object.
    pub fn watches(&self, request: &S3Request) -> bool {
        request.method == Method::Put && Self::key(&request.object_key).is_some()
    }

    /// The store applied a write of `writer` (a holder id), sent at `sent`,
    /// arriving at `at`, turning `before` into `after`: see the module
    /// comment for what must hold.
    #[allow(clippy::too_many_arguments)]
    pub fn applied(
        &mut self,
        object_key: &str,
        writer: &str,
        before: Option<&Object>,
        after: &Object,
        sent: u64,
        at: u64,
        report: &mut Report,
    ) -> Result<(), Violation> {
        let Some(key) = Self::key(object_key) else {
            return Ok(());
        };
        let name = key.name;
        let skew = SEMAPHORE_KEYS
            .iter()
            .position(|k| k.name == name)
            .map_or(0, |n| self.skew_ms[n]);
        let without_write_times = self.without_write_times;
        let fail = |invariant: &'static str, detail: String| {
            Err(violation(
                invariant,
                format!(
                    "{name}: write of {writer} sent at {sent} ms, applied at {at} ms: {detail}"
                ),
            ))
        };
        let old = before.map(|o| view(name, o)).transpose()?;
        let new = view(name, after)?;
        let log = self.keys.entry(name).or_default();
        let alive = |id: &EntryId, ttl: u64| -> Result<bool, Violation> {
            let Some(&sent) = log.sent.get(id) else {
                return Err(violation(
                    "the simulation's own bookkeeping",
                    format!("{name}: stored entry {id:?} of no write seen"),
                ));
            };
            Ok(at.saturating_sub(sent) <= ttl.saturating_sub(skew))
        };
        if new.limit.is_some_and(|l| l != key.limit) {
            return fail("a semaphore keeps its limit", format!("{:?}", new.limit));
        }
        if new.holders.len() > key.limit as usize {
            return fail(
                "at most the limit of slots stored",
                format!("{:?}", new.holders),
            );
        }
        let ids: BTreeSet<&str> = new.holders.iter().map(|e| e.holder_id.as_str()).collect();
        let places: BTreeSet<&str> = new.queue.iter().map(|e| e.holder_id.as_str()).collect();
        if ids.len() != new.holders.len() || places.len() != new.queue.len() {
            return fail(
                "a holder id holds one slot and one place at most",
                format!("holders {:?}, queue {:?}", new.holders, new.queue),
            );
        }
        let old_token = old.as_ref().map_or(0, |o| o.token);
        if new.token < old_token {
            return fail(
                "a key's counter never falls",
                format!("{old_token} -> {}", new.token),
            );
        }
        let (old_holders, old_queue) = match &old {
            Some(o) => (o.holders.as_slice(), o.queue.as_slice()),
            None => (&[][..], &[][..]),
        };
        // New slots: the writer's, with the counter as read plus one (on
        // an object this write creates, the key's floor plus one: a
        // multiple of the floor's stride, plus one).
        let next_token = |token: u64| match &old {
            Some(_) => token == old_token + 1,
            None => token % crate::strategy::floor::FLOOR_STRIDE == 1,
        };
        let fresh: Vec<&Entry> = new
            .holders
            .iter()
            .filter(|e| !old_holders.iter().any(|o| slot_id(o) == slot_id(e)))
            .collect();
        if fresh.len() > 1
            || fresh
                .iter()
                .any(|e| e.holder_id != writer || !next_token(e.token) || new.token != e.token)
        {
            return fail(
                "a new slot is the writer's and takes the counter as read plus one",
                format!("counter {old_token} -> {}, new slots {fresh:?}", new.token),
            );
        }
        let created_at_floor =
            old.is_none() && new.token % crate::strategy::floor::FLOOR_STRIDE == 0;
        if fresh.is_empty() && new.token != old_token && !created_at_floor {
            return fail(
                "the counter rises only with a grant",
                format!("{old_token} -> {}", new.token),
            );
        }
        // Entries of others dropped: only once not alive.
        let gone = old_holders
            .iter()
            .map(|e| (slot_id(e), e))
            .filter(|(id, _)| !new.holders.iter().any(|n| slot_id(n) == *id))
            .chain(
                old_queue
                    .iter()
                    .map(|e| (place_id(e), e))
                    .filter(|(id, _)| !new.queue.iter().any(|n| place_id(n) == *id)),
            );
        for (id, e) in gone {
            if e.holder_id == writer {
                continue;
            }
            if alive(&id, e.ttl_ms)? {
                return fail(
                    "an entry of another holder is dropped only once it has expired",
                    format!(
                        "dropped {e:?}, last written by a write sent at {} ms (ttl {} ms)",
                        log.sent[&id], e.ttl_ms
                    ),
                );
            }
            if id.0 {
                report.places_dropped_expired += 1;
            } else {
                report.slots_dropped_expired += 1;
            }
        }
        // Entries kept: exactly, stamped with the Last-Modified that
        // stored them; unstamped ones (and a plain record) the writer's.
        let old_modified = before.map(|o| o.last_modified_ms);
        let all_old = old_holders
            .iter()
            .map(|e| (slot_id(e), e))
            .chain(old_queue.iter().map(|e| (place_id(e), e)));
        let all_new: Vec<(EntryId, &Entry)> = new
            .holders
            .iter()
            .map(|e| (slot_id(e), e))
            .chain(new.queue.iter().map(|e| (place_id(e), e)))
            .collect();
        let all_old: BTreeMap<EntryId, &Entry> = all_old.collect();
        for (id, e) in &all_new {
            let kept_unstamped = || all_old.get(id).is_some_and(|o| *o == *e);
            match e.written_at_ms {
                None if without_write_times && kept_unstamped() => {}
                None if e.holder_id != writer => {
                    return fail(
                        "a writer rewrites only its own entries",
                        format!("wrote {e:?}"),
                    );
                }
                None => {}
                Some(stamp) => {
                    let kept = all_old.get(id).is_some_and(|o| {
                        let want = o.written_at_ms.or(old_modified);
                        Entry {
                            written_at_ms: want,
                            ..(*o).clone()
                        } == **e
                    });
                    if !kept {
                        return fail(
                            "entries of others are kept exactly, stamped with the Last-Modified \
                             of the write that stored them",
                            format!(
                                "stored {e:?} (stamp {stamp}), before {:?}, Last-Modified before \
                                 {old_modified:?}",
                                all_old.get(id)
                            ),
                        );
                    }
                }
            }
        }
        // Fairness: a new slot leaves one for every alive waiter ahead;
        // unless it replaces the writer's own slot (a holder id taking its
        // own slot over, as after a grant whose reply was lost and not
        // recognised), which adds no holder and so passes nobody.
        let takes_over = old_holders.iter().any(|e| e.holder_id == writer);
        if let Some(x) = fresh.first().filter(|_| !takes_over) {
            let mut holders_alive = 0u32;
            for e in old_holders.iter().filter(|e| e.holder_id != writer) {
                holders_alive += u32::from(alive(&slot_id(e), e.ttl_ms)?);
            }
            let mine = old_queue.iter().position(|e| e.holder_id == x.holder_id);
            let ahead = &old_queue[..mine.unwrap_or(old_queue.len())];
            let mut waiting = Vec::new();
            for e in ahead {
                if alive(&place_id(e), e.ttl_ms)? {
                    waiting.push(e);
                }
            }
            let free = key.limit.saturating_sub(holders_alive);
            if free as usize <= waiting.len() {
                return fail(
                    "a grant leaves a slot for every alive waiter ahead of it (the queue's order)",
                    format!(
                        "granted {x:?} with {holders_alive} other slots alive of {} and alive \
                         waiters ahead {waiting:?}; queue before {old_queue:?}",
                        key.limit
                    ),
                );
            }
            if key.fair {
                report.fair_grants_checked += 1;
                report.fair_grants_from_queue += u64::from(mine.is_some());
                report.fair_passes += u64::from(!waiting.is_empty());
            }
        }
        // Remember when each stored entry was last written: by this write,
        // unless stamped (or, on a store without write times, kept exactly
        // as it was) from an earlier one.
        let mut sent_now = BTreeMap::new();
        for (id, e) in all_new {
            let kept = without_write_times && all_old.get(&id).is_some_and(|o| **o == *e);
            let at = if e.written_at_ms.is_none() && !kept {
                sent
            } else {
                log.sent[&id]
            };
            sent_now.insert(id, at);
        }
        log.sent = sent_now;
        let live_slots = new.holders.len() as u64;
        report.max_slots_stored = report.max_slots_stored.max(live_slots);
        Ok(())
    }
}

//! The client's side of the grant log (see `audit`): a record after each
//! grant it makes and each release, and reading, verifying and pruning a
//! key's log.

use crate::prelude::*;

use super::ClientCore;
use crate::audit::fenced::{self as fenced_check, FencedScan};
use crate::audit::names::{check_key, log_dir, Kind};
use crate::audit::prune::{Prune, Pruned};
use crate::audit::read::{Log, ReadLog};
use crate::audit::record::clock_name;
use crate::audit::timeline::{timeline, Entry};
use crate::audit::verify::{verify, Report};
use crate::audit::{
    is_collision, Backfill, Backfiller, GrantTrail, Previous, Record, RecordGrant, RecordRelease,
    Recorded, WriteTimes,
};
use crate::capability::CapabilityResult;
use crate::driver::{self, Io};
use crate::error::Error;
use crate::expiry::Observation;
use crate::lease::Lease;
use crate::lock_object::LockState;
use crate::preflight::Report as PreflightReport;

/// Own grants' records kept to write later: past this the oldest are
/// left to successors' back-fills.
const MAX_UNRECORDED: usize = 16;

/// What a grant's record says of how it was made.
pub(super) struct Evidence<'a> {
    /// The lock object its write replaced (`None`: it created it).
    pub replaced: Option<&'a LockState>,
    /// What this client had observed of the key before the grant.
    pub observed: Option<&'a Observation>,
    pub write: WriteTimes,
    /// `single-object`, `epoch-objects` or `semaphore`.
    pub strategy: &'static str,
    pub limit: u32,
    /// The tokens of the holders the grant left in place (a semaphore's).
    pub left: Vec<u64>,
}

impl<'a> Evidence<'a> {
    /// A lock's grant (a limit of one, no holder left in place) under
    /// `strategy`.
    pub fn of_lock(
        trail: &'a GrantTrail,
        observed: Option<&'a Observation>,
        strategy: &'static str,
    ) -> Self {
        Evidence {
            replaced: trail.replaced.as_ref(),
            observed,
            write: trail.write_times.clone(),
            strategy,
            limit: 1,
            left: Vec::new(),
        }
    }
}

impl ClientCore {
    /// Refuses a key whose records the store would refuse, before a grant
    /// that would need them.
    pub(super) fn check_audit_key(&self, key: &str) -> Result<(), Error> {
        if self.config.audit {
            check_key(&self.config.key_prefix, key)?;
        }
        Ok(())
    }

    /// With the log on: what the grant operations of `key` by `holder_id`
    /// back-fill with (see `audit::write`).
    pub(super) fn backfiller(
        &self,
        key: &str,
        holder_id: &str,
        strategy: &str,
        limit: u32,
    ) -> Option<Backfiller> {
        self.config.audit.then(|| Backfiller {
            dir: log_dir(&self.config.key_prefix, key),
            key: key.to_string(),
            written_by: holder_id.to_string(),
            strategy: strategy.to_string(),
            limit,
            clock: clock_name(self.config.expiry_clock).to_string(),
        })
    }

    fn record_of(&self, lease: &Lease, kind: Kind, e: &Evidence<'_>) -> Record {
        Record {
            kind,
            key: lease.key.clone(),
            token: lease.token,
            holder: lease.holder_id.clone(),
            acquired_at_ms: lease.acquired_at_ms,
            ttl_ms: lease.ttl_ms,
            strategy: e.strategy.to_string(),
            limit: e.limit,
            clock: clock_name(self.config.expiry_clock).to_string(),
            write: e.write.clone(),
            previous: None,
            written_by: lease.holder_id.clone(),
            backfilled: false,
        }
    }

    /// With the log on, after a grant (whose operation back-filled the
    /// leases it took over unreleased): its record, then those of this
    /// client's own earlier grants it could not record. `Ok(true)`: the grant may be
    /// used; `Ok(false)`: a successor had already back-filled it (it was
    /// taken over before it was recorded), no lease. On an error the grant
    /// is not used: on a collision it is released and the client grants
    /// nothing more (its store granted a token twice); otherwise it is
    /// left to expire, unused, and its successor back-fills its record.
    pub(super) async fn record_grant(
        &mut self,
        io: &mut impl Io,
        lease: &Lease,
        e: Evidence<'_>,
    ) -> Result<bool, Error> {
        let dir = log_dir(&self.config.key_prefix, &lease.key);
        let mut ours = self.record_of(lease, Kind::Grant, &e);
        let previous = e.replaced.map(|s| {
            let mut p = Previous::of(s, e.observed);
            for h in &mut p.holders {
                h.live = e.left.contains(&h.token) && h.token != lease.token;
            }
            p
        });
        ours.previous = previous;
        let created = e.replaced.is_none();
        let op = RecordGrant::new(dir.clone(), ours.clone(), created);
        match driver::run(io, op).await {
            Ok(Recorded::Ours) => {
                // This client's own grants it abandoned unrecorded (an
                // elector's step that ran out of time, say): their records
                // now, whole, before any back-fill of them.
                let (late, kept) = core::mem::take(&mut self.unrecorded)
                    .into_iter()
                    .partition(|r| r.key == lease.key);
                self.unrecorded = kept;
                let mut late: Vec<Record> = late;
                // Backfill writes from the end.
                late.reverse();
                if !late.is_empty() {
                    let _ = driver::run(io, Backfill::new(dir, late)).await;
                }
                Ok(true)
            }
            Ok(Recorded::TakenOver { .. }) => Ok(false),
            Err(error) if !is_collision(&error) => {
                if self.unrecorded.len() >= MAX_UNRECORDED {
                    self.unrecorded.remove(0);
                }
                self.unrecorded.push(ours);
                Err(error)
            }
            Err(error) => {
                if let (true, Error::StoreUnsafe(failed)) = (is_collision(&error), &error) {
                    self.collision = Some(failed.clone());
                    // Its own write only (If-Match on its etag): never
                    // another holder's; and no release record of a token
                    // that is not its own.
                    // (Boxed: a slot's release runs the semaphore
                    // operation that called this.)
                    let release = async {
                        let target = self.rewrite_target(io, lease).await?;
                        self.rewrite_unrecorded(io, lease.clone(), true, target)
                            .await
                    };
                    let _ = Box::pin(release).await;
                }
                Err(error)
            }
        }
    }

    /// With the log on, after a release: its record, best effort (the
    /// release happened; the next grant's record says it saw it).
    pub(super) async fn record_release(&mut self, io: &mut impl Io, released: &Lease, slot: bool) {
        if !self.config.audit {
            return;
        }
        let e = Evidence {
            replaced: None,
            observed: None,
            write: WriteTimes {
                etag: released.etag.clone(),
                date_ms: None,
                modified_ms: None,
            },
            strategy: self.strategy_name(slot),
            limit: 0,
            left: Vec::new(),
        };
        let record = self.record_of(released, Kind::Release, &e);
        let dir = log_dir(&self.config.key_prefix, &released.key);
        let _ = driver::run(io, RecordRelease::new(dir, record)).await;
    }

    pub(super) fn strategy_name(&self, slot: bool) -> &'static str {
        if slot {
            "semaphore"
        } else {
            self.config.strategy.name()
        }
    }

    /// A key's log, and its lock object as read just before it: the
    /// records from the first grant at or after `since_ms` (store time),
    /// else from the first not pruned, to the lock object's token.
    pub async fn audit_log(
        &mut self,
        io: &mut impl Io,
        key: &str,
        since_ms: Option<u64>,
    ) -> Result<(Log, Option<LockState>), Error> {
        self.object_key(key)?;
        let current = self.inspect(io, key).await?;
        let until = current.as_ref().map_or(0, |s| s.record.token);
        let dir = log_dir(&self.config.key_prefix, key);
        let log = driver::run(io, ReadLog::new(dir, until, since_ms)).await?;
        Ok((log, current))
    }

    /// A key's grants, oldest first (see `audit::timeline`).
    pub async fn audit_timeline(
        &mut self,
        io: &mut impl Io,
        key: &str,
        since_ms: Option<u64>,
    ) -> Result<Vec<Entry>, Error> {
        let (log, current) = self.audit_log(io, key, since_ms).await?;
        Ok(timeline(&log, current.as_ref()))
    }

    /// Verifies a key's whole log (see `audit::verify`); with
    /// `fenced_prefix`, also the fenced objects under it (on a store that lists them).
    pub async fn audit_verify(
        &mut self,
        io: &mut impl Io,
        key: &str,
        fenced_prefix: Option<&str>,
    ) -> Result<Report, Error> {
        let (log, current) = self.audit_log(io, key, None).await?;
        let dir = log_dir(&self.config.key_prefix, key);
        let mut report = verify(key, &dir, &log, current.as_ref());
        if let Some(prefix) = fenced_prefix {
            // Which stores list fenced objects, and which list their
            // versions (docs/audit.md).
            let profile = self.config.store.profile();
            let (listed, versions) = (profile.lists_fenced_objects, profile.lists_versions);
            if !listed {
                return Err(Error::invalid_config(
                    "store",
                    format!(
                        "verifying fenced objects lists them, and a {} store is not listed here",
                        self.config.store.name()
                    ),
                ));
            }
            let scanned = driver::run(io, FencedScan::new(prefix.to_string(), versions)).await?;
            let lock =
                crate::fenced::lock_identity(self.config.strategy.name(), &self.object_key(key)?);
            report
                .findings
                .extend(fenced_check::check(&log, &scanned.objects, &lock));
            report
                .findings
                .extend(crate::audit::versions::fell(&scanned.versions, &lock));
        }
        Ok(report)
    }

    /// Deletes the records of a key's grants made before `before_ms`
    /// (store time), keeping the prune marker at the first kept token.
    pub async fn audit_prune(
        &mut self,
        io: &mut impl Io,
        key: &str,
        before_ms: u64,
    ) -> Result<Pruned, Error> {
        self.object_key(key)?;
        let current = self.inspect(io, key).await?;
        let until = current.as_ref().map_or(0, |s| s.record.token);
        let dir = log_dir(&self.config.key_prefix, key);
        let searched = ReadLog::new(dir.clone(), until, Some(before_ms)).search_only();
        let searched = driver::run(io, searched).await?;
        driver::run(io, Prune::new(dir, &searched)).await
    }
}

/// A collision this client met, in a preflight's report: the capability
/// it failed, silently, so no strategy is safe (see `audit::collision`).
pub(super) fn with_collision(report: &mut PreflightReport, collision: &CapabilityResult) {
    match report
        .results
        .iter_mut()
        .find(|r| r.capability == collision.capability)
    {
        Some(result) => *result = collision.clone(),
        None => report.results.push(collision.clone()),
    }
    report.safe_strategies.clear();
    report.safe_expiry_clocks.clear();
    report.recommended_strategy = None;
    report.config_safe = false;
    report.notes.push(format!(
        "this client's grant log met a token granted twice: {}",
        collision.detail
    ));
}

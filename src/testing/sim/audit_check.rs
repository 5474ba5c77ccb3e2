//! The grant log in the simulation (seeds with the log on, see
//! `Setup::audit`).
//!
//! While the run goes on, every write the store applies to a key's lock
//! (or epoch) object that raises its token is a true grant: its token and
//! holder, from the body the store took (`TrueGrants`). At the end, each
//! key's log is read from the store as `s3-lease audit` reads it, and:
//!
//! - every grant record names the holder the store granted that token to,
//!   and there is no record of a token the store never granted;
//! - every true grant has its record (the grantee's, or a successor's
//!   back-fill), or is named, with its holder, by a later grant's record
//!   or by the lock object (a grantee that crashed with nobody after it);
//! - verify proves the log.
//!
//! On a careless store (`Setup::careless`: some conditional writes to lock
//! objects land whatever their condition), a run whose holders overlapped
//! must fail verify.

use super::setup::{ActorKind, Setup, LEADER_KEY, LOCK_KEYS, PREFIX, SEMAPHORE_KEYS};
use super::store::SimStore;
use crate::audit::names::Kind;
use crate::audit::read::Log;
use crate::audit::verify::Report;
use crate::client::ClientCore;
use crate::driver::Io;
use crate::error::Error;
use crate::lock_object::semaphore::SemaphoreRecord;
use crate::lock_object::LockState;
use crate::ready::Ready;
use crate::stores::s3::{Endpoint, Method, S3Request, S3Response};
use crate::testing::history::{violation, Violation};
use serde_json::Value;
use std::collections::BTreeMap;

/// The grants the store made, by key: (token, holder) in token order.
#[derive(Debug, Default)]
pub struct TrueGrants {
    pub grants: BTreeMap<String, Vec<(u64, String)>>,
}

/// Every key the actors use, with the kind of actor whose config it has.
pub fn keys() -> Vec<(ActorKind, &'static str)> {
    let mut keys: Vec<_> = LOCK_KEYS.iter().map(|k| (ActorKind::Locker, *k)).collect();
    keys.push((ActorKind::Elector, LEADER_KEY));
    for (n, k) in SEMAPHORE_KEYS.iter().enumerate() {
        keys.push((ActorKind::Slots(n), k.name));
    }
    keys
}

/// The key whose lock (or epoch) object `object_key` is.
fn key_of(object_key: &str) -> Option<&'static str> {
    let rest = object_key.strip_prefix(PREFIX)?;
    keys().into_iter().map(|(_, k)| k).find(|k| {
        rest == *k
            || rest
                .strip_prefix(k)
                .is_some_and(|r| r.starts_with("/epoch-"))
    })
}

impl TrueGrants {
    /// A write the store applied (a 200 to a PUT): the grants in it.
    pub fn applied(&mut self, request: &S3Request) {
        if request.method != Method::Put {
            return;
        }
        let Some(key) = key_of(&request.object_key) else {
            return;
        };
        let grants = self.grants.entry(key.to_string()).or_default();
        let highest = grants.last().map_or(0, |(t, _)| *t);
        let mut found: Vec<(u64, String)> = match SemaphoreRecord::from_json(&request.body) {
            Some(Ok(sem)) => sem
                .holders
                .iter()
                .map(|e| (e.token, e.holder_id.clone()))
                .collect(),
            Some(Err(_)) => Vec::new(),
            None => serde_json::from_slice::<Value>(&request.body)
                .ok()
                .and_then(|v| {
                    let token = v.get("token")?.as_u64()?;
                    let holder = v.get("holder")?.as_str()?.to_string();
                    Some(vec![(token, holder)])
                })
                .unwrap_or_default(),
        };
        found.sort();
        grants.extend(found.into_iter().filter(|(t, _)| *t > highest));
    }
}

/// The store, reached directly at the end of a run: no faults.
struct Direct<'a> {
    store: &'a mut SimStore,
    now_ms: u64,
}

impl Io for Direct<'_> {
    async fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        Ok(self.store.handle(request))
    }
    fn now_ms(&mut self) -> u64 {
        self.now_ms
    }
    fn monotonic_ms(&mut self) -> u64 {
        self.now_ms
    }
    async fn sleep_ms(&mut self, _ms: u64) {}
    fn random_u64(&mut self) -> u64 {
        7
    }
    fn endpoint(&self) -> Option<Endpoint> {
        None
    }
}

/// One key's log as `s3-lease audit` reads it, and verify's report.
pub fn read(
    setup: &Setup,
    store: &mut SimStore,
    now_ms: u64,
    kind: ActorKind,
    key: &str,
) -> Result<(Log, Option<LockState>, Report), Violation> {
    let mut io = Direct { store, now_ms };
    let mut core = ClientCore::new(setup.config(kind));
    let failed = |e: Error| violation("audit: the log can be read", format!("{key}: {e}"));
    let (log, current) = core.audit_log(&mut io, key, None).ready().map_err(failed)?;
    let report = core
        .audit_verify(&mut io, key, None)
        .ready()
        .map_err(failed)?;
    Ok((log, current, report))
}

/// The checks of the module comment, on every key.
pub fn check(
    setup: &Setup,
    store: &mut SimStore,
    now_ms: u64,
    truth: &TrueGrants,
) -> Result<u64, Violation> {
    let mut records = 0;
    for (kind, key) in keys() {
        let (log, current, report) = read(setup, store, now_ms, kind, key)?;
        if !report.proven() {
            return Err(violation(
                "audit: verify proves the log",
                format!("{key}: {:#?}", report.findings),
            ));
        }
        let empty = Vec::new();
        let granted = truth.grants.get(key).unwrap_or(&empty);
        records += equals_history(key, &log, current.as_ref(), granted)?;
    }
    Ok(records)
}

/// The log after back-fill against the grants the store made; the grant
/// records counted.
fn equals_history(
    key: &str,
    log: &Log,
    current: Option<&LockState>,
    granted: &[(u64, String)],
) -> Result<u64, Violation> {
    let mismatch = |detail: String| violation("audit: the log is the grant history", detail);
    let holder_of = |token: u64| granted.iter().find(|(t, _)| *t == token).map(|(_, h)| h);
    let mut records = 0;
    for f in log.found.iter().filter(|f| f.kind == Kind::Grant) {
        let record = f
            .record
            .as_ref()
            .map_err(|e| mismatch(format!("{key}: {}: {e}", f.name)))?;
        records += 1;
        if holder_of(record.token) != Some(&record.holder) {
            return Err(mismatch(format!(
                "{key}: token {} is recorded for {:?} (written by {:?}), the store granted it to \
                 {:?}",
                record.token,
                record.holder,
                record.written_by,
                holder_of(record.token)
            )));
        }
    }
    // Named by a later grant's record, or by the lock object.
    let named = |token: u64, holder: &str| {
        let by_record = log.found.iter().any(|f| {
            f.record.as_ref().is_ok_and(|r| {
                r.previous.as_ref().is_some_and(|p| {
                    p.holders
                        .iter()
                        .any(|h| h.token == token && h.holder == holder)
                })
            })
        });
        let by_object = current.is_some_and(|s| match &s.semaphore {
            Some(sem) => sem
                .record
                .holders
                .iter()
                .any(|e| e.token == token && e.holder_id == holder),
            None => s.record.token == token && s.record.holder_id == holder,
        });
        by_record || by_object
    };
    for (token, holder) in granted.iter().filter(|(t, _)| *t >= log.from) {
        if log.record(*token, Kind::Grant).is_none() && !named(*token, holder) {
            return Err(mismatch(format!(
                "{key}: the store granted token {token} to {holder:?}; no record has it"
            )));
        }
    }
    Ok(records)
}

/// For a careless store: whether some key's log fails verify, and how
/// many collision records grantees wrote.
pub fn judged_careless(setup: &Setup, store: &mut SimStore, now_ms: u64) -> (bool, u64) {
    let mut failed = false;
    let mut collisions = 0;
    for (kind, key) in keys() {
        match read(setup, store, now_ms, kind, key) {
            Ok((log, _, report)) => {
                failed |= !report.proven();
                collisions += log
                    .found
                    .iter()
                    .filter(|f| f.kind == Kind::Collision)
                    .count() as u64;
            }
            Err(_) => failed = true,
        }
    }
    (failed, collisions)
}

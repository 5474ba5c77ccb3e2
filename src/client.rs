//! The client's logic, over any `Io`: which operation each call runs for
//! the configured strategy, and what the client remembers between calls
//! (its seal key, the highest epoch seen per key, what it observed of each
//! key for the `observed` expiry clock and conditional GETs, and the lock
//! objects it wrote itself). The component wraps it; native tests drive it
//! over the S3 model.

use crate::prelude::*;

mod audit;

use crate::capability::CapabilityResult;
use crate::config::{ClientConfig, Credential, Strategy};
use crate::driver::{self, Io, Within};
use crate::error::Error;
use crate::expiry::{Judge, Observation};
use crate::fenced::{self, Change, Fence, FencedGet, FencedObject, FencedWrite, Written};
use crate::lease::{object_key, seal_key_object, Grant, Lease};
use crate::lock_object::semaphore::MAX_LIMIT;
use crate::lock_object::LockState;
use crate::preflight::{Gate, Preflight, Report, Verdicts};
use crate::protocol::AcquireOutcome;
use crate::seal::{LoadSealKey, LockSeal, Sealer, StoredKey};
use crate::strategy::epoch::{self, Cleanup, EpochInspect, EpochRewrite, EpochTryAcquire};
use crate::strategy::floor;
use crate::strategy::single_object::semaphore::{SemaphoreOp, SlotOutcome, Wish};
use crate::strategy::single_object::{released_state, Inspect, RewriteOwn, TryAcquire};

/// A map keyed by lock key: pairs searched in order. Not a `HashMap`: std's
/// default `RandomState` seeds itself from `wasi:random/insecure-seed`, an
/// import outside the `wasi:http/proxy` world, and hashing (SipHash,
/// hashbrown) cost the component about 10 KB (a `BTreeMap` costs more).
/// The map is capped at `MAX_REMEMBERED_KEYS`, and each lookup sits next to
/// an S3 request, so a linear search is cheap enough.
#[derive(Debug, Clone)]
struct KeyMap<V>(Vec<(String, V)>);

impl<V> KeyMap<V> {
    fn new() -> Self {
        KeyMap(Vec::new())
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.0.iter().position(|(k, _)| k == key)
    }

    fn get(&self, key: &str) -> Option<&V> {
        self.position(key)
            .and_then(|i| self.0.get(i))
            .map(|(_, v)| v)
    }

    /// Sets `key` to `value`; a new key first empties a full map.
    fn insert(&mut self, key: &str, value: V) {
        match self.position(key).and_then(|i| self.0.get_mut(i)) {
            Some((_, v)) => *v = value,
            None => {
                if self.0.len() >= MAX_REMEMBERED_KEYS {
                    self.0.clear();
                }
                self.0.push((key.to_string(), value));
            }
        }
    }

    fn remove(&mut self, key: &str) {
        if let Some(i) = self.position(key) {
            self.0.swap_remove(i);
        }
    }
}

/// Keys remembered at most; past this the memory starts over (it is only
/// an optimisation, and for `observed` a wait of one more ttl).
const MAX_REMEMBERED_KEYS: usize = 4096;

/// What a renew or release writes (see `ClientCore::rewrite_target`).
struct RewriteTarget {
    object_key: String,
    sealer: Sealer,
    slot: bool,
}

/// What the client saw of a key, and since when (monotonic ms).
#[derive(Debug, Clone)]
struct Seen {
    state: LockState,
    since_ms: u64,
    /// A semaphore's entries by write id, each since first seen.
    entries_since_ms: Vec<(String, u64)>,
    /// The server's `Date` when the ETag was first seen, and each entry.
    first_date_ms: Option<u64>,
    entries_first_date_ms: Vec<(String, u64)>,
}

/// A lock object this client wrote: its etag and the token in it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Wrote {
    etag: String,
    token: u64,
}

#[derive(Debug, Clone)]
pub struct ClientCore {
    pub config: ClientConfig,
    /// Seals and checks leases: from the configured `seal-key`, or else
    /// from the key kept in the store, read (or created) on the first call
    /// that needs it and kept for the client's life (see `seal`).
    sealer: Option<Sealer>,
    /// epoch-objects: the highest epoch seen per key, so LISTs start just
    /// below it.
    epoch_hints: KeyMap<u64>,
    seen: KeyMap<Seen>,
    /// A semaphore as this client last wrote or read it: a renew or
    /// release plans from it and skips its read while nobody wrote since.
    latest: KeyMap<LockState>,
    /// single-object: the lock object this client last wrote per key (a
    /// grant, renew or release). On S3 an etag is a hash of the bytes,
    /// which include the token; on a store whose etags name one write each
    /// (every write gets a new one, never an old one back), that write; either way the pair stays
    /// true whatever happens to the key since: a lease with this etag and
    /// token renews without the read that checks its token (see
    /// `RewriteOwn`).
    wrote: KeyMap<Wrote>,
    /// What the last preflight decided about the store, for this config.
    store: StoreCheck,
    /// A token this client's grant log found granted twice (see
    /// `audit::collision`): for the client's life it grants nothing more,
    /// and its preflight reports it.
    collision: Option<Box<CapabilityResult>>,
    /// Records of this client's own grants it could not write (each
    /// abandoned unused), written after its next grant's (see
    /// `record_grant`).
    unrecorded: Vec<crate::audit::Record>,
}

/// The cached answer of the preflight: whether this client may grant.
#[derive(Debug, Clone, PartialEq, Eq)]
enum StoreCheck {
    /// Not run yet, or undecided (no reply, a 5xx): run it again.
    Unchecked,
    Safe,
    Unsafe(Box<CapabilityResult>),
}

impl ClientCore {
    pub fn new(config: ClientConfig) -> Self {
        ClientCore {
            sealer: config
                .seal_key
                .as_ref()
                .map(|k| Sealer::configured(&config.seal_scope(), k)),
            config,
            epoch_hints: KeyMap::new(),
            seen: KeyMap::new(),
            latest: KeyMap::new(),
            wrote: KeyMap::new(),
            store: StoreCheck::Unchecked,
            collision: None,
            unrecorded: Vec::new(),
        }
    }

    /// Replaces the store's credential (a host refreshing temporary
    /// ones): the next request signs with it. Nothing else changes: the
    /// seal key takes nothing from credentials, so leases stay valid, and
    /// what the client remembers stays. Refused like the constructor's,
    /// with `invalid-config` (or for another store's kind), leaving the old
    /// one in place.
    pub fn set_credential(&mut self, credential: Credential) -> Result<(), Error> {
        self.config.store.set_credential(credential)
    }

    pub fn object_key(&self, key: &str) -> Result<String, Error> {
        object_key(&self.config.key_prefix, key)
    }

    /// The client's sealer. Without a configured `seal-key`, the first call
    /// reads the key kept in the store, creating it if there is none (1
    /// GET; 2 requests, GET and PUT, for the client that creates it), and
    /// every later one uses the key read.
    async fn sealer(&mut self, io: &mut impl Io) -> Result<Sealer, Error> {
        if let Some(sealer) = &self.sealer {
            return Ok(sealer.clone());
        }
        let fresh = StoredKey::random(|| io.random_u64());
        let object = seal_key_object(&self.config.key_prefix);
        let key = driver::run(io, LoadSealKey::new(object, fresh)).await?;
        let sealer = Sealer::stored(&self.config.seal_scope(), &key);
        self.sealer = Some(sealer.clone());
        Ok(sealer)
    }

    /// Seals and checks the leases of the lock at `object_key`.
    pub async fn lock_seal(
        &mut self,
        io: &mut impl Io,
        object_key: &str,
    ) -> Result<LockSeal, Error> {
        let sealer = self.sealer(io).await?;
        Ok(self.lock_seal_with(&sealer, object_key))
    }

    fn lock_seal_with(&self, sealer: &Sealer, object_key: &str) -> LockSeal {
        sealer.for_lock(format!("{}:{object_key}", self.config.strategy.name()))
    }

    fn hint(&self, key: &str) -> u64 {
        self.epoch_hints.get(key).copied().unwrap_or(0)
    }

    fn note_epoch(&mut self, key: &str, epoch: u64) {
        if self.config.strategy != Strategy::EpochObjects {
            return;
        }
        let highest = self.hint(key).max(epoch);
        self.epoch_hints.insert(key, highest);
    }

    /// How this client judges `key`'s expiry now.
    fn judge(&self, key: &str, now_mono: u64) -> Judge {
        let observation = self.seen.get(key).map(|s| Observation {
            state: s.state.clone(),
            seen_for_ms: now_mono.saturating_sub(s.since_ms),
            entries_seen_for_ms: s
                .entries_since_ms
                .iter()
                .map(|(id, since)| (id.clone(), now_mono.saturating_sub(*since)))
                .collect(),
            first_date_ms: s.first_date_ms,
            entries_first_date_ms: s.entries_first_date_ms.clone(),
        });
        Judge::new(self.config.expiry_clock, observation).on_store_clock(self.config.audit)
    }

    /// Remembers what a read found. An unchanged ETag keeps its first
    /// sighting; a new one starts now, after the read (never earlier than
    /// it could have been seen).
    fn observe(&mut self, key: &str, state: Option<&LockState>, now_mono: u64) {
        let Some(state) = state else {
            self.seen.remove(key);
            return;
        };
        let before = self.seen.get(key);
        let (since_ms, first_date_ms) = match before {
            Some(s) if s.state.etag == state.etag => {
                (s.since_ms, s.first_date_ms.or(state.date_ms))
            }
            _ => (now_mono, state.date_ms),
        };
        // An entry keeps its first sighting while its write id stays.
        let entries_since_ms = state
            .semaphore
            .iter()
            .flat_map(|sem| sem.record.entries())
            .map(|e| {
                let since = before
                    .and_then(|s| s.entries_since_ms.iter().find(|(id, _)| *id == e.write_id))
                    .map_or(now_mono, |(_, since)| *since);
                (e.write_id.clone(), since)
            })
            .collect();
        let entries_first_date_ms = state
            .semaphore
            .iter()
            .flat_map(|sem| sem.record.entries())
            .filter_map(|e| {
                let before = before.and_then(|s| {
                    s.entries_first_date_ms
                        .iter()
                        .find(|(id, _)| *id == e.write_id)
                });
                let date = before.map(|(_, date)| *date).or(state.date_ms)?;
                Some((e.write_id.clone(), date))
            })
            .collect();
        self.seen.insert(
            key,
            Seen {
                state: state.clone(),
                since_ms,
                entries_since_ms,
                first_date_ms,
                entries_first_date_ms,
            },
        );
    }

    /// What this client last read of `key`, if anything.
    pub fn last_seen(&self, key: &str) -> Option<&LockState> {
        self.seen.get(key).map(|s| &s.state)
    }

    /// Probes the store under a scratch prefix beside the locks (see
    /// `preflight`) and remembers whether this client may grant on it.
    pub async fn preflight(&mut self, io: &mut impl Io) -> Result<Report, Error> {
        let nonce = format!("{:016x}", io.random_u64());
        let scratch = format!("{}.s3-lease-preflight/{nonce}/", self.config.key_prefix);
        let mut op = Preflight::new(
            scratch,
            nonce,
            self.config.strategy,
            self.config.expiry_clock,
        );
        op = op.on_store(&self.config.store);
        let mut report = driver::run(io, op).await?;
        if let Some(collision) = &self.collision {
            audit::with_collision(&mut report, collision);
        }
        self.store = match report.gate(self.config.strategy, self.config.expiry_clock) {
            Gate::Open => StoreCheck::Safe,
            Gate::Closed(failed) => StoreCheck::Unsafe(failed),
            Gate::Undecided(_) => StoreCheck::Unchecked,
        };
        Ok(report)
    }

    /// With `preflight` configured: runs it once (again while undecided)
    /// and refuses to grant on a store that fails it.
    async fn check_store(&mut self, io: &mut impl Io) -> Result<(), Error> {
        if let Some(collision) = &self.collision {
            return Err(Error::StoreUnsafe(collision.clone()));
        }
        if !self.config.preflight {
            return Ok(());
        }
        match &self.store {
            StoreCheck::Safe => return Ok(()),
            StoreCheck::Unsafe(failed) => return Err(Error::StoreUnsafe(failed.clone())),
            StoreCheck::Unchecked => {}
        }
        let report = self.preflight(io).await?;
        match report.gate(self.config.strategy, self.config.expiry_clock) {
            Gate::Open => Ok(()),
            Gate::Closed(failed) | Gate::Undecided(failed) => Err(Error::StoreUnsafe(failed)),
        }
    }

    /// The token floor of a lock object (`strategy::floor`), on an object
    /// store; a store whose item keeps its counter itself has none.
    fn floor_key(&self, object_key: &str) -> Option<String> {
        let profile = self.config.store.profile();
        profile
            .keeps_token_floor
            .then(|| floor::floor_key(&self.config.key_prefix, object_key))
    }

    /// One try-acquire with the configured strategy.
    pub async fn try_acquire(
        &mut self,
        io: &mut impl Io,
        key: &str,
        grant: &Grant,
    ) -> Result<AcquireOutcome, Error> {
        let object_key = self.object_key(key)?;
        self.config.check_ttl(grant.ttl_ms)?;
        self.check_audit_key(key)?;
        self.check_store(io).await?;
        let sealer = self.sealer(io).await?;
        let seal = self.lock_seal_with(&sealer, &object_key);
        let started = io.monotonic_ms();
        let judge = self.judge(key, started);
        let observed = judge.observation.clone();
        let write_id = write_id(io);
        let strategy = self.config.strategy.name();
        let outcome = match self.config.strategy {
            Strategy::SingleObject => {
                let mut op = TryAcquire::new(
                    key.to_string(),
                    object_key.clone(),
                    grant.clone(),
                    seal,
                    judge,
                    write_id,
                );
                if let Some(floor) = self.floor_key(&object_key) {
                    op = op.with_floor(floor);
                }
                if let Some(b) = self.backfiller(key, &grant.holder_id, strategy, 1) {
                    op = op.recording(b);
                }
                match driver::run(io, &mut op).await? {
                    AcquireOutcome::Granted(lease) => {
                        self.note_written(&lease);
                        let evidence =
                            audit::Evidence::of_lock(op.trail(), observed.as_ref(), strategy);
                        self.recorded(io, lease, evidence).await?
                    }
                    held => held,
                }
            }
            Strategy::EpochObjects => {
                let dir = epoch::epoch_dir(&object_key);
                let mut op = EpochTryAcquire::new(
                    key.to_string(),
                    dir,
                    grant.clone(),
                    seal,
                    judge,
                    write_id,
                    self.hint(key),
                );
                if let Some(floor) = self.floor_key(&object_key) {
                    op = op.with_floor(floor);
                }
                if let Some(b) = self.backfiller(key, &grant.holder_id, strategy, 1) {
                    op = op.recording(b);
                }
                match driver::run(io, &mut op).await? {
                    (AcquireOutcome::Granted(lease), cleanup) => {
                        let evidence =
                            audit::Evidence::of_lock(op.trail(), observed.as_ref(), strategy);
                        let outcome = self.recorded(io, lease, evidence).await?;
                        if let AcquireOutcome::Granted(lease) = &outcome {
                            clean_up_within(io, lease, started, cleanup).await;
                        }
                        outcome
                    }
                    (held, _) => held,
                }
            }
        };
        let now_mono = io.monotonic_ms();
        let outcome = match outcome {
            AcquireOutcome::Granted(lease) if lapsed(started, now_mono, lease.ttl_ms) => {
                AcquireOutcome::Held(None)
            }
            outcome => outcome,
        };
        match &outcome {
            AcquireOutcome::Granted(lease) => {
                self.note_epoch(key, lease.token);
                self.seen.remove(key);
            }
            AcquireOutcome::Held(Some(state)) => {
                self.note_epoch(key, state.record.token);
                self.observe(key, Some(state), now_mono);
            }
            AcquireOutcome::Held(None) => self.observe(key, None, now_mono),
        }
        // A semaphore on the key: a lock is a semaphore of limit 1 to it.
        if matches!(&outcome, AcquireOutcome::Held(Some(s)) if s.semaphore.is_some()) {
            return Ok(
                match self.try_acquire_slot(io, key, grant, 1, false).await? {
                    SlotOutcome::Granted(lease) => AcquireOutcome::Granted(lease),
                    SlotOutcome::Full(seen) => AcquireOutcome::Held(seen.map(|s| *s)),
                    SlotOutcome::Queued { state, .. } => AcquireOutcome::Held(Some(*state)),
                    SlotOutcome::Rewritten(_) | SlotOutcome::Left => AcquireOutcome::Held(None),
                },
            );
        }
        Ok(outcome)
    }

    /// A grant, recorded when the log is on (see `record_grant`).
    async fn recorded(
        &mut self,
        io: &mut impl Io,
        lease: Lease,
        evidence: audit::Evidence<'_>,
    ) -> Result<AcquireOutcome, Error> {
        if !self.config.audit || self.record_grant(io, &lease, evidence).await? {
            return Ok(AcquireOutcome::Granted(lease));
        }
        Ok(AcquireOutcome::Held(None))
    }

    /// Seals and checks the leases of the slots of a semaphore at
    /// `object_key`: a seal of their own, so a lease says by its seal alone
    /// whether it is a slot's (renewed in the semaphore) or a lock's.
    fn semaphore_seal(sealer: &Sealer, object_key: &str) -> LockSeal {
        sealer.for_lock(format!("semaphore:{object_key}"))
    }

    fn is_slot(&self, sealer: &Sealer, object_key: &str, lease: &Lease) -> bool {
        self.config.strategy == Strategy::SingleObject
            && Self::semaphore_seal(sealer, object_key)
                .check(lease)
                .is_ok()
    }

    /// Remembers a single-object lock object this client wrote.
    fn note_written(&mut self, lease: &Lease) {
        let wrote = Wrote {
            etag: lease.etag.clone(),
            token: lease.token,
        };
        self.wrote.insert(&lease.key, wrote);
    }

    /// Whether this client wrote the object at the lease's etag itself,
    /// with the lease's token.
    fn wrote_lease(&self, lease: &Lease) -> bool {
        self.wrote
            .get(&lease.key)
            .is_some_and(|w| w.etag == lease.etag && w.token == lease.token)
    }

    /// One attempt at a slot of a semaphore of `limit` (see `semaphore`);
    /// `fair` joins (or keeps) a place in its queue when no slot is ours.
    pub async fn try_acquire_slot(
        &mut self,
        io: &mut impl Io,
        key: &str,
        grant: &Grant,
        limit: u32,
        fair: bool,
    ) -> Result<SlotOutcome, Error> {
        let object_key = self.object_key(key)?;
        self.check_semaphore(limit)?;
        self.config.check_ttl(grant.ttl_ms)?;
        self.check_audit_key(key)?;
        self.check_store(io).await?;
        let wish = Wish::Acquire {
            grant: grant.clone(),
            limit,
            fair,
        };
        let started = io.monotonic_ms();
        match self.run_semaphore(io, key, object_key, wish).await? {
            SlotOutcome::Granted(lease) if lapsed(started, io.monotonic_ms(), lease.ttl_ms) => {
                Ok(SlotOutcome::Full(None))
            }
            outcome => Ok(outcome),
        }
    }

    /// Gives up `holder_id`'s place in `key`'s queue, if it has one.
    pub async fn leave_queue(
        &mut self,
        io: &mut impl Io,
        key: &str,
        holder_id: &str,
    ) -> Result<(), Error> {
        let object_key = self.object_key(key)?;
        self.check_slots()?;
        let wish = Wish::Leave {
            holder_id: holder_id.to_string(),
        };
        self.run_semaphore(io, key, object_key, wish)
            .await
            .map(|_| ())
    }

    /// A semaphore's holders and queue: `inspect`, for a slot call.
    pub async fn inspect_slots(
        &mut self,
        io: &mut impl Io,
        key: &str,
    ) -> Result<Option<LockState>, Error> {
        self.object_key(key)?;
        self.check_slots()?;
        self.inspect(io, key).await
    }

    /// Attempts until a slot is granted or `timeout_ms` passed; a fair
    /// waiter leaves the queue when it gives up (see `driver::acquire_slot`).
    pub async fn acquire_slot<I: Io>(
        &mut self,
        io: &mut I,
        key: &str,
        grant: &Grant,
        limit: u32,
        fair: bool,
        timeout_ms: u64,
    ) -> Result<Lease, Error> {
        self.object_key(key)?;
        self.check_semaphore(limit)?;
        self.config.check_ttl(grant.ttl_ms)?;
        let poll_ms = driver::fair_poll_ms(grant.ttl_ms);
        driver::acquire_slot(
            self,
            io,
            key,
            timeout_ms,
            poll_ms,
            async |client: &mut Self, io: &mut I| {
                client.try_acquire_slot(io, key, grant, limit, fair).await
            },
            async |client: &mut Self, io: &mut I| {
                if fair {
                    // Best effort: a place left behind expires after its ttl.
                    let _ = client.leave_queue(io, key, &grant.holder_id).await;
                }
            },
        )
        .await
    }

    /// Every slot call's first check, before any request: semaphores
    /// live in one object changed by compare-and-swap.
    fn check_slots(&self) -> Result<(), Error> {
        if self.config.strategy != Strategy::SingleObject {
            return Err(Error::InvalidArgument(
                "semaphores and fair waiting need the single-object strategy (one object \
                 changed by compare-and-swap); epoch-objects offers neither"
                    .into(),
            ));
        }
        Ok(())
    }

    fn check_semaphore(&self, limit: u32) -> Result<(), Error> {
        self.check_slots()?;
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(Error::InvalidArgument(format!(
                "limit {limit} must be 1 ..= {MAX_LIMIT}"
            )));
        }
        Ok(())
    }

    async fn run_semaphore(
        &mut self,
        io: &mut impl Io,
        key: &str,
        object_key: String,
        wish: Wish,
    ) -> Result<SlotOutcome, Error> {
        let cached = match wish {
            Wish::Renew(_) | Wish::Release(_) => self.latest.get(key).cloned(),
            _ => None,
        };
        let sealer = self.sealer(io).await?;
        let seal = Self::semaphore_seal(&sealer, &object_key);
        let judge = self.judge(key, io.monotonic_ms());
        let observed = judge.observation.clone();
        let acquiring = match &wish {
            Wish::Acquire { grant, limit, .. } => Some((grant.holder_id.clone(), *limit)),
            _ => None,
        };
        let backfiller = acquiring
            .as_ref()
            .and_then(|(holder, limit)| self.backfiller(key, holder, "semaphore", *limit));
        let write_id = write_id(io);
        let floor = self.floor_key(&object_key);
        let mut op = SemaphoreOp::new(
            key.to_string(),
            object_key,
            wish,
            seal,
            judge,
            write_id,
            cached,
        );
        if !self.config.store.profile().records_write_times {
            op = op.on_store_without_write_times();
        }
        if let Some(b) = backfiller {
            op = op.recording(b);
        }
        if let Some(floor) = floor {
            op = op.with_floor(floor);
        }
        let result = driver::run(io, op).await;
        let now_mono = io.monotonic_ms();
        let finished = match result {
            Ok(finished) => finished,
            Err(e) => {
                self.latest.remove(key);
                return Err(e);
            }
        };
        if let Some(read) = &finished.read {
            self.observe(key, read.as_ref(), now_mono);
        }
        let mut outcome = finished.outcome;
        if let (true, Some((_, limit))) = (self.config.audit, acquiring) {
            let left = finished.kept.clone();
            let evidence = audit::Evidence {
                replaced: finished.replaced.as_ref(),
                observed: observed.as_ref(),
                write: finished.write_times.clone().unwrap_or_default(),
                strategy: "semaphore",
                limit,
                left,
            };
            if let SlotOutcome::Granted(lease) = &outcome {
                let lease = lease.clone();
                if !self.record_grant(io, &lease, evidence).await? {
                    outcome = SlotOutcome::Full(None);
                }
            }
        }
        match finished.written.or(finished.read.flatten()) {
            Some(state) if state.semaphore.is_some() => self.latest.insert(key, state),
            _ => self.latest.remove(key),
        }
        Ok(outcome)
    }

    /// Attempts until granted or `timeout_ms` passed (see `driver::acquire`).
    pub async fn acquire<I: Io>(
        &mut self,
        io: &mut I,
        key: &str,
        grant: &Grant,
        timeout_ms: u64,
    ) -> Result<Lease, Error> {
        self.object_key(key)?;
        self.config.check_ttl(grant.ttl_ms)?;
        driver::acquire(
            self,
            io,
            key,
            timeout_ms,
            async |client: &mut Self, io: &mut I| client.try_acquire(io, key, grant).await,
        )
        .await
    }

    /// Renews (`release` false) or releases a lease; with the log on, a
    /// release is recorded.
    pub async fn rewrite(
        &mut self,
        io: &mut impl Io,
        lease: Lease,
        release: bool,
    ) -> Result<Lease, Error> {
        let target = self.rewrite_target(io, &lease).await?;
        let slot = target.slot;
        let rewritten = self.rewrite_unrecorded(io, lease, release, target).await?;
        if release {
            self.record_release(io, &rewritten, slot).await;
        }
        Ok(rewritten)
    }

    /// What a rewrite of `lease` writes: its object, under which seal, and
    /// whether it is a semaphore's slot.
    async fn rewrite_target(
        &mut self,
        io: &mut impl Io,
        lease: &Lease,
    ) -> Result<RewriteTarget, Error> {
        let object_key = self.object_key(&lease.key)?;
        let sealer = self.sealer(io).await?;
        let slot = self.is_slot(&sealer, &object_key, lease);
        Ok(RewriteTarget {
            object_key,
            sealer,
            slot,
        })
    }

    /// `rewrite` without the release's record.
    async fn rewrite_unrecorded(
        &mut self,
        io: &mut impl Io,
        lease: Lease,
        release: bool,
        target: RewriteTarget,
    ) -> Result<Lease, Error> {
        let RewriteTarget {
            object_key,
            sealer,
            slot,
        } = target;
        if slot {
            let key = lease.key.clone();
            let wish = if release {
                Wish::Release(lease)
            } else {
                Wish::Renew(lease)
            };
            return match self.run_semaphore(io, &key, object_key, wish).await? {
                SlotOutcome::Rewritten(lease) => Ok(lease),
                _ => Err(Error::InvalidArgument(
                    "a renew or release of a slot ended without rewriting it".into(),
                )),
            };
        }
        let seal = self.lock_seal_with(&sealer, &object_key);
        let write_id = write_id(io);
        match (self.config.strategy, release) {
            (Strategy::SingleObject, _) => {
                // A lease this client wrote, or a store that checks the
                // token in the write's condition, needs no read
                // to know its token is the stored one.
                let token_known =
                    self.wrote_lease(&lease) || self.config.store.profile().condition_checks_token;
                let mut op = if release {
                    RewriteOwn::release(lease, object_key, seal, write_id)
                } else {
                    RewriteOwn::renew(lease, object_key, seal, write_id)
                };
                if token_known {
                    op = op.token_known();
                }
                let rewritten = driver::run(io, op).await?;
                self.note_written(&rewritten);
                if release {
                    // Remembered, so taking the key again is one conditional PUT.
                    let now_mono = io.monotonic_ms();
                    self.observe(&rewritten.key, Some(&released_state(&rewritten)), now_mono);
                }
                Ok(rewritten)
            }
            (Strategy::EpochObjects, false) => {
                let dir = epoch::epoch_dir(&object_key);
                driver::run(io, EpochRewrite::renew(lease, dir, seal, write_id)).await
            }
            (Strategy::EpochObjects, true) => {
                let dir = epoch::epoch_dir(&object_key);
                driver::run(io, EpochRewrite::release(lease, dir, seal, write_id)).await
            }
        }
    }

    /// The key's lock state, `None` if it was never locked.
    pub async fn inspect(
        &mut self,
        io: &mut impl Io,
        key: &str,
    ) -> Result<Option<LockState>, Error> {
        let object_key = self.object_key(key)?;
        let judge = self.judge(key, io.monotonic_ms());
        let state = match self.config.strategy {
            Strategy::SingleObject => {
                driver::run(io, Inspect::new(key.to_string(), object_key, judge)).await?
            }
            Strategy::EpochObjects => {
                let dir = epoch::epoch_dir(&object_key);
                let op = EpochInspect::new(key.to_string(), dir, judge, self.hint(key));
                driver::run(io, op).await?
            }
        };
        if let Some(s) = &state {
            self.note_epoch(key, s.record.token);
        }
        let now_mono = io.monotonic_ms();
        self.observe(key, state.as_ref(), now_mono);
        Ok(state)
    }

    /// A fenced write (`Change::Put`) or delete with the lease's lock and token.
    pub async fn fenced_write(
        &mut self,
        io: &mut impl Io,
        lease: &Lease,
        object_key: &str,
        change: Change,
        reject_equal: bool,
    ) -> Result<Written, Error> {
        self.objects_only("fenced writes")?;
        let lock_object_key = self.object_key(&lease.key)?;
        let lock = fenced::lock_identity(self.config.strategy.name(), &lock_object_key);
        let sealer = self.sealer(io).await?;
        // A slot's token comes from the key's one counter: it fences the
        // same objects as the key's lock tokens, in the same order.
        let seal = if self.is_slot(&sealer, &lock_object_key, lease) {
            Self::semaphore_seal(&sealer, &lock_object_key)
        } else {
            self.lock_seal_with(&sealer, &lock_object_key)
        };
        let fence = Fence::for_lease(lease, &seal, lock, reject_equal)?;
        let object_key = fenced::fenced_object_key(object_key)?;
        let write_id = fenced::write_id(&fence, &object_key, &change);
        driver::run(io, FencedWrite::new(object_key, fence, change, write_id)?).await
    }

    pub async fn fenced_get(
        &self,
        io: &mut impl Io,
        object_key: &str,
    ) -> Result<Option<FencedObject>, Error> {
        self.objects_only("fenced reads")?;
        let object_key = fenced::fenced_object_key(object_key)?;
        driver::run(io, FencedGet::new(object_key)).await
    }
}

impl ClientCore {
    /// Refuses, before any request, what only a store that holds objects
    /// can do: fenced objects live beside the locks, and a table store has
    /// none.
    fn objects_only(&self, what: &str) -> Result<(), Error> {
        let store = &self.config.store;
        if store.profile().holds_objects {
            return Ok(());
        }
        Err(Error::invalid_config(
            "store",
            format!(
                "{what} keep data in a bucket's objects; this client's store is {}, which holds \
                 none",
                store.described()
            ),
        ))
    }
}

/// A fresh id for one operation's writes: 64 random bits.
fn write_id(io: &mut impl Io) -> String {
    format!("{:016x}", io.random_u64())
}

/// Whether a grant whose attempt began at `started` (monotonic ms) had
/// lapsed by `now`: known only after its ttl ran out since then, it is no
/// lease, for others may already have judged it expired and been granted
/// newer tokens. Counted from before the granting write was sent, on the
/// monotonic clock, so neither a late reply nor a wall clock that stepped
/// back can make it look fresh. (The operations also refuse a grant whose
/// reply came after its expiry on the wall clock.)
fn lapsed(started: u64, now: u64, ttl_ms: u64) -> bool {
    now.saturating_sub(started) >= ttl_ms
}

/// Deletes the old epochs a grant made obsolete, its requests bounded by
/// the grant's life since its attempt began at `started`: a cleanup that
/// hangs must not hold a grant past its life (`lapsed` then refuses it).
/// Best effort: a failed delete only leaves a longer listing.
async fn clean_up_within(io: &mut impl Io, lease: &Lease, started: u64, cleanup: Vec<String>) {
    if cleanup.is_empty() {
        return;
    }
    let until_ms = Some(started.saturating_add(lease.ttl_ms));
    let _ = driver::run(&mut Within::new(io, until_ms), Cleanup::new(cleanup)).await;
}

#[cfg(test)]
mod tests;

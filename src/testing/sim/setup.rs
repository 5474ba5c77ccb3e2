//! One seed's world, drawn from the seed: the store, the keys and the
//! strategy and expiry clock each is used with, the timings, who uses what.

use super::store::TABLE;
use crate::config::{ClientConfig, ExpiryClock, Store, Strategy};
use crate::stores::azure::model::CONTAINER;
use crate::stores::s3::S3Request;
use crate::testing::history::KeySpec;
use crate::testing::rng::Rng;

/// Every (strategy, expiry clock) the config accepts (epoch-objects has no
/// holder expiry).
pub const COMBINATIONS: [(Strategy, ExpiryClock); 5] = [
    (Strategy::SingleObject, ExpiryClock::Holder),
    (Strategy::SingleObject, ExpiryClock::Server),
    (Strategy::SingleObject, ExpiryClock::Observed),
    (Strategy::EpochObjects, ExpiryClock::Server),
    (Strategy::EpochObjects, ExpiryClock::Observed),
];

/// Keys of plain locks, shared by the lockers.
pub const LOCK_KEYS: [&str; 2] = ["l0", "l1"];
/// The elected key.
pub const LEADER_KEY: &str = "leader";
/// Every lock object lives under this prefix.
pub const PREFIX: &str = "locks/";

/// A semaphore key and who uses it.
#[derive(Debug)]
pub struct SemKey {
    pub name: &'static str,
    pub limit: u32,
    /// Its slot clients wait in the queue.
    pub fair: bool,
    pub slot_clients: usize,
    /// Clients that take the key as a plain lock (limit 1 only): plain
    /// locks and slots then share the key and its counter.
    pub plain_clients: usize,
}

pub const SEMAPHORE_KEYS: [SemKey; 3] = [
    SemKey {
        name: "m0",
        limit: 3,
        fair: false,
        slot_clients: 5,
        plain_clients: 0,
    },
    SemKey {
        name: "m1",
        limit: 2,
        fair: true,
        slot_clients: 4,
        plain_clients: 0,
    },
    SemKey {
        name: "m2",
        limit: 1,
        fair: true,
        slot_clients: 2,
        plain_clients: 1,
    },
];

/// What an actor is, and so which keys, config and timings it uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActorKind {
    /// Takes, holds (a guard), renews, releases and fences the lock keys.
    Locker,
    /// Campaigns for the leader key (the core elector and the host's
    /// leadership watchdog).
    Elector,
    /// Takes and holds slots of semaphore key `n`.
    Slots(usize),
    /// Takes semaphore key `n` as a plain lock.
    PlainOnSemaphore(usize),
}

/// How a group of keys is used: its strategy, expiry clock and timings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub strategy: Strategy,
    pub clock: ExpiryClock,
    pub ttl_ms: u64,
    /// Electors: the renew deadline and retry period; lockers: the guard's
    /// deadline (and no retry period).
    pub deadline_ms: u64,
    pub retry_ms: u64,
}

impl Group {
    /// The margin a holder keeps before a contender may take over: what
    /// wall clocks may differ by under `holder` (a quarter of it, here).
    fn margin_ms(&self) -> u64 {
        self.ttl_ms - self.deadline_ms
    }
}

/// Which store model a run is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    S3,
    DynamoDb,
    Azure,
    Gcs,
}

#[derive(Debug, Clone)]
pub struct Setup {
    pub dynamodb: bool,
    /// An Azure Blob container: single-object only, every clock, fenced
    /// writes; no listing, no 501s.
    pub azure: bool,
    /// A GCS bucket: as Azure's container, and no ttl under 4 s nor
    /// retry period under 1 s (GCS takes about one write a second per
    /// object).
    pub gcs: bool,
    pub locks: Group,
    pub leader: Group,
    pub electors: usize,
    pub semaphores: [Group; 3],
    pub request_timeout_ms: Option<u32>,
    /// Chance that a (re)started process ignores request bounds.
    pub ignores_timeouts: f64,
    /// The store answers 501 to `If-Match` on epoch-objects keys (the
    /// stores that strategy is for).
    pub epoch_without_if_match: bool,
    /// LIST pages of at most this many keys.
    pub list_page_keys: Option<usize>,
    pub duration_ms: u64,
    /// Every client keeps the grant log (see `audit_check`).
    pub audit: bool,
    /// The store lets some conditional writes to lock objects land
    /// whatever their condition: it grants tokens twice.
    pub careless: bool,
}

impl Setup {
    pub fn new(rng: &mut Rng, dynamodb: bool) -> Self {
        let kind = if dynamodb {
            StoreKind::DynamoDb
        } else {
            StoreKind::S3
        };
        Setup::for_store(rng, kind)
    }

    pub fn for_store(rng: &mut Rng, kind: StoreKind) -> Self {
        let dynamodb = kind == StoreKind::DynamoDb;
        let azure = kind == StoreKind::Azure;
        let gcs = kind == StoreKind::Gcs;
        let combination = |rng: &mut Rng| {
            if azure || gcs {
                // A container or a GCS bucket: single-object, by any clock.
                let clock = [
                    ExpiryClock::Holder,
                    ExpiryClock::Server,
                    ExpiryClock::Observed,
                ][rng.below(3) as usize];
                (Strategy::SingleObject, clock)
            } else if dynamodb {
                // A table has no listing (single-object only) and no
                // server time of a write (no `server`).
                let clock = if rng.chance(0.5) {
                    ExpiryClock::Holder
                } else {
                    ExpiryClock::Observed
                };
                (Strategy::SingleObject, clock)
            } else {
                COMBINATIONS[rng.below(5) as usize]
            }
        };
        let (strategy, clock) = combination(rng);
        // GCS: no ttl under 4 s (`config::GCS_MIN_TTL_MS`).
        let shortest = if gcs {
            crate::stores::gcs::GCS_MIN_TTL_MS
        } else {
            2_000
        };
        let ttl = [shortest, 4_000, 10_000][rng.below(3) as usize];
        // A guard's default deadline (nine tenths of the ttl) leaves the
        // least margin; `s3-lease run --limit` uses half.
        let deadline = match rng.below(3) {
            0 => ttl / 2,
            _ => ttl - ttl / 10,
        };
        let locks = Group {
            strategy,
            clock,
            ttl_ms: ttl,
            deadline_ms: deadline,
            retry_ms: 0,
        };
        let (strategy, clock) = combination(rng);
        // GCS: a 4 s lease at the least, so that its shortest renew
        // deadline (a third) stays above the 1 s retry period it needs.
        let shortest = if gcs { 4_000 } else { 2_000 };
        let lease = [shortest, 4_000, 10_000, 15_000][rng.below(4) as usize];
        // The command line's ratios (L, L/2, L/6) a third of the time,
        // others otherwise: a renew deadline close to the lease duration
        // leaves the least margin, so bugs in when a lease counts from
        // show there.
        let (renew, retry) = match rng.below(6) {
            0..=1 => (lease / 2, lease / 6),
            2 => (lease * 2 / 3, lease / 4),
            3 => (lease * 4 / 5, lease / 10),
            4 => (lease * 9 / 10, lease / 20),
            _ => (lease / 3, lease / 12),
        };
        let retry = if gcs {
            retry.max(crate::stores::gcs::GCS_MIN_RETRY_PERIOD_MS)
        } else {
            retry
        };
        let leader = Group {
            strategy,
            clock,
            ttl_ms: lease,
            deadline_ms: renew,
            retry_ms: retry,
        };
        let semaphore = |rng: &mut Rng| {
            let clock = match rng.below(3) {
                0 => ExpiryClock::Holder,
                1 if !dynamodb => ExpiryClock::Server,
                _ => ExpiryClock::Observed,
            };
            let ttl = if gcs {
                [4_000, 5_000, 6_000][rng.below(3) as usize]
            } else {
                [2_000, 3_000, 6_000][rng.below(3) as usize]
            };
            Group {
                strategy: Strategy::SingleObject,
                clock,
                ttl_ms: ttl,
                deadline_ms: ttl / 2,
                retry_ms: 0,
            }
        };
        let semaphores = [semaphore(rng), semaphore(rng), semaphore(rng)];
        Setup {
            dynamodb,
            azure,
            gcs,
            locks,
            leader,
            electors: rng.range(3, 5) as usize,
            semaphores,
            request_timeout_ms: [None, Some(1_000), Some(3_000), Some(30_000)]
                [rng.below(4) as usize],
            ignores_timeouts: [0.0, 0.2, 0.5][rng.below(3) as usize],
            epoch_without_if_match: !dynamodb && !azure && !gcs && rng.chance(0.25),
            list_page_keys: (!dynamodb && !azure && !gcs && rng.chance(0.3))
                .then(|| 1 + rng.below(3) as usize),
            duration_ms: 120_000,
            audit: false,
            careless: false,
        }
    }

    pub fn group(&self, kind: ActorKind) -> Group {
        match kind {
            ActorKind::Locker => self.locks,
            ActorKind::Elector => self.leader,
            ActorKind::Slots(n) | ActorKind::PlainOnSemaphore(n) => self.semaphores[n],
        }
    }

    pub fn ttl_of(&self, kind: ActorKind) -> u64 {
        self.group(kind).ttl_ms
    }

    /// How far an actor's wall clock may be off: under `holder`, a
    /// quarter of the margin its holders keep (that rule needs clocks in
    /// sync), never jumping; otherwise minutes, jumping both ways.
    pub fn max_skew_ms(&self, kind: ActorKind) -> u64 {
        let group = self.group(kind);
        match group.clock {
            ExpiryClock::Holder => (group.margin_ms() / 4).min(300),
            _ => 300_000,
        }
    }

    /// The config of an actor of `kind`.
    pub fn config(&self, kind: ActorKind) -> ClientConfig {
        let group = self.group(kind);
        let mut raw = crate::testing::raw_config(group.strategy, group.clock);
        raw.key_prefix = Some(PREFIX.into());
        raw.request_timeout_ms = self.request_timeout_ms;
        if self.dynamodb {
            raw.store = Store::DynamoDb(crate::testing::test_table(TABLE));
        }
        if self.azure {
            raw.store = crate::stores::azure::model::client_config(CONTAINER).store;
        }
        if self.gcs {
            raw.store =
                crate::stores::gcs::model::client_config(crate::stores::gcs::model::BUCKET).store;
        }
        let mut config = ClientConfig::validate(raw).expect("the simulation's configs are valid");
        config.audit = self.audit;
        config
    }

    /// The keys the checkers judge, in this order: the lock keys, the
    /// leader key, the semaphore keys.
    ///
    /// Acknowledgements come in token order on a key of limit 1 unless it
    /// is judged by `holder`: that rule lets a contender whose clock is
    /// ahead take over a lease its holder's own clock still calls live, up
    /// to the skew (the margin a holder's guard keeps covers it, so the
    /// guard never believes such a grant; the grant's reply may still come
    /// after the newer one's).
    pub fn key_specs(&self) -> Vec<KeySpec> {
        let spec = |name: &str, limit: u32, fair: bool, group: &Group| KeySpec {
            name: name.into(),
            limit,
            fair,
            exclusion_checked: true,
            exact_acks: group.clock != ExpiryClock::Holder,
        };
        let mut keys: Vec<KeySpec> = LOCK_KEYS
            .iter()
            .map(|k| spec(k, 1, false, &self.locks))
            .collect();
        keys.push(spec(LEADER_KEY, 1, false, &self.leader));
        for (n, k) in SEMAPHORE_KEYS.iter().enumerate() {
            keys.push(spec(k.name, k.limit, k.fair, &self.semaphores[n]));
        }
        keys
    }

    /// Whether the store refuses this request's `If-Match` (501).
    pub fn refuses_if_match(&self, request: &S3Request) -> bool {
        let epoch_keys = |group: &Group, keys: &[&str]| {
            group.strategy == Strategy::EpochObjects
                && keys
                    .iter()
                    .any(|k| request.object_key.starts_with(&format!("{PREFIX}{k}/")))
        };
        self.epoch_without_if_match
            && request.headers.iter().any(|(k, _)| k == "if-match")
            && (epoch_keys(&self.locks, &LOCK_KEYS) || epoch_keys(&self.leader, &[LEADER_KEY]))
    }
}

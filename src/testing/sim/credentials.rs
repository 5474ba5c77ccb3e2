//! Credentials that expire and rotate: a source like a role's (STS, the
//! instance metadata service) that hands out new keys at every fetch, each
//! with an expiry on the simulation's wall time; what each process has put
//! into its client; and what the store knows of each key it was given.
//!
//! The source is drawn from the seed with a generator of its own, so the
//! rest of a seed's world is drawn as it was before credentials expired.

use super::process::Waiting;
use super::setup::StoreKind;
use crate::sigv4::Credentials;
use crate::testing::rng::Rng;
use s3_lease_keep::refresh::LEAD_MS;
use std::collections::BTreeMap;

const HOUR_MS: u64 = 3_600_000;
/// A healthy source answers within this; a slow one takes seconds.
pub const QUICK_FETCH_MS: u64 = 50;
/// The shortest life a healthy source gives (its refresh lead is a
/// quarter of it, well above a quick fetch).
const SHORTEST_HEALTHY_LIFE_MS: u64 = 4_000;

/// How long what a source hands out lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// This long from the fetch: an hour (a role's default, so nothing is
    /// due within a run), minutes, or seconds (shorter than some leases).
    For(u64),
    /// Expired an hour before it is handed out (a stale cache).
    AlreadyExpired,
    /// Expiring the instant it is handed out, or within the second.
    AtOnce,
}

/// What a seed's source is like.
#[derive(Debug, Clone, PartialEq)]
pub struct SourcePlan {
    pub lifetime: Lifetime,
    /// Chance that a fetch fails.
    pub fails: f64,
    /// Chance that a fetch takes seconds.
    pub slow: f64,
}

impl SourcePlan {
    fn draw(rng: &mut Rng) -> Self {
        let healthy = |lifetime| SourcePlan {
            lifetime,
            fails: 0.0,
            slow: 0.0,
        };
        // One seed in five has a source that fails or hands out expired
        // keys: most of its requests are refused, which tests little else.
        match rng.below(20) {
            0..=5 => healthy(Lifetime::For(HOUR_MS)),
            6..=10 => healthy(Lifetime::For(rng.range(60_000, 300_000))),
            11..=15 => healthy(Lifetime::For(rng.range(SHORTEST_HEALTHY_LIFE_MS, 30_000))),
            16 => SourcePlan {
                lifetime: Lifetime::AlreadyExpired,
                fails: [0.0, 0.3][rng.below(2) as usize],
                slow: 0.0,
            },
            17 => SourcePlan {
                lifetime: Lifetime::AtOnce,
                fails: [0.0, 0.3][rng.below(2) as usize],
                slow: 0.0,
            },
            _ => SourcePlan {
                lifetime: Lifetime::For(rng.range(2_000, 60_000)),
                fails: [0.3, 0.7][rng.below(2) as usize],
                slow: 0.2,
            },
        }
    }

    /// Every fetch succeeds quickly and its keys outlive a refresh lead by
    /// far: a refresher in time never lets them expire.
    pub fn is_healthy(&self) -> bool {
        self.fails == 0.0
            && self.slow == 0.0
            && matches!(self.lifetime, Lifetime::For(l) if l >= SHORTEST_HEALTHY_LIFE_MS)
    }

    /// How far a process's wall clock may be from the source's while its
    /// keys are sure to be renewed in time: the refresh lead of the
    /// shortest life it hands out, less two quick fetches. A clock further
    /// behind refreshes later than the lead (the schedule reads expiry on
    /// the host's clock), as the SDKs' refresh does.
    pub fn fresh_skew_ms(&self) -> u64 {
        let life = match self.lifetime {
            Lifetime::For(l) => l,
            _ => 0,
        };
        LEAD_MS.min(life / 4).saturating_sub(2 * QUICK_FETCH_MS)
    }
}

/// The source, and what it issued.
pub struct Source {
    pub plan: SourcePlan,
    rng: Rng,
    issued: u64,
    /// The expiry (wall ms) of each access key it issued: what the store
    /// checks a request's signature against.
    expiries: BTreeMap<String, u64>,
}

impl Source {
    pub fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0xC4ED_C4ED_C4ED_C4ED);
        Source {
            plan: SourcePlan::draw(&mut rng),
            rng,
            issued: 0,
            expiries: BTreeMap::new(),
        }
    }

    /// The source of a simulation on `kind`. On Azure the client signs
    /// with the account's key, and on GCS with its own credential, which
    /// the AWS keys a source hands out do not replace: its source hands
    /// out keys that last the run (a managed identity's token refresh is
    /// the host's, tested against a fake metadata endpoint).
    pub fn for_store(seed: u64, kind: StoreKind) -> Self {
        let mut source = Source::new(seed);
        if matches!(kind, StoreKind::Azure | StoreKind::Gcs) {
            source.plan = SourcePlan {
                lifetime: Lifetime::For(HOUR_MS),
                fails: 0.0,
                slow: 0.0,
            };
        }
        source
    }

    /// How long the next fetch takes (ms, never 0: time moves on).
    pub fn fetch_takes_ms(&mut self) -> u64 {
        if self.rng.chance(self.plan.slow) {
            self.rng.range(1_000, 5_000)
        } else {
            self.rng.range(1, QUICK_FETCH_MS)
        }
    }

    /// A fetch answered at `wall_ms` (the source's clock, true time): new
    /// keys and their expiry, or `None` if it failed. `first`: the one a
    /// process starts with, which succeeded (or the process would not
    /// have started).
    pub fn fetch(&mut self, wall_ms: u64, first: bool) -> Option<(Credentials, u64)> {
        if !first && self.rng.chance(self.plan.fails) {
            return None;
        }
        self.issued += 1;
        let n = self.issued;
        let expires = match self.plan.lifetime {
            Lifetime::For(life) => wall_ms + life,
            Lifetime::AlreadyExpired => wall_ms.saturating_sub(HOUR_MS),
            Lifetime::AtOnce => wall_ms + self.rng.below(1_000),
        };
        let credentials = Credentials {
            access_key_id: format!("ASIASIM{n:09}"),
            secret_access_key: format!("sim-secret-{n}"),
            session_token: Some(format!("sim-session-{n}")),
        };
        self.expiries
            .insert(credentials.access_key_id.clone(), expires);
        Some((credentials, expires))
    }

    /// Whether keys `access_key_id` are past their expiry at `wall_ms`
    /// (keys it did not issue do not expire).
    pub fn expired(&self, access_key_id: &str, wall_ms: u64) -> bool {
        self.expiries
            .get(access_key_id)
            .is_some_and(|&expires| wall_ms >= expires)
    }

    pub fn expiry(&self, access_key_id: &str) -> Option<u64> {
        self.expiries.get(access_key_id).copied()
    }
}

/// One life of a process, as far as credentials go.
#[derive(Debug, Default)]
pub struct HostCredentials {
    /// What `set-credentials` last put in (the component keeps them apart
    /// from the core, which a call may hold): every request signs with
    /// these.
    pub installed: Option<Credentials>,
    /// What the refresher (a thread of its own in the host) waits for.
    pub waiting: Waiting,
    /// Its last fetch: when it began on the host's wall clock, and how
    /// many times that clock had stepped by then.
    pub last_fetch: Option<(u64, u32)>,
    pub fetches: u64,
    /// When this life began (true time).
    pub life_start: u64,
    /// Steps of the wall clock in this life, and the furthest it has been
    /// from true time.
    pub jumps: u32,
    pub max_skew_ms: u64,
    /// Stalled since its last fetch: its refresh may be late.
    pub stalled: bool,
    /// Requests of this life the store refused as signed with expired keys.
    pub refused: u64,
}

impl HostCredentials {
    /// A new life, at true time `now`, on a wall clock `offset_ms` off.
    pub fn new(now: u64, offset_ms: i64) -> Self {
        HostCredentials {
            life_start: now,
            max_skew_ms: offset_ms.unsigned_abs(),
            ..HostCredentials::default()
        }
    }

    /// The wall clock stepped to `offset_ms` off true time.
    pub fn jumped(&mut self, offset_ms: i64) {
        self.jumps += 1;
        self.max_skew_ms = self.max_skew_ms.max(offset_ms.unsigned_abs());
    }
}

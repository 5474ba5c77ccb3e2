//! The soak: many processes campaign for several keys with electors and
//! make fenced writes, token in the body, to shared objects, while a seeded
//! schedule faults their requests (500, 503 SlowDown, 409, refused
//! connections, timeouts with and without late arrival, lost replies) and
//! the processes themselves (crashes between calls and mid-request, pauses
//! past the lease, wall clocks skewed and stepping). The recorded history
//! is then checked (by the checkers the simulation is judged by: see
//! [`record`]) and summarised ([`report`]).
//!
//! A process is `keys` clients of the product host
//! (`s3_lease_host::blocking::Client`, one per key, as the keys use
//! different strategies and expiry clocks), each running the product's
//! host `Elector` for its key, watched by a
//! member thread that believes what the elector reports ([`member`]'s
//! `Leading`);
//! crashes, pauses and clock steps hit all of a process's clients at once
//! ([`process`]).
//!
//! Beside the keys, `slot_keys` semaphore keys (single-object, limits 2
//! and 3, fair and not): each process runs a member per semaphore key
//! (`Slot`) on a client of its own, under the same faults, that
//! waits for a slot, holds it with the host crate's
//! `blocking::LeaseGuard` while the guard says held, and gives it back.
//!
//! Only the plan replays from the seed (which requests fail how, which
//! process is hit when and how): thread timing does not.

mod member;
pub mod process;
pub mod record;
pub mod report;
pub mod schedule;
mod unwatched;

use crate::bindings::{Config, ExpiryClock, Strategy};
use crate::server::Endpoint;
use crate::Harness;
use member::{Leading, Member, Slot};
use process::Process;
use record::{Micros, Record, Violation};
use s3_lease::testing::history::{self, Checked, FinalRead, Found, History, KeySpec};
use s3_lease::testing::rng::Rng;
use schedule::{FaultCounts, FaultKind, ProcessFault};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Client-go's durations, as the campaign and the demo use them.
pub const LEASE_MS: u64 = 3_000;
pub const RENEW_DEADLINE_MS: u64 = 2_000;
pub const RETRY_MS: u64 = 500;
/// A leader writes its fenced object at most this often.
pub const WRITE_EVERY_MS: u64 = 300;
/// Each key's fenced object is a new one every this long, so each object's
/// history stays small enough for the linearizability search.
pub const ROUND_MS: u64 = 15_000;
/// At most this many fenced calls per object (the checker takes 128).
pub const MAX_OPS_PER_OBJECT: usize = 110;
/// Initial wall-clock skews are within ± this; jumps keep them within ± `MAX_SKEW_MS`.
pub const INITIAL_SKEW_MS: u64 = 8_000;
pub const MAX_SKEW_MS: i64 = 60_000;

/// A protocol setting broken on purpose, to see the checker fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// Every key on the `holder` expiry clock (the single-object design's
    /// rule, which needs clocks in sync) while clocks are skewed and jump,
    /// with its overlaps counted as violations.
    HolderClock,
    /// The slot members ask for one slot more than the limit the checker
    /// holds each semaphore key to (a checker that must count too many
    /// holders).
    SlotLimit,
    /// The slot members ignore their guard: each believes it holds its
    /// slot from the grant until it means to give it back, through pauses
    /// and lost renewals (a holder without a deadline).
    SlotGuard,
    /// Fair waiters give up their place now and then (`leave-queue`) and
    /// join again at the back, while the checker still counts their wait
    /// from their first place (grants then stray from the queue's order).
    SlotQueue,
}

impl Break {
    pub const NAMES: [(&'static str, Break); 4] = [
        ("holder-clock", Break::HolderClock),
        ("slot-limit", Break::SlotLimit),
        ("slot-guard", Break::SlotGuard),
        ("slot-queue", Break::SlotQueue),
    ];
}

#[derive(Debug, Clone)]
pub struct SoakConfig {
    pub duration: Duration,
    pub instances: usize,
    pub keys: usize,
    /// Semaphore keys, beside the `keys` (see [`SlotKeyProfile::of`]).
    pub slot_keys: usize,
    pub seed: u64,
    /// The chance that any one request is faulted.
    pub request_fault_rate: f64,
    /// Print the process-level plan as it is applied.
    pub verbose: bool,
    pub broken: Option<Break>,
    /// Members believe the last step they got back, with no watchdog (a
    /// broken caller, for `--no-watchdog`): the soak must fail.
    pub no_watchdog: bool,
}

impl SoakConfig {
    pub fn new(duration: Duration, instances: usize, keys: usize, seed: u64) -> Self {
        SoakConfig {
            duration,
            instances,
            keys,
            slot_keys: 3,
            seed,
            request_fault_rate: 0.05,
            verbose: false,
            broken: None,
            no_watchdog: false,
        }
    }
}

/// A seed from the clock, for runs that were given none.
pub fn clock_seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

/// How a key is locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyProfile {
    pub strategy: Strategy,
    pub clock: ExpiryClock,
    /// Whether believed leadership must never overlap: the `holder` clock
    /// assumes clocks in sync, which the soak breaks on purpose.
    pub overlap_checked: bool,
}

impl KeyProfile {
    /// Key `k`'s profile: the first four keys cover both strategies under
    /// `server` and `observed`; a fifth adds `holder`.
    pub fn of(k: usize, broken: Option<Break>) -> Self {
        if broken == Some(Break::HolderClock) {
            return KeyProfile {
                strategy: Strategy::SingleObject,
                clock: ExpiryClock::Holder,
                overlap_checked: true,
            };
        }
        let (strategy, clock) = [
            (Strategy::SingleObject, ExpiryClock::Server),
            (Strategy::EpochObjects, ExpiryClock::Observed),
            (Strategy::SingleObject, ExpiryClock::Observed),
            (Strategy::EpochObjects, ExpiryClock::Server),
            (Strategy::SingleObject, ExpiryClock::Holder),
        ][k % 5];
        KeyProfile {
            strategy,
            clock,
            overlap_checked: clock != ExpiryClock::Holder,
        }
    }

    pub fn name(&self) -> String {
        let strategy = match self.strategy {
            Strategy::SingleObject => "single-object",
            Strategy::EpochObjects => "epoch-objects",
        };
        let clock = match self.clock {
            ExpiryClock::Holder => "holder",
            ExpiryClock::Server => "server",
            ExpiryClock::Observed => "observed",
        };
        format!("{strategy}/{clock}")
    }
}

pub fn key_name(k: usize) -> String {
    format!("k{k}")
}

/// How a semaphore key is held: always single-object (semaphores exist
/// there only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotKeyProfile {
    pub clock: ExpiryClock,
    /// How many may hold the key at once: what the checker holds it to.
    pub limit: u32,
    /// Waiters queue (`slot-options.fair`), and grants must follow the queue.
    pub fair: bool,
}

impl SlotKeyProfile {
    /// Semaphore key `j`'s profile: limit 3 without a queue and limit 2
    /// with one under `server`, then limit 2 with a queue under `observed`.
    pub fn of(j: usize) -> Self {
        let (clock, limit, fair) = [
            (ExpiryClock::Server, 3, false),
            (ExpiryClock::Server, 2, true),
            (ExpiryClock::Observed, 2, true),
        ][j % 3];
        SlotKeyProfile { clock, limit, fair }
    }

    /// The limit the members ask for: the checked one, or one more under
    /// `--break slot-limit`.
    pub fn requested_limit(&self, broken: Option<Break>) -> u32 {
        if broken == Some(Break::SlotLimit) {
            self.limit + 1
        } else {
            self.limit
        }
    }

    pub fn name(&self) -> String {
        let fair = if self.fair { ", fair" } else { "" };
        let key = self.key_profile().name();
        format!("{key}, limit {}{fair}", self.limit)
    }

    fn key_profile(&self) -> KeyProfile {
        KeyProfile {
            strategy: Strategy::SingleObject,
            clock: self.clock,
            overlap_checked: true,
        }
    }
}

pub fn slot_key_name(j: usize) -> String {
    format!("s{j}")
}

/// What every thread of the run shares.
pub struct Shared<'a> {
    pub harness: &'a Harness,
    pub config: SoakConfig,
    /// Per key: the component config (strategy, clock, timeout).
    pub client_configs: Vec<Config>,
    /// The same, as the host crate takes it.
    pub host_configs: Vec<s3_lease_host::StoreConfig>,
    /// Per semaphore key: its profile, and its clients' config.
    pub slot_profiles: Vec<SlotKeyProfile>,
    pub slot_host_configs: Vec<s3_lease_host::StoreConfig>,
    pub prefix: String,
    pub t0: Instant,
    pub t_end: Instant,
    pub counts: Arc<FaultCounts>,
    /// Per key: the process that believes it leads, or `NOBODY`.
    pub leaders: Vec<AtomicUsize>,
    next_value: AtomicU64,
    ops_per_object: Mutex<HashMap<String, usize>>,
}

pub const NOBODY: usize = usize::MAX;

impl Shared<'_> {
    /// `at` in the history's time: microseconds since the run's start.
    pub fn us(&self, at: Instant) -> Micros {
        record::micros_since(self.t0, at)
    }

    pub fn next_value(&self) -> u64 {
        self.next_value.fetch_add(1, Ordering::Relaxed)
    }

    /// The object key `k` writes at `now`.
    pub fn object(&self, k: usize, now: Instant) -> String {
        let round = now.saturating_duration_since(self.t0).as_millis() as u64 / ROUND_MS;
        format!("{}data/{}/round-{round:04}", self.prefix, key_name(k))
    }

    /// Claims a place in `object`'s history; false once it is full.
    pub fn reserve(&self, object: &str) -> bool {
        let mut m = self
            .ops_per_object
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let n = m.entry(object.to_string()).or_default();
        if *n >= MAX_OPS_PER_OBJECT {
            return false;
        }
        *n += 1;
        true
    }
}

/// The config of key `k`'s clients.
fn client_config(endpoint: &Endpoint, prefix: &str, profile: KeyProfile) -> Config {
    let mut c = endpoint.config(prefix);
    c.strategy = Some(profile.strategy);
    c.expiry_clock = Some(profile.clock);
    c.request_timeout_ms = Some(schedule::REQUEST_TIMEOUT_MS as u32);
    // The grant log on: `verify_logs` is the soak's last step.
    c.audit = Some(true);
    c
}

/// The host crate's config of a key of `profile`, as the component's.
fn host_config(
    endpoint: &Endpoint,
    prefix: &str,
    profile: KeyProfile,
) -> s3_lease_host::StoreConfig {
    let mut h = endpoint
        .host_config(prefix)
        .unwrap_or_else(|e| panic!("the soak's store config: {e:#}"));
    h.request_timeout = Some(Duration::from_millis(schedule::REQUEST_TIMEOUT_MS));
    h.strategy = Some(match profile.strategy {
        Strategy::SingleObject => s3_lease_host::Strategy::SingleObject,
        Strategy::EpochObjects => s3_lease_host::Strategy::EpochObjects,
    });
    h.expiry_clock = Some(match profile.clock {
        ExpiryClock::Server => s3_lease_host::ExpiryClock::Server,
        ExpiryClock::Holder => s3_lease_host::ExpiryClock::Holder,
        ExpiryClock::Observed => s3_lease_host::ExpiryClock::Observed,
    });
    h.audit = Some(true);
    h
}

/// The soak's last step: each key's grant log, verified from the store
/// alone. An elected key held to one holder must be proven; a semaphore's
/// log must show no overlap (a holder entry can leave it unrecorded:
/// docs/audit.md). Keys broken on purpose are left to the history's
/// checks.
fn verify_logs(shared: &Shared, profiles: &[KeyProfile], checked: &mut Checked) {
    if shared.config.broken.is_some() {
        return;
    }
    let (mut proven, mut grants) = (0, 0);
    let keys = profiles.iter().enumerate().map(|(k, p)| {
        (
            key_name(k),
            &shared.host_configs[k],
            p.overlap_checked,
            true,
        )
    });
    let slots = shared
        .slot_host_configs
        .iter()
        .enumerate()
        .map(|(j, c)| (slot_key_name(j), c, true, false));
    for (key, config, checked_key, whole) in keys.chain(slots) {
        if !checked_key {
            continue;
        }
        let report = s3_lease_host::blocking::Client::connect(shared.harness.runtime(), config)
            .and_then(|c| c.audit_verify(&key, None));
        let failed = match &report {
            Ok(r) if r.proven() || (!whole && !r.overlapped) => None,
            Ok(r) => Some(format!("{key}: {:#?}", r.findings)),
            Err(e) => Some(format!("{key}: verify failed: {e}")),
        };
        if let Ok(r) = &report {
            proven += usize::from(r.proven());
            grants += r.grants;
        }
        if let Some(detail) = failed {
            checked.violations.push(Violation {
                invariant: "audit: verify proves the grant log",
                detail,
            });
        }
    }
    println!("soak: grant logs verified: {proven} proven, {grants} grants recorded");
}

/// Runs a soak against `endpoint`: the run, then the checks over its history.
pub fn run(harness: &Harness, endpoint: &Endpoint, config: SoakConfig) -> report::Report {
    let seed = config.seed;
    let mut plan_rng = Rng::new(seed);
    let prefix = format!("soak/{seed}-{}/", clock_seed());
    let (n, keys, slot_keys) = (config.instances, config.keys, config.slot_keys);
    let profiles: Vec<KeyProfile> = (0..keys)
        .map(|k| KeyProfile::of(k, config.broken))
        .collect();
    let slot_profiles: Vec<SlotKeyProfile> = (0..slot_keys).map(SlotKeyProfile::of).collect();
    let skews: Vec<i64> = (0..n)
        .map(|_| plan_rng.range(0, 2 * INITIAL_SKEW_MS) as i64 - INITIAL_SKEW_MS as i64)
        .collect();
    let processes: Vec<Arc<Process>> = skews
        .iter()
        .map(|&s| Arc::new(Process::with_offset(s)))
        .collect();
    let start_barrier = Barrier::new(n * (keys + slot_keys) + 1);
    // Instances are made before t0, so the run starts with all of them.
    let t0 = Instant::now() + Duration::from_secs(2);
    let client_configs: Vec<Config> = profiles
        .iter()
        .map(|&p| client_config(endpoint, &prefix, p))
        .collect();
    let shared = Shared {
        harness,
        host_configs: profiles
            .iter()
            .map(|&p| host_config(endpoint, &prefix, p))
            .collect(),
        slot_host_configs: slot_profiles
            .iter()
            .map(|s| host_config(endpoint, &prefix, s.key_profile()))
            .collect(),
        slot_profiles: slot_profiles.clone(),
        client_configs,
        prefix: prefix.clone(),
        t0,
        t_end: t0 + config.duration,
        counts: Arc::new(FaultCounts::default()),
        leaders: (0..keys).map(|_| AtomicUsize::new(NOBODY)).collect(),
        next_value: AtomicU64::new(1),
        ops_per_object: Mutex::new(HashMap::new()),
        config,
    };
    println!(
        "soak: seed {seed}, {n} processes x {keys} keys, {} s, request fault rate {}, prefix {prefix}",
        shared.config.duration.as_secs(),
        shared.config.request_fault_rate
    );
    for (k, p) in profiles.iter().enumerate() {
        println!("soak:   {} {}", key_name(k), p.name());
    }
    for (j, s) in slot_profiles.iter().enumerate() {
        let asked = s.requested_limit(shared.config.broken);
        let broken = (asked != s.limit).then(|| format!(" (members ask for {asked}: must fail)"));
        let (name, broken) = (slot_key_name(j), broken.unwrap_or_default());
        println!("soak:   {name} {} (semaphore){broken}", s.name());
    }
    println!("soak: initial wall-clock skews (ms) {skews:?}");
    if shared.config.no_watchdog {
        println!("soak: --no-watchdog: members believe the last step, not the host elector's leading-until (must fail)");
    }

    let (records, plan) = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (p, process) in processes.iter().enumerate() {
            let (shared, barrier) = (&shared, &start_barrier);
            for k in 0..keys {
                let process = process.clone();
                handles.push(s.spawn(move || {
                    let (key, role) = ((k, key_name(k), k), Leading::new(shared));
                    Member::start(shared, process, p, key, role, barrier).run()
                }));
            }
            for j in 0..slot_keys {
                let process = process.clone();
                handles.push(s.spawn(move || {
                    let (key, role) = ((keys + j, slot_key_name(j), j), Slot::new(shared, j));
                    Member::start(shared, process, p, key, role, barrier).run()
                }));
            }
        }
        start_barrier.wait();
        let plan = apply_plan(&shared, &processes, &mut plan_rng);
        let records: Vec<Record> = handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    let mut r = Record::default();
                    r.history.violations.push(Violation {
                        invariant: "nothing traps",
                        detail: "a member thread panicked".into(),
                    });
                    r
                })
            })
            .collect();
        (records, plan)
    });

    // Let every held request arrive before reading what they left.
    std::thread::sleep(Duration::from_millis(schedule::MAX_LATE_MS + 1_500));
    let mut all = Record {
        history: History::new(key_specs(&profiles, &slot_profiles)),
        ..Record::default()
    };
    for r in records {
        all.absorb(r);
    }
    all.history.finals = read_finals(&shared, &all.history);
    let stats = report::Stats {
        counts: all.counts.clone(),
        faults: FaultKind::ALL
            .map(|kind| (kind, shared.counts.get(kind)))
            .into(),
        plan_applied: plan.applied,
        plan_skipped: plan.skipped,
    };
    let mut checked = history::check(&all.history);
    verify_logs(&shared, &profiles, &mut checked);
    report::Report::new(shared.config.clone(), &all, checked, stats)
}

/// What the history holds each key to: the elected keys (limit 1; the
/// overlaps of a `holder` key counted, not failed), then the semaphore keys.
fn key_specs(profiles: &[KeyProfile], slot_profiles: &[SlotKeyProfile]) -> Vec<KeySpec> {
    let spec = |name: String, limit, fair, exclusion_checked| KeySpec {
        name,
        limit,
        fair,
        exclusion_checked,
        exact_acks: false,
    };
    let elected = profiles.iter().enumerate().map(|(k, p)| {
        let name = format!("{} ({})", key_name(k), p.name());
        spec(name, 1, false, p.overlap_checked)
    });
    let semaphores = slot_profiles.iter().enumerate().map(|(j, p)| {
        let name = format!("{} ({})", slot_key_name(j), p.name());
        spec(name, p.limit, p.fair, true)
    });
    elected.chain(semaphores).collect()
}

/// Reads every fenced object once the run is over, with a client no fault
/// touches.
fn read_finals(shared: &Shared, history: &History) -> Vec<FinalRead> {
    let mut objects: Vec<&str> = history.fenced.iter().map(|o| o.object.as_str()).collect();
    objects.sort_unstable();
    objects.dedup();
    let mut reader = shared
        .harness
        .instance()
        .and_then(|mut i| match i.open(&shared.client_configs[0])? {
            Ok(()) => Ok(i),
            Err(e) => Err(anyhow::anyhow!("opening the reader: {e:?}")),
        })
        .map_err(|e| format!("{e:#}"));
    let mut read = |object: &str| match reader.as_mut().map_err(|e| e.clone())?.fenced_get(object) {
        Ok(Ok(found)) => Ok(found.map(|f| {
            let named = record::parse_body(&f.body);
            Found {
                token: f.token,
                value: named.map(|(_, value)| value),
                body_token: named.map(|(token, _)| token),
            }
        })),
        other => Err(format!("{other:?}")),
    };
    let read_one = |o: &&str| FinalRead {
        object: o.to_string(),
        found: read(o),
    };
    objects.iter().map(read_one).collect()
}

/// How much of the process-level plan was applied.
struct PlanOutcome {
    applied: u64,
    /// Draws with no target: too many processes down or busy.
    skipped: u64,
}

/// The process-level plan: crashes, pauses and clock jumps until a little
/// before the end. Every draw happens whatever the run-time state, so a
/// seed replays the same plan; only "the leader" and whether a process is
/// free are resolved at run time.
fn apply_plan(shared: &Shared, processes: &[Arc<Process>], rng: &mut Rng) -> PlanOutcome {
    let n = processes.len();
    let verbose = shared.config.verbose;
    // Keep a majority up, so someone can always lead.
    let max_down = (n.saturating_sub(1) / 2).max(1);
    let mut busy_until = vec![shared.t0; n];
    // A kill armed for "the next request" that no request took by then
    // happens between calls instead.
    let mut armed_kills: Vec<(Instant, usize)> = Vec::new();
    let mut outcome = PlanOutcome {
        applied: 0,
        skipped: 0,
    };
    let stop = shared
        .t_end
        .checked_sub(Duration::from_millis(LEASE_MS + 3_000))
        .unwrap_or(shared.t0);
    std::thread::sleep(shared.t0.saturating_duration_since(Instant::now()));
    loop {
        let d = schedule::draw(rng, LEASE_MS);
        std::thread::sleep(Duration::from_millis(d.gap_ms));
        let now = Instant::now();
        armed_kills.retain(|&(by, p)| {
            if by > now {
                return true;
            }
            if let Some(down_ms) = processes[p].take_kill() {
                processes[p].crash_now(down_ms);
                shared.counts.add(FaultKind::Crash);
            }
            false
        });
        if now >= stop {
            break;
        }
        let free: Vec<usize> = (0..n).filter(|&p| busy_until[p] <= now).collect();
        let leading: Vec<usize> = free
            .iter()
            .copied()
            .filter(|&p| shared.leaders.iter().any(|l| l.load(Ordering::SeqCst) == p))
            .collect();
        let pool = if d.want_leader && !leading.is_empty() {
            &leading
        } else {
            &free
        };
        let down = n - free.len();
        let Some(&target) = pool.get((d.pick % pool.len().max(1) as u64) as usize) else {
            outcome.skipped += 1;
            continue;
        };
        let process = &processes[target];
        let wait = Duration::from_millis(3_000);
        let what = match d.fault {
            ProcessFault::Crash { .. } | ProcessFault::Pause { .. } if down >= max_down => {
                outcome.skipped += 1;
                continue;
            }
            ProcessFault::Crash {
                down_ms,
                mid_request,
            } => {
                busy_until[target] = now + wait + Duration::from_millis(down_ms + 1_000);
                if mid_request {
                    process.arm_kill(down_ms);
                    armed_kills.push((now + wait, target));
                    format!("crash at its next request, down {down_ms} ms")
                } else {
                    process.crash_now(down_ms);
                    shared.counts.add(FaultKind::Crash);
                    format!("crash, down {down_ms} ms")
                }
            }
            ProcessFault::Pause { ms, mid_request } => {
                busy_until[target] = now + wait + Duration::from_millis(ms + 500);
                if mid_request {
                    process.arm_stall(ms);
                    format!("stall its next request {ms} ms")
                } else {
                    process.pause(ms);
                    shared.counts.add(FaultKind::Pause);
                    format!("pause {ms} ms")
                }
            }
            ProcessFault::ClockJump { ms } => {
                let old = process.clock_offset_ms.load(Ordering::SeqCst);
                let new = (old + ms).clamp(-MAX_SKEW_MS, MAX_SKEW_MS);
                process.clock_offset_ms.store(new, Ordering::SeqCst);
                shared.counts.add(FaultKind::ClockJump);
                format!("wall clock {ms:+} ms (offset {old} -> {new} ms)")
            }
        };
        outcome.applied += 1;
        if verbose {
            println!(
                "soak: {:>8.3}s process {target}: {what}",
                now.saturating_duration_since(shared.t0).as_secs_f64()
            );
        }
    }
    // What no request took by the end is not applied (and not counted).
    for p in processes {
        p.disarm();
    }
    outcome
}

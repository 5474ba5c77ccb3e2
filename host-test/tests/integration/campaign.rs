//! A campaign: eight instances, each in its own thread with its own store,
//! campaign for one key with electors (lease 3 s, renew deadline 2 s, retry
//! 500 ms) while a seeded schedule crashes, pauses, cuts off and resigns
//! them; once per expiry clock (`server` and `observed` with every
//! instance's wall clock skewed by up to three leases, `holder` unskewed).
//!
//! Every instance records when it believed itself leader, from its own step
//! results: from the end of a step that reported `leader` to the start of
//! the first step that no longer did (or to the crash, the pause or the
//! `resign` call). The checks: no two such intervals overlap, tokens rise
//! from one leader to the next, a leader paused past its renew deadline
//! reports `stopped-leading` on its first step after waking, and failover
//! after a crash of the leader (or a resignation) stays within what the
//! durations promise. Printed: failover times, the share of time a leader
//! existed, leadership changes, requests per second of leaders and
//! followers.
//!
//! Duration: `S3LEASE_CAMPAIGN_SECS` (default 60) per expiry clock; the three
//! campaigns run one after the other, so their timing does not disturb one
//! another. Seed: `S3LEASE_SEED`, else the clock; printed. Only the plan
//! (fault kinds, durations, gaps, whether the leader is the target) replays;
//! thread timing does not.

use super::rng::Rng;
use super::*;
use host_test::bindings::{
    Config, ElectorConfig, ElectorEvent, ExpiryClock, Role, StepResult, StopReason,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};
use wasmtime::component::ResourceAny;

const INSTANCES: usize = 8;
const LEASE_MS: u64 = 3_000;
const RENEW_DEADLINE_MS: u64 = 2_000;
const RETRY_MS: u64 = 500;
/// The longest a thread sleeps between steps.
const MAX_SLEEP: Duration = Duration::from_millis(250);
const KEY: &str = "campaign";
/// At most this many instances are crashed, paused or cut at once, so the
/// rest can always elect a leader.
const MAX_FAULTED: usize = 3;
/// Allowance in failover bounds for the host: a sleep of up to 250 ms
/// between steps, thread scheduling, the request itself.
const SCHEDULING_MS: u64 = 500;
const NOBODY: usize = usize::MAX;

/// Whole seconds of the default campaign, per expiry clock.
fn campaign_secs() -> u64 {
    match std::env::var("S3LEASE_CAMPAIGN_SECS") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("S3LEASE_CAMPAIGN_SECS must be whole seconds, got {s:?}")),
        Err(_) => 60,
    }
}

#[test]
fn campaign_server_clock_eight_instances_skewed_under_seeded_faults() {
    campaign(ExpiryClock::Server);
}

#[test]
fn campaign_observed_clock_eight_instances_skewed_under_seeded_faults() {
    campaign(ExpiryClock::Observed);
}

#[test]
fn campaign_holder_clock_eight_instances_under_seeded_faults() {
    campaign(ExpiryClock::Holder);
}

/// `S3LEASE_SEED` (decimal), else the clock.
fn seed() -> u64 {
    match std::env::var("S3LEASE_SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("S3LEASE_SEED must be a u64, got {s:?}")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    }
}

fn clock_name(clock: ExpiryClock) -> &'static str {
    match clock {
        ExpiryClock::Holder => "holder",
        ExpiryClock::Server => "server",
        ExpiryClock::Observed => "observed",
    }
}

/// Slack of the expiry rule beyond the lease duration, in the failover
/// bound after a crash.
fn expiry_slack_ms(clock: ExpiryClock) -> u64 {
    match clock {
        // The rule's own 2 s (`Last-Modified` + ttl + 2 s against `Date`),
        // and one more second: `Date` moves in whole seconds, so the first
        // one past that expiry can come up to 1 s after it.
        ExpiryClock::Server => 2_000 + 1_000,
        // observed: ttl + 1% + 100 ms after first sighting, which comes
        // within a retry period of the write; holder: exact.
        ExpiryClock::Observed | ExpiryClock::Holder => 1_000,
    }
}

fn resign_slack_ms(clock: ExpiryClock) -> u64 {
    match clock {
        ExpiryClock::Server => 2_000,
        ExpiryClock::Observed | ExpiryClock::Holder => 1_000,
    }
}

#[derive(Debug, Clone, Copy)]
enum Command {
    /// Drop the elector without resigning; after `down_ms`, start again
    /// as a fresh process (new store, client and holder id).
    Crash { down_ms: u64 },
    /// Stop stepping for `ms`.
    Pause { ms: u64 },
    /// Refuse every request for `ms`.
    Cut { ms: u64 },
    /// Resign if leading; keep campaigning.
    Resign,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FaultKind {
    Crash,
    Pause,
    Cut,
    Resign,
}

/// A fault as the instance applied it.
struct FaultRecord {
    inst: usize,
    kind: FaultKind,
    at: Instant,
    ms: u64,
    /// The token it led with when the fault hit, if it led.
    leader_token: Option<u64>,
    /// `resign` failed (the lease then lapses like a crashed one).
    resign_error: Option<String>,
}

/// A span in which one instance believed itself leader with one token.
#[derive(Clone)]
struct Interval {
    inst: usize,
    generation: u32,
    token: u64,
    holder: String,
    start: Instant,
    end: Instant,
    ended_by: String,
}

struct StepLog {
    inst: usize,
    generation: u32,
    start: Instant,
    end: Instant,
    summary: String,
}

#[derive(Default)]
struct Report {
    intervals: Vec<Interval>,
    faults: Vec<FaultRecord>,
    steps: Vec<StepLog>,
    /// Requests that reached the server, sent while leading / not leading.
    leader_requests: u64,
    follower_requests: u64,
    /// Requests refused by a network cut (never left the host), sent while
    /// leading / not leading.
    leader_refused: u64,
    follower_refused: u64,
    /// Time with a live elector, not paused.
    active: Duration,
    /// `last-error` of steps, by kind.
    errors: BTreeMap<&'static str, u64>,
    /// Violations and surprises, in words.
    problems: Vec<String>,
    resigns_not_leading: u64,
}

/// The tail of a holder id (the random part), for the logs.
fn short(holder: &str) -> String {
    let chars: Vec<char> = holder.chars().collect();
    chars[chars.len().saturating_sub(6)..].iter().collect()
}

fn describe_role(role: &Role) -> String {
    match role {
        Role::Leader(l) => format!("leader(t{} {})", l.token, short(&l.holder_id)),
        Role::Follower(Some(s)) => format!(
            "follower(of t{} {} live={} in {}ms)",
            s.token,
            short(&s.holder_id),
            s.live,
            s.expires_in_ms
        ),
        Role::Follower(None) => "follower(?)".into(),
        Role::Candidate => "candidate".into(),
    }
}

fn describe_event(e: &ElectorEvent) -> String {
    match e {
        ElectorEvent::BecameLeader(l) => format!("became-leader(t{})", l.token),
        ElectorEvent::StoppedLeading(r) => format!("stopped-leading({r:?})"),
        ElectorEvent::LeaderChanged(Some(s)) => {
            format!("leader-changed(t{} {})", s.token, short(&s.holder_id))
        }
        ElectorEvent::LeaderChanged(None) => "leader-changed(none)".into(),
    }
}

fn describe_step(r: &StepResult) -> String {
    let events: Vec<String> = r.events.iter().map(describe_event).collect();
    let mut s = format!(
        "{} [{}] next {}ms",
        describe_role(&r.role),
        events.join(", "),
        r.next_step_in_ms
    );
    if let Some(e) = &r.last_error {
        let text: String = format!("{e:?}").chars().take(160).collect();
        s.push_str(&format!(" err {text}"));
    }
    s
}

/// One instance of the campaign, run by its own thread.
struct Member<'a> {
    id: usize,
    config: &'a Config,
    skew_ms: i64,
    leader_now: &'a AtomicUsize,
    instance: Instance,
    elector: Option<ResourceAny>,
    /// Elector number: 0, then one more per restart after a crash.
    generation: u32,
    /// (token, holder, start) of the leadership it believes in now.
    open: Option<(u64, String, Instant)>,
    /// Set by a pause while leading: (token, pause ms). Checked by the
    /// first step after waking.
    paused_token: Option<(u64, u64)>,
    /// The stopped-leading a resign or a pause makes the next step report.
    expect_stop: Option<StopReason>,
    active_since: Option<Instant>,
    cut_until: Option<Instant>,
    report: Report,
}

impl<'a> Member<'a> {
    fn problem(&mut self, text: String) {
        self.report
            .problems
            .push(format!("instance {}: {text}", self.id));
    }

    fn elector_config(&self) -> ElectorConfig {
        ElectorConfig {
            key: KEY.into(),
            lease_duration_ms: LEASE_MS,
            renew_deadline_ms: RENEW_DEADLINE_MS,
            retry_period_ms: RETRY_MS,
            // A fresh random id per elector, so a restart is a new holder.
            holder_id: None,
            metadata: Some(format!(
                "instance {} generation {}",
                self.id, self.generation
            )),
        }
    }

    fn start_elector(&mut self) {
        let config = self.elector_config();
        match self.instance.elector(&config) {
            Ok(Ok(e)) => {
                self.elector = Some(e);
                self.active_since = Some(Instant::now());
            }
            other => {
                let text = format!("creating elector generation {}: {other:?}", self.generation);
                self.problem(text);
            }
        }
    }

    fn add_active(&mut self, until: Instant) {
        if let Some(since) = self.active_since.take() {
            self.report.active += until.saturating_duration_since(since);
        }
    }

    fn count_requests(&mut self, as_leader: bool) {
        let taken = self.instance.hooks.take_requests();
        for r in &taken {
            if !r.payload_hash_ok {
                let text = format!("payload hash mismatch on {r:?}");
                self.problem(text);
            }
            let refused = r.status.is_none() && self.cut_until.is_some();
            match (refused, as_leader) {
                (true, true) => self.report.leader_refused += 1,
                (true, false) => self.report.follower_refused += 1,
                (false, true) => self.report.leader_requests += 1,
                (false, false) => self.report.follower_requests += 1,
            }
        }
    }

    fn open_interval(&mut self, token: u64, holder: String, at: Instant) {
        self.open = Some((token, holder, at));
        self.leader_now.store(self.id, Ordering::SeqCst);
    }

    fn close_interval(&mut self, at: Instant, why: &str) -> Option<u64> {
        let (token, holder, start) = self.open.take()?;
        self.report.intervals.push(Interval {
            inst: self.id,
            generation: self.generation,
            token,
            holder,
            start,
            end: at,
            ended_by: why.to_string(),
        });
        let _ =
            self.leader_now
                .compare_exchange(self.id, NOBODY, Ordering::SeqCst, Ordering::SeqCst);
        Some(token)
    }

    /// One step; returns how long to sleep before the next.
    fn step(&mut self) -> Duration {
        let Some(elector) = self.elector else {
            return MAX_SLEEP;
        };
        let was_leading = self.open.is_some();
        let start = Instant::now();
        let result = self.instance.step(elector);
        let end = Instant::now();
        self.count_requests(was_leading);
        let r = match result {
            Ok(r) => r,
            Err(trap) => {
                self.problem(format!("trapped in step: {trap:#}"));
                self.close_interval(start, "trap");
                self.elector = None;
                self.add_active(start);
                return MAX_SLEEP;
            }
        };
        self.report.steps.push(StepLog {
            inst: self.id,
            generation: self.generation,
            start,
            end,
            summary: describe_step(&r),
        });
        if let Some(e) = &r.last_error {
            *self.report.errors.entry(e.kind()).or_default() += 1;
            if !host_test::hooks::is_fault_error(e) {
                self.problem(format!("step failed unexpectedly: {e:?}"));
            }
        }

        let became = r.events.iter().find_map(|e| match e {
            ElectorEvent::BecameLeader(l) => Some(l.token),
            _ => None,
        });
        let stop = r.events.iter().find_map(|e| match e {
            ElectorEvent::StoppedLeading(s) => Some(*s),
            _ => None,
        });
        let leading = match &r.role {
            Role::Leader(l) => Some((l.token, l.holder_id.clone())),
            _ => None,
        };

        if let Some((token, ms)) = self.paused_token.take() {
            if leading.as_ref().map(|l| l.0) == Some(token) {
                self.problem(format!(
                    "led with token {token}, paused {ms} ms (past its renew deadline), \
                     and still reports leader with that token on waking: {}",
                    describe_step(&r)
                ));
            }
            if stop != Some(StopReason::RenewDeadline) {
                self.problem(format!(
                    "led with token {token}, paused {ms} ms, and its first step after \
                     waking reports no stopped-leading(renew-deadline): {}",
                    describe_step(&r)
                ));
            }
        }

        let expected_stop = self.expect_stop.take();
        match (self.open.clone(), leading) {
            (Some((token, ..)), Some((now_token, _)))
                if token == now_token && stop.is_none() && became.is_none() => {}
            (Some((token, ..)), Some((now_token, holder))) => {
                // Stopped and was elected again within one step.
                self.close_interval(start, "re-elected within a step");
                if now_token <= token || became != Some(now_token) || stop.is_none() {
                    self.problem(format!(
                        "led with token {token}, then a step reports: {}",
                        describe_step(&r)
                    ));
                }
                self.open_interval(now_token, holder, end);
            }
            (Some((token, ..)), None) => {
                let why = match stop {
                    Some(s) => format!("step: stopped-leading({s:?})"),
                    None => "step: no longer leader, without an event".into(),
                };
                self.close_interval(start, &why);
                if stop.is_none() {
                    self.problem(format!(
                        "led with token {token}; a step no longer reports leader but has \
                         no stopped-leading event: {}",
                        describe_step(&r)
                    ));
                }
            }
            (None, Some((now_token, holder))) => {
                if became != Some(now_token) {
                    self.problem(format!(
                        "reports leader with token {now_token} without became-leader: {}",
                        describe_step(&r)
                    ));
                }
                if stop.is_some() && stop != expected_stop {
                    self.problem(format!("unexpected stopped-leading: {}", describe_step(&r)));
                }
                self.open_interval(now_token, holder, end);
            }
            (None, None) => {
                if became.is_some() {
                    self.problem(format!(
                        "became leader and stopped within one step: {}",
                        describe_step(&r)
                    ));
                }
                if stop.is_some() && stop != expected_stop {
                    self.problem(format!("unexpected stopped-leading: {}", describe_step(&r)));
                }
            }
        }
        if expected_stop == Some(StopReason::Resigned) && stop != expected_stop {
            self.problem(format!(
                "the step after resign reports no stopped-leading(resigned): {}",
                describe_step(&r)
            ));
        }
        Duration::from_millis(r.next_step_in_ms).min(MAX_SLEEP)
    }

    fn record_fault(&mut self, kind: FaultKind, at: Instant, ms: u64, token: Option<u64>) {
        self.report.faults.push(FaultRecord {
            inst: self.id,
            kind,
            at,
            ms,
            leader_token: token,
            resign_error: None,
        });
    }

    /// Applies a command; returns true when the next step is due at once.
    fn handle(&mut self, command: Command, t_end: Instant) -> bool {
        let at = Instant::now();
        match command {
            Command::Crash { down_ms } => {
                let token = self.close_interval(at, "crash");
                if let Some(e) = self.elector.take() {
                    if let Err(trap) = self.instance.drop_elector(e) {
                        self.problem(format!("trapped dropping the elector: {trap:#}"));
                    }
                }
                self.count_requests(false);
                self.add_active(at);
                self.record_fault(FaultKind::Crash, at, down_ms, token);
                self.paused_token = None;
                self.expect_stop = None;
                self.cut_until = None;
                let wake = (at + Duration::from_millis(down_ms)).min(t_end);
                std::thread::sleep(wake.saturating_duration_since(Instant::now()));
                if Instant::now() < t_end {
                    // A restarted process: new store, client, holder id.
                    let fresh = opened_with(self.config);
                    fresh.skew_clock_ms(self.skew_ms);
                    self.instance = fresh;
                    self.generation += 1;
                    self.start_elector();
                }
                true
            }
            Command::Pause { ms } => {
                let token = self.close_interval(at, "pause");
                if let Some(token) = token {
                    self.paused_token = Some((token, ms));
                    self.expect_stop = Some(StopReason::RenewDeadline);
                }
                let active = self.active_since.is_some();
                self.add_active(at);
                self.record_fault(FaultKind::Pause, at, ms, token);
                let wake = (at + Duration::from_millis(ms)).min(t_end);
                std::thread::sleep(wake.saturating_duration_since(Instant::now()));
                if active {
                    self.active_since = Some(Instant::now());
                }
                true
            }
            Command::Cut { ms } => {
                self.instance.hooks.set_cut(true);
                self.cut_until = Some(at + Duration::from_millis(ms));
                let token = self.open.as_ref().map(|o| o.0);
                self.record_fault(FaultKind::Cut, at, ms, token);
                false
            }
            Command::Resign => {
                let Some(elector) = self.elector else {
                    return false;
                };
                let Some(token) = self.close_interval(at, "resign") else {
                    self.report.resigns_not_leading += 1;
                    return false;
                };
                let result = self.instance.resign(elector);
                self.count_requests(true);
                self.record_fault(FaultKind::Resign, at, 0, Some(token));
                self.expect_stop = Some(StopReason::Resigned);
                match result {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        self.report.faults.last_mut().unwrap().resign_error =
                            Some(format!("{e:?}"));
                    }
                    Err(trap) => {
                        self.problem(format!("trapped in resign: {trap:#}"));
                        self.elector = None;
                        self.add_active(Instant::now());
                    }
                }
                false
            }
        }
    }

    /// Steps until `t_end`, applying commands as they come.
    fn run(mut self, commands: Receiver<Command>, t_end: Instant) -> Report {
        let mut next_step_at = Instant::now();
        let mut commands_open = true;
        loop {
            let now = Instant::now();
            if now >= t_end {
                break;
            }
            if self.cut_until.is_some_and(|u| now >= u) {
                self.instance.hooks.set_cut(false);
                // Requests refused so far count as refused, not sent.
                let was_leading = self.open.is_some();
                self.count_requests(was_leading);
                self.cut_until = None;
            }
            if now >= next_step_at {
                let sleep = self.step();
                next_step_at = Instant::now() + sleep;
                continue;
            }
            let mut wake = next_step_at.min(t_end);
            if let Some(u) = self.cut_until {
                wake = wake.min(u);
            }
            let wait = wake.saturating_duration_since(now);
            if !commands_open {
                std::thread::sleep(wait);
                continue;
            }
            match commands.recv_timeout(wait) {
                Ok(command) => {
                    if self.handle(command, t_end) {
                        next_step_at = Instant::now();
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => commands_open = false,
            }
        }
        let end = Instant::now();
        self.close_interval(end, "end of run");
        self.add_active(end);
        if let Some(e) = self.elector.take() {
            let _ = self.instance.drop_elector(e);
        }
        self.report
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

fn since(t0: Instant, t: Instant) -> String {
    format!("{:.3}s", t.saturating_duration_since(t0).as_secs_f64())
}

/// (p50, max) of a sample, in ms.
fn p50_max(sample: &[u64]) -> (u64, u64) {
    let mut s = sample.to_vec();
    s.sort_unstable();
    match s.len() {
        0 => (0, 0),
        n => (s[(n - 1) / 2], s[n - 1]),
    }
}

/// The three campaigns share one server and two CPUs: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn campaign(clock: ExpiryClock) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let name = clock_name(clock);
    let test = format!("campaign[{name}]");
    let seed = seed();
    println!("{test}: seed {seed} (replay with S3LEASE_SEED={seed})");
    let mut rng = Rng::new(seed);
    let duration = Duration::from_secs(campaign_secs());

    let mut config = endpoint().config(&fresh_prefix(&format!("campaign-{name}")));
    config.expiry_clock = Some(clock);
    let skews: Vec<i64> = (0..INSTANCES)
        .map(|_| {
            let spread = 3 * LEASE_MS as i64;
            let s = rng.range(0, 2 * spread as u64) as i64 - spread;
            if clock == ExpiryClock::Holder {
                0
            } else {
                s
            }
        })
        .collect();
    println!(
        "{test}: {INSTANCES} instances, {}s, wall-clock skews (ms) {skews:?}",
        duration.as_secs()
    );

    let leader_now = AtomicUsize::new(NOBODY);
    let barrier = Barrier::new(INSTANCES + 1);
    let start_at: Mutex<Option<(Instant, Instant)>> = Mutex::new(None);
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    for _ in 0..INSTANCES {
        let (tx, rx) = mpsc::channel::<Command>();
        senders.push(tx);
        receivers.push(rx);
    }

    let mut plan = Vec::<String>::new();
    let mut skipped = 0u32;
    let (t0, t_end, reports) = std::thread::scope(|s| {
        let handles: Vec<_> = receivers
            .into_iter()
            .enumerate()
            .map(|(id, rx)| {
                let (config, leader_now, barrier, start_at) =
                    (&config, &leader_now, &barrier, &start_at);
                let skew_ms = skews[id];
                s.spawn(move || {
                    // Each store is created in the thread that uses it.
                    let made = harness().instance().map(|mut i| {
                        let opened = i.open(config);
                        (i, opened)
                    });
                    barrier.wait();
                    barrier.wait();
                    let (_, t_end) = start_at.lock().unwrap().expect("start set");
                    let instance = match made {
                        Ok((i, Ok(Ok(())))) => i,
                        other => {
                            let mut report = Report::default();
                            report.problems.push(format!(
                                "instance {id}: could not start: {:?}",
                                other.map(|(_, r)| r)
                            ));
                            return report;
                        }
                    };
                    instance.skew_clock_ms(skew_ms);
                    let mut member = Member {
                        id,
                        config,
                        skew_ms,
                        leader_now,
                        instance,
                        elector: None,
                        generation: 0,
                        open: None,
                        paused_token: None,
                        expect_stop: None,
                        active_since: None,
                        cut_until: None,
                        report: Report::default(),
                    };
                    member.start_elector();
                    member.run(rx, t_end)
                })
            })
            .collect();

        barrier.wait();
        let t0 = Instant::now();
        let t_end = t0 + duration;
        *start_at.lock().unwrap() = Some((t0, t_end));
        barrier.wait();

        // The fault schedule. Every draw happens whatever the run-time
        // state, so a seed replays the same plan; only the target "the
        // leader" is resolved at run time.
        let mut busy_until = [t0; INSTANCES];
        let stop_faults = t_end
            .checked_sub(Duration::from_millis(LEASE_MS + 6_000))
            .unwrap_or(t0);
        loop {
            let gap = rng.range(500, 2_500);
            let roll = rng.range(0, 99);
            let want_leader = rng.chance(0.6);
            let pick = rng.next_u64() as usize;
            let crash_down = rng.range(500, 4_000);
            let pause = LEASE_MS + rng.range(1_000, 2_000);
            let cut = rng.range(500, 5_000);
            std::thread::sleep(Duration::from_millis(gap));
            let now = Instant::now();
            if now >= stop_faults {
                break;
            }
            let (kind, command, busy_ms) = match roll {
                0..=29 => (
                    FaultKind::Crash,
                    Command::Crash {
                        down_ms: crash_down,
                    },
                    crash_down + 1_000,
                ),
                30..=49 => (FaultKind::Pause, Command::Pause { ms: pause }, pause + 500),
                50..=74 => (FaultKind::Cut, Command::Cut { ms: cut }, cut + 500),
                _ => (FaultKind::Resign, Command::Resign, 0),
            };
            let free: Vec<usize> = (0..INSTANCES).filter(|&i| busy_until[i] <= now).collect();
            let faulted = INSTANCES - free.len();
            let leader = leader_now.load(Ordering::SeqCst);
            let leader_free = leader != NOBODY && free.contains(&leader);
            let target = match kind {
                FaultKind::Resign => leader_free.then_some(leader),
                _ if faulted >= MAX_FAULTED || free.is_empty() => None,
                _ if want_leader && leader_free => Some(leader),
                _ => Some(free[pick % free.len()]),
            };
            let Some(target) = target else {
                skipped += 1;
                continue;
            };
            busy_until[target] = now + Duration::from_millis(busy_ms);
            plan.push(format!(
                "{} {kind:?} instance {target}{} {}",
                since(t0, now),
                if target == leader { " (leader)" } else { "" },
                match command {
                    Command::Crash { down_ms } => format!("down {down_ms} ms"),
                    Command::Pause { ms } | Command::Cut { ms } => format!("{ms} ms"),
                    Command::Resign => String::new(),
                }
            ));
            let _ = senders[target].send(command);
        }
        drop(senders);
        let reports: Vec<Report> = handles
            .into_iter()
            .map(|h| h.join().expect("instance thread"))
            .collect();
        (t0, t_end, reports)
    });

    analyse(&test, clock, seed, t0, t_end, &plan, skipped, reports);
}

#[allow(clippy::too_many_arguments)]
fn analyse(
    test: &str,
    clock: ExpiryClock,
    seed: u64,
    t0: Instant,
    t_end: Instant,
    plan: &[String],
    skipped: u32,
    reports: Vec<Report>,
) {
    println!(
        "{test}: fault plan ({} applied, {skipped} skipped: target busy or no leader):",
        plan.len()
    );
    for line in plan {
        println!("  {line}");
    }

    let mut problems: Vec<String> = reports.iter().flat_map(|r| r.problems.clone()).collect();
    let mut intervals: Vec<Interval> = reports.iter().flat_map(|r| r.intervals.clone()).collect();
    intervals.sort_by_key(|i| i.start);
    let faults: Vec<&FaultRecord> = {
        let mut f: Vec<&FaultRecord> = reports.iter().flat_map(|r| r.faults.iter()).collect();
        f.sort_by_key(|f| f.at);
        f
    };
    let steps: Vec<&StepLog> = reports.iter().flat_map(|r| r.steps.iter()).collect();

    println!("{test}: leadership intervals:");
    for i in &intervals {
        println!(
            "  t{:<4} instance {} gen {} holder {} {} .. {} ({} ms), ended by {}",
            i.token,
            i.inst,
            i.generation,
            short(&i.holder),
            since(t0, i.start),
            since(t0, i.end),
            ms(i.end.saturating_duration_since(i.start)),
            i.ended_by
        );
    }

    // No two beliefs overlap.
    let mut overlaps = Vec::new();
    for (n, a) in intervals.iter().enumerate() {
        for b in &intervals[n + 1..] {
            if b.start >= a.end {
                break;
            }
            overlaps.push((a.clone(), b.clone()));
        }
    }
    for (a, b) in &overlaps {
        problems.push(format!(
            "OVERLAP: instance {} (t{}, {} .. {}, ended by {}) and instance {} (t{}, {} .. {}) \
             both believed they led for {} ms",
            a.inst,
            a.token,
            since(t0, a.start),
            since(t0, a.end),
            a.ended_by,
            b.inst,
            b.token,
            since(t0, b.start),
            since(t0, b.end),
            ms(a.end.min(b.end).saturating_duration_since(b.start))
        ));
        let from = a
            .start
            .min(b.start)
            .checked_sub(Duration::from_secs(4))
            .unwrap_or(t0);
        let to = a.end.max(b.end) + Duration::from_secs(1);
        println!(
            "{test}: steps of instances {} and {} around the overlap:",
            a.inst, b.inst
        );
        let mut around: Vec<&&StepLog> = steps
            .iter()
            .filter(|s| (s.inst == a.inst || s.inst == b.inst) && s.end >= from && s.start <= to)
            .collect();
        around.sort_by_key(|s| s.start);
        for s in around {
            println!(
                "  instance {} gen {} {} .. {}: {}",
                s.inst,
                s.generation,
                since(t0, s.start),
                since(t0, s.end),
                s.summary
            );
        }
        for f in faults.iter().filter(|f| f.at >= from && f.at <= to) {
            println!(
                "  fault {:?} on instance {} at {} ({} ms, leader token {:?})",
                f.kind,
                f.inst,
                since(t0, f.at),
                f.ms,
                f.leader_token
            );
        }
    }

    // Tokens rise from one leader to the next.
    for w in intervals.windows(2) {
        if w[1].token <= w[0].token {
            problems.push(format!(
                "TOKEN ORDER: t{} (instance {}, from {}) followed by t{} (instance {}, from {})",
                w[0].token,
                w[0].inst,
                since(t0, w[0].start),
                w[1].token,
                w[1].inst,
                since(t0, w[1].start)
            ));
        }
    }

    // Failover: from the fault to the next leader's became-leader.
    let next_leader_after = |at: Instant| intervals.iter().find(|i| i.start >= at).map(|i| i.start);
    let crash_bound = LEASE_MS + RETRY_MS + expiry_slack_ms(clock) + SCHEDULING_MS;
    let resign_bound = RETRY_MS + resign_slack_ms(clock) + SCHEDULING_MS;
    let (mut crash_gaps, mut resign_gaps, mut pause_gaps, mut failed_resign_gaps) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut unmeasured = 0;
    for f in &faults {
        if f.leader_token.is_none() || f.kind == FaultKind::Cut {
            continue;
        }
        let Some(next) = next_leader_after(f.at) else {
            unmeasured += 1;
            continue;
        };
        let gap = ms(next.saturating_duration_since(f.at));
        match (f.kind, &f.resign_error) {
            (FaultKind::Crash, _) => {
                crash_gaps.push(gap);
                if gap > crash_bound {
                    problems.push(format!(
                        "SLOW FAILOVER: crash of leader instance {} (t{}) at {}: next leader after {gap} ms > {crash_bound} ms",
                        f.inst,
                        f.leader_token.unwrap(),
                        since(t0, f.at)
                    ));
                }
            }
            (FaultKind::Resign, None) => {
                resign_gaps.push(gap);
                if gap > resign_bound {
                    problems.push(format!(
                        "SLOW HANDOVER: resignation of instance {} (t{}) at {}: next leader after {gap} ms > {resign_bound} ms",
                        f.inst,
                        f.leader_token.unwrap(),
                        since(t0, f.at)
                    ));
                }
            }
            (FaultKind::Resign, Some(e)) => {
                println!("{test}: resign at {} failed: {e}", since(t0, f.at));
                failed_resign_gaps.push(gap);
                if gap > crash_bound {
                    problems.push(format!(
                        "SLOW FAILOVER: failed resignation of instance {} at {}: next leader after {gap} ms > {crash_bound} ms",
                        f.inst,
                        since(t0, f.at)
                    ));
                }
            }
            (FaultKind::Pause, _) => pause_gaps.push(gap),
            (FaultKind::Cut, _) => {}
        }
    }

    // Availability: the share of the run in which someone believed it led.
    let run = t_end.saturating_duration_since(t0);
    let mut covered = Duration::ZERO;
    let mut reach = t0;
    for i in &intervals {
        let (start, end) = (i.start.max(reach), i.end.min(t_end));
        if end > start {
            covered += end - start;
            reach = end;
        }
    }
    let handovers = intervals
        .windows(2)
        .filter(|w| w[0].inst != w[1].inst)
        .count();

    let leader_time: Duration = intervals
        .iter()
        .map(|i| i.end.saturating_duration_since(i.start))
        .sum();
    let active: Duration = reports.iter().map(|r| r.active).sum();
    let follower_time = active.saturating_sub(leader_time);
    let leader_requests: u64 = reports.iter().map(|r| r.leader_requests).sum();
    let follower_requests: u64 = reports.iter().map(|r| r.follower_requests).sum();
    let leader_refused: u64 = reports.iter().map(|r| r.leader_refused).sum();
    let follower_refused: u64 = reports.iter().map(|r| r.follower_refused).sum();
    let mut errors = BTreeMap::<&str, u64>::new();
    for r in &reports {
        for (k, v) in &r.errors {
            *errors.entry(k).or_default() += v;
        }
    }
    let count = |k: FaultKind| faults.iter().filter(|f| f.kind == k).count();
    let count_leader = |k: FaultKind| {
        faults
            .iter()
            .filter(|f| f.kind == k && f.leader_token.is_some())
            .count()
    };
    let not_leading: u64 = reports.iter().map(|r| r.resigns_not_leading).sum();

    let (c50, cmax) = p50_max(&crash_gaps);
    let (r50, rmax) = p50_max(&resign_gaps);
    let (p50, pmax) = p50_max(&pause_gaps);
    println!(
        "{test}: ---- summary ({} s, expiry clock {}) ----",
        run.as_secs(),
        clock_name(clock)
    );
    println!(
        "{test}: faults: {} crashes ({} of the leader), {} pauses ({} of the leader), {} cuts ({} of the leader), {} resignations ({} more found no longer leading)",
        count(FaultKind::Crash),
        count_leader(FaultKind::Crash),
        count(FaultKind::Pause),
        count_leader(FaultKind::Pause),
        count(FaultKind::Cut),
        count_leader(FaultKind::Cut),
        count(FaultKind::Resign),
        not_leading
    );
    println!(
        "{test}: failover after a crash of the leader: n={} p50={c50} ms max={cmax} ms (bound {crash_bound} ms) {crash_gaps:?}",
        crash_gaps.len()
    );
    println!(
        "{test}: failover after a resignation:      n={} p50={r50} ms max={rmax} ms (bound {resign_bound} ms) {resign_gaps:?}",
        resign_gaps.len()
    );
    if !failed_resign_gaps.is_empty() {
        println!("{test}: failover after a failed resignation: {failed_resign_gaps:?} ms");
    }
    println!(
        "{test}: failover after a pause of the leader (not asserted): n={} p50={p50} ms max={pmax} ms {pause_gaps:?}",
        pause_gaps.len()
    );
    if unmeasured > 0 {
        println!("{test}: {unmeasured} leader faults had no successor before the end of the run");
    }
    println!(
        "{test}: a leader existed {:.1}% of the time; {} grants, {} leadership changes ({} to another instance)",
        100.0 * covered.as_secs_f64() / run.as_secs_f64(),
        intervals.len(),
        intervals.len().saturating_sub(1),
        handovers
    );
    let per_s = |n: u64, t: Duration| n as f64 / t.as_secs_f64().max(0.001);
    println!(
        "{test}: requests/s sent: leader {:.2} ({leader_requests} over {:.1} s leading), follower {:.2} ({follower_requests} over {:.1} s following or campaigning)",
        per_s(leader_requests, leader_time),
        leader_time.as_secs_f64(),
        per_s(follower_requests, follower_time),
        follower_time.as_secs_f64()
    );
    println!(
        "{test}: requests/s attempted, with those refused by cuts: leader {:.2} ({leader_refused} refused), follower {:.2} ({follower_refused} refused)",
        per_s(leader_requests + leader_refused, leader_time),
        per_s(follower_requests + follower_refused, follower_time)
    );
    println!("{test}: step errors by kind: {errors:?}");

    if intervals.is_empty() {
        problems.push("nobody was ever elected".into());
    }
    assert!(
        problems.is_empty(),
        "{test}: {} problem(s); replay the plan with S3LEASE_SEED={seed}:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

//! `run` and `elect`: hold the lock (through the elector, which renews it)
//! while a command runs, and stop the command when the lock is lost.
//!
//! The order on loss is the point: leadership ends at the renew deadline,
//! half the ttl after the last successful renew was sent, so the command
//! gets SIGTERM (and SIGKILL `--kill-after` later) while the lease still
//! has the other half of its ttl to run, before anyone else can be granted
//! the key. The deadline is judged on this process's monotonic clock by the
//! host elector's watchdog (`Elector::leading_until`), never by whether a
//! step has returned: a renew that hangs on a silent network cannot keep
//! the command running past it. Whatever a command that outlives that
//! writes is still refused by fenced writes: its token is lower than the
//! next holder's.
//!
//! "The command" is its whole process group (see `tree`): signals go to
//! the group, and the lock is released only once no process of it is left.

use crate::commands::held_by;
use crate::duration::show;
use crate::exit::{describe_text, Failure, HELD, INTERNAL, LOST, STORE};
use crate::json;
use crate::probe::Probe;
use crate::signals;
use crate::tree::{CommandGroup, GroupState};
use s3_lease_host::blocking::Elector;
use s3_lease_host::{ElectionEvent, ElectorStats, LeaseRecord as Lease, Role, StopReason};
use std::process::Command;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often we look at the command, the elector and the signals.
const POLL: Duration = Duration::from_millis(25);
/// How often a waiting `run` says who holds the lock.
const WAIT_LINE_EVERY: Duration = Duration::from_secs(5);
/// When a waiting `run` first says it.
pub const FIRST_WAIT_LINE: Duration = Duration::from_millis(500);
/// How long a giving-up `run` waits for the read that classifies the
/// last failure (see `probe`).
const SETTLE: Duration = Duration::from_secs(1);
/// How long a campaign given up waits for the elector to resign.
const END_CAMPAIGN_WAIT: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Once: wait, run, exit (`run`).
    Once,
    /// Every term: run while leading, campaign again after losing (`elect`).
    EveryTerm,
}

pub struct Supervision {
    pub key: String,
    pub command: Vec<String>,
    /// Extra environment for the command (nested `s3-lease` calls find the bucket).
    pub env: Vec<(String, String)>,
    pub kill_after: Duration,
    /// `None`: wait as long as it takes.
    pub wait: Option<Duration>,
    pub quiet: bool,
    /// Our holder id, for machine-readable log lines.
    pub holder: String,
    pub mode: Mode,
    pub signals: Receiver<i32>,
    /// Set to why we are about to exit on an error retrying cannot fix,
    /// for `--serve`'s `/healthz`.
    pub fatal: Arc<Mutex<Option<String>>>,
}

impl Supervision {
    /// A progress line about this key (see `log`); `token` when known.
    fn say(&self, event: &str, token: Option<u64>, line: impl AsRef<str>) {
        if !self.quiet {
            let about = crate::log::About {
                key: &self.key,
                holder: Some(&self.holder),
                token,
            };
            crate::log::say(event, &about, line.as_ref());
        }
    }

    /// Ends on an error retrying cannot fix: `/healthz` says why first.
    fn fatal(&self, failure: Failure) -> Failure {
        *self.fatal.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!(
            "{} (s3-lease exits with {})",
            failure.message, failure.code
        ));
        failure
    }
}

enum Campaign {
    Won(Lease),
    Signalled(i32),
}

enum Term {
    /// The command ended by itself while we held the lock.
    Exited(i32),
    /// The lock was lost; the command was stopped. A lease the elector won
    /// again meanwhile (`elect` only) starts the next term.
    Lost {
        reason: String,
        regained: Option<Lease>,
    },
    Signalled(i32, i32),
}

/// Runs the supervision to its end; the exit code on success.
pub fn supervise(elector: Elector, s: Supervision, mut probe: Probe) -> Result<i32, Failure> {
    let mut elector = Some(elector);
    let mut won: Option<Lease> = None;
    loop {
        let lease = match won.take() {
            Some(lease) => lease,
            None => match campaign(elector.as_mut(), &s, &mut probe) {
                Ok(Campaign::Won(lease)) => lease,
                Ok(Campaign::Signalled(signal)) => {
                    s.say(
                        "gave-up",
                        None,
                        format!("{} while waiting; giving up", signals::name(signal)),
                    );
                    end_campaign(&mut elector);
                    return Ok(128 + signal);
                }
                Err(failure) => {
                    end_campaign(&mut elector);
                    return Err(failure);
                }
            },
        };
        // Leadership may have ended between the win and now (a stalled
        // process): never start the command outside it.
        let leading_until = elector
            .as_ref()
            .and_then(Elector::leading_until)
            .filter(|until| Instant::now() < *until);
        let Some(leading_until) = leading_until else {
            s.say(
                "ended-before-start",
                Some(lease.token),
                format!(
                    "leadership of {} ended before the command could start; campaigning again",
                    s.key
                ),
            );
            continue;
        };
        s.say(
            "acquired",
            Some(lease.token),
            format!(
                "acquired {} with fencing token {} (holder {})",
                s.key, lease.token, lease.holder_id
            ),
        );
        let held = (leading_until, s.kill_after);
        let mut group = spawn_group(&s.command, &s.env, &s.key, &lease, held, |w| {
            s.say("warning", Some(lease.token), w)
        })?;
        match watch(&mut group, &mut elector, &s, leading_until) {
            Term::Exited(code) => {
                resign(&mut elector);
                s.say(
                    "released",
                    Some(lease.token),
                    format!("released {} (token {})", s.key, lease.token),
                );
                return Ok(code);
            }
            Term::Signalled(signal, code) => {
                resign(&mut elector);
                s.say(
                    "released",
                    Some(lease.token),
                    format!(
                        "the command ended after {}; released {}",
                        signals::name(signal),
                        s.key
                    ),
                );
                return Ok(code);
            }
            Term::Lost { reason, regained } => match s.mode {
                Mode::Once => {
                    return Err(Failure::new(
                        LOST,
                        format!(
                            "lost the lock on {} (token {}): {reason}; the command was stopped",
                            s.key, lease.token
                        ),
                    ))
                }
                Mode::EveryTerm => {
                    s.say(
                        "lost",
                        Some(lease.token),
                        format!("lost leadership of {} ({reason}); campaigning again", s.key),
                    );
                    won = regained;
                }
            },
        }
    }
}

/// Ends a campaign given up before leading: resigns, so a term won by a
/// step still under way is released, but waits for that at most
/// `END_CAMPAIGN_WAIT`: a step stuck on a silent network would hold up the
/// exit until its request timed out. (Whatever it wins then is not
/// released: it runs out on its own.)
fn end_campaign(elector: &mut Option<Elector>) {
    if let Some(e) = elector.take() {
        let (done, resigned) = std::sync::mpsc::channel();
        let resigning = std::thread::Builder::new()
            .name("s3-lease-resign".into())
            .spawn(move || {
                let _ = e.resign();
                let _ = done.send(());
            });
        if resigning.is_ok() {
            let _ = resigned.recv_timeout(END_CAMPAIGN_WAIT);
        }
    }
}

fn resign(elector: &mut Option<Elector>) {
    if let Some(e) = elector.take() {
        // A failed release leaves the lease to expire: nothing to add.
        let _ = e.resign();
    }
}

/// Waits for leadership, one line on stderr every few seconds. Ends at
/// once on an error retrying cannot fix, and at `--wait` (after at least
/// one attempt: `--wait 0` is one attempt).
fn campaign(
    elector: Option<&mut Elector>,
    s: &Supervision,
    probe: &mut Probe,
) -> Result<Campaign, Failure> {
    let elector = elector.ok_or_else(|| Failure::new(INTERNAL, "no elector"))?;
    let started = Instant::now();
    // A wait too long for the clock to count is a wait for ever.
    let deadline = s.wait.and_then(|w| started.checked_add(w));
    let mut next_line = started + FIRST_WAIT_LINE;
    loop {
        // Read before the events: a step counted here has already sent
        // its events.
        let stats = elector.stats();
        while let Some(event) = elector.try_event() {
            match event {
                ElectionEvent::BecameLeader(lease) => return Ok(Campaign::Won(lease)),
                ElectionEvent::Failed(why) => return Err(Failure::new(INTERNAL, why)),
                _ => {}
            }
        }
        if !elector.is_running() {
            return Err(Failure::new(INTERNAL, "the elector stopped"));
        }
        // Still leading, with no event to say so: the last term's command
        // was ended at a deadline this process saw pass before it saw the
        // elector renew (it was stopped or starved). The next term is now.
        if let Role::Leader(lease) = elector.role() {
            if elector
                .leading_until()
                .is_some_and(|until| Instant::now() < until)
            {
                return Ok(Campaign::Won(lease));
            }
        }
        if let Some(failure) = probe.check(stats.failed_steps) {
            return Err(s.fatal(failure));
        }
        if let Ok(signal) = s.signals.try_recv() {
            return Ok(Campaign::Signalled(signal));
        }
        let now = Instant::now();
        // `--wait 0` is one attempt: wait for it to complete. A longer wait
        // ends on time, whatever the attempt under way is doing.
        let one_attempt = s.wait.is_some_and(|w| w.is_zero());
        if deadline.is_some_and(|d| now >= d) && (stats.steps > 0 || !one_attempt) {
            return Err(give_up(elector, s, probe, &stats, started));
        }
        if now >= next_line {
            next_line = now + WAIT_LINE_EVERY;
            s.say(
                "waiting",
                None,
                format!(
                    "waiting for {} ({} so far): {}",
                    s.key,
                    show(started.elapsed()),
                    who_holds(elector)
                ),
            );
        }
        let nap = match deadline {
            Some(d) if d > now => POLL.min(d - now),
            _ => POLL,
        };
        match elector.recv_event_timeout(nap) {
            Some(ElectionEvent::BecameLeader(lease)) => return Ok(Campaign::Won(lease)),
            Some(ElectionEvent::Failed(why)) => return Err(Failure::new(INTERNAL, why)),
            _ => {}
        }
    }
}

/// `--wait` ran out: 75 if the last read saw the key held by someone
/// else; else the store failed (69), or the error the last failure was,
/// if retrying cannot fix it.
fn give_up(
    elector: &Elector,
    s: &Supervision,
    probe: &mut Probe,
    stats: &ElectorStats,
    started: Instant,
) -> Failure {
    let waited = show(started.elapsed());
    if stats.steps == 0 {
        return Failure::new(
            STORE,
            format!(
                "gave up on {} after {waited}: the store has not answered the first attempt",
                s.key
            ),
        );
    }
    if let Role::Follower(Some(state)) = elector.role() {
        if state.live {
            return Failure::new(
                HELD,
                format!(
                    "{} is still held after {waited}: {}, can expire in {}",
                    s.key,
                    held_by(&state),
                    show(state.expires_in)
                ),
            );
        }
    }
    match elector.last_error() {
        Some(error) => {
            if let Some(failure) = probe.settle(stats.failed_steps, SETTLE) {
                return s.fatal(failure);
            }
            Failure::new(
                STORE,
                format!(
                    "gave up on {} after {waited}: the store did not answer usefully ({}), and no read saw it held",
                    s.key,
                    describe_text(&error)
                ),
            )
        }
        None => Failure::new(
            HELD,
            format!(
                "{} is still held after {waited}: {}",
                s.key,
                who_holds(elector)
            ),
        ),
    }
}

fn who_holds(elector: &Elector) -> String {
    match elector.role() {
        Role::Follower(Some(state)) if state.live => format!(
            "{}, can expire in {}",
            held_by(&state),
            show(state.expires_in)
        ),
        Role::Follower(_) => "held, holder not read yet".into(),
        Role::Candidate => match elector.last_error() {
            Some(e) => format!("the last attempt failed: {}", describe_text(&e)),
            None => "not acquired yet".into(),
        },
        Role::Leader(lease) => format!("acquired (token {})", lease.token),
        _ => "not acquired yet".into(),
    }
}

/// Starts the command, with the lease in its environment, as the leader
/// of a process group of its own, which the guardian ends at `held_until`
/// unless fed a later deadline (SIGKILL `kill_after` after SIGTERM).
pub fn spawn_group(
    command: &[String],
    env: &[(String, String)],
    key: &str,
    lease: &Lease,
    (held_until, kill_after): (Instant, Duration),
    warn: impl Fn(&str),
) -> Result<CommandGroup, Failure> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| Failure::new(crate::exit::USAGE, "no command to run"))?;
    let mut c = Command::new(program);
    c.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("S3LEASE_KEY", key)
        .env("S3LEASE_TOKEN", lease.token.to_string())
        .env("S3LEASE_HOLDER", &lease.holder_id)
        .env("S3LEASE_LEASE", json::lease(lease).to_string());
    CommandGroup::spawn(c, held_until, kill_after, warn).map_err(|e| {
        // The shell's codes: 127 not found, 126 found but not runnable.
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        Failure::new(code, format!("cannot start {program:?}: {e}"))
    })
}

/// How a supervised group is being stopped, shared by `run`, `elect` and
/// `run --limit`: SIGTERM to the group, then SIGKILL `kill_after` later,
/// and a line once the command itself has exited while others of its
/// group are still running.
pub struct Stopping {
    since: Option<Instant>,
    killed: bool,
    leftovers_said: bool,
}

impl Stopping {
    pub fn new() -> Self {
        Stopping {
            since: None,
            killed: false,
            leftovers_said: false,
        }
    }

    /// Whether `begin` was called.
    pub fn started(&self) -> bool {
        self.since.is_some()
    }

    /// Starts stopping the group (once); the guardian is told, so that
    /// the SIGKILL comes on time even if we cannot send it.
    pub fn begin(&mut self, group: &mut CommandGroup) {
        if self.since.is_none() {
            group.signal(libc::SIGTERM);
            group.ending();
            self.since = Some(Instant::now());
        }
    }

    /// SIGKILL once `kill_after` has passed since `begin`; true when sent now.
    pub fn escalate(&mut self, group: &CommandGroup, kill_after: Duration) -> bool {
        match self.since {
            Some(at) if !self.killed && at.elapsed() >= kill_after => {
                group.signal(libc::SIGKILL);
                self.killed = true;
                true
            }
            _ => false,
        }
    }

    /// True the first time the command has exited with others left.
    pub fn first_leftovers(&mut self, state: GroupState) -> bool {
        if matches!(state, GroupState::Leftovers(_)) && !self.leftovers_said {
            self.leftovers_said = true;
            return true;
        }
        false
    }
}

/// The line for a command that exited while others of its group run on.
pub fn leftovers_line(status: i32, pid: i32) -> String {
    format!(
        "the command exited ({status}); waiting for the processes it left in its process group {pid} (the lock is held until none is left)"
    )
}

/// Watches the command until no process of its group is left, stopping
/// the group if the lock is lost. `held_until`: the deadline the guardian
/// was given with the group.
fn watch(
    group: &mut CommandGroup,
    elector: &mut Option<Elector>,
    s: &Supervision,
    mut held_until: Instant,
) -> Term {
    let mut lost: Option<String> = None;
    let mut stopping = Stopping::new();
    let mut regained = None;
    let mut forwarded = None;
    loop {
        let state = group.poll();
        // The deadline passed before we saw it extended (we were stopped
        // or starved): the guardian ends the group, and the lock counts as
        // lost, even if the elector has won a new term since.
        let lapsed = Instant::now() >= held_until;
        if let GroupState::Gone(code) = state {
            if lost.is_none() && lapsed {
                lost = Some(LAPSED.into());
            }
            return match (lost, forwarded) {
                (Some(reason), _) => Term::Lost { reason, regained },
                (None, Some(signal)) => Term::Signalled(signal, code),
                (None, None) => Term::Exited(code),
            };
        }
        if let GroupState::Leftovers(code) = state {
            if stopping.first_leftovers(state) {
                s.say("waiting", None, leftovers_line(code, group.pid()));
            }
        }
        if let Ok(signal) = s.signals.try_recv() {
            s.say(
                "signal-forwarded",
                None,
                format!(
                    "forwarding {} to the command's process group",
                    signals::name(signal)
                ),
            );
            group.signal(signal);
            forwarded = Some(signal);
        }
        // Read before the events: once leadership has ended, the event
        // that says why is already queued.
        let leading_until = elector.as_ref().and_then(Elector::leading_until);
        let ended = lapsed
            || (elector.is_some() && leading_until.is_none_or(|until| Instant::now() >= until));
        if let (Some(until), false, None) = (leading_until, ended, &lost) {
            // The guardian's deadline: it ends the group if we cannot.
            if until > held_until {
                held_until = until;
                group.held_until(until);
            }
        }
        let event = match elector.as_mut() {
            Some(e) => match e.try_event() {
                Some(event) => Some(event),
                None if !e.is_running() && lost.is_none() => {
                    Some(ElectionEvent::Failed("the elector stopped".into()))
                }
                None => None,
            },
            None => None,
        };
        match event {
            Some(ElectionEvent::BecameLeader(lease)) if lost.is_some() => regained = Some(lease),
            Some(ElectionEvent::StoppedLeading(reason)) if lost.is_none() => {
                lost = Some(stop_reason(reason).into())
            }
            Some(ElectionEvent::Failed(why)) if lost.is_none() => lost = Some(why),
            _ if ended && lost.is_none() => {
                lost = Some(stop_reason(StopReason::RenewDeadline).into())
            }
            _ => {}
        }
        if let Some(reason) = &lost {
            if !stopping.started() {
                s.say("lost", None, format!(
                    "lost the lock on {} ({reason}): sending SIGTERM to the command's process group {}, SIGKILL in {}",
                    s.key,
                    group.pid(),
                    show(s.kill_after)
                ));
                // No release here, even for `run`: a release that landed
                // now would let the next holder start while this command
                // is still stopping. The elector is resigned once the
                // group is gone (when `supervise` drops it).
                stopping.begin(group);
                forwarded = Some(libc::SIGTERM);
            }
            if stopping.escalate(group, s.kill_after) {
                s.say(
                    "killed",
                    None,
                    "the command's process group outlived --kill-after: SIGKILL",
                );
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Why a command that ended while we could not look was lost.
pub const LAPSED: &str = "the renew deadline passed while s3-lease could not act (stopped or starved); the guardian ends the command's process group at that deadline";

fn stop_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::RenewDeadline => "no renew succeeded before the renew deadline",
        StopReason::Lost => "a renew found it taken",
        StopReason::Resigned => "resigned",
        _ => "it ended",
    }
}

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

use crate::duration::show;
use crate::exit::{Failure, HELD, INTERNAL, LOST};
use crate::json;
use crate::signals;
use s3_lease_host::bindings::{Lease, Role, StopReason};
use s3_lease_host::{ElectionEvent, Elector};
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

/// How often we look at the command, the elector and the signals.
const POLL: Duration = Duration::from_millis(25);
/// How often a waiting `run` says who holds the lock.
const WAIT_LINE_EVERY: Duration = Duration::from_secs(5);

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
    /// The elector's retry period: the first attempt takes at most this.
    pub retry_period: Duration,
    pub quiet: bool,
    /// Our holder id, for machine-readable log lines.
    pub holder: String,
    pub mode: Mode,
    pub signals: Receiver<i32>,
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
}

enum Campaign {
    Won(Lease),
    Signalled(i32),
}

enum Term {
    /// The command ended by itself while we held the lock.
    Exited(ExitStatus),
    /// The lock was lost; the command was stopped. A lease the elector won
    /// again meanwhile (`elect` only) starts the next term.
    Lost {
        reason: String,
        regained: Option<Lease>,
    },
    Signalled(i32, ExitStatus),
}

/// Runs the supervision to its end; the exit code on success.
pub fn supervise(elector: Elector, s: Supervision) -> Result<i32, Failure> {
    let mut elector = Some(elector);
    let started = Instant::now();
    let mut won: Option<Lease> = None;
    loop {
        let lease = match won.take() {
            Some(lease) => lease,
            None => match campaign(elector.as_ref(), &s, started) {
                Ok(Campaign::Won(lease)) => lease,
                Ok(Campaign::Signalled(signal)) => {
                    s.say(
                        "gave-up",
                        None,
                        format!("{} while waiting; giving up", signals::name(signal)),
                    );
                    resign(&mut elector);
                    return Ok(128 + signal);
                }
                Err(failure) => {
                    resign(&mut elector);
                    return Err(failure);
                }
            },
        };
        // Leadership may have ended between the win and now (a stalled
        // process): never start the command outside it.
        if elector.as_ref().and_then(Elector::leading_until).is_none() {
            s.say(
                "ended-before-start",
                Some(lease.token),
                format!(
                    "leadership of {} ended before the command could start; campaigning again",
                    s.key
                ),
            );
            continue;
        }
        s.say(
            "acquired",
            Some(lease.token),
            format!(
                "acquired {} with fencing token {} (holder {})",
                s.key, lease.token, lease.holder_id
            ),
        );
        let mut child = spawn(&s, &lease)?;
        match watch(&mut child, &mut elector, &s) {
            Term::Exited(status) => {
                resign(&mut elector);
                s.say(
                    "released",
                    Some(lease.token),
                    format!("released {} (token {})", s.key, lease.token),
                );
                return Ok(exit_code(status));
            }
            Term::Signalled(signal, status) => {
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
                return Ok(exit_code(status));
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

fn resign(elector: &mut Option<Elector>) {
    if let Some(e) = elector.take() {
        // A failed release leaves the lease to expire: nothing to add.
        let _ = e.resign();
    }
}

/// Waits for leadership, one line on stderr every few seconds.
fn campaign(
    elector: Option<&Elector>,
    s: &Supervision,
    started: Instant,
) -> Result<Campaign, Failure> {
    let elector = elector.ok_or_else(|| Failure::new(INTERNAL, "no elector"))?;
    // The first attempt always completes, so `--wait 0` means "try once".
    let deadline = s.wait.map(|w| started + w.max(s.retry_period));
    let mut next_line = Instant::now() + Duration::from_millis(500);
    loop {
        match elector.events().recv_timeout(POLL) {
            Ok(ElectionEvent::BecameLeader(lease)) => return Ok(Campaign::Won(lease)),
            Ok(ElectionEvent::Failed(why)) => return Err(Failure::new(INTERNAL, why)),
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Failure::new(INTERNAL, "the elector stopped"))
            }
        }
        if let Ok(signal) = s.signals.try_recv() {
            return Ok(Campaign::Signalled(signal));
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return Err(Failure::new(
                HELD,
                format!(
                    "{} is still held after {}: {}",
                    s.key,
                    show(started.elapsed()),
                    who_holds(elector)
                ),
            ));
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
    }
}

fn who_holds(elector: &Elector) -> String {
    match elector.role() {
        Role::Follower(Some(state)) if state.live => format!(
            "held by {} with token {}, can expire in {}",
            if state.holder_id.is_empty() {
                "an unnamed holder"
            } else {
                &state.holder_id
            },
            state.token,
            show(Duration::from_millis(state.expires_in_ms))
        ),
        Role::Follower(_) => "held, holder not read yet".into(),
        Role::Candidate => match elector.last_error() {
            Some(e) => format!("the last attempt failed: {e}"),
            None => "not acquired yet".into(),
        },
        Role::Leader(lease) => format!("acquired (token {})", lease.token),
    }
}

fn spawn(s: &Supervision, lease: &Lease) -> Result<Child, Failure> {
    spawn_command(&s.command, &s.env, &s.key, lease)
}

/// Starts the command with the lease in its environment.
pub fn spawn_command(
    command: &[String],
    env: &[(String, String)],
    key: &str,
    lease: &Lease,
) -> Result<Child, Failure> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| Failure::new(crate::exit::USAGE, "no command to run"))?;
    Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("S3LEASE_KEY", key)
        .env("S3LEASE_TOKEN", lease.token.to_string())
        .env("S3LEASE_HOLDER", &lease.holder_id)
        .env("S3LEASE_LEASE", json::lease(lease).to_string())
        .spawn()
        .map_err(|e| {
            // The shell's codes: 127 not found, 126 found but not runnable.
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            Failure::new(code, format!("cannot start {program:?}: {e}"))
        })
}

/// Watches the command until it ends, stopping it if the lock is lost.
fn watch(child: &mut Child, elector: &mut Option<Elector>, s: &Supervision) -> Term {
    let mut lost: Option<(String, Instant)> = None;
    let mut terminated = false;
    let mut killed = false;
    let mut regained = None;
    let mut forwarded = None;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                return match (lost, forwarded) {
                    (Some((reason, _)), _) => Term::Lost { reason, regained },
                    (None, Some(signal)) => Term::Signalled(signal, status),
                    (None, None) => Term::Exited(status),
                }
            }
            Ok(None) => {}
            Err(e) => {
                s.say(
                    "command-error",
                    None,
                    format!("cannot wait for the command: {e}; killing it"),
                );
                let _ = child.kill();
            }
        }
        if let Ok(signal) = s.signals.try_recv() {
            s.say(
                "signal-forwarded",
                None,
                format!("forwarding {} to the command", signals::name(signal)),
            );
            signals::send(child.id(), signal);
            forwarded = Some(signal);
        }
        // Read before the events: once leadership has ended, the event
        // that says why is already queued.
        let ended = elector.as_ref().is_some_and(|e| {
            e.leading_until()
                .is_none_or(|until| Instant::now() >= until)
        });
        let event = match elector.as_ref().map(|e| e.events().try_recv()) {
            Some(Ok(event)) => Some(event),
            Some(Err(TryRecvError::Disconnected)) if lost.is_none() => {
                Some(ElectionEvent::Failed("the elector stopped".into()))
            }
            _ => None,
        };
        match event {
            Some(ElectionEvent::BecameLeader(lease)) if lost.is_some() => regained = Some(lease),
            Some(ElectionEvent::StoppedLeading(reason)) if lost.is_none() => {
                lost = Some((stop_reason(reason).into(), Instant::now()))
            }
            Some(ElectionEvent::Failed(why)) if lost.is_none() => {
                lost = Some((why, Instant::now()))
            }
            _ if ended && lost.is_none() => {
                lost = Some((
                    stop_reason(StopReason::RenewDeadline).into(),
                    Instant::now(),
                ))
            }
            _ => {}
        }
        if let Some((reason, at)) = &lost {
            if !terminated {
                terminated = true;
                s.say("lost", None, format!(
                    "lost the lock on {} ({reason}): sending SIGTERM to the command (pid {}), SIGKILL in {}",
                    s.key,
                    child.id(),
                    show(s.kill_after)
                ));
                signals::send(child.id(), libc::SIGTERM);
                forwarded = Some(libc::SIGTERM);
                // No release here, even for `run`: a release that landed
                // now would let the next holder start while this command
                // is still stopping. The elector is resigned once the
                // command has exited (when `supervise` drops it).
            }
            if !killed && at.elapsed() >= s.kill_after {
                s.say("killed", None, "the command outlived --kill-after: SIGKILL");
                signals::send(child.id(), libc::SIGKILL);
                killed = true;
            }
        }
        std::thread::sleep(POLL);
    }
}

fn stop_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::RenewDeadline => "no renew succeeded before the renew deadline",
        StopReason::Lost => "a renew found it taken",
        StopReason::Resigned => "resigned",
    }
}

/// The command's status as a shell reports it: 128 + N after signal N.
pub fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(INTERNAL)
}

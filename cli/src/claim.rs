//! `run` and `elect`: hold a claim on KEY while a command runs, and stop
//! the command when the claim is lost. One loop for every claim: wait for
//! it, start the command's process group, watch the deadline and the
//! signals, stop the group on loss, release once the group is gone.
//!
//! A claim is an elector's term (`run`, `elect`; see `leadership`) or a
//! semaphore slot's guard (`run --limit`, `--fair`; see `slot`). What each
//! step means for each is the `Claim` trait; the order is the point and is
//! the same for both: the claim's deadline is half the ttl after the last
//! successful renew was sent, so the command gets SIGTERM (and SIGKILL
//! `--kill-after` later) while the lease still has the other half of its
//! ttl to run, before anyone else can be granted the key. The deadline is
//! judged on the host's clock (which counts the time the machine spent
//! suspended: `s3_lease_host::clock`), never by whether a renew has
//! returned: a renew that hangs on a silent network cannot keep the
//! command running past it. Whatever a command that outlives that writes
//! is still refused by fenced writes: its token is lower than the next
//! holder's.
//!
//! "The command" is its whole process group (see `tree`): signals go to
//! the group, and the claim is released only once no process of it is
//! left. The group's guardian is fed each new deadline, and ends the group
//! at the last one if this process cannot (see `guardian`).

mod group;
pub mod leadership;
pub mod slot;
mod stall;
mod wait_clock;

use crate::duration::show;
use crate::exit::{Failure, LOST};
use crate::signals;
use crate::tree::{CommandGroup, GroupState};
pub(crate) use group::LeaseVar;
use group::{leftovers_line, spawn_group, Stopping};
use s3_lease_host::clock::{self, Clock};
use s3_lease_host::LeaseRecord as Lease;
use stall::{Looks, Stall};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// How often we look at the command, the claim and the signals.
const POLL: Duration = Duration::from_millis(25);

/// What is supervised, whatever the claim.
pub struct Job {
    pub key: String,
    /// Our holder id, for machine-readable log lines.
    pub holder: String,
    pub command: Vec<String>,
    /// Extra environment for the command (nested `s3-lease` calls find the bucket).
    pub env: Vec<(String, String)>,
    pub kill_after: Duration,
    /// How long the claim is held after each successful renew was sent
    /// (half the ttl): its deadline, unless renewed again.
    pub deadline: Duration,
    /// `None`: wait as long as it takes.
    pub wait: Option<Duration>,
    pub quiet: bool,
    pub signals: Receiver<i32>,
}

impl Job {
    /// A progress line about this key (see `log`); `token` when known.
    pub fn say(&self, event: &str, token: Option<u64>, line: impl AsRef<str>) {
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

/// How a wait for the claim ended.
pub enum Waited {
    Granted(Lease),
    Signalled(i32),
}

/// What is held: the words of the lines about it.
#[derive(Clone, Copy)]
pub enum Held {
    /// A lock, through an elector (`run`, `elect`).
    Lock,
    /// One of a semaphore's `limit` slots.
    Slot { limit: u32 },
}

/// A claim on the key, and what each step of the loop means for it.
pub trait Claim {
    fn held(&self) -> Held;
    /// Waits for the claim (a term won again meanwhile comes at once). An
    /// error has already stopped the wait (and left any queue).
    fn wait(&mut self, job: &Job) -> Result<Waited, Failure>;
    /// Stops waiting, on a signal.
    fn give_up(&mut self);
    /// Until when the claim just granted is surely held (on the host's
    /// clock, suspended time counted); `None` (and let go) if it ran out
    /// before the command could start.
    fn start(&mut self) -> Option<clock::Instant>;
    /// While held, each look: feeds the group's guardian the claim's
    /// deadline; why the claim is lost, once it is. `stall`: this look
    /// ends one (a deadline that passed in it is its doing, not the
    /// store's).
    fn keep(&mut self, group: &mut CommandGroup, stall: Option<Stall>) -> Option<String>;
    /// Each look after the loss, while the group is stopping.
    fn while_stopping(&mut self) {}
    /// The group is gone: why the claim was lost before we saw it (the
    /// guardian ended the group at a deadline first), if it was.
    fn lost_unseen(&mut self, stall: Option<Stall>) -> Option<String>;
    /// Lets go, the command having ended by itself: why that failed (the
    /// claim expires on its own then).
    fn release(&mut self) -> Result<(), String>;
    /// After a loss: wait for the claim again (`elect`) rather than end.
    fn again(&self) -> bool;
}

/// How the command's group ended.
enum Ended {
    /// The command ended by itself while we held the claim.
    Exited(i32),
    /// It ended after we forwarded it a signal: (signal, status).
    Signalled(i32, i32),
    /// The claim was lost; the group was stopped.
    Lost(String),
}

/// Runs the supervision to its end; the exit code on success. The claim
/// is dropped when this returns (an elector resigns, a guard lets go).
pub fn supervise(job: Job, mut claim: impl Claim) -> Result<i32, Failure> {
    let held = claim.held();
    loop {
        let (lease, held_until) = match take(&job, &mut claim)? {
            Taken::Held(lease, until) => (lease, until),
            Taken::GaveUp(code) => return Ok(code),
        };
        job.say(
            "acquired",
            Some(lease.token),
            held.acquired(&job.key, &lease),
        );
        let mut group = spawn_group(&job, &lease, held_until)?;
        let (code, signal) = match watch(&job, &mut claim, &mut group) {
            Ended::Exited(code) => (code, None),
            Ended::Signalled(signal, code) => (code, Some(signal)),
            Ended::Lost(reason) if claim.again() => {
                job.say(
                    "lost",
                    Some(lease.token),
                    format!(
                        "lost leadership of {} ({reason}); campaigning again",
                        job.key
                    ),
                );
                continue;
            }
            Ended::Lost(reason) => {
                return Err(Failure::new(
                    LOST,
                    format!(
                        "lost {} (token {}): {reason}; the command was stopped",
                        held.lost(&job.key),
                        lease.token
                    ),
                ))
            }
        };
        let released = claim.release();
        released_line(&job, held, &lease, signal, released);
        return Ok(code);
    }
}

enum Taken {
    Held(Lease, clock::Instant),
    /// A signal ended the wait: the exit code.
    GaveUp(i32),
}

/// Waits until the claim is granted with time left to start the command.
fn take(job: &Job, claim: &mut impl Claim) -> Result<Taken, Failure> {
    loop {
        let lease = match claim.wait(job)? {
            Waited::Granted(lease) => lease,
            Waited::Signalled(signal) => {
                let why = format!("{} while waiting; giving up", signals::name(signal));
                job.say("gave-up", None, why);
                claim.give_up();
                return Ok(Taken::GaveUp(128 + signal));
            }
        };
        // The claim may have ended between the grant and now (a stalled
        // process): never start the command outside it.
        match claim.start() {
            Some(until) => return Ok(Taken::Held(lease, until)),
            None => job.say(
                "ended-before-start",
                Some(lease.token),
                claim.held().ran_out(&job.key),
            ),
        }
    }
}

fn released_line(
    job: &Job,
    held: Held,
    lease: &Lease,
    signal: Option<i32>,
    released: Result<(), String>,
) {
    let token = Some(lease.token);
    let what = held.released(&job.key);
    match (signal, released) {
        (Some(signal), _) => job.say(
            "released",
            token,
            format!(
                "the command ended after {}; released {what}",
                signals::name(signal)
            ),
        ),
        (None, Ok(())) => job.say(
            "released",
            token,
            format!("released {what} (token {})", lease.token),
        ),
        (None, Err(e)) => job.say(
            "release-failed",
            token,
            format!("could not release (it will expire): {e}"),
        ),
    }
}

impl Held {
    fn acquired(self, key: &str, lease: &Lease) -> String {
        let (token, holder) = (lease.token, &lease.holder_id);
        match self {
            Held::Lock => format!("acquired {key} with fencing token {token} (holder {holder})"),
            Held::Slot { limit } => format!(
                "acquired a slot of {key} (limit {limit}) with fencing token {token} (holder {holder})"
            ),
        }
    }

    fn ran_out(self, key: &str) -> String {
        match self {
            Held::Lock => format!(
                "leadership of {key} ended before the command could start; campaigning again"
            ),
            Held::Slot { .. } => {
                format!("the slot of {key} ran out before the command could start; waiting again")
            }
        }
    }

    /// What a loss names: `the lock on KEY`.
    fn lost(self, key: &str) -> String {
        match self {
            Held::Lock => format!("the lock on {key}"),
            Held::Slot { .. } => format!("the slot of {key}"),
        }
    }

    /// What a release names: `KEY`.
    fn released(self, key: &str) -> String {
        match self {
            Held::Lock => key.to_string(),
            Held::Slot { .. } => format!("the slot of {key}"),
        }
    }
}

/// Watches the command until no process of its group is left, stopping
/// the group once the claim is lost.
fn watch(job: &Job, claim: &mut impl Claim, group: &mut CommandGroup) -> Ended {
    let mut lost: Option<String> = None;
    let mut stopping = Stopping::new();
    let mut forwarded = None;
    signals::take_continued();
    let mut looks = Looks::new(Clock::system(), job.deadline);
    loop {
        let state = group.poll();
        let stall = looks.look(signals::take_continued());
        if let GroupState::Gone(code) = state {
            if lost.is_none() {
                lost = claim.lost_unseen(stall);
            }
            return match (lost, forwarded) {
                (Some(reason), _) => Ended::Lost(reason),
                (None, Some(signal)) => Ended::Signalled(signal, code),
                (None, None) => Ended::Exited(code),
            };
        }
        if let GroupState::Leftovers(code) = state {
            if stopping.first_leftovers(state) {
                job.say("waiting", None, leftovers_line(code, group.pid()));
            }
        }
        if let Ok(signal) = job.signals.try_recv() {
            forward(job, group, signal);
            forwarded = Some(signal);
        }
        match &lost {
            Some(_) => claim.while_stopping(),
            None => {
                lost = claim.keep(group, stall);
                if let Some(reason) = &lost {
                    // Act first: the line is said after the SIGTERM.
                    stopping.begin(group);
                    stop_line(job, claim.held(), group, reason);
                }
            }
        }
        if stopping.escalate(group, job.kill_after) {
            job.say(
                "killed",
                None,
                "the command's process group outlived --kill-after: SIGKILL",
            );
        }
        std::thread::sleep(POLL);
    }
}

fn forward(job: &Job, group: &CommandGroup, signal: i32) {
    group.signal(signal);
    job.say(
        "signal-forwarded",
        None,
        format!(
            "forwarded {} to the command's process group",
            signals::name(signal)
        ),
    );
}

/// The line on loss, once SIGTERM is sent. No release here: a release
/// that landed now would let the next holder start while this command is
/// still stopping. The claim is released once the group is gone (or
/// dropped with it).
fn stop_line(job: &Job, held: Held, group: &CommandGroup, reason: &str) {
    job.say(
        "lost",
        None,
        format!(
            "lost {} ({reason}): sent SIGTERM to the command's process group {}, SIGKILL in {}",
            held.lost(&job.key),
            group.pid(),
            show(job.kill_after)
        ),
    );
}

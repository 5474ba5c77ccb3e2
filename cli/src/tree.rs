//! The command's whole process tree, held under the lock: not only the
//! process `run` and `elect` start, but everything it starts in turn.
//!
//! - The command leads a process group of its own; every signal (a
//!   forwarded SIGINT, SIGTERM or SIGHUP, the SIGTERM and SIGKILL on loss)
//!   goes to the whole group, so `sh -c 'job; other'` stops with its shell.
//! - The command counts as stopped only once no process of its group is
//!   left, and only then is the lock released. On Linux this process is a
//!   child subreaper: a grandchild whose parent exits (a double fork) is
//!   reparented to us, not to init, so we reap it and the group can empty
//!   even where PID 1 reaps nothing (a container's).
//! - The command ends with the lock, even if we cannot act: a guardian
//!   process (this binary again, in a process group of its own, so a
//!   terminal's Ctrl-C or Ctrl-Z, or a `kill` of our group, does not reach
//!   it) holds the read end of a pipe whose write end only we hold. We
//!   feed it each new deadline (until when the lock is surely held, on the
//!   system's monotonic clock); at a deadline not extended in time, it
//!   sends the group SIGTERM, then SIGKILL the kill-after grace later, on
//!   its own clock (`s3_lease_keep::supervision` decides when). So a
//!   supervisor that is stopped (SIGSTOP, Ctrl-Z), starved or wedged
//!   cannot keep the command running past the lock. If we die in any
//!   way, SIGKILL included, the pipe closes and the guardian kills the
//!   group with SIGKILL at once. When the group has emptied on its own, we
//!   tell it so and it exits quietly.
//! - Ctrl-Z stops the command with us: SIGTSTP to us is passed to the
//!   group before we stop, and SIGCONT to us resumes it (see `signals`).
//!   While we are stopped the lock is not renewed, so the guardian ends
//!   the group at the deadline, as above.
//!
//! What escapes: a process that leaves the group on purpose (`setsid`,
//! `setpgid`: a daemon detaching itself). Only a cgroup (systemd's
//! `KillMode=control-group`) holds those.

use rustix::io::Errno;
use rustix::process::{self, Pid, Signal, WaitOptions};
use s3_lease_keep::supervision::{Act, Switch, Why};
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The first argument that makes this binary a guardian (see `guard`).
pub const GUARDIAN_ARG: &str = "__s3-lease-guardian";

/// A command running in a process group of its own.
pub struct CommandGroup {
    /// The command's pid, which is also its group's id.
    leader: Pid,
    /// The command's own status, as a shell gives it, once reaped.
    status: Option<i32>,
    /// `None` once the group is gone (or if no guardian could start).
    guardian: Option<Guardian>,
}

/// Where the group stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    /// The command itself is still running.
    Running,
    /// The command exited with this status; other processes of its group
    /// are still running.
    Leftovers(i32),
    /// The command exited with this status and no process of its group
    /// is left.
    Gone(i32),
}

impl CommandGroup {
    /// Starts `command` (program, arguments and environment already set)
    /// as the leader of a new process group, with a guardian watching us
    /// that ends the group at `held_until` unless fed a later deadline
    /// (see `held_until`), SIGKILL `kill_after` after its SIGTERM. A
    /// guardian that cannot start is a warning, passed to `warn`.
    pub fn spawn(
        mut command: Command,
        held_until: Instant,
        kill_after: Duration,
        warn: impl Fn(&str),
    ) -> std::io::Result<CommandGroup> {
        become_subreaper();
        let mut guardian = match Guardian::start(kill_after) {
            Ok(guardian) => Some(guardian),
            Err(e) => {
                warn(&format!(
                    "warning: cannot start the guardian process ({e}): if s3-lease is killed or stopped, the command's processes keep running"
                ));
                None
            }
        };
        let child = command.process_group(0).spawn()?;
        let leader = pid_of(&child);
        if let Some(g) = guardian.as_mut() {
            if g.watch(leader, held_until).is_err() {
                warn("warning: the guardian process is gone: if s3-lease is killed or stopped, the command's processes keep running");
                guardian = None;
            }
        }
        RUNNING_GROUP.store(leader.as_raw_pid(), Ordering::SeqCst);
        // The std handle is not kept: we reap the leader ourselves, with
        // the rest of its group (see `poll`).
        drop(child);
        Ok(CommandGroup {
            leader,
            status: None,
            guardian,
        })
    }

    /// The lock is surely held until `until`: the guardian lets the group
    /// run until then (a deadline already sent is not sent again).
    pub fn held_until(&mut self, until: Instant) {
        if let Some(g) = self.guardian.as_mut() {
            g.feed(until);
        }
    }

    /// We are ending the group ourselves (SIGTERM sent now, on loss): the
    /// guardian sends the SIGKILL at the end of the grace if we cannot.
    pub fn ending(&mut self) {
        if let Some(g) = self.guardian.as_mut() {
            g.ending();
        }
    }

    /// The command's pid (and its group's id).
    pub fn pid(&self) -> i32 {
        self.leader.as_raw_pid()
    }

    /// Sends `signal` to every process of the group. After SIGTERM, SIGINT
    /// or SIGHUP, a SIGCONT too, so that a stopped process sees it.
    pub fn signal(&self, signal: i32) {
        let Some(sig) = Signal::from_named_raw(signal) else {
            return;
        };
        // ESRCH (nobody left) and EPERM (a setuid member) change nothing
        // for us: `poll` judges whether anyone is left.
        let _ = process::kill_process_group(self.leader, sig);
        if sig != Signal::KILL && sig != Signal::CONT {
            let _ = process::kill_process_group(self.leader, Signal::CONT);
        }
    }

    /// Reaps what has exited in the group and says where it stands.
    pub fn poll(&mut self) -> GroupState {
        loop {
            match process::waitpgid(self.leader, WaitOptions::NOHANG) {
                Ok(Some((pid, status))) => {
                    if pid == self.leader {
                        self.status = Some(shell_status(status));
                    }
                }
                Err(Errno::INTR) => {}
                // None: nothing new; ECHILD: no child of ours left in it.
                _ => break,
            }
        }
        let Some(status) = self.status else {
            return GroupState::Running;
        };
        match process::test_kill_process_group(self.leader) {
            Err(Errno::SRCH) => {
                let _ = RUNNING_GROUP.compare_exchange(
                    self.leader.as_raw_pid(),
                    0,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                );
                if let Some(guardian) = self.guardian.take() {
                    guardian.release();
                }
                GroupState::Gone(status)
            }
            _ => GroupState::Leftovers(status),
        }
    }
}

/// `128 + N` for a process signal N ended, as a shell says it.
fn shell_status(status: process::WaitStatus) -> i32 {
    status
        .exit_status()
        .or_else(|| status.terminating_signal().map(|signal| 128 + signal))
        .unwrap_or(crate::exit::INTERNAL)
}

fn pid_of(child: &Child) -> Pid {
    Pid::from_child(child)
}

/// On Linux, orphans of the command are reparented to us (see the module
/// comment). Elsewhere they go to init, still in the group, and `poll`
/// still sees them until they exit.
fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        let _ = process::set_child_subreaper(Some(process::getpid()));
    }
}

/// The group of the command running now (0: none), for the signal
/// thread: Ctrl-Z stops it with us, SIGCONT resumes it (see `signals`).
static RUNNING_GROUP: AtomicI32 = AtomicI32::new(0);

/// Sends `signal` to the group of the command running now, if any.
pub fn signal_running_group(signal: i32) {
    let (Some(group), Some(signal)) = (
        Pid::from_raw(RUNNING_GROUP.load(Ordering::SeqCst)),
        Signal::from_named_raw(signal),
    ) else {
        return;
    };
    let _ = process::kill_process_group(group, signal);
}

/// Now on the system's monotonic clock, in ms: the clock the guardian and
/// we share (an `Instant` means nothing to another process).
fn monotonic_ms() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let millis = u64::try_from(t.tv_nsec).unwrap_or(0) / 1_000_000;
    secs.saturating_mul(1_000).saturating_add(millis)
}

/// `at` on the monotonic clock in ms; rounded down (earlier is safe).
fn as_monotonic_ms(at: Instant) -> u64 {
    let left = at.saturating_duration_since(Instant::now());
    monotonic_ms().saturating_add(u64::try_from(left.as_millis()).unwrap_or(u64::MAX))
}

/// The guardian process, from our side: the write end of its pipe.
/// Lines: the group's pid; `until MS` (a new deadline); `ending MS` (we
/// sent SIGTERM ourselves at MS); `done` (the group is gone).
struct Guardian {
    child: Child,
    pipe: ChildStdin,
    /// The last deadline sent.
    fed: Option<u64>,
}

impl Guardian {
    fn start(kill_after: Duration) -> std::io::Result<Guardian> {
        let exe = std::env::current_exe()?;
        let kill_after_ms = u64::try_from(kill_after.as_millis()).unwrap_or(u64::MAX);
        let mut child = Command::new(exe)
            .arg(GUARDIAN_ARG)
            .arg(kill_after_ms.to_string())
            // Its own group: signals meant for ours (a terminal's Ctrl-C
            // or Ctrl-Z, `timeout`'s group kill) must not reach it.
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()?;
        let pipe = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no pipe to the guardian"))?;
        // A guardian that reads slowly must never block us: a deadline
        // that does not fit in the pipe is dropped (the guardian then acts
        // on an earlier one, which is safe).
        rustix::io::ioctl_fionbio(&pipe, true)?;
        Ok(Guardian {
            child,
            pipe,
            fed: None,
        })
    }

    /// Names the group to end, and its first deadline.
    fn watch(&mut self, group: Pid, held_until: Instant) -> std::io::Result<()> {
        writeln!(self.pipe, "{}", group.as_raw_pid())?;
        let until = as_monotonic_ms(held_until);
        self.fed = Some(until);
        writeln!(self.pipe, "until {until}")
    }

    fn feed(&mut self, held_until: Instant) {
        let until = as_monotonic_ms(held_until);
        // Rounding makes the same deadline differ by a millisecond.
        if self.fed.is_some_and(|fed| until.abs_diff(fed) <= 1) {
            return;
        }
        // One short line: written whole or not at all (a pipe's writes
        // up to PIPE_BUF are atomic).
        if writeln!(self.pipe, "until {until}").is_ok() {
            self.fed = Some(until);
        }
    }

    fn ending(&mut self) {
        let _ = writeln!(self.pipe, "ending {}", monotonic_ms());
    }

    /// The group is gone on its own: the guardian exits without killing.
    fn release(mut self) {
        let _ = rustix::io::ioctl_fionbio(&self.pipe, false);
        let _ = writeln!(self.pipe, "done");
        drop(self.pipe);
        let _ = self.child.wait();
    }
}

/// What the guardian reads from its pipe: a line, or its end.
type Heard = Option<String>;

/// The guardian's whole life (`s3-lease __s3-lease-guardian KILL_AFTER_MS`):
/// read the group's id, then keep the switch (`s3_lease_keep::supervision`)
/// with what the pipe says, sleeping between; send what it says to send.
pub fn guard() -> i32 {
    // Signals sent to a terminal's or a supervisor's group are not ours to
    // act on: only the pipe and the deadline decide. (Registered handlers
    // that only set a flag: the signals then do nothing here.)
    let ignored = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [
        libc::SIGINT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGTSTP,
    ] {
        let _ = signal_hook::flag::register(signal, ignored.clone());
    }
    let kill_after_ms = std::env::args()
        .nth(2)
        .and_then(|ms| ms.parse::<u64>().ok())
        .unwrap_or(0);
    // Lines are read on a thread of their own, so the deadline is kept
    // while nothing comes.
    let (tx, rx) = mpsc::channel::<Heard>();
    let reader = std::thread::Builder::new()
        .name("s3-lease-guardian-pipe".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(Some(line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(None);
        });
    if reader.is_err() {
        return 0;
    }
    let group = match rx.recv() {
        Ok(Some(line)) => line.trim().parse::<i32>().ok().and_then(Pid::from_raw),
        _ => None,
    };
    let Some(group) = group else {
        return 0;
    };
    let mut switch = Switch::new(kill_after_ms);
    // Whether the supervisor is ending the group itself (it said so).
    let mut said_ending = false;
    loop {
        let now = monotonic_ms();
        let heard = match switch.poll(now) {
            Act::Exit => return 0,
            Act::Terminate => {
                let _ = process::kill_process_group(group, Signal::TERM);
                let _ = process::kill_process_group(group, Signal::CONT);
                eprintln!(
                    "s3-lease: the lock was not renewed before its deadline while s3-lease could not act (stopped, e.g. by Ctrl-Z or SIGSTOP, or starved): sent SIGTERM to the command's process group {}, SIGKILL in {} ms",
                    group.as_raw_pid(),
                    kill_after_ms
                );
                continue;
            }
            Act::Kill => {
                let sent = process::kill_process_group(group, Signal::KILL).is_ok();
                if sent {
                    match switch.why() {
                        Some(Why::SupervisorGone) => eprintln!(
                            "s3-lease: the s3-lease process that ran the command is gone: killed the command's process group {}",
                            group.as_raw_pid()
                        ),
                        _ if said_ending => {}
                        _ => eprintln!(
                            "s3-lease: the kill-after grace is over: sent SIGKILL to the command's process group {}",
                            group.as_raw_pid()
                        ),
                    }
                }
                continue;
            }
            Act::SleepUntil(Some(at)) => {
                match rx.recv_timeout(Duration::from_millis(at.saturating_sub(now))) {
                    Ok(heard) => heard,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => None,
                }
            }
            Act::SleepUntil(None) => rx.recv().unwrap_or(None),
        };
        let Some(line) = heard else {
            switch.supervisor_gone();
            continue;
        };
        let now = monotonic_ms();
        match line.trim().split_once(' ') {
            Some(("until", ms)) => {
                if let Ok(until) = ms.parse() {
                    switch.held_until(now, until);
                }
            }
            Some(("ending", ms)) => {
                if let Ok(at) = ms.parse() {
                    said_ending = true;
                    switch.supervisor_ends(now, at);
                }
            }
            _ if line.trim() == "done" => switch.released(),
            _ => {}
        }
    }
}

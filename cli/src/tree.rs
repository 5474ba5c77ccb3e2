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
//!   it; see `guardian`) holds the read end of a pipe whose write end only
//!   we hold. We feed it each new deadline (until when the lock is surely
//!   held, on the host's clock, which counts suspended time); at a deadline not extended in
//!   time, it sends the group SIGTERM, then SIGKILL the kill-after grace
//!   later, on its own clock (`s3_lease_keep::supervision` decides when). So a
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

use crate::guardian::{Guardian, GuardianArgs};
use rustix::io::Errno;
use rustix::process::{self, Pid, Signal, WaitOptions};
use s3_lease_host::clock;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicI32, Ordering};

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
    /// (see `held_until`), SIGKILL its `kill_after` after its SIGTERM. A
    /// guardian that cannot start is a warning, passed to `warn`.
    pub fn spawn(
        mut command: Command,
        held_until: clock::Instant,
        guardian_args: &GuardianArgs,
        warn: impl Fn(&str),
    ) -> std::io::Result<CommandGroup> {
        become_subreaper();
        let mut guardian = match Guardian::start(guardian_args) {
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
    pub fn held_until(&mut self, until: clock::Instant) {
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

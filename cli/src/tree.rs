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
//! - The command dies with us: a guardian process (this binary again, in
//!   a process group of its own, so a terminal's Ctrl-C or a `kill` of our
//!   group does not reach it) holds the read end of a pipe whose write end
//!   only we hold. If we die in any way, SIGKILL included, the pipe closes
//!   and the guardian kills the command's group with SIGKILL. When the
//!   group has emptied on its own, we tell it so and it exits quietly.
//!
//! What escapes: a process that leaves the group on purpose (`setsid`,
//! `setpgid`: a daemon detaching itself). Only a cgroup (systemd's
//! `KillMode=control-group`) holds those.

use rustix::io::Errno;
use rustix::process::{self, Pid, Signal, WaitOptions};
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};

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
    /// as the leader of a new process group, with a guardian watching us.
    /// A guardian that cannot start is a warning, passed to `warn`.
    pub fn spawn(mut command: Command, warn: impl Fn(&str)) -> std::io::Result<CommandGroup> {
        become_subreaper();
        let mut guardian = match Guardian::start() {
            Ok(guardian) => Some(guardian),
            Err(e) => {
                warn(&format!(
                    "warning: cannot start the guardian process ({e}): if s3-lease is killed, the command's processes keep running"
                ));
                None
            }
        };
        let child = command.process_group(0).spawn()?;
        let leader = pid_of(&child);
        if let Some(g) = guardian.as_mut() {
            if g.watch(leader).is_err() {
                warn("warning: the guardian process is gone: if s3-lease is killed, the command's processes keep running");
                guardian = None;
            }
        }
        // The std handle is not kept: we reap the leader ourselves, with
        // the rest of its group (see `poll`).
        drop(child);
        Ok(CommandGroup {
            leader,
            status: None,
            guardian,
        })
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

/// The guardian process, from our side: the write end of its pipe.
struct Guardian {
    child: Child,
    pipe: ChildStdin,
}

impl Guardian {
    fn start() -> std::io::Result<Guardian> {
        let exe = std::env::current_exe()?;
        let mut child = Command::new(exe)
            .arg(GUARDIAN_ARG)
            // Its own group: signals meant for ours (a terminal's Ctrl-C,
            // `timeout`'s group kill) must not reach it.
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()?;
        let pipe = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no pipe to the guardian"))?;
        Ok(Guardian { child, pipe })
    }

    /// Names the group to kill if we die.
    fn watch(&mut self, group: Pid) -> std::io::Result<()> {
        writeln!(self.pipe, "{}", group.as_raw_pid())?;
        self.pipe.flush()
    }

    /// The group is gone on its own: the guardian exits without killing.
    fn release(mut self) {
        let _ = writeln!(self.pipe, "done");
        let _ = self.pipe.flush();
        drop(self.pipe);
        let _ = self.child.wait();
    }
}

/// The guardian's whole life (`s3-lease __s3-lease-guardian`): read the
/// group's id, then wait; on "done", exit; on end of input (the process
/// that started us is gone, however it died), SIGKILL the group.
pub fn guard() -> i32 {
    // Signals sent to a terminal's or a supervisor's group are not ours to
    // act on: only the pipe decides. (Registered handlers that only set a
    // flag: the signals then do nothing here.)
    let ignored = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        let _ = signal_hook::flag::register(signal, ignored.clone());
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let group = match lines.next() {
        Some(Ok(line)) => line.trim().parse::<i32>().ok().and_then(Pid::from_raw),
        _ => None,
    };
    let Some(group) = group else {
        return 0;
    };
    loop {
        match lines.next() {
            Some(Ok(line)) if line.trim() == "done" => return 0,
            Some(Ok(_)) => {}
            // End of input, or the pipe broke: our parent is gone.
            _ => break,
        }
    }
    if process::kill_process_group(group, Signal::KILL).is_ok() {
        eprintln!(
            "s3-lease: the s3-lease process that ran the command is gone: killed the command's process group {}",
            group.as_raw_pid()
        );
    }
    0
}

//! The guardian of a command's process group: this binary started again
//! (`s3-lease __s3-lease-guardian KILL_AFTER_MS LOG_FORMAT KEY HOLDER`) in
//! a process group of its own, so that signals meant for ours (a
//! terminal's Ctrl-C or Ctrl-Z, `timeout`'s group kill) do not reach it. It reads a pipe only the
//! supervisor writes: the group's pid, then each new deadline until which
//! the lock is surely held; it keeps them in a dead-man's switch
//! (`s3_lease_keep::supervision`), which decides, on the guardian's own
//! clock, when to end the group. See `tree` for what this guards against.
//!
//! Lines on the pipe: the group's pid; `until MS` (a new deadline); `ending
//! MS` (the supervisor sent SIGTERM itself at MS, on a loss); `done` (the
//! group is gone on its own). Its end: the supervisor is gone. Times are
//! milliseconds since boot on the host's clock (`s3_lease_host::clock`),
//! which both processes read and which counts the time the machine spent
//! suspended: a deadline passed while the machine slept has passed when it
//! resumes, and the guardian, which sleeps in slices of
//! `clock::RESUME_CHECK` for that reason, acts on it at once.
//!
//! Its one thread acts and never writes: a line (why it signalled) is
//! handed to `stderr_lines`, whose own thread writes it when stderr takes
//! it, so a stderr that is broken or stuck never delays or stops a signal.

use crate::log::{About, LogFormat};
use rustix::process::{self, Pid, Signal};
use s3_lease_host::clock::{self, Clock};
use s3_lease_keep::supervision::{Act, Switch, Why, EXPLAIN_AFTER_MS};
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

/// The first argument that makes this binary a guardian (see `guard`).
pub const GUARDIAN_ARG: &str = "__s3-lease-guardian";

/// How long the guardian's last lines may take to reach stderr before it
/// exits (it exits once the group is gone or killed: nothing waits on it).
const EXIT_FLUSH: Duration = Duration::from_millis(200);

/// What a guardian is started with: the grace between its SIGTERM and
/// its SIGKILL, and what its lines are about.
pub struct GuardianArgs<'a> {
    pub kill_after: Duration,
    pub key: &'a str,
    pub holder: &'a str,
}

/// `at` in ms since boot: what the guardian and we share (an instant
/// means nothing to another process); rounded down (earlier is safe).
fn ms_of(at: clock::Instant) -> u64 {
    u64::try_from(at.since_boot().as_millis()).unwrap_or(u64::MAX)
}

/// The guardian process, from the supervisor's side: the write end of
/// its pipe.
pub struct Guardian {
    child: Child,
    pipe: ChildStdin,
    /// The last deadline sent.
    fed: Option<u64>,
}

impl Guardian {
    pub fn start(args: &GuardianArgs) -> std::io::Result<Guardian> {
        let exe = std::env::current_exe()?;
        let kill_after_ms = u64::try_from(args.kill_after.as_millis()).unwrap_or(u64::MAX);
        let format = if crate::log::is_json() {
            "json"
        } else {
            "human"
        };
        let mut child = Command::new(exe)
            .arg(GUARDIAN_ARG)
            .arg(kill_after_ms.to_string())
            .args([format, args.key, args.holder])
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
    pub fn watch(&mut self, group: Pid, held_until: clock::Instant) -> std::io::Result<()> {
        writeln!(self.pipe, "{}", group.as_raw_pid())?;
        let until = ms_of(held_until);
        self.fed = Some(until);
        writeln!(self.pipe, "until {until}")
    }

    pub fn feed(&mut self, held_until: clock::Instant) {
        let until = ms_of(held_until);
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

    pub fn ending(&mut self) {
        let _ = writeln!(self.pipe, "ending {}", ms_of(Clock::system().now()));
    }

    /// The group is gone on its own: the guardian exits without killing.
    /// Reaped on a thread of its own: a release never waits for it (it
    /// may be writing its last lines to a stuck stderr).
    pub fn release(mut self) {
        let _ = rustix::io::ioctl_fionbio(&self.pipe, false);
        let _ = writeln!(self.pipe, "done");
        drop(self.pipe);
        let mut child = self.child;
        // Without a thread, it is reaped when we exit (we are its parent).
        let _ = std::thread::Builder::new()
            .name("s3-lease-guardian-reap".into())
            .spawn(move || child.wait());
    }
}

/// What the guardian reads from its pipe: a line, or its end.
type Heard = Option<String>;

/// The guardian's whole life (see `keep`), then its last lines.
pub fn guard() -> i32 {
    let code = keep();
    crate::stderr_lines::flush(EXIT_FLUSH);
    code
}

/// Read the group's id, then keep the switch with what the pipe says,
/// sleeping between, and do what it says to.
fn keep() -> i32 {
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
    let args: Vec<String> = std::env::args_os()
        .skip(2)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let arg = |n: usize| args.get(n).map_or("", String::as_str);
    let kill_after_ms = arg(0).parse::<u64>().unwrap_or(0);
    crate::log::set_format(match arg(1) {
        "json" => LogFormat::Json,
        _ => LogFormat::Human,
    });
    let about = About {
        key: arg(2),
        holder: Some(arg(3)),
        token: None,
    };
    let say = |event: &str, line: String| crate::log::say(event, &about, &line);
    let Some(pipe) = read_pipe() else {
        return 0;
    };
    let group = match pipe.recv() {
        Ok(Some(line)) => line.trim().parse::<i32>().ok().and_then(Pid::from_raw),
        _ => None,
    };
    let Some(group) = group else {
        return 0;
    };
    keep_switch(&Clock::system(), &pipe, group, kill_after_ms, &say)
}

/// Keeps the switch for `group` with what `pipe` says, on `clock`, sending
/// what it says to and handing each line to `say` (which never writes
/// itself); returns the guardian's exit code.
fn keep_switch(
    clock: &Clock,
    pipe: &Receiver<Heard>,
    group: Pid,
    kill_after_ms: u64,
    say: &dyn Fn(&str, String),
) -> i32 {
    let mut switch = Switch::new(kill_after_ms);
    // Whether the supervisor is ending the group itself (it said so).
    let mut supervisor_ending = false;
    // The machine's time asleep before the last wait, and how long it
    // slept in the wait that ended past the deadline.
    let mut asleep = clock.asleep();
    let mut slept_through = Duration::ZERO;
    loop {
        let now = ms_of(clock.now());
        let heard = match switch.poll(now) {
            Act::Exit => return 0,
            Act::Terminate => {
                terminate(group);
                slept_through = clock.asleep().saturating_sub(asleep);
                continue;
            }
            Act::Kill => {
                if let Some((event, line)) = kill(group, switch.why(), supervisor_ending) {
                    say(event, line);
                }
                continue;
            }
            Act::Explain => {
                say(
                    "deadline-missed",
                    explain(group, kill_after_ms, slept_through),
                );
                continue;
            }
            Act::SleepUntil(Some(at)) => {
                asleep = clock.asleep();
                // In slices: std's timed wait runs on a clock that stops
                // while the machine is suspended (see the module).
                let left = Duration::from_millis(at.saturating_sub(now));
                match pipe.recv_timeout(left.min(clock::RESUME_CHECK)) {
                    Ok(heard) => heard,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => None,
                }
            }
            Act::SleepUntil(None) => {
                asleep = clock.asleep();
                pipe.recv().unwrap_or(None)
            }
        };
        let Some(line) = heard else {
            switch.supervisor_gone();
            continue;
        };
        let now = ms_of(clock.now());
        match line.trim().split_once(' ') {
            Some(("until", ms)) => {
                if let Ok(until) = ms.parse() {
                    switch.held_until(now, until);
                }
            }
            Some(("ending", ms)) => {
                if let Ok(at) = ms.parse() {
                    supervisor_ending = true;
                    switch.supervisor_ends(now, at);
                }
            }
            _ if line.trim() == "done" => switch.released(),
            _ => {}
        }
    }
}

/// The pipe's lines, read on a thread of their own so that the deadline
/// is kept while nothing comes; `None` at its end.
fn read_pipe() -> Option<Receiver<Heard>> {
    let (tx, rx) = mpsc::channel::<Heard>();
    std::thread::Builder::new()
        .name("s3-lease-guardian-pipe".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(Some(line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(None);
        })
        .ok()?;
    Some(rx)
}

/// The deadline passed: SIGTERM to the group, and SIGCONT so that a
/// stopped member (Ctrl-Z) sees it. Nothing said here (see `explain`).
fn terminate(group: Pid) {
    let _ = process::kill_process_group(group, Signal::TERM);
    let _ = process::kill_process_group(group, Signal::CONT);
}

/// Why the group got SIGTERM at the deadline, said once the supervisor
/// has not said it itself for `EXPLAIN_AFTER_MS` (see `supervision`);
/// `slept_through`: how long the machine was suspended in the wait that
/// ended past the deadline (a suspend is why, whatever the supervisor's
/// state now).
fn explain(group: Pid, kill_after_ms: u64, slept_through: Duration) -> String {
    let grace = crate::duration::show(Duration::from_millis(kill_after_ms));
    let group = group.as_raw_pid();
    if slept_through >= clock::RESUME_CHECK {
        return format!(
            "the lock's deadline passed while the machine was suspended (for {}): the guardian sent SIGTERM to the command's process group {group} when it resumed, SIGKILL {grace} after the deadline",
            crate::duration::show(slept_through)
        );
    }
    let how = match supervisor_stopped() {
        Some(true) => "s3-lease is stopped (SIGSTOP or Ctrl-Z)".to_string(),
        Some(false) => format!(
            "s3-lease did not act for {} after it, though not stopped (starved of CPU or wedged)",
            crate::duration::show(Duration::from_millis(EXPLAIN_AFTER_MS))
        ),
        None => "s3-lease could not act (stopped, starved or wedged)".to_string(),
    };
    format!(
        "the lock's deadline passed and {how}: the guardian sent SIGTERM to the command's process group {group} at the deadline, SIGKILL {grace} after it"
    )
}

/// Whether the supervisor (our parent) is stopped, from its state in
/// `/proc` (`T`: stopped by a signal, `t`: by a debugger); `None` where
/// that cannot be read.
fn supervisor_stopped() -> Option<bool> {
    let parent = process::getppid()?;
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", parent.as_raw_pid())).ok()?;
    let (_, after_name) = stat.rsplit_once(") ")?;
    Some(after_name.starts_with(['T', 't']))
}

/// SIGKILL to the group; the line to say (event, text), if any.
fn kill(group: Pid, why: Option<Why>, supervisor_ending: bool) -> Option<(&'static str, String)> {
    if process::kill_process_group(group, Signal::KILL).is_err() {
        // Nobody left.
        return None;
    }
    let group = group.as_raw_pid();
    match why {
        Some(Why::SupervisorGone) => Some((
            "supervisor-gone",
            format!("the s3-lease process that ran the command is gone: killed the command's process group {group}"),
        )),
        // The supervisor says so itself, if it can.
        _ if supervisor_ending => None,
        _ => Some((
            "killed",
            format!("the kill-after grace is over: sent SIGKILL to the command's process group {group}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    /// The machine is suspended with 30 s of the lock's deadline to go,
    /// for a minute: when it resumes, the guardian's clock (the host's,
    /// suspended time counted) has passed the deadline, and the guardian
    /// ends the group at once, not 30 s later as a clock that stood still
    /// while the machine slept would have it.
    #[test]
    fn a_guardian_that_resumes_after_its_deadline_ends_the_group_at_once() {
        let clock = Clock::for_tests();
        let mut child = Command::new("sleep")
            .arg("120")
            .process_group(0)
            .spawn()
            .unwrap();
        let group = Pid::from_child(&child);
        let (tx, rx) = mpsc::channel::<Heard>();
        let deadline = clock.now().saturating_add(Duration::from_secs(30));
        tx.send(Some(format!("until {}", ms_of(deadline)))).unwrap();
        let guardian_clock = clock.clone();
        let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let heard = said.clone();
        let guardian = std::thread::spawn(move || {
            let say = move |event: &str, line: String| {
                heard.lock().unwrap().push(format!("{event}: {line}"))
            };
            keep_switch(&guardian_clock, &rx, group, 10_000, &say)
        });
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before its deadline"
        );
        clock.resume_after(Duration::from_secs(60));
        let resumed = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                resumed.elapsed() < Duration::from_secs(3),
                "the group still runs after the resume"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
        // No supervisor speaks here: the guardian explains, naming the
        // suspend (not a stopped or starved s3-lease).
        // (After the SIGKILL's line: the grace ran out in the suspend too.)
        let explained = std::time::Instant::now();
        let line = loop {
            let lines = said.lock().unwrap().clone();
            if let Some(line) = lines.iter().find(|l| l.starts_with("deadline-missed")) {
                break line.clone();
            }
            assert!(explained.elapsed() < Duration::from_secs(3), "{lines:?}");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(
            line.starts_with(
                "deadline-missed: the lock's deadline passed while the machine was suspended (for "
            ) && (line.contains("(for 1m00s)") || line.contains("(for 60.0s)")),
            "{line}"
        );
        // The group is gone: the guardian sends nothing more, and exits.
        tx.send(Some("done".into())).unwrap();
        assert_eq!(guardian.join().unwrap(), 0);
    }
}

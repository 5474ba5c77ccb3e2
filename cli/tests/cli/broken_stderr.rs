//! What `s3-lease` writes to stderr is best effort: a stderr that is a
//! pipe whose reader is gone (`| head`, a restarted log shipper), a pipe
//! nobody reads (a stuck shipper, a terminal paused with Ctrl-S), a full
//! disk (`/dev/full`) or a closed descriptor never makes it panic, never
//! makes it wait, and never keeps a command running past its lock: the
//! paths that signal, release and step down write nothing themselves.
//!
//! - Every command that holds or waits (`run`, `elect`, `acquire --wait`)
//!   ends as it would with a working stderr, with each of the four.
//! - A command that traps SIGTERM is SIGKILLed `--kill-after` after its
//!   lock's deadline, and is gone before the next holder's command
//!   starts, with stderr broken or stuck after the `acquired` line and
//!   `s3-lease` stopped (SIGSTOP: its guardian acts) or its store cut off
//!   (a fault proxy gone silent: it acts itself, and so does the
//!   guardian). Judged by the one history checker.

use crate::process_tree::{alive, beats, pid_of};
use crate::support::{code, text, through, turn_violations, Run, Scene};
use host_test::fault_proxy::{Fault, FaultProxy};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How stderr is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    /// A pipe whose read end is closed: every write fails with EPIPE.
    ReaderGone,
    /// A pipe nobody reads, full: every write blocks.
    Full,
    /// `/dev/full`: every write fails with ENOSPC.
    DevFull,
    /// Descriptor 2 closed.
    Closed,
}

const ALL: [Broken; 4] = [
    Broken::ReaderGone,
    Broken::Full,
    Broken::DevFull,
    Broken::Closed,
];

/// A pipe's two ends.
fn pipe() -> (std::io::PipeReader, std::io::PipeWriter) {
    std::io::pipe().unwrap()
}

/// Fills the pipe `writer` writes to, without changing how `writer`'s own
/// file description blocks: through a second, non-blocking description
/// of the same pipe (opened through /proc).
fn fill(writer: &impl AsRawFd) {
    let path = format!("/proc/self/fd/{}", writer.as_raw_fd());
    let mut other = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .unwrap();
    let chunk = [b'x'; 4096];
    loop {
        match other.write(&chunk) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) => panic!("filling the pipe: {e}"),
        }
    }
}

/// What must stay open while the process runs (a full pipe's read end).
pub struct Keep(#[allow(dead_code)] Option<std::io::PipeReader>);

/// `command` with its stderr broken as `how` says, from the start.
pub fn broken_from_the_start(command: Command, how: Broken) -> (Command, Keep) {
    match how {
        Broken::ReaderGone => {
            let (reader, writer) = pipe();
            drop(reader);
            let mut command = command;
            command.stderr(writer);
            (command, Keep(None))
        }
        Broken::Full => {
            let (reader, writer) = pipe();
            fill(&writer);
            let mut command = command;
            command.stderr(writer);
            (command, Keep(Some(reader)))
        }
        Broken::DevFull => {
            let mut command = command;
            command.stderr(File::options().write(true).open("/dev/full").unwrap());
            (command, Keep(None))
        }
        Broken::Closed => (
            through("sh", &["-c", "exec \"$@\" 2>&-", "sh"], &command),
            Keep(None),
        ),
    }
}

/// Waits up to `limit` for `child`; killed (and `None`) if it does not end.
fn wait_at_most(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `command` with stderr broken as `how` says: its exit status, or
/// why not.
fn outcome(command: Command, how: Broken, limit: Duration) -> Result<ExitStatus, String> {
    let (mut command, _keep) = broken_from_the_start(command, how);
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_at_most(&mut child, limit).ok_or_else(|| format!("still running after {limit:?}"))
}

fn check_runs(scene: &Scene, verb: &str, how: Broken) -> Result<(), String> {
    let key = format!("{verb}-{how:?}");
    let ran = scene.path(&format!("{key}.ran"));
    let job = format!("echo ran > {}", ran.display());
    let command = scene.cmd(&[verb, &key, "--ttl", "10s", "--", "sh", "-c", &job]);
    let status = outcome(command, how, Duration::from_secs(30))?;
    if status.code() != Some(0) {
        return Err(format!("exit {status} (the command ran: {})", ran.exists()));
    }
    if !ran.exists() {
        return Err("the command never ran".into());
    }
    let state = scene.status(&key);
    if state["live"] != false {
        return Err(format!("not released: {state}"));
    }
    Ok(())
}

fn check_acquire_wait(scene: &Scene, how: Broken) -> Result<(), String> {
    let key = format!("acquire-{how:?}");
    let out = scene.run(&["acquire", &key, "--ttl", "60s", "--holder", "other"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    // Held by another: waits, then ends with 75 and its error on stderr.
    let command = scene.cmd(&["acquire", &key, "--wait", "1s"]);
    let status = outcome(command, how, Duration::from_secs(30))?;
    match status.code() {
        Some(75) => Ok(()),
        _ => Err(format!("exit {status}, not 75")),
    }
}

/// `run`, `elect` and `acquire --wait` with each broken stderr: no panic
/// (exit 101, or SIGABRT in a release build), no hang, the command run
/// and the key released. Before the fix: EPIPE and ENOSPC panicked on the
/// first line (`run`: before its command started, the key held for its
/// ttl); a full pipe blocked on it for ever.
#[test]
fn commands_end_as_usual_whatever_their_stderr_does() {
    let scene = Scene::new("broken-stderr");
    let mut cases = Vec::new();
    for how in ALL {
        cases.push(("run", how));
        cases.push(("elect", how));
        cases.push(("acquire", how));
    }
    let failures: Vec<String> = std::thread::scope(|s| {
        let running: Vec<_> = cases
            .iter()
            .map(|&(verb, how)| {
                let scene = &scene;
                s.spawn(move || {
                    let result = match verb {
                        "acquire" => check_acquire_wait(scene, how),
                        _ => check_runs(scene, verb, how),
                    };
                    result
                        .err()
                        .map(|e| format!("{verb} with stderr {how:?}: {e}"))
                })
            })
            .collect();
        running
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// The lock's deadline is missed because...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Miss {
    /// ...`s3-lease` is stopped (SIGSTOP): its guardian acts.
    Sigstop,
    /// ...its store went silent (a fault proxy): it acts, as its guardian does.
    NetworkCut,
}

/// Its pid, then the time every 50 ms; SIGTERM does not stop it.
const STUBBORN: &str = r#"echo $$ > "$1.pid"
trap '' TERM
while :; do date +%s%3N >> "$1.beats"; sleep 0.05; done
"#;

const TTL: Duration = Duration::from_secs(4);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A, and the groups of the test's processes (each leads one), killed
/// when dropped.
struct Groups {
    a: Child,
    pids: Vec<u32>,
}

impl Drop for Groups {
    fn drop(&mut self) {
        for pid in &self.pids {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stderr(Stdio::null())
                .status();
            let _ = Command::new("kill")
                .args(["-CONT", &pid.to_string()])
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.a.kill();
        let _ = self.a.wait();
    }
}

/// Starts A (`run`, ttl 4 s, `--kill-after 1s`, the stubborn command)
/// with stderr a pipe the test reads until the `acquired` line; then the
/// pipe is broken as `how` says (`DevFull`: from the start), and the
/// deadline is missed as `miss` says. B waits for the key meanwhile. A's
/// command must be gone before B's starts.
fn check_sigkill(how: Broken, miss: Miss) -> Result<String, String> {
    let name = format!("sigkill-{how:?}-{miss:?}").to_lowercase();
    let scene = Scene::new(&name);
    std::fs::write(scene.path("stubborn.sh"), STUBBORN).unwrap();
    let proxy = FaultProxy::in_front_of(&scene.endpoint.url).map_err(|e| e.to_string())?;
    let a_path = scene.path("a").display().to_string();
    let stubborn = scene.path("stubborn.sh").display().to_string();
    let ttl = format!("{}s", TTL.as_secs());
    let mut a = scene.cmd(&[
        "run",
        "k",
        "--ttl",
        &ttl,
        "--kill-after",
        "1s",
        "--holder",
        "a",
        "--",
        "sh",
        &stubborn,
        &a_path,
    ]);
    a.env("AWS_ENDPOINT_URL", proxy.url())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let (reader, writer) = pipe();
    if how == Broken::DevFull {
        a.stderr(File::options().write(true).open("/dev/full").unwrap());
    } else {
        a.stderr(writer.try_clone().unwrap());
    }
    let a = a.spawn().unwrap();
    let mut groups = Groups {
        pids: vec![a.id()],
        a,
    };
    // Read until `acquired`, then break the pipe as `how` says.
    let reading = (how != Broken::DevFull).then(|| {
        std::thread::spawn(move || {
            let mut reader = reader;
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while !String::from_utf8_lossy(&seen).contains("acquired") {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            (reader, String::from_utf8_lossy(&seen).into_owned())
        })
    });
    let started = Instant::now();
    while beats(&scene.dir, "a").len() < 3 {
        if started.elapsed() > Duration::from_secs(30) {
            return Err("A's command never beat".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let command = pid_of(&scene.dir, "a").ok_or("no pid")?;
    groups.pids.push(command);
    let (reader, said) = match reading {
        Some(reading) => {
            let (reader, said) = reading.join().unwrap();
            (Some(reader), said)
        }
        None => (None, String::new()),
    };
    let _kept = match how {
        Broken::ReaderGone => {
            drop(reader);
            drop(writer);
            None
        }
        Broken::Full => {
            fill(&writer);
            drop(writer);
            reader
        }
        _ => {
            drop(writer);
            reader
        }
    };
    let missed_at = Instant::now();
    let missed_ms = now_ms();
    match miss {
        Miss::Sigstop => {
            assert!(Command::new("kill")
                .args(["-STOP", &groups.a.id().to_string()])
                .status()
                .unwrap()
                .success());
        }
        Miss::NetworkCut => proxy.set(Fault::Silent),
    }
    // B waits for the key meanwhile, through the store directly.
    let b_start = scene.path("b.start");
    let record = format!("date +%s%3N > {}", b_start.display());
    let b = std::thread::scope(|s| {
        let b = s.spawn(|| {
            scene.run(&[
                "run", "k", "--ttl", &ttl, "--holder", "b", "--wait", "30s", "--", "sh", "-c",
                &record,
            ])
        });
        // Gone by the deadline (2 s after the last renew) plus the
        // kill-after grace (1 s), well before the lease can run out.
        while alive(command) {
            if missed_at.elapsed() > TTL + Duration::from_secs(2) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        b.join().unwrap()
    });
    let still_alive = alive(command);
    if code(&b) != 0 {
        return Err(format!("B: {}", text(&b.stderr)));
    }
    let b_started: u64 = std::fs::read_to_string(&b_start)
        .map_err(|e| e.to_string())?
        .trim()
        .parse()
        .map_err(|e| format!("{e}"))?;
    let a_beats = beats(&scene.dir, "a");
    let last_beat = *a_beats.last().unwrap() as u64;
    // Its last beat after the miss: by the deadline (2 s after the last
    // renew, sent before the miss) and the kill-after grace (1 s).
    let beat_for = last_beat.saturating_sub(missed_ms);
    let runs = [
        Run {
            who: 0,
            token: None,
            start: a_beats[0] as u64,
            end: last_beat,
        },
        Run {
            who: 1,
            token: None,
            start: b_started,
            end: b_started.max(now_ms()),
        },
    ];
    let overlaps = turn_violations(&runs);
    if still_alive || !overlaps.is_empty() || beat_for >= TTL.as_millis() as u64 {
        return Err(format!(
            "A's command (pid {command}) {}, beat {beat_for} ms after the miss, its last beat {} ms after B's command started ({overlaps:?}); A said before the break: {said}",
            if still_alive { "still runs" } else { "is gone" },
            last_beat as i64 - b_started as i64
        ));
    }
    // A, resumed (or its store back), finds the lock lost: 79.
    match miss {
        Miss::Sigstop => {
            let _ = Command::new("kill")
                .args(["-CONT", &groups.a.id().to_string()])
                .status();
        }
        Miss::NetworkCut => proxy.set(Fault::Pass),
    }
    let status = wait_at_most(&mut groups.a, Duration::from_secs(20));
    if status.and_then(|s| s.code()) != Some(79) {
        return Err(format!("A ended with {status:?}, not 79"));
    }
    Ok(format!(
        "{how:?} {miss:?}: the command beat {beat_for} ms after the miss, its last beat {} ms before B's command",
        b_started as i64 - last_beat as i64
    ))
}

/// A command that traps SIGTERM is SIGKILLed at `--kill-after` whatever
/// A's stderr does once it said `acquired` (its reader gone, full and
/// unread, or `/dev/full` from the start), when A is stopped or its store
/// is cut off; it is gone before B's command starts. Before the fix: the
/// guardian panicked (EPIPE) or blocked (full) on its line after SIGTERM,
/// and never sent SIGKILL; with the store cut off, A itself blocked on
/// its "lost" line before sending SIGTERM.
#[test]
fn a_command_that_traps_sigterm_is_killed_at_kill_after_whatever_stderr_does() {
    let mut cases = Vec::new();
    for how in [Broken::ReaderGone, Broken::Full, Broken::DevFull] {
        for miss in [Miss::Sigstop, Miss::NetworkCut] {
            cases.push((how, miss));
        }
    }
    let results: Vec<Result<String, String>> = std::thread::scope(|s| {
        let running: Vec<_> = cases
            .iter()
            .map(|&(how, miss)| {
                s.spawn(move || {
                    check_sigkill(how, miss).map_err(|e| format!("{how:?} {miss:?}: {e}"))
                })
            })
            .collect();
        running.into_iter().map(|t| t.join().unwrap()).collect()
    });
    for line in results.iter().flatten() {
        println!("{line}");
    }
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

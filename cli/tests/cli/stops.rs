//! A stopped `s3-lease run` cannot keep its command running past the
//! lock. The command writes a heartbeat (the time, every 50 ms); then
//! `s3-lease` is stopped: SIGSTOP (which it cannot see), or SIGTSTP (a
//! terminal's Ctrl-Z, which it passes to the command's group before it
//! stops). Nothing of it renews the lock while stopped; its guardian, on
//! its own clock, must end the command's group at the renew deadline (half
//! the ttl after the last renew was sent), well before the lease can run
//! out. A second `s3-lease run` of the same key, waiting meanwhile, is
//! granted the key once the lease has run out: its command must start
//! after the first command's last heartbeat. Resumed, the first `s3-lease`
//! finds the lock lost (exit 79).
//!
//! For a plain lock (`run`, through the elector) and a semaphore's slot
//! (`run --limit`).

use crate::process_tree::{alive, beats, pid_of};
use crate::support::{code, text, Scene};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Its pid, then the time (epoch ms) every 50 ms, into `$1.pid`, `$1.beats`.
const BEAT: &str = r#"echo $$ > "$1.pid"
while :; do date +%s%3N >> "$1.beats"; sleep 0.05; done
"#;

const TTL: Duration = Duration::from_secs(4);

#[derive(Debug, Clone, Copy)]
enum Stop {
    /// SIGSTOP: `s3-lease` stops without knowing.
    Sigstop,
    /// SIGTSTP (Ctrl-Z): the command's group stops with `s3-lease`.
    Sigtstp,
}

/// `s3-lease` and its command; killed (group and command) when dropped.
struct Holder {
    child: Child,
    dir: std::path::PathBuf,
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        if let Some(pid) = pid_of(&self.dir, "a") {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn kill(signal: &str, pid: u32) {
    assert!(Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap()
        .success());
}

fn check(stop: Stop, slots: &[&str]) {
    let name = format!("stop-{stop:?}-{}", slots.len()).to_lowercase();
    let scene = Scene::new(&name);
    std::fs::write(scene.path("beat.sh"), BEAT).unwrap();
    let beat = scene.path("beat.sh").display().to_string();
    let a = scene.path("a").display().to_string();
    let ttl = format!("{}s", TTL.as_secs());
    let mut args = vec!["run", "k", "--ttl", &ttl, "--holder", "stop-a"];
    args.extend_from_slice(slots);
    args.extend_from_slice(&["--", "sh", &beat, &a]);
    let child = scene
        .cmd(&args)
        // A group of its own: a SIGTSTP stops it, not us; `Drop` cleans up.
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(scene.path("a.err")).unwrap())
        .spawn()
        .unwrap();
    let mut holder = Holder {
        child,
        dir: scene.dir.clone(),
    };
    let a_stderr = || std::fs::read_to_string(scene.path("a.err")).unwrap_or_default();
    let started = Instant::now();
    while beats(&scene.dir, "a").len() < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the command never beat: {}",
            a_stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let command = pid_of(&scene.dir, "a").unwrap();
    let pid = holder.child.id();
    let stopped_at = Instant::now();
    let stopped_ms = now_ms();
    kill(
        match stop {
            Stop::Sigstop => "STOP",
            Stop::Sigtstp => "TSTP",
        },
        pid,
    );

    // The second holder waits for the key meanwhile, and records when its
    // command starts.
    let b_start = scene.path("b.start");
    let record = format!("date +%s%3N > {}", b_start.display());
    let mut args = vec![
        "run", "k", "--ttl", &ttl, "--holder", "stop-b", "--wait", "30s",
    ];
    args.extend_from_slice(slots);
    args.extend_from_slice(&["--", "sh", "-c", &record]);
    let second = std::thread::scope(|s| {
        let second = s.spawn(|| scene.run(&args));
        // The first command is gone before the lease can run out: by the
        // renew deadline (half the ttl after the last renew), with margin.
        while alive(command) {
            assert!(
                stopped_at.elapsed() < TTL,
                "{stop:?}: the command (pid {command}) still runs {:?} after s3-lease stopped\n{}",
                stopped_at.elapsed(),
                a_stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        println!(
            "{stop:?} {slots:?}: the command was gone {:?} after s3-lease stopped",
            stopped_at.elapsed()
        );
        second.join().unwrap()
    });
    assert_eq!(
        code(&second),
        0,
        "the second holder: {}",
        text(&second.stderr)
    );
    let b_started: i64 = std::fs::read_to_string(&b_start)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let last = *beats(&scene.dir, "a").last().unwrap();
    assert!(
        last < b_started,
        "{stop:?}: the first command beat at {last}, {} ms after the second holder's command started\n{}",
        last - b_started,
        a_stderr()
    );
    if let Stop::Sigtstp = stop {
        // Ctrl-Z stopped the command with s3-lease (a beat under way may
        // still land).
        assert!(
            last < stopped_ms + 300,
            "the command beat {} ms after Ctrl-Z",
            last - stopped_ms
        );
    }
    // Resumed, the first s3-lease finds its lock lost.
    kill("CONT", pid);
    let status = loop {
        if let Some(status) = holder.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            stopped_at.elapsed() < Duration::from_secs(40),
            "the first s3-lease never exited after SIGCONT\n{}",
            a_stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(79), "{}", a_stderr());
    println!(
        "{stop:?} {slots:?}: the first command's last beat {} ms before the second's start",
        b_started - last
    );
}

#[test]
fn sigstop_to_run_ends_the_command_at_the_deadline() {
    check(Stop::Sigstop, &[]);
}

#[test]
fn ctrl_z_stops_the_command_with_run_and_the_deadline_ends_it() {
    check(Stop::Sigtstp, &[]);
}

#[test]
fn sigstop_to_run_in_a_slot_ends_the_command_at_the_deadline() {
    check(Stop::Sigstop, &["--limit", "1"]);
}

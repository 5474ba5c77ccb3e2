//! A lost lock's lines name the cause that happened. A network cut (the
//! store went silent: renews hang, then the renew deadline passes) is the
//! store's doing, however soon the guardian ends the command at that
//! deadline, before `s3-lease`'s next look; a stop (SIGSTOP) is
//! `s3-lease`'s, and both it and its guardian say it was stopped.

use crate::process_tree::{alive, beats, pid_of};
use crate::support::Scene;
use host_test::fault_proxy::{Fault, FaultProxy};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Its pid, then the time every 50 ms; exits on SIGTERM at once.
const BEAT: &str = r#"echo $$ > "$1.pid"
trap 'exit 143' TERM
while :; do date +%s%3N >> "$1.beats"; sleep 0.05; done
"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    NetworkCut,
    Sigstop,
}

/// `s3-lease` killed with its group when dropped.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let pid = self.0.id().to_string();
        let _ = Command::new("kill")
            .args(["-CONT", &pid])
            .stderr(Stdio::null())
            .status();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_until(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) -> Result<(), String> {
    let started = Instant::now();
    while !ready() {
        if started.elapsed() > limit {
            return Err(format!("timed out after {limit:?} waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// A `run` (ttl 4 s) whose lock is lost by `cause`: what it said on
/// stderr, and its exit code.
fn lose(cause: Cause, n: usize) -> Result<(String, Option<i32>), String> {
    let scene = Scene::new(&format!("cause-{cause:?}-{n}").to_lowercase());
    std::fs::write(scene.path("beat.sh"), BEAT).unwrap();
    let proxy = FaultProxy::in_front_of(&scene.endpoint.url).map_err(|e| e.to_string())?;
    let (beat, a) = (scene.path("beat.sh"), scene.path("a"));
    let (beat, a) = (beat.display().to_string(), a.display().to_string());
    let err = scene.path("a.err");
    let mut cmd = scene.cmd(&["run", "k", "--ttl", "4s", "--", "sh", &beat, &a]);
    cmd.env("AWS_ENDPOINT_URL", proxy.url())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&err).unwrap());
    let mut child = Reaped(cmd.spawn().unwrap());
    let said = || std::fs::read_to_string(&err).unwrap_or_default();
    wait_until(Duration::from_secs(30), "the command's beats", || {
        beats(&scene.dir, "a").len() >= 3
    })
    .map_err(|e| format!("{e}: {}", said()))?;
    let command = pid_of(&scene.dir, "a").ok_or("no pid")?;
    let pid = child.0.id().to_string();
    match cause {
        Cause::NetworkCut => proxy.set(Fault::Silent),
        Cause::Sigstop => {
            let _ = Command::new("kill").args(["-STOP", &pid]).status();
        }
    }
    wait_until(Duration::from_secs(10), "the command's end", || {
        !alive(command)
    })
    .map_err(|e| format!("{e}: {}", said()))?;
    match cause {
        // The store back, so that the exit's resign is not held up.
        Cause::NetworkCut => proxy.set(Fault::Pass),
        // Long enough stopped for the guardian to say why it acted.
        Cause::Sigstop => {
            std::thread::sleep(Duration::from_secs(2));
            let _ = Command::new("kill").args(["-CONT", &pid]).status();
        }
    }
    let mut status = None;
    wait_until(Duration::from_secs(30), "s3-lease's exit", || {
        status = child.0.try_wait().unwrap();
        status.is_some()
    })
    .map_err(|e| format!("{e}: {}", said()))?;
    Ok((said(), status.and_then(|s| s.code())))
}

fn check(cause: Cause, n: usize) -> Result<(), String> {
    let (said, code) = lose(cause, n)?;
    let wrong = |why: &str| Err(format!("{cause:?} #{n}: {why}; it said:\n{said}"));
    if code != Some(79) {
        return wrong(&format!("exit {code:?}, not 79"));
    }
    match cause {
        Cause::NetworkCut => {
            if !said.contains("no renew succeeded before the renew deadline") {
                return wrong("the renew deadline is not named");
            }
            for blame in ["could not act", "starved", "stopped or"] {
                if said.contains(blame) {
                    return wrong(&format!("{blame:?} blames s3-lease for the network"));
                }
            }
        }
        Cause::Sigstop => {
            // The guardian, while s3-lease is stopped.
            if !said.contains("deadline passed and s3-lease is stopped (SIGSTOP or Ctrl-Z)") {
                return wrong("the guardian did not say s3-lease is stopped");
            }
            // s3-lease, resumed.
            if !said.contains("(it was stopped: SIGSTOP or Ctrl-Z)") {
                return wrong("s3-lease did not say it was stopped");
            }
        }
    }
    println!("{cause:?} #{n}:\n{said}");
    Ok(())
}

/// Three network cuts and two stops, at once: each names its cause.
/// Before the fix, a cut was reported as "s3-lease was stopped or
/// starved": the guardian acted at the deadline and said so, and
/// `s3-lease`, finding the command already gone, said the same.
#[test]
fn a_lost_lock_names_a_network_cut_or_a_stop() {
    let cases = [
        (Cause::NetworkCut, 0),
        (Cause::NetworkCut, 1),
        (Cause::NetworkCut, 2),
        (Cause::Sigstop, 0),
        (Cause::Sigstop, 1),
    ];
    let failures: Vec<String> = std::thread::scope(|s| {
        let running: Vec<_> = cases
            .iter()
            .map(|&(cause, n)| s.spawn(move || check(cause, n).err()))
            .collect();
        running
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

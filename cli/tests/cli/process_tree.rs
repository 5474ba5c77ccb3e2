//! The command's whole process tree is under the lock. The command is a
//! shell that starts a child, a child that ignores SIGTERM for a while, a
//! grandchild (its parent waiting for it) and an orphan (a double fork:
//! its parent exits at once). Each of the four writes its pid, then the
//! time (epoch ms) every 50 ms into a file of its own.
//!
//! The lock is then lost (its holder id takes it over from another
//! process), or `s3-lease` gets SIGTERM, or SIGKILL; a second `s3-lease`
//! waits for the key and records when its command starts. Judged from the
//! processes' own timestamps: none of the four wrote after the second
//! holder's command started, and none of them is still running.

use crate::support::{code, text, Scene};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A heartbeat: its pid, then the time every 50 ms, into `$1.pid` and
/// `$1.beats`.
const BEAT: &str = r#"echo $$ > "$1.pid"
while :; do date +%s%3N >> "$1.beats"; sleep 0.05; done
"#;

/// A heartbeat that outlives SIGTERM by about two seconds.
const STUBBORN: &str = r#"echo $$ > "$1.pid"
trap 'quit=1' TERM
n=0
while :; do
  date +%s%3N >> "$1.beats"
  sleep 0.05
  if [ -n "$quit" ]; then n=$((n+1)); [ "$n" -gt 40 ] && exit 0; fi
done
"#;

/// The command: its tree, then it waits for its children.
const TREE: &str = r#"d="$1"
sh "$d/beat.sh" "$d/child" &
sh "$d/stubborn.sh" "$d/stubborn" &
sh -c 'sh "$1/beat.sh" "$1/grandchild" & wait' sh "$d" &
( sh "$d/beat.sh" "$d/orphan" & )
wait
"#;

const MEMBERS: [&str; 4] = ["child", "stubborn", "grandchild", "orphan"];

const TTL: &str = "4s";

#[derive(Debug, Clone, Copy)]
enum Ending {
    /// The holder id takes its own lease over from another process: the
    /// running holder's next renew finds it taken.
    LockLost,
    /// SIGTERM to `s3-lease` (forwarded to the group; the stubborn child
    /// outlives it, and the lock is held until it has exited).
    Sigterm,
    /// SIGKILL to `s3-lease`: its guardian kills the group.
    Sigkill,
}

struct Scenario {
    scene: Scene,
    key: &'static str,
    holder: Child,
}

impl Drop for Scenario {
    fn drop(&mut self) {
        // Whatever the outcome, leave no process behind: the holder's own
        // group (the test started it in one) and the tree's members.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.holder.id())])
            .stderr(Stdio::null())
            .status();
        for member in MEMBERS {
            if let Some(pid) = pid_of(&self.scene.dir, member) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

pub(crate) fn pid_of(dir: &Path, member: &str) -> Option<u32> {
    std::fs::read_to_string(dir.join(format!("{member}.pid")))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The beats a member wrote, in order.
pub(crate) fn beats(dir: &Path, member: &str) -> Vec<i64> {
    std::fs::read_to_string(dir.join(format!("{member}.beats")))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

pub(crate) fn alive(pid: u32) -> bool {
    // Not a zombie either: a zombie's stat says `Z`.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

fn wait_until(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn start(name: &str) -> Scenario {
    let scene = Scene::new(name);
    for (file, body) in [
        ("beat.sh", BEAT),
        ("stubborn.sh", STUBBORN),
        ("tree.sh", TREE),
    ] {
        std::fs::write(scene.path(file), body).unwrap();
    }
    let tree = scene.path("tree.sh").display().to_string();
    let dir = scene.dir.display().to_string();
    let holder = scene
        .cmd(&[
            "run", "tree", "--ttl", TTL, "--holder", "tree-a", "--", "sh", &tree, &dir,
        ])
        // A group of its own, so `Drop` can clean up after a failure.
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(scene.path("a.err")).unwrap())
        .spawn()
        .unwrap();
    let scenario = Scenario {
        scene,
        key: "tree",
        holder,
    };
    wait_until(Duration::from_secs(20), "every member to beat", || {
        MEMBERS
            .iter()
            .all(|m| beats(&scenario.scene.dir, m).len() >= 2)
    });
    scenario
}

fn check(ending: Ending) {
    let mut s = start(&format!("tree-{ending:?}").to_lowercase());
    let pid = s.holder.id().to_string();
    match ending {
        Ending::LockLost => {
            // An attempt that races a renew finds the lock changed under
            // it (held, exit 75); the next one takes it.
            let taken = (0..20).any(|_| {
                let out = s
                    .scene
                    .run(&["acquire", s.key, "--holder", "tree-a", "--ttl", TTL]);
                std::thread::sleep(Duration::from_millis(50));
                code(&out) == 0
            });
            assert!(taken, "the holder id never took its lease over");
        }
        Ending::Sigterm => {
            assert!(Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success());
        }
        Ending::Sigkill => {
            assert!(Command::new("kill")
                .args(["-KILL", &pid])
                .status()
                .unwrap()
                .success());
        }
    }
    // The second holder: waits for the key, records when its command starts.
    let started_file = s.scene.path("b.start");
    let record = format!("date +%s%3N > {}", started_file.display());
    let out = s.scene.run(&[
        "run", s.key, "--ttl", TTL, "--holder", "tree-b", "--wait", "60s", "--", "sh", "-c",
        &record,
    ]);
    assert_eq!(code(&out), 0, "the second holder: {}", text(&out.stderr));
    let b_started: i64 = std::fs::read_to_string(&started_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Time for a straggler to show itself.
    std::thread::sleep(Duration::from_millis(300));
    let a_stderr = std::fs::read_to_string(s.scene.path("a.err")).unwrap_or_default();
    for member in MEMBERS {
        let last = beats(&s.scene.dir, member).last().copied().unwrap_or(0);
        assert!(
            last < b_started,
            "{ending:?}: {member} wrote at {last}, {} ms after the second holder's command started at {b_started}\ns3-lease (first holder) said:\n{a_stderr}",
            last - b_started
        );
        let pid = pid_of(&s.scene.dir, member).unwrap();
        assert!(
            !alive(pid),
            "{ending:?}: {member} (pid {pid}) still runs\n{a_stderr}"
        );
    }
    let status = s.holder.wait().unwrap();
    match ending {
        Ending::LockLost => assert_eq!(status.code(), Some(79), "{a_stderr}"),
        Ending::Sigterm => assert_eq!(status.code(), Some(143), "{a_stderr}"),
        Ending::Sigkill => assert_eq!(status.signal(), Some(9), "{a_stderr}"),
    }
    println!(
        "{ending:?}: the tree's last beat {} ms before the second holder's command started",
        b_started
            - MEMBERS
                .iter()
                .filter_map(|m| beats(&s.scene.dir, m).last().copied())
                .max()
                .unwrap_or(0)
    );
}

#[test]
fn no_process_of_the_tree_outlives_a_lost_lock() {
    check(Ending::LockLost);
}

#[test]
fn no_process_of_the_tree_outlives_sigterm_to_s3_lease() {
    check(Ending::Sigterm);
}

#[test]
fn no_process_of_the_tree_outlives_sigkill_to_s3_lease() {
    check(Ending::Sigkill);
}

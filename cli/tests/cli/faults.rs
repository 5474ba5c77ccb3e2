//! The network of a leader fails, and another process takes over: the
//! two leaders' commands must never overlap.
//!
//! Each `s3-lease` process reaches S3 through a proxy of its own
//! (`host_test::fault_proxy`), so a fault hits that process only. Process A
//! (`run` or `elect`) takes the key and runs its command; B waits for it;
//! then A's network goes silent, slow (longer than the ttl), resets every
//! connection, or cuts every reply short. B must take over, and the
//! commands' own records (each appends `start <epoch ms>` and `end <epoch
//! ms>` to a file of its own) must show A's command ended before B's
//! started: A stops it at its renew deadline (half the ttl after its last
//! successful renew was sent), whether or not its requests have returned,
//! and B can only be granted the key after the whole ttl.
//!
//! Every strategy with every expiry clock it accepts: single-object with
//! holder, server and observed; epoch-objects with server and observed
//! (it refuses `holder`: its epoch objects record no holder expiry). The
//! `holder` clock needs the processes' clocks in step: here they share one.

use crate::support::{through, turn_violations, Run, Scene};
use host_test::fault_proxy::{Fault, FaultProxy};
use s3_lease::testing::history::Violation;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// As in `failover.rs`: shorter, and a loaded SeaweedFS makes a healthy
/// holder miss its renew deadline.
const TTL: &str = "4s";
const TTL_MS: u64 = 4_000;
/// Longer than the ttl: a reply that late is no reply.
const SLOW: Duration = Duration::from_secs(6);

/// The command: records its start, runs `$2` seconds (in the background, so
/// that SIGTERM interrupts `wait` and the trap runs at once), records its
/// end; on SIGTERM records the end and exits. Times in epoch ms.
const JOB: &str = r#"f="$1"
trap 'echo "end $(date +%s%3N)" >> "$f"; kill $! 2>/dev/null; exit 143' TERM
echo "start $(date +%s%3N)" >> "$f"
sleep "$2" & wait
echo "end $(date +%s%3N)" >> "$f""#;

const CLOCKS: [(&str, &str); 5] = [
    ("single-object", "holder"),
    ("single-object", "server"),
    ("single-object", "observed"),
    ("epoch-objects", "server"),
    ("epoch-objects", "observed"),
];

fn faults() -> [Fault; 4] {
    [
        Fault::Silent,
        Fault::Slow(SLOW),
        Fault::Reset,
        Fault::CutMidBody,
    ]
}

fn fault_name(fault: Fault) -> String {
    match fault {
        Fault::Pass => "pass".into(),
        Fault::Silent => "silent".into(),
        Fault::Slow(d) => format!("slow-{}s", d.as_secs()),
        Fault::Reset => "reset".into(),
        Fault::CutMidBody => "cut-mid-body".into(),
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The processes of a scenario, each leading a process group of its own
/// (with its command); every group is killed when this is dropped, on
/// success or panic.
#[derive(Default)]
struct Procs(Vec<Child>);

impl Procs {
    fn spawn(&mut self, mut cmd: Command) -> usize {
        let child = cmd.process_group(0).spawn().expect("spawning s3-lease");
        self.0.push(child);
        self.0.len() - 1
    }

    fn exited(&mut self, i: usize) -> Option<ExitStatus> {
        self.0[i].try_wait().ok().flatten()
    }

    /// SIGTERM to the process (not its group: `s3-lease` forwards it to
    /// the command), then up to `limit` for it to exit.
    fn stop(&mut self, i: usize, limit: Duration) -> Option<ExitStatus> {
        if self.exited(i).is_none() {
            let _ = Command::new("kill")
                .args(["-s", "TERM", &self.0[i].id().to_string()])
                .status();
        }
        let started = Instant::now();
        loop {
            if let Some(status) = self.exited(i) {
                return Some(status);
            }
            if started.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for child in &mut self.0 {
            // The whole group: s3-lease, its command and the command's sleep.
            let _ = Command::new("kill")
                .args(["-s", "KILL", "--", &format!("-{}", child.id())])
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `(start, end)` of each run of a command, from its record file; `None`
/// for a run that has not ended.
fn runs(path: &Path) -> Vec<(i64, Option<i64>)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out: Vec<(i64, Option<i64>)> = Vec::new();
    for line in text.lines() {
        let (what, at) = line.split_once(' ').unwrap_or((line, ""));
        let Ok(at) = at.trim().parse::<i64>() else {
            continue;
        };
        match what {
            "start" => out.push((at, None)),
            "end" => {
                if let Some(last) = out.last_mut().filter(|r| r.1.is_none()) {
                    last.1 = Some(at);
                }
            }
            _ => {}
        }
    }
    out
}

/// What the one history checker finds in the runs of A's command (actor
/// 0) and B's (actor 1): overlaps (a run not ended counts as running
/// until now). Times in µs, so its messages read in ms.
fn violations(a: &[(i64, Option<i64>)], b: &[(i64, Option<i64>)]) -> Vec<Violation> {
    let now = now_ms();
    let runs: Vec<Run> = [a, b]
        .iter()
        .enumerate()
        .flat_map(|(who, runs)| {
            runs.iter().map(move |&(start, end)| Run {
                who,
                token: None,
                start: start as u64 * 1_000,
                end: end.unwrap_or(now) as u64 * 1_000,
            })
        })
        .collect();
    turn_violations(&runs)
}

fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while !ready() {
        if started.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn stderr_of(scene: &Scene, who: &str) -> String {
    std::fs::read_to_string(scene.path(&format!("{who}.err"))).unwrap_or_default()
}

/// At most this many scenarios at once, over all the tests of this file
/// (`S3LEASE_FAULT_JOBS`; two processes each, on a shared SeaweedFS).
fn jobs() -> usize {
    std::env::var("S3LEASE_FAULT_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .filter(|&j| j > 0)
        .unwrap_or(10)
}

struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

static SLOTS: Slots = Slots {
    free: Mutex::new(0),
    freed: Condvar::new(),
};

struct Slot;

impl Slot {
    fn take() -> Slot {
        static INIT: std::sync::Once = std::sync::Once::new();
        INIT.call_once(|| *SLOTS.free.lock().unwrap() = jobs());
        let mut free = SLOTS.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = SLOTS.freed.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        Slot
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *SLOTS.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        SLOTS.freed.notify_one();
    }
}

#[derive(Clone, Copy)]
struct Scenario {
    verb: &'static str,
    /// Flags after the key: `--limit 1 --fair` holds a semaphore's slot
    /// (no elector) under the same faults.
    slot_flags: &'static [&'static str],
    strategy: &'static str,
    clock: &'static str,
    fault: Fault,
}

impl Scenario {
    fn name(&self) -> String {
        format!(
            "{}{}-{}-{}-{}",
            self.verb,
            if self.slot_flags.is_empty() {
                ""
            } else {
                "-slot"
            },
            self.strategy,
            self.clock,
            fault_name(self.fault)
        )
    }

    /// `s3-lease VERB k --ttl 4s -- sh -c JOB sh FILE 60` through `proxy`.
    fn member(&self, scene: &Scene, who: &str, proxy: &FaultProxy) -> Command {
        let record = scene.path(who).display().to_string();
        let mut args = vec![self.verb, "k"];
        args.extend_from_slice(self.slot_flags);
        args.extend_from_slice(&["--ttl", TTL, "--", "sh", "-c", JOB, "sh", &record, "60"]);
        let mut cmd = scene.cmd(&args);
        cmd.env("AWS_ENDPOINT_URL", proxy.url())
            .env("S3LEASE_STRATEGY", self.strategy)
            .env("S3LEASE_EXPIRY_CLOCK", self.clock)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(scene.path(&format!("{who}.err"))).unwrap());
        cmd
    }
}

/// What one scenario measured (ms; the fault at 0).
struct Row {
    scenario: Scenario,
    /// When A's command ended.
    a_stopped: Option<i64>,
    /// When B's command started.
    failover: Option<i64>,
    /// B's start minus A's end (negative: they overlapped).
    gap: Option<i64>,
    /// Why the scenario failed.
    failure: Option<String>,
}

impl Row {
    fn line(&self) -> String {
        let ms = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
        let s = &self.scenario;
        format!(
            "{:<6} {:<14} {:<9} {:<13} {:>9} {:>7} {:>10}  {}",
            s.verb,
            s.strategy,
            s.clock,
            fault_name(s.fault),
            ms(self.failover),
            ms(self.gap),
            ms(self.a_stopped),
            self.failure.as_deref().unwrap_or("ok")
        )
    }
}

const HEADER: &str = "verb   strategy       clock     fault         failover     gap  A stopped  (ms after the fault; gap = B start - A end)";

fn run_scenario(s: Scenario) -> Row {
    let mut row = Row {
        scenario: s,
        a_stopped: None,
        failover: None,
        gap: None,
        failure: None,
    };
    let result = catch_unwind(AssertUnwindSafe(|| scenario(s, &mut row)));
    row.failure = match result {
        Ok(Ok(())) => None,
        Ok(Err(why)) => Some(why),
        Err(panic) => Some(format!(
            "panicked: {}",
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    };
    println!("{}", row.line());
    row
}

fn scenario(s: Scenario, row: &mut Row) -> Result<(), String> {
    let _slot = Slot::take();
    let scene = Scene::new(&format!("fault-{}", s.name()));
    let upstream = &scene.endpoint.url;
    let proxy_a = FaultProxy::in_front_of(upstream).map_err(|e| e.to_string())?;
    let proxy_b = FaultProxy::in_front_of(upstream).map_err(|e| e.to_string())?;
    let (file_a, file_b) = (scene.path("a"), scene.path("b"));
    let mut procs = Procs::default();

    let a = procs.spawn(s.member(&scene, "a", &proxy_a));
    if !wait_until(Duration::from_secs(30), || !runs(&file_a).is_empty()) {
        return Err(format!(
            "A never ran its command: {}",
            stderr_of(&scene, "a")
        ));
    }
    let b = procs.spawn(s.member(&scene, "b", &proxy_b));
    // B has read the lock (a reply reached it), then a few more steps.
    if !wait_until(Duration::from_secs(30), || proxy_b.last_reply().is_some()) {
        return Err(format!("B never reached S3: {}", stderr_of(&scene, "b")));
    }
    std::thread::sleep(Duration::from_millis(TTL_MS / 3));
    // A leader that stalls on its own (a loaded SeaweedFS) hands over
    // before the fault: still checked for overlap, then reported.
    let early = !runs(&file_b).is_empty();

    let fault_at = now_ms();
    proxy_a.set(s.fault);
    let failed_over = wait_until(Duration::from_secs(30), || !runs(&file_b).is_empty());
    // A's command should have ended long before; wait some more to see
    // by how much they overlapped if it did not.
    wait_until(Duration::from_secs(15), || {
        runs(&file_a).iter().all(|r| r.1.is_some())
    });
    // B first (it may be leading), then A; each ends its command on SIGTERM.
    let b_status = procs.stop(b, Duration::from_secs(5));
    let a_status = procs.stop(a, Duration::from_secs(3));
    let (ra, rb) = (runs(&file_a), runs(&file_b));

    let a_end = ra.iter().filter_map(|r| r.1).max();
    row.a_stopped = a_end.map(|t| t - fault_at);
    let b_start = rb.first().map(|r| r.0);
    row.failover = b_start.map(|t| t - fault_at);
    // From the end of A's last run before B's start (unknown if one of
    // them has not ended: an overlap, reported below).
    row.gap = b_start.and_then(|b0| {
        let ends: Option<Vec<i64>> = ra.iter().filter(|r| r.0 < b0).map(|r| r.1).collect();
        ends?.into_iter().max().map(|a1| b0 - a1)
    });
    let context = || {
        format!(
            "A runs {ra:?} (exit {a_status:?}), B runs {rb:?} (exit {b_status:?}), fault at {fault_at}\n--- A stderr:\n{}--- B stderr:\n{}",
            stderr_of(&scene, "a"),
            stderr_of(&scene, "b")
        )
    };
    let wrong = violations(&ra, &rb);
    if !wrong.is_empty() {
        let wrong: Vec<String> = wrong.iter().map(ToString::to_string).collect();
        return Err(format!("OVERLAP: {}: {}", wrong.join("; "), context()));
    }
    if early {
        return Err(format!(
            "B took over before the fault (A stalled on its own): {}",
            context()
        ));
    }
    if !failed_over {
        return Err(format!("no failover within 30 s: {}", context()));
    }
    if ra
        .first()
        .is_some_and(|r| r.1.is_some_and(|end| end < fault_at))
    {
        return Err(format!("A's command ended before the fault: {}", context()));
    }
    Ok(())
}

fn matrix(verb: &'static str, slot_flags: &'static [&'static str]) {
    let scenarios: Vec<Scenario> = CLOCKS
        .iter()
        // Semaphores are single-object only.
        .filter(|(strategy, _)| slot_flags.is_empty() || *strategy == "single-object")
        .flat_map(|&(strategy, clock)| {
            faults().into_iter().map(move |fault| Scenario {
                verb,
                slot_flags,
                strategy,
                clock,
                fault,
            })
        })
        .collect();
    if !scene_endpoint_is_http() {
        return;
    }
    let started = Instant::now();
    let rows: Vec<Row> = std::thread::scope(|scope| {
        let running: Vec<_> = scenarios
            .iter()
            .map(|&s| scope.spawn(move || run_scenario(s)))
            .collect();
        running.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let mut table = format!(
        "\n`s3-lease {verb} {}` under network faults of the leader, ttl {TTL} ({:?}):\n{HEADER}\n",
        slot_flags.join(" "),
        started.elapsed()
    );
    for row in &rows {
        table.push_str(&row.line());
        table.push('\n');
    }
    println!("{table}");
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            r.failure
                .as_ref()
                .map(|f| format!("{}: {f}", r.scenario.name()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n\n")
    );
}

/// The proxies speak plain TCP to an `http://` endpoint (SeaweedFS here).
fn scene_endpoint_is_http() -> bool {
    let url = &host_test::server::shared().url;
    if url.starts_with("http://") {
        return true;
    }
    println!("skipped: the fault proxies need an http:// endpoint, not {url}");
    false
}

/// `s3-lease run`: A's command is stopped (and A exits 79) before B's starts.
#[test]
fn run_commands_never_overlap_when_the_leaders_network_fails() {
    matrix("run", &[]);
}

/// `s3-lease run --limit 1 --fair`: the same, for a slot held by a
/// `LeaseGuard` (no elector): A's command is stopped at half the ttl after
/// its last renew was sent, before B can be granted the slot.
#[test]
fn slot_commands_never_overlap_when_the_holders_network_fails() {
    matrix("run", &["--limit", "1", "--fair"]);
}

/// `s3-lease elect`: A's command is stopped and A campaigns again, in vain
/// (its network is still failing); B's term starts after A's ended.
#[test]
fn elect_terms_never_overlap_when_the_leaders_network_fails() {
    matrix("elect", &[]);
}

/// `unshare --pid --fork --mount-proc` with `sh -c 'echo $$'` prints 1:
/// PID namespaces work here. The reason why not, otherwise.
fn pid_namespaces() -> Result<(), String> {
    let out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", "echo $$"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run unshare: {e}"))?;
    let pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && pid == "1" {
        Ok(())
    } else {
        Err(format!(
            "unshare --pid --fork --mount-proc: {} (pid {pid:?}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The holder id `run` printed: `acquired k with fencing token N (holder H)`.
fn holder_in(stderr: &str) -> Option<String> {
    let at = stderr.find("(holder ")? + "(holder ".len();
    let rest = &stderr[at..];
    Some(rest[..rest.find(")\n").unwrap_or(rest.len())].to_string())
}

/// Two `run`s on one host, each PID 1 of its own PID namespace: without a
/// random part their default holder ids would be equal, and the second
/// would take the first's live lease over as its own. They must take turns.
#[test]
fn same_host_same_pid_default_holders_take_turns() {
    if let Err(why) = pid_namespaces() {
        println!("skipped: PID namespaces unavailable: {why}");
        return;
    }
    let started = Instant::now();
    let scene = Scene::new("fault-same-pid");
    let mut procs = Procs::default();
    let member = |who: &str, seconds: &str| {
        let record = scene.path(who).display().to_string();
        let inner = scene.cmd(&[
            "run", "k", "--ttl", TTL, "--", "sh", "-c", JOB, "sh", &record, seconds,
        ]);
        let unshare = ["--pid", "--fork", "--mount-proc", "--kill-child"];
        let mut cmd = through("unshare", &unshare, &inner);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(scene.path(&format!("{who}.err"))).unwrap());
        cmd
    };
    let (file_a, file_b) = (scene.path("a"), scene.path("b"));
    let a = procs.spawn(member("a", "5"));
    assert!(
        wait_until(Duration::from_secs(30), || !runs(&file_a).is_empty()),
        "A never ran its command: {}",
        stderr_of(&scene, "a")
    );
    let b = procs.spawn(member("b", "1"));
    // A runs 5 s: B steps every ttl/6 meanwhile, and must keep waiting.
    let ok = wait_until(Duration::from_secs(40), || {
        runs(&file_b).iter().any(|r| r.1.is_some())
    });
    let a_status = procs.stop(a, Duration::from_secs(10));
    let b_status = procs.stop(b, Duration::from_secs(10));
    let (ra, rb) = (runs(&file_a), runs(&file_b));
    let (ea, eb) = (stderr_of(&scene, "a"), stderr_of(&scene, "b"));
    let context = format!(
        "A runs {ra:?} (exit {a_status:?}), B runs {rb:?} (exit {b_status:?})\n--- A:\n{ea}--- B:\n{eb}"
    );
    assert_eq!(
        violations(&ra, &rb),
        vec![],
        "the commands overlapped: {context}"
    );
    assert!(ok, "B's command never ran to its end: {context}");
    let (ha, hb) = (holder_in(&ea), holder_in(&eb));
    println!(
        "same hostname, both PID 1: holders {ha:?} then {hb:?}; A ran {:?}, B ran {:?}; B started {} ms after A ended ({:?} in all)",
        ra,
        rb,
        rb[0].0 - ra[0].1.unwrap_or(i64::MAX),
        started.elapsed()
    );
    // Both are `HOSTNAME/1/RANDOM`: the case this test is about.
    let prefix = |h: &Option<String>| {
        h.as_deref()
            .and_then(|h| h.rsplit_once('/'))
            .map(|p| p.0.to_string())
    };
    assert!(
        prefix(&ha).is_some() && prefix(&ha) == prefix(&hb),
        "not the same hostname and PID: {ha:?} {hb:?}"
    );
    assert!(prefix(&ha).unwrap().ends_with("/1"), "{ha:?}");
    assert_ne!(ha, hb, "{context}");
}

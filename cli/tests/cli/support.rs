//! Running the built `s3-lease` binary as a user would, against the suite's
//! SeaweedFS (or the endpoint the AWS variables name).

use host_test::server::{shared, Endpoint};
use s3_lease::testing::history;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub const BIN: &str = env!("CARGO_BIN_EXE_s3-lease");

/// The binary under test: this build's, or `S3LEASE_CLI_BIN` (how the fault
/// tests were run against an older build, to measure what they fix).
pub fn bin() -> PathBuf {
    std::env::var_os("S3LEASE_CLI_BIN").map_or_else(|| BIN.into(), PathBuf::from)
}

/// One test's corner of the bucket, and a scratch directory.
pub struct Scene {
    pub endpoint: Endpoint,
    pub prefix: String,
    pub dir: PathBuf,
}

impl Scene {
    pub fn new(name: &str) -> Scene {
        Scene::on(shared().clone(), name)
    }

    /// A scene on another store (s3s-fs, say).
    pub fn on(endpoint: Endpoint, name: &str) -> Scene {
        static N: AtomicU32 = AtomicU32::new(0);
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis();
        let n = N.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("s3lease-cli-{name}-{stamp}-{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        let scene = Scene {
            endpoint,
            prefix: format!("cli/{name}/{stamp}-{n}/"),
            dir,
        };
        // The first run compiles the component into the shared cache;
        // once, so parallel tests do not all compile it at the same time.
        static WARM: std::sync::Once = std::sync::Once::new();
        WARM.call_once(|| {
            let out = scene.run(&["status", "warm-up"]);
            assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        });
        scene
    }

    /// `s3-lease ARGS` with the scene's S3 settings and nothing else from
    /// our environment that could change its behaviour.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        // Commands under `run` call `s3-lease` by name, as users' scripts do.
        let bin_dir = std::path::Path::new(BIN).parent().unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![bin_dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        c.args(args)
            .env_remove("S3LEASE_LEASE")
            .env_remove("AWS_SESSION_TOKEN")
            .env("AWS_ENDPOINT_URL", &self.endpoint.url)
            .env("AWS_REGION", &self.endpoint.region)
            .env("AWS_ACCESS_KEY_ID", &self.endpoint.access_key_id)
            .env("AWS_SECRET_ACCESS_KEY", &self.endpoint.secret_access_key)
            .env("S3LEASE_BUCKET", &self.endpoint.bucket)
            .env("S3LEASE_PREFIX", &self.prefix)
            .env("S3LEASE_CACHE_DIR", cache_dir())
            .env("SCENE", &self.dir)
            .env("PATH", std::env::join_paths(dirs).unwrap());
        if let Some(token) = &self.endpoint.session_token {
            c.env("AWS_SESSION_TOKEN", token);
        }
        c
    }

    /// `s3-lease ARGS` on a store other than S3 (Azure, DynamoDB): the
    /// scene's prefix and cache, the store's `vars`, and no bucket.
    pub fn on_store(&self, args: &[&str], vars: &[(&str, &str)]) -> Command {
        let mut c = self.cmd(args);
        c.env_remove("S3LEASE_BUCKET")
            .envs(vars.iter().map(|&(k, v)| (k, v)));
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// Runs with `stdin` as input.
    pub fn run_with_input(&self, args: &[&str], stdin: &str) -> Output {
        output_with_input(&mut self.cmd(args), stdin)
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The key's state as `status --json` prints it.
    pub fn status(&self, key: &str) -> Value {
        let out = self.run(&["--json", "status", key]);
        assert_eq!(code(&out), 0, "status: {}", text(&out.stderr));
        let all: Value = serde_json::from_slice(&out.stdout).unwrap();
        all[0].clone()
    }
}

/// A scene's directory goes with it: it can hold a copy of the binary and
/// a compiled component (140 MB), which every run of the suite would leave
/// behind. After a failure it stays: what it holds explains the failure.
impl Drop for Scene {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `program ARGS.. INNER_PROGRAM INNER_ARGS..` with `inner`'s environment:
/// `inner` run through another program (`nohup`, `unshare`, or `sh -c
/// 'ulimit -n 256 && exec "$@"' sh`).
pub fn through(program: &str, args: &[&str], inner: &Command) -> Command {
    let mut c = Command::new(program);
    c.args(args).arg(inner.get_program()).args(inner.get_args());
    with_env_of(&mut c, inner);
    c
}

/// Gives `c` the environment changes made to `inner`.
pub fn with_env_of(c: &mut Command, inner: &Command) {
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
}

/// Runs `command` with `stdin` as input, capturing its output.
pub fn output_with_input(command: &mut Command, stdin: &str) -> Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// One compile cache for the whole run: the first process compiles.
fn cache_dir() -> PathBuf {
    std::env::temp_dir().join(format!("s3lease-cli-cache-{}", std::process::id()))
}

pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Polls `ready` until it holds or `limit` passes.
pub fn wait_for(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    started.elapsed()
}

pub fn signal(child: &Child, signal: i32) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Rewrites the key's lock object behind its holder's back, as another
/// client that took it over would: another holder, the next token, a
/// write id of its own. Returns that token.
pub fn take_behind_its_back(scene: &Scene, key: &str) -> u64 {
    let admin = scene.endpoint.admin().unwrap();
    let object = format!("{}{key}", scene.prefix);
    let (body, _etag) = admin.get(&object).unwrap().expect("the lock object");
    let mut record: Value = serde_json::from_slice(&body).unwrap();
    let token = record["token"]
        .as_u64()
        .expect("a token in the lock object")
        + 1;
    record["token"] = token.into();
    record["holder"] = "intruder".into();
    record["write"] = "intruder-write".into();
    admin.put(&object, record.to_string().as_bytes()).unwrap();
    token
}

/// One run of a command under a lock, as the tests record it: who ran
/// it, the token it ran with (if recorded), and when it started and
/// ended (any one unit and origin, the same for all runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub who: usize,
    pub token: Option<u64>,
    pub start: u64,
    pub end: u64,
}

/// What the one history checker (`s3_lease::testing::history`) finds in
/// the runs of commands on one key of limit 1: each run a term its
/// process believed it held the key, each recorded token a grant made
/// when its run started. So: runs that overlap, and tokens that repeat
/// or do not rise in the order runs started.
pub fn turn_violations(runs: &[Run]) -> Vec<history::Violation> {
    let origin = runs.iter().map(|r| r.start).min().unwrap_or(0);
    let mut h = history::History::new(vec![history::KeySpec {
        name: "the commands' key".into(),
        limit: 1,
        fair: false,
        exclusion_checked: true,
        exact_acks: false,
    }]);
    for r in runs {
        let who = history::Who {
            actor: r.who,
            generation: 0,
        };
        let (start, end) = (r.start - origin, r.end.max(r.start) - origin);
        if let Some(token) = r.token {
            h.grants.push(history::Grant {
                key: 0,
                who,
                token,
                sent: start,
                acked: start,
            });
        }
        h.terms.push(history::Term {
            key: 0,
            who,
            token: r.token.unwrap_or(0),
            start,
            end,
            ended_by: "its command's end".into(),
        });
    }
    history::check(&h).violations
}

#[test]
fn the_turns_checker_finds_overlapping_runs_and_tokens_out_of_order() {
    let run = |who, token, start, end| Run {
        who,
        token: Some(token),
        start,
        end,
    };
    // Back to back (one ends as the next starts), tokens rising: clean.
    let clean = [
        run(0, 1, 100, 200),
        run(1, 2, 200, 300),
        run(0, 3, 350, 400),
    ];
    assert_eq!(turn_violations(&clean), vec![]);
    let invariants = |runs: &[Run]| -> Vec<&'static str> {
        turn_violations(runs).iter().map(|v| v.invariant).collect()
    };
    // The next run starts 1 unit before the last ended.
    let overlap = [run(0, 1, 100, 200), run(1, 2, 199, 300)];
    assert_eq!(
        invariants(&overlap),
        ["never more believed holders than the limit"]
    );
    // Without tokens (the fault tests record none): still an overlap.
    let untokened = [(0, 100, 200), (1, 150, 160)].map(|(who, start, end)| Run {
        who,
        token: None,
        start,
        end,
    });
    assert_eq!(
        invariants(&untokened),
        ["never more believed holders than the limit"]
    );
    // A later run with a lower token, and a token twice.
    let falling = [run(0, 2, 100, 200), run(1, 1, 250, 300)];
    assert_eq!(invariants(&falling), ["tokens rise in grant order"]);
    let twice = [run(0, 1, 100, 200), run(1, 1, 250, 300)];
    assert_eq!(
        invariants(&twice),
        ["tokens unique per key", "tokens rise in grant order"]
    );
}

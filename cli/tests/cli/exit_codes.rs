//! Every exit code `s3-lease` documents, from every command that can give
//! it, on both stores, each cause produced for real: a missing bucket or
//! table, a wrong secret, a closed port, a silent network, a corrupt lock
//! object, a request the store refuses, a held key, a bad flag. The cases
//! run in parallel (each on a key of its own).
//!
//! The exit-code table in `docs/command-line.md` is checked against these
//! cases: each row's "given by" column must name exactly the commands that
//! have a case with that code here, and every such (command, code) must
//! have a case on each store, but for the pairs `NOT_ON_DYNAMODB` lists,
//! with the reason. On a mismatch the test prints the table as the cases
//! say it should read.

use crate::support::{code, text, Scene};
use host_test::dynalite;
use host_test::fault_proxy::{Fault, FaultProxy};
use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Store {
    S3,
    DynamoDb,
}

const BOTH: &[Store] = &[Store::S3, Store::DynamoDb];
const S3_ONLY: &[Store] = &[Store::S3];

/// Every command, as the doc's table names them.
const COMMANDS: [&str; 12] = [
    "run",
    "elect",
    "acquire",
    "renew",
    "release",
    "status",
    "fenced put",
    "fenced get",
    "fenced delete",
    "preflight",
    "version",
    "precompile",
];

/// (command, code) pairs the doc lists that DynamoDB cannot give, and why.
const NOT_ON_DYNAMODB: &[(&str, &str, &str)] = &[
    (
        "fenced put",
        "0",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced get",
        "0",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced delete",
        "0",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced put",
        "65",
        "refused on a table (78) before a lease is read",
    ),
    (
        "fenced delete",
        "65",
        "refused on a table (78) before a lease is read",
    ),
    (
        "fenced get",
        "66",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced put",
        "69",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced get",
        "69",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced delete",
        "69",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced put",
        "70",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced get",
        "70",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced delete",
        "70",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced put",
        "80",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced delete",
        "80",
        "fenced writes are S3's: refused on a table (78)",
    ),
    // dynalite checks no signatures: a wrong secret is not refused there.
    ("run", "77", "dynalite checks no signatures"),
    ("elect", "77", "dynalite checks no signatures"),
    ("acquire", "77", "dynalite checks no signatures"),
    ("renew", "77", "dynalite checks no signatures"),
    ("release", "77", "dynalite checks no signatures"),
    ("status", "77", "dynalite checks no signatures"),
    ("preflight", "77", "dynalite checks no signatures"),
    (
        "fenced put",
        "77",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced get",
        "77",
        "fenced writes are S3's: refused on a table (78)",
    ),
    (
        "fenced delete",
        "77",
        "fenced writes are S3's: refused on a table (78)",
    ),
];

/// What a case expects.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// This exit code.
    Code(i32),
    /// The command's own status, passed through (`CMD's` in the doc).
    Own(i32),
}

impl Expect {
    fn code(self) -> i32 {
        match self {
            Expect::Code(c) | Expect::Own(c) => c,
        }
    }

    /// The doc table's first column.
    fn row(self) -> String {
        match self {
            Expect::Own(_) => "CMD's".into(),
            Expect::Code(126 | 127) => "126, 127".into(),
            Expect::Code(c) => c.to_string(),
        }
    }
}

struct Case {
    command: &'static str,
    expect: Expect,
    cause: &'static str,
    stores: &'static [Store],
    /// A fragment stderr must contain.
    says: Option<&'static str>,
    /// A fragment stderr must contain that depends on the case's store
    /// (its bucket or table, its endpoint).
    names: Option<fn(&Ctx) -> String>,
    /// At most this long (errors that retrying cannot fix end at once).
    within: Duration,
    run: fn(&Ctx) -> Output,
}

fn case(
    command: &'static str,
    expect: Expect,
    cause: &'static str,
    stores: &'static [Store],
    run: fn(&Ctx) -> Output,
) -> Case {
    Case {
        command,
        expect,
        cause,
        stores,
        says: None,
        names: None,
        within: Duration::from_secs(20),
        run,
    }
}

impl Case {
    fn says(mut self, fragment: &'static str) -> Self {
        self.says = Some(fragment);
        self
    }

    fn names(mut self, fragment: fn(&Ctx) -> String) -> Self {
        self.names = Some(fragment);
        self
    }

    fn within(mut self, limit: Duration) -> Self {
        self.within = limit;
        self
    }
}

/// The world of the whole test: a scene per store, the tables, a closed
/// port, a component that does not load.
struct World {
    s3: Scene,
    dynamodb: Scene,
    table: String,
    /// A table keyed by `id`, not `key`: every lock request is refused.
    wrong_table: String,
    closed_port: u16,
    broken_component: String,
    next_key: AtomicUsize,
}

/// One case's view: its store and a key of its own (`KEY` in arguments).
struct Ctx<'a> {
    world: &'a World,
    store: Store,
    key: String,
}

impl Ctx<'_> {
    fn scene(&self) -> &Scene {
        match self.store {
            Store::S3 => &self.world.s3,
            Store::DynamoDb => &self.world.dynamodb,
        }
    }

    fn args(&self, args: &[&str]) -> Vec<String> {
        args.iter()
            .map(|a| {
                if *a == "KEY" {
                    self.key.clone()
                } else {
                    a.to_string()
                }
            })
            .collect()
    }

    /// `s3-lease ARGS` on this case's store.
    fn cmd(&self, args: &[&str]) -> Command {
        let args = self.args(args);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match self.store {
            Store::S3 => self.world.s3.cmd(&args),
            Store::DynamoDb => on_table(&self.world.dynamodb, &self.world.table, &args),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        output(&mut self.cmd(args))
    }

    fn run_in(&self, args: &[&str], stdin: &str) -> Output {
        output_with_input(&mut self.cmd(args), stdin)
    }

    /// With the store's endpoint a closed port.
    fn closed(&self, args: &[&str]) -> Output {
        self.at(
            &format!("http://127.0.0.1:{}", self.world.closed_port),
            args,
        )
    }

    fn at(&self, endpoint: &str, args: &[&str]) -> Output {
        let mut c = self.cmd(args);
        c.env("AWS_ENDPOINT_URL", endpoint)
            .env("AWS_ENDPOINT_URL_DYNAMODB", endpoint);
        output(&mut c)
    }

    /// With the endpoint a web server that is not S3 (`not_s3_endpoint`).
    fn not_s3(&self, args: &[&str]) -> Output {
        self.at(not_s3_endpoint(), args)
    }

    /// On a bucket or table that does not exist.
    fn missing(&self, args: &[&str]) -> Output {
        let mut c = self.cmd(args);
        c.env("S3LEASE_BUCKET", "s3lease-no-such-bucket")
            .env("S3LEASE_TABLE", "s3lease-no-such-table");
        if self.store == Store::DynamoDb {
            c.env_remove("S3LEASE_BUCKET");
        }
        output(&mut c)
    }

    /// With no bucket (or, on DynamoDB, no table) configured at all.
    fn unconfigured(&self, args: &[&str], stdin: &str) -> Output {
        let mut c = self.cmd(args);
        c.env_remove("S3LEASE_BUCKET").env_remove("S3LEASE_TABLE");
        output_with_input(&mut c, stdin)
    }

    /// With a secret the store refuses (S3: SeaweedFS checks signatures).
    fn bad_secret(&self, args: &[&str], stdin: &str) -> Output {
        let mut c = self.cmd(args);
        c.env("AWS_SECRET_ACCESS_KEY", "not-the-secret-s3lease");
        output_with_input(&mut c, stdin)
    }

    /// Loading a component that is not one.
    fn broken(&self, args: &[&str], stdin: &str) -> Output {
        let mut c = self.cmd(args);
        c.env("S3LEASE_COMPONENT", &self.world.broken_component);
        output_with_input(&mut c, stdin)
    }

    /// A request the store refuses as invalid: on S3 a key SeaweedFS
    /// answers 400 to; on DynamoDB a table keyed by another attribute.
    fn refused(&self, args: &[&str]) -> Output {
        match self.store {
            Store::S3 => {
                let args: Vec<&str> = args
                    .iter()
                    .map(|a| if *a == "KEY" { "a/../b" } else { a })
                    .collect();
                output(&mut self.world.s3.cmd(&args))
            }
            Store::DynamoDb => {
                let args = self.args(args);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                output(&mut on_table(
                    &self.world.dynamodb,
                    &self.world.wrong_table,
                    &args,
                ))
            }
        }
    }

    /// `--check-store` on a store the preflight refuses: s3s-fs for S3
    /// (it ignores DELETE If-Match), the wrongly keyed table for DynamoDB.
    fn unsafe_store(&self, args: &[&str]) -> Option<Output> {
        match self.store {
            Store::S3 => {
                let server = s3s_fs()?;
                let scene = Scene::on(server.endpoint.clone(), "exit-codes-s3s");
                let args = self.args(args);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                Some(output(&mut scene.cmd(&args)))
            }
            Store::DynamoDb => Some(self.refused(args)),
        }
    }

    /// A lease on KEY as `acquire` prints it.
    fn lease(&self, holder: &str) -> String {
        let out = self.run(&["acquire", "KEY", "--ttl", "60s", "--holder", holder]);
        assert_eq!(code(&out), 0, "acquire: {}", text(&out.stderr));
        text(&out.stdout)
    }

    /// With stdout a pipe nobody reads (its read end closed first): a
    /// lease printed to nobody.
    fn unread(&self, args: &[&str]) -> Output {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let mut command = self.cmd(args);
        command
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped());
        command.output().unwrap()
    }

    /// The lease in a file; its path.
    fn lease_file(&self, lease: &str) -> String {
        let path = self.scene().path(&format!("{}.lease", self.key));
        std::fs::write(&path, lease).unwrap();
        path.display().to_string()
    }

    /// A fenced object of this case's own (fenced objects take no prefix).
    fn object(&self) -> String {
        format!("{}{}-object", self.scene().prefix, self.key)
    }

    /// Raw calls to the case's store, outside the component.
    fn admin(&self) -> host_test::admin::Admin {
        match self.store {
            Store::S3 => self.world.s3.endpoint.admin().unwrap(),
            Store::DynamoDb => dynalite::shared().admin(&self.world.table).unwrap(),
        }
    }

    /// The lock object's name for KEY.
    fn lock_object(&self) -> String {
        format!("{}{}", self.scene().prefix, self.key)
    }

    /// A lock object at KEY that is not one.
    fn corrupt(&self) {
        self.admin()
            .put(&self.lock_object(), b"not a lock object")
            .unwrap();
    }
}

/// A web server that answers every request with a bare 404 (as a
/// SeaweedFS master does, or any web server), started once: the endpoint
/// of the cases "an endpoint that is not S3", whose errors must name it.
fn not_s3_endpoint() -> &'static str {
    static URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    URL.get_or_init(|| {
        use host_test::aws_fakes::http::{serve, Request, Response};
        serve(std::sync::Arc::new(|_: Request| {
            Response::new(404, "text/plain; charset=utf-8", "404 page not found\n")
        }))
        .unwrap()
    })
}

/// What a configuration error may take: the component's load, and one
/// request (not an acquire's wait).
const AT_ONCE: Duration = Duration::from_secs(10);

/// How long one `s3-lease` of a case may run: one that waits for ever (on
/// an error retried for ever) is killed and fails its case, rather than
/// hanging the suite.
const PROCESS_LIMIT: Duration = Duration::from_secs(30);

/// Runs `command` with `stdin` as input, killed after `PROCESS_LIMIT`. A
/// command may exit before it reads its input (a configuration refused
/// first): the pipe breaking is fine.
fn output_with_input(command: &mut Command, stdin: &str) -> Output {
    use std::io::{Read, Write};
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.as_bytes().to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let reader = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = from.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = reader(Box::new(child.stdout.take().unwrap()));
    let stderr = reader(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let (status, killed) = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break (status, false);
        }
        if started.elapsed() > PROCESS_LIMIT {
            let _ = child.kill();
            break (child.wait().unwrap(), true);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = writer.join();
    let mut stderr = stderr.join().unwrap_or_default();
    if killed {
        stderr.extend_from_slice(b"\n(killed by the test: still running after 30 s)");
    }
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr,
    }
}

fn output(command: &mut Command) -> Output {
    output_with_input(command, "")
}

/// `s3-lease ARGS` on `table` (dynalite), with the scene's prefix and cache.
fn on_table(scene: &Scene, table: &str, args: &[&str]) -> Command {
    let mut c = scene.cmd(args);
    c.env("S3LEASE_STORE", "dynamodb")
        .env("S3LEASE_TABLE", table)
        .env("AWS_ENDPOINT_URL_DYNAMODB", &dynalite::shared().url)
        .env("AWS_ACCESS_KEY_ID", &dynalite::shared().access_key_id)
        .env(
            "AWS_SECRET_ACCESS_KEY",
            &dynalite::shared().secret_access_key,
        )
        .env_remove("S3LEASE_BUCKET");
    c
}

/// s3s-fs, started once, if installed (setup.sh's test tools build it;
/// under CI=true it must be).
fn s3s_fs() -> Option<&'static host_test::s3s_fs::S3sFs> {
    static SERVER: std::sync::OnceLock<Option<host_test::s3s_fs::S3sFs>> =
        std::sync::OnceLock::new();
    SERVER
        .get_or_init(|| {
            let bin = host_test::s3s_fs::binary();
            if !bin.exists() {
                assert_ne!(
                    std::env::var("CI").as_deref(),
                    Ok("true"),
                    "s3s-fs is not installed at {}",
                    bin.display()
                );
                return None;
            }
            Some(host_test::s3s_fs::S3sFs::start().unwrap_or_else(|e| panic!("{e:#}")))
        })
        .as_ref()
}

/// A table whose partition key is `id`: the lock's GetItem and PutItem,
/// which name `key`, are refused (400 ValidationException).
pub fn wrongly_keyed_table() -> String {
    use s3_lease::stores::dynamodb;
    let table = format!(
        "cli-wrong-key-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    let admin = dynalite::shared().admin(&table).unwrap();
    let r = admin
        .send(dynamodb::call(
            "CreateTable",
            &serde_json::json!({
                "TableName": table,
                "KeySchema": [{ "AttributeName": "id", "KeyType": "HASH" }],
                "AttributeDefinitions": [{ "AttributeName": "id", "AttributeType": "S" }],
                "BillingMode": "PAY_PER_REQUEST",
            }),
            64 * 1024,
        ))
        .unwrap();
    assert_eq!(r.status, 200, "CreateTable: {}", r.s3_error());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = admin
            .send(dynamodb::call(
                "DescribeTable",
                &serde_json::json!({ "TableName": table }),
                64 * 1024,
            ))
            .unwrap();
        let described: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
        if described["Table"]["TableStatus"] == "ACTIVE" {
            return table;
        }
        assert!(Instant::now() < deadline, "{table} not ACTIVE");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts `s3-lease ARGS` with its output to files; the child.
fn spawn(c: &Ctx, args: &[&str]) -> std::process::Child {
    c.cmd(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_for_file(path: &std::path::Path, limit: Duration) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < limit,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn cases() -> Vec<Case> {
    use Expect::{Code, Own};
    let quick = Duration::from_secs(5);
    vec![
        // ---- run
        case("run", Code(0), "the command succeeds", BOTH, |c| {
            c.run(&["run", "KEY", "--", "true"])
        }),
        case("run", Own(3), "the command exits 3", BOTH, |c| {
            c.run(&["run", "KEY", "--", "sh", "-c", "exit 3"])
        }),
        case("run", Own(143), "SIGTERM ends the command", BOTH, |c| {
            c.run(&["run", "KEY", "--", "sh", "-c", "kill -TERM $$"])
        }),
        case("run", Code(64), "--ttl over 7 days", BOTH, |c| {
            c.run(&["run", "KEY", "--ttl", "100d", "--", "true"])
        })
        .says("--ttl"),
        case("run", Code(64), "an empty key", BOTH, |c| {
            c.run(&["run", "", "--", "true"])
        })
        .says("KEY must not be empty"),
        case("run", Code(64), "a key with a tab", BOTH, |c| {
            c.run(&["run", "a\tb", "--", "true"])
        })
        .says("control character"),
        case("run", Code(64), "a 1025-byte key", BOTH, |c| {
            c.run(&["run", &"k".repeat(1025), "--", "true"])
        })
        .says("at most 1024 bytes"),
        case("run", Code(64), "an endpoint with a password", BOTH, |c| {
            let out = c.run(&[
                "--endpoint",
                "http://user:hunter2@127.0.0.1:1",
                "run",
                "KEY",
                "--",
                "true",
            ]);
            assert!(
                !text(&out.stderr).contains("hunter2"),
                "{}",
                text(&out.stderr)
            );
            out
        })
        .says("--endpoint"),
        case("run", Code(64), "--limit other than the key's", BOTH, |c| {
            let out = c.run(&["acquire", "KEY", "--limit", "2", "--ttl", "60s"]);
            assert_eq!(code(&out), 0, "{}", text(&out.stderr));
            c.run(&["run", "KEY", "--limit", "3", "--", "true"])
        }),
        case("run", Code(69), "a request the store refuses", BOTH, |c| {
            c.refused(&["run", "KEY", "--", "true"])
        })
        .within(quick),
        case("run", Code(69), "a corrupt lock object", BOTH, |c| {
            c.corrupt();
            c.run(&["run", "KEY", "--", "true"])
        })
        .says("not one of ours")
        .within(quick),
        case("run", Code(69), "a closed port, --wait 1s", BOTH, |c| {
            c.closed(&["run", "KEY", "--wait", "1s", "--", "true"])
        })
        .says("endpoint http://127.0.0.1:")
        .names(|c| format!("endpoint http://127.0.0.1:{}, ", c.world.closed_port))
        .within(Duration::from_millis(3_500)),
        case("run", Code(69), "a silent network, --wait 1s", BOTH, |c| {
            let upstream = match c.store {
                Store::S3 => c.world.s3.endpoint.url.clone(),
                Store::DynamoDb => dynalite::shared().url.clone(),
            };
            let proxy = FaultProxy::in_front_of(&upstream).unwrap();
            proxy.set(Fault::Silent);
            c.at(&proxy.url(), &["run", "KEY", "--wait", "1s", "--", "true"])
        })
        .within(Duration::from_millis(3_500)),
        case(
            "run",
            Code(69),
            "a slot: a closed port, --wait 1s",
            BOTH,
            |c| c.closed(&["run", "KEY", "--limit", "2", "--wait", "1s", "--", "true"]),
        )
        .within(Duration::from_millis(3_500)),
        case(
            "run",
            Code(70),
            "a component that does not load",
            BOTH,
            |c| c.broken(&["run", "KEY", "--", "true"], ""),
        ),
        case("run", Code(75), "held, --wait 0", BOTH, |c| {
            c.lease("other");
            c.run(&["run", "KEY", "--wait", "0", "--", "true"])
        })
        .says("held by other")
        .within(Duration::from_millis(2_500)),
        case("run", Code(75), "held, --wait 1s", BOTH, |c| {
            c.lease("other");
            c.run(&["run", "KEY", "--wait", "1s", "--", "true"])
        })
        .says("held by other")
        .within(Duration::from_millis(3_500)),
        case("run", Code(75), "a full semaphore, --wait 1s", BOTH, |c| {
            let out = c.run(&["acquire", "KEY", "--limit", "1", "--ttl", "60s"]);
            assert_eq!(code(&out), 0, "{}", text(&out.stderr));
            c.run(&["run", "KEY", "--limit", "1", "--wait", "1s", "--", "true"])
        })
        .within(Duration::from_millis(3_500)),
        case("run", Code(77), "a wrong secret", S3_ONLY, |c| {
            c.bad_secret(&["run", "KEY", "--", "true"], "")
        })
        .says("access denied")
        .within(quick),
        case("run", Code(78), "no such bucket or table", BOTH, |c| {
            c.missing(&["run", "KEY", "--", "true"])
        })
        .says("no such")
        .names(|c| match c.store {
            Store::S3 => "no such bucket `s3lease-no-such-bucket` at http://".into(),
            Store::DynamoDb => "no such table `s3lease-no-such-table` at http://".into(),
        })
        .within(quick),
        case(
            "run",
            Code(78),
            "an endpoint with a password, from the environment",
            BOTH,
            |c| {
                let out = c.at(
                    "http://user:hunter2@127.0.0.1:1",
                    &["run", "KEY", "--", "true"],
                );
                assert!(
                    !text(&out.stderr).contains("hunter2"),
                    "{}",
                    text(&out.stderr)
                );
                out
            },
        )
        .says("AWS_ENDPOINT_URL"),
        case(
            "run",
            Code(79),
            "the lock taken over while held",
            BOTH,
            |c| {
                let started = c.scene().path(&format!("{}.started", c.key));
                let script = format!("touch {}; sleep 30", started.display());
                let child = spawn(
                    c,
                    &[
                        "run", "KEY", "--ttl", "3s", "--holder", "h", "--", "sh", "-c", &script,
                    ],
                );
                wait_for_file(&started, Duration::from_secs(15));
                // The same holder id takes its own live lease over, with a new
                // token: the running holder's next renew finds it taken. (An
                // attempt that races a renew finds the lock changed under it:
                // held, exit 75; the next one takes it.)
                let taken = (0..20).any(|_| {
                    let out = c.run(&["acquire", "KEY", "--holder", "h", "--ttl", "3s"]);
                    std::thread::sleep(Duration::from_millis(50));
                    code(&out) == 0
                });
                assert!(taken, "the holder id never took its lease over");
                child.wait_with_output().unwrap()
            },
        )
        .says("a renew found it taken"),
        case(
            "run",
            Code(81),
            "--check-store on an unsafe store",
            BOTH,
            |c| {
                c.unsafe_store(&["--check-store", "run", "KEY", "--", "true"])
                    .unwrap_or_else(skipped)
            },
        ),
        case(
            "run",
            Code(126),
            "a command that cannot be run",
            BOTH,
            |c| {
                let path = c.scene().path("not-executable");
                std::fs::write(&path, "true\n").unwrap();
                c.run(&["run", "KEY", "--", &path.display().to_string()])
            },
        ),
        case("run", Code(127), "a command that is not there", BOTH, |c| {
            c.run(&["run", "KEY", "--", "no-such-command-s3lease"])
        }),
        // ---- elect
        case("elect", Code(0), "the command succeeds", BOTH, |c| {
            c.run(&["elect", "KEY", "--", "true"])
        }),
        case("elect", Own(3), "the command exits 3", BOTH, |c| {
            c.run(&["elect", "KEY", "--", "sh", "-c", "exit 3"])
        }),
        case("elect", Code(64), "--ttl under 1s", BOTH, |c| {
            c.run(&["elect", "KEY", "--ttl", "500ms", "--", "true"])
        })
        .says("--ttl"),
        case("elect", Code(64), "no command", BOTH, |c| {
            c.run(&["elect", "KEY"])
        }),
        case(
            "elect",
            Code(69),
            "a request the store refuses",
            BOTH,
            |c| c.refused(&["elect", "KEY", "--", "true"]),
        )
        .within(quick),
        case("elect", Code(69), "a corrupt lock object", BOTH, |c| {
            c.corrupt();
            c.run(&["elect", "KEY", "--", "true"])
        })
        .within(quick),
        case(
            "elect",
            Code(70),
            "a component that does not load",
            BOTH,
            |c| c.broken(&["elect", "KEY", "--", "true"], ""),
        ),
        case("elect", Code(77), "a wrong secret", S3_ONLY, |c| {
            c.bad_secret(&["elect", "KEY", "--", "true"], "")
        })
        .within(quick),
        case("elect", Code(78), "no such bucket or table", BOTH, |c| {
            c.missing(&["elect", "KEY", "--", "true"])
        })
        .says("no such")
        .within(quick),
        case(
            "elect",
            Code(81),
            "--check-store on an unsafe store",
            BOTH,
            |c| {
                c.unsafe_store(&["--check-store", "elect", "KEY", "--", "true"])
                    .unwrap_or_else(skipped)
            },
        ),
        case(
            "elect",
            Code(126),
            "a command that cannot be run",
            BOTH,
            |c| {
                let path = c.scene().path("not-executable");
                std::fs::write(&path, "true\n").unwrap();
                c.run(&["elect", "KEY", "--", &path.display().to_string()])
            },
        ),
        case(
            "elect",
            Code(127),
            "a command that is not there",
            BOTH,
            |c| c.run(&["elect", "KEY", "--", "no-such-command-s3lease"]),
        ),
        // ---- acquire
        case("acquire", Code(0), "free", BOTH, |c| {
            c.run(&["acquire", "KEY"])
        }),
        case(
            "acquire",
            Code(141),
            "stdout closed (released)",
            BOTH,
            |c| c.unread(&["acquire", "KEY"]),
        ),
        case("acquire", Code(64), "--ttl 1ms", BOTH, |c| {
            c.run(&["acquire", "KEY", "--ttl", "1ms"])
        })
        .says("--ttl"),
        case("acquire", Code(64), "--ttl 100d", BOTH, |c| {
            c.run(&["acquire", "KEY", "--ttl", "100d"])
        })
        .says("over 7 days"),
        case(
            "acquire",
            Code(64),
            "--limit other than the key's",
            BOTH,
            |c| {
                let out = c.run(&["acquire", "KEY", "--limit", "2", "--ttl", "60s"]);
                assert_eq!(code(&out), 0, "{}", text(&out.stderr));
                c.run(&["acquire", "KEY", "--limit", "3"])
            },
        ),
        case(
            "acquire",
            Code(69),
            "a request the store refuses",
            BOTH,
            |c| c.refused(&["acquire", "KEY"]),
        ),
        case("acquire", Code(69), "a corrupt lock object", BOTH, |c| {
            c.corrupt();
            c.run(&["acquire", "KEY"])
        }),
        case("acquire", Code(69), "a closed port", BOTH, |c| {
            c.closed(&["acquire", "KEY", "--wait", "1s"])
        }),
        case(
            "acquire",
            Code(70),
            "a component that does not load",
            BOTH,
            |c| c.broken(&["acquire", "KEY"], ""),
        ),
        case("acquire", Code(75), "held", BOTH, |c| {
            c.lease("other");
            c.run(&["acquire", "KEY", "--wait", "1s"])
        })
        .within(Duration::from_millis(3_500)),
        case("acquire", Code(77), "a wrong secret", S3_ONLY, |c| {
            c.bad_secret(&["acquire", "KEY"], "")
        }),
        case("acquire", Code(78), "no such bucket or table", BOTH, |c| {
            c.missing(&["acquire", "KEY"])
        }),
        case(
            "acquire",
            Code(78),
            "an endpoint that is not S3",
            S3_ONLY,
            |c| c.not_s3(&["acquire", "KEY", "--wait", "30s"]),
        )
        .says(not_s3_endpoint())
        .within(AT_ONCE),
        case(
            "acquire",
            Code(81),
            "--check-store on an unsafe store",
            BOTH,
            |c| {
                c.unsafe_store(&["--check-store", "acquire", "KEY"])
                    .unwrap_or_else(skipped)
            },
        ),
        // ---- renew
        case("renew", Code(0), "a live lease", BOTH, |c| {
            let lease = c.lease("h");
            c.run_in(&["renew"], &lease)
        }),
        case("renew", Code(141), "stdout closed (released)", BOTH, |c| {
            let lease = c.lease_file(&c.lease("h"));
            c.unread(&["renew", "--lease", &lease])
        }),
        case("renew", Code(64), "an unknown flag", BOTH, |c| {
            c.run(&["renew", "--bogus"])
        }),
        case("renew", Code(65), "not JSON", BOTH, |c| {
            c.run_in(&["renew"], "not json")
        }),
        case("renew", Code(65), "an altered lease", BOTH, |c| {
            let mut lease: serde_json::Value = serde_json::from_str(&c.lease("h")).unwrap();
            lease["token"] = 99.into();
            c.run_in(&["renew"], &lease.to_string())
        }),
        case("renew", Code(69), "a closed port", BOTH, |c| {
            let lease = c.lease_file(&c.lease("h"));
            c.closed(&["renew", "--lease", &lease])
        }),
        case(
            "renew",
            Code(70),
            "a component that does not load",
            BOTH,
            |c| {
                let lease = c.lease("h");
                c.broken(&["renew"], &lease)
            },
        ),
        case("renew", Code(77), "a wrong secret", S3_ONLY, |c| {
            let lease = c.lease("h");
            c.bad_secret(&["renew"], &lease)
        }),
        case(
            "renew",
            Code(78),
            "no bucket or table configured",
            BOTH,
            |c| {
                let lease = c.lease("h");
                c.unconfigured(&["renew"], &lease)
            },
        ),
        case(
            "renew",
            Code(79),
            "a lease superseded by a later token",
            BOTH,
            |c| {
                let first = c.lease("h");
                c.lease("h");
                c.run_in(&["renew"], &first)
            },
        )
        .says("superseded (now held by h with token 2)"),
        case("renew", Code(79), "a lease already released", BOTH, |c| {
            let lease = c.lease("h");
            let out = c.run_in(&["release"], &lease);
            assert_eq!(code(&out), 0, "{}", text(&out.stderr));
            c.run_in(&["renew"], &lease)
        })
        .says("already released"),
        // ---- release
        case("release", Code(0), "a live lease", BOTH, |c| {
            let lease = c.lease("h");
            c.run_in(&["release"], &lease)
        }),
        case("release", Code(0), "a lease already released", BOTH, |c| {
            let lease = c.lease("h");
            let out = c.run_in(&["release"], &lease);
            assert_eq!(code(&out), 0, "{}", text(&out.stderr));
            c.run_in(&["release"], &lease)
        })
        .says("already released"),
        case("release", Code(64), "--lease without a file", BOTH, |c| {
            c.run(&["release", "--lease"])
        }),
        case("release", Code(65), "an altered lease", BOTH, |c| {
            let mut lease: serde_json::Value = serde_json::from_str(&c.lease("h")).unwrap();
            lease["holder_id"] = "someone-else".into();
            c.run_in(&["release"], &lease.to_string())
        }),
        case("release", Code(69), "a closed port", BOTH, |c| {
            let lease = c.lease("h");
            let out = {
                let mut cmd = c.cmd(&["release"]);
                cmd.env(
                    "AWS_ENDPOINT_URL",
                    format!("http://127.0.0.1:{}", c.world.closed_port),
                )
                .env(
                    "AWS_ENDPOINT_URL_DYNAMODB",
                    format!("http://127.0.0.1:{}", c.world.closed_port),
                );
                output_with_input(&mut cmd, &lease)
            };
            out
        }),
        case(
            "release",
            Code(70),
            "a component that does not load",
            BOTH,
            |c| {
                let lease = c.lease("h");
                c.broken(&["release"], &lease)
            },
        ),
        case("release", Code(77), "a wrong secret", S3_ONLY, |c| {
            let lease = c.lease("h");
            c.bad_secret(&["release"], &lease)
        }),
        case(
            "release",
            Code(78),
            "no bucket or table configured",
            BOTH,
            |c| {
                let lease = c.lease("h");
                c.unconfigured(&["release"], &lease)
            },
        ),
        case(
            "release",
            Code(79),
            "a lease superseded by a later token",
            BOTH,
            |c| {
                let first = c.lease("h");
                c.lease("h");
                c.run_in(&["release"], &first)
            },
        )
        .says("superseded"),
        // ---- status
        case("status", Code(0), "never locked", BOTH, |c| {
            c.run(&["status", "KEY"])
        }),
        case("status", Code(64), "an empty key", BOTH, |c| {
            c.run(&["status", ""])
        })
        .says("KEY must not be empty"),
        case(
            "status",
            Code(69),
            "a request the store refuses",
            BOTH,
            |c| c.refused(&["status", "KEY"]),
        ),
        case("status", Code(69), "a corrupt lock object", BOTH, |c| {
            c.corrupt();
            c.run(&["status", "KEY"])
        }),
        case("status", Code(69), "a closed port", BOTH, |c| {
            c.closed(&["status", "KEY"])
        })
        .says("endpoint http://127.0.0.1:"),
        case(
            "status",
            Code(70),
            "a component that does not load",
            BOTH,
            |c| c.broken(&["status", "KEY"], ""),
        ),
        case("status", Code(77), "a wrong secret", S3_ONLY, |c| {
            c.bad_secret(&["status", "KEY"], "")
        }),
        case("status", Code(78), "no such bucket or table", BOTH, |c| {
            c.missing(&["status", "KEY"])
        }),
        case(
            "status",
            Code(78),
            "an endpoint that is not S3",
            S3_ONLY,
            |c| c.not_s3(&["status", "KEY"]),
        )
        .says(not_s3_endpoint())
        .within(AT_ONCE),
        // ---- fenced put
        case("fenced put", Code(0), "with a live lease", S3_ONLY, |c| {
            let lease = c.lease_file(&c.lease("h"));
            c.run_in(&["fenced", "put", &c.object(), "--lease", &lease], "body")
        }),
        case("fenced put", Code(64), "an empty OBJECT", BOTH, |c| {
            c.run_in(&["fenced", "put", ""], "body")
        })
        .says("OBJECT must not be empty"),
        case(
            "fenced put",
            Code(65),
            "a lease that is not JSON",
            S3_ONLY,
            |c| {
                let lease = c.lease_file("not json");
                c.run_in(&["fenced", "put", &c.object(), "--lease", &lease], "body")
            },
        ),
        case("fenced put", Code(69), "a closed port", S3_ONLY, |c| {
            let lease = c.lease_file(&c.lease("h"));
            let mut cmd = c.cmd(&["fenced", "put", &c.object(), "--lease", &lease]);
            cmd.env(
                "AWS_ENDPOINT_URL",
                format!("http://127.0.0.1:{}", c.world.closed_port),
            );
            output_with_input(&mut cmd, "body")
        }),
        case(
            "fenced put",
            Code(70),
            "a component that does not load",
            S3_ONLY,
            |c| {
                let lease = c.lease_file(&c.lease("h"));
                c.broken(&["fenced", "put", &c.object(), "--lease", &lease], "body")
            },
        ),
        case("fenced put", Code(77), "a wrong secret", S3_ONLY, |c| {
            let lease = c.lease_file(&c.lease("h"));
            c.bad_secret(&["fenced", "put", &c.object(), "--lease", &lease], "body")
        }),
        case("fenced put", Code(78), "no bucket, or a table", BOTH, |c| {
            let lease = c.lease_file(&c.lease("h"));
            let args = ["fenced", "put", &c.object(), "--lease", &lease];
            match c.store {
                Store::S3 => c.unconfigured(&args, "body"),
                Store::DynamoDb => c.run_in(&args, "body"),
            }
        }),
        case(
            "fenced put",
            Code(80),
            "a newer token wrote",
            S3_ONLY,
            |c| {
                let first = c.lease_file(&c.lease("h"));
                let second = c.lease("h");
                let newer = c.scene().path(&format!("{}.newer", c.key));
                std::fs::write(&newer, second).unwrap();
                let newer = newer.display().to_string();
                let out = c.run_in(&["fenced", "put", &c.object(), "--lease", &newer], "new");
                assert_eq!(code(&out), 0, "{}", text(&out.stderr));
                c.run_in(&["fenced", "put", &c.object(), "--lease", &first], "old")
            },
        ),
        // ---- fenced get
        case(
            "fenced get",
            Code(0),
            "an object written fenced",
            S3_ONLY,
            |c| {
                let lease = c.lease_file(&c.lease("h"));
                let out = c.run_in(&["fenced", "put", &c.object(), "--lease", &lease], "body");
                assert_eq!(code(&out), 0, "{}", text(&out.stderr));
                c.run(&["fenced", "get", &c.object()])
            },
        ),
        case("fenced get", Code(64), "an OBJECT with a tab", BOTH, |c| {
            c.run(&["fenced", "get", "a\tb"])
        })
        .says("control character"),
        case("fenced get", Code(66), "no such object", S3_ONLY, |c| {
            c.run(&["fenced", "get", &c.object()])
        }),
        case("fenced get", Code(69), "a closed port", S3_ONLY, |c| {
            c.closed(&["fenced", "get", &c.object()])
        }),
        case(
            "fenced get",
            Code(70),
            "a component that does not load",
            S3_ONLY,
            |c| c.broken(&["fenced", "get", &c.object()], ""),
        ),
        case("fenced get", Code(77), "a wrong secret", S3_ONLY, |c| {
            c.bad_secret(&["fenced", "get", &c.object()], "")
        }),
        case(
            "fenced get",
            Code(78),
            "no such bucket, or a table",
            BOTH,
            |c| match c.store {
                Store::S3 => c.missing(&["fenced", "get", &c.object()]),
                Store::DynamoDb => c.run(&["fenced", "get", &c.object()]),
            },
        ),
        // ---- fenced delete
        case(
            "fenced delete",
            Code(0),
            "with a live lease",
            S3_ONLY,
            |c| {
                let lease = c.lease_file(&c.lease("h"));
                let out = c.run_in(&["fenced", "put", &c.object(), "--lease", &lease], "body");
                assert_eq!(code(&out), 0, "{}", text(&out.stderr));
                c.run(&["fenced", "delete", &c.object(), "--lease", &lease])
            },
        ),
        case("fenced delete", Code(64), "a 1025-byte OBJECT", BOTH, |c| {
            c.run(&["fenced", "delete", &"o".repeat(1025)])
        })
        .says("at most 1024 bytes"),
        case(
            "fenced delete",
            Code(65),
            "a lease that is not JSON",
            S3_ONLY,
            |c| {
                let lease = c.lease_file("{}");
                c.run(&["fenced", "delete", &c.object(), "--lease", &lease])
            },
        ),
        case("fenced delete", Code(69), "a closed port", S3_ONLY, |c| {
            let lease = c.lease_file(&c.lease("h"));
            c.closed(&["fenced", "delete", &c.object(), "--lease", &lease])
        }),
        case(
            "fenced delete",
            Code(70),
            "a component that does not load",
            S3_ONLY,
            |c| {
                let lease = c.lease_file(&c.lease("h"));
                c.broken(&["fenced", "delete", &c.object(), "--lease", &lease], "")
            },
        ),
        case("fenced delete", Code(77), "a wrong secret", S3_ONLY, |c| {
            let lease = c.lease_file(&c.lease("h"));
            c.bad_secret(&["fenced", "delete", &c.object(), "--lease", &lease], "")
        }),
        case(
            "fenced delete",
            Code(78),
            "no bucket, or a table",
            BOTH,
            |c| {
                let lease = c.lease_file(&c.lease("h"));
                let args = ["fenced", "delete", &c.object(), "--lease", &lease];
                match c.store {
                    Store::S3 => c.unconfigured(&args, ""),
                    Store::DynamoDb => c.run(&args),
                }
            },
        ),
        case(
            "fenced delete",
            Code(80),
            "a newer token wrote",
            S3_ONLY,
            |c| {
                let first = c.lease_file(&c.lease("h"));
                let second = c.lease("h");
                let newer = c.scene().path(&format!("{}.newer", c.key));
                std::fs::write(&newer, second).unwrap();
                let newer = newer.display().to_string();
                let out = c.run_in(&["fenced", "put", &c.object(), "--lease", &newer], "new");
                assert_eq!(code(&out), 0, "{}", text(&out.stderr));
                c.run(&["fenced", "delete", &c.object(), "--lease", &first])
            },
        ),
        // ---- preflight
        // The whole preflight, its race included: about 19 s on SeaweedFS
        // alone (the integration suite prints it), so the default 20 s
        // bound left no room for a loaded machine.
        case("preflight", Code(0), "a safe store", BOTH, |c| {
            c.run(&["preflight"])
        })
        .within(Duration::from_secs(60)),
        case("preflight", Code(64), "an unknown flag", BOTH, |c| {
            c.run(&["preflight", "--bogus"])
        }),
        case("preflight", Code(69), "a closed port", BOTH, |c| {
            c.closed(&["preflight"])
        }),
        case(
            "preflight",
            Code(70),
            "a component that does not load",
            BOTH,
            |c| c.broken(&["preflight"], ""),
        ),
        case("preflight", Code(77), "a wrong secret", S3_ONLY, |c| {
            c.bad_secret(&["preflight"], "")
        }),
        case(
            "preflight",
            Code(78),
            "no such bucket or table",
            BOTH,
            |c| c.missing(&["preflight"]),
        )
        .says("no such"),
        case(
            "preflight",
            Code(78),
            "an endpoint that is not S3",
            S3_ONLY,
            |c| c.not_s3(&["preflight"]),
        )
        .says(not_s3_endpoint())
        .within(AT_ONCE),
        case("preflight", Code(81), "an unsafe store", BOTH, |c| {
            c.unsafe_store(&["preflight"]).unwrap_or_else(skipped)
        }),
        // ---- audit verify
        case(
            "audit verify",
            Code(82),
            "the lock object rewritten for another holder of its token",
            BOTH,
            |c| {
                let out = c.run(&["--audit", "acquire", "KEY", "--holder", "first"]);
                assert_eq!(code(&out), 0, "{}", text(&out.stderr));
                let admin = c.admin();
                let (body, _) = admin.get(&c.lock_object()).unwrap().expect("the lock");
                let mut lock: serde_json::Value = serde_json::from_slice(&body).unwrap();
                lock["holder"] = "second".into();
                admin
                    .put(&c.lock_object(), lock.to_string().as_bytes())
                    .unwrap();
                c.run(&["audit", "verify", "KEY"])
            },
        )
        .says("two holders"),
        case(
            "audit verify",
            Code(83),
            "two grants' records deleted",
            BOTH,
            |c| {
                let out = c.run(&["--audit", "acquire", "KEY"]);
                assert_eq!(code(&out), 0, "{}", text(&out.stderr));
                let out = c.run_in(&["--audit", "release"], &text(&out.stdout));
                assert_eq!(code(&out), 0, "{}", text(&out.stderr));
                let out = c.run(&["--audit", "acquire", "KEY"]);
                assert_eq!(code(&out), 0, "{}", text(&out.stderr));
                // Token 2 is held; nothing is left that names token 1.
                let admin = c.admin();
                for token in [1, 2] {
                    let record = format!(
                        "{}.s3-lease-audit/{}/{token:020}.grant.json",
                        c.scene().prefix,
                        c.key
                    );
                    admin.delete(&record).unwrap();
                }
                c.run(&["audit", "verify", "KEY"])
            },
        )
        .says("does not prove"),
        // ---- version
        case("version", Code(0), "always", BOTH, |c| c.run(&["version"])),
        case("version", Code(64), "an unknown flag", BOTH, |c| {
            c.run(&["version", "--bogus"])
        }),
        // ---- precompile
        case("precompile", Code(0), "a file it can write", BOTH, |c| {
            let file = std::env::temp_dir().join(format!("s3lease-exit-{}.cwasm", c.key));
            let out = c.run(&["precompile", "--out", file.to_str().unwrap()]);
            let _ = std::fs::remove_file(&file);
            out
        }),
        case("precompile", Code(64), "an unknown flag", BOTH, |c| {
            c.run(&["precompile", "--bogus"])
        }),
        case(
            "precompile",
            Code(70),
            "a component that does not load",
            BOTH,
            |c| c.broken(&["precompile", "--out", "/nonexistent-s3lease/x.cwasm"], ""),
        ),
        case(
            "precompile",
            Code(73),
            "a directory that does not exist",
            BOTH,
            |c| c.run(&["precompile", "--out", "/nonexistent-s3lease/x.cwasm"]),
        )
        .says("writing /nonexistent-s3lease/x.cwasm"),
    ]
}

/// The output of a case that could not run here (s3s-fs not installed):
/// recorded as skipped, not passed.
fn skipped() -> Output {
    Output {
        status: std::os::unix::process::ExitStatusExt::from_raw(SKIPPED << 8),
        stdout: Vec::new(),
        stderr: b"skipped: s3s-fs is not installed".to_vec(),
    }
}

/// An exit status no case expects.
const SKIPPED: i32 = 254;

/// How many cases run at once (`S3LEASE_EXIT_CODE_JOBS`).
fn jobs() -> usize {
    std::env::var("S3LEASE_EXIT_CODE_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .filter(|&j| j > 0)
        .unwrap_or(8)
}

#[test]
fn every_documented_exit_code_from_every_command_on_both_stores() {
    let started = Instant::now();
    let table = dynalite::shared().fresh_table("cli-exit-codes").unwrap();
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let s3 = Scene::new("exit-codes");
    let broken_component = s3.path("not-a-component.wasm");
    std::fs::write(&broken_component, b"\0asm but not really a component").unwrap();
    let world = World {
        dynamodb: Scene::new("exit-codes-dynamodb"),
        s3,
        table,
        wrong_table: wrongly_keyed_table(),
        closed_port,
        broken_component: broken_component.display().to_string(),
        next_key: AtomicUsize::new(0),
    };
    let cases = cases();
    let mut work: Vec<(usize, Store)> = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        for &store in case.stores {
            work.push((i, store));
        }
    }
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let skips = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs() {
            s.spawn(|| loop {
                let n = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(i, store)) = work.get(n) else {
                    break;
                };
                let case = &cases[i];
                let ctx = Ctx {
                    world: &world,
                    store,
                    key: format!("case-{}", world.next_key.fetch_add(1, Ordering::SeqCst)),
                };
                let began = Instant::now();
                let out =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (case.run)(&ctx)));
                let took = began.elapsed();
                let what = format!(
                    "{} on {:?}, {} (expects {}; key {})",
                    case.command,
                    store,
                    case.cause,
                    case.expect.code(),
                    ctx.key
                );
                let out = match out {
                    Ok(out) => out,
                    Err(panic) => {
                        let why = panic
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("{what}: the case failed to set up: {why}"));
                        continue;
                    }
                };
                if code(&out) == SKIPPED {
                    skips.lock().unwrap().push(what);
                    continue;
                }
                let stderr = text(&out.stderr);
                let mut wrong = Vec::new();
                if code(&out) != case.expect.code() {
                    wrong.push(format!("exit {}", code(&out)));
                }
                if let Some(says) = case.says {
                    if !stderr.contains(says) {
                        wrong.push(format!("stderr lacks {says:?}"));
                    }
                }
                if let Some(names) = case.names {
                    let names = names(&ctx);
                    if !stderr.contains(&names) {
                        wrong.push(format!("stderr lacks {names:?}"));
                    }
                }
                if took > case.within {
                    wrong.push(format!("took {took:.1?}, more than {:?}", case.within));
                }
                if !wrong.is_empty() {
                    failures.lock().unwrap().push(format!(
                        "{what}: {}\n    stderr: {}",
                        wrong.join("; "),
                        stderr.trim().replace('\n', "\n            ")
                    ));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let skips = skips.into_inner().unwrap();
    println!(
        "{} cases ({} skipped) in {:.1?}",
        work.len(),
        skips.len(),
        started.elapsed()
    );
    for skip in &skips {
        eprintln!("SKIPPED: {skip}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        work.len(),
        failures.join("\n")
    );
    check_the_docs_table(&cases);
}

/// The doc's table, row by row: code → the commands its "given by" names.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/command-line.md"),
    )
    .unwrap();
    let start = doc
        .find("| code | meaning | given by |")
        .expect("the exit-code table in docs/command-line.md");
    let mut rows = BTreeMap::new();
    for line in doc[start..].lines().skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [code, _meaning, given_by] = cells[..] else {
            panic!("a row of three cells: {line}")
        };
        let commands: BTreeSet<String> = if given_by == "every command" {
            COMMANDS.iter().map(|c| c.to_string()).collect()
        } else if let Some(but) = given_by.strip_prefix("every command but ") {
            let but: Vec<&str> = but.split('`').skip(1).step_by(2).collect();
            COMMANDS
                .iter()
                .filter(|c| !but.contains(c))
                .map(|c| c.to_string())
                .collect()
        } else {
            given_by
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        };
        rows.insert(code.trim_matches('`').to_string(), commands);
    }
    rows
}

fn check_the_docs_table(cases: &[Case]) {
    let mut tested: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut on: BTreeMap<(String, String), BTreeSet<Store>> = BTreeMap::new();
    for case in cases {
        let row = case.expect.row();
        tested
            .entry(row.clone())
            .or_default()
            .insert(case.command.to_string());
        on.entry((case.command.to_string(), row))
            .or_default()
            .extend(case.stores.iter().copied());
    }
    let mut problems = Vec::new();
    let doc = documented();
    if doc != tested {
        let mut table = String::from("| code | meaning | given by |\n|---|---|---|\n");
        for (code, commands) in &tested {
            let names: Vec<String> = commands.iter().map(|c| format!("`{c}`")).collect();
            table.push_str(&format!("| {code} | … | {} |\n", names.join(", ")));
        }
        problems.push(format!(
            "docs/command-line.md's exit-code table disagrees with the cases:\n  doc:   {doc:?}\n  cases: {tested:?}\nthe cases say:\n{table}"
        ));
    }
    for ((command, code), stores) in &on {
        if !stores.contains(&Store::S3) {
            problems.push(format!("{command} {code}: no case on S3"));
        }
        let exempt = NOT_ON_DYNAMODB
            .iter()
            .any(|(c, k, _)| c == command && k == code);
        if !stores.contains(&Store::DynamoDb) && !exempt {
            problems.push(format!(
                "{command} {code}: no case on DynamoDB, and no reason in NOT_ON_DYNAMODB"
            ));
        }
        if stores.contains(&Store::DynamoDb) && exempt {
            problems.push(format!(
                "{command} {code}: NOT_ON_DYNAMODB lists it, but a case runs it there"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

//! `s3-lease`: locks, leases and leader election on S3 conditional writes,
//! for scripts, cron jobs and CI pipelines. `consul lock` and `flock(1)` are
//! its models; the lock is the s3-lease component, run by the embedded
//! wasmtime host (`s3-lease-host`).

mod commands;
mod duration;
mod exit;
mod guardian;
mod json;
mod log;
mod metrics;
mod preflight;
mod probe;
mod serve;
mod signals;
mod slots;
mod supervise;
mod tree;
mod version;

use clap::{Args, Parser, Subcommand, ValueEnum};
use exit::Failure;
use s3_lease_host::blocking::Client;
use s3_lease_host::{AcquireOptions, ElectorConfig, ExpiryClock, SlotOptions, Strategy};
use s3_lease_host::{Runtime, S3Config};
use std::time::Duration;
use supervise::{Mode, Supervision};

const EXIT_CODES: &str = "\
Exit codes:
  0    success; `run` and `elect` exit with the command's own status
       (128+N when signal N ended it)
  64   bad flags or arguments          65  a lease that is not valid or was altered
  66   `fenced get`: no such object    69  the store failed (an error, the network)
  70   internal error (a bug)          75  held by someone else past --wait
  77   access denied                   78  configuration (credentials, no such
                                           bucket or table, endpoint)
  79   the lease is no longer ours: lost while held (`run` stopped the command),
       or superseded (`renew`, `release`)
  80   fenced: a newer token already wrote
  81   the store is not safe for this configuration (`preflight`, --check-store)
  126/127  the command could not be started / was not found

S3 is configured as for the AWS CLI: AWS_ENDPOINT_URL (or --endpoint),
AWS_REGION (or --region), and credentials from the AWS chain, in order:
AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN; the AWS_PROFILE
profile in ~/.aws/config and ~/.aws/credentials (keys, credential_process,
role_arn, SSO); web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN);
ECS/EKS container credentials; EC2 instance metadata. Temporary credentials
are refreshed before they expire, and once more if S3 calls them expired.
S3LEASE_ENDPOINT and S3LEASE_REGION, when set, win over the AWS variables
(not over the flags): `run` and `elect` set them (and S3LEASE_BUCKET, ...)
for the command, so a nested s3-lease finds the same locks, and leave the
command's AWS variables as they were.

Leases are sealed against edits, forgery and use on another lock. The seal
takes nothing from the credentials: a lease stored by `acquire` renews in a
later run with rotated keys. Its key is S3LEASE_SEAL_KEY (optional, 1-1024
bytes, an environment variable only, never a flag), so only runs with the
same seal key accept each other's leases; without it, a random key kept in
the store (<key-prefix>.s3-lease-seal-key), read once per run. Leases sealed
by an older s3-lease (a `v1.` or `v2.` seal) are refused (exit 65): acquire
again once after upgrading.";

#[derive(Parser)]
#[command(
    name = "s3-lease",
    version,
    about = "Locks, leases and leader election on S3 conditional writes",
    after_help = EXIT_CODES
)]
struct Cli {
    /// The bucket that holds the locks.
    #[arg(long, env = "S3LEASE_BUCKET", global = true)]
    bucket: Option<String>,
    /// Where the locks are kept: objects in the bucket (s3, the default),
    /// items in a DynamoDB table (dynamodb, with --table), or blobs in an
    /// Azure Blob Storage container (azure-blob, with --container; the
    /// account from AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT
    /// with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, else its managed
    /// identity).
    #[arg(long, value_enum, env = "S3LEASE_STORE", global = true)]
    store: Option<StoreArg>,
    /// The Azure container of `--store azure-blob`.
    #[arg(long, env = "S3LEASE_CONTAINER", global = true)]
    container: Option<String>,
    /// The DynamoDB table of `--store dynamodb`: partition key `key`
    /// (string). Its TTL never removes a lock item (not on `token`).
    #[arg(long, env = "S3LEASE_TABLE", global = true)]
    table: Option<String>,
    /// Prefix of every lock object (e.g. `locks/`).
    #[arg(long, env = "S3LEASE_PREFIX", global = true)]
    prefix: Option<String>,
    /// Store endpoint (default: S3LEASE_ENDPOINT, else AWS_ENDPOINT_URL_S3
    /// or AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL, else AWS S3 or
    /// DynamoDB in the region).
    #[arg(long, global = true)]
    endpoint: Option<String>,
    /// Region (default: S3LEASE_REGION, AWS_REGION, AWS_DEFAULT_REGION, the
    /// profile's, us-east-1).
    #[arg(long, global = true)]
    region: Option<String>,
    /// Lock strategy; all users of a key must agree.
    #[arg(long, value_enum, env = "S3LEASE_STRATEGY", global = true)]
    strategy: Option<StrategyArg>,
    /// How expiry is judged (default: server on S3, observed on DynamoDB);
    /// all users of a key must agree.
    #[arg(long, value_enum, env = "S3LEASE_EXPIRY_CLOCK", global = true)]
    expiry_clock: Option<ExpiryClockArg>,
    /// Run the store preflight before the first grant, and refuse to take a
    /// lock (exit 81) on a store that would not keep it safe.
    #[arg(long, env = "S3LEASE_CHECK_STORE", global = true)]
    check_store: bool,
    /// Machine-readable output (JSON).
    #[arg(long, global = true)]
    json: bool,
    /// No progress lines on stderr (errors are still printed).
    #[arg(long, short, global = true)]
    quiet: bool,
    /// Progress lines as people read them (`s3-lease: …`), or one JSON
    /// object per line (ts, event, key, holder, token, message).
    #[arg(
        long,
        value_enum,
        default_value = "human",
        env = "S3LEASE_LOG_FORMAT",
        global = true
    )]
    log_format: log::LogFormat,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StoreArg {
    S3,
    Dynamodb,
    AzureBlob,
}

#[derive(Clone, Copy, ValueEnum)]
enum StrategyArg {
    SingleObject,
    EpochObjects,
}

#[derive(Clone, Copy, ValueEnum)]
enum ExpiryClockArg {
    Server,
    Holder,
    Observed,
}

#[derive(Subcommand)]
enum Cmd {
    /// Hold KEY while CMD runs: wait for it, renew it, stop CMD if it is lost.
    Run(RunArgs),
    /// Run CMD only while leading KEY, campaigning again after losing; or `--watch`.
    Elect(ElectArgs),
    /// Holder, token, liveness and time left of each KEY.
    Status {
        /// The keys to show (each a lock, or a semaphore's key).
        #[arg(required = true, value_name = "KEY")]
        keys: Vec<String>,
    },
    /// Take KEY and print the lease as JSON (keep it for renew and release).
    Acquire {
        #[command(flatten)]
        hold: Hold,
        #[command(flatten)]
        slots: Slots,
        /// How long to wait for a holder to let go (0: one attempt).
        #[arg(long, default_value = "0s", value_parser = duration::parse)]
        wait: Duration,
    },
    /// Renew the lease read from stdin (or --lease) and print the new one.
    Renew {
        /// The lease as `acquire` or `renew` printed it: a JSON file, or
        /// `-` for stdin (the default).
        #[arg(long, value_name = "FILE")]
        lease: Option<String>,
    },
    /// Release the lease read from stdin (or --lease).
    Release {
        /// The lease as `acquire` or `renew` printed it: a JSON file, or
        /// `-` for stdin (the default).
        #[arg(long, value_name = "FILE")]
        lease: Option<String>,
    },
    /// Writes that S3 refuses once a newer token has written.
    Fenced {
        #[command(subcommand)]
        op: FencedCmd,
    },
    /// Probe the store (scratch objects, removed after): does it honour what
    /// a lock needs? Exits 81 when this configuration is not safe on it.
    Preflight,
    /// This binary's version and the component it carries (size, sha256, origin).
    Version,
}

#[derive(Args)]
struct Hold {
    /// The lock's name: its object (after --prefix) in the bucket, or its
    /// item in the table. At most 1024 bytes with the prefix, no control
    /// characters.
    key: String,
    /// The lease's time to live, 1s to 7d. `run` and `elect` renew it every
    /// ttl/6; a lease from `acquire` lives this long unless `renew` extends it.
    #[arg(long, default_value = "30s", value_parser = duration::parse_ttl)]
    ttl: Duration,
    /// Who holds it, as `status` shows (default: HOSTNAME/PID/RANDOM,
    /// unique); 1 to 256 bytes, no control characters.
    #[arg(long, value_parser = parse_holder)]
    holder: Option<String>,
    /// Free text stored with the lock (an address, a version); at most 4096 bytes.
    #[arg(long, value_parser = parse_metadata)]
    metadata: Option<String>,
}

/// `--holder`: what the component accepts as a holder id. No control
/// characters: `status` and the waiting lines print it to terminals.
fn parse_holder(text: &str) -> Result<String, String> {
    if text.is_empty() || text.len() > 256 {
        return Err(format!(
            "a holder id is 1 to 256 bytes; this one is {}",
            text.len()
        ));
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(format!(
            "a holder id has no control characters; this one has {c:?}"
        ));
    }
    Ok(text.to_string())
}

/// `--metadata`: what the component stores with a lock.
fn parse_metadata(text: &str) -> Result<String, String> {
    if text.len() > 4096 {
        return Err(format!(
            "metadata is at most 4096 bytes; this is {}",
            text.len()
        ));
    }
    Ok(text.to_string())
}

/// A semaphore: how many may hold KEY at once, and whether to queue.
#[derive(Args, Clone, Copy)]
struct Slots {
    /// Let up to N holders hold KEY at once (a semaphore; every contender
    /// must pass the same N).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    limit: Option<u32>,
    /// Wait in KEY's queue: first come, first served among live waiters.
    #[arg(long)]
    fair: bool,
}

impl Slots {
    /// `None` for a plain lock (no `--limit`, no `--fair`).
    fn options(self) -> Option<SlotOptions> {
        (self.limit.is_some() || self.fair)
            .then(|| SlotOptions::new(self.limit.unwrap_or(1)).fair(self.fair))
    }
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    hold: Hold,
    #[command(flatten)]
    slots: Slots,
    /// Give up after this long: exit 75 if someone else holds it, 69 if the
    /// store never answered usefully; 0 is one attempt. Default: wait as
    /// long as it takes (an error retrying cannot fix ends it at once), as
    /// does a wait too long for the clock to count.
    #[arg(long, value_parser = duration::parse)]
    wait: Option<Duration>,
    /// After SIGTERM on loss, SIGKILL the command's process group this much
    /// later (default: 10s or ttl/4, whichever is shorter, so the command
    /// is gone before its lease can run out).
    #[arg(long, value_parser = duration::parse)]
    kill_after: Option<Duration>,
    /// Serve /status (JSON), /healthz (200, or 503 once the store has not
    /// answered for the renew deadline) and /metrics (Prometheus) on ADDR,
    /// e.g. 127.0.0.1:9464 (port 0: any free port; the line on stderr says which).
    #[arg(long, value_name = "ADDR")]
    serve: Option<String>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

#[derive(Args)]
struct ElectArgs {
    #[command(flatten)]
    hold: Hold,
    /// Print each change of leader (one line, or a JSON object) instead of campaigning.
    #[arg(long, conflicts_with = "command")]
    watch: bool,
    /// With --watch: how often to read the lock (at least 1ms).
    #[arg(long, default_value = "1s", value_parser = duration::parse_positive)]
    every: Duration,
    /// After SIGTERM on loss, SIGKILL the command's process group this much
    /// later (default: 10s or ttl/4, whichever is shorter).
    #[arg(long, value_parser = duration::parse)]
    kill_after: Option<Duration>,
    /// Serve /status (JSON), /healthz (200, or 503 once the store has not
    /// answered for the renew deadline) and /metrics (Prometheus) on ADDR,
    /// e.g. 127.0.0.1:9464 (port 0: any free port; the line on stderr says which).
    #[arg(long, value_name = "ADDR", conflicts_with = "watch")]
    serve: Option<String>,
    /// The command and its arguments, after `--`: run while this process
    /// leads, stopped when it stops leading, started again on the next term.
    #[arg(last = true, required_unless_present = "watch", value_name = "CMD")]
    command: Vec<String>,
}

#[derive(Subcommand)]
enum FencedCmd {
    /// Write OBJECT (body from stdin or --file) with the lease's token.
    Put {
        /// The object's key in the bucket (no prefix is added).
        object: String,
        /// The body: a file, or `-` for stdin (the default).
        #[arg(long)]
        file: Option<String>,
        /// The object's Content-Type, stored with it (printable ASCII, at most 256).
        #[arg(long, default_value = "application/octet-stream")]
        content_type: String,
        /// The lease (JSON file, or `-`); default: S3LEASE_LEASE, set by `run`.
        #[arg(long, value_name = "FILE")]
        lease: Option<String>,
    },
    /// Print OBJECT's body (with --json: its token and etag too).
    Get {
        /// The object's key in the bucket (no prefix is added).
        object: String,
    },
    /// Delete OBJECT with the lease's token.
    Delete {
        /// The object's key in the bucket (no prefix is added).
        object: String,
        /// The lease (JSON file, or `-`); default: S3LEASE_LEASE, set by `run`.
        #[arg(long, value_name = "FILE")]
        lease: Option<String>,
    },
}

fn main() {
    // The guardian of a command's process group (see `tree`): this binary
    // started again by `run` or `elect`, before any of the rest.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(guardian::GUARDIAN_ARG)) {
        std::process::exit(guardian::guard());
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { exit::USAGE } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let json = cli.json || cli.log_format == log::LogFormat::Json;
    log::set_format(cli.log_format);
    if matches!(cli.command, Cmd::Version) {
        std::process::exit(version::print(cli.json));
    }
    let code = match run(cli) {
        Ok(code) => code,
        Err(failure) => {
            if json {
                eprintln!(
                    "{}",
                    serde_json::json!({"event": "error", "error": failure.message, "exit_code": failure.code})
                );
            } else {
                eprintln!("s3-lease: {}", log::shown(&failure.message));
            }
            failure.code
        }
    };
    std::process::exit(code);
}

fn run(cli: Cli) -> Result<i32, Failure> {
    check_arguments(&cli)?;
    let config = s3_config(&cli)?;
    // For a nested s3-lease in `run` and `elect`'s command.
    let endpoint = endpoint_in_use(&cli).map(|(_, endpoint)| endpoint);
    exit::set_store(config.dynamodb_table.is_some(), &config.endpoint);
    let runtime = Runtime::new().map_err(|e| Failure::new(exit::INTERNAL, format!("{e:#}")))?;
    let client = Client::connect(&runtime, &config)?;
    let options = |hold: &Hold| {
        let options = AcquireOptions::new(hold.ttl)
            .holder_id(hold.holder.clone().unwrap_or_else(default_holder));
        match &hold.metadata {
            Some(metadata) => options.metadata(metadata.clone()),
            None => options,
        }
    };
    let strategy = config.strategy.unwrap_or(Strategy::SingleObject);
    let slots = match &cli.command {
        Cmd::Run(args) => args.slots.options(),
        Cmd::Acquire { slots, .. } => slots.options(),
        _ => None,
    };
    if slots.is_some() && strategy == Strategy::EpochObjects {
        return Err(Failure::new(
            exit::USAGE,
            "--limit and --fair need the single-object strategy (epoch-objects offers neither)",
        ));
    }
    let campaigns = matches!(&cli.command, Cmd::Run(_))
        || matches!(&cli.command, Cmd::Elect(args) if !args.watch);
    if cli.check_store && campaigns {
        preflight::require_safe_store(&client, strategy)?;
    }
    match cli.command {
        Cmd::Preflight => preflight::preflight(&client, strategy, cli.json),
        Cmd::Version => Ok(version::print(cli.json)),
        Cmd::Status { keys } => commands::status(&client, &keys, cli.json),
        Cmd::Acquire { hold, slots, wait } => match slots.options() {
            Some(slot) => commands::acquire_slot(&client, &hold.key, &options(&hold), slot, wait),
            None => commands::acquire(&client, &hold.key, &options(&hold), wait),
        },
        Cmd::Renew { lease } => commands::renew(&client, lease.as_deref()),
        Cmd::Release { lease } => commands::release(&client, lease.as_deref(), cli.json),
        Cmd::Fenced { op } => match op {
            FencedCmd::Put {
                object,
                file,
                content_type,
                lease,
            } => commands::fenced_put(
                &client,
                lease.as_deref(),
                &object,
                file.as_deref(),
                &content_type,
                cli.json,
            ),
            FencedCmd::Get { object } => commands::fenced_get(&client, &object, cli.json),
            FencedCmd::Delete { object, lease } => {
                commands::fenced_delete(&client, lease.as_deref(), &object)
            }
        },
        Cmd::Run(args) if args.slots.options().is_some() && args.serve.is_some() => {
            Err(Failure::new(
                exit::USAGE,
                "--serve is offered with plain locks and elect, not yet with --limit or --fair",
            ))
        }
        Cmd::Run(args) if args.slots.options().is_some() => {
            let slot = args.slots.options().unwrap_or(SlotOptions::new(1));
            // Held for half the ttl after each renew was sent, as `run`'s
            // elector's renew deadline (see `slots`).
            let slot_options = options(&args.hold).deadline(args.hold.ttl / 2);
            if !cli.quiet {
                if let Some(line) = credentials_line(&config) {
                    let about = log::About {
                        key: &args.hold.key,
                        holder: slot_options.holder_id.as_deref(),
                        token: None,
                    };
                    log::say("credentials", &about, &line);
                }
            }
            let run = slots::SlotRun {
                key: args.hold.key.clone(),
                options: slot_options,
                slot,
                command: args.command,
                env: child_env(&config, endpoint.clone()),
                kill_after: args
                    .kill_after
                    .unwrap_or_else(|| (args.hold.ttl / 4).min(Duration::from_secs(10))),
                wait: args.wait,
                quiet: cli.quiet,
                signals: catch_signals()?,
            };
            slots::run_in_slot(&client, run)
        }
        Cmd::Run(args) => {
            let hold = Holding {
                command: args.command,
                kill_after: args.kill_after,
                wait: args.wait,
                mode: Mode::Once,
                serve: args.serve,
                endpoint,
            };
            hold_while_running(&runtime, &client, &config, &args.hold, hold, cli.quiet)
        }
        Cmd::Elect(args) if args.watch => commands::watch(
            &client,
            &args.hold.key,
            args.every,
            cli.json,
            &catch_signals()?,
        ),
        Cmd::Elect(args) => {
            let hold = Holding {
                command: args.command,
                kill_after: args.kill_after,
                wait: None,
                mode: Mode::EveryTerm,
                serve: args.serve,
                endpoint,
            };
            hold_while_running(&runtime, &client, &config, &args.hold, hold, cli.quiet)
        }
    }
}

/// KEY and OBJECT, refused as the component would refuse them, but named
/// as the user typed them (exit 64, nothing sent).
fn check_arguments(cli: &Cli) -> Result<(), Failure> {
    let prefix = cli.prefix.as_deref().unwrap_or("");
    let keys: Vec<&str> = match &cli.command {
        Cmd::Run(args) => vec![args.hold.key.as_str()],
        Cmd::Elect(args) => vec![args.hold.key.as_str()],
        Cmd::Acquire { hold, .. } => vec![hold.key.as_str()],
        Cmd::Status { keys } => keys.iter().map(String::as_str).collect(),
        _ => Vec::new(),
    };
    for key in keys {
        check_name("KEY", key, prefix)?;
    }
    if let Cmd::Fenced { op } = &cli.command {
        let object = match op {
            FencedCmd::Put { object, .. }
            | FencedCmd::Get { object }
            | FencedCmd::Delete { object, .. } => object,
        };
        // Fenced objects are named in full: no prefix.
        check_name("OBJECT", object, "")?;
    }
    Ok(())
}

/// The rule the component applies to a lock's (or a fenced object's) key.
fn check_name(what: &str, name: &str, prefix: &str) -> Result<(), Failure> {
    const MAX_KEY_BYTES: usize = 1024;
    let refuse = |why: String| Err(Failure::new(exit::USAGE, why));
    if name.is_empty() {
        return refuse(format!("{what} must not be empty"));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return refuse(format!(
            "{what} {name:?} contains the control character {c:?}"
        ));
    }
    let full = prefix.len() + name.len();
    if full > MAX_KEY_BYTES {
        let with_prefix = if prefix.is_empty() {
            String::new()
        } else {
            format!(", {full} with the prefix {prefix:?}")
        };
        return refuse(format!(
            "{what} is {} bytes{with_prefix}: at most {MAX_KEY_BYTES} bytes with the prefix",
            name.len()
        ));
    }
    Ok(())
}

/// What differs between `run` and `elect -- CMD`.
struct Holding {
    command: Vec<String>,
    kill_after: Option<Duration>,
    wait: Option<Duration>,
    mode: Mode,
    /// `--serve ADDR`.
    serve: Option<String>,
    /// The endpoint given, for a nested s3-lease (see `child_env`).
    endpoint: Option<String>,
}

/// Campaigns for `hold.key` through an elector and runs the command while
/// leading (`run`: once; `elect`: every term).
fn hold_while_running(
    runtime: &Runtime,
    client: &Client,
    config: &S3Config,
    hold: &Hold,
    how: Holding,
    quiet: bool,
) -> Result<i32, Failure> {
    let elector_config = elector_config(hold)?;
    let holder = elector_config.holder_id.clone().unwrap_or_default();
    let say = |event: &str, line: &str| {
        if !quiet {
            let about = log::About {
                key: &hold.key,
                holder: Some(&holder),
                token: None,
            };
            log::say(event, &about, line);
        }
    };
    if let Some(line) = credentials_line(config) {
        say("credentials", &line);
    }
    let elector = client.elect(&elector_config)?;
    let fatal = std::sync::Arc::new(std::sync::Mutex::new(None));
    if let Some(addr) = &how.serve {
        let endpoint = serve::Endpoint {
            sources: metrics::Sources {
                key: hold.key.clone(),
                elector: elector.watcher(),
                requests: runtime.request_counts().clone(),
            },
            status_client: Client::connect(runtime, config)?,
            holder: holder.clone(),
            renew_deadline: elector_config.renew_deadline,
            fatal: fatal.clone(),
        };
        let bound = serve::start(addr, endpoint).map_err(|e| Failure::new(exit::USAGE, e))?;
        say(
            "serving",
            &format!("serving status, health and metrics on http://{bound}"),
        );
    }
    // Leadership ends at ttl/2 without a renew; the lease lives the other
    // half. A command still running past that may overlap the next holder's.
    let kill_after = how
        .kill_after
        .unwrap_or_else(|| (hold.ttl / 4).min(Duration::from_secs(10)));
    if kill_after >= hold.ttl / 2 {
        say("warning", &format!(
            "warning: --kill-after {} is not below half the ttl ({}): a command that ignores SIGTERM may still run when the next holder starts",
            duration::show(kill_after),
            duration::show(hold.ttl / 2)
        ));
    }
    let supervision = Supervision {
        key: hold.key.clone(),
        command: how.command,
        env: child_env(config, how.endpoint),
        kill_after,
        wait: how.wait,
        quiet,
        holder: holder.clone(),
        mode: how.mode,
        signals: catch_signals()?,
        fatal,
    };
    // A client of its own, made on the first failed step (see `probe`).
    let probe = probe::Probe::new(&hold.key, Box::new(|| Client::connect(runtime, config)));
    let outcome = supervise::supervise(elector, supervision, probe);
    let refreshes = client.credentials_refreshes();
    if refreshes > 0 {
        say(
            "credentials-refreshed",
            &format!("the credentials were refreshed {refreshes} times meanwhile"),
        );
    }
    outcome
}

/// Where the credentials came from, for `run` and `elect`'s first line.
fn credentials_line(config: &S3Config) -> Option<String> {
    let (source, expires) = config.credentials_source.as_ref()?.last_source()?;
    Some(match expires {
        Some(at) => {
            let left = at
                .duration_since(std::time::SystemTime::now())
                .unwrap_or_default();
            format!(
                "credentials from {source}, temporary (expire in {}); refreshed before they do",
                duration::show(Duration::from_secs(left.as_secs()))
            )
        }
        None => format!("credentials from {source}"),
    })
}

fn s3_config(cli: &Cli) -> Result<S3Config, Failure> {
    let on_dynamodb = cli.store == Some(StoreArg::Dynamodb);
    let on_azure = cli.store == Some(StoreArg::AzureBlob);
    if on_azure && cli.container.is_none() {
        return Err(Failure::new(
            exit::CONFIG,
            "no container: --store azure-blob needs --container NAME (or S3LEASE_CONTAINER)",
        ));
    }
    let bucket =
        match (cli.bucket.as_deref(), on_dynamodb || on_azure) {
            (Some(bucket), _) => bucket,
            (None, true) => "",
            (None, false) => return Err(Failure::new(
                exit::CONFIG,
                "no bucket: pass --bucket or set S3LEASE_BUCKET (or --store dynamodb --table NAME)",
            )),
        };
    if on_dynamodb && cli.table.is_none() {
        return Err(Failure::new(
            exit::CONFIG,
            "no table: --store dynamodb needs --table NAME (or S3LEASE_TABLE)",
        ));
    }
    check_endpoints(cli)?;
    // Credentials and region from the AWS chain (as the AWS CLI finds
    // them), refreshed while we run; --endpoint and --region win.
    let mut config = S3Config::from_aws(bucket, |name| {
        let flag = match name {
            "AWS_ENDPOINT_URL" | "AWS_ENDPOINT_URL_S3" | "AWS_ENDPOINT_URL_DYNAMODB" => {
                endpoint_in_use(cli).map(|(_, endpoint)| endpoint)
            }
            "AWS_REGION" => cli.region.clone().or_else(|| env_var(REGION_VAR)),
            "S3LEASE_STORE" => cli.store.map(|s| match s {
                StoreArg::S3 => "s3".to_string(),
                StoreArg::Dynamodb => "dynamodb".to_string(),
                StoreArg::AzureBlob => "azure-blob".to_string(),
            }),
            "S3LEASE_TABLE" => cli.table.clone(),
            "S3LEASE_CONTAINER" => cli.container.clone(),
            _ => None,
        };
        flag.or_else(|| std::env::var(name).ok().filter(|v| !v.is_empty()))
    })?;
    config.key_prefix = cli.prefix.clone();
    config.strategy = cli.strategy.map(|s| match s {
        StrategyArg::SingleObject => Strategy::SingleObject,
        StrategyArg::EpochObjects => Strategy::EpochObjects,
    });
    config.expiry_clock = cli.expiry_clock.map(|c| match c {
        ExpiryClockArg::Server => ExpiryClock::Server,
        ExpiryClockArg::Holder => ExpiryClock::Holder,
        ExpiryClockArg::Observed => ExpiryClock::Observed,
    });
    config.preflight = cli.check_store.then_some(true);
    Ok(config)
}

/// Where `run` and `elect` tell a nested s3-lease the store is (and
/// where a user can, without touching what other AWS tools read).
const ENDPOINT_VAR: &str = "S3LEASE_ENDPOINT";
const REGION_VAR: &str = "S3LEASE_REGION";

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The endpoint given, and where: `--endpoint`, else `S3LEASE_ENDPOINT`,
/// else the AWS variables as the AWS SDKs read them (the store's own
/// service variable, then `AWS_ENDPOINT_URL`). `None`: the store's own
/// endpoint in the region.
fn endpoint_in_use(cli: &Cli) -> Option<(&'static str, String)> {
    let service = if cli.store == Some(StoreArg::Dynamodb) {
        "AWS_ENDPOINT_URL_DYNAMODB"
    } else {
        "AWS_ENDPOINT_URL_S3"
    };
    match &cli.endpoint {
        Some(endpoint) => Some(("--endpoint", endpoint.clone())),
        None => [ENDPOINT_VAR, service, "AWS_ENDPOINT_URL"]
            .into_iter()
            .find_map(|name| env_var(name).map(|v| (name, v))),
    }
}

/// An endpoint with a user name or password in it is refused without
/// echoing it (the password would land in logs and cron mail), naming
/// where it came from.
fn check_endpoints(cli: &Cli) -> Result<(), Failure> {
    if let Some((source, endpoint)) = endpoint_in_use(cli) {
        let rest = endpoint
            .split_once("://")
            .map_or(endpoint.as_str(), |(_, rest)| rest);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.contains('@') {
            let code = if source == "--endpoint" {
                exit::USAGE
            } else {
                exit::CONFIG
            };
            return Err(Failure::new(
                code,
                format!(
                    "{source} carries a user name or password (before an `@`); not shown here. \
                     Give the endpoint as scheme://host[:port], and the keys as \
                     AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a profile)"
                ),
            ));
        }
    }
    Ok(())
}

/// What a nested `s3-lease` in the command needs to find the same locks:
/// in `S3LEASE_*` variables only. The command's AWS variables stay as
/// they were: the AWS SDKs and CLI read `AWS_ENDPOINT_URL` for every
/// service, so setting it to the lock store would send a job's own AWS
/// calls there. `endpoint`: the one given, if any (else the store's own,
/// which a nested call finds as we did).
fn child_env(config: &S3Config, endpoint: Option<String>) -> Vec<(String, String)> {
    let mut env = vec![("S3LEASE_BUCKET".to_string(), config.bucket.clone())];
    if config.azure_blob.is_none() {
        if let Some(endpoint) = endpoint {
            env.push((ENDPOINT_VAR.into(), endpoint));
        }
        env.push((REGION_VAR.into(), config.region.clone()));
    }
    if let Some(prefix) = &config.key_prefix {
        env.push(("S3LEASE_PREFIX".into(), prefix.clone()));
    }
    if let Some(table) = &config.dynamodb_table {
        env.push(("S3LEASE_STORE".into(), "dynamodb".into()));
        env.push(("S3LEASE_TABLE".into(), table.clone()));
    }
    // The account's credentials are the environment's, inherited.
    if let Some(azure) = &config.azure_blob {
        env.push(("S3LEASE_STORE".into(), "azure-blob".into()));
        env.push(("S3LEASE_CONTAINER".into(), azure.container.clone()));
    }
    // A lease's seal covers the strategy: a nested `fenced put` must use
    // the same one, and judge expiry the same way.
    if let Some(strategy) = config.strategy {
        env.push(("S3LEASE_STRATEGY".into(), strategy.name().into()));
    }
    if let Some(clock) = config.expiry_clock {
        env.push(("S3LEASE_EXPIRY_CLOCK".into(), clock.name().into()));
    }
    env
}

/// client-go's three durations from one ttl: the leader renews every ttl/6
/// and steps down at ttl/2 without a successful renew, leaving the other
/// half of the ttl to stop the command before anyone else can be granted it.
fn elector_config(hold: &Hold) -> Result<ElectorConfig, Failure> {
    if hold.ttl < Duration::from_secs(1) {
        return Err(Failure::new(exit::USAGE, "--ttl must be at least 1s"));
    }
    let ttl = hold.ttl;
    let config = ElectorConfig::new(hold.key.clone())
        .lease_duration(ttl)
        .renew_deadline(ttl / 2)
        .retry_period(ttl / 6)
        .holder_id(hold.holder.clone().unwrap_or_else(default_holder));
    Ok(match &hold.metadata {
        Some(metadata) => config.metadata(metadata.clone()),
        None => config,
    })
}

fn catch_signals() -> Result<std::sync::mpsc::Receiver<i32>, Failure> {
    signals::catch().map_err(|e| Failure::new(exit::INTERNAL, format!("cannot catch signals: {e}")))
}

/// `HOSTNAME/PID/RANDOM`: who holds a lock, readable in `status`, and
/// unique: two containers share a hostname and a PID easily (each process
/// PID 2 under its own init), and a holder id that finds its own live
/// lease takes it over (a restarted holder reclaiming its lock). So the
/// default adds 64 random bits; an id given with --holder is the caller's
/// promise that only one live process uses it.
fn default_holder() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}/{}/{}", std::process::id(), random_hex())
}

/// 16 hex digits from the OS's random source; the clock and a fresh
/// `RandomState` (itself OS-seeded) if that source fails.
fn random_hex() -> String {
    let mut bytes = [0u8; 8];
    let random = match getrandom::getrandom(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            h.finish()
        }
    };
    format!("{random:016x}")
}

//! `s3-lease`: locks, leases and leader election on S3 conditional writes,
//! for scripts, cron jobs and CI pipelines. `consul lock` and `flock(1)` are
//! its models; the lock is the s3-lease component, run by the embedded
//! wasmtime host (`s3-lease-host`).

mod args;
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
mod store_config;
mod supervise;
mod tree;
mod version;

use args::{check_arguments, Cli, Cmd, FencedCmd, Hold};
use clap::Parser;
use exit::Failure;
use s3_lease_host::blocking::Client;
use s3_lease_host::{AcquireOptions, ElectorConfig, SlotOptions, Strategy};
use s3_lease_host::{Runtime, S3Config};
use std::time::Duration;
use store_config::{child_env, credentials_line, endpoint_in_use, s3_config};
use supervise::{Mode, Supervision};

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

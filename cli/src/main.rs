//! `s3-lease`: locks, leases and leader election on S3 conditional writes,
//! for scripts, cron jobs and CI pipelines. `consul lock` and `flock(1)` are
//! its models; the lock is the s3-lease component, run by the embedded
//! wasmtime host (`s3-lease-host`).

// Every line to stderr goes through `stderr_lines` (never blocks, never
// panics); stdout through `out`. `stderr_lines`' tests check this too.
#![deny(clippy::print_stderr, clippy::print_stdout, clippy::dbg_macro)]

mod args;
mod audit;
mod claim;
mod commands;
mod config;
mod duration;
mod exit;
mod guardian;
mod holding;
mod json;
mod log;
mod metrics;
mod out;
mod precompile;
mod preflight;
mod probe;
mod serve;
mod signals;
mod stderr_lines;
mod time_arg;
mod tree;
mod version;

use args::{check_arguments, Cli, Cmd, FencedCmd, RunArgs};
use claim::leadership::Mode;
use clap::Parser;
use config::{endpoint_in_use, store_config};
use exit::Failure;
use holding::{acquire_options, catch_signals, hold_while_running, run_in_slot, Holding, Store};
use s3_lease_host::blocking::Client;
use s3_lease_host::{Runtime, SlotOptions, Strategy};
use std::time::Duration;

/// How long the last lines may take to reach stderr before the process
/// exits (a stuck stderr loses them then; nothing is held any more).
const EXIT_FLUSH: Duration = Duration::from_secs(1);

fn main() {
    // The guardian of a command's process group (see `tree`): this binary
    // started again by `run` or `elect`, before any of the rest.
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(guardian::GUARDIAN_ARG)) {
        std::process::exit(guardian::guard());
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            stderr_lines::line(usage_error(&e));
            stderr_lines::flush(EXIT_FLUSH);
            std::process::exit(exit::USAGE);
        }
        // --help and --version: the output asked for, on stdout.
        Err(e) => {
            let _ = e.print();
            std::process::exit(0);
        }
    };
    let json = cli.json || cli.log_format == log::LogFormat::Json;
    log::set_format(cli.log_format);
    log::show_host_events(cli.quiet);
    let outcome = match cli.command {
        Cmd::Version => Ok(version::print(cli.json)),
        Cmd::Precompile { out } => precompile::run(out, cli.json),
        _ => run(cli),
    };
    // A write to stdout that failed other than by its reader going away
    // (see `out`): a command that otherwise succeeded did not deliver.
    let outcome = match (outcome, out::failure()) {
        (Ok(0), Some(e)) => Err(Failure::new(exit::USAGE, format!("writing stdout: {e}"))),
        (outcome, _) => outcome,
    };
    let code = match outcome {
        Ok(code) => code,
        Err(failure) => {
            stderr_lines::line(if json {
                serde_json::json!({"event": "error", "error": failure.message, "exit_code": failure.code})
                    .to_string()
            } else {
                format!("s3-lease: {}", log::shown(&failure.message))
            });
            failure.code
        }
    };
    stderr_lines::flush(EXIT_FLUSH);
    std::process::exit(code);
}

/// clap's message for bad arguments, coloured as clap would for a terminal.
fn usage_error(e: &clap::Error) -> String {
    use std::io::IsTerminal;
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let text = match colour {
        true => e.render().ansi().to_string(),
        false => e.render().to_string(),
    };
    text.trim_end_matches('\n').to_string()
}

fn run(cli: Cli) -> Result<i32, Failure> {
    check_arguments(&cli)?;
    let config = store_config(&cli.store)?;
    let runtime = Runtime::with_options(precompile::runtime_options())
        .map_err(|e| Failure::new(exit::INTERNAL, format!("{e:#}")))?;
    let client = Client::connect(&runtime, &config)?;
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
    if cli.store.check_store && campaigns {
        preflight::require_safe_store(&client, strategy)?;
    }
    let store = Store {
        runtime: &runtime,
        client: &client,
        config: &config,
        // For a nested s3-lease in `run` and `elect`'s command.
        endpoint: endpoint_in_use(&cli.store).map(|(_, endpoint)| endpoint),
    };
    dispatch(cli, &store, strategy)
}

/// Runs the subcommand, the store connected.
fn dispatch(cli: Cli, store: &Store, strategy: Strategy) -> Result<i32, Failure> {
    let (client, json, quiet) = (store.client, cli.json, cli.quiet);
    match cli.command {
        Cmd::Preflight => {
            let clock = preflight::clock_in_use(store.config);
            preflight::preflight(client, strategy, clock, json)
        }
        Cmd::Version => Ok(version::print(json)),
        Cmd::Precompile { out } => precompile::run(out, json),
        Cmd::Status { keys } => commands::status(client, &keys, json),
        Cmd::Audit(args) => audit::audit(client, args, json),
        Cmd::Acquire { hold, slots, wait } => {
            let options = acquire_options(&hold);
            match slots.options() {
                Some(slot) => commands::acquire_slot(client, &hold.key, &options, slot, wait),
                None => commands::acquire(client, &hold.key, &options, wait),
            }
        }
        Cmd::Renew { lease } => commands::renew(client, lease.as_deref()),
        Cmd::Release { lease } => commands::release(client, lease.as_deref(), json),
        Cmd::Fenced { op } => fenced(client, op, json),
        Cmd::Run(args) => run_command(store, args, quiet),
        Cmd::Elect(args) if args.watch => {
            commands::watch(client, &args.hold.key, args.every, json, &catch_signals()?)
        }
        Cmd::Elect(args) => {
            let how = Holding {
                command: args.command,
                kill_after: args.kill_after,
                wait: None,
                mode: Mode::EveryTerm,
                serve: args.serve,
            };
            hold_while_running(store, &args.hold, how, quiet)
        }
    }
}

/// `run`: under a plain lock, or in one of KEY's slots.
fn run_command(store: &Store, args: RunArgs, quiet: bool) -> Result<i32, Failure> {
    let slot: Option<SlotOptions> = args.slots.options();
    match slot {
        Some(_) if args.serve.is_some() => Err(Failure::new(
            exit::USAGE,
            "--serve is offered with plain locks and elect, not yet with --limit or --fair",
        )),
        Some(slot) => run_in_slot(store, args, slot, quiet),
        None => {
            let how = Holding {
                command: args.command,
                kill_after: args.kill_after,
                wait: args.wait,
                mode: Mode::Once,
                serve: args.serve,
            };
            hold_while_running(store, &args.hold, how, quiet)
        }
    }
}

fn fenced(client: &Client, op: FencedCmd, json: bool) -> Result<i32, Failure> {
    match op {
        FencedCmd::Put {
            object,
            file,
            content_type,
            lease,
        } => commands::fenced_put(
            client,
            lease.as_deref(),
            &object,
            file.as_deref(),
            &content_type,
            json,
        ),
        FencedCmd::Get { object } => commands::fenced_get(client, &object, json),
        FencedCmd::Delete { object, lease } => {
            commands::fenced_delete(client, lease.as_deref(), &object)
        }
    }
}

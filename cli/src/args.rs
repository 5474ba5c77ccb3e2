//! The command line's words: clap's definitions of the flags and
//! subcommands, and the checks of KEY and OBJECT made before anything is
//! sent.

use crate::claim::LeaseVar;
use crate::config::StoreFlags;
use crate::exit::{self, Failure};
use crate::{duration, log};
use clap::{Args, Parser, Subcommand};
use s3_lease_host::SlotOptions;
use std::time::Duration;

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
  82   `audit verify`: the grant log shows two holders at once, or a token
       granted twice (the findings and their records are printed)
  83   `audit verify`: the grant log does not prove that no two holders
       overlapped (a gap no record explains, a record unreadable, a
       takeover the store's clock does not show over)
  126/127  the command could not be started / was not found
  141  `acquire`, `renew`: stdout was closed, the lease printed to nobody
       (so it was released); other commands end quietly on a closed stdout";

const SEAL: &str = "\
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
    after_help = format!("{EXIT_CODES}\n\n{}\n\n{SEAL}", crate::config::stores_help())
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) store: StoreFlags,
    /// Machine-readable output (JSON).
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// No progress lines on stderr (errors are still printed).
    #[arg(long, short, global = true)]
    pub(crate) quiet: bool,
    /// Progress lines as people read them (`s3-lease: …`), or one JSON
    /// object per line (ts, event, key, holder, token, message).
    #[arg(
        long,
        value_enum,
        default_value = "human",
        env = "S3LEASE_LOG_FORMAT",
        global = true
    )]
    pub(crate) log_format: log::LogFormat,
    #[command(subcommand)]
    pub(crate) command: Cmd,
}

#[derive(Subcommand)]
pub(crate) enum Cmd {
    /// Hold KEY while CMD runs: wait for it, renew it, stop CMD if it is lost.
    #[command(after_help = LeaseVar::help())]
    Run(RunArgs),
    /// Run CMD only while leading KEY, campaigning again after losing; or `--watch`.
    #[command(after_help = LeaseVar::help())]
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
    /// KEY's grant log: its timeline, `verify` (did two holders ever
    /// overlap?) and `prune`. A key named `verify` or `prune`: after `--`.
    Audit(AuditArgs),
    /// This binary's version and the component it carries (size, sha256, origin).
    Version,
    /// Compile the component for this machine ahead of time, so commands
    /// start without compiling it (written beside this binary by default).
    Precompile {
        /// Where to write it (default: this binary's path plus `.cwasm`).
        #[arg(long, value_name = "PATH")]
        out: Option<std::path::PathBuf>,
    },
}

#[derive(Args)]
pub(crate) struct Hold {
    /// The lock's name: its object (after --prefix) in the bucket, or its
    /// item in the table. At most 1024 bytes with the prefix, no control
    /// characters.
    pub(crate) key: String,
    /// The lease's time to live, 1s to 7d. `run` and `elect` renew it every
    /// ttl/6; a lease from `acquire` lives this long unless `renew` extends it.
    #[arg(long, default_value = "30s", value_parser = duration::parse_ttl)]
    pub(crate) ttl: Duration,
    /// Who holds it, as `status` shows (default: HOSTNAME/PID/RANDOM,
    /// unique); 1 to 256 bytes, no control characters.
    #[arg(long, value_parser = parse_holder)]
    pub(crate) holder: Option<String>,
    /// Free text stored with the lock (an address, a version); at most 4096 bytes.
    #[arg(long, value_parser = parse_metadata)]
    pub(crate) metadata: Option<String>,
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
pub(crate) struct Slots {
    /// Let up to N holders hold KEY at once (a semaphore; every contender
    /// must pass the same N).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) limit: Option<u32>,
    /// Wait in KEY's queue: first come, first served among live waiters.
    #[arg(long)]
    pub(crate) fair: bool,
}

impl Slots {
    /// `None` for a plain lock (no `--limit`, no `--fair`).
    pub(crate) fn options(self) -> Option<SlotOptions> {
        (self.limit.is_some() || self.fair)
            .then(|| SlotOptions::new(self.limit.unwrap_or(1)).fair(self.fair))
    }
}

#[derive(Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) hold: Hold,
    #[command(flatten)]
    pub(crate) slots: Slots,
    /// Give up after this long: exit 75 if someone else holds it, 69 if the
    /// store never answered usefully; 0 is one attempt. Default: wait as
    /// long as it takes (an error retrying cannot fix ends it at once), as
    /// does a wait too long for the clock to count.
    #[arg(long, value_parser = duration::parse)]
    pub(crate) wait: Option<Duration>,
    /// After SIGTERM on loss, SIGKILL the command's process group this much
    /// later (default: 10s or ttl/4, whichever is shorter, so the command
    /// is gone before its lease can run out).
    #[arg(long, value_parser = duration::parse)]
    pub(crate) kill_after: Option<Duration>,
    /// Serve /status (JSON), /healthz (200, or 503 once the store has not
    /// answered for the renew deadline) and /metrics (Prometheus) on ADDR,
    /// e.g. 127.0.0.1:9464 (port 0: any free port; the line on stderr says which).
    #[arg(long, value_name = "ADDR")]
    pub(crate) serve: Option<String>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

#[derive(Args)]
pub(crate) struct ElectArgs {
    #[command(flatten)]
    pub(crate) hold: Hold,
    /// Print each change of leader (one line, or a JSON object) instead of campaigning.
    #[arg(long, conflicts_with = "command")]
    pub(crate) watch: bool,
    /// With --watch: how often to read the lock (at least 1ms).
    #[arg(long, default_value = "1s", value_parser = duration::parse_positive)]
    pub(crate) every: Duration,
    /// After SIGTERM on loss, SIGKILL the command's process group this much
    /// later (default: 10s or ttl/4, whichever is shorter).
    #[arg(long, value_parser = duration::parse)]
    pub(crate) kill_after: Option<Duration>,
    /// Serve /status (JSON), /healthz (200, or 503 once the store has not
    /// answered for the renew deadline) and /metrics (Prometheus) on ADDR,
    /// e.g. 127.0.0.1:9464 (port 0: any free port; the line on stderr says which).
    #[arg(long, value_name = "ADDR", conflicts_with = "watch")]
    pub(crate) serve: Option<String>,
    /// The command and its arguments, after `--`: run while this process
    /// leads, stopped when it stops leading, started again on the next term.
    #[arg(last = true, required_unless_present = "watch", value_name = "CMD")]
    pub(crate) command: Vec<String>,
}

/// `audit KEY [--since TIME]`, or one of its subcommands.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct AuditArgs {
    #[command(subcommand)]
    pub(crate) op: Option<AuditCmd>,
    /// The lock (or semaphore, or elector) whose grants to show.
    #[arg(required = true)]
    pub(crate) key: Option<String>,
    /// From the first grant at or after TIME (RFC 3339, e.g.
    /// 2026-11-28T03:12:00Z, compared with the store's clock; or a span
    /// back from now, e.g. 2h).
    #[arg(long, value_name = "TIME", value_parser = crate::time_arg::parse_time)]
    pub(crate) since: Option<u64>,
}

#[derive(Subcommand)]
pub(crate) enum AuditCmd {
    /// Prove from the store alone that no two holders of KEY overlapped:
    /// exit 0, else 82 (they did) or 83 (the log cannot tell), with the
    /// evidence.
    Verify {
        key: String,
        /// Also check the objects fenced under PREFIX by this key's lock:
        /// each one's token was granted (on a store that lists them).
        #[arg(long, value_name = "PREFIX")]
        fenced: Option<String>,
    },
    /// Delete the records of KEY's grants made before TIME (RFC 3339, or a
    /// span back from now).
    Prune {
        key: String,
        #[arg(long, value_name = "TIME", value_parser = crate::time_arg::parse_time)]
        before: u64,
    },
}

#[derive(Subcommand)]
pub(crate) enum FencedCmd {
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
/// KEY and OBJECT, refused as the component would refuse them, but named
/// as the user typed them (exit 64, nothing sent).
pub(crate) fn check_arguments(cli: &Cli) -> Result<(), Failure> {
    let prefix = cli.store.prefix.as_deref().unwrap_or("");
    let keys: Vec<&str> = match &cli.command {
        Cmd::Run(args) => vec![args.hold.key.as_str()],
        Cmd::Elect(args) => vec![args.hold.key.as_str()],
        Cmd::Acquire { hold, .. } => vec![hold.key.as_str()],
        Cmd::Status { keys } => keys.iter().map(String::as_str).collect(),
        Cmd::Audit(args) => match &args.op {
            Some(AuditCmd::Verify { key, .. }) | Some(AuditCmd::Prune { key, .. }) => {
                vec![key.as_str()]
            }
            None => args.key.iter().map(String::as_str).collect(),
        },
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

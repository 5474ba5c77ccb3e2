//! `run` and `elect -- CMD`: from the arguments to a supervised command
//! (see `claim`), holding an elector's term or a semaphore's slot.

use crate::args::{Hold, RunArgs};
use crate::claim::leadership::{Leadership, Mode};
use crate::claim::slot::Slot;
use crate::claim::{self, Job};
use crate::config::{child_env, credentials_line};
use crate::exit::{self, Failure};
use crate::{duration, log, metrics, probe, serve, signals};
use s3_lease_host::blocking::{Client, Elector};
use s3_lease_host::{AcquireOptions, ElectorConfig, Runtime, SlotOptions, StoreConfig};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// The store the command's claim is kept in.
pub struct Store<'a> {
    pub runtime: &'a Runtime,
    pub client: &'a Client,
    pub config: &'a StoreConfig,
    /// The endpoint given, for a nested s3-lease (see `child_env`).
    pub endpoint: Option<String>,
}

/// What differs between `run` and `elect -- CMD`.
pub struct Holding {
    pub command: Vec<String>,
    pub kill_after: Option<Duration>,
    pub wait: Option<Duration>,
    pub mode: Mode,
    /// `--serve ADDR`.
    pub serve: Option<String>,
}

/// Campaigns for `hold.key` through an elector and runs the command while
/// leading (`run`: once; `elect`: every term).
pub fn hold_while_running(
    store: &Store,
    hold: &Hold,
    how: Holding,
    quiet: bool,
) -> Result<i32, Failure> {
    let elector_config = elector_config(hold, store.config.min_write_interval())?;
    let holder = elector_config.holder_id.clone().unwrap_or_default();
    let say = |event: &str, line: &str| say(quiet, &hold.key, &holder, event, line);
    if let Some(line) = credentials_line(store.config) {
        say("credentials", &line);
    }
    let elector = store.client.elect(&elector_config)?;
    let fatal = std::sync::Arc::new(std::sync::Mutex::new(None));
    if let Some(addr) = &how.serve {
        let bound = start_serving(store, &elector, &elector_config, addr, fatal.clone())?;
        say(
            "serving",
            &format!("serving status, health and metrics on http://{bound}"),
        );
    }
    let kill_after = kill_after(how.kill_after, hold.ttl);
    // Leadership ends at ttl/2 without a renew; the lease lives the other
    // half. A command still running past that may overlap the next holder's.
    if kill_after >= hold.ttl / 2 {
        say("warning", &format!(
            "warning: --kill-after {} is not below half the ttl ({}): a command that ignores SIGTERM may still run when the next holder starts",
            duration::show(kill_after),
            duration::show(hold.ttl / 2)
        ));
    }
    let job = Job {
        key: hold.key.clone(),
        holder: holder.clone(),
        command: how.command,
        env: child_env(store.config, store.endpoint.clone()),
        kill_after,
        deadline: hold.ttl / 2,
        wait: how.wait,
        quiet,
        signals: catch_signals()?,
    };
    // A client of its own, made on the first failed step (see `probe`).
    let connect = || Client::connect(store.runtime, store.config);
    let probe = probe::Probe::new(&hold.key, Box::new(connect));
    let outcome = claim::supervise(job, Leadership::new(elector, how.mode, probe, fatal));
    let refreshes = store.client.credentials_refreshes();
    if refreshes > 0 {
        say(
            "credentials-refreshed",
            &format!("the credentials were refreshed {refreshes} times meanwhile"),
        );
    }
    outcome
}

/// `--serve ADDR`: status, health and metrics of the elector; the
/// address bound.
fn start_serving(
    store: &Store,
    elector: &Elector,
    elector_config: &ElectorConfig,
    addr: &str,
    fatal: claim::leadership::Fatal,
) -> Result<std::net::SocketAddr, Failure> {
    let endpoint = serve::Endpoint {
        sources: metrics::Sources {
            key: elector_config.key.clone(),
            elector: elector.watcher(),
            requests: store.runtime.request_counts().clone(),
        },
        status_client: Client::connect(store.runtime, store.config)?,
        holder: elector_config.holder_id.clone().unwrap_or_default(),
        renew_deadline: elector_config.renew_deadline,
        fatal,
    };
    serve::start(addr, endpoint).map_err(|e| Failure::new(exit::USAGE, e))
}

/// `run KEY --limit N` or `--fair`: holds one of KEY's slots while the
/// command runs.
pub fn run_in_slot(
    store: &Store,
    args: RunArgs,
    slot: SlotOptions,
    quiet: bool,
) -> Result<i32, Failure> {
    let hold = &args.hold;
    // Held for half the ttl after each renew was sent, as `run`'s
    // elector's renew deadline (see `claim::slot`).
    let options = acquire_options(hold).deadline(hold.ttl / 2);
    let holder = options.holder_id.clone().unwrap_or_default();
    if let Some(line) = credentials_line(store.config) {
        say(quiet, &hold.key, &holder, "credentials", &line);
    }
    let job = Job {
        key: hold.key.clone(),
        holder,
        command: args.command,
        env: child_env(store.config, store.endpoint.clone()),
        kill_after: kill_after(args.kill_after, hold.ttl),
        deadline: hold.ttl / 2,
        wait: args.wait,
        quiet,
        signals: catch_signals()?,
    };
    claim::supervise(job, Slot::new(store.client, &hold.key, options, slot))
}

/// A progress line about `key` (see `log`), unless `--quiet`.
fn say(quiet: bool, key: &str, holder: &str, event: &str, line: &str) {
    if !quiet {
        let about = log::About {
            key,
            holder: Some(holder),
            token: None,
        };
        log::say(event, &about, line);
    }
}

/// `--kill-after`, by default 10s or ttl/4, whichever is shorter.
fn kill_after(given: Option<Duration>, ttl: Duration) -> Duration {
    given.unwrap_or_else(|| (ttl / 4).min(Duration::from_secs(10)))
}

/// `acquire`'s (and a slot's) options from the arguments.
pub fn acquire_options(hold: &Hold) -> AcquireOptions {
    let options =
        AcquireOptions::new(hold.ttl).holder_id(hold.holder.clone().unwrap_or_else(default_holder));
    match &hold.metadata {
        Some(metadata) => options.metadata(metadata.clone()),
        None => options,
    }
}

/// client-go's three durations from one ttl: the leader renews every ttl/6
/// and steps down at ttl/2 without a successful renew, leaving the other
/// half of the ttl to stop the command before anyone else can be granted it.
/// On a store that takes one write of an object a second at most, the
/// leader renews no faster than that: a 4 s ttl (such a store's shortest)
/// renews every second, still within its 2 s deadline.
fn elector_config(
    hold: &Hold,
    min_write_interval: Option<Duration>,
) -> Result<ElectorConfig, Failure> {
    if hold.ttl < Duration::from_secs(1) {
        return Err(Failure::new(exit::USAGE, "--ttl must be at least 1s"));
    }
    let ttl = hold.ttl;
    let retry_period = (ttl / 6).max(min_write_interval.unwrap_or_default());
    let config = ElectorConfig::new(hold.key.clone())
        .lease_duration(ttl)
        .renew_deadline(ttl / 2)
        .retry_period(retry_period)
        .holder_id(hold.holder.clone().unwrap_or_else(default_holder));
    Ok(match &hold.metadata {
        Some(metadata) => config.metadata(metadata.clone()),
        None => config,
    })
}

pub fn catch_signals() -> Result<Receiver<i32>, Failure> {
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

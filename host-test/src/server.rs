//! A real S3 endpoint for tests and the demo.
//!
//! With `AWS_ENDPOINT_URL` set, that endpoint is used with the usual
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` and
//! `AWS_REGION` (and `S3LEASE_TEST_BUCKET`, default `s3-lease-test`).
//! Otherwise SeaweedFS (`weed mini`, from `S3LEASE_WEED` or the workspace's
//! `.venv/bin/weed`) is started on free loopback ports in a fresh temp dir,
//! watched so that it stops when this process ends.

use crate::admin::Admin;
use crate::bindings::{config_of, AwsCredentials, Config, S3Store, Store};
use crate::watchdog::{self, fresh_dir, Server};
use anyhow::{bail, Context, Result};
use s3_lease::config::{Addressing, ClientConfig, RawConfig};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// Where the tests' lock objects live, and the keys to get there.
#[derive(Clone)]
pub struct Endpoint {
    pub url: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    pub bucket: String,
    pub addressing: Addressing,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &self.url)
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// The host crate's config for this endpoint, from the same variables a
    /// user's program reads.
    pub fn host_config(&self, key_prefix: &str) -> Result<s3_lease_host::StoreConfig> {
        let mut c = s3_lease_host::StoreConfig::from_vars(&self.bucket, |name| match name {
            "AWS_ENDPOINT_URL" => Some(self.url.clone()),
            "AWS_REGION" => Some(self.region.clone()),
            "AWS_ACCESS_KEY_ID" => Some(self.access_key_id.clone()),
            "AWS_SECRET_ACCESS_KEY" => Some(self.secret_access_key.clone()),
            "AWS_SESSION_TOKEN" => self.session_token.clone(),
            "S3LEASE_ADDRESSING" => Some(match self.addressing {
                Addressing::Path => "path".into(),
                Addressing::VirtualHosted => "virtual-hosted".into(),
            }),
            _ => None,
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        c.key_prefix = Some(key_prefix.to_string());
        Ok(c)
    }

    /// The component's config for this endpoint, with a key prefix that
    /// keeps each test's keys apart.
    pub fn config(&self, key_prefix: &str) -> Config {
        let store = Store::S3(S3Store {
            endpoint: self.url.clone(),
            region: self.region.clone(),
            bucket: self.bucket.clone(),
            addressing: self.addressing.into(),
            credentials: AwsCredentials {
                access_key_id: self.access_key_id.clone(),
                secret_access_key: self.secret_access_key.clone(),
                session_token: self.session_token.clone(),
            },
        });
        config_of(store, key_prefix)
    }

    pub fn admin(&self) -> Result<Admin> {
        Admin::new(self.client_config()?)
    }

    /// The crate's validated config for this endpoint, no key prefix: what
    /// `s3::prepare` signs host-side requests with.
    pub fn client_config(&self) -> Result<ClientConfig> {
        let raw = RawConfig::of(s3_lease::config::Store::S3(s3_lease::stores::S3Bucket {
            endpoint: self.url.clone(),
            region: self.region.clone(),
            bucket: self.bucket.clone(),
            addressing: self.addressing,
            credentials: s3_lease::sigv4::Credentials {
                access_key_id: self.access_key_id.clone(),
                secret_access_key: self.secret_access_key.clone(),
                session_token: self.session_token.clone(),
            },
        }));
        ClientConfig::validate(raw).map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// From the `AWS_*` environment variables, when `AWS_ENDPOINT_URL` is set.
    pub fn from_env() -> Option<Result<Endpoint>> {
        let url = std::env::var("AWS_ENDPOINT_URL")
            .ok()
            .filter(|u| !u.is_empty())?;
        let var = |name: &str| {
            std::env::var(name)
                .with_context(|| format!("AWS_ENDPOINT_URL is set but {name} is not"))
        };
        Some((|| {
            Ok(Endpoint {
                url,
                region: std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into()),
                access_key_id: var("AWS_ACCESS_KEY_ID")?,
                secret_access_key: var("AWS_SECRET_ACCESS_KEY")?,
                session_token: std::env::var("AWS_SESSION_TOKEN")
                    .ok()
                    .filter(|t| !t.is_empty()),
                bucket: std::env::var("S3LEASE_TEST_BUCKET")
                    .unwrap_or_else(|_| "s3-lease-test".into()),
                addressing: match std::env::var("S3LEASE_ADDRESSING").as_deref() {
                    Ok("virtual-hosted") => Addressing::VirtualHosted,
                    _ => Addressing::Path,
                },
            })
        })())
    }
}

/// The object written and deleted to tell that SeaweedFS takes writes.
const READY_PROBE: &str = "s3-lease-test-ready-probe";

/// A running SeaweedFS; stopped (and its data removed) when dropped or when
/// this process exits.
pub struct SeaweedFs {
    pub endpoint: Endpoint,
    /// The master's port; the filer's is 2 above it, S3's 3 (see
    /// `WEED_PORT_OFFSETS`).
    base_port: u16,
    server: Server,
}

/// The `weed` binary: `S3LEASE_WEED`, else `.venv/bin/weed` of the workspace.
pub fn weed_path() -> PathBuf {
    crate::env_or_workspace_path("S3LEASE_WEED", ".venv/bin/weed")
}

/// The ports `weed mini` is given (master, volume, filer, S3, admin,
/// metrics) and their gRPC twins, 10000 above each.
const WEED_PORT_OFFSETS: [u16; 12] = [
    0, 1, 2, 3, 4, 5, 10_000, 10_001, 10_002, 10_003, 10_004, 10_005,
];

impl SeaweedFs {
    /// A SeaweedFS that refuses requests to a bucket that does not exist.
    pub fn start() -> Result<SeaweedFs> {
        Self::start_with(false)
    }

    /// A SeaweedFS as `weed mini` runs by default: a PUT to a bucket that
    /// does not exist creates it (for an admin's keys, as ours are).
    pub fn start_creating_buckets() -> Result<SeaweedFs> {
        Self::start_with(true)
    }

    /// Started until it takes a write: a start that does not is stopped
    /// and tried again on other ports, once.
    fn start_with(create_buckets: bool) -> Result<SeaweedFs> {
        match Self::start_once(create_buckets) {
            Ok(weed) => Ok(weed),
            Err(first) => {
                eprintln!("SeaweedFS did not start, trying other ports: {first:#}");
                Self::start_once(create_buckets)
            }
        }
    }

    fn start_once(create_buckets: bool) -> Result<SeaweedFs> {
        let base = watchdog::free_ports(&WEED_PORT_OFFSETS)?;
        let dir = fresh_dir("weed")?;
        let endpoint = Endpoint {
            url: format!("http://127.0.0.1:{}", base + 3),
            region: "us-east-1".into(),
            access_key_id: "S3LEASETESTKEY".into(),
            secret_access_key: format!("s3lease-test-secret-{base}-{}", std::process::id()),
            session_token: None,
            bucket: "s3-lease-test".into(),
            addressing: Addressing::Path,
        };
        write_identities(&dir, &endpoint, &[])?;
        let weed = weed_path();
        let mut command = vec![weed.display().to_string(), "mini".into()];
        command.extend([
            "-dir=data".into(),
            "-ip=127.0.0.1".into(),
            "-ip.bind=127.0.0.1".into(),
            "-master.telemetry=false".into(),
            "-admin.ui=false".into(),
            "-webdav=false".into(),
            format!("-s3.autoCreateBucket={create_buckets}"),
            "-s3.port.iceberg=0".into(),
            "-s3.port.lance=0".into(),
            format!("-master.port={base}"),
            format!("-volume.port={}", base + 1),
            format!("-filer.port={}", base + 2),
            format!("-s3.port={}", base + 3),
            format!("-admin.port={}", base + 4),
            format!("-metricsPort={}", base + 5),
            format!("-s3.config={}", dir.join("identities.json").display()),
        ]);
        std::fs::create_dir_all(dir.join("data"))?;
        let hint = "run scripts/test.sh (it installs it), or set S3LEASE_WEED or AWS_ENDPOINT_URL";
        let server = watchdog::spawn("SeaweedFS", dir, &weed, hint, &command)?;
        // Ready when the bucket can be created and an object written and
        // deleted in it: master, filer, S3 gateway and a volume that takes
        // writes. (Creating a bucket alone needs no volume: a SeaweedFS
        // whose volume server had not started passed that and failed every
        // write after it.)
        let admin = endpoint.admin()?;
        let every = Duration::from_millis(250);
        server.wait_ready(Duration::from_secs(60), every, || {
            admin.create_bucket()?;
            admin.put(READY_PROBE, b"ready")?;
            admin.delete(READY_PROBE)
        })?;
        Ok(SeaweedFs {
            endpoint,
            base_port: base,
            server,
        })
    }

    /// Makes it accept `keys` besides its own, and no others: rewrites its
    /// identities file and sends SIGHUP, on which SeaweedFS reloads it
    /// (measured: within a second). Keys it drops are refused from then on
    /// (403 `InvalidAccessKeyId`), as AWS refuses a revoked key.
    pub fn set_extra_keys(&self, keys: &[(String, String)]) -> Result<()> {
        write_identities(&self.server.dir, &self.endpoint, keys)?;
        let pid = std::fs::read_to_string(self.server.dir.join("server.pid"))?;
        let pid = pid.trim();
        let status = Command::new("kill").args(["-HUP", pid]).status()?;
        if !status.success() {
            bail!("could not signal SeaweedFS (pid {pid})");
        }
        Ok(())
    }
}

/// Writes SeaweedFS's identities file in `dir`: `e`'s keys, and `extra`
/// keys (access key, secret) under another identity, all admins.
fn write_identities(dir: &Path, e: &Endpoint, extra: &[(String, String)]) -> Result<()> {
    let identity = |name: &str, keys: Vec<(&str, &str)>| {
        let credentials: Vec<_> = keys
            .iter()
            .map(|(a, s)| serde_json::json!({"accessKey": a, "secretKey": s}))
            .collect();
        serde_json::json!({
            "name": name,
            "credentials": credentials,
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        })
    };
    let mut identities = vec![identity(
        "s3lease",
        vec![(&e.access_key_id, &e.secret_access_key)],
    )];
    if !extra.is_empty() {
        let keys = extra
            .iter()
            .map(|(a, s)| (a.as_str(), s.as_str()))
            .collect();
        identities.push(identity("rotating", keys));
    }
    // Written whole, then renamed: a reload never reads half a file.
    let (path, tmp) = (dir.join("identities.json"), dir.join("identities.json.new"));
    let json = serde_json::json!({ "identities": identities });
    std::fs::write(&tmp, json.to_string())?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}

enum Shared {
    Env(Endpoint),
    Seaweed(SeaweedFs),
}

static SHARED: OnceLock<Shared> = OnceLock::new();

/// The endpoint shared by all tests of this process: started once.
pub fn shared() -> &'static Endpoint {
    let shared = SHARED.get_or_init(|| {
        let started = match Endpoint::from_env() {
            Some(env) => env.and_then(|e| {
                e.admin()?.create_bucket()?;
                Ok(Shared::Env(e))
            }),
            None => SeaweedFs::start().map(|weed| {
                print_log_on_first_panic(weed.server.dir.join("server.log"));
                Shared::Seaweed(weed)
            }),
        };
        match started {
            Ok(s) => s,
            Err(e) => panic!("no S3 endpoint for the tests: {e:#}"),
        }
    });
    match shared {
        Shared::Env(e) => e,
        Shared::Seaweed(s) => &s.endpoint,
    }
}

/// The shared SeaweedFS's filer and master, as `http://127.0.0.1:PORT`:
/// ports of the same server that are not its S3 API, which users point
/// a client at by mistake. `None` when the tests run against an endpoint
/// from the environment.
pub fn shared_filer_and_master() -> Option<(String, String)> {
    shared();
    match SHARED.get()? {
        Shared::Env(_) => None,
        Shared::Seaweed(weed) => {
            let url = |port: u16| format!("http://127.0.0.1:{port}");
            Some((url(weed.base_port + 2), url(weed.base_port)))
        }
    }
}

/// On this process's first panic (a failing test), the end of the shared
/// SeaweedFS's log: its directory is gone once the process ends, and a
/// failure that only CI sees is otherwise told by the tests' side alone.
fn print_log_on_first_panic(log: PathBuf) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let previous = std::panic::take_hook();
    let printed = AtomicBool::new(false);
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        if printed.swap(true, Ordering::Relaxed) {
            return;
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        // `weed mini` retries registering a worker with its admin server
        // every few seconds, which the tests do not use: left out.
        let noise = ["WorkerService", "PluginControlService", "worker", "Worker"];
        let lines: Vec<&str> = text
            .lines()
            .filter(|line| !noise.iter().any(|n| line.contains(n)))
            .collect();
        let tail = &lines[lines.len().saturating_sub(40)..];
        eprintln!(
            "--- the shared SeaweedFS's log at this process's first panic (last {} lines) ---\n{}\n---",
            tail.len(),
            tail.join("\n")
        );
    }));
}

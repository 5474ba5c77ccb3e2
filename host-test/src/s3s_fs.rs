//! s3s-fs, a real S3-compatible store that must fail the preflight: it
//! ignores `If-Match` on DELETE (and its conditional PUTs are not atomic).
//! `scripts/setup.sh` installs it into `.tools/bin`; `S3LEASE_S3S_FS`
//! names another binary.

use crate::server::Endpoint;
use crate::watchdog::{self, free_port, Watchdog};
use anyhow::{bail, Result};
use s3_lease::config::Addressing;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The `s3s-fs` binary: `S3LEASE_S3S_FS`, else `.tools/bin/s3s-fs` of the workspace.
pub fn binary() -> PathBuf {
    crate::env_or_workspace_path("S3LEASE_S3S_FS", ".tools/bin/s3s-fs")
}

/// A running s3s-fs on a free loopback port, stopped (and its directory
/// removed) when dropped or when this process ends.
pub struct S3sFs {
    pub endpoint: Endpoint,
    _watchdog: Watchdog,
}

impl S3sFs {
    pub fn start() -> Result<S3sFs> {
        let bin = binary();
        if !bin.exists() {
            bail!("s3s-fs not found at {}", bin.display());
        }
        let port = free_port()?;
        let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
        let dir = std::env::temp_dir().join(format!("s3lease-s3s-{}-{stamp}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let endpoint = Endpoint {
            url: format!("http://127.0.0.1:{port}"),
            region: "us-east-1".into(),
            access_key_id: "S3LEASES3SKEY".into(),
            secret_access_key: format!("s3lease-s3s-secret-{stamp}"),
            session_token: None,
            bucket: "s3-lease-test".into(),
            addressing: Addressing::Path,
        };
        // Stops s3s-fs when our process goes away or on TERM.
        let script = r#"
            bin="$1"; dir="$2"; shift 2
            "$bin" "$@" "$dir" >"$dir.log" 2>&1 &
            c=$!
            stop() { kill "$c" 2>/dev/null; wait "$c" 2>/dev/null; rm -rf "$dir" "$dir.log"; exit 0; }
            trap stop TERM INT
            while kill -0 "$S3LEASE_PARENT" 2>/dev/null && kill -0 "$c" 2>/dev/null; do sleep 0.3; done
            stop
        "#;
        let port_arg = port.to_string();
        let args: [&OsStr; 10] = [
            bin.as_ref(),
            dir.as_ref(),
            "--host".as_ref(),
            "127.0.0.1".as_ref(),
            "--port".as_ref(),
            port_arg.as_ref(),
            "--access-key".as_ref(),
            endpoint.access_key_id.as_ref(),
            "--secret-key".as_ref(),
            endpoint.secret_access_key.as_ref(),
        ];
        let server = S3sFs {
            _watchdog: watchdog::start("s3s-fs", script, &args)?,
            endpoint,
        };
        let admin = server.endpoint.admin()?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match admin.create_bucket() {
                Ok(()) => return Ok(server),
                Err(e) if Instant::now() > deadline => {
                    bail!("s3s-fs not ready after 30 s: {e:#}")
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }
}

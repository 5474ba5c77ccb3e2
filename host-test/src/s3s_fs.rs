//! s3s-fs, a real S3-compatible store that must fail the preflight: it
//! ignores `If-Match` on DELETE (and its conditional PUTs are not atomic).
//! `scripts/setup.sh` installs it into `.tools/bin`; `S3LEASE_S3S_FS`
//! names another binary.

use crate::server::Endpoint;
use crate::watchdog::{self, free_port, fresh_dir, Server};
use anyhow::Result;
use s3_lease::config::Addressing;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;

/// The `s3s-fs` binary: `S3LEASE_S3S_FS`, else `.tools/bin/s3s-fs` of the workspace.
pub fn binary() -> PathBuf {
    crate::env_or_workspace_path("S3LEASE_S3S_FS", ".tools/bin/s3s-fs")
}

/// A running s3s-fs on a free loopback port, stopped (and its directory
/// removed) when dropped or when this process ends.
pub struct S3sFs {
    pub endpoint: Endpoint,
    _server: Server,
}

impl S3sFs {
    pub fn start() -> Result<S3sFs> {
        let port = free_port()?;
        let dir = fresh_dir("s3s")?;
        std::fs::create_dir_all(dir.join("data"))?;
        let endpoint = Endpoint {
            url: format!("http://127.0.0.1:{port}"),
            region: "us-east-1".into(),
            access_key_id: "S3LEASES3SKEY".into(),
            secret_access_key: format!("s3lease-s3s-secret-{}", std::process::id()),
            session_token: None,
            bucket: "s3-lease-test".into(),
            addressing: Addressing::Path,
        };
        let (bin, port) = (binary(), port.to_string());
        let command: [&OsStr; 10] = [
            bin.as_ref(),
            "--host".as_ref(),
            "127.0.0.1".as_ref(),
            "--port".as_ref(),
            port.as_ref(),
            "--access-key".as_ref(),
            endpoint.access_key_id.as_ref(),
            "--secret-key".as_ref(),
            endpoint.secret_access_key.as_ref(),
            "data".as_ref(),
        ];
        let server = watchdog::spawn("s3s-fs", dir, &bin, "see scripts/setup.sh", &command)?;
        let admin = endpoint.admin()?;
        let every = Duration::from_millis(100);
        server.wait_ready(Duration::from_secs(30), every, || admin.create_bucket())?;
        Ok(S3sFs {
            endpoint,
            _server: server,
        })
    }
}

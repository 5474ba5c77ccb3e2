//! The test servers (SeaweedFS, s3s-fs, dynalite, Azurite) each run under
//! a small bash watchdog that stops the server when this process goes away
//! (test binaries never run the destructors of statics, and a killed one
//! runs none) or when the watchdog is sent TERM, as dropping it does.

use anyhow::{Context, Result};
use std::ffi::OsStr;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};

/// A running watchdog; dropping it stops it, and its server with it.
pub struct Watchdog(Child);

impl Drop for Watchdog {
    fn drop(&mut self) {
        // TERM lets the script stop its server and clean up after it.
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

/// Runs `script` under bash with `args` as `$1`, `$2`, ...; the script
/// reads this process's id from `S3LEASE_PARENT` and watches it.
pub fn start<S: AsRef<OsStr>>(what: &str, script: &str, args: &[S]) -> Result<Watchdog> {
    let child = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg("watchdog")
        .args(args)
        .env("S3LEASE_PARENT", std::process::id().to_string())
        .stdin(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    Ok(Watchdog(child))
}

/// A loopback port free now (the server binds it a moment later).
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

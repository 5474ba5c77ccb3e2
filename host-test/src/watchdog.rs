//! How the test servers (SeaweedFS, s3s-fs, dynalite, Azurite) start and
//! stop, the same for all: each runs in a fresh directory of its own (its
//! working directory, with its log and pid), under a small bash watchdog
//! that stops the server and removes the directory when this process goes
//! away (test binaries never run the destructors of statics, and a killed
//! one runs none) or when the watchdog is sent TERM, as dropping it does.

use anyhow::{bail, Context, Result};
use std::ffi::OsStr;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `$1` the directory, then the server's command line. TERM, then KILL
/// after 5 s: a server that ignores TERM still stops.
const SCRIPT: &str = r#"
    dir="$1"; shift
    cd "$dir" || exit 1
    "$@" >"$dir/server.log" 2>&1 &
    s=$!
    echo "$s" >"$dir/server.pid"
    stop() {
        kill "$s" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$s" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$s" 2>/dev/null; wait "$s" 2>/dev/null
        rm -rf "$dir"; exit 0
    }
    trap stop TERM INT
    while kill -0 "$S3LEASE_PARENT" 2>/dev/null && kill -0 "$s" 2>/dev/null; do sleep 0.3; done
    stop
"#;

/// A running server; dropping it stops the server and removes its directory.
pub struct Server {
    watchdog: Child,
    what: &'static str,
    /// The server's working directory: `server.log`, `server.pid`, and
    /// whatever the server keeps there.
    pub dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        // TERM lets the script stop its server and clean up after it.
        let _ = Command::new("kill")
            .arg(self.watchdog.id().to_string())
            .status();
        let _ = self.watchdog.wait();
    }
}

/// A fresh directory for `what` under the temp dir.
pub fn fresh_dir(what: &str) -> Result<PathBuf> {
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
    let name = format!("s3lease-{what}-{}-{stamp}", std::process::id());
    let dir = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Starts `command` in `dir` (from [`fresh_dir`]) under the watchdog;
/// `installed` is the file it runs (`hint` says how to install it).
pub fn spawn<S: AsRef<OsStr>>(
    what: &'static str,
    dir: PathBuf,
    installed: &Path,
    hint: &str,
    command: &[S],
) -> Result<Server> {
    if !installed.exists() {
        bail!("{what} not found at {}: {hint}", installed.display());
    }
    let watchdog = Command::new("bash")
        .arg("-c")
        .arg(SCRIPT)
        .arg("watchdog")
        .arg(&dir)
        .args(command)
        .env("S3LEASE_PARENT", std::process::id().to_string())
        .stdin(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    Ok(Server {
        watchdog,
        what,
        dir,
    })
}

impl Server {
    /// Polls `ready` every `every` until it succeeds; after `limit`, the
    /// last error and the end of the server's log.
    pub fn wait_ready(
        &self,
        limit: Duration,
        every: Duration,
        mut ready: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        let deadline = Instant::now() + limit;
        loop {
            let err = match ready() {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
                let mut tail: Vec<&str> = log.lines().rev().take(20).collect();
                tail.reverse();
                bail!(
                    "{} not ready after {limit:?}: {err:#}\n{}",
                    self.what,
                    tail.join("\n")
                );
            }
            std::thread::sleep(every);
        }
    }
}

/// A loopback port free now (the server binds it a moment later).
pub fn free_port() -> Result<u16> {
    free_ports(&[0])
}

/// A base port such that `base + offset` is free now for every offset, picked
/// at random below the kernel's ephemeral range: a port the kernel may hand
/// to an outgoing connection (ours, or one a server makes between its own
/// parts while it starts) can be taken between this check and the server's
/// bind, and a server that loses one of several ports that way may half
/// start. Port 0 (what the kernel picks) would be in that range.
pub fn free_ports(offsets: &[u16]) -> Result<u16> {
    use std::hash::{BuildHasher, Hasher};
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    let lowest: u16 = 10_000;
    let span = offsets.iter().copied().max().unwrap_or(0);
    let highest = ephemeral_low.saturating_sub(span).saturating_sub(1);
    if highest <= lowest {
        bail!("no room for {offsets:?} between {lowest} and the ephemeral ports ({ephemeral_low})");
    }
    // Random per process (the standard library seeds it from the OS), so
    // that test processes side by side try different ports.
    let mut random = std::collections::hash_map::RandomState::new().build_hasher();
    random.write_u32(std::process::id());
    let start = random.finish();
    let choices = u64::from(highest - lowest);
    for i in 0..500u64 {
        let base = lowest + (start.wrapping_add(i.wrapping_mul(7_919)) % choices) as u16;
        let free = |offset: &u16| TcpListener::bind(("127.0.0.1", base + offset)).is_ok();
        if offsets.iter().all(free) {
            return Ok(base);
        }
    }
    bail!("no free loopback ports for {offsets:?} below {ephemeral_low}")
}

/// Whether something answers on `url`'s host and port (`http://host:port`).
pub fn listening(url: &str) -> Result<()> {
    std::net::TcpStream::connect(url.trim_start_matches("http://"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picked_ports_are_free_and_below_the_ephemeral_range() {
        let offsets = [0, 1, 2, 10_000, 10_001];
        let ephemeral_low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .map(|r| r.split_whitespace().next().unwrap().parse().unwrap())
            .unwrap_or(32_768);
        for _ in 0..20 {
            let base = free_ports(&offsets).unwrap();
            assert!(base >= 10_000 && base + 10_001 < ephemeral_low, "{base}");
            for offset in offsets {
                TcpListener::bind(("127.0.0.1", base + offset)).unwrap();
            }
        }
    }
}

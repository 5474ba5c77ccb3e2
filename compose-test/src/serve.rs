//! The runtimes that serve the composed component on loopback:
//! `wasmtime serve` (this crate's `wasmtime-serve` binary) and Node through
//! `jco serve`. Each runs in a process group of its own, killed when the
//! `Server` is dropped (jco serve leaves a child node process behind
//! otherwise).

use crate::http;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub name: &'static str,
    pub addr: SocketAddr,
    child: Child,
    log: PathBuf,
}

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Server {
    /// `wasmtime serve -Scli` (the function reads its configuration from
    /// `wasi:cli/environment`; every other import is in the proxy world),
    /// with `flags` (a WASI 0.3 component needs `-Wcomponent-model-async`),
    /// passing the variables in `env` through by name, not on the command
    /// line, so credentials stay out of `ps`.
    pub fn wasmtime(
        binary: &Path,
        component: &Path,
        flags: &[&str],
        env: &[(String, String)],
        log_dir: &Path,
    ) -> Server {
        Server::wasmtime_ready_on(binary, component, flags, env, log_dir, 404)
    }

    /// `wasmtime`, for a component that answers `GET /` with `ready_status`
    /// (the lease gate answers 400: `/` names no key).
    pub fn wasmtime_ready_on(
        binary: &Path,
        component: &Path,
        flags: &[&str],
        env: &[(String, String)],
        log_dir: &Path,
        ready_status: u16,
    ) -> Server {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let mut command = Command::new(binary);
        command
            .arg("-Scli")
            .args(flags)
            .arg("--addr")
            .arg(addr.to_string());
        for (name, _) in env {
            command.arg("--env").arg(name);
        }
        command.arg(component);
        Server::start("wasmtime serve", command, addr, env, log_dir, ready_status)
    }

    /// `jco serve`: jco transpiles the component to JavaScript and core
    /// wasm, and preview2-shim serves it from Node's HTTP server.
    pub fn jco(jco: &Path, component: &Path, env: &[(String, String)], work_dir: &Path) -> Server {
        Server::jco_ready_on(jco, component, env, work_dir, 404)
    }

    /// `jco`, for a component that answers `GET /` with `ready_status`.
    pub fn jco_ready_on(
        jco: &Path,
        component: &Path,
        env: &[(String, String)],
        work_dir: &Path,
        ready_status: u16,
    ) -> Server {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let mut command = Command::new(jco);
        command
            .arg("serve")
            .arg("--host")
            .arg("127.0.0.1")
            .arg("--port")
            .arg(addr.port().to_string())
            .arg("--jco-dir")
            .arg(work_dir.join("jco-serve"))
            .arg(component);
        Server::start("jco serve", command, addr, env, work_dir, ready_status)
    }

    fn start(
        name: &'static str,
        mut command: Command,
        addr: SocketAddr,
        env: &[(String, String)],
        log_dir: &Path,
        ready_status: u16,
    ) -> Server {
        std::fs::create_dir_all(log_dir).expect("log dir");
        let log = log_dir.join(format!("{}-{}.log", name.replace(' ', "-"), addr.port()));
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let child = command
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        let mut server = Server {
            name,
            addr,
            child,
            log,
        };
        server.wait_ready(Duration::from_secs(120), ready_status);
        server
    }

    /// Until the function answers `GET /` (with `status`): jco transpiles first.
    fn wait_ready(&mut self, limit: Duration, status: u16) {
        let started = Instant::now();
        loop {
            if let Ok(reply) = http::request(self.addr, "GET", "/") {
                assert_eq!(
                    reply.status, status,
                    "{}: GET / answered {reply:?}",
                    self.name
                );
                println!(
                    "{} ready on {} after {:.1} s",
                    self.name,
                    self.addr,
                    started.elapsed().as_secs_f64()
                );
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{} exited ({status}): {}", self.name, self.log_tail());
            }
            assert!(
                started.elapsed() < limit,
                "{} not ready after {limit:?}: {}",
                self.name,
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Everything the server and the component have written so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let start = text.len().saturating_sub(4000);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        format!("log {}:\n{}", self.log.display(), &text[start..])
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The whole group: jco serve's node child too.
        let _ = Command::new("kill")
            .arg("--")
            .arg(format!("-{}", self.child.id()))
            .status();
        let _ = self.child.wait();
    }
}

//! The HTTP function composed with s3-lease by `wac plug`, served by real
//! runtimes against a real S3 server (SeaweedFS, or the `AWS_*` endpoint):
//! both builds (WASI 0.2 and 0.3) under `wasmtime serve` under load, the
//! 0.2 one in Node through `jco serve`, and the Node example. One test
//! binary, so one server; the tests take turns (`serial`) so the load
//! measurements are undisturbed.

mod composed;
mod gate;
mod jco_serve;
mod load;
mod node_example;
mod wasmtime_serve;

use compose_test::serve::Server;
use compose_test::{compose, tools};
use host_test::instance::{component_p3_path, component_path};
use host_test::server::{self, Endpoint};
use host_test::{Harness, Instance};
use s3_lease::config::Addressing;
/// Which WASI version the function and the s3-lease component composed
/// with it are built for: the host crate's name for the two builds.
pub use s3_lease_host::Build;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// The flags `wasmtime serve` needs for `build`, beside `-Scli`: 0.3
/// components use the component model's async features (wasmtime 48
/// serves WASI 0.3 by default once they are on).
pub(crate) fn serve_flags(build: Build) -> &'static [&'static str] {
    match build {
        Build::Wasip2 => &[],
        Build::Wasip3 => &["-Wcomponent-model-async"],
        other => panic!("no serve flags for the {} build", other.name()),
    }
}

/// A composed component, built once per run and build.
pub struct Composed {
    pub path: PathBuf,
    pub bytes: u64,
    /// The function's and the s3-lease component's files, as plugged.
    pub function: PathBuf,
    pub component: PathBuf,
    /// Where logs and jco's output go.
    pub work_dir: PathBuf,
}

pub fn composed(build: Build) -> &'static Composed {
    static WASIP2: OnceLock<Composed> = OnceLock::new();
    static WASIP3: OnceLock<Composed> = OnceLock::new();
    let cell = match build {
        Build::Wasip2 => &WASIP2,
        Build::Wasip3 => &WASIP3,
        other => panic!("no composed component for the {} build", other.name()),
    };
    cell.get_or_init(|| {
        let (function, component, file) = match build {
            Build::Wasip2 => (
                tools::http_function(),
                component_path(),
                "counter-composed.wasm",
            ),
            Build::Wasip3 => (
                tools::http_function_p3(),
                component_p3_path(),
                "counter-composed-p3.wasm",
            ),
            other => panic!("no function for the {} build", other.name()),
        };
        let work_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("compose-test-{}", std::process::id()));
        std::fs::create_dir_all(&work_dir).expect("work dir");
        let path = work_dir.join(file);
        let bytes = compose::plug(&tools::wac(), &function, &component, &path);
        Composed {
            path,
            bytes,
            function,
            component,
            work_dir,
        }
    })
}

/// This crate's `wasmtime-serve`, or `S3LEASE_WASMTIME_SERVE`: the
/// figures in docs/measured.md come from a release build of it
/// (`cargo build --release -p compose-test --bin wasmtime-serve`).
pub(crate) fn wasmtime_serve_binary() -> PathBuf {
    std::env::var_os("S3LEASE_WASMTIME_SERVE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_wasmtime-serve")))
}

/// `wasmtime serve` running `build`'s composed function, whose increments
/// wait at most `lock_timeout_ms` for their counter's lock.
pub fn wasmtime_serve(build: Build, prefix: &str, lock_timeout_ms: u64) -> Server {
    let composed = composed(build);
    Server::wasmtime(
        &wasmtime_serve_binary(),
        &composed.path,
        serve_flags(build),
        &function_env(prefix, lock_timeout_ms),
        &composed.work_dir,
    )
}

pub fn endpoint() -> &'static Endpoint {
    server::shared()
}

/// One test at a time in this binary.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A key prefix no other test (or earlier run against the same bucket) uses.
pub fn fresh_prefix(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("compose/{test}-{nanos}/")
}

/// The function's environment: the endpoint, its keys, the key prefix and
/// how long an increment waits for its counter's lock.
pub fn function_env(prefix: &str, lock_timeout_ms: u64) -> Vec<(String, String)> {
    let e = endpoint();
    let mut env = vec![
        ("AWS_ENDPOINT_URL".to_string(), e.url.clone()),
        ("AWS_REGION".into(), e.region.clone()),
        ("AWS_ACCESS_KEY_ID".into(), e.access_key_id.clone()),
        ("AWS_SECRET_ACCESS_KEY".into(), e.secret_access_key.clone()),
        ("S3LEASE_BUCKET".into(), e.bucket.clone()),
        ("S3LEASE_KEY_PREFIX".into(), prefix.into()),
        (
            "COUNTER_LOCK_TIMEOUT_MS".into(),
            lock_timeout_ms.to_string(),
        ),
    ];
    if let Some(token) = &e.session_token {
        env.push(("AWS_SESSION_TOKEN".into(), token.clone()));
    }
    // With an endpoint set, path addressing is the function's default (the
    // host crate's rule): left unset here, so the tests run on the default.
    if e.addressing == Addressing::VirtualHosted {
        env.push(("S3LEASE_ADDRESSING".into(), "virtual-hosted".into()));
    }
    env
}

/// An s3-lease instance in this process, on the function's bucket and
/// prefix: to hold a counter's lock, and to read what the function stored.
pub fn observer(prefix: &str) -> Instance {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    let harness = HARNESS
        .get_or_init(|| Harness::load(&component_path()).unwrap_or_else(|e| panic!("{e:#}")));
    let mut instance = harness.instance().expect("instantiate");
    instance
        .open(&endpoint().config(prefix))
        .expect("no trap")
        .expect("valid config");
    instance
}

//! The test host: the product's [`s3_lease_host::Runtime`], with every
//! instance given hooks that record and fault its requests, and a wall
//! clock a test can skew.

use crate::hooks::Hooks;
use anyhow::Result;
use s3_lease_host::raw::RawInstance;
use s3_lease_host::{
    ClientOptions, CompileCache, ComponentSource, InstanceOptions, Runtime, RuntimeOptions,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wasmtime::component::InstancePre;
use wasmtime::{Engine, Store};
use wasmtime_wasi::HostWallClock;

pub use s3_lease_host::State;

/// The built component: `S3LEASE_COMPONENT`, else the workspace's release build.
pub fn component_path() -> PathBuf {
    crate::env_or_workspace_path(
        "S3LEASE_COMPONENT",
        "target/wasm32-wasip2/release/s3_lease.wasm",
    )
}

/// The WASI 0.3 build: `S3LEASE_COMPONENT_P3`, else setup.sh's copy of it.
pub fn component_p3_path() -> PathBuf {
    crate::env_or_workspace_path(
        "S3LEASE_COMPONENT_P3",
        "target/wasm32-wasip2/release/s3_lease_p3.wasm",
    )
}

/// The system wall clock shifted by an adjustable offset, so a test can put
/// one instance ahead of or behind the others, or jump it forward.
#[derive(Clone, Default)]
pub struct SkewedClock {
    pub offset_ms: Arc<AtomicI64>,
}

impl HostWallClock for SkewedClock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }
    fn now(&self) -> Duration {
        let real = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let offset = self.offset_ms.load(Ordering::Relaxed);
        if offset >= 0 {
            real + Duration::from_millis(offset as u64)
        } else {
            real.saturating_sub(Duration::from_millis(offset.unsigned_abs()))
        }
    }
}

/// The compiled component, shareable across threads, one per test process.
pub struct Harness {
    runtime: Runtime,
}

impl Harness {
    /// Loads the component at `path`, through the compile cache.
    pub fn load(path: &Path) -> Result<Self> {
        let runtime = Runtime::with_options(
            RuntimeOptions::default()
                .source(ComponentSource::Path(path.to_path_buf()))
                .cache(CompileCache::from_env()),
        )?;
        Ok(Harness { runtime })
    }

    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    pub fn engine(&self) -> &Engine {
        self.runtime.engine()
    }

    /// The linked, not yet instantiated component, for hosts that bind to
    /// it with other bindings (an older version of the WIT, say).
    pub fn instance_pre(&self) -> &InstancePre<State> {
        self.runtime.instance_pre()
    }

    /// Test hooks and a skewable clock, as instance options.
    pub fn test_options(&self) -> (InstanceOptions, Hooks, SkewedClock) {
        let hooks = Hooks::new(self.runtime.http().clone());
        let clock = SkewedClock::default();
        let options = InstanceOptions {
            hooks: Some(Box::new(hooks.clone())),
            wall_clock: Some(Arc::new(clock.clone())),
        };
        (options, hooks, clock)
    }

    /// A client of the host API on one instance (as a program with one
    /// client per key would have it) whose requests go through `hooks`
    /// and whose wall clock is `clock`: each instance the client makes
    /// (a trap discards one) gets clones of both.
    pub fn client_options(&self, hooks: &Hooks, clock: &SkewedClock) -> ClientOptions {
        let (hooks, clock) = (hooks.clone(), clock.clone());
        ClientOptions::default()
            .instances(1)
            .instance_options(move || InstanceOptions {
                hooks: Some(Box::new(hooks.clone())),
                wall_clock: Some(Arc::new(clock.clone())),
            })
    }

    /// [`Harness::client_options`] with fresh hooks and clock, to count,
    /// fault and skew.
    pub fn test_client_options(&self) -> (ClientOptions, Hooks, SkewedClock) {
        let hooks = Hooks::new(self.runtime.http().clone());
        let clock = SkewedClock::default();
        (self.client_options(&hooks, &clock), hooks, clock)
    }

    /// A store with its own WASI context, clock and HTTP hooks.
    pub fn store(&self) -> (Store<State>, Hooks, SkewedClock) {
        let (options, hooks, clock) = self.test_options();
        (self.runtime.store(options), hooks, clock)
    }

    /// A fresh instance with its own store, clock and hooks.
    pub fn instance(&self) -> Result<Instance> {
        let (options, hooks, clock) = self.test_options();
        let raw = self.runtime.instantiate(options)?;
        Ok(Instance { raw, hooks, clock })
    }
}

/// One instance of the component, its request hooks and its clock. The
/// calls are [`RawInstance`]'s: `Result<Result<T, LeaseError>>`, a trap
/// apart from the API's typed error.
pub struct Instance {
    raw: RawInstance,
    pub hooks: Hooks,
    pub clock: SkewedClock,
}

impl std::ops::Deref for Instance {
    type Target = RawInstance;
    fn deref(&self) -> &RawInstance {
        &self.raw
    }
}

impl std::ops::DerefMut for Instance {
    fn deref_mut(&mut self) -> &mut RawInstance {
        &mut self.raw
    }
}

impl Instance {
    /// Shifts this instance's wall clock by `ms` (negative: behind).
    pub fn skew_clock_ms(&self, ms: i64) {
        self.clock.offset_ms.store(ms, Ordering::Relaxed);
    }
}

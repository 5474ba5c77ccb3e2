//! The compiled component and its linker, shared by every instance.

use crate::bindings::exports::s3_lease::lease::{async_lease, lease};
use crate::compile_cache::{CacheOutcome, CompileCache};
use crate::http::{HttpSender, SendHooks};
use crate::raw::{Calls, RawInstance};
use crate::source::ComponentSource;
use crate::stats::RequestCounts;
use anyhow::{Context, Result};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::{InstancePre, Linker, ResourceTable};
use wasmtime::{Config as EngineConfig, Engine, Store};
use wasmtime_wasi::runtime::in_tokio;
use wasmtime_wasi::{HostWallClock, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

/// The store data of one instance.
pub struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    hooks: Box<dyn WasiHttpHooks>,
    memory: MemoryWatch,
}

/// Counts the bytes of the instance's linear memories as wasmtime creates
/// and grows them (it asks the store's limiter first), so the host can
/// tell how much memory the guest holds; it never refuses a growth.
#[derive(Debug, Default)]
#[cfg_attr(not(feature = "unstable-raw"), allow(dead_code))]
struct MemoryWatch {
    bytes: usize,
}

impl wasmtime::ResourceLimiter for MemoryWatch {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.bytes = self.bytes.saturating_add(desired.saturating_sub(current));
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

#[cfg(feature = "unstable-raw")]
impl State {
    /// The bytes of the guest's linear memories: they grow and never shrink.
    pub(crate) fn guest_memory_bytes(&self) -> usize {
        self.memory.bytes
    }

    /// The host resources (HTTP requests, bodies, futures, pollables, ...)
    /// the guest holds handles to right now.
    pub(crate) fn host_resources(&mut self) -> usize {
        self.table.iter_mut().count()
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for State {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut *self.hooks,
        }
    }
}

/// How to load the component.
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    pub source: ComponentSource,
    pub cache: CompileCache,
    /// Keep connections alive across requests (the default), or open one per request.
    pub pooled_http: bool,
}

impl Default for RuntimeOptions {
    /// `S3LEASE_COMPONENT` or the embedded component; the compile cache from
    /// the environment (see [`CompileCache::from_env`]); pooled HTTP.
    fn default() -> Self {
        RuntimeOptions {
            source: ComponentSource::from_env(),
            cache: CompileCache::from_env(),
            pooled_http: true,
        }
    }
}

/// What loading took, for reports.
#[derive(Debug, Clone, Copy)]
pub struct LoadReport {
    pub cache: CacheOutcome,
    pub elapsed: Duration,
    pub component_bytes: usize,
}

/// Per-instance settings: its HTTP hooks and its wall clock (tests fault
/// requests and skew clocks through these; programs keep the defaults).
#[derive(Default)]
pub struct InstanceOptions {
    /// Default: the runtime's sender.
    pub hooks: Option<Box<dyn WasiHttpHooks>>,
    /// Default: the system clock.
    pub wall_clock: Option<Arc<dyn HostWallClock + Sync>>,
}

/// A clock shared between the test that moves it and the instance that reads it.
struct SharedClock(Arc<dyn HostWallClock + Sync>);

impl HostWallClock for SharedClock {
    fn resolution(&self) -> Duration {
        self.0.resolution()
    }
    fn now(&self) -> Duration {
        self.0.now()
    }
}

/// Which build of the component a runtime loaded: they export the same
/// calls, `lease` over WASI 0.2 and `async-lease` over WASI 0.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    Wasip2,
    Wasip3,
}

impl Build {
    pub fn name(self) -> &'static str {
        match self {
            Build::Wasip2 => "WASI 0.2",
            Build::Wasip3 => "WASI 0.3",
        }
    }
}

/// Where each build's calls are in an instance of it.
enum ExportIndices {
    Wasip2(lease::GuestIndices),
    Wasip3(async_lease::GuestIndices),
}

/// The compiled, linked component. Cheap to clone (clones share it) and
/// to instantiate from: each instance gets its own store.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Loaded>,
}

struct Loaded {
    engine: Engine,
    pre: InstancePre<State>,
    exports: ExportIndices,
    http: HttpSender,
    requests: Arc<RequestCounts>,
    report: LoadReport,
}

impl Runtime {
    /// [`RuntimeOptions::default`].
    pub fn new() -> Result<Self> {
        Self::with_options(RuntimeOptions::default())
    }

    pub fn with_options(options: RuntimeOptions) -> Result<Self> {
        let started = Instant::now();
        // The async ABI on, so either build compiles (it changes nothing
        // for the WASI 0.2 build's code).
        let mut config = EngineConfig::new();
        config.wasm_component_model_async(true);
        let engine = Engine::new(&config)?;
        let wasm = options.source.bytes()?;
        let (component, cache) = options.cache.load(&engine, &wasm)?;
        let build = if component
            .component_type()
            .exports(&engine)
            .any(|(name, _)| name.starts_with("s3-lease:lease/async-lease@"))
        {
            Build::Wasip3
        } else {
            Build::Wasip2
        };
        let mut linker = Linker::<State>::new(&engine);
        match build {
            Build::Wasip2 => {
                wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
                wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)?;
                crate::outgoing::drop_request_options_after_handle(&mut linker)?;
            }
            Build::Wasip3 => {
                wasmtime_wasi::p3::add_to_linker(&mut linker)?;
                wasmtime_wasi_http::p3::add_to_linker(&mut linker)?;
            }
        }
        let pre = linker.instantiate_pre(&component)?;
        let exports = match build {
            Build::Wasip2 => lease::GuestIndices::new(&pre).map(ExportIndices::Wasip2),
            Build::Wasip3 => async_lease::GuestIndices::new(&pre).map(ExportIndices::Wasip3),
        }
        .map_err(anyhow::Error::from)
        .context("the component does not export the s3-lease API this host was built for")?;
        let http = if options.pooled_http {
            HttpSender::pooled()?
        } else {
            HttpSender::PerRequest
        };
        let report = LoadReport {
            cache,
            elapsed: started.elapsed(),
            component_bytes: wasm.len(),
        };
        Ok(Runtime {
            inner: Arc::new(Loaded {
                engine,
                pre,
                exports,
                http,
                requests: Arc::default(),
                report,
            }),
        })
    }

    #[cfg(feature = "unstable-raw")]
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    pub fn load_report(&self) -> LoadReport {
        self.inner.report
    }

    /// The sender instances use unless given hooks of their own; test hooks
    /// pass requests on to it.
    #[cfg(feature = "unstable-raw")]
    pub fn http(&self) -> &HttpSender {
        &self.inner.http
    }

    /// Requests sent by this runtime's instances through its own sender (not
    /// those of instances given hooks of their own), by operation and outcome.
    pub fn request_counts(&self) -> &Arc<RequestCounts> {
        &self.inner.requests
    }

    /// The linked, not yet instantiated component, for hosts that bind to
    /// it with other bindings (an older version of the WIT, say).
    #[cfg(feature = "unstable-raw")]
    pub fn instance_pre(&self) -> &InstancePre<State> {
        &self.inner.pre
    }

    /// Which build of the component this runtime loaded.
    pub fn build(&self) -> Build {
        match self.inner.exports {
            ExportIndices::Wasip2(_) => Build::Wasip2,
            ExportIndices::Wasip3(_) => Build::Wasip3,
        }
    }

    /// A store of its own, with WASI and wasi:http.
    #[cfg(feature = "unstable-raw")]
    pub fn store(&self, options: InstanceOptions) -> Store<State> {
        self.new_store(options)
    }

    fn new_store(&self, options: InstanceOptions) -> Store<State> {
        let mut wasi = WasiCtx::builder();
        wasi.monotonic_clock(crate::monotonic::ProcessMonotonicClock);
        if let Some(clock) = options.wall_clock {
            wasi.wall_clock(SharedClock(clock));
        }
        let hooks = options.hooks.unwrap_or_else(|| {
            Box::new(SendHooks {
                sender: self.inner.http.clone(),
                counts: self.inner.requests.clone(),
            })
        });
        let state = State {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            hooks,
            memory: MemoryWatch::default(),
        };
        let mut store = Store::new(&self.inner.engine, state);
        store.limiter(|state| &mut state.memory);
        store
    }

    /// A fresh instance of the component (with `unstable-raw`, callers
    /// make one to drive it call by call).
    #[cfg(feature = "unstable-raw")]
    pub fn instantiate(&self, options: InstanceOptions) -> Result<RawInstance> {
        self.instance(options)
    }

    pub(crate) fn instance(&self, options: InstanceOptions) -> Result<RawInstance> {
        let mut store = self.new_store(options);
        let calls = match &self.inner.exports {
            ExportIndices::Wasip2(indices) => {
                let instance = self.inner.pre.instantiate(&mut store)?;
                Calls::Wasip2(indices.load(&mut store, &instance)?)
            }
            ExportIndices::Wasip3(indices) => {
                let instance = in_tokio(self.inner.pre.instantiate_async(&mut store))?;
                Calls::Wasip3(indices.load(&mut store, &instance)?)
            }
        };
        Ok(RawInstance::new(store, calls))
    }
}

//! The compiled component and its linker, shared by every instance.

use crate::engine::bindings::exports::s3_lease::lease::{async_lease, lease};
use crate::engine::clock::Clock;
use crate::engine::compile_cache::{self, CacheOutcome, CompileCache};
use crate::engine::http::{HttpSender, SendHooks};
use crate::engine::local::block_on;
use crate::engine::precompiled::{self, PrecompiledRefused};
use crate::engine::raw::{Build, Calls, RawInstance};
use crate::engine::request_counts::RequestCounts;
use crate::engine::source::ComponentSource;
use crate::engine::state::{InstanceOptions, State};
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::{InstancePre, Linker};
use wasmtime::{Engine, Store};

/// How to load the component: [`RuntimeOptions::default`], changed by
/// its builder methods.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RuntimeOptions {
    pub source: ComponentSource,
    pub cache: CompileCache,
    /// A precompiled component to try first (see [`crate::precompile`]);
    /// the cache and compiling stay the fallbacks.
    pub precompiled: Option<PathBuf>,
    /// Keep connections alive across requests (the default), or open one per request.
    pub pooled_http: bool,
}

impl Default for RuntimeOptions {
    /// `S3LEASE_COMPONENT` or the embedded component; the precompiled
    /// component `S3LEASE_PRECOMPILED` names, if set and not empty; the
    /// compile cache from the environment (see [`CompileCache::from_env`]);
    /// pooled HTTP.
    fn default() -> Self {
        RuntimeOptions {
            source: ComponentSource::from_env(),
            cache: CompileCache::from_env(),
            precompiled: std::env::var_os("S3LEASE_PRECOMPILED")
                .filter(|path| !path.is_empty())
                .map(PathBuf::from),
            pooled_http: true,
        }
    }
}

impl RuntimeOptions {
    /// Where the component comes from.
    pub fn source(mut self, source: ComponentSource) -> Self {
        self.source = source;
        self
    }

    /// Where compiled components are kept.
    pub fn cache(mut self, cache: CompileCache) -> Self {
        self.cache = cache;
        self
    }

    /// Try this precompiled component (made by [`crate::precompile`])
    /// before the cache: loaded only when it is protected like a binary,
    /// intact, made from this component and accepted by this wasmtime;
    /// otherwise the load falls back, and [`LoadReport::precompiled_refused`]
    /// says why.
    pub fn precompiled(mut self, path: impl Into<PathBuf>) -> Self {
        self.precompiled = Some(path.into());
        self
    }

    /// Keep connections alive across requests, or open one per request.
    pub fn pooled_http(mut self, pooled: bool) -> Self {
        self.pooled_http = pooled;
        self
    }
}

/// What loading took, for reports.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LoadReport {
    /// [`CacheOutcome::Precompiled`] when the precompiled file was loaded.
    pub cache: CacheOutcome,
    /// Why a configured precompiled file was passed over (`None` when none
    /// was configured, or it was loaded).
    pub precompiled_refused: Option<PrecompiledRefused>,
    pub elapsed: Duration,
    pub component_bytes: usize,
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
        let engine = compile_cache::engine()?;
        let wasm = options.source.bytes()?;
        // A precompiled file first; any reason not to load it is only a
        // reason to fall back to the cache, then to compiling.
        let precompiled = options
            .precompiled
            .as_deref()
            .map(|path| precompiled::load(&engine, &wasm, path));
        let (component, cache, precompiled_refused) = match precompiled {
            Some(Ok(component)) => (component, CacheOutcome::Precompiled, None),
            refused => {
                let (component, cache) = options.cache.load(&engine, &wasm)?;
                (component, cache, refused.and_then(Result::err))
            }
        };
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
                wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
                wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
                crate::engine::outgoing::drop_request_options_after_handle(&mut linker)?;
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
            precompiled_refused,
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

    /// A store of its own, with WASI and wasi:http (its monotonic clock the
    /// system's, suspended time counted).
    #[cfg(feature = "unstable-raw")]
    pub fn store(&self, options: InstanceOptions) -> Store<State> {
        self.new_store(options, &Clock::system())
    }

    fn new_store(&self, options: InstanceOptions, clock: &Clock) -> Store<State> {
        State::new_store(&self.inner.engine, options, clock, || {
            Box::new(SendHooks {
                sender: self.inner.http.clone(),
                counts: self.inner.requests.clone(),
            })
        })
    }

    /// A fresh instance of the component (with `unstable-raw`, callers
    /// make one to drive it call by call), its monotonic clock the
    /// system's, suspended time counted.
    #[cfg(feature = "unstable-raw")]
    pub fn instantiate(&self, options: InstanceOptions) -> Result<RawInstance> {
        self.instance(options, &Clock::system())
    }

    /// A fresh instance whose monotonic clock is `clock`.
    pub(crate) fn instance(&self, options: InstanceOptions, clock: &Clock) -> Result<RawInstance> {
        let mut store = self.new_store(options, clock);
        // Asynchronously for either build (its calls are): on the thread's
        // own runtime, as its calls will be.
        let instance = block_on(self.inner.pre.instantiate_async(&mut store))?;
        let calls = match &self.inner.exports {
            ExportIndices::Wasip2(indices) => Calls::Wasip2(indices.load(&mut store, &instance)?),
            ExportIndices::Wasip3(indices) => Calls::Wasip3(indices.load(&mut store, &instance)?),
        };
        Ok(RawInstance::new(store, calls))
    }
}

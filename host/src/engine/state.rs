//! What one instance's store holds (WASI, wasi:http, the resource table,
//! a watch on its memory) and the per-instance settings it is made with.

use crate::engine::clock::Clock;
use crate::engine::monotonic::InstanceMonotonicClock;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store};
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

impl State {
    /// A store of its own, with WASI and wasi:http: the hooks given, or
    /// `default_hooks`' (the runtime's sender); its monotonic clock is
    /// `clock`, its client's.
    pub(crate) fn new_store(
        engine: &Engine,
        options: InstanceOptions,
        clock: &Clock,
        default_hooks: impl FnOnce() -> Box<dyn WasiHttpHooks>,
    ) -> Store<State> {
        let mut wasi = WasiCtx::builder();
        wasi.monotonic_clock(InstanceMonotonicClock(clock.clone()));
        if let Some(clock) = options.wall_clock {
            wasi.wall_clock(SharedClock(clock));
        }
        let state = State {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            hooks: options.hooks.unwrap_or_else(default_hooks),
            memory: MemoryWatch::default(),
        };
        let mut store = Store::new(engine, state);
        store.limiter(|state| &mut state.memory);
        store
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

//! Loading the component once and running many instances of it, each in its
//! own store with its own clock and HTTP hooks.

use crate::bindings::{
    Config, ElectorConfig, Error as LeaseError, FenceOptions, FencedObject, FencedWrite, Lease,
    LeaseApi, LeaseApiPre, LockState, Options, StepResult,
};
use crate::hooks::Hooks;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wasmtime::component::{Component, InstancePre, Linker, ResourceAny, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{HostWallClock, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// The built component: `S3LEASE_COMPONENT`, else the workspace's release build.
pub fn component_path() -> PathBuf {
    crate::env_or_workspace_path(
        "S3LEASE_COMPONENT",
        "target/wasm32-wasip2/release/s3_lease.wasm",
    )
}

/// The store data of one instance.
pub struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    hooks: Hooks,
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
            hooks: &mut self.hooks,
        }
    }
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

/// The compiled component and a linker with WASI and wasi:http; shareable
/// across threads, one per test process.
pub struct Harness {
    engine: Engine,
    pre: LeaseApiPre<State>,
}

impl Harness {
    pub fn load(path: &Path) -> Result<Self> {
        let engine = Engine::default();
        let component = Component::from_file(&engine, path).map_err(anyhow::Error::from).with_context(|| {
            format!(
                "loading the component {} (build it with: cargo build -p s3-lease --target wasm32-wasip2 --release)",
                path.display()
            )
        })?;
        let mut linker = Linker::<State>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)?;
        let pre = LeaseApiPre::new(linker.instantiate_pre(&component)?)?;
        Ok(Harness { engine, pre })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The linked, not yet instantiated component, for hosts that bind to
    /// it with other bindings (an older version of the WIT, say).
    pub fn instance_pre(&self) -> &InstancePre<State> {
        self.pre.instance_pre()
    }

    /// A store with its own WASI context, clock and HTTP hooks.
    pub fn store(&self) -> (Store<State>, Hooks, SkewedClock) {
        let clock = SkewedClock::default();
        let hooks = Hooks::default();
        let wasi = WasiCtx::builder().wall_clock(clock.clone()).build();
        let state = State {
            wasi,
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            hooks: hooks.clone(),
        };
        (Store::new(&self.engine, state), hooks, clock)
    }

    /// A fresh instance with its own store, clock and hooks.
    pub fn instance(&self) -> Result<Instance> {
        let (mut store, hooks, clock) = self.store();
        let host = self.pre.instantiate(&mut store)?;
        Ok(Instance {
            store,
            host,
            client: None,
            hooks,
            clock,
        })
    }
}

/// One instance of the component and, once `open` succeeded, its client.
///
/// Each call returns `Result<Result<T, LeaseError>>`: the outer error is a
/// trap (a bug: the component must never trap), the inner one the typed
/// error of the WIT API.
pub struct Instance {
    store: Store<State>,
    host: LeaseApi,
    client: Option<ResourceAny>,
    pub hooks: Hooks,
    pub clock: SkewedClock,
}

impl Instance {
    /// Constructs the client resource.
    pub fn open(&mut self, config: &Config) -> Result<Result<(), LeaseError>> {
        let api = self.host.s3_lease_lease_lease().client();
        match api.call_constructor(&mut self.store, config)? {
            Ok(client) => {
                if let Some(old) = self.client.replace(client) {
                    old.resource_drop(&mut self.store)?;
                }
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(e)),
        }
    }

    fn client(&self) -> Result<ResourceAny> {
        self.client.context("open() the client first")
    }

    pub fn try_acquire(
        &mut self,
        key: &str,
        options: &Options,
    ) -> Result<Result<Option<Lease>, LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_try_acquire(
            &mut self.store,
            client,
            key,
            options,
        )?)
    }

    pub fn acquire(
        &mut self,
        key: &str,
        options: &Options,
        timeout_ms: u64,
    ) -> Result<Result<Lease, LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_acquire(
            &mut self.store,
            client,
            key,
            options,
            timeout_ms,
        )?)
    }

    pub fn renew(&mut self, lease: &Lease) -> Result<Result<Lease, LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_renew(&mut self.store, client, lease)?)
    }

    pub fn release(&mut self, lease: &Lease) -> Result<Result<(), LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_release(
            &mut self.store,
            client,
            lease,
        )?)
    }

    pub fn inspect(&mut self, key: &str) -> Result<Result<Option<LockState>, LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_inspect(&mut self.store, client, key)?)
    }

    pub fn fenced_put(
        &mut self,
        lease: &Lease,
        object_key: &str,
        body: &[u8],
        content_type: &str,
    ) -> Result<Result<FencedWrite, LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_fenced_put(
            &mut self.store,
            client,
            lease,
            object_key,
            body,
            content_type,
        )?)
    }

    pub fn fenced_put_with(
        &mut self,
        lease: &Lease,
        object_key: &str,
        body: &[u8],
        content_type: &str,
        options: FenceOptions,
    ) -> Result<Result<FencedWrite, LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_fenced_put_with(
                &mut self.store,
                client,
                lease,
                object_key,
                body,
                content_type,
                options,
            )?)
    }

    pub fn fenced_delete(
        &mut self,
        lease: &Lease,
        object_key: &str,
    ) -> Result<Result<(), LeaseError>> {
        let client = self.client()?;
        Ok(self
            .host
            .s3_lease_lease_lease()
            .client()
            .call_fenced_delete(&mut self.store, client, lease, object_key)?)
    }

    pub fn fenced_get(
        &mut self,
        object_key: &str,
    ) -> Result<Result<Option<FencedObject>, LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_fenced_get(
            &mut self.store,
            client,
            object_key,
        )?)
    }

    /// An elector on this instance's client (a resource handle).
    pub fn elector(&mut self, config: &ElectorConfig) -> Result<Result<ResourceAny, LeaseError>> {
        let client = self.client()?;
        Ok(self.host.s3_lease_lease_lease().client().call_elector(
            &mut self.store,
            client,
            config,
        )?)
    }

    /// One step of `elector`: its role, events and when to step next.
    pub fn step(&mut self, elector: ResourceAny) -> Result<StepResult> {
        Ok(self
            .host
            .s3_lease_lease_lease()
            .elector()
            .call_step(&mut self.store, elector)?)
    }

    pub fn resign(&mut self, elector: ResourceAny) -> Result<Result<(), LeaseError>> {
        Ok(self
            .host
            .s3_lease_lease_lease()
            .elector()
            .call_resign(&mut self.store, elector)?)
    }

    /// Drops an elector without resigning (a crash, as far as S3 can tell).
    pub fn drop_elector(&mut self, elector: ResourceAny) -> Result<()> {
        Ok(elector.resource_drop(&mut self.store)?)
    }

    /// Shifts this instance's wall clock by `ms` (negative: behind).
    pub fn skew_clock_ms(&self, ms: i64) {
        self.clock.offset_ms.store(ms, Ordering::Relaxed);
    }
}

//! The WASI 0.3 build of the component (`--features wasip3`, world
//! `s3-lease:wasip3/s3-lease-async`) in wasmtime 48 with WASI 0.3 linked:
//! it grants, renews, releases and inspects against the real server, and
//! calls made concurrently through one instance overlap in time, because
//! each suspends its task while its requests are in flight and while
//! `acquire` waits.

use super::*;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config as EngineConfig, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

mod p3 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "s3-lease:lease/lease-api-async",
        // The constructor too: a store that runs concurrent calls calls
        // everything asynchronously.
        exports: { default: async },
    });
}

use p3::exports::s3_lease::lease::types as wit;

/// The 0.3 component: `S3LEASE_COMPONENT_P3`, else setup.sh's copy.
fn component_p3_path() -> std::path::PathBuf {
    host_test::env_or_workspace_path(
        "S3LEASE_COMPONENT_P3",
        "target/wasm32-wasip2/release/s3_lease_p3.wasm",
    )
}

struct P3State {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
}

impl WasiView for P3State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for P3State {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: Default::default(),
        }
    }
}

fn p3_runtime() -> (Engine, Linker<P3State>, Component) {
    let mut config = EngineConfig::new();
    config.wasm_component_model_async(true);
    let engine = Engine::new(&config).expect("engine");
    let mut linker = Linker::new(&engine);
    wasmtime_wasi::p3::add_to_linker(&mut linker).expect("wasi 0.3");
    wasmtime_wasi_http::p3::add_to_linker(&mut linker).expect("wasi:http 0.3");
    let component = Component::from_file(&engine, component_p3_path()).expect("0.3 component");
    (engine, linker, component)
}

fn p3_config(prefix: &str) -> wit::Config {
    let c = endpoint().config(prefix);
    wit::Config {
        endpoint: c.endpoint,
        region: c.region,
        bucket: c.bucket,
        addressing: wit::AddressingStyle::Path,
        credentials: wit::Credentials {
            access_key_id: c.credentials.access_key_id,
            secret_access_key: c.credentials.secret_access_key,
            session_token: c.credentials.session_token,
        },
        key_prefix: c.key_prefix,
        request_timeout_ms: None,
        strategy: None,
        expiry_clock: None,
        preflight: None,
        seal_key: None,
        store: None,
    }
}

fn p3_options(ttl_ms: u64, holder: &str) -> wit::Options {
    wit::Options {
        ttl_ms,
        holder_id: Some(holder.into()),
        metadata: None,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio")
}

#[test]
fn the_wasip3_build_grants_renews_releases_and_inspects() {
    // The server first: its fixture blocks, so not inside the runtime.
    let config = p3_config(&fresh_prefix("p3-basic"));
    runtime().block_on(async {
        let (engine, linker, component) = p3_runtime();
        let mut store = Store::new(
            &engine,
            P3State {
                wasi: WasiCtx::builder().build(),
                http: WasiHttpCtx::new(),
                table: ResourceTable::new(),
            },
        );
        let api = p3::LeaseApiAsync::instantiate_async(&mut store, &component, &linker)
            .await
            .expect("instantiate the 0.3 component");
        let lease_api = api.s3_lease_lease_async_lease();
        let client = lease_api
            .client()
            .call_constructor(&mut store, &config)
            .await
            .expect("no trap")
            .expect("valid config");
        let result = store
            .run_concurrent(async |accessor| {
                let c = lease_api.client();
                let first = c
                    .call_try_acquire(accessor, client, "k".into(), p3_options(10_000, "a"))
                    .await?
                    .expect("no error")
                    .expect("granted");
                let held = c
                    .call_try_acquire(accessor, client, "k".into(), p3_options(10_000, "b"))
                    .await?
                    .expect("no error");
                assert!(held.is_none(), "a live lease is held");
                let renewed = c
                    .call_renew(accessor, client, first.clone())
                    .await?
                    .expect("renewed");
                assert_eq!(renewed.token, first.token);
                let seen = c
                    .call_inspect(accessor, client, "k".into())
                    .await?
                    .expect("no error")
                    .expect("a lock");
                assert_eq!(seen.holder_id, "a");
                c.call_release(accessor, client, renewed).await?.expect("released");
                let second = c
                    .call_try_acquire(accessor, client, "k".into(), p3_options(10_000, "b"))
                    .await?
                    .expect("no error")
                    .expect("granted after the release");
                assert!(second.token > first.token, "tokens rise");
                wasmtime::Result::<_>::Ok(())
            })
            .await;
        result.expect("run").expect("calls");
    });
}

#[test]
fn calls_through_one_wasip3_instance_run_at_the_same_time() {
    const CALLS: usize = 4;
    const HOLD_MS: u64 = 2_000;
    let config = p3_config(&fresh_prefix("p3-overlap"));
    runtime().block_on(async {
        let (engine, linker, component) = p3_runtime();
        let mut store = Store::new(
            &engine,
            P3State {
                wasi: WasiCtx::builder().build(),
                http: WasiHttpCtx::new(),
                table: ResourceTable::new(),
            },
        );
        let api = p3::LeaseApiAsync::instantiate_async(&mut store, &component, &linker)
            .await
            .expect("instantiate the 0.3 component");
        let lease_api = api.s3_lease_lease_async_lease();
        // A holder of each key, on a client of its own, then one waiter
        // per key that must wait out its holder's ttl: CALLS acquires of
        // HOLD_MS each, all through the one instance.
        let mut clients = Vec::new();
        for _ in 0..CALLS * 2 {
            clients.push(
                lease_api
                    .client()
                    .call_constructor(&mut store, &config)
                    .await
                    .expect("no trap")
                    .expect("valid config"),
            );
        }
        let started = Instant::now();
        let result = store
            .run_concurrent(async |accessor| {
                let c = lease_api.client();
                for i in 0..CALLS {
                    c.call_try_acquire(accessor, clients[i], format!("k{i}"), p3_options(HOLD_MS, "holder"))
                        .await?
                        .expect("no error")
                        .expect("granted");
                }
                let waits = (0..CALLS).map(|i| {
                    let client = clients[CALLS + i];
                    let c = &c;
                    async move {
                        let begun = started.elapsed();
                        let lease = c
                            .call_acquire(accessor, client, format!("k{i}"), p3_options(HOLD_MS, "waiter"), 30_000)
                            .await?
                            .expect("acquired after the holder's ttl");
                        wasmtime::Result::<_>::Ok((begun, started.elapsed(), lease.token))
                    }
                });
                let spans = futures::future::try_join_all(waits).await?;
                wasmtime::Result::<_>::Ok(spans)
            })
            .await
            .expect("run")
            .expect("calls");
        let total = started.elapsed();
        let mut waited = Duration::ZERO;
        for (begun, ended, token) in &result {
            assert_eq!(*token, 2, "the waiter's grant follows the holder's");
            assert!(
                *ended - *begun >= Duration::from_millis(HOLD_MS),
                "each waited out its holder's ttl: {result:?}"
            );
            waited += *ended - *begun;
        }
        // Overlap: every call was still waiting when the last one began.
        let last_begun = result.iter().map(|r| r.0).max().expect("calls");
        let first_ended = result.iter().map(|r| r.1).min().expect("calls");
        println!(
            "wasip3: {CALLS} acquires through one instance: {waited:?} of waiting in {total:?}"
        );
        assert!(
            last_begun < first_ended,
            "the calls ran at the same time: {result:?}"
        );
        assert!(total < waited / 2, "{total:?} for {waited:?} of waits");
    });
}

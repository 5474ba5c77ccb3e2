//! The built component is what the contract says: it exports the lease
//! interface, and imports nothing outside the `wasi:http/proxy` world, so any
//! host that offers only that world (edge platforms, `wasmtime serve`)
//! can load it.

use super::{endpoint, fresh_prefix, harness, options};
use host_test::bindings::exports::s3_lease::lease::lease;
use host_test::instance::component_path;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::Store;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// The imports of `wasi:http/proxy@0.2.x` (wit/deps/http/http.wit), without
/// their versions: everything a proxy-only host may offer.
const PROXY_WORLD: &[&str] = &[
    "wasi:io/poll",
    "wasi:io/error",
    "wasi:io/streams",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:random/random",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/stdin",
    "wasi:http/types",
    "wasi:http/outgoing-handler",
];

/// `wasi:io/poll` of `wasi:io/poll@0.2.12`, if the version is a 0.2 one.
fn unversioned_02(import: &str) -> Option<&str> {
    let (name, version) = import.split_once('@')?;
    version.starts_with("0.2.").then_some(name)
}

#[test]
fn exports_the_lease_interface_and_imports_only_the_proxy_world() {
    let engine = harness().engine();
    let component = harness().instance_pre().component();
    let ty = component.component_type();
    let imports: Vec<String> = ty
        .imports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    let exports: Vec<String> = ty
        .exports(engine)
        .map(|(name, _)| name.to_string())
        .collect();
    let outside: Vec<&String> = imports
        .iter()
        .filter(|i| !unversioned_02(i).is_some_and(|n| PROXY_WORLD.contains(&n)))
        .collect();
    assert!(
        outside.is_empty(),
        "imports outside the wasi:http/proxy world: {outside:?} (all: {imports:?}); \
         see src/proxy_world.rs"
    );
    assert!(
        imports
            .iter()
            .any(|n| n.starts_with("wasi:http/outgoing-handler@0.2")),
        "{imports:?}"
    );
    for interface in ["lease", "types"] {
        let prefix = format!("s3-lease:lease/{interface}@");
        assert!(
            exports.iter().any(|e| e.starts_with(&prefix)),
            "{exports:?}"
        );
    }
    let size = std::fs::metadata(component_path())
        .expect("component file")
        .len();
    println!("component: {size} bytes; imports: {imports:?}; exports: {exports:?}");
}

/// The store of a host that offers the proxy world and nothing else.
struct ProxyOnly {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
}

impl WasiView for ProxyOnly {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for ProxyOnly {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: wasmtime_wasi_http::default_hooks(),
        }
    }
}

/// Linking fails on any import the linker lacks, so instantiating through
/// wasmtime-wasi-http's proxy-world linker proves the fit; a lease taken and
/// released against the real server proves the imports it got are enough.
#[test]
fn runs_in_a_host_that_offers_only_the_proxy_world() {
    let engine = harness().engine();
    let mut linker = Linker::<ProxyOnly>::new(engine);
    wasmtime_wasi_http::p2::add_to_linker_async(&mut linker).expect("proxy world");
    let pre = linker
        .instantiate_pre(harness().instance_pre().component())
        .unwrap_or_else(|e| panic!("the proxy world does not satisfy the component: {e:#}"));
    let indices = lease::GuestIndices::new(&pre).expect("the lease API");
    let mut store = Store::new(
        engine,
        ProxyOnly {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
        },
    );
    // The host's bindings make the calls asynchronously: driven here on a
    // runtime of the test's own, as a proxy host on tokio would.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let instance = runtime
        .block_on(pre.instantiate_async(&mut store))
        .expect("instantiate");
    let api = indices.load(&mut store, &instance).expect("the lease API");
    let client_api = api.client();
    let config = endpoint().config(&fresh_prefix("proxy-only"));
    let client = runtime
        .block_on(client_api.call_constructor(&mut store, &config))
        .expect("no trap")
        .expect("valid config");
    let lease = runtime
        .block_on(client_api.call_try_acquire(&mut store, client, "k", &options(10_000)))
        .expect("no trap")
        .expect("try-acquire")
        .expect("a free key is granted");
    assert_eq!(lease.token, 1);
    runtime
        .block_on(client_api.call_release(&mut store, client, &lease))
        .expect("no trap")
        .expect("release");
    println!(
        "proxy-only host: acquired and released token {}",
        lease.token
    );
}

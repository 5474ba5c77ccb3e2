//! The same composed component in Node (jco transpiles it, preview2-shim
//! supplies WASI), beside `wasmtime serve` on one counter: two runtimes,
//! one lock, no increment lost or doubled. The component does not depend
//! on its host.

use super::load;
use super::{composed, fresh_prefix, function_env, observer, serial, wasmtime_serve, Build};
use compose_test::{http, serve::Server, tools};

#[test]
fn jco_serve_and_wasmtime_serve_share_a_counter() {
    let _serial = serial();
    let composed = composed(Build::Wasip2);
    let prefix = fresh_prefix("two-runtimes");
    let env = function_env(&prefix, 5_000);
    let wasmtime = wasmtime_serve(Build::Wasip2, &prefix, 5_000);
    let node = Server::jco(&tools::jco(), &composed.path, &env, &composed.work_dir);
    let reply = http::request(node.addr, "GET", "/counters/x/increment").expect("a reply");
    assert_eq!(reply.status, 405, "{reply:?}");

    let lanes = load::lanes_on(&[wasmtime.addr, node.addr], 8, "shared");
    let run = load::run(&lanes, 25);
    let tally = load::check_counter(&run, "shared", &prefix, &mut observer(&prefix));
    for server in [&wasmtime, &node] {
        let ok = load::increments_by(&run, server.addr);
        assert!(ok > 0, "{} made no increment", server.name);
        println!("{}: {ok} increments", server.name);
    }
    println!(
        "wasmtime serve + jco serve, 8 threads each on one counter: {} increments, {} answered 503; {}",
        tally.ok,
        tally.unavailable,
        load::summary(&run)
    );
}

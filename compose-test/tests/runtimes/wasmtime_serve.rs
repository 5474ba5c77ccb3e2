//! `wasmtime serve` runs the composed function: bad requests are refused
//! before any lock is taken, a counter whose lock stays held answers 503
//! and is not incremented, and 16 client threads per counter on two
//! counters lose and double no increment.

use super::load::{self, Lane};
use super::{composed, fresh_prefix, function_env, observer, serial};
use compose_test::{http, serve::Server};
use host_test::bindings::Options;
use std::path::Path;
use std::time::Instant;

const THREADS_PER_COUNTER: usize = 16;
const INCREMENTS_PER_COUNTER: usize = 400;
const LOCK_TIMEOUT_MS: u64 = 3_000;

fn wasmtime_serve(prefix: &str) -> Server {
    let composed = composed();
    Server::wasmtime(
        Path::new(env!("CARGO_BIN_EXE_wasmtime-serve")),
        &composed.path,
        &function_env(prefix, LOCK_TIMEOUT_MS),
        &composed.work_dir,
    )
}

#[test]
fn bad_requests_are_refused_and_touch_nothing() {
    let _serial = serial();
    let prefix = fresh_prefix("bad-requests");
    let server = wasmtime_serve(&prefix);
    let cases = [
        ("GET", "/", 404),
        ("POST", "/counters/a", 404),
        ("POST", "/counters/a/decrement", 404),
        ("GET", "/counters/a/increment", 405),
        ("PUT", "/counters/a/increment", 405),
        ("POST", "/counters/a%2Fb/increment", 400),
        ("POST", "/counters/../increment", 400),
        ("POST", "/counters//increment", 400),
    ];
    for (method, path, status) in cases {
        let reply = http::request(server.addr, method, path).expect("a reply");
        assert_eq!(reply.status, status, "{method} {path}: {reply:?}");
        assert!(reply.json().get("error").is_some(), "{reply:?}");
        if status == 405 {
            assert_eq!(reply.header("allow"), Some("POST"));
        }
    }
    let mut observer = observer(&prefix);
    for key in ["counters/a", "counters/a%2Fb"] {
        assert!(observer
            .inspect(key)
            .expect("no trap")
            .expect("inspect")
            .is_none());
    }
}

#[test]
fn a_counter_whose_lock_stays_held_answers_503_and_is_not_incremented() {
    let _serial = serial();
    let prefix = fresh_prefix("held");
    let server = wasmtime_serve(&prefix);
    let mut holder = observer(&prefix);
    let options = Options {
        ttl_ms: 60_000,
        holder_id: Some("the-test".into()),
        metadata: None,
    };
    let lease = holder
        .acquire("counters/held", &options, 5_000)
        .expect("no trap")
        .expect("the test takes the counter's lock");
    let sent = Instant::now();
    let reply = http::request(server.addr, "POST", "/counters/held/increment").expect("a reply");
    let waited = sent.elapsed();
    assert_eq!(reply.status, 503, "{reply:?}");
    assert_eq!(reply.json()["error"], "lock-timeout", "{reply:?}");
    assert_eq!(reply.json()["holder"], "the-test", "{reply:?}");
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert!(
        waited.as_millis() >= u128::from(LOCK_TIMEOUT_MS),
        "{waited:?}"
    );
    let object = format!("{prefix}counters/held.json");
    assert!(holder
        .fenced_get(&object)
        .expect("no trap")
        .expect("get")
        .is_none());

    holder.release(&lease).expect("no trap").expect("release");
    let reply = http::request(server.addr, "POST", "/counters/held/increment").expect("a reply");
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json()["value"], 1, "{reply:?}");
    assert!(
        reply.json()["token"].as_u64() > Some(lease.token),
        "the function's grant comes after the test's: {reply:?}"
    );
}

#[test]
fn sixteen_threads_per_counter_lose_and_double_no_increment() {
    let _serial = serial();
    let prefix = fresh_prefix("load");
    let server = wasmtime_serve(&prefix);
    let mut observer = observer(&prefix);
    // The uncontended cost first: one client, one increment at a time.
    let solo = load::run(
        &[Lane {
            server: server.addr,
            counter: "solo".into(),
        }],
        50,
    );
    let tally = load::check_counter(&solo, "solo", &prefix, &mut observer);
    assert_eq!(tally.unavailable, 0, "an uncontended increment was refused");
    println!("wasmtime serve, 1 client thread: {}", load::summary(&solo));

    let lanes: Vec<Lane> = ["a", "b"]
        .iter()
        .flat_map(|counter| {
            (0..THREADS_PER_COUNTER).map(|_| Lane {
                server: server.addr,
                counter: counter.to_string(),
            })
        })
        .collect();
    let run = load::run(&lanes, INCREMENTS_PER_COUNTER / THREADS_PER_COUNTER);
    for counter in ["a", "b"] {
        let tally = load::check_counter(&run, counter, &prefix, &mut observer);
        println!(
            "wasmtime serve, counter {counter}: {} increments, {} answered 503",
            tally.ok, tally.unavailable
        );
        assert!(tally.ok > 0, "counter {counter}: no increment succeeded");
    }
    println!(
        "wasmtime serve, {} client threads on 2 counters: {}",
        lanes.len(),
        load::summary(&run)
    );
}

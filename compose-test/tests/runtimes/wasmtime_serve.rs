//! `wasmtime serve` runs each build of the composed function: bad requests
//! are refused before any lock is taken, a counter whose lock stays held
//! answers 503 and is not incremented, and 16 client threads per counter
//! on two counters lose and double no increment. Then the two builds share
//! one counter: one protocol, whichever WASI version runs it.

use super::load::{self, Lane};
use super::{fresh_prefix, observer, serial, wasmtime_serve, Build};
use compose_test::http;
use host_test::bindings::Options;
use std::time::Instant;

const THREADS_PER_COUNTER: usize = 16;
const INCREMENTS_PER_COUNTER: usize = 400;
const LOCK_TIMEOUT_MS: u64 = 3_000;

fn bad_requests_are_refused_and_touch_nothing(build: Build) {
    let _serial = serial();
    let prefix = fresh_prefix("bad-requests");
    let server = wasmtime_serve(build, &prefix, LOCK_TIMEOUT_MS);
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

fn a_counter_whose_lock_stays_held_answers_503_and_is_not_incremented(build: Build) {
    let _serial = serial();
    let prefix = fresh_prefix("held");
    let server = wasmtime_serve(build, &prefix, LOCK_TIMEOUT_MS);
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

/// The load test, and the figures docs/measured.md quotes: one client (the
/// uncontended cost), 16 threads on each of two counters (contention), and
/// 16 threads each on a counter of its own (requests served at once: a 0.3
/// instance takes up to 16 requests at a time, a 0.2 one takes one).
fn sixteen_threads_per_counter_lose_and_double_no_increment(build: Build) {
    let _serial = serial();
    let name = build.name();
    let prefix = fresh_prefix("load");
    let server = wasmtime_serve(build, &prefix, LOCK_TIMEOUT_MS);
    let mut observer = observer(&prefix);
    let lane = |counter: &str| Lane {
        server: server.addr,
        counter: counter.into(),
    };
    let solo = load::run(&[lane("solo")], 50);
    let tally = load::check_counter(&solo, "solo", &prefix, &mut observer);
    assert_eq!(tally.unavailable, 0, "an uncontended increment was refused");
    println!(
        "wasmtime serve ({name}), 1 client thread: {}",
        load::summary(&solo)
    );

    let lanes: Vec<Lane> = ["a", "b"]
        .iter()
        .flat_map(|counter| (0..THREADS_PER_COUNTER).map(|_| lane(counter)))
        .collect();
    let run = load::run(&lanes, INCREMENTS_PER_COUNTER / THREADS_PER_COUNTER);
    for counter in ["a", "b"] {
        let tally = load::check_counter(&run, counter, &prefix, &mut observer);
        println!(
            "wasmtime serve ({name}), counter {counter}: {} increments, {} answered 503",
            tally.ok, tally.unavailable
        );
        assert!(tally.ok > 0, "counter {counter}: no increment succeeded");
    }
    println!(
        "wasmtime serve ({name}), {} client threads on 2 counters: {}",
        lanes.len(),
        load::summary(&run)
    );

    let counters: Vec<String> = (0..16).map(|i| format!("own-{i}")).collect();
    let lanes: Vec<Lane> = counters.iter().map(|c| lane(c)).collect();
    let run = load::run(&lanes, 25);
    for counter in &counters {
        let tally = load::check_counter(&run, counter, &prefix, &mut observer);
        assert_eq!(
            tally.unavailable, 0,
            "{counter}: a counter of its own was refused"
        );
    }
    println!(
        "wasmtime serve ({name}), 16 client threads on a counter each: {}",
        load::summary(&run)
    );
}

#[test]
fn bad_requests_are_refused_and_touch_nothing_wasi_0_2() {
    bad_requests_are_refused_and_touch_nothing(Build::Wasip2);
}

#[test]
fn bad_requests_are_refused_and_touch_nothing_wasi_0_3() {
    bad_requests_are_refused_and_touch_nothing(Build::Wasip3);
}

#[test]
fn a_held_counter_answers_503_and_is_not_incremented_wasi_0_2() {
    a_counter_whose_lock_stays_held_answers_503_and_is_not_incremented(Build::Wasip2);
}

#[test]
fn a_held_counter_answers_503_and_is_not_incremented_wasi_0_3() {
    a_counter_whose_lock_stays_held_answers_503_and_is_not_incremented(Build::Wasip3);
}

#[test]
fn sixteen_threads_per_counter_lose_and_double_no_increment_wasi_0_2() {
    sixteen_threads_per_counter_lose_and_double_no_increment(Build::Wasip2);
}

#[test]
fn sixteen_threads_per_counter_lose_and_double_no_increment_wasi_0_3() {
    sixteen_threads_per_counter_lose_and_double_no_increment(Build::Wasip3);
}

/// Both builds served at once, 8 client threads each on one counter: the
/// 0.2 and 0.3 components exclude each other, and their tokens rise as one.
#[test]
fn the_wasi_0_2_and_0_3_functions_share_a_counter() {
    let _serial = serial();
    let prefix = fresh_prefix("two-builds");
    let servers = [Build::Wasip2, Build::Wasip3].map(|b| (b, wasmtime_serve(b, &prefix, 5_000)));
    let lanes = load::lanes_on(&servers.each_ref().map(|(_, s)| s.addr), 8, "shared");
    let run = load::run(&lanes, 25);
    let tally = load::check_counter(&run, "shared", &prefix, &mut observer(&prefix));
    for (build, server) in &servers {
        let ok = load::increments_by(&run, server.addr);
        assert!(ok > 0, "the {} function made no increment", build.name());
        println!("wasmtime serve ({}): {ok} increments", build.name());
    }
    println!(
        "wasmtime serve, WASI 0.2 + 0.3, 8 threads each on one counter: {} increments, {} answered 503; {}",
        tally.ok,
        tally.unavailable,
        load::summary(&run)
    );
}

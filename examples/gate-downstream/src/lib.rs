//! The function behind the lease gate in its tests (compose-test's
//! `gate` tests). For each request it notes the wall-clock time it
//! entered, sleeps (`?sleep_ms=N`, default 30), notes the time it left,
//! and answers them as JSON with the path and the gate's `s3-lease-token`
//! and `s3-lease-holder` headers as it received them:
//!
//! `{"enter_ns":…,"exit_ns":…,"path":"/keys/a","token":"17","holder":"…"}`
//!
//! With `?body_ms=N` it then streams a second part of its body N ms later
//! (so a client can leave mid-body). With `?write=1` (WASI 0.3) it also
//! writes `gate/<key>.json` fenced under the lease the gate forwarded
//! (`s3-lease-lease`, read by the guest crate), and answers `"write"`: `ok`
//! or the error's case. `GET /` answers 404 (servers' ready
//! check). With `?fail=1` it answers no response but an error
//! (`internal-error`, "told to fail"): on WASI 0.3 its `handle` returns
//! it, on 0.2 it sets the response outparam to it; so a test sees what
//! the gate does when the function behind it fails.
//!
//! On entering, before anything else, it writes `gate-downstream: entered
//! <path>` to stderr: the server's log is its record of every request
//! that reached it (the tests read it to see that one did not).
//! Two builds: WASI 0.2 (default) and 0.3 (`--features wasip3`).

#[cfg(all(target_family = "wasm", not(feature = "wasip3")))]
mod handler;
#[cfg(all(target_family = "wasm", feature = "wasip3"))]
mod handler_p3;

/// The query's `name=N`, if any.
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
fn query_ms(path: &str, name: &str) -> Option<u64> {
    let (_, query) = path.split_once('?')?;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.parse().ok())
}

/// The line written to stderr on entering: the tests find it in the
/// server's log.
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
fn note_entry(path: &str) {
    use std::io::Write;
    // One write, so that the line is not split among other requests' ones
    // (`eprintln!` writes its pieces one by one).
    let line = format!("gate-downstream: entered {path}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Whether the request asks the function to fail (`?fail=1`).
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
fn told_to_fail(path: &str) -> bool {
    query_ms(path, "fail") == Some(1)
}

/// The error a function told to fail answers.
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
const FAILURE: &str = "gate-downstream told to fail";

/// What the function answers: the record, and the status (404 for `/`).
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
fn record(
    path: &str,
    enter_ns: u128,
    exit_ns: u128,
    token: Option<String>,
    holder: Option<String>,
    write: Option<&str>,
) -> (u16, Vec<u8>) {
    let status = if path == "/" { 404 } else { 200 };
    let body = serde_json::json!({
        "enter_ns": enter_ns.to_string(),
        "exit_ns": exit_ns.to_string(),
        "path": path,
        "token": token,
        "holder": holder,
        "write": write,
    });
    (status, body.to_string().into_bytes())
}

#[cfg(all(target_family = "wasm", not(feature = "wasip3")))]
mod bindings {
    wit_bindgen::generate!({
        world: "s3-lease-example:gate-downstream/downstream",
        path: ["../../wit", "wit"],
        generate_all,
    });
}

#[cfg(all(target_family = "wasm", feature = "wasip3"))]
mod bindings {
    pub(crate) mod generated {
        wit_bindgen::generate!({
            world: "s3-lease-example:gate-downstream-async/downstream-async",
            path: ["../../wit", "../../wit/p3", "wit", "wit/p3"],
            generate_all,
        });
    }
    pub(crate) use generated::{export, wit_future, wit_stream};
    pub(crate) mod wasi {
        pub(crate) use super::generated::wasi::clocks0_3_0 as clocks;
        pub(crate) use super::generated::wasi::http0_3_0 as http;
    }
    pub(crate) mod exports {
        pub(crate) mod wasi {
            pub(crate) use super::super::generated::exports::wasi::http0_3_0 as http;
        }
    }
}

//! SigV4 signing timed where it runs: built for wasm32-wasip2, this is a
//! `wasi:cli` command that host-test's `bench` runs in wasmtime, so the
//! figure is s3-lease's signer inside a component. Prints nanoseconds per
//! signature, then a checksum that keeps the work from being optimized away.
//!
//!     cargo build -p s3-lease --example sigv4-timing --features testing \
//!         --target wasm32-wasip2 --release --target-dir target/sigv4-timing

use s3_lease::testing::sigv4_cases::{cases, credentials, sign};
use std::time::Instant;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let (cases, credentials) = (cases(), credentials());
    let mut checksum = 0usize;
    for case in &cases {
        checksum += sign(case, &credentials).len(); // warm-up
    }
    let started = Instant::now();
    for i in 0..rounds {
        checksum += sign(&cases[i % cases.len()], &credentials).len();
    }
    let ns = started.elapsed().as_nanos() / rounds.max(1) as u128;
    println!("{ns} {checksum}");
}

#!/usr/bin/env bash
# The benchmark, one command: builds the release host, the `s3-lease` binary
# (for start-to-lock) and the SigV4 timing command (wasm32-wasip2), then runs
# host-test's `bench` against a local SeaweedFS (started by it) or the
# endpoint AWS_ENDPOINT_URL names. Prints figures, not pass/fail.
#
#   ./scripts/bench.sh [ROUNDS]        (default 200)
#
# The release build compiles wasmtime with optimizations: ~15 min on 2 cores
# the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
install_dynalite
echo "bench: building the SigV4 timing command (wasm32-wasip2, release)"
# Its own target dir: building it with the `testing` feature in the shared
# one would rebuild the component itself with that feature.
cargo build --locked -p s3-lease --example sigv4-timing --features testing \
    --target wasm32-wasip2 --release --target-dir target/sigv4-timing
export S3LEASE_SIGV4_TIMING="$PWD/target/sigv4-timing/wasm32-wasip2/release/examples/sigv4-timing.wasm"
echo "bench: building the release host and s3-lease (the first build compiles wasmtime, ~15 min on 2 cores)"
cargo build --locked --release -p host-test -p s3-lease-cli --bin bench --bin s3-lease
"${CARGO_TARGET_DIR:-target}/release/bench" "$@"

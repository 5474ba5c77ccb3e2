#!/usr/bin/env bash
# Every test: native unit tests of the sans-IO core, the SigV4 cross-check
# against botocore, the host crate, the command line (the built binary), and the
# integration suite (the built component in
# wasmtime against a real S3 server: SeaweedFS on 127.0.0.1, started by the
# suite, or the endpoint named by AWS_ENDPOINT_URL).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
install_s3s_fs

started=$(date +%s)
# --nocapture: the suite prints what it measured (request counts, sizes).
echo "test.sh: cargo test --workspace (the first build compiles wasmtime: ~5 min on 2 cores)"
cargo test --locked --workspace -- --nocapture

# The soak smoke: 60 s of electors and fenced writes under seeded faults,
# then the history checked. In the dev profile the suite just built (a
# release build would compile wasmtime again). A failure prints its seed;
# S3LEASE_SEED=<seed> replays its plan.
soak_started=$(date +%s)
# `cargo test --workspace` built the soak binary with the workspace's
# features; `cargo run -p host-test` would build wasmtime again with fewer.
"${CARGO_TARGET_DIR:-target}/debug/soak" --seconds 60
echo "test.sh: soak smoke took $(( $(date +%s) - soak_started )) s"
echo "test.sh: all tests passed in $(( $(date +%s) - started )) s (after setup)"

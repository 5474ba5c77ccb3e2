#!/usr/bin/env bash
# The demo: several instances of the component elect a leader over S3 (a
# local SeaweedFS, started for you unless AWS_ENDPOINT_URL is set); the
# leader is stopped, another takes over with a higher fencing token.
# It runs on the product host (s3-lease-host), not on the test fixtures.
# It installs and builds only what it runs (setup.sh's shared part); the
# test command reuses all of it, wasmtime's build included.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
source scripts/setup.sh
source scripts/seaweedfs.sh
echo "demo: building the demo on the product host (the first build compiles wasmtime and the AWS credential chain: ~11 min on 2 cores)"
build_started=$(date +%s)
cargo build --locked -p leader-election
echo "demo: the build took $(($(date +%s) - build_started)) s; $(($(date +%s) - started)) s since the start"
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
    start_local_seaweedfs
fi
"${CARGO_TARGET_DIR:-target}/debug/leader-election-demo"

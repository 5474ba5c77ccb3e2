#!/usr/bin/env bash
# The demo: several instances of the component elect a leader over S3 (a
# local SeaweedFS, started for you unless AWS_ENDPOINT_URL is set); the
# leader is stopped, another takes over with a higher fencing token.
# It runs on the product host (s3-lease-host), not on the test fixtures.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
source scripts/seaweedfs.sh
echo "demo: building the example (embeds the component; the first build compiles wasmtime, ~5 min on 2 cores)"
cargo build --locked -p leader-election
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
    start_local_seaweedfs
fi
"${CARGO_TARGET_DIR:-target}/debug/leader-election"

#!/usr/bin/env bash
# Every test: native unit tests of the sans-IO core, the SigV4 cross-check
# against botocore and the Shared Key one against Azure's Python SDK, the host crate, the command line (the built binary), and the
# integration suite (the built component in
# wasmtime against a real S3 server: SeaweedFS on 127.0.0.1, started by the
# suite, or the endpoint named by AWS_ENDPOINT_URL); then the soak smoke, the
# one-step install check and the demo's shared build.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
source scripts/setup.sh
setup_test_tools
install_s3s_fs
echo "test.sh: setup took $(($(date +%s) - started)) s"

tests_started=$(date +%s)
# --nocapture: the suite prints what it measured (request counts, sizes).
# The same dependency build as the demo's (workspace-hack), so after the demo
# this compiles only the test code (~3 min); on its own wasmtime too (~11 min).
echo "test.sh: cargo test --workspace (builds, then runs ~450 tests; ~10 min after the demo on 2 cores, ~21 min without it)"
cargo test --locked --workspace -- --nocapture

# The WASI 0.3 build through the same host: the integration suite's core
# cases, the semaphores and the DynamoDB store again, on it (wasip3.rs, in
# the run above, covers what only it does: calls at the same time through
# one instance). --workspace: the test build's features, so nothing
# compiles again.
echo "test.sh: the integration suite's core cases on the WASI 0.3 build (~2 min)"
S3LEASE_COMPONENT="$S3LEASE_COMPONENT_P3" cargo test --locked --workspace --test integration -- \
    --nocapture lifecycle:: fencing:: elector:: lost_replies:: preflight:: request_counts:: \
    semaphores:: dynamodb:: azure::

# The soak smoke: 60 s of electors and fenced writes under seeded faults,
# then the history checked. In the dev profile the suite just built (a
# release build would compile wasmtime again). A failure prints its seed;
# S3LEASE_SEED=<seed> replays its plan.
soak_started=$(date +%s)
# `cargo test --workspace` built the soak binary with the workspace's
# features; `cargo run -p host-test` would build wasmtime again with fewer.
echo "test.sh: the soak smoke (60 s)"
"${CARGO_TARGET_DIR:-target}/debug/soak" --seconds 60
echo "test.sh: soak smoke took $(($(date +%s) - soak_started)) s"

# One-step install: built without S3LEASE_COMPONENT, the command line builds
# the component itself (host/build.rs); it must embed setup.sh's bytes.
# --workspace keeps the test build's features (no second wasmtime build).
echo "test.sh: one-step install: s3-lease built without S3LEASE_COMPONENT builds its own component (~1 min)"
env -u S3LEASE_COMPONENT S3LEASE_SETUP_COMPONENT="$S3LEASE_COMPONENT" \
    cargo test --locked --workspace --test cli -- install:: --include-ignored

echo "test.sh: the demo's build shares the tests' (a drift would cost a second wasmtime build)"
python3 scripts/check_demo_build_shared.py
echo "test.sh: all tests passed in $(($(date +%s) - tests_started)) s after setup; $(($(date +%s) - started)) s in all"

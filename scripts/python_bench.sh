#!/usr/bin/env bash
# The Python package's benchmark, one command (figures, not pass/fail):
# builds the release wheel (maturin --release: the first build compiles
# wasmtime with optimizations, ~15 min on 2 cores), installs it into a
# fresh venv, and runs scripts/python_bench.py against a local SeaweedFS
# beside scripts/design_bench.py's boto3 client.
#
#   ./scripts/python_bench.sh [ROUNDS]        (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
start_python_tools
finish_python_tools
target="${CARGO_TARGET_DIR:-$PWD/target}"
out="$target/python/bench"
echo "python_bench: building the release wheel and host-test's package_fixtures"
cargo build --locked --workspace --bin package_fixtures
rm -rf "$out/wheels"
(cd python && "../python/.venv/bin/maturin" build --locked --release --out "$out/wheels")
rm -rf "$out/venv"
python3 -m venv --without-pip "$out/venv"
python/.venv/bin/pip --python "$out/venv/bin/python" install --quiet --disable-pip-version-check \
    --no-index "$out"/wheels/s3_lease-*.whl
echo "python_bench: wheel $(basename "$out"/wheels/s3_lease-*.whl), $(($(stat -c %s "$out"/wheels/s3_lease-*.whl) / 1024)) KB"
"$out/venv/bin/python" scripts/python_bench.py "${1:-200}" "$target/debug/package_fixtures" "$S3LEASE_PYTHON"

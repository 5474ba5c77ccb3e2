#!/usr/bin/env bash
# Every test: native unit tests of the sans-IO core, the SigV4 cross-check
# against botocore, and the integration suite (the built component in
# wasmtime against a real S3 server: SeaweedFS on 127.0.0.1, started by the
# suite, or the endpoint named by AWS_ENDPOINT_URL).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
install_s3s_fs

started=$(date +%s)
# --nocapture: the suite prints what it measured (request counts, sizes).
cargo test --locked --workspace -- --nocapture
echo "test.sh: all tests passed in $(( $(date +%s) - started )) s (after setup)"

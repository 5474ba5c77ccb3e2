#!/usr/bin/env bash
# The demo: several instances of the component elect a leader over S3 (a
# local SeaweedFS, started for you unless AWS_ENDPOINT_URL is set); the
# leader is stopped, another takes over with a higher fencing token.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo run --locked --quiet -p leader-election

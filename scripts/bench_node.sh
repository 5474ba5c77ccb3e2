#!/usr/bin/env bash
# The Node package's benchmark (a benchmark, not a test): the package and a
# lock of the single-object design on @aws-sdk/client-s3 side by side
# (node/bench/design_bench.mjs), then `node -e` importing the package and
# taking a first lock as a new process, with the component precompiled.
# Against a SeaweedFS of its own (host-test's package_fixtures).
#
# The addon is built in the release profile (cargo build --release -p
# s3-lease-node: it shares the release build of wasmtime with the command
# line and the Python wheel; the first one takes ~15 minutes on 2 cores)
# and packed from a copy of node/, so the test build's addon stays.
#
#   scripts/bench_node.sh [ROUNDS]   (after scripts/test.sh built package_fixtures)
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
rounds=${1:-200}
dir=$(mktemp -d "${TMPDIR:-/tmp}/s3-lease-node-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "bench_node: building the release addon (cargo build --release -p s3-lease-node)"
cargo build --locked --release -p s3-lease-node
cp -r node "$dir/package"
objcopy --strip-debug "$target/release/libs3_lease_node.so" "$dir/package/s3-lease.linux-x64-gnu.node"
echo "bench_node: release addon $(($(stat -c %s "$dir/package/s3-lease.linux-x64-gnu.node") / 1024)) KB"
(cd "$dir/package" && npm pack --silent --pack-destination "$dir" >/dev/null)
cp node/bench/design_bench.mjs "$dir/"
(cd "$dir" && echo '{"private":true,"type":"module"}' >package.json &&
    npm install --silent --no-audit --no-fund ./s3-lease-*.tgz @aws-sdk/client-s3@3.1169.0)
coproc FIXTURES { "$target/debug/package_fixtures" serve; }
echo s3 >&"${FIXTURES[1]}"
read -r s3 <&"${FIXTURES[0]}"
eval "$(node -e '
    const s = JSON.parse(process.argv[1]);
    const q = (v) => `'"'"'${v}'"'"'`;
    console.log(`export AWS_ENDPOINT_URL=${q(s.url)} AWS_REGION=${q(s.region)} S3LEASE_TEST_BUCKET=${q(s.bucket)}`);
    console.log(`export AWS_ACCESS_KEY_ID=${q(s.access_key_id)} AWS_SECRET_ACCESS_KEY=${q(s.secret_access_key)}`);
' "$s3")"
cd "$dir"
node design_bench.mjs "$rounds"
"$target/debug/s3-lease" precompile --out "$dir/s3_lease.cwasm" >/dev/null
export S3LEASE_PRECOMPILED="$dir/s3_lease.cwasm" S3LEASE_BUCKET=$S3LEASE_TEST_BUCKET S3LEASE_ENDPOINT=$AWS_ENDPOINT_URL
first_lock='import("s3-lease").then(async ({ Client }) => { const c = await Client.fromEnv(); const l = await c.acquire("first-" + process.pid, { ttl: 30000 }); await l.release(); })'
# Spawn to exit, 10 runs each: min / median / max, beside Node alone.
runs() {
    local label=$1; shift
    local times=()
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        local start=$(date +%s%N)
        "$@" >/dev/null
        times+=($((($(date +%s%N) - start) / 1000000)))
    done
    sorted=($(printf '%s\n' "${times[@]}" | sort -n))
    echo "$label: ${sorted[0]} / $(((sorted[4] + sorted[5]) / 2)) / ${sorted[9]} ms (min / median / max of 10)"
}
runs "node -e 0 (Node alone)" node -e 0
runs "node -e import + first lock + release, precompiled" node -e "$first_lock"
kill "$FIXTURES_PID" 2>/dev/null || true

#!/usr/bin/env bash
# The Node package, as users get it: the addon built in the dev profile
# (cargo build -p s3-lease-node: the workspace's test build of the host is
# reused, only the addon compiles), packed with `npm pack`, installed into
# a fresh directory outside the repository with only TypeScript beside it,
# then node/test run there with node:test against the suite's servers
# (host-test's package_fixtures: one SeaweedFS for every test process), and
# `await using` compiled by tsc from the package's own types and run.
#
#   scripts/test_node.sh [FILES...]   (default: every node/test/*.test.mjs)
#
# Needs what `source scripts/setup.sh` exports and the workspace's test
# build (target/debug/package_fixtures, target/debug/s3-lease).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
target="${CARGO_TARGET_DIR:-$PWD/target}"
started=$(date +%s)

echo "test_node: building the addon (cargo build -p s3-lease-node, dev profile)"
cargo build --locked -p s3-lease-node --features test-build 2>&1 | grep -Ev '^\s+(Compiling|Finished)' || true
# Debug info out: the package ships the code, not line tables.
objcopy --strip-debug "$target/debug/libs3_lease_node.so" node/s3-lease.linux-x64-gnu.node
echo "test_node: addon $(($(stat -c %s node/s3-lease.linux-x64-gnu.node) / 1024)) KB ($(($(date +%s) - started)) s)"

fresh=$(mktemp -d "${TMPDIR:-/tmp}/s3-lease-node.XXXXXX")
fixtures_pid=
cleanup() {
    [ -z "$fixtures_pid" ] || kill "$fixtures_pid" 2>/dev/null || true
    rm -rf "$fresh"
}
trap cleanup EXIT

echo "test_node: npm pack, installed into $fresh with typescript and @types/node"
(cd node && npm pack --silent --pack-destination "$fresh" >/dev/null)
tarball=$(ls "$fresh"/s3-lease-*.tgz)
echo "test_node: $(basename "$tarball") ($(($(stat -c %s "$tarball") / 1024)) KB)"
cp -r node/test "$fresh/test"
(cd "$fresh" && echo '{"name":"s3-lease-node-check","private":true,"type":"module"}' >package.json &&
    npm install --silent --no-audit --no-fund "$tarball" typescript@5.9.3 @types/node@20.19.25)

# One SeaweedFS for every test process: their own package_fixtures find it in
# the AWS_* variables (host-test's server::Endpoint::from_env).
coproc FIXTURES { "$target/debug/package_fixtures" serve; }
fixtures_pid=$FIXTURES_PID
echo s3 >&"${FIXTURES[1]}"
read -r s3 <&"${FIXTURES[0]}"
eval "$(node -e '
    const s = JSON.parse(process.argv[1]);
    if (s.error) { console.error(s.error); process.exit(1); }
    const q = (v) => `'"'"'${v}'"'"'`;
    console.log(`export AWS_ENDPOINT_URL=${q(s.url)} AWS_REGION=${q(s.region)} S3LEASE_TEST_BUCKET=${q(s.bucket)}`);
    console.log(`export AWS_ACCESS_KEY_ID=${q(s.access_key_id)} AWS_SECRET_ACCESS_KEY=${q(s.secret_access_key)}`);
' "$s3")"
export S3LEASE_REPO="$repo" S3LEASE_PACKAGE_FIXTURES="$target/debug/package_fixtures" S3LEASE_CLI="$target/debug/s3-lease"

cd "$fresh"
echo "test_node: the issue's plain JavaScript, and await using compiled by tsc --strict (Node $(node --version))"
S3LEASE_BUCKET=$S3LEASE_TEST_BUCKET S3LEASE_ENDPOINT=$AWS_ENDPOINT_URL S3LEASE_PREFIX=node-example/ node test/ts/example.mjs
npx tsc --strict --target es2022 --module nodenext --moduleResolution nodenext \
    --lib es2022,esnext.disposable --types node --outDir out test/ts/await-using.mts
S3LEASE_BUCKET=$S3LEASE_TEST_BUCKET S3LEASE_ENDPOINT=$AWS_ENDPOINT_URL S3LEASE_PREFIX=node-ts/ node out/await-using.mjs

if [ "$#" -gt 0 ]; then
    files=("$@")
else
    # The event loop's test first, beside the others: what it judges is
    # the JavaScript thread's own hold on its loop and its time on a CPU,
    # from which the other tests' load (the thread waiting for a core) is
    # taken out, and it is the longest, so the rest run within it.
    files=(test/event-loop.test.mjs)
    for f in test/*.test.mjs; do [ "$f" = test/event-loop.test.mjs ] || files+=("$f"); done
fi
echo "test_node: node --test ${files[*]}"
node --test --test-concurrency=4 "${files[@]}"
echo "test_node: passed ($(($(date +%s) - started)) s)"

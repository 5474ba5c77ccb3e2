#!/usr/bin/env bash
# The contract fetched by name, as a component author outside this
# repository gets it (docs/authors.md), from scratch in a temporary
# directory:
#
#   1. scripts/publish_local.sh publishes the contract, the WASI packages
#      and the components to a registry of its own on loopback;
#   2. an author's directory (compose-test/fetch-by-name/function, copied:
#      a `wit/` holding its world alone) gets its `wit/deps/` from that
#      registry with `wkg fetch` (wkg 0.16's name for `wkg wit fetch`);
#   3. `cargo build` builds it against those;
#   4. `wkg get s3-lease:lock@V` fetches the component, and `wac plug`
#      fills the function's import with it.
#
# It checks that the fetched component is the published one, byte for
# byte, and that the composed component imports nothing of s3-lease's
# (only WASI), and says how long each step took.
#
# Needs what scripts/setup.sh and its setup_test_tools install (the
# components, wac, jco) and what publish_local.sh does (wkg, a registry).
# The function's build goes to target/fetch-by-name (CARGO_TARGET_DIR's
# fetch-by-name when set), so a second run compiles only the function.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

wkg=${S3LEASE_WKG:-$root/.tools/wkg/bin/wkg}
wac=${S3LEASE_WAC:-$root/.tools/bin/wac}
jco=${S3LEASE_JCO:-$root/examples/node/node_modules/.bin/jco}
release_dir="${CARGO_TARGET_DIR:-$root/target}/wasm32-wasip2/release"
component=${S3LEASE_COMPONENT:-$release_dir/s3_lease.wasm}
function_target="${CARGO_TARGET_DIR:-$root/target}/fetch-by-name"
version=$(sed -n 's/^package s3-lease:lease@\([^;]*\);$/\1/p' wit/lease.wit)

work=$(mktemp -d)
cleanup() {
    # Only the registry this check started.
    if [ -f "$work/registry/pid" ]; then
        kill "$(cat "$work/registry/pid")" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

step_started=$(date +%s.%N)
# `took LABEL`: how long since the last step, in seconds.
took() {
    local now
    now=$(date +%s.%N)
    awk -v label="$1" -v from="$step_started" -v to="$now" \
        'BEGIN { printf "check_fetch_by_name: %s took %.1f s\n", label, to - from }'
    step_started=$now
}

# A free port on loopback for the registry.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
S3LEASE_REGISTRY_DIR="$work/registry" S3LEASE_WKG="$wkg" \
    scripts/publish_local.sh "127.0.0.1:$port" >"$work/publish.log" 2>&1 ||
    { cat "$work/publish.log" >&2; exit 1; }
took "publishing (a registry started, $(grep -c '^Published' "$work/publish.log") WIT packages, $(grep -c ' <- ' "$work/publish.log") components)"

# The author's side: their own wkg cache, their own directory.
export WKG_CONFIG_FILE="$work/registry/wkg-config.toml" WKG_CACHE_DIR="$work/author-cache"
cp -r compose-test/fetch-by-name/function "$work/author"
cd "$work/author"
"$wkg" fetch >"$work/fetch.log" 2>&1 || { cat "$work/fetch.log" >&2; exit 1; }
for package in "s3-lease-lease-$version" wasi-cli-0.2.12 wasi-http-0.2.12; do
    if [ ! -d "wit/deps/$package" ]; then
        echo "check_fetch_by_name: wkg fetch wrote no wit/deps/$package (it wrote: $(ls wit/deps))" >&2
        exit 1
    fi
done
took "wkg fetch ($(ls wit/deps | wc -l) packages into wit/deps)"

CARGO_TARGET_DIR="$function_target" cargo build --locked --quiet --target wasm32-wasip2 --release
function_wasm="$function_target/wasm32-wasip2/release/lock_probe.wasm"
took "cargo build of the function ($(wc -c <"$function_wasm") bytes)"

"$wkg" get "s3-lease:lock@$version" -o ./s3-lease-lock.wasm >"$work/get.log" 2>&1 ||
    { cat "$work/get.log" >&2; exit 1; }
if ! cmp -s s3-lease-lock.wasm "$component"; then
    echo "check_fetch_by_name: the fetched s3-lease:lock@$version differs from $component" >&2
    exit 1
fi
"$wac" plug "$function_wasm" --plug s3-lease-lock.wasm -o composed.wasm
took "wkg get s3-lease:lock@$version and wac plug ($(wc -c <composed.wasm) bytes)"

# The composed component's world: the function's export, and imports that
# are all WASI (the lease import is filled inside it).
"$jco" wit composed.wasm >world.wit
if grep -q '^ *import s3-lease:' world.wit || ! grep -q '^ *export try-lock:' world.wit ||
    grep '^ *import ' world.wit | grep -vq '^ *import wasi:'; then
    cat world.wit >&2
    echo "check_fetch_by_name: the composed component's world is not the function's export over WASI imports alone (above)" >&2
    exit 1
fi
took "the composed world checked (jco wit)"
echo "check_fetch_by_name: passed"

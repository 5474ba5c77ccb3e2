#!/usr/bin/env bash
# A component author's whole path, by name, exactly as the documents print
# it (docs/authors.md, the README's component section, docs/gate.md), from
# scratch in a temporary directory:
#
#   1. the repository's block: `eval "$(./scripts/publish_local.sh)"`
#      publishes the contract, the WASI packages, the components and the
#      guest crate to registries of its own on loopback (an OCI registry for
#      wkg, a sparse cargo registry), and points wkg and cargo at them;
#   2. the author's blocks, in a directory outside the repository holding
#      the author's function (compose-test/fetch-by-name/function, copied:
#      its Cargo.toml names `s3-lease-guest` by version and registry, its
#      `wit/` holds its world alone): `wkg fetch`, `cargo build` (the guest
#      crate fetched by name), `wkg get s3-lease:lock@V`, `wac plug`, then
#      `wasmtime serve` and two `curl`s against a SeaweedFS started here;
#   3. the gate's blocks, in a directory holding an HTTP function: the gate
#      and the lock fetched by name, plugged in front of it; then in front
#      of the author's function (which imports s3-lease itself), served,
#      and a request through the gate.
#
# Each block runs verbatim (scripts/doc_blocks.py), in one shell, as an
# author would type them; the environment is what the documents say an
# author has: wkg, wac and `wasmtime` on PATH (here `wasmtime serve` is
# the workspace's build of wasmtime-cli's own serve command,
# compose-test's wasmtime-serve), and the store's AWS_* variables. Then it
# checks what the blocks made:
#
#   - every published component is the build the tests ran (publish_local.sh
#     checks each SHA-256 against scripts/setup.sh's record), and
#     docs/artifacts.md states those sizes and hashes;
#   - the fetched component is the published one, byte for byte;
#   - one contract: the guest crate's WIT, as cargo fetched it, encodes to
#     the same bytes as the contract package wkg fetches;
#   - the composed component imports only WASI;
#   - the served function took the counter's lock and wrote fenced: 1 then
#     2, under rising fencing tokens, then 3 through the gate, and the
#     object records the token of the last write.
#
# It says how long each step took. Needs what scripts/setup.sh and its
# setup_test_tools install (the components, the gate, wac, jco, SeaweedFS),
# what publish_local.sh does (wkg, docker-registry), and compose-test's
# wasmtime-serve (built by `cargo test --workspace`). The function's build
# goes to target/fetch-by-name (CARGO_TARGET_DIR's fetch-by-name when set),
# so a second run compiles only the function and the guest crate.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

target="${CARGO_TARGET_DIR:-$root/target}"
wkg=${S3LEASE_WKG:-$root/.tools/wkg/bin/wkg}
wac=${S3LEASE_WAC:-$root/.tools/bin/wac}
jco=${S3LEASE_JCO:-$root/examples/node/node_modules/.bin/jco}
wasmtime_serve=${S3LEASE_WASMTIME_SERVE:-$target/debug/wasmtime-serve}
release_dir="$target/wasm32-wasip2/release"
component=${S3LEASE_COMPONENT:-$release_dir/s3_lease.wasm}
gate_downstream=${S3LEASE_GATE_DOWNSTREAM:-$release_dir/gate_downstream.wasm}
version=$(sed -n 's/^package s3-lease:lease@\([^;]*\);$/\1/p' wit/lease.wit)
# The addresses the documents serve the function and the gate at.
served="127.0.0.1:8765 127.0.0.1:8766"

for tool in "$wkg" "$wac" "$jco" "$wasmtime_serve" "$gate_downstream" "${S3LEASE_WEED:-}" "${S3LEASE_PYTHON:-}"; do
    if [ ! -x "$tool" ] && [ ! -f "$tool" ]; then
        echo "check_fetch_by_name: $tool is missing (scripts/setup.sh, setup_test_tools and cargo test --workspace make it)" >&2
        exit 1
    fi
done
for address in $served; do
    if python3 -c 'import socket, sys; socket.create_connection(sys.argv[1].split(":"), timeout=1)' "$address" 2>/dev/null; then
        echo "check_fetch_by_name: something already listens on $address, where the documents serve" >&2
        exit 1
    fi
done

work=$(mktemp -d)
blocks_pid=""
cleanup() {
    # Only what this check started: the documents' shell (and the server
    # it started, in its process group), the registries, SeaweedFS.
    if [ -n "$blocks_pid" ]; then kill -- "-$blocks_pid" 2>/dev/null || true; fi
    for pid_file in "$work/registry/pid" "$work/registry/cargo-pid"; do
        if [ -f "$pid_file" ]; then kill "$(cat "$pid_file")" 2>/dev/null || true; fi
    done
    if [ -n "${S3LEASE_DEMO_WEED_PID:-}" ]; then
        kill "$S3LEASE_DEMO_WEED_PID" 2>/dev/null || true
        wait "$S3LEASE_DEMO_WEED_PID" 2>/dev/null || true
    fi
    if [ -n "${cargo_port:-}" ]; then forget_cargo_registry; fi
    rm -rf "$work"
}
trap cleanup EXIT

# Cargo keeps a registry's index, crates and sources under directories
# named for its URL, and takes a crate it has kept without checking it
# again: this run's, found by its port in the index's config.json, are
# removed before (a run before on the same port) and after (a run after).
forget_cargo_registry() {
    local home=${CARGO_HOME:-$HOME/.cargo} config name
    for config in "$home"/registry/index/127.0.0.1-*/config.json; do
        if [ -f "$config" ] && grep -q "\"http://127.0.0.1:$cargo_port/crates/" "$config"; then
            name=$(basename "$(dirname "$config")")
            rm -rf "$home/registry/index/$name" "$home/registry/cache/$name" "$home/registry/src/$name"
        fi
    done
}

step_started=$(date +%s.%N)
# `took LABEL`: how long since the last step, in seconds.
took() {
    local now
    now=$(date +%s.%N)
    awk -v label="$1" -v from="$step_started" -v to="$now" \
        'BEGIN { printf "check_fetch_by_name: %s took %.1f s\n", label, to - from }'
    step_started=$now
}
# A free port on loopback.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The store the served function locks in: a SeaweedFS of its own, with a
# bucket (the demo's helper; it exports AWS_* and S3LEASE_BUCKET).
source scripts/seaweedfs.sh
TMPDIR="$work" S3LEASE_BUCKET=author-path start_local_seaweedfs >"$work/seaweedfs.log" 2>&1 ||
    { cat "$work/seaweedfs.log" >&2; exit 1; }
trap cleanup EXIT
took "SeaweedFS started, a bucket"

# The author's tools, by the names the documents use.
mkdir -p "$work/bin" "$work/author" "$work/readme" "$work/gate"
ln -s "$wkg" "$work/bin/wkg"
ln -s "$wac" "$work/bin/wac"
cat >"$work/bin/wasmtime" <<EOF
#!/bin/sh
# \`wasmtime serve\`: wasmtime-cli's own serve command, as the workspace builds it.
[ "\$1" = serve ] || { echo "wasmtime: only 'serve' here" >&2; exit 2; }
shift
exec "$wasmtime_serve" "\$@"
EOF
chmod +x "$work/bin/wasmtime"
# The author's own files, and an HTTP function for the gate's blocks.
cp -r compose-test/fetch-by-name/function/. "$work/author/"
cp -r compose-test/fetch-by-name/function/. "$work/readme/"
cp "$gate_downstream" "$work/gate/function.wasm"

# The documents' blocks, in one shell: the repository's in the repository
# (they publish), the author's in the author's directory, the gate's in
# its own. Registries on free ports of their own, in this check's
# directory; the author's wkg cache a fresh one.
{
    echo "cd $(printf %q "$root")"
    python3 scripts/doc_blocks.py repository docs/authors.md
    echo "cd $(printf %q "$work/author")"
    python3 scripts/doc_blocks.py author docs/authors.md
    # The README's summary of the same path, as a reader of the README
    # alone runs it: in a directory of its own.
    echo "cd $(printf %q "$work/readme")"
    python3 scripts/doc_blocks.py author README.md
    echo "cd $(printf %q "$work/gate")"
    python3 scripts/doc_blocks.py gate docs/gate.md
    # Now a function that imports s3-lease itself: the author's.
    echo "cp $(printf %q "$work/author/target/wasm32-wasip2/release/my_function.wasm") ./function.wasm"
    python3 scripts/doc_blocks.py gate-composed docs/gate.md
} >"$work/blocks.sh"
registry_port=$(free_port)
cargo_port=$(free_port)
forget_cargo_registry
# The author's target/ is kept across runs (a link), so a second run
# compiles only the function and the guest crate; the gate's key is a
# header (the function locks counters/{name} itself).
mkdir -p "$target/fetch-by-name"
ln -s "$target/fetch-by-name" "$work/author/target"
ln -s "$target/fetch-by-name" "$work/readme/target"
setsid env -u CARGO_TARGET_DIR PATH="$work/bin:$PATH" \
    S3LEASE_REGISTRY="127.0.0.1:$registry_port" S3LEASE_CARGO_REGISTRY="127.0.0.1:$cargo_port" \
    S3LEASE_REGISTRY_DIR="$work/registry" S3LEASE_WKG="$wkg" WKG_CACHE_DIR="$work/author-cache" \
    S3LEASE_GATE_KEY=header:x-tenant \
    bash "$work/blocks.sh" >"$work/blocks.log" 2>&1 &
blocks_pid=$!
if ! wait "$blocks_pid"; then
    blocks_pid=""
    cat "$work/blocks.log" >&2
    echo "check_fetch_by_name: a documented command failed as written (log above)" >&2
    exit 1
fi
blocks_pid=""
# How long each block took (from its start to the next one's).
awk '/^doc_blocks: .* at [0-9.]+$/ {
        if (name != "") printf "check_fetch_by_name:   %s took %.1f s\n", name, $NF - from
        name = ($2 ~ /:[0-9]+$/) ? $2 " " $3 : ""; from = $NF
    }' "$work/blocks.log"
took "the documents' blocks, verbatim ($(grep -c '^doc_blocks: .*:[0-9]* (' "$work/blocks.log") blocks: published, fetched, built, composed, served)"

cd "$work/author"
fail() {
    cat "$work/blocks.log" >&2
    echo "check_fetch_by_name: $1" >&2
    exit 1
}
export WKG_CONFIG_FILE="$work/registry/wkg-config.toml" WKG_CACHE_DIR="$work/author-cache"
export CARGO_REGISTRIES_S3_LEASE_INDEX="sparse+http://127.0.0.1:$cargo_port/index/"

# What was published is what the tests ran, and what the docs say.
python3 "$root/scripts/artifacts.py" docs --check
cmp -s s3-lease-lock.wasm "$component" ||
    fail "the fetched s3-lease:lock@$version differs from $component"

# One contract: the guest crate as cargo fetched it (its wit/) encodes to
# the contract package wkg serves, byte for byte.
guest_dir=$(cargo metadata --format-version 1 --offline | python3 -c '
import json, os, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "s3-lease-guest":
        print(os.path.dirname(p["manifest_path"]))')
case "$guest_dir" in
"$root"/* | "") fail "the guest crate was not fetched from the registry (found: '$guest_dir')" ;;
esac
"$wkg" get "s3-lease:lease@$version" -o ./contract.wasm >/dev/null 2>&1 ||
    fail "wkg get s3-lease:lease@$version failed"
"$wkg" build -d "$guest_dir/wit" -o ./guest-contract.wasm >/dev/null 2>&1 ||
    fail "wkg build of the guest crate's wit/ ($guest_dir/wit) failed"
cmp -s contract.wasm guest-contract.wasm ||
    fail "the guest crate's contract ($guest_dir/wit) is not the package wkg fetches (s3-lease:lease@$version)"

# The composed component's world: the function's export, and imports that
# are all WASI (the lease import is filled inside it).
"$jco" wit composed.wasm >world.wit
if grep -q '^ *import s3-lease:' world.wit || ! grep -q '^ *export wasi:http/incoming-handler' world.wit ||
    grep '^ *import ' world.wit | grep -vq '^ *import wasi:'; then
    cat world.wit >&2
    fail "the composed component's world is not the function's export over WASI imports alone (above)"
fi

# The served function: a lock taken and a fenced write, twice, tokens
# rising; then once more through the gate.
mapfile -t replies < <(grep '^{"value"' "$work/blocks.log")
python3 - "${replies[@]}" <<'PY' || fail "the served function's replies are not three fenced increments (log above)"
import json, sys
replies = [json.loads(r) for r in sys.argv[1:]]
assert [r["value"] for r in replies] == [1, 2, 3], replies
assert 1 <= replies[0]["token"] < replies[1]["token"] < replies[2]["token"], replies
PY
"$S3LEASE_PYTHON" - <<'PY' || fail "the counter object does not carry the lease's fencing token"
import boto3, json, os
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
objects = s3.list_objects_v2(Bucket=os.environ["S3LEASE_BUCKET"])["Contents"]
counter = next(o["Key"] for o in objects if o["Key"].endswith("counters/visits.json"))
got = s3.get_object(Bucket=os.environ["S3LEASE_BUCKET"], Key=counter)
body = json.loads(got["Body"].read())
# A fenced write records its token on the object (docs/protocol.md).
assert body["value"] == 3 and got["Metadata"].get("s3lease-token") == str(body["token"]), (body, got["Metadata"])
PY
took "checked: published = tested = documented, fetched = published, one contract, WASI-only imports, 3 fenced increments, one through the gate"
echo "check_fetch_by_name: passed"

#!/usr/bin/env bash
# Publishes the contract and the components to an OCI registry on this
# machine, so that a component author can fetch them by package name with
# wkg (docs/authors.md):
#
#   s3-lease:lease@V          the WIT package (wit/lease.wit, wit/async-lease.wit)
#   wasi:*@0.2.12, wasi:*@0.3.0  the WASI packages it and a 0.3 author need
#                             (wit/deps, wit/p3/deps), so that nothing is
#                             fetched from elsewhere
#   s3-lease:lock@V           the component ($S3LEASE_COMPONENT)
#   s3-lease:lock-wasip3@V    its WASI 0.3 build ($S3LEASE_COMPONENT_P3)
#   s3-lease:gate@V           the gate middleware, when it has been built
#
# V is the contract's version, read from wit/lease.wit.
#
# Usage: scripts/publish_local.sh [HOST:PORT]   (default 127.0.0.1:5000)
#
# When nothing answers at HOST:PORT, this starts Debian's `docker-registry`
# (the CNCF distribution registry, `apt-get install docker-registry`) there,
# keeping its files in $S3LEASE_REGISTRY_DIR (default .tools/registry), and
# leaves it running; its pid is in that directory's `pid`. It writes the wkg
# configuration for the registry to that directory's `wkg-config.toml`
# (not `wkg.toml`: wkg reads a file of that name in the directory it runs
# in as a project's manifest) and prints the line that points wkg at it.
#
# Needs wkg 0.16.1 (installed into .tools/wkg when missing, ~1.5 min on 2 cores)
# and the components built (scripts/setup.sh builds both).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

registry=${1:-127.0.0.1:5000}
registry_dir=${S3LEASE_REGISTRY_DIR:-$root/.tools/registry}
wkg=${S3LEASE_WKG:-$root/.tools/wkg/bin/wkg}
release_dir="${CARGO_TARGET_DIR:-$root/target}/wasm32-wasip2/release"
component=${S3LEASE_COMPONENT:-$release_dir/s3_lease.wasm}
component_p3=${S3LEASE_COMPONENT_P3:-$release_dir/s3_lease_p3.wasm}
version=$(sed -n 's/^package s3-lease:lease@\([^;]*\);$/\1/p' wit/lease.wit)
if [ -z "$version" ]; then
    echo "publish_local: no 'package s3-lease:lease@<version>;' line in wit/lease.wit" >&2
    exit 1
fi

if [ -z "${S3LEASE_WKG:-}" ] && [ "$("$wkg" --version 2>/dev/null)" != "wkg 0.16.1" ]; then
    echo "publish_local: installing wkg 0.16.1 into .tools/wkg (cargo install --debug; ~1.5 min on 2 cores)"
    CARGO_PROFILE_DEV_DEBUG=0 env -u CARGO_TARGET_DIR cargo install --debug --locked --root .tools/wkg wkg@0.16.1
fi
for file in "$component" "$component_p3"; do
    if [ ! -f "$file" ]; then
        echo "publish_local: $file is missing; scripts/setup.sh builds it" >&2
        exit 1
    fi
done

answers() {
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
        "http://$registry/v2/" 2>/dev/null
}
mkdir -p "$registry_dir"
if ! answers; then
    if ! command -v docker-registry >/dev/null; then
        echo "publish_local: nothing answers at $registry, and docker-registry is not installed" >&2
        echo "publish_local: (Debian, Ubuntu: apt-get install docker-registry; or start any OCI registry there)" >&2
        exit 1
    fi
    # Loopback only, plain HTTP, no authentication: a registry for this
    # machine's builds and tests, never for others.
    cat >"$registry_dir/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $registry_dir/data
http:
  addr: $registry
EOF
    docker-registry serve "$registry_dir/config.yml" >"$registry_dir/registry.log" 2>&1 &
    echo $! >"$registry_dir/pid"
    for _ in $(seq 50); do
        answers && break
        sleep 0.1
    done
    if ! answers; then
        cat "$registry_dir/registry.log" >&2
        echo "publish_local: docker-registry did not start at $registry (log above)" >&2
        exit 1
    fi
    echo "publish_local: started docker-registry at $registry (pid $(cat "$registry_dir/pid"); files in $registry_dir)"
fi

# Every package, whatever its namespace, from this one registry: wasi:*
# too, which wkg would otherwise look for on wasi.dev.
cat >"$registry_dir/wkg-config.toml" <<EOF
default_registry = "$registry"

[registry."$registry"]
type = "oci"

[registry."$registry".oci]
protocol = "http"
EOF
export WKG_CONFIG_FILE="$registry_dir/wkg-config.toml"
export WKG_CACHE_DIR=${WKG_CACHE_DIR:-$registry_dir/cache}

# wkg writes its lock file into the directory it runs in: a scratch one,
# not the repository.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"

# The WIT packages, each built from its directory and published after the
# packages it uses (wkg orders them). --skip-dupes: a version already there
# stays as it is (a registry does not take a version twice; start a fresh
# S3LEASE_REGISTRY_DIR to publish a changed contract under the same version).
echo "publish_local: the contract s3-lease:lease@$version and WASI 0.2.12"
"$wkg" publish --skip-dupes "$root/wit" "$root"/wit/deps/*/
# WASI 0.3.0: one file a package in wit/p3/deps, each into a directory of
# its own for wkg.
for file in "$root"/wit/p3/deps/*.wit; do
    mkdir -p "p3/$(basename "$file" .wit)"
    cp "$file" "p3/$(basename "$file" .wit)/"
done
echo "publish_local: WASI 0.3.0"
"$wkg" publish --skip-dupes p3/*/

# The components. `wkg publish` 0.16.1 takes a component's name from its
# WIT package, which a component built by cargo does not carry (its
# `--package` override is applied too late), so they go up with
# `wkg oci push`, under the reference wkg's OCI backend looks them up by:
# <registry>/<namespace>/<name>:<version>. A push replaces the tag, so the
# registry always serves the last build.
push() {
    local package=$1 file=$2
    "$wkg" oci push --insecure "$registry" "$registry/${package%%:*}/${package#*:}:$version" "$file" >/dev/null
    echo "publish_local: $package@$version <- $file ($(wc -c <"$file") bytes)"
}
push s3-lease:lock "$component"
push s3-lease:lock-wasip3 "$component_p3"
# The gate middleware (gate/), once it is built: its files are published
# beside the lock's when they exist.
gate=${S3LEASE_GATE:-$release_dir/s3_lease_gate.wasm}
gate_p3=${S3LEASE_GATE_P3:-$release_dir/s3_lease_gate_p3.wasm}
if [ -f "$gate" ]; then push s3-lease:gate "$gate"; fi
if [ -f "$gate_p3" ]; then push s3-lease:gate-wasip3 "$gate_p3"; fi

echo "publish_local: published to $registry; point wkg at it with"
echo "  export WKG_CONFIG_FILE=$registry_dir/wkg-config.toml"

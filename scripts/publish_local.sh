#!/usr/bin/env bash
# Publishes what a component author fetches by name to registries on this
# machine (docs/authors.md):
#
#   an OCI registry, for wkg:
#     s3-lease:lease@V          the WIT package (wit/lease.wit, wit/async-lease.wit)
#     wasi:*@0.2.12, wasi:*@0.3.0  the WASI packages it and a 0.3 author need
#                               (wit/deps, wit/p3/deps), so that nothing is
#                               fetched from elsewhere
#     s3-lease:lock@V           the component ($S3LEASE_COMPONENT)
#     s3-lease:lock-wasip3@V    its WASI 0.3 build ($S3LEASE_COMPONENT_P3)
#     s3-lease:gate@V, s3-lease:gate-wasip3@V  the gate middleware, when built
#   a cargo registry (a sparse index and the .crate files), for cargo:
#     s3-lease-guest V          the guest crate (scripts/package_guest.sh),
#     s3-lease-keep             and the contract's names it depends on
#
# V is the contract's version, read from wit/lease.wit. A component is
# published only if it is the build scripts/setup.sh made, shrank and
# recorded, which the tests run (scripts/artifacts.py checks its SHA-256).
#
# Usage: exports=$(scripts/publish_local.sh [HOST:PORT]) && eval "$exports"
#
# It prints on stdout the lines that point wkg and cargo at the registries
# (progress goes to stderr):
#   export WKG_CONFIG_FILE=<dir>/wkg-config.toml
#   export CARGO_REGISTRIES_S3_LEASE_INDEX=sparse+http://<cargo address>/index/
#
# The OCI registry is at HOST:PORT (else $S3LEASE_REGISTRY, else
# 127.0.0.1:5000); when nothing answers there, this starts Debian's
# `docker-registry` (the CNCF distribution registry, `apt-get install
# docker-registry`) there. The cargo registry is at $S3LEASE_CARGO_REGISTRY
# (else the OCI registry's port + 1): when nothing answers there, this
# serves its files with `python3 -m http.server`. Both keep their files in
# $S3LEASE_REGISTRY_DIR (default .tools/registry) and are left running;
# their pids are in that directory's `pid` and `cargo-pid`. The wkg
# configuration goes to that directory's `wkg-config.toml` (not `wkg.toml`:
# wkg reads a file of that name in the directory it runs in as a project's
# manifest).
#
# Needs wkg 0.16.1 (installed into .tools/wkg when missing, ~1.5 min on 2 cores)
# and the components built (scripts/setup.sh builds both).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# stdout is for the export lines alone (fd 3); everything else to stderr.
exec 3>&1 1>&2

registry=${1:-${S3LEASE_REGISTRY:-127.0.0.1:5000}}
cargo_registry=${S3LEASE_CARGO_REGISTRY:-${registry%:*}:$((${registry##*:} + 1))}
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
gate=${S3LEASE_GATE:-$release_dir/s3_lease_gate.wasm}
gate_p3=${S3LEASE_GATE_P3:-$release_dir/s3_lease_gate_p3.wasm}
published=("$component" "$component_p3")
for file in "$gate" "$gate_p3"; do
    if [ -f "$file" ]; then published+=("$file"); fi
done
# Only the build the tests ran: each file as setup.sh recorded it.
python3 scripts/artifacts.py check "${published[@]}"

# `answers URL`: whether an HTTP server answers URL with a success.
answers() {
    python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
        "$1" 2>/dev/null
}
mkdir -p "$registry_dir"
if ! answers "http://$registry/v2/"; then
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
    # 3>&-: the server must not hold the stdout of a caller's `$(...)`.
    docker-registry serve "$registry_dir/config.yml" >"$registry_dir/registry.log" 2>&1 3>&- &
    echo $! >"$registry_dir/pid"
    for _ in $(seq 50); do
        answers "http://$registry/v2/" && break
        sleep 0.1
    done
    if ! answers "http://$registry/v2/"; then
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
if [ -f "$gate" ]; then push s3-lease:gate "$gate"; fi
if [ -f "$gate_p3" ]; then push s3-lease:gate-wasip3 "$gate_p3"; fi


# The guest crate, packed from the repository (its WIT the repository's
# wit/, checked), into a sparse cargo index served as static files.
# Its dependency s3-lease-keep goes beside it (the crates package_guest.sh
# prints, dependencies first; the guest crate last).
crates=$("$root/scripts/package_guest.sh")
crate=$(echo "$crates" | tail -n 1)
# shellcheck disable=SC2086 # one path a line, none with spaces
python3 "$root/scripts/cargo_registry.py" "$registry_dir/cargo" "http://$cargo_registry" $crates
if ! answers "http://$cargo_registry/index/config.json"; then
    python3 -m http.server --bind "${cargo_registry%:*}" --directory "$registry_dir/cargo" \
        "${cargo_registry##*:}" >"$registry_dir/cargo-server.log" 2>&1 3>&- &
    echo $! >"$registry_dir/cargo-pid"
    for _ in $(seq 50); do
        answers "http://$cargo_registry/index/config.json" && break
        sleep 0.1
    done
    if ! answers "http://$cargo_registry/index/config.json"; then
        cat "$registry_dir/cargo-server.log" >&2
        echo "publish_local: the cargo registry did not start at $cargo_registry (log above)" >&2
        exit 1
    fi
    echo "publish_local: started the cargo registry at $cargo_registry (pid $(cat "$registry_dir/cargo-pid"); files in $registry_dir/cargo)"
fi
echo "publish_local: s3-lease-guest $(basename "$crate" .crate | sed 's/^s3-lease-guest-//') <- $crate"

echo "publish_local: published to $registry (wkg) and $cargo_registry (cargo); the lines on stdout point them there"
echo "export WKG_CONFIG_FILE=$registry_dir/wkg-config.toml" >&3
echo "export CARGO_REGISTRIES_S3_LEASE_INDEX=sparse+http://$cargo_registry/index/" >&3

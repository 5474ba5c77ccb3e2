#!/usr/bin/env bash
# What a release publishes, packed as `cargo publish` would pack it, without
# uploading: s3-lease-keep (no dependencies), then s3-lease-host (on keep,
# with the release component inside, checked by its SHA-256 when built),
# then s3-lease-cli (on the host); and the guest crate, for component
# authors (with the contract's WIT inside it). The component packed is setup.sh's own
# build, which the one-step install test builds a second time and finds
# byte for byte the same: so `cargo install s3-lease-cli` from a registry
# embeds exactly what the one-step install from a clone builds.
set -euo pipefail
cd "$(dirname "$0")/.."
# test.sh has just run setup.sh (its component is exported); on its own,
# this runs it.
if [ -z "${S3LEASE_COMPONENT:-}" ] || [ ! -f "$S3LEASE_COMPONENT" ]; then
    source scripts/setup.sh
fi
target="${CARGO_TARGET_DIR:-$PWD/target}"
sum=$(sha256sum "$S3LEASE_COMPONENT" | cut -d' ' -f1)
echo "package: the component is $(wc -c <"$S3LEASE_COMPONENT") bytes, SHA-256 $sum"

mkdir -p host/component
trap 'rm -rf host/component' EXIT
cp "$S3LEASE_COMPONENT" host/component/s3_lease.wasm
echo "$sum" >host/component/s3_lease.wasm.sha256

# --no-verify: verifying would build wasmtime again from the packed
# sources (about 10 minutes on 2 cores); what it would catch, a packed
# file missing, the listing and the component check below catch, and a
# host that builds only with the features the workspace turns on,
# host/tests/unstable_paths.rs.
cargo package --locked --no-verify --allow-dirty -p s3-lease-keep -p s3-lease-host -p s3-lease-cli
for crate in s3-lease-keep s3-lease-host s3-lease-cli; do
    file="$target/package/$crate-0.1.0.crate"
    echo "package: $crate: $(wc -c <"$file") bytes, $(tar -tzf "$file" | wc -l) files"
done
packed=$(tar -xzf "$target/package/s3-lease-host-0.1.0.crate" -O s3-lease-host-0.1.0/component/s3_lease.wasm | sha256sum | cut -d' ' -f1)
if [ "$packed" != "$sum" ]; then
    echo "package: the packed component ($packed) is not setup.sh's ($sum)" >&2
    exit 1
fi
echo "package: the host crate carries setup.sh's component (SHA-256 $sum)"

# The guest crate, with the contract it is made from (the repository's
# wit/, copied in and checked byte for byte: scripts/package_guest.sh).
guest_crate=$(scripts/package_guest.sh | tail -n 1)
echo "package: s3-lease-guest: $(wc -c <"$guest_crate") bytes, $(tar -tzf "$guest_crate" | wc -l) files"

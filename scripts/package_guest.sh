#!/usr/bin/env bash
# Packs the guest crate (s3-lease-guest) as `cargo publish` would, without
# uploading, and prints on stdout the paths of the .crate files a registry
# needs for it, one a line, its dependency first: s3-lease-keep (the
# contract's names, which the guest crate shares with the component and the
# host crate), then the guest crate (progress on stderr).
#
# The crate's bindings read the contract from `wit/` beside its Cargo.toml
# when it is a published crate, and from the repository's `wit/` in the
# workspace (guest/build.rs). So it is packed from a copy of guest/ made
# outside the repository, with the repository's `wit/` copied into it (the
# live guest/ never has a `wit/`, so no build in the workspace can see one),
# and the packed files are checked against the repository's, byte for byte.
# Packed with --no-verify: cargo's verification builds natively, where
# the bindings are not built at all; the check of an author's path
# (scripts/check_fetch_by_name.sh) builds the packed crate for
# wasm32-wasip2 instead, fetched by name from a registry, as an author
# does.
#
# The crate's version is the contract's (guest/tests/contract.rs checks it).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target="${CARGO_TARGET_DIR:-$root/target}"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' guest/Cargo.toml | head -n 1)

staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
cp -r guest "$staging/s3-lease-guest"
# Its path dependency resolves beside it, as in the repository; the packed
# manifest names it by version, and the lock cargo writes into the package
# resolves it to the same sources (a patch above the package: cargo would
# look for it on crates.io, which does not have it).
cp -r keep "$staging/keep"
mkdir "$staging/.cargo"
printf '[patch.crates-io]\ns3-lease-keep = { path = "keep" }\n' >"$staging/.cargo/config.toml"
cp -r wit "$staging/s3-lease-guest/wit"
# A package of its own there (no workspace above it), with the
# repository's lock for the same dependency versions.
cp Cargo.lock "$staging/s3-lease-guest/Cargo.lock"
(cd "$staging/s3-lease-guest" && CARGO_TARGET_DIR="$target" cargo package --no-verify >&2)
crate="$target/package/s3-lease-guest-$version.crate"

# The packed WIT is the repository's, file for file and byte for byte.
unpacked="$staging/unpacked"
mkdir "$unpacked"
tar -xzf "$crate" -C "$unpacked"
packed="$unpacked/s3-lease-guest-$version"
if ! diff -r "$root/wit" "$packed/wit" >&2; then
    echo "package_guest: the packed wit/ is not the repository's (above)" >&2
    exit 1
fi

echo "package_guest: s3-lease-guest $version packed ($(wc -c <"$crate") bytes, $(tar -tzf "$crate" | grep -c '/wit/') WIT files, the repository's)" >&2
# s3-lease-keep, packed from the workspace as scripts/package.sh packs it.
keep_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' keep/Cargo.toml | head -n 1)
CARGO_TARGET_DIR="$target" cargo package --locked --no-verify --allow-dirty -p s3-lease-keep >&2
echo "$target/package/s3-lease-keep-$keep_version.crate"
echo "$crate"

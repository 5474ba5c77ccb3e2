#!/usr/bin/env bash
# Where a renew's client CPU goes: runs host-test's `bench leases` (one
# process holding N leases through one async client, renewing them against
# a SeaweedFS it starts) under `perf record`, then splits the client's
# samples (the server's left out) by where they ran: the kernel (system
# calls, wake-ups, TCP), the host's own code (wasmtime's runtime, tokio,
# hyper, ours), the component's compiled wasm (perf's "[JIT]"), libc.
#
#   ./scripts/profile.sh [LEASES [SECONDS [TTL]]]    (default 300 30 6)
#
# Builds the bench in the release profile with symbols kept, in a target
# directory of its own (target/profile: the first build compiles wasmtime,
# ~15 min on 2 cores). Needs `perf` (Debian: linux-perf).
set -euo pipefail
cd "$(dirname "$0")/.."
leases=${1:-300}
seconds=${2:-30}
ttl=${3:-6}
command -v perf >/dev/null || { echo "profile: perf is not installed (Debian: apt-get install linux-perf)" >&2; exit 1; }
source scripts/setup.sh
echo "profile: building the release bench with symbols (target/profile)"
CARGO_PROFILE_RELEASE_STRIP=false CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
    cargo build --locked --release --target-dir target/profile -p host-test --bin bench
data=target/profile/renew.perf
echo "profile: $leases leases, ttl $ttl s, for $seconds s under perf record"
perf record -F 999 -o "$data" -- target/profile/release/bench leases "$leases" "$seconds" "$ttl" |
    grep -E "CPU per renew|renews:|load"
# The client's threads: ours are named s3-lease-*, tokio's tokio-rt-worker;
# the bench's main thread is `bench`. SeaweedFS (`weed`) is left out.
threads=$(perf report -i "$data" --sort comm --stdio 2>/dev/null |
    awk '$1 ~ /%$/ && $2 ~ /^(s3-lease|tokio-rt|bench)/ {print $2}' | paste -sd, -)
echo
echo "profile: the client's samples, by where they ran (percent of all samples)"
perf report -i "$data" --comm "$threads" --sort dso --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -6
echo
echo "profile: by thread"
perf report -i "$data" --comm "$threads" --sort comm --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -14
echo
echo "profile: the kernel's top symbols, then the host's"
perf report -i "$data" --comm "$threads" --dso '[kernel.kallsyms]' --sort sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -8
perf report -i "$data" --comm "$threads" --dso bench --sort sym --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -20

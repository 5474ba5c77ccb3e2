#!/usr/bin/env bash
# Where a renew's client CPU goes: runs host-test's `bench leases` (one
# process holding N leases through one async client, renewing them against
# a SeaweedFS it starts), attaches `perf record` to it once the hold begins
# (so loading, compiling and acquiring are left out), and splits the
# client's samples (the server's left out) by where they ran: the kernel
# (system calls, wake-ups, TCP on loopback), the component's compiled wasm
# (perf's JIT map), libc, and the host's code by crate (wasmtime's runtime,
# tokio, hyper, std, ours).
#
#   ./scripts/profile.sh [LEASES [SECONDS [TTL]]]    (default 300 30 6)
#
# Builds the bench in the release profile with symbols kept, in a target
# directory of its own (target/profile: the first build compiles wasmtime,
# ~15 min on 2 cores). Needs `perf` (Debian: linux-perf). Attaching perf
# makes context switches dearer: the bench's own CPU per renew, printed
# without perf, is the figure to quote; the split is the profile's.
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
log=target/profile/renew.log
echo "profile: $leases leases, ttl $ttl s; perf attached for the hold's $seconds s, less 2"
target/profile/release/bench leases "$leases" "$((seconds + 2))" "$ttl" >"$log" 2>&1 &
bench=$!
until grep -q "^holding" "$log" 2>/dev/null; do
    kill -0 "$bench" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.2
done
perf record -F 999 -o "$data" -p "$bench" -- sleep "$seconds" >/dev/null 2>&1
wait "$bench"
grep -E "CPU per renew" "$log"
echo
echo "profile: the client's samples (its threads: s3-lease-*, tokio-rt-worker, bench), by where they ran"
perf script -i "$data" -F comm,ip,sym,dso 2>/dev/null | python3 -c '
import collections, re, sys
count, total = collections.Counter(), 0
for line in sys.stdin:
    m = re.match(r"^\s*(\S+)\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
    if not m or not re.match(r"(s3-lease|tokio-rt|bench)", m.group(1)):
        continue
    sym, dso = m.group(2), m.group(3)
    total += 1
    if "kallsyms" in dso:
        where = "kernel"
    elif "JIT" in dso or "perf-" in dso:
        where = "wasm (the component, compiled)"
    elif re.search(r"lib(c|m)\.so|vdso", dso):
        where = "libc"
    else:
        crate = re.match(r"(?:<|&|\*|mut |const |dyn )*([A-Za-z0-9_]+)::", sym)
        crate = crate.group(1) if crate else "other"
        if crate in ("core", "alloc", "std", "hashbrown", "__rustc"):
            crate = "std (allocation, hashing, moves)"
        where = "host: " + crate
    count[where] += 1
for where, n in count.most_common(16):
    print(f"  {100 * n / total:5.1f}%  {where}")
print(f"  ({total} samples)")
'

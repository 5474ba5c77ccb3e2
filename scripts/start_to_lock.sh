#!/usr/bin/env bash
# Start-to-lock of `s3-lease acquire` as a new process, the way a cron job
# or a serverless function starts it: each run a new process and a new
# key, against a SeaweedFS on 127.0.0.1 it starts, timed from spawn to exit
# with the lease printed. Prints min / median / max (ms) per way the
# component is found: compiled at start (no cache), the compile cache
# (warm), a precompiled file with no cache (cold, as installed).
#
#   ./scripts/start_to_lock.sh [RUNS [BINARY...]]    (default 20, target/release/s3-lease)
#
# Builds target/release/s3-lease when no binary is given. The binaries load
# the component S3LEASE_COMPONENT names (setup.sh's), so builds compare.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
shift || true
source scripts/setup.sh
source scripts/seaweedfs.sh
if [ $# -eq 0 ]; then
    echo "start_to_lock: building the release s3-lease"
    cargo build --locked --release -p s3-lease-cli --bin s3-lease
    set -- "${CARGO_TARGET_DIR:-target}/release/s3-lease"
fi
export S3LEASE_BUCKET=start-to-lock
start_local_seaweedfs
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "start_to_lock: $runs runs per row, load $(cut -d' ' -f1 /proc/loadavg)"
for bin in "$@"; do
    "$bin" precompile --out "$scratch/s3-lease.cwasm" >/dev/null
    for way in compiled cached precompiled; do
        "$S3LEASE_PYTHON" - "$bin" "$way" "$runs" "$scratch" <<'PY'
import os, statistics, subprocess, sys, tempfile, time
binary, way, runs, scratch = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
env = dict(os.environ)
env.pop("S3LEASE_PRECOMPILED", None)
cache = tempfile.mkdtemp(dir=scratch)
if way == "cached":
    env["S3LEASE_CACHE_DIR"] = cache
    subprocess.run([binary, "version"], env=env, capture_output=True, check=True)
elif way == "precompiled":
    env["S3LEASE_PRECOMPILED"] = os.path.join(scratch, "s3-lease.cwasm")
times = []
for i in range(runs if way != "compiled" else max(3, runs // 4)):
    if way != "cached":
        # No cache at all: a directory that is new each run.
        env["S3LEASE_CACHE_DIR"] = tempfile.mkdtemp(dir=scratch)
    key = f"start/{way}/{os.getpid()}/{i}"
    started = time.perf_counter()
    done = subprocess.run([binary, "acquire", key, "--ttl", "60s"], env=env, capture_output=True)
    times.append((time.perf_counter() - started) * 1000)
    if done.returncode != 0:
        sys.exit(f"{binary} acquire failed: {done.stderr.decode(errors='replace')[:300]}")
print(f"  {binary}  {way:>11}: min {min(times):6.1f}  median {statistics.median(times):6.1f}  max {max(times):6.1f} ms  ({len(times)} runs)")
PY
    done
done

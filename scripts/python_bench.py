#!/usr/bin/env python3
"""The Python package against the plain boto3 client, in one run (not a
test: it prints figures). Run by scripts/python_bench.sh, in a venv with
the release wheel installed:

    python_bench.py ROUNDS FIXTURES BOTO3_PYTHON

FIXTURES is host-test's package_fixtures (it starts SeaweedFS on loopback);
BOTO3_PYTHON runs scripts/design_bench.py, the design's single-object boto3
client, against the same bucket in the same minutes.

- Per operation, ROUNDS rounds on keys bench-0..7 in turn, as
  design_bench.py does: try-acquire (a key this client released the round
  before), renew, release (the record calls) and inspect (status): p50,
  p99, and this process's CPU (user + system, all threads) per operation.
- Start-to-lock: `import s3_lease`, a client from the environment and one
  lock, as a new process (spawn to exit), with the component precompiled
  (`python -m s3_lease precompile`, S3LEASE_PRECOMPILED, no compile cache)
  and, for comparison, compiled at start (no cache, no precompiled file)
  and from a warm compile cache; beside them the interpreter alone
  (`python -c pass`).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import s3_lease

HERE = Path(__file__).resolve().parent
OPERATIONS = ["try-acquire", "renew", "release", "inspect"]


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[round((len(ordered) - 1) * p)]


def ours(env, rounds):
    client = s3_lease.Client.from_env(key_prefix=f"bench-python/{time.time_ns()}/")
    wall = {n: [] for n in OPERATIONS}
    cpu = {n: 0.0 for n in OPERATIONS}

    def timed(name, call):
        w, c = time.perf_counter(), time.process_time()
        result = call()
        cpu[name] += time.process_time() - c
        wall[name].append(time.perf_counter() - w)
        return result

    for n in range(rounds):
        key = f"bench-{n % 8}"
        lease = timed("try-acquire", lambda: client.try_acquire(key, ttl=60))
        if lease is None:
            sys.exit(f"python_bench: {key} was not free")
        record = lease.detach()
        record = timed("renew", lambda: client.renew_record(record))
        timed("release", lambda: client.release_record(record))
        timed("inspect", lambda: client.status(key))
    client.close()
    return {
        n: {
            "p50_ms": percentile(wall[n], 0.5) * 1000,
            "p99_ms": percentile(wall[n], 0.99) * 1000,
            "cpu_ms": cpu[n] / rounds * 1000,
        }
        for n in OPERATIONS
    }


def boto3(python, s3, rounds):
    out = subprocess.run(
        [python, str(HERE / "design_bench.py"), str(rounds), "--endpoint", s3["url"],
         "--region", s3["region"], "--bucket", s3["bucket"]],
        env={**os.environ, "AWS_ACCESS_KEY_ID": s3["access_key_id"],
             "AWS_SECRET_ACCESS_KEY": s3["secret_access_key"], "AWS_SESSION_TOKEN": ""},
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)


START = (
    "import s3_lease\n"
    "lease = s3_lease.Client.from_env().acquire('start-{n}', ttl=60)\n"
    "assert lease.token > 0\n"
)


def spawn_ms(argv, env):
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def start_to_lock(env, runs):
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        precompiled = os.path.join(tmp, "s3-lease.cwasm")
        s3_lease.precompile(precompiled)
        os.chmod(precompiled, 0o644)
        cache = os.path.join(tmp, "cache")
        kinds = {
            "the interpreter alone (python -c pass)": None,
            "precompiled (S3LEASE_PRECOMPILED, no cache)": {"S3LEASE_PRECOMPILED": precompiled,
                                                           "S3LEASE_CACHE_DIR": ""},
            "warm compile cache": {"S3LEASE_CACHE_DIR": cache},
            "compiled at start (no cache, no precompiled file)": {"S3LEASE_CACHE_DIR": ""},
        }
        # The cache warmed once, outside the figures.
        subprocess.run([sys.executable, "-c", START.format(n="warm")],
                       env={**env, "S3LEASE_CACHE_DIR": cache}, check=True)
        for n, (label, extra) in enumerate(kinds.items()):
            times = []
            count = 5 if "compiled at start" in label else runs
            for r in range(count):
                if extra is None:
                    times.append(spawn_ms([sys.executable, "-c", "pass"], env))
                else:
                    script = START.format(n=f"{n}-{r}-{time.time_ns()}")
                    times.append(spawn_ms([sys.executable, "-c", script], {**env, **extra}))
            rows[label] = (min(times), statistics.median(times), max(times))
    return rows


def main(rounds, fixtures, boto3_python):
    servers = subprocess.Popen([fixtures, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    servers.stdin.write("s3\n")
    servers.stdin.flush()
    s3 = json.loads(servers.stdout.readline())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3LEASE_"))}
    env.update(S3LEASE_BUCKET=s3["bucket"], AWS_ENDPOINT_URL=s3["url"], AWS_REGION=s3["region"],
               AWS_ACCESS_KEY_ID=s3["access_key_id"], AWS_SECRET_ACCESS_KEY=s3["secret_access_key"],
               S3LEASE_PREFIX=f"bench-start/{time.time_ns()}/")
    if "S3LEASE_COMPONENT" in os.environ:
        env["S3LEASE_COMPONENT"] = os.environ["S3LEASE_COMPONENT"]
    os.environ.update(env)
    for name in [k for k in os.environ if k.startswith(("AWS_", "S3LEASE_")) and k not in env]:
        del os.environ[name]
    ours(env, 20)  # warm-up: connections, the cache
    python_figures = ours(env, rounds)
    boto3_figures = boto3(boto3_python, s3, rounds)
    print(f"python_bench: {rounds} rounds against SeaweedFS on loopback; load {os.getloadavg()[0]:.1f}")
    print("| operation | s3_lease p50 / p99 | cpu | boto3 p50 / p99 | cpu | s3_lease ÷ boto3, p50 | cpu |")
    print("|---|---|---|---|---|---|---|")
    for n in OPERATIONS:
        o, b = python_figures[n], boto3_figures[n]
        print(f"| {n} | {o['p50_ms']:.2f} / {o['p99_ms']:.2f} ms | {o['cpu_ms']:.3f} ms "
              f"| {b['p50_ms']:.2f} / {b['p99_ms']:.2f} ms | {b['cpu_ms']:.3f} ms "
              f"| {o['p50_ms'] / b['p50_ms']:.2f} | {o['cpu_ms'] / b['cpu_ms']:.2f} |")
    print()
    print("| start-to-lock, a new process (spawn to exit) | min / median / max |")
    print("|---|---:|")
    for label, (lo, mid, hi) in start_to_lock(env, 20).items():
        print(f"| {label} | {lo:.1f} / {mid:.1f} / {hi:.1f} ms |")
    servers.stdin.close()
    servers.wait()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3])

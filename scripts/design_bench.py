#!/usr/bin/env python3
"""The boto3 client of the single-object design (scripts/design_client.py),
timed per operation for the benchmark (host-test's `bench` runs this).

ROUNDS times, on keys bench-0..7 in turn: try-acquire (GET, then a
conditional PUT), renew (PUT If-Match), release (PUT If-Match, expires_at 0)
and inspect (GET). For each operation it prints one JSON object on stdout:

    {"try-acquire": {"p50_ms": 2.1, "p99_ms": 4.0, "cpu_ms": 1.3}, ...}

where cpu_ms is this process's CPU time (user + system) per operation,
averaged over all rounds. One boto3 client, so keep-alive connections are
pooled as boto3 does by default. Connection settings as design_client.py.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import design_client  # noqa: E402


def percentile(samples, p):
    ordered = sorted(samples)
    return ordered[round((len(ordered) - 1) * p)]


def main(argv):
    rounds = int(argv[0]) if argv else 200
    # design_client's options, with a key it requires but we do not use.
    args = design_client.parse_args(["--key", "unused"] + argv[1:])
    s3 = design_client.client(args)
    prefix = f"bench-boto3/{time.time_ns()}/"
    names = ["try-acquire", "renew", "release", "inspect"]
    wall = {n: [] for n in names}
    cpu = {n: 0.0 for n in names}

    def timed(name, call):
        w, c = time.perf_counter(), time.process_time()
        result = call()
        cpu[name] += time.process_time() - c
        wall[name].append(time.perf_counter() - w)
        return result

    for n in range(rounds):
        lock = design_client.DesignLock(s3, args.bucket, f"{prefix}bench-{n % 8}", 60)
        won = timed("try-acquire", lock.try_acquire)
        if won is None:
            sys.exit(f"design_bench: {lock.key} was not free")
        token, etag = won
        etag = timed("renew", lambda: lock.renew(token, etag))
        timed("release", lambda: lock.release(token, etag))
        timed("inspect", lambda: s3.get_object(Bucket=args.bucket, Key=lock.key)["Body"].read())

    print(
        json.dumps(
            {
                n: {
                    "p50_ms": percentile(wall[n], 0.5) * 1000,
                    "p99_ms": percentile(wall[n], 0.99) * 1000,
                    "cpu_ms": cpu[n] / rounds * 1000,
                }
                for n in names
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])

#!/usr/bin/env python3
"""An independent client of the single-object S3 lock design, in boto3.

Written from the design alone (one JSON object per lock, compare-and-swap
with If-None-Match / If-Match), not from s3-lease's code, so that the
interop test has a second implementation to contend with:

    {"expires_at": <float seconds since the epoch>, "token": <int>}

- acquire: GET the object. Absent: PUT If-None-Match '*' with token 1.
  expires_at in the past (0 = released): PUT If-Match <etag> with token + 1.
  Live: back off. A 412 (or 409) on the PUT: another writer won the race.
- renew: PUT If-Match <our etag>, same token, a later expires_at.
- release: PUT If-Match <our etag>, same token, expires_at 0 (never DELETE:
  the token must survive).

Only expires_at and token are read; whatever else another client stores in
the object is ignored (and dropped when this client writes it).

THREADS real threads contend for the lock for DURATION seconds. For every
grant one JSON line goes to stdout:

    {"thread": 0, "token": 7, "acquired": <t>, "released": <t>,
     "renewed": true, "release": "ok"}

where [acquired, released] is the interval the thread believed it held the
lock, on this machine's wall clock, taken conservatively: `acquired` after
the winning PUT's reply, `released` before the release PUT is sent. A renew
or release that fails is reported in "renew_error" / "release"; unexpected
errors also go to stderr, and make the exit status 1.

With --abandon, each thread stops at its first grant without renewing or
releasing it, as a holder that crashed would, and reports it as

    {"thread": 0, "token": 7, "acquired": <t>, "expires_at": <t>,
     "abandoned": true}

where expires_at is what it wrote: the lease is left to expire.

Connection settings come from the options or the environment:
AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
AWS_REGION, S3LEASE_TEST_BUCKET; the lock's object key from --key.
"""

import argparse
import json
import os
import random
import sys
import threading
import time

import boto3
import botocore.config
import botocore.exceptions

# Conditional-write losses: another writer changed the object first.
LOST = (409, 412)


def status_of(error):
    return error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")


class DesignLock:
    """One client's view of the lock object: acquire, renew, release."""

    def __init__(self, s3, bucket, key, ttl):
        self.s3 = s3
        self.bucket = bucket
        self.key = key
        self.ttl = ttl
        # The expires_at of this client's last write.
        self.expires_at = None

    def _put(self, expires_at, token, condition):
        body = json.dumps({"expires_at": expires_at, "token": token})
        reply = self.s3.put_object(
            Bucket=self.bucket,
            Key=self.key,
            Body=body.encode(),
            ContentType="application/json",
            **condition,
        )
        self.expires_at = expires_at
        return reply["ETag"]

    def try_acquire(self):
        """(token, etag) if this call took the lock, else None."""
        try:
            current = self.s3.get_object(Bucket=self.bucket, Key=self.key)
        except botocore.exceptions.ClientError as e:
            if status_of(e) != 404:
                raise
            current = None
        if current is None:
            token = 1
            condition = {"IfNoneMatch": "*"}
        else:
            data = json.loads(current["Body"].read())
            expires_at = float(data["expires_at"])
            previous = int(data.get("token", 0))
            if time.time() <= expires_at:
                return None  # live: someone holds it
            token = previous + 1
            condition = {"IfMatch": current["ETag"]}
        try:
            etag = self._put(time.time() + self.ttl, token, condition)
        except botocore.exceptions.ClientError as e:
            if status_of(e) in LOST:
                return None
            raise
        return token, etag

    def renew(self, token, etag):
        """The new etag; raises if the lock was lost."""
        return self._put(time.time() + self.ttl, token, {"IfMatch": etag})

    def release(self, token, etag):
        self._put(0, token, {"IfMatch": etag})


class Output:
    """Whole JSON lines on stdout from many threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.errors = 0
        self.acquire_errors = 0
        self.attempts = 0
        self.grants = 0

    def line(self, record):
        text = json.dumps(record)
        with self.lock:
            self.grants += 1
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    def error(self, thread, what, fatal=True):
        with self.lock:
            if fatal:
                self.errors += 1
            else:
                self.acquire_errors += 1
            sys.stderr.write(f"design_client thread {thread}: {what}\n")
            sys.stderr.flush()


def contend(thread, lock, args, out, rng):
    start_at = args.start_at if args.start_at is not None else time.time()
    pause = start_at - time.time()
    if pause > 0:
        time.sleep(pause)
    deadline = time.monotonic() + args.duration
    attempts = 0
    # Bounded twice: by the deadline, and by a cap on attempts.
    while time.monotonic() < deadline and attempts < args.max_attempts:
        attempts += 1
        try:
            won = lock.try_acquire()
        except Exception as e:  # noqa: BLE001 - any failure: not acquired
            out.error(thread, f"acquire: {type(e).__name__}: {e}", fatal=False)
            won = None
        if won is None:
            time.sleep(rng.uniform(args.backoff_min, args.backoff_max) / 1000)
            continue
        token, etag = won
        acquired = time.time()
        record = {"thread": thread, "token": token, "acquired": acquired}
        if args.abandon:
            record.update(expires_at=lock.expires_at, abandoned=True)
            out.line(record)
            break
        hold = rng.uniform(args.hold_min, args.hold_max) / 1000
        renewed = False
        if rng.random() < args.renew_chance:
            time.sleep(hold / 2)
            try:
                etag = lock.renew(token, etag)
                renewed = True
            except Exception as e:  # noqa: BLE001
                record["renew_error"] = f"{type(e).__name__}: {e}"
                out.error(thread, f"renew of token {token}: {e}")
            time.sleep(hold / 2)
        else:
            time.sleep(hold)
        record["renewed"] = renewed
        record["released"] = time.time()
        try:
            lock.release(token, etag)
            record["release"] = "ok"
        except Exception as e:  # noqa: BLE001
            record["release"] = f"{type(e).__name__}: {e}"
            out.error(thread, f"release of token {token}: {e}")
        out.line(record)
        time.sleep(rng.uniform(args.backoff_min, args.backoff_max) / 1000)
    with out.lock:
        out.attempts += attempts


def client(args):
    config = botocore.config.Config(
        region_name=args.region,
        signature_version="s3v4",
        s3={"addressing_style": "path"},
        connect_timeout=10,
        read_timeout=60,
        # One attempt only: a conditional PUT retried after a lost reply
        # could be refused by its own first attempt and be misread.
        retries={"total_max_attempts": 1, "mode": "standard"},
        # No extra checksum headers unless an operation requires them.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        max_pool_connections=4,
    )
    # A session per thread: boto3 sessions are not thread-safe.
    session = boto3.session.Session(
        aws_access_key_id=args.access_key_id,
        aws_secret_access_key=args.secret_access_key,
        aws_session_token=args.session_token or None,
        region_name=args.region,
    )
    return session.client("s3", endpoint_url=args.endpoint, config=config)


def parse_args(argv):
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--endpoint", default=env("AWS_ENDPOINT_URL"))
    p.add_argument("--access-key-id", default=env("AWS_ACCESS_KEY_ID"))
    p.add_argument("--secret-access-key", default=env("AWS_SECRET_ACCESS_KEY"))
    p.add_argument("--session-token", default=env("AWS_SESSION_TOKEN"))
    p.add_argument("--region", default=env("AWS_REGION", "us-east-1"))
    p.add_argument("--bucket", default=env("S3LEASE_TEST_BUCKET"))
    p.add_argument("--key", required=True, help="object key of the lock")
    p.add_argument("--threads", type=int, default=3)
    p.add_argument("--duration", type=float, default=8.0, help="seconds")
    p.add_argument(
        "--start-at", type=float, help="wall-clock time (epoch seconds) to start at"
    )
    p.add_argument("--ttl", type=float, default=5.0, help="seconds")
    p.add_argument("--hold-min", type=float, default=20.0, help="ms")
    p.add_argument("--hold-max", type=float, default=100.0, help="ms")
    p.add_argument("--backoff-min", type=float, default=5.0, help="ms")
    p.add_argument("--backoff-max", type=float, default=30.0, help="ms")
    p.add_argument("--renew-chance", type=float, default=0.5)
    p.add_argument("--max-attempts", type=int, default=100_000, help="per thread")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument(
        "--abandon",
        action="store_true",
        help="stop at the first grant without renewing or releasing it",
    )
    args = p.parse_args(argv)
    for name in ("endpoint", "access_key_id", "secret_access_key", "bucket"):
        if not getattr(args, name):
            p.error(f"--{name.replace('_', '-')} (or its environment variable) is required")
    if args.duration > 600 or args.threads < 1 or args.threads > 64:
        p.error("--duration at most 600 s, --threads 1..64")
    return args


def main(argv):
    args = parse_args(argv)
    seed = args.seed if args.seed is not None else time.time_ns()
    sys.stderr.write(f"design_client: seed {seed}\n")
    out = Output()
    threads = []
    for n in range(args.threads):
        lock = DesignLock(client(args), args.bucket, args.key, args.ttl)
        rng = random.Random(f"{seed}-{n}")
        threads.append(
            threading.Thread(
                target=contend, args=(n, lock, args, out, rng), name=f"design-{n}"
            )
        )
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sys.stderr.write(
        f"design_client: {out.attempts} attempts, {out.grants} grants, "
        f"{out.acquire_errors} failed attempts, {out.errors} errors\n"
    )
    return 1 if out.errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""An independent client of the single-object lock design on Google Cloud
Storage, in Google's own Python client (google-cloud-storage).

Written from the design alone (one JSON object per lock, compare-and-swap
on the object's generation), not from s3-lease's code, so that the interop
test has a second implementation to contend with:

    {"expires_at": <float seconds since the epoch>, "token": <int>}

- acquire: download the object (its generation comes with it). Absent:
  upload with if_generation_match=0 (create only) and token 1. expires_at
  in the past (0 = released): upload with if_generation_match=<generation>
  and token + 1. Live: back off. A 412 (PreconditionFailed): another
  writer won.
- renew: upload with if_generation_match=<our generation>, same token, a
  later expires_at.
- release: the same with expires_at 0 (never delete: the token must
  survive).

Commands:

- `contend`: THREADS threads contend for DURATION seconds; for every grant
  one JSON line goes to stdout, {"thread", "token", "acquired", "released",
  "renewed", "release"}, the interval taken conservatively on this
  machine's wall clock (after the winning reply, before the release is
  sent). Unexpected errors go to stderr and make the exit status 1.
- `read`: one JSON line, {"generation", "body"} (null for both when absent).
- `write BODY --if-generation-match G`: one conditional upload; one JSON
  line, {"outcome": "written", "generation"} or {"outcome":
  "precondition-failed"}.
- `delete --if-generation-match G`: one conditional delete; {"outcome":
  "deleted"} or {"outcome": "precondition-failed"}.

The endpoint comes from STORAGE_EMULATOR_HOST (the client's own variable;
anonymous credentials, as an emulator takes); the bucket and object from
--bucket and --object.
"""

import argparse
import json
import random
import sys
import threading
import time

from google.api_core.exceptions import NotFound, PreconditionFailed
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage


def bucket_of(args):
    client = storage.Client(project="s3-lease-test", credentials=AnonymousCredentials())
    return client.bucket(args.bucket)


class DesignLock:
    def __init__(self, bucket, name, ttl):
        self.bucket = bucket
        self.name = name
        self.ttl = ttl

    def _put(self, expires_at, token, generation):
        """Writes the record if the object is still at `generation` (0: absent);
        its new generation."""
        blob = self.bucket.blob(self.name)
        body = json.dumps({"expires_at": expires_at, "token": token})
        blob.upload_from_string(
            body, content_type="application/json", if_generation_match=generation
        )
        return blob.generation

    def try_acquire(self):
        """(token, generation) if this call took the lock, else None."""
        blob = self.bucket.blob(self.name)
        try:
            data = json.loads(blob.download_as_bytes())
            generation = blob.generation
        except NotFound:
            data, generation = None, 0
        if data is None:
            token = 1
        else:
            if time.time() <= float(data["expires_at"]):
                return None  # live: someone holds it
            token = int(data.get("token", 0)) + 1
        try:
            return token, self._put(time.time() + self.ttl, token, generation)
        except PreconditionFailed:
            return None

    def renew(self, token, generation):
        return self._put(time.time() + self.ttl, token, generation)

    def release(self, token, generation):
        self._put(0, token, generation)


def contend_thread(thread, lock, args, out, errors, rng):
    pause = args.start_at - time.time()
    if pause > 0:
        time.sleep(pause)
    deadline = time.monotonic() + args.duration
    while time.monotonic() < deadline:
        try:
            won = lock.try_acquire()
        except Exception as e:  # noqa: BLE001 - not acquired
            sys.stderr.write(f"thread {thread}: acquire: {type(e).__name__}: {e}\n")
            won = None
        if won is None:
            time.sleep(rng.uniform(args.backoff_min, args.backoff_max) / 1000)
            continue
        token, generation = won
        record = {"thread": thread, "token": token, "acquired": time.time()}
        hold = rng.uniform(args.hold_min, args.hold_max) / 1000
        record["renewed"] = False
        if rng.random() < 0.5:
            time.sleep(hold / 2)
            try:
                generation = lock.renew(token, generation)
                record["renewed"] = True
            except Exception as e:  # noqa: BLE001
                record["renew_error"] = f"{type(e).__name__}: {e}"
                errors.append(record["renew_error"])
            time.sleep(hold / 2)
        else:
            time.sleep(hold)
        record["released"] = time.time()
        try:
            lock.release(token, generation)
            record["release"] = "ok"
        except Exception as e:  # noqa: BLE001
            record["release"] = f"{type(e).__name__}: {e}"
            errors.append(record["release"])
        with out:
            sys.stdout.write(json.dumps(record) + "\n")
            sys.stdout.flush()
        time.sleep(rng.uniform(args.backoff_min, args.backoff_max) / 1000)


def contend(args):
    out, errors, threads = threading.Lock(), [], []
    for n in range(args.threads):
        # A client each, as separate processes would have.
        lock = DesignLock(bucket_of(args), args.object, args.ttl)
        rng = random.Random(f"{args.seed}-{n}")
        threads.append(
            threading.Thread(target=contend_thread, args=(n, lock, args, out, errors, rng))
        )
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        sys.stderr.write(f"gcs_design_client: {e}\n")
    return 1 if errors else 0


def read(args):
    blob = bucket_of(args).blob(args.object)
    try:
        body = blob.download_as_bytes().decode()
        print(json.dumps({"generation": blob.generation, "body": body}))
    except NotFound:
        print(json.dumps({"generation": None, "body": None}))
    return 0


def write(args):
    blob = bucket_of(args).blob(args.object)
    try:
        blob.upload_from_string(
            args.body, content_type="application/json", if_generation_match=args.if_generation_match
        )
        print(json.dumps({"outcome": "written", "generation": blob.generation}))
    except PreconditionFailed:
        print(json.dumps({"outcome": "precondition-failed"}))
    return 0


def delete(args):
    blob = bucket_of(args).blob(args.object)
    try:
        blob.delete(if_generation_match=args.if_generation_match)
        print(json.dumps({"outcome": "deleted"}))
    except PreconditionFailed:
        print(json.dumps({"outcome": "precondition-failed"}))
    return 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bucket", required=True)
    p.add_argument("--object", required=True)
    commands = p.add_subparsers(dest="command", required=True)
    c = commands.add_parser("contend")
    c.add_argument("--threads", type=int, default=3)
    c.add_argument("--duration", type=float, default=6.0)
    c.add_argument("--start-at", type=float, default=time.time())
    c.add_argument("--ttl", type=float, default=5.0)
    c.add_argument("--hold-min", type=float, default=20.0)
    c.add_argument("--hold-max", type=float, default=100.0)
    c.add_argument("--backoff-min", type=float, default=5.0)
    c.add_argument("--backoff-max", type=float, default=30.0)
    c.add_argument("--seed", type=int, default=0)
    commands.add_parser("read")
    w = commands.add_parser("write")
    w.add_argument("body")
    w.add_argument("--if-generation-match", type=int, required=True)
    d = commands.add_parser("delete")
    d.add_argument("--if-generation-match", type=int, required=True)
    args = p.parse_args(argv)
    return {"contend": contend, "read": read, "write": write, "delete": delete}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

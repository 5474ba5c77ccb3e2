#!/usr/bin/env python3
"""An independent client of the single-object lock design on Azure Blob
Storage, in Microsoft's own SDK (azure-storage-blob).

Written from the design alone (one JSON blob per lock, compare-and-swap with
If-None-Match / If-Match), not from s3-lease's code, so that the interop
test has a second implementation, and a second Shared Key signer, to
contend with:

    {"expires_at": <float seconds since the epoch>, "token": <int>}

- acquire: Get Blob. Absent: Put Blob with If-None-Match '*' (the SDK's
  `overwrite=False`) and token 1. expires_at in the past (0 = released):
  Put Blob with If-Match <etag> and token + 1. Live: back off. A 409
  (BlobAlreadyExists) or 412 (ConditionNotMet): another writer won.
- renew: Put Blob If-Match <our etag>, same token, a later expires_at.
- release: Put Blob If-Match <our etag>, same token, expires_at 0 (never
  Delete Blob: the token must survive).

THREADS threads contend for DURATION seconds; for every grant one JSON line
goes to stdout, {"thread", "token", "acquired", "released", "renewed",
"release"}, the interval taken conservatively on this machine's wall clock
(after the winning reply, before the release is sent). Unexpected errors go
to stderr and make the exit status 1.

The account comes from AZURE_STORAGE_CONNECTION_STRING; the container and
blob from --container and --blob.
"""

import argparse
import json
import os
import random
import sys
import threading
import time

from azure.core import MatchConditions
from azure.core.exceptions import (
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)
from azure.storage.blob import BlobClient, ContentSettings

JSON = ContentSettings(content_type="application/json")


class DesignLock:
    def __init__(self, blob, ttl):
        self.blob = blob
        self.ttl = ttl

    def _put(self, expires_at, token, etag):
        body = json.dumps({"expires_at": expires_at, "token": token}).encode()
        if etag is None:
            reply = self.blob.upload_blob(body, overwrite=False, content_settings=JSON)
        else:
            reply = self.blob.upload_blob(
                body,
                overwrite=True,
                etag=etag,
                match_condition=MatchConditions.IfNotModified,
                content_settings=JSON,
            )
        return reply["etag"]

    def try_acquire(self):
        """(token, etag) if this call took the lock, else None."""
        try:
            download = self.blob.download_blob()
            data = json.loads(download.readall())
            etag = download.properties.etag
        except ResourceNotFoundError:
            data, etag = None, None
        if data is None:
            token = 1
        else:
            if time.time() <= float(data["expires_at"]):
                return None  # live: someone holds it
            token = int(data.get("token", 0)) + 1
        try:
            return token, self._put(time.time() + self.ttl, token, etag)
        except (ResourceExistsError, ResourceModifiedError):
            return None

    def renew(self, token, etag):
        return self._put(time.time() + self.ttl, token, etag)

    def release(self, token, etag):
        self._put(0, token, etag)


def contend(thread, lock, args, out, errors, rng):
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
        token, etag = won
        record = {"thread": thread, "token": token, "acquired": time.time()}
        hold = rng.uniform(args.hold_min, args.hold_max) / 1000
        record["renewed"] = False
        if rng.random() < 0.5:
            time.sleep(hold / 2)
            try:
                etag = lock.renew(token, etag)
                record["renewed"] = True
            except Exception as e:  # noqa: BLE001
                record["renew_error"] = f"{type(e).__name__}: {e}"
                errors.append(record["renew_error"])
            time.sleep(hold / 2)
        else:
            time.sleep(hold)
        record["released"] = time.time()
        try:
            lock.release(token, etag)
            record["release"] = "ok"
        except Exception as e:  # noqa: BLE001
            record["release"] = f"{type(e).__name__}: {e}"
            errors.append(record["release"])
        with out:
            sys.stdout.write(json.dumps(record) + "\n")
            sys.stdout.flush()
        time.sleep(rng.uniform(args.backoff_min, args.backoff_max) / 1000)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--container", required=True)
    p.add_argument("--blob", required=True)
    p.add_argument("--threads", type=int, default=3)
    p.add_argument("--duration", type=float, default=6.0)
    p.add_argument("--start-at", type=float, default=time.time())
    p.add_argument("--ttl", type=float, default=5.0)
    p.add_argument("--hold-min", type=float, default=20.0)
    p.add_argument("--hold-max", type=float, default=100.0)
    p.add_argument("--backoff-min", type=float, default=5.0)
    p.add_argument("--backoff-max", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    connection = os.environ["AZURE_STORAGE_CONNECTION_STRING"]
    out, errors, threads = threading.Lock(), [], []
    for n in range(args.threads):
        blob = BlobClient.from_connection_string(connection, args.container, args.blob)
        rng = random.Random(f"{args.seed}-{n}")
        lock = DesignLock(blob, args.ttl)
        threads.append(threading.Thread(target=contend, args=(n, lock, args, out, errors, rng)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        sys.stderr.write(f"azure_design_client: {e}\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

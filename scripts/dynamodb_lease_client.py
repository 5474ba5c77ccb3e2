#!/usr/bin/env python3
"""A client of the dynamodb-lease design, in boto3.

Written from the design alone (docs/protocol.md, "The dynamodb-lease
design"), not from s3-lease's code, so the interop test has a second implementation sharing
one table with ours. The table has `key` (S, hash key), `lease_expiry`
(N, the TTL attribute) and `lease_version` (S):

- acquire: PutItem key, a new unique lease_version, lease_expiry = now +
  ttl seconds, on condition that the item does not exist yet;
- extend: UpdateItem key, a new lease_version and lease_expiry, on
  condition that lease_version is still the previous one;
- drop: DeleteItem key, on condition that lease_version is the current one.

One action per run, its outcome as one JSON line on stdout:

    {"ok": true, "version": "...", "expiry": 1700000060}
    {"ok": false, "code": "ConditionalCheckFailedException"}

    dynamodb_lease_client.py --endpoint URL --table T acquire KEY --ttl 60
    dynamodb_lease_client.py --endpoint URL --table T extend KEY --version V --ttl 60
    dynamodb_lease_client.py --endpoint URL --table T drop KEY --version V

Credentials and region from the usual AWS variables (any keys work on
dynalite).
"""

import argparse
import json
import os
import sys
import time
import uuid

import boto3
import botocore.exceptions


def client(args):
    return boto3.client(
        "dynamodb",
        endpoint_url=args.endpoint,
        region_name=os.environ.get("AWS_REGION", "us-east-1"),
    )


def acquire(db, args):
    version = str(uuid.uuid4())
    expiry = int(time.time() + args.ttl)
    db.put_item(
        TableName=args.table,
        Item={
            "key": {"S": args.key},
            "lease_version": {"S": version},
            "lease_expiry": {"N": str(expiry)},
        },
        ConditionExpression="attribute_not_exists(#k)",
        ExpressionAttributeNames={"#k": "key"},
    )
    return {"ok": True, "version": version, "expiry": expiry}


def extend(db, args):
    version = str(uuid.uuid4())
    expiry = int(time.time() + args.ttl)
    db.update_item(
        TableName=args.table,
        Key={"key": {"S": args.key}},
        UpdateExpression="SET lease_version = :new, lease_expiry = :expiry",
        ConditionExpression="lease_version = :previous",
        ExpressionAttributeValues={
            ":new": {"S": version},
            ":expiry": {"N": str(expiry)},
            ":previous": {"S": args.version},
        },
    )
    return {"ok": True, "version": version, "expiry": expiry}


def drop(db, args):
    db.delete_item(
        TableName=args.table,
        Key={"key": {"S": args.key}},
        ConditionExpression="lease_version = :current",
        ExpressionAttributeValues={":current": {"S": args.version}},
    )
    return {"ok": True}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--endpoint", default=os.environ.get("AWS_ENDPOINT_URL_DYNAMODB"))
    p.add_argument("--table", required=True)
    p.add_argument("action", choices=["acquire", "extend", "drop"])
    p.add_argument("key")
    p.add_argument("--version")
    p.add_argument("--ttl", type=float, default=60.0, help="seconds")
    args = p.parse_args(argv)
    db = client(args)
    action = {"acquire": acquire, "extend": extend, "drop": drop}[args.action]
    try:
        outcome = action(db, args)
    except botocore.exceptions.ClientError as e:
        outcome = {"ok": False, "code": e.response.get("Error", {}).get("Code", "")}
    print(json.dumps(outcome))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

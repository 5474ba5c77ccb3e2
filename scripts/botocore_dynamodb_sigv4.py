#!/usr/bin/env python3
"""Signs DynamoDB requests with botocore's SigV4Auth, for the cross-check in
tests/sigv4_dynamodb_botocore.rs.

Reads a JSON list of requests on stdin, each as s3-lease built it before
signing: method, url, headers (name, value) without the ones signing adds,
the body in base64, the credentials, the region and the signing time (unix
seconds). Signs each with botocore's SigV4Auth(credentials, "dynamodb",
region), the clock pinned to that time, and prints the JSON list of the
Authorization headers it made, in order.
"""

import base64
import datetime
import json
import sys

from botocore.auth import SIGV4_TIMESTAMP, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def sign(case):
    body = base64.b64decode(case["body_b64"])
    headers = {name: value for name, value in case["headers"]}
    request = AWSRequest(method=case["method"], url=case["url"], data=body, headers=headers)
    creds = Credentials(case["access_key_id"], case["secret_access_key"], case["session_token"])
    auth = SigV4Auth(creds, "dynamodb", case["region"])
    # add_auth, with get_current_datetime() replaced by the case's time.
    stamp = datetime.datetime.fromtimestamp(case["unix_seconds"], tz=datetime.timezone.utc)
    request.context["timestamp"] = stamp.strftime(SIGV4_TIMESTAMP)
    auth._modify_request_before_signing(request)
    canonical_request = auth.canonical_request(request)
    string_to_sign = auth.string_to_sign(request, canonical_request)
    signature = auth.signature(string_to_sign, request)
    auth._inject_signature_to_request(request, signature)
    return request.headers["Authorization"]


def main():
    cases = json.load(sys.stdin)
    json.dump([sign(case) for case in cases], sys.stdout)


if __name__ == "__main__":
    main()

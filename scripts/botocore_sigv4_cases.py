#!/usr/bin/env python3
"""Generate S3 SigV4 test cases signed by botocore, as one JSON array on stdout.

Usage: botocore_sigv4_cases.py [SEED] [COUNT]   (defaults: 20240229, 400)

Each case holds the inputs of a request (method, host, bucket-relative key,
raw query pairs, extra headers, body as base64, credentials, region, unix
time) and what botocore's S3SigV4Auth made of it with the timestamp pinned:
the path and x-amz-content-sha256 it signed, the signed header names, the
canonical request, the string to sign and the Authorization header.

`tests/sigv4_botocore.rs` runs this and checks `s3_lease::sigv4::sign` gives
the same Authorization for every case. Needs botocore (see scripts/test.sh,
which installs the venv in .venv).
"""

import argparse
import base64
import datetime
import hashlib
import json
import random
import sys
from urllib.parse import quote, urlsplit

try:
    import botocore
    from botocore.auth import SIGV4_TIMESTAMP, S3SigV4Auth, _host_from_url
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError as err:  # pragma: no cover - environment problem
    sys.stderr.write(
        f"botocore is not importable ({err}); run scripts/test.sh to install the venv\n"
    )
    sys.exit(3)

DEFAULT_SEED = 20240229
DEFAULT_COUNT = 400

# (host, path-style?) -- path-style hosts put /bucket/ before the key.
HOSTS = [
    ("127.0.0.1:8333", True),
    ("localhost:9000", True),
    ("bucket.s3.us-east-1.amazonaws.com", False),
]
BUCKETS = ["bucket", "my-bucket", "locks.example", "b123"]
METHODS = ["GET", "PUT", "DELETE", "HEAD", "POST"]
REGIONS = ["us-east-1", "eu-west-1", "auto"]

# Pieces an object key is made of: plain ASCII, plus everything that needs
# (or notably does not need) percent-encoding.
KEY_PLAIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._"
KEY_SPECIAL = [
    " ", "  ", "é", "ሴ", "😀", "🔒", "+", "~", "=", "&", "?", "%", "%20", "$",
    "!", "'", "(", ")", "*", ",", ":", "@", ";", "#", "[", "]", "ü", "中文",
]
QUERY_SPECIAL = [" ", "é", "ሴ", "😀", "+", "=", "/", "&", "%", "~", "*", "'", "ß"]

# Secrets and tokens use the base64 alphabet, so `/`, `+` and `=` show up.
B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
UPPER_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

# Timestamps that stress the date arithmetic, then random ones.
SPECIAL_TIMES = [
    0,  # 1970-01-01T00:00:00Z
    951782400,  # 2000-02-29 (leap year divisible by 400)
    1440938160,  # the AWS docs example day (2015-08-30T12:36:00Z)
    1709164800,  # 2024-02-29T00:00:00Z
    1709251199,  # 2024-02-29T23:59:59Z
    1735689599,  # 2024-12-31T23:59:59Z
    4107542399,  # 2100-02-28T23:59:59Z (2100 is not a leap year)
    4107542400,  # 2100-03-01T00:00:00Z
]


def rand_segment(rng, allow_special=True):
    parts = []
    for _ in range(rng.randint(1, 6)):
        if allow_special and rng.random() < 0.4:
            parts.append(rng.choice(KEY_SPECIAL))
        else:
            parts.append("".join(rng.choice(KEY_PLAIN) for _ in range(rng.randint(1, 8))))
    return "".join(parts)


def rand_key(rng):
    r = rng.random()
    if r < 0.05:
        return ""  # bucket-level request (e.g. ListObjectsV2)
    if r < 0.25:
        # Plain ASCII lock keys, as the library writes them.
        return "locks/" + "".join(rng.choice(KEY_PLAIN) for _ in range(rng.randint(1, 20)))
    segs = [rand_segment(rng, rng.random() < 0.85) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.1:
        segs.insert(rng.randint(0, len(segs)), "")  # empty segment: `a//b`
    key = "/".join(segs)
    if rng.random() < 0.05:
        key = "/" + key  # leading slash kept as is by S3 (no normalization)
    if rng.random() < 0.1:
        key += "/"
    if rng.random() < 0.05:
        key += rng.choice(["/./x", "/../x", "/."])  # dot segments: not normalized either
    return key


def rand_query_value(rng):
    parts = []
    for _ in range(rng.randint(0, 5)):
        if rng.random() < 0.4:
            parts.append(rng.choice(QUERY_SPECIAL))
        else:
            parts.append("".join(rng.choice(KEY_PLAIN) for _ in range(rng.randint(1, 6))))
    return "".join(parts)


def rand_query(rng):
    """Raw (unencoded) query pairs; `("acl", "")` is a bare `?acl`."""
    if rng.random() < 0.5:
        return []
    pairs = []
    kind = rng.random()
    if kind < 0.4:
        pairs.append(("list-type", "2"))
        if rng.random() < 0.8:
            pairs.append(("prefix", rand_query_value(rng)))
        if rng.random() < 0.4:
            pairs.append(("start-after", rand_query_value(rng)))
        if rng.random() < 0.3:
            pairs.append(("delimiter", rng.choice(["/", "+", " ", "é"])))
        if rng.random() < 0.3:
            pairs.append(("max-keys", str(rng.randint(0, 1000))))
        if rng.random() < 0.2:
            pairs.append(
                ("continuation-token", "".join(rng.choice(B64_ALPHABET) for _ in range(24)) + "==")
            )
    elif kind < 0.55:
        pairs.append((rng.choice(["acl", "uploads", "delete", "tagging", "versioning"]), ""))
    elif kind < 0.7:
        pairs.append(("versionId", "".join(rng.choice(B64_ALPHABET + "._") for _ in range(32))))
        if rng.random() < 0.5:
            pairs.append(("x-id", rng.choice(["GetObject", "PutObject", "DeleteObject"])))
    elif kind < 0.85:
        # Duplicate keys: sorted by value after encoding.
        k = rng.choice(["prefix", "a", "x-id", "tag"])
        for _ in range(rng.randint(2, 4)):
            pairs.append((k, rand_query_value(rng)))
        if rng.random() < 0.5:
            pairs.append(("b", ""))
    else:
        # Arbitrary keys, unicode and punctuation included.
        for _ in range(rng.randint(1, 4)):
            k = rand_query_value(rng) or "k"
            pairs.append((k, rand_query_value(rng)))
    rng.shuffle(pairs)
    return pairs


def rand_headers(rng, method):
    headers = []
    if rng.random() < 0.3:
        name = rng.choice(["content-type", "Content-Type", "CONTENT-TYPE"])
        value = rng.choice(
            [
                "application/octet-stream",
                "application/json",
                "text/plain; charset=utf-8",
                "  text/plain  ",
            ]
        )
        headers.append((name, value))
    if rng.random() < 0.2:
        etag = "".join(rng.choice("0123456789abcdef") for _ in range(32))
        headers.append((rng.choice(["if-match", "If-Match"]), f'"{etag}"'))
    elif method == "PUT" and rng.random() < 0.3:
        headers.append((rng.choice(["if-none-match", "If-None-Match"]), "*"))
    if rng.random() < 0.2:
        words = ["lease", "holder", "é", "42", "a=b", "x,y"]
        value = ""
        for _ in range(rng.randint(1, 4)):
            value += " " * rng.randint(0, 4) + rng.choice(words)
        value += " " * rng.randint(0, 3)
        headers.append((rng.choice(["x-amz-meta-foo", "X-Amz-Meta-Foo"]), value))
    rng.shuffle(headers)
    return headers


def rand_body(rng, method):
    r = rng.random()
    if method in ("GET", "HEAD", "DELETE") and r < 0.8:
        return b""
    if r < 0.35:
        return b""
    if r < 0.7:
        text = "".join(
            rng.choice(["lease ", "holder=", "é", "ሴ", "😀", "\n", "{\"k\": 1}", " "])
            for _ in range(rng.randint(1, 30))
        )
        return text.encode("utf-8")
    return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 2048)))


def rand_credentials(rng):
    with_token = rng.random() < 0.5
    prefix = "ASIA" if with_token else "AKIA"
    ak = prefix + "".join(rng.choice(UPPER_ALNUM) for _ in range(16))
    sk = "".join(rng.choice(B64_ALPHABET) for _ in range(40))
    token = None
    if with_token:
        body = "".join(rng.choice(B64_ALPHABET) for _ in range(rng.randint(40, 300)))
        # Always include the troublesome characters at least once.
        token = "IQoJb3JpZ2luX2Vj/+" + body + rng.choice(["=", "==", "/+="])
    return ak, sk, token


def rand_time(rng, index):
    if index < len(SPECIAL_TIMES):
        return SPECIAL_TIMES[index]
    # 2000-01-01 .. 2099-12-31
    return rng.randint(946684800, 4102444799)


def encode_path(key, bucket):
    encoded = quote(key, safe="/-_.~")
    return (f"/{bucket}/" if bucket is not None else "/") + encoded


def encode_query(pairs):
    parts = []
    for k, v in pairs:
        ek, ev = quote(k, safe="-_.~"), quote(v, safe="-_.~")
        parts.append(ek if v == "" and k in ("acl", "uploads", "delete", "tagging", "versioning", "b") else f"{ek}={ev}")
    return "&".join(parts)


def sign_with_botocore(case, body):
    """botocore's S3SigV4Auth.add_auth with the clock replaced by the case's time."""
    url = f"http://{case['host']}{case['path']}"
    if case["query"]:
        url += "?" + encode_query(case["query"])
    # Duplicate header names are not generated; a dict keeps them unique.
    headers = {name: value for name, value in case["headers"]}
    request = AWSRequest(method=case["method"], url=url, data=body, headers=headers)
    creds = Credentials(case["access_key_id"], case["secret_access_key"], case["session_token"])
    auth = S3SigV4Auth(creds, "s3", case["region"])

    # --- add_auth, minus get_current_datetime() ---
    stamp = datetime.datetime.fromtimestamp(case["unix_seconds"], tz=datetime.timezone.utc)
    request.context["timestamp"] = stamp.strftime(SIGV4_TIMESTAMP)
    auth._modify_request_before_signing(request)
    canonical_request = auth.canonical_request(request)
    string_to_sign = auth.string_to_sign(request, canonical_request)
    signature = auth.signature(string_to_sign, request)
    # Taken before the Authorization header exists (it would list itself).
    signed = auth.headers_to_sign(request)
    signed_headers = sorted(set(signed))
    auth._inject_signature_to_request(request, signature)
    # ---

    parts = urlsplit(url)
    if _host_from_url(url) != case["host"]:
        raise SystemExit(f"botocore host {_host_from_url(url)!r} != {case['host']!r}")
    if parts.path != case["path"]:
        raise SystemExit(f"botocore path {parts.path!r} != {case['path']!r}")
    if signed["host"] != case["host"]:
        raise SystemExit("botocore signed a different host header")
    content_sha256 = request.headers["X-Amz-Content-SHA256"]
    if content_sha256 != hashlib.sha256(body).hexdigest():
        raise SystemExit(f"botocore payload hash {content_sha256} is not sha256(body)")
    if request.headers["X-Amz-Date"] != request.context["timestamp"]:
        raise SystemExit("botocore x-amz-date differs from the pinned timestamp")

    return {
        "url": url,
        "amz_date": request.context["timestamp"],
        "content_sha256": content_sha256,
        "signed_headers": signed_headers,
        "canonical_request": canonical_request,
        "string_to_sign": string_to_sign,
        "authorization": request.headers["Authorization"],
    }


def make_case(rng, index):
    method = rng.choice(METHODS)
    host, path_style = rng.choice(HOSTS)
    bucket = rng.choice(BUCKETS) if path_style else None
    key = rand_key(rng)
    body = rand_body(rng, method)
    ak, sk, token = rand_credentials(rng)
    case = {
        "index": index,
        "method": method,
        "host": host,
        "bucket": bucket,
        "key": key,
        "path": encode_path(key, bucket),
        "query": [list(p) for p in rand_query(rng)],
        "headers": [list(h) for h in rand_headers(rng, method)],
        "body_b64": base64.b64encode(body).decode("ascii"),
        "access_key_id": ak,
        "secret_access_key": sk,
        "session_token": token,
        "region": rng.choice(REGIONS),
        "unix_seconds": rand_time(rng, index),
    }
    case.update(sign_with_botocore(case, body))
    return case


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seed", nargs="?", type=int, default=DEFAULT_SEED)
    parser.add_argument("count", nargs="?", type=int, default=DEFAULT_COUNT)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    cases = [make_case(rng, i) for i in range(args.count)]
    json.dump(cases, sys.stdout, indent=1)
    sys.stdout.write("\n")
    sys.stderr.write(
        f"{len(cases)} cases, seed {args.seed}, botocore {botocore.__version__}\n"
    )


if __name__ == "__main__":
    main(sys.argv[1:])

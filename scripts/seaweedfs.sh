#!/usr/bin/env bash
# Sourced by the demo: when AWS_ENDPOINT_URL is not set, starts a throwaway
# SeaweedFS (from .venv, installed by setup.sh) on 127.0.0.1, creates the
# bucket $S3LEASE_BUCKET with boto3, and exports the AWS variables that point
# at it. The server and its data are removed when the calling shell exits.

start_local_seaweedfs() {
    local dir port secret
    dir=$(mktemp -d "${TMPDIR:-/tmp}/s3lease-demo-weed.XXXXXX")
    # A free loopback port (and its +10000 gRPC twin) from the kernel.
    port=$("$S3LEASE_PYTHON" - <<'PY'
import random, socket
for _ in range(200):
    p = random.randint(20000, 39000)
    try:
        for q in (p, p + 1, p + 2, p + 3, p + 10000, p + 10001, p + 10002, p + 10003):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass
PY
)
    secret="demo-secret-$RANDOM$RANDOM"
    cat >"$dir/identities.json" <<JSON
{"identities": [{"name": "demo", "credentials": [{"accessKey": "S3LEASEDEMO", "secretKey": "$secret"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
JSON
    mkdir -p "$dir/data"
    echo "demo: starting SeaweedFS on 127.0.0.1:$((port + 3)) (log: $dir/weed.log)"
    "$S3LEASE_WEED" mini -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
        -master.telemetry=false -admin.ui=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 \
        -master.port="$port" -volume.port=$((port + 1)) -filer.port=$((port + 2)) \
        -s3.port=$((port + 3)) -admin.port=$((port + 4)) -metricsPort=$((port + 5)) \
        -s3.config="$dir/identities.json" >"$dir/weed.log" 2>&1 &
    S3LEASE_DEMO_WEED_PID=$!
    trap 'kill $S3LEASE_DEMO_WEED_PID 2>/dev/null; wait $S3LEASE_DEMO_WEED_PID 2>/dev/null; rm -rf "'"$dir"'"' EXIT

    export AWS_ENDPOINT_URL="http://127.0.0.1:$((port + 3))"
    export AWS_ACCESS_KEY_ID=S3LEASEDEMO AWS_SECRET_ACCESS_KEY="$secret" AWS_REGION=us-east-1
    export S3LEASE_BUCKET="${S3LEASE_BUCKET:-s3-lease-demo}"
    # The S3 port answers before the filer behind it is ready: retry the
    # bucket creation until it succeeds (about 5 s on a cold start).
    "$S3LEASE_PYTHON" - <<'PY'
import os, sys, time, boto3, botocore
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1",
                  config=botocore.config.Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=5))
deadline = time.time() + 60
while True:
    try:
        s3.create_bucket(Bucket=os.environ["S3LEASE_BUCKET"]); break
    except s3.exceptions.BucketAlreadyOwnedByYou:
        break
    except Exception as e:
        if time.time() > deadline:
            sys.exit(f"demo: SeaweedFS did not come up: {e}")
        time.sleep(0.3)
PY
    echo "demo: SeaweedFS ready, bucket $S3LEASE_BUCKET"
}

"""One smoke each on the other stores, and the two lines of the README
against the environment the command line reads."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Dict

import s3_lease
from conftest import Servers, s3_env


def smoke(client: s3_lease.Client) -> None:
    with client.lock("smoke", ttl=10) as lease:
        assert lease.held and lease.token > 0
        status = client.status("smoke")
        assert status is not None and status.live and status.token == lease.token
        assert client.try_acquire("smoke", ttl=10) is None
    status = client.status("smoke")
    assert status is not None and not status.live
    client.close()


def test_dynamodb_on_dynalite(servers: Servers, prefix: str) -> None:
    d = servers.ask("dynamodb")
    smoke(
        s3_lease.Client(
            store="dynamodb",
            table=d["table"],
            endpoint=d["url"],
            region=d["region"],
            access_key_id=d["access_key_id"],
            secret_access_key=d["secret_access_key"],
            key_prefix=prefix,
        )
    )


def test_azure_blob_on_azurite(servers: Servers, prefix: str) -> None:
    a = servers.ask("azure")
    smoke(
        s3_lease.Client(
            store="azure-blob",
            container=a["container"],
            connection_string=a["connection_string"],
            key_prefix=prefix,
        )
    )


def test_gcs_on_fake_gcs_server(servers: Servers, prefix: str) -> None:
    g = servers.ask("gcs")
    smoke(s3_lease.Client(g["bucket"], store="gcs", endpoint=g["url"], key_prefix=prefix))


def test_the_readmes_two_lines_take_a_lock(s3: Dict[str, Any], prefix: str) -> None:
    two_lines = (
        "import s3_lease\n"
        'with s3_lease.Client.from_env().lock("nightly") as lease: print(lease.token)\n'
    )
    done = subprocess.run([sys.executable, "-c", two_lines], env=s3_env(s3, prefix), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0

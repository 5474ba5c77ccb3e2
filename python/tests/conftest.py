"""The package's tests, run against the installed wheel (never the source
tree) and the suite's own servers: host-test's `package_fixtures` starts
SeaweedFS, fault proxies, dynalite, Azurite and fake-gcs-server, and judges
turns with the project's history checker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

import s3_lease

WORKSPACE = Path(__file__).resolve().parents[2]

# A shell starts a background job (test.sh runs these tests beside its
# next step) with SIGINT ignored, and an ignored signal stays ignored across
# exec: the interpreters these tests start would never see KeyboardInterrupt.
# A handler of our own is reset to the default at exec, so they do.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
TARGET = Path(os.environ.get("CARGO_TARGET_DIR") or WORKSPACE / "target")
FIXTURES = os.environ.get("S3LEASE_PACKAGE_FIXTURES") or str(TARGET / "debug" / "package_fixtures")
CLI = os.environ.get("S3LEASE_CLI_BIN") or str(TARGET / "debug" / "s3-lease")


def pytest_configure(config: Any) -> None:
    # The package under test is the installed wheel, not python/s3_lease.
    source = WORKSPACE / "python" / "s3_lease"
    assert not Path(s3_lease.__file__).resolve().is_relative_to(source), (
        f"s3_lease was imported from the source tree ({s3_lease.__file__}); "
        "run the tests with the wheel installed (scripts/test_python.sh)"
    )


class Servers:
    """package_fixtures serve: one request per line, one JSON answer per line."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [FIXTURES, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(self, *words: str) -> Dict[str, Any]:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(" ".join(words) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"package_fixtures ended (exit {self.process.wait()})")
        answer: Dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"package_fixtures {' '.join(words)}: {answer['error']}")
        return answer

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    s = Servers()
    yield s
    s.close()


@pytest.fixture(scope="session")
def s3(servers: Servers) -> Dict[str, Any]:
    return servers.ask("s3")


@pytest.fixture
def prefix(request: Any) -> str:
    """Each test's own corner of the bucket."""
    return f"python/{request.node.name}/{uuid.uuid4().hex[:8]}/"


def s3_settings(s3: Dict[str, Any], prefix: str, **more: Any) -> Dict[str, Any]:
    return dict(
        bucket=s3["bucket"],
        endpoint=s3["url"],
        region=s3["region"],
        access_key_id=s3["access_key_id"],
        secret_access_key=s3["secret_access_key"],
        key_prefix=prefix,
        **more,
    )


def s3_env(s3: Dict[str, Any], prefix: str) -> Dict[str, str]:
    """The environment the command line (and Client.from_env) reads."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3LEASE_"))}
    env.update(
        S3LEASE_BUCKET=s3["bucket"],
        S3LEASE_PREFIX=prefix,
        AWS_ENDPOINT_URL=s3["url"],
        AWS_REGION=s3["region"],
        AWS_ACCESS_KEY_ID=s3["access_key_id"],
        AWS_SECRET_ACCESS_KEY=s3["secret_access_key"],
    )
    for name in ("S3LEASE_COMPONENT", "S3LEASE_CACHE_DIR", "S3LEASE_PRECOMPILED"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


@pytest.fixture
def client(s3: Dict[str, Any], prefix: str) -> Iterator[s3_lease.Client]:
    with s3_lease.Client(**s3_settings(s3, prefix)) as c:
        yield c


@pytest.fixture
def other(s3: Dict[str, Any], prefix: str) -> Iterator[s3_lease.Client]:
    """A second client of the same corner (another holder)."""
    with s3_lease.Client(**s3_settings(s3, prefix)) as c:
        yield c


def python(*args: str, **kwargs: Any) -> "subprocess.Popen[str]":
    """This interpreter (the fresh venv's) running a script from here."""
    return subprocess.Popen(
        [sys.executable, *args], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs
    )

"""What a process lives through: a lease lost behind a silent network,
os.fork(), Ctrl-C during a wait and inside a with."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any, Dict, List

import pytest

import s3_lease
from conftest import Servers, python, s3_env, s3_settings


def test_a_lease_lost_behind_a_silent_network_is_seen_three_ways(
    servers: Servers, s3: Dict[str, Any], prefix: str
) -> None:
    proxy = servers.ask("proxy")
    settings = s3_settings(s3, prefix, request_timeout=1.0)
    settings["endpoint"] = proxy["url"]
    client = s3_lease.Client(**settings)
    called: List[s3_lease.Lost] = []
    lease = client.acquire("job", ttl=3, on_lost=called.append)
    assert lease.held and lease.wait_lost_blocking(timeout=0.2) is None
    servers.ask("fault", str(proxy["id"]), "silent")
    try:
        lost = lease.wait_lost_blocking(timeout=10)
        # .lost, the callback, and the next call all say so.
        assert lost is not None and lost.reason == "expired", lost
        assert not lease.held and lease.lost == lost
        deadline = time.monotonic() + 2
        while not called and time.monotonic() < deadline:
            time.sleep(0.02)
        assert called == [lost]
        with pytest.raises(s3_lease.LostError):
            lease.fenced_put("out.json", b"{}")
    finally:
        servers.ask("fault", str(proxy["id"]), "pass")
    client.close(1.0)


async def test_wait_lost_resolves_in_asyncio(servers: Servers, s3: Dict[str, Any], prefix: str) -> None:
    proxy = servers.ask("proxy")
    settings = s3_settings(s3, prefix, request_timeout=1.0)
    settings["endpoint"] = proxy["url"]
    client = s3_lease.Client(**settings)
    lease = await client.aacquire("job", ttl=3)
    servers.ask("fault", str(proxy["id"]), "silent")
    try:
        started = time.monotonic()
        lost = await lease.wait_lost()
        assert lost.reason == "expired" and time.monotonic() - started < 6
    finally:
        servers.ask("fault", str(proxy["id"]), "pass")
    await client.aclose(1.0)


def test_a_forked_child_refuses_the_parents_client_and_makes_its_own(
    client: s3_lease.Client, s3: Dict[str, Any], prefix: str
) -> None:
    lease = client.acquire("job", ttl=10)
    token = lease.token
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report on the pipe, never return into pytest
        code = 1
        try:
            try:
                client.status("job")
                os.write(write, b"used the parent's client")
            except s3_lease.ForkedError as e:
                assert "os.fork()" in str(e)
                try:
                    lease.release()
                    os.write(write, b"released the parent's lease")
                except s3_lease.ForkedError:
                    own = s3_lease.Client(**s3_settings(s3, prefix))
                    status = own.status("job")
                    assert status is not None and status.live and status.token == token
                    os.write(write, b"ok")
                    code = 0
        except BaseException as e:  # noqa: B036
            os.write(write, repr(e).encode())
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    said = os.read(read, 4096).decode()
    os.close(read)
    assert said == "ok" and os.WEXITSTATUS(status) == 0, said
    # The parent's lease went on: the child neither used nor dropped it.
    assert lease.held
    lease.release()


def test_ctrl_c_during_a_wait_releases_what_it_got_and_raises(
    client: s3_lease.Client, s3: Dict[str, Any], prefix: str
) -> None:
    held = client.acquire("job", ttl=10)
    script = (
        "import s3_lease\n"
        "client = s3_lease.Client.from_env()\n"
        "print('waiting', flush=True)\n"
        "try:\n"
        "    client.acquire('job', ttl=10, wait=60)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
    )
    child = python("-c", script, env=s3_env(s3, prefix))
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "waiting"
    time.sleep(0.5)
    interrupted = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    # Seen within the call's wait (it would otherwise wait out its 60 s).
    assert time.monotonic() - interrupted < 5
    assert child.returncode == 0 and out.strip() == "interrupted", err
    # The interrupted wait left nothing behind: once ours goes, the key is free.
    held.release()
    time.sleep(1.0)
    status = client.status("job")
    assert status is not None and not status.live, status


def test_ctrl_c_inside_a_with_releases_on_the_way_out(
    client: s3_lease.Client, s3: Dict[str, Any], prefix: str
) -> None:
    script = (
        "import time, s3_lease\n"
        "with s3_lease.Client.from_env().lock('job', ttl=30) as lease:\n"
        "    print(lease.token, flush=True)\n"
        "    time.sleep(60)\n"
    )
    child = python("-c", script, env=s3_env(s3, prefix))
    assert child.stdout is not None
    token = int(child.stdout.readline())
    status = client.status("job")
    assert status is not None and status.live and status.token == token
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode != 0 and "KeyboardInterrupt" in err
    status = client.status("job")
    assert status is not None and not status.live, status


def test_leases_held_at_exit_are_released(client: s3_lease.Client, s3: Dict[str, Any], prefix: str) -> None:
    script = (
        "import s3_lease\n"
        "lease = s3_lease.Client.from_env().acquire('job', ttl=30)\n"
        "print(lease.token, flush=True)\n"
    )
    done = subprocess.run(
        [__import__("sys").executable, "-c", script], env=s3_env(s3, prefix), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    status = client.status("job")
    assert status is not None and not status.live and status.token == int(done.stdout), status

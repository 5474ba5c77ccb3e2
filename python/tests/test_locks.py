"""Locks against SeaweedFS: with and async with, release on every way out,
fencing, errors, records handed over, another thread running meanwhile."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, Dict

import pytest

import s3_lease
from conftest import python, s3_env, s3_settings


def free(client: s3_lease.Client, key: str) -> bool:
    status = client.status(key)
    return status is None or not status.live


def test_with_takes_the_lock_and_releases_it(client: s3_lease.Client) -> None:
    with client.lock("job", ttl=10) as lease:
        assert lease.held and lease.token > 0 and lease.key == "job"
        assert lease.lost is None
        status = client.status("job")
        assert status is not None and status.live and status.holder_id == lease.holder
        assert status.token == lease.token
        assert lease.expires_at.timestamp() > time.time()
    assert free(client, "job")
    assert lease.lost is not None and lease.lost.reason == "released"


def test_a_with_left_by_an_exception_releases(client: s3_lease.Client) -> None:
    with pytest.raises(ZeroDivisionError):
        with client.lock("job", ttl=10):
            1 / 0
    assert free(client, "job")


async def test_async_with_takes_and_releases(client: s3_lease.Client) -> None:
    async with client.lock("job", ttl=10) as lease:
        assert lease.held
        status = await client.astatus("job")
        assert status is not None and status.live and status.token == lease.token
        written = await lease.afenced_put("out.json", b"{}", "application/json")
        assert written.token == lease.token
    assert free(client, "job")
    with pytest.raises(RuntimeError):
        async with client.lock("job", ttl=10):
            raise RuntimeError("boom")
    assert free(client, "job")


async def test_an_async_with_cancelled_while_waiting_leaves_nothing_held(
    client: s3_lease.Client, other: s3_lease.Client
) -> None:
    held = client.acquire("job", ttl=10)

    async def waiter() -> None:
        async with other.lock("job", ttl=10, wait=30):
            raise AssertionError("granted while another held it")

    task = asyncio.create_task(waiter())
    await asyncio.sleep(0.5)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The cancelled wait makes no attempt after it: once ours goes, nobody
    # takes the key, and the next grant is the very next token.
    held.release()
    await asyncio.sleep(1.5)
    assert free(client, "job"), f"taken after the cancel: {client.status('job')}"
    assert other.stats()["leases_kept"] == 0
    with client.lock("job", ttl=10, wait=0) as next_lease:
        assert next_lease.token == held.token + 1


def test_another_thread_runs_while_a_call_waits(client: s3_lease.Client, other: s3_lease.Client) -> None:
    held = client.acquire("job", ttl=10)
    counted = [0]
    stop = threading.Event()

    def count() -> None:
        # Pure Python: it runs only while nobody holds the GIL.
        while not stop.is_set():
            counted[0] += 1

    threading.Thread(target=count, daemon=True).start()
    threading.Timer(1.0, held.release).start()
    started = time.monotonic()
    try:
        with other.lock("job", ttl=10, wait=10):
            waited = time.monotonic() - started
    finally:
        stop.set()
    assert waited >= 0.9
    # Millions per second with the GIL free; next to none if the wait held it.
    assert counted[0] > 100_000, counted[0]


def test_a_fenced_write_with_a_stale_token_is_refused_by_the_store(
    client: s3_lease.Client, other: s3_lease.Client
) -> None:
    # Two slots: both held at once, the second with the higher token.
    older = client.acquire("pool", ttl=10, limit=2)
    newer = other.acquire("pool", ttl=10, limit=2)
    assert newer.token > older.token
    first = older.fenced_put("data/report.json", b"old", "application/json")
    assert first.previous_token is None
    second = newer.fenced_put("data/report.json", b"new", "application/json")
    assert second.previous_token == older.token
    with pytest.raises(s3_lease.FencedError) as refused:
        older.fenced_put("data/report.json", b"stale", "application/json")
    assert refused.value.stored_token == newer.token
    assert refused.value.our_token == older.token
    found = client.fenced_get("data/report.json")
    assert found is not None and found.body == b"new" and found.token == newer.token
    newer.fenced_delete("data/report.json")
    assert client.fenced_get("data/report.json") is None
    older.release()
    newer.release()


def test_a_wait_that_runs_out_names_the_holder(client: s3_lease.Client, other: s3_lease.Client) -> None:
    with client.lock("job", ttl=10, holder="the-first") as lease:
        with pytest.raises(s3_lease.HeldError) as timed_out:
            other.acquire("job", ttl=10, wait=0.3)
        assert isinstance(timed_out.value, TimeoutError)
        assert timed_out.value.holder is not None
        assert timed_out.value.holder.holder_id == "the-first"
        assert timed_out.value.holder.token == lease.token
        assert other.try_acquire("job", ttl=10) is None
        with pytest.raises(s3_lease.HeldError):
            with other.lock("job", wait=0):
                pass


def test_errors_are_classes_with_the_hosts_messages(s3: Dict[str, Any], prefix: str) -> None:
    from conftest import s3_settings

    missing = s3_lease.Client(**{**s3_settings(s3, prefix), "bucket": "no-such-bucket-here"})
    with pytest.raises(s3_lease.NoSuchBucketError) as no_bucket:
        missing.status("k")
    assert "no-such-bucket-here" in str(no_bucket.value) and no_bucket.value.kind == "no-such-bucket"
    wrong = s3_lease.Client(**{**s3_settings(s3, prefix), "secret_access_key": "not-the-secret-123"})
    with pytest.raises(s3_lease.AccessDeniedError) as denied:
        wrong.status("k")
    assert "not-the-secret-123" not in str(denied.value)
    with pytest.raises(s3_lease.ConfigError):
        s3_lease.Client(**{**s3_settings(s3, prefix), "addressing": "sideways"})
    with pytest.raises(s3_lease.ConfigError) as no_bucket_given:
        s3_lease.Client(endpoint=s3["url"], access_key_id="a", secret_access_key="b")
    assert no_bucket_given.value.field == "bucket"
    client = s3_lease.Client(**s3_settings(s3, prefix))
    with pytest.raises(s3_lease.InvalidArgumentError):
        client.acquire("job", ttl=-1)
    with pytest.raises(s3_lease.S3LeaseError):
        client.acquire("", ttl=10)
    client.close()


def test_a_record_handed_to_another_process_is_renewed_there(
    client: s3_lease.Client, s3: Dict[str, Any], prefix: str
) -> None:
    lease = client.acquire("handover", ttl=10)
    token = lease.token
    record = lease.detach()
    assert record.token == token and not lease.held
    # Still held on the store: nobody else gets it.
    assert client.try_acquire("handover", ttl=10) is None
    script = (
        "import sys, s3_lease\n"
        "client = s3_lease.Client.from_env()\n"
        "lease = client.adopt(sys.stdin.read())\n"
        "assert lease.held\n"
        "print(lease.token, lease.record().expires_at_ms, flush=True)\n"
        "lease.release()\n"
    )
    child = python("-c", script, stdin=__import__("subprocess").PIPE, env=s3_env(s3, prefix))
    out, err = child.communicate(record.to_json(), timeout=60)
    assert child.returncode == 0, err
    adopted_token, expires_at_ms = map(int, out.split())
    assert adopted_token == token
    assert expires_at_ms > record.expires_at_ms  # renewed there
    assert free(client, "handover")
    # The spent record is refused, before anything is written.
    with pytest.raises(s3_lease.S3LeaseError):
        client.adopt(record)


def test_the_same_key_is_shared_with_the_command_line(
    client: s3_lease.Client, s3: Dict[str, Any], prefix: str
) -> None:
    import subprocess

    from conftest import CLI

    env = s3_env(s3, prefix)
    with client.lock("shared", ttl=10, holder="python") as lease:
        shown = subprocess.run([CLI, "--json", "status", "shared"], env=env, capture_output=True, text=True)
        assert shown.returncode == 0, shown.stderr
        assert "python" in shown.stdout and str(lease.token) in shown.stdout
        refused = subprocess.run([CLI, "acquire", "shared", "--ttl", "10s"], env=env, capture_output=True, text=True)
        assert refused.returncode != 0
    # The command line takes it, hands its lease to Python, which renews
    # and releases it.
    taken = subprocess.run([CLI, "acquire", "shared", "--ttl", "10s"], env=env, capture_output=True, text=True)
    assert taken.returncode == 0, taken.stderr
    cli_lease = json.loads(taken.stdout)
    assert cli_lease["token"] > lease.token
    assert client.try_acquire("shared", ttl=10) is None
    adopted = client.adopt(taken.stdout)
    assert adopted.token == cli_lease["token"] and adopted.held
    # And back: Python's record, released by the command line.
    record = adopted.detach()
    released = subprocess.run([CLI, "release"], input=record.to_json(), env=env, capture_output=True, text=True)
    assert released.returncode == 0, released.stderr
    assert free(client, "shared")


def test_preflight_passes_on_seaweedfs(client: s3_lease.Client) -> None:
    report = client.preflight()
    assert report.config_safe, report
    assert report.requests > 0 and report.results


def test_from_env_reads_the_command_lines_settings_as_it_does(
    s3: Dict[str, Any], prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in s3_env(s3, prefix).items():
        monkeypatch.setenv(name, value)
    # S3LEASE_ENDPOINT wins over the AWS SDKs' variable (here a closed port).
    monkeypatch.setenv("S3LEASE_ENDPOINT", s3["url"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("S3LEASE_CHECK_STORE", "off")
    with s3_lease.Client.from_env() as client:
        with client.lock("from-env", ttl=10) as lease:
            assert lease.held
    # A value the command line refuses is refused here too, naming its
    # variable (not read as a no).
    monkeypatch.setenv("S3LEASE_CHECK_STORE", "maybe")
    with pytest.raises(s3_lease.ConfigError) as refused:
        s3_lease.Client.from_env()
    assert refused.value.field == "S3LEASE_CHECK_STORE" and "maybe" in str(refused.value)


def test_audit_keeps_the_grant_log_and_audit_reads_it(
    s3: Dict[str, Any], prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # audit=True: each grant and release is recorded.
    with s3_lease.Client(**s3_settings(s3, prefix, audit=True)) as c:
        with c.lock("logged", ttl=10, holder="first"):
            pass
    # from_env reads S3LEASE_AUDIT as the command line does.
    for name, value in s3_env(s3, prefix).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("S3LEASE_AUDIT", "1")
    with s3_lease.Client.from_env() as c:
        with c.lock("logged", ttl=10, holder="second"):
            pass
        entries = c.audit("logged")
    assert [(e.token, e.holder, e.ended, e.backfilled) for e in entries] == [
        (1, "first", "released", False),
        (2, "second", "released", False),
    ], entries
    assert all(isinstance(e, s3_lease.AuditEntry) and e.granted_at_ms for e in entries)

"""Leader election: one leader, the role's changes as an async iterator
and as callbacks, and handover on resign."""

from __future__ import annotations

import asyncio
import threading
from typing import List

import s3_lease

FAST = dict(lease_duration=6.0, renew_deadline=4.0, retry_period=0.3)


def test_one_leader_and_handover_on_resign(client: s3_lease.Client, other: s3_lease.Client) -> None:
    changes: List[s3_lease.Role] = []
    seen = threading.Event()

    def on_change(role: s3_lease.Role) -> None:
        changes.append(role)
        if role.is_leader:
            seen.set()

    first = client.elect("leader", holder="first", **FAST)  # type: ignore[arg-type]
    assert first.wait_until_leader_blocking(timeout=10)
    role = first.role
    assert role.is_leader and role.lease is not None and role.lease.holder_id == "first"
    second = other.elect("leader", holder="second", on_change=on_change, **FAST)  # type: ignore[arg-type]
    assert not second.wait_until_leader_blocking(timeout=1.0)
    assert second.role.name == "follower"
    first.resign()
    assert second.wait_until_leader_blocking(timeout=10)
    assert seen.wait(5)
    leader = second.role.lease
    assert leader is not None and leader.token > role.lease.token
    assert changes[-1].is_leader
    second.resign()


async def test_role_changes_as_an_async_iterator(client: s3_lease.Client) -> None:
    async with await client.aelect("leader", **FAST) as elector:  # type: ignore[arg-type]
        roles = elector.changes()
        names = []
        async for role in roles:
            names.append(role.name)
            if role.is_leader:
                break
        assert names[-1] == "leader"
        await asyncio.wait_for(elector.wait_until_leader(), 5)
        assert elector.is_leader and (elector.leading_for or 0) > 0

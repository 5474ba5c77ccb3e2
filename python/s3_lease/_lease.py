"""A held lease: it renews itself in the background until released."""

from __future__ import annotations

import datetime
TYPE_CHECKING = False

from . import _calls
from ._types import FencedObject, FencedWrite, LeaseRecord, Lost

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any, Callable, Optional, Type, Union

    from ._native import Lease as _NativeLease

    Data = Union[bytes, bytearray, memoryview, str]


def _bytes(data: Data) -> bytes:
    return data.encode() if isinstance(data, str) else bytes(data)


class Lease:
    """A lease held on a key. It renews itself on s3-lease's scheduler (no
    thread of its own) until :meth:`release`, :meth:`detach`, or until it
    is garbage-collected (then it is released in the background). Use it
    with ``with`` or ``async with`` to release it on the way out.

    Pass :attr:`token` with every write the lock protects, or write through
    :meth:`fenced_put`: the store itself then refuses a stale holder."""

    __slots__ = ("_native", "__weakref__")

    def __init__(self, native: "_NativeLease") -> None:
        self._native = native

    def __repr__(self) -> str:
        state = "held" if self.held else f"lost ({self.lost})"
        return f"<s3_lease.Lease key={self.key!r} token={self.token} {state}>"

    @property
    def key(self) -> str:
        return self._native.key

    @property
    def holder(self) -> str:
        """The holder id it was granted under."""
        return self._native.holder

    @property
    def token(self) -> int:
        """The fencing token: it rises with every grant of the key."""
        return self._native.token

    @property
    def expires_at(self) -> datetime.datetime:
        """When it lapses unless renewed (moves on with each renew), by
        this machine's clock."""
        record = self.record()
        ms = record.expires_at_ms if record else 0
        return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)

    @property
    def held(self) -> bool:
        """Whether it is surely held, judged now. Stop writing when not."""
        return self._native.held

    @property
    def held_for(self) -> Optional[float]:
        """Seconds it is surely held for from now unless renewed first; ``None`` when not held."""
        return self._native.held_for()

    @property
    def lost(self) -> Optional[Lost]:
        """Why it is no longer held (``None`` while it is)."""
        reason = self._native.lost()
        return Lost._from(reason) if reason is not None else None

    def record(self) -> Optional[LeaseRecord]:
        """The lease as last renewed; ``None`` once released or detached."""
        record = self._native.record()
        return LeaseRecord._from(record) if record is not None else None

    async def wait_lost(self) -> Lost:
        """Returns, with why, once the lease is no longer held: at its safe
        margin even while a renew hangs, or when a renew finds it taken."""
        return Lost._from(await _calls.wait(self._native.wait_lost()))

    def wait_lost_blocking(self, timeout: Optional[float] = None) -> Optional[Lost]:
        """:meth:`wait_lost` for code that is not async; ``None`` if
        ``timeout`` seconds pass first."""
        try:
            return Lost._from(_calls.block(self._native.wait_lost(), timeout))
        except TimeoutError:
            return None

    def on_lost(self, callback: Callable[[Lost], Any]) -> None:
        """Calls ``callback(lost)`` if the lease is lost (taken, run out or
        failed; not when released), on one of s3-lease's threads."""
        self._native.on_lost(lambda reason: callback(Lost._from(reason)))

    def fenced_put(
        self,
        key: str,
        data: Data,
        content_type: str = "application/octet-stream",
        *,
        reject_equal_token: bool = False,
    ) -> FencedWrite:
        """Writes ``key`` under this lease's token: the store refuses it
        (:class:`FencedError`) once a newer token wrote there, and it is
        refused without a request (:class:`LostError`) once the lease is not
        surely held."""
        call = self._native.fenced_put(key, _bytes(data), content_type, reject_equal_token)
        return FencedWrite(**_calls.block(call))

    async def afenced_put(
        self,
        key: str,
        data: Data,
        content_type: str = "application/octet-stream",
        *,
        reject_equal_token: bool = False,
    ) -> FencedWrite:
        call = self._native.fenced_put(key, _bytes(data), content_type, reject_equal_token)
        return FencedWrite(**await _calls.wait(call))

    def fenced_get(self, key: str) -> Optional[FencedObject]:
        """Reads a fenced object with the token of the write that stored it."""
        found = _calls.block(self._native.fenced_get(key))
        return FencedObject(**found) if found is not None else None

    async def afenced_get(self, key: str) -> Optional[FencedObject]:
        found = await _calls.wait(self._native.fenced_get(key))
        return FencedObject(**found) if found is not None else None

    def fenced_delete(self, key: str) -> None:
        """Deletes ``key`` unless a newer token wrote it (:class:`FencedError`)."""
        _calls.block(self._native.fenced_delete(key))

    async def afenced_delete(self, key: str) -> None:
        await _calls.wait(self._native.fenced_delete(key))

    def release(self) -> None:
        """Stops renewing and releases the key for the next holder (after a
        renew under way). Nothing to do once released, detached or lost."""
        _calls.block(self._native.release())

    async def arelease(self) -> None:
        await _calls.wait(self._native.release())

    def detach(self) -> LeaseRecord:
        """Stops renewing and hands the lease over as a record, still held
        on the store until its ttl runs out: another process takes it over
        with :meth:`Client.adopt` (or the command line's ``renew`` and
        ``release``)."""
        record = _calls.block(self._native.detach())
        if record is None:
            raise ValueError("the lease was released or handed over already")
        return LeaseRecord._from(record)

    async def adetach(self) -> LeaseRecord:
        record = await _calls.wait(self._native.detach())
        if record is None:
            raise ValueError("the lease was released or handed over already")
        return LeaseRecord._from(record)

    def __enter__(self) -> "Lease":
        return self

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        error: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        _release_on_exit(self, error)

    async def __aenter__(self) -> "Lease":
        return self

    async def __aexit__(
        self,
        kind: Optional[Type[BaseException]],
        error: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        try:
            await self.arelease()
        except Exception:
            if error is None:
                raise


def _release_on_exit(lease: Lease, error: Optional[BaseException]) -> None:
    """Releases on leaving a ``with``: a failed release (the lease then runs
    out at its ttl) is raised only if nothing else is on its way out."""
    try:
        lease.release()
    except Exception:
        if error is None:
            raise

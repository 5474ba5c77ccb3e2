"""Leader election: a campaign for one key, run by s3-lease's scheduler."""

from __future__ import annotations

TYPE_CHECKING = False

from . import _calls
from ._types import Role

if TYPE_CHECKING:
    from typing import Any, AsyncIterator, Callable, Optional

    from ._native import Elector as _NativeElector


class Elector:
    """A campaign for leadership of one key (:meth:`Client.elect`). It
    steps on s3-lease's scheduler (no thread of its own) until
    :meth:`resign`; leaving ``with`` or ``async with`` resigns.

    Leadership ends at its deadline, whatever a step is doing: check
    :attr:`is_leader` (or fence writes with the leader's token) before
    acting as the leader."""

    __slots__ = ("_native", "__weakref__")

    def __init__(self, native: _NativeElector) -> None:
        self._native = native

    def __repr__(self) -> str:
        return f"<s3_lease.Elector {self.role.name}>"

    @property
    def role(self) -> Role:
        """The role now."""
        return Role._from(self._native.role())

    @property
    def is_leader(self) -> bool:
        return self.role.is_leader

    @property
    def leading_for(self) -> Optional[float]:
        """Seconds leadership lasts from now unless renewed first; ``None`` when not leading."""
        return self._native.leading_for()

    @property
    def last_error(self) -> Optional[str]:
        """Why the last step failed, if it did (it keeps trying)."""
        return self._native.last_error()

    @property
    def running(self) -> bool:
        """Whether it still campaigns."""
        return self._native.running

    async def wait_until_leader(self) -> Role:
        """Returns once this elector leads (its role, with the lease)."""
        while True:
            role = self.role
            if role.is_leader:
                return role
            found = await _calls.wait(self._native.next_role(role.name))
            if found is None:
                raise RuntimeError("the elector stopped campaigning")

    def wait_until_leader_blocking(self, timeout: Optional[float] = None) -> bool:
        """:meth:`wait_until_leader` for code that is not async: whether it
        leads, after ``timeout`` seconds at most."""
        import time

        until = None if timeout is None else time.monotonic() + timeout
        while True:
            role = self.role
            if role.is_leader:
                return True
            left = None if until is None else until - time.monotonic()
            if left is not None and left <= 0:
                return False
            try:
                found = _calls.block(self._native.next_role(role.name), left)
            except TimeoutError:
                return self.is_leader
            if found is None:
                return False

    async def changes(self) -> AsyncIterator[Role]:
        """Each new role as it changes (the role now first), until the elector stops."""
        seen: Optional[str] = None
        while True:
            found = await _calls.wait(self._native.next_role(seen))
            if found is None:
                return
            role = Role._from(found)
            seen = role.name
            yield role

    def on_change(self, callback: Callable[[Role], Any]) -> None:
        """Calls ``callback(role)`` at each change of role, on one of
        s3-lease's threads."""
        self._native.on_change(lambda role: callback(Role._from(role)))

    def resign(self) -> None:
        """Releases the lease if leading, and stops campaigning."""
        _calls.block(self._native.resign())

    async def aresign(self) -> None:
        await _calls.wait(self._native.resign())

    def __enter__(self) -> "Elector":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.resign()

    async def __aenter__(self) -> "Elector":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aresign()

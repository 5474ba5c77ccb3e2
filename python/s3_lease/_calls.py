"""Waiting for a call: blocking (the GIL released, Ctrl-C honoured) or
awaited on an event loop (never blocking it)."""

from __future__ import annotations

TYPE_CHECKING = False

if TYPE_CHECKING:  # (asyncio costs a start-up that does not use it)
    from typing import Any, Callable, Optional, TypeVar

    from ._native import Pending

    T = TypeVar("T")


def block(pending: Pending, timeout: Optional[float] = None) -> Any:
    """The call's result. KeyboardInterrupt (or ``timeout``) cancels the
    call, releasing whatever it got, and is raised."""
    return pending.block(timeout)


async def wait(pending: Pending) -> Any:
    """The call's result, awaited. Cancelling the awaiting task cancels the
    call, releasing whatever it got."""
    import asyncio

    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not done.done():
            done.set_result(None)

    def on_done() -> None:
        # On one of s3-lease's threads.
        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:
            pass  # the loop is closed: nobody waits any more

    pending.add_done_callback(on_done)
    try:
        await done
    except BaseException:
        pending.cancel()
        raise
    return pending.result()


def on_loop(callback: Callable[[T], Any]) -> Callable[[T], None]:
    """``callback`` called on the running event loop, from any thread."""
    import asyncio

    loop = asyncio.get_running_loop()

    def call(arg: T) -> None:
        try:
            loop.call_soon_threadsafe(callback, arg)
        except RuntimeError:
            pass

    return call

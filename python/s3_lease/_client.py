"""The client of one store, and the lock it hands out for ``with``."""

from __future__ import annotations

import atexit
import weakref
TYPE_CHECKING = False

from . import _calls, _native
from ._elector import Elector
from ._lease import Lease, _release_on_exit
from ._types import (
    AuditEntry,
    CloseReport,
    FencedObject,
    LeaseRecord,
    LockStatus,
    Lost,
    PreflightReport,
    Role,
    SemaphoreStatus,
)

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any, Callable, Dict, List, Optional, Type, Union

    OnLost = Callable[[Lost], Any]
    Record = Union[LeaseRecord, str, Dict[str, Any]]

_open: "weakref.WeakSet[Client]" = weakref.WeakSet()

#: ``wait=None``: ten years, as good as forever.
_FOREVER = 10 * 365 * 24 * 3600.0

#: How long the exit of the interpreter waits for the releases of the
#: leases still held (:meth:`Client.close`): a release is one request, but
#: a busy machine can take seconds to answer it, and a lease left held
#: blocks the key for its whole ttl.
EXIT_CLOSE_TIMEOUT = 5.0


@atexit.register
def _close_at_exit() -> None:
    for client in list(_open):
        try:
            client.close(EXIT_CLOSE_TIMEOUT)
        except Exception:
            pass


def _record_dict(record: Record) -> Dict[str, Any]:
    if isinstance(record, LeaseRecord):
        return record.to_dict()
    if isinstance(record, str):
        return LeaseRecord.from_json(record).to_dict()
    return dict(record)


class Client:
    """A client of one store: an S3 bucket (``store="s3"``, the default), a
    DynamoDB table (``"dynamodb"``, ``table=``), an Azure Blob Storage
    container (``"azure-blob"``, ``container=``) or a Google Cloud Storage
    bucket (``"gcs"``).

    Credentials: ``credentials=`` a boto3 or botocore ``Session`` (anything
    with ``get_credentials()``), asked again before its keys expire; or
    ``access_key_id=``/``secret_access_key=``; else the AWS chain as the AWS
    SDKs read it (environment, profiles, web identity, container and
    instance credentials: a Lambda's role), and Azure's and Google's own
    (connection string, account key, SAS or managed identity; Application
    Default Credentials).

    Connecting loads the component (once per process) and sends nothing.
    Use it from any thread and from asyncio; its calls never hold the GIL
    while they wait. :meth:`close` (or leaving ``with``) releases every
    lease it holds; so does the interpreter's exit, for a client still
    open."""

    __slots__ = ("_native", "__weakref__")

    def __init__(
        self,
        bucket: Optional[str] = None,
        store: str = "s3",
        endpoint: Optional[str] = None,
        region: Optional[str] = None,
        *,
        table: Optional[str] = None,
        container: Optional[str] = None,
        credentials: Any = None,
        access_key_id: Optional[str] = None,
        secret_access_key: Optional[str] = None,
        session_token: Optional[str] = None,
        connection_string: Optional[str] = None,
        account: Optional[str] = None,
        account_key: Optional[str] = None,
        sas_token: Optional[str] = None,
        key_prefix: Optional[str] = None,
        addressing: Optional[str] = None,
        seal_key: Optional[str] = None,
        strategy: Optional[str] = None,
        expiry_clock: Optional[str] = None,
        preflight: Optional[bool] = None,
        audit: Optional[bool] = None,
        request_timeout: Optional[float] = None,
        instances: Optional[int] = None,
    ) -> None:
        settings = dict(locals())
        for name in ("self", "credentials", "instances", "__class__"):
            settings.pop(name, None)
        self._connect(settings, credentials, False, instances)

    @classmethod
    def from_env(cls, bucket: Optional[str] = None, **settings: Any) -> "Client":
        """The store the environment names, as the ``s3-lease`` command line
        reads it: ``S3LEASE_BUCKET``, ``S3LEASE_STORE``, ``S3LEASE_TABLE``,
        ``S3LEASE_CONTAINER``, ``S3LEASE_PREFIX``, ``S3LEASE_ENDPOINT``,
        ``S3LEASE_REGION``, ``S3LEASE_STRATEGY``, ``S3LEASE_EXPIRY_CLOCK``,
        ``S3LEASE_CHECK_STORE``, ``S3LEASE_AUDIT``, ``S3LEASE_SEAL_KEY``, and the AWS, Azure and
        Google variables and files their SDKs read. Arguments given win."""
        client = cls.__new__(cls)
        credentials = settings.pop("credentials", None)
        instances = settings.pop("instances", None)
        settings["bucket"] = bucket
        client._connect(settings, credentials, True, instances)
        return client

    def _connect(
        self, settings: Dict[str, Any], credentials: Any, from_env: bool, instances: Optional[int]
    ) -> None:
        if credentials is not None and settings.get("region") is None:
            settings["region"] = getattr(credentials, "region_name", None)
        call = _native.Client.connect(settings, credentials, from_env, instances)
        self._native: _native.Client = _calls.block(call)
        _open.add(self)

    def __repr__(self) -> str:
        return f"<s3_lease.Client {self._native.store_name}>"

    def lock(
        self,
        key: str,
        ttl: float = 30.0,
        wait: Optional[float] = 60.0,
        holder: Optional[str] = None,
        limit: Optional[int] = None,
        fair: bool = False,
        *,
        metadata: Optional[str] = None,
        on_lost: Optional[OnLost] = None,
    ) -> "Lock":
        """The lock on ``key``, taken by ``with`` or ``async with`` (which
        give the :class:`Lease`) and released on the way out.

        ``ttl``: seconds a lease lasts without a renew (it renews every
        third of its safe margin, nine tenths of the ttl). ``wait``: seconds
        to wait for it (:class:`HeldError` after; ``0``: one attempt).
        ``holder``: who holds it (the same holder takes over its own live
        lease). ``limit``: a semaphore of that many slots; ``fair``: slots go
        to waiters in the order they asked. ``on_lost``: called with a
        :class:`Lost` if the lease is lost while held."""
        return Lock(self, key, ttl, wait, holder, limit, fair, metadata, on_lost)

    def _acquire_call(self, lock: "Lock") -> _native.Pending:
        # wait=None: as long as it takes; 0: one attempt (None to the host).
        wait = _FOREVER if lock.wait is None else (None if lock.wait == 0 else lock.wait)
        if wait is None and lock.fair and lock.holder is None:
            raise ValueError("a fair attempt needs holder= (its place in the queue is kept under it)")
        return self._native.acquire(
            lock.key, lock.ttl, wait, lock.holder, lock.metadata, lock.limit, lock.fair
        )

    def acquire(self, key: str, ttl: float = 30.0, wait: Optional[float] = 60.0, **options: Any) -> Lease:
        """Waits for the lock and returns the held :class:`Lease` (see :meth:`lock`)."""
        return self.lock(key, ttl, wait, **options).acquire()

    async def aacquire(
        self, key: str, ttl: float = 30.0, wait: Optional[float] = 60.0, **options: Any
    ) -> Lease:
        return await self.lock(key, ttl, wait, **options).aacquire()

    def try_acquire(self, key: str, ttl: float = 30.0, **options: Any) -> Optional[Lease]:
        """One attempt: the :class:`Lease`, or ``None`` while someone else holds it."""
        return self.lock(key, ttl, 0, **options)._try()

    async def atry_acquire(self, key: str, ttl: float = 30.0, **options: Any) -> Optional[Lease]:
        return await self.lock(key, ttl, 0, **options)._atry()

    def adopt(self, record: Record, on_lost: Optional[OnLost] = None) -> Lease:
        """Takes over a lease another process handed over (:meth:`Lease.detach`,
        or the command line's JSON): renews it now, then keeps it renewed
        here. :class:`LostError` if it was taken or ran out meanwhile."""
        lease = Lease(_calls.block(self._native.adopt(_record_dict(record))))
        if on_lost is not None:
            lease.on_lost(on_lost)
        return lease

    async def aadopt(self, record: Record, on_lost: Optional[OnLost] = None) -> Lease:
        lease = Lease(await _calls.wait(self._native.adopt(_record_dict(record))))
        if on_lost is not None:
            lease.on_lost(_calls.on_loop(on_lost))
        return lease

    def renew_record(self, record: Record) -> LeaseRecord:
        """Renews a lease record once; keep the returned one (the old one is spent)."""
        return LeaseRecord._from(_calls.block(self._native.renew_record(_record_dict(record))))

    def release_record(self, record: Record) -> None:
        """Releases a lease given as a record."""
        _calls.block(self._native.release_record(_record_dict(record)))

    def status(self, key: str) -> Optional[LockStatus]:
        """The key's lock as read now; ``None`` if it was never locked."""
        found = _calls.block(self._native.status(key))
        return LockStatus._from(found) if found is not None else None

    async def astatus(self, key: str) -> Optional[LockStatus]:
        found = await _calls.wait(self._native.status(key))
        return LockStatus._from(found) if found is not None else None

    def slots(self, key: str) -> Optional[SemaphoreStatus]:
        """A semaphore's holders and queue; ``None`` for a plain lock or no object."""
        found = _calls.block(self._native.slots(key))
        return SemaphoreStatus._from(found) if found is not None else None

    def audit(self, key: str, since_ms: Optional[int] = None) -> List[AuditEntry]:
        """The key's grant log, oldest first (kept by clients made with
        ``audit=True``): each grant's holder, when it was granted, how and
        when it ended, from the first grant at or after ``since_ms`` (the
        store's clock, ms since the Unix epoch)."""
        found = _calls.block(self._native.audit(key, since_ms))
        return [AuditEntry(**e) for e in found]

    async def aaudit(self, key: str, since_ms: Optional[int] = None) -> List[AuditEntry]:
        found = await _calls.wait(self._native.audit(key, since_ms))
        return [AuditEntry(**e) for e in found]

    def preflight(self) -> PreflightReport:
        """Probes the store with real requests under a scratch prefix (deleted
        after): whether it has what a safe lock needs."""
        return PreflightReport._from(_calls.block(self._native.preflight()))

    async def apreflight(self) -> PreflightReport:
        return PreflightReport._from(await _calls.wait(self._native.preflight()))

    def fenced_get(self, key: str) -> Optional[FencedObject]:
        """Reads a fenced object with the token of the write that stored it."""
        found = _calls.block(self._native.fenced_get(key))
        return FencedObject(**found) if found is not None else None

    async def afenced_get(self, key: str) -> Optional[FencedObject]:
        found = await _calls.wait(self._native.fenced_get(key))
        return FencedObject(**found) if found is not None else None

    def elect(
        self,
        key: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        holder: Optional[str] = None,
        *,
        metadata: Optional[str] = None,
        on_change: Optional[Callable[[Role], Any]] = None,
    ) -> Elector:
        """Campaigns for leadership of ``key`` (client-go's three durations,
        ``0 < retry_period < renew_deadline < lease_duration``) until
        :meth:`Elector.resign`. ``on_change`` is called with each new
        :class:`Role`, on one of s3-lease's threads."""
        call = self._native.elect(key, lease_duration, renew_deadline, retry_period, holder, metadata)
        elector = Elector(_calls.block(call))
        if on_change is not None:
            elector.on_change(on_change)
        return elector

    async def aelect(
        self,
        key: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        holder: Optional[str] = None,
        *,
        metadata: Optional[str] = None,
        on_change: Optional[Callable[[Role], Any]] = None,
    ) -> Elector:
        """:meth:`elect`, awaited; ``on_change`` is called on the running event loop."""
        call = self._native.elect(key, lease_duration, renew_deadline, retry_period, holder, metadata)
        elector = Elector(await _calls.wait(call))
        if on_change is not None:
            elector.on_change(_calls.on_loop(on_change))
        return elector

    def close(self, timeout: float = 5.0) -> CloseReport:
        """Releases every lease the client holds and waits up to ``timeout``
        seconds for the releases; after it the client grants no more."""
        _open.discard(self)
        return CloseReport(**_calls.block(self._native.close(timeout)))

    async def aclose(self, timeout: float = 5.0) -> CloseReport:
        _open.discard(self)
        return CloseReport(**await _calls.wait(self._native.close(timeout)))

    def stats(self) -> Dict[str, Any]:
        """Leases kept, renews sent and failed, credential refreshes."""
        return self._native.stats()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class Lock:
    """A lock to take with ``with`` or ``async with`` (see :meth:`Client.lock`)."""

    __slots__ = ("client", "key", "ttl", "wait", "holder", "limit", "fair", "metadata", "on_lost", "_lease")

    def __init__(
        self,
        client: Client,
        key: str,
        ttl: float,
        wait: Optional[float],
        holder: Optional[str],
        limit: Optional[int],
        fair: bool,
        metadata: Optional[str],
        on_lost: Optional[OnLost],
    ) -> None:
        self.client = client
        self.key = key
        self.ttl = ttl
        self.wait = wait
        self.holder = holder
        self.limit = limit
        self.fair = fair
        self.metadata = metadata
        self.on_lost = on_lost
        self._lease: Optional[Lease] = None

    def _held(self, native: Any, on_lost: Optional[OnLost]) -> Lease:
        lease = Lease(native)
        if on_lost is not None:
            lease.on_lost(on_lost)
        return lease

    def acquire(self) -> Lease:
        """Waits for the lock (``wait`` seconds at most) and returns the lease."""
        if self.wait == 0:
            lease = self._try()
            if lease is None:
                raise _held_error(self)
            return lease
        return self._held(_calls.block(self.client._acquire_call(self)), self.on_lost)

    async def aacquire(self) -> Lease:
        if self.wait == 0:
            lease = await self._atry()
            if lease is None:
                raise _held_error(self)
            return lease
        native = await _calls.wait(self.client._acquire_call(self))
        return self._held(native, _calls.on_loop(self.on_lost) if self.on_lost else None)

    def _try(self) -> Optional[Lease]:
        native = _calls.block(self.client._acquire_call(self))
        return None if native is None else self._held(native, self.on_lost)

    async def _atry(self) -> Optional[Lease]:
        native = await _calls.wait(self.client._acquire_call(self))
        if native is None:
            return None
        return self._held(native, _calls.on_loop(self.on_lost) if self.on_lost else None)

    def __enter__(self) -> Lease:
        self._lease = self.acquire()
        return self._lease

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        error: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        lease, self._lease = self._lease, None
        if lease is not None:
            _release_on_exit(lease, error)

    async def __aenter__(self) -> Lease:
        self._lease = await self.aacquire()
        return self._lease

    async def __aexit__(
        self,
        kind: Optional[Type[BaseException]],
        error: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        lease, self._lease = self._lease, None
        if lease is not None:
            await lease.__aexit__(kind, error, traceback)


def _held_error(lock: Lock) -> Exception:
    from ._errors import from_kind

    return from_kind(
        "timeout",
        f"{lock.key} is held by someone else (one attempt, wait=0)",
        {"key": lock.key},
    )

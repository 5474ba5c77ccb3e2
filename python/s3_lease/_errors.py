"""One exception class per error kind of the host, under one base.

Every error s3-lease raises is an :class:`S3LeaseError`; its subclass says
what went wrong (``except s3_lease.HeldError``), its message is the host's
(it never carries a secret), and its attributes say what the error knows.
"""

from __future__ import annotations

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Type

    from ._types import LockStatus


class S3LeaseError(Exception):
    """Anything s3-lease raises.

    ``kind`` is the error's name in the contract (``lost``, ``timeout``,
    ...). The other attributes are ``None`` where the error does not say:
    ``status``, ``code`` and ``request_id`` of a store's error reply;
    ``key`` of the lock; ``holder`` (a :class:`~s3_lease.LockStatus`) of a
    wait that ran out or a lease taken over; ``object_key``,
    ``our_token`` and ``stored_token`` of a fenced write; ``field`` of a
    configuration error; ``endpoint`` and ``bucket`` of the store;
    ``waited`` (seconds); ``transient``: worth another attempt.
    """

    kind: str = "error"

    def __init__(self, message: str, details: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        details = details or {}
        self.status: Optional[int] = details.get("status")
        self.code: Optional[str] = details.get("code")
        self.request_id: Optional[str] = details.get("request_id")
        self.key: Optional[str] = details.get("key")
        self.object_key: Optional[str] = details.get("object_key")
        self.field: Optional[str] = details.get("field")
        self.our_token: Optional[int] = details.get("our_token")
        self.stored_token: Optional[int] = details.get("stored_token")
        self.endpoint: Optional[str] = details.get("endpoint")
        self.bucket: Optional[str] = details.get("bucket")
        self.waited: Optional[float] = details.get("waited")
        self.transient: bool = bool(details.get("transient", False))
        holder = details.get("holder")
        self.holder: Optional["LockStatus"] = None
        if holder is not None:
            from ._types import LockStatus

            self.holder = LockStatus._from(holder)


class LostError(S3LeaseError):
    """The lease was taken over, ran out, or is gone: stop writing."""

    kind = "lost"


class HeldError(S3LeaseError, TimeoutError):
    """The wait for the lock ran out while someone else held it (``holder``)."""

    kind = "timeout"


class FencedError(S3LeaseError):
    """A fenced write was refused: a newer token already wrote (``stored_token``)."""

    kind = "fenced"


class ConflictError(S3LeaseError):
    """The store kept answering 409 (a busy key) after re-reads."""

    kind = "conflict"


class ClockSkewedError(S3LeaseError):
    """The store refused this machine's clock."""

    kind = "clock-skewed"


class AccessDeniedError(S3LeaseError, PermissionError):
    """The store refused the credentials, or the policy denies the call."""

    kind = "access-denied"


class NoSuchBucketError(S3LeaseError):
    """No such bucket (DynamoDB table, Azure container)."""

    kind = "no-such-bucket"


class CorruptLockObjectError(S3LeaseError):
    """A lock object that is not one of ours (or not readable)."""

    kind = "corrupt-lock-object"


class StoreError(S3LeaseError):
    """Any other error reply of the store (``status``, ``code``)."""

    kind = "s3"


class TransportError(S3LeaseError, ConnectionError):
    """The request did not complete (refused, reset, timed out)."""

    kind = "transport"


class ConfigError(S3LeaseError, ValueError):
    """The configuration cannot work (``field`` names what)."""

    kind = "invalid-config"


class InvalidArgumentError(S3LeaseError, ValueError):
    """An argument cannot work (a bad key, ttl or limit, a lease altered or not ours)."""

    kind = "invalid-argument"


class StoreUnsafeError(S3LeaseError):
    """The store preflight found the store unsafe for this configuration."""

    kind = "store-unsafe"


class LimitMismatchError(S3LeaseError):
    """The key is a semaphore of another limit."""

    kind = "limit-mismatch"


class TrapError(S3LeaseError):
    """A bug in s3-lease: the component trapped."""

    kind = "trap"


class HostError(S3LeaseError):
    """The component could not be loaded, compiled or run."""

    kind = "host"


class ForkedError(S3LeaseError):
    """An object made before ``os.fork()`` was used in the child: make a new Client there."""

    kind = "forked"


_BY_KIND: Dict[str, Type[S3LeaseError]] = {
    cls.kind: cls
    for cls in (
        LostError,
        HeldError,
        FencedError,
        ConflictError,
        ClockSkewedError,
        AccessDeniedError,
        NoSuchBucketError,
        CorruptLockObjectError,
        StoreError,
        TransportError,
        ConfigError,
        InvalidArgumentError,
        StoreUnsafeError,
        LimitMismatchError,
        TrapError,
        HostError,
        ForkedError,
    )
}


def from_kind(kind: str, message: str, details: Dict[str, Any]) -> S3LeaseError:
    """The exception for an error of ``kind`` (the extension raises these)."""
    cls = _BY_KIND.get(kind, S3LeaseError)
    error = cls(message, details)
    if cls is S3LeaseError:
        error.kind = kind
    return error

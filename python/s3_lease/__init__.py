"""Locks, leases, semaphores and leader election on object-store
conditional writes (Amazon S3, DynamoDB, Azure Blob Storage, Google Cloud
Storage), with fencing tokens.

    import s3_lease
    with s3_lease.Client.from_env().lock("nightly") as lease:
        print(lease.token)

The protocol runs in the s3-lease WebAssembly component, the same one the
``s3-lease`` command line and the Rust host crate run; this package is that
host, for Python.
"""

from ._client import Client, Lock
from ._elector import Elector
from ._errors import (
    AccessDeniedError,
    ClockSkewedError,
    ConfigError,
    ConflictError,
    CorruptLockObjectError,
    FencedError,
    ForkedError,
    HeldError,
    HostError,
    InvalidArgumentError,
    LimitMismatchError,
    LostError,
    NoSuchBucketError,
    S3LeaseError,
    StoreError,
    StoreUnsafeError,
    TransportError,
    TrapError,
)
from ._lease import Lease
from ._native import VERSION as __version__
from ._native import load_report, precompile
from ._types import (
    AuditEntry,
    CapabilityResult,
    CloseReport,
    FencedObject,
    FencedWrite,
    LeaseRecord,
    LockStatus,
    Lost,
    PreflightReport,
    Role,
    SemaphoreStatus,
    SlotEntry,
)

__all__ = [
    "AccessDeniedError",
    "AuditEntry",
    "CapabilityResult",
    "Client",
    "ClockSkewedError",
    "CloseReport",
    "ConfigError",
    "ConflictError",
    "CorruptLockObjectError",
    "Elector",
    "FencedError",
    "FencedObject",
    "FencedWrite",
    "ForkedError",
    "HeldError",
    "HostError",
    "InvalidArgumentError",
    "Lease",
    "LeaseRecord",
    "LimitMismatchError",
    "Lock",
    "LockStatus",
    "Lost",
    "LostError",
    "NoSuchBucketError",
    "PreflightReport",
    "Role",
    "S3LeaseError",
    "SemaphoreStatus",
    "SlotEntry",
    "StoreError",
    "StoreUnsafeError",
    "TransportError",
    "TrapError",
    "load_report",
    "precompile",
]

"""What s3-lease's calls return: plain, immutable records."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple


@dataclass(frozen=True)
class LeaseRecord:
    """A granted lease as plain data, to keep or hand to another process
    (:meth:`Client.adopt`). The same JSON the ``s3-lease`` command line
    prints and reads. Sealed: an altered copy is refused before anything is
    written. Times are milliseconds since the Unix epoch."""

    key: str
    token: int
    holder_id: str
    etag: str
    expires_at_ms: int
    acquired_at_ms: int
    ttl_ms: int
    metadata: str
    seal: str

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> "LeaseRecord":
        return cls._from(json.loads(text))

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "LeaseRecord":
        return cls(**{name: d[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class LockStatus:
    """A key's lock as read now. ``live``: not released, and not expired
    by the client's expiry clock; ``expires_in``: seconds until that clock
    first calls it expired."""

    key: str
    holder_id: Optional[str]
    token: Optional[int]
    expires_at_ms: int
    acquired_at_ms: Optional[int]
    metadata: str
    etag: str
    live: bool
    expires_in: float

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "LockStatus":
        return cls(**d)


@dataclass(frozen=True)
class SlotEntry:
    """A holder of one of a semaphore's slots, or a waiter in its queue."""

    holder_id: str
    token: Optional[int]
    expires_at_ms: int
    acquired_at_ms: int
    metadata: str
    live: bool
    expires_in: float


@dataclass(frozen=True)
class SemaphoreStatus:
    """A semaphore's holders (in the order granted) and queue (in the order joined)."""

    lock: LockStatus
    limit: int
    holders: Tuple[SlotEntry, ...]
    queue: Tuple[SlotEntry, ...]

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "SemaphoreStatus":
        return cls(
            lock=LockStatus._from(d["lock"]),
            limit=d["limit"],
            holders=tuple(SlotEntry(**e) for e in d["holders"]),
            queue=tuple(SlotEntry(**e) for e in d["queue"]),
        )


@dataclass(frozen=True)
class Lost:
    """Why a lease is no longer held: ``reason`` is ``taken`` (another
    grant is in place: ``holder``), ``expired`` (no renew succeeded in
    time), ``failed`` (a renew failed for good) or ``released``."""

    reason: str
    message: str
    holder: Optional[LockStatus] = None

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "Lost":
        holder = d.get("holder")
        return cls(d["reason"], d["message"], LockStatus._from(holder) if holder else None)


@dataclass(frozen=True)
class FencedWrite:
    """A fenced write the store accepted, and the token it replaced."""

    object_key: str
    etag: str
    token: int
    previous_token: Optional[int]


@dataclass(frozen=True)
class AuditEntry:
    """One grant of a key, from its grant log (:meth:`Client.audit`). Times
    are the store's clock, milliseconds since the Unix epoch. ``ended`` is
    ``released``, ``expired``, ``taken-over``, ``held`` or ``unknown``;
    ``written_by`` is the holder, or the grantee that back-filled the record
    of a holder that never wrote it (``backfilled``)."""

    token: int
    holder: str
    ttl_ms: int
    granted_at_ms: Optional[int]
    ended: str
    ended_at_ms: Optional[int]
    held_ms: Optional[int]
    written_by: str
    backfilled: bool


@dataclass(frozen=True)
class FencedObject:
    """A fenced object as read, with the token of the write that stored it."""

    object_key: str
    body: bytes
    etag: str
    content_type: str
    token: Optional[int]


@dataclass(frozen=True)
class CapabilityResult:
    capability: str
    verdict: str
    status: Optional[int]
    code: str
    detail: str
    silent: bool


@dataclass(frozen=True)
class PreflightReport:
    """What the store preflight found: each capability a lock needs, and
    which strategies and expiry clocks are safe on this store."""

    results: Tuple[CapabilityResult, ...]
    clock_offset_ms: Optional[Tuple[int, int]]
    safe_strategies: Tuple[str, ...]
    safe_expiry_clocks: Tuple[str, ...]
    recommended_strategy: Optional[str]
    config_safe: bool
    notes: Tuple[str, ...]
    requests: int

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "PreflightReport":
        return cls(
            results=tuple(CapabilityResult(**r) for r in d["results"]),
            clock_offset_ms=d["clock_offset_ms"],
            safe_strategies=tuple(d["safe_strategies"]),
            safe_expiry_clocks=tuple(d["safe_expiry_clocks"]),
            recommended_strategy=d["recommended_strategy"],
            config_safe=d["config_safe"],
            notes=tuple(d["notes"]),
            requests=d["requests"],
        )


@dataclass(frozen=True)
class CloseReport:
    """What :meth:`Client.close` did with the leases the client held."""

    released: int
    already_over: int
    failed: List[Tuple[str, str]]
    unfinished: int

    @property
    def all_released(self) -> bool:
        return not self.failed and self.unfinished == 0


@dataclass(frozen=True)
class Role:
    """Where an elector stands: ``name`` is ``leader`` (with its ``lease``),
    ``follower`` (with the ``leader`` seen, when known) or ``candidate``."""

    name: str
    lease: Optional[LeaseRecord] = None
    leader: Optional[LockStatus] = None

    @property
    def is_leader(self) -> bool:
        return self.name == "leader"

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "Role":
        lease = d.get("lease")
        leader = d.get("leader")
        return cls(
            d["role"],
            LeaseRecord._from(lease) if lease else None,
            LockStatus._from(leader) if leader else None,
        )

"""Every CMAP monitoring event (CMAP: Connection Pool Monitoring, Events) as a frozen record.

Durations are milliseconds (float), measured on a monotonic clock by the runtime pool.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.core.address import Address

__all__ = [
    "ConnectionCheckOutFailedEvent",
    "ConnectionCheckOutFailedReason",
    "ConnectionCheckOutStartedEvent",
    "ConnectionCheckedInEvent",
    "ConnectionCheckedOutEvent",
    "ConnectionClosedEvent",
    "ConnectionClosedReason",
    "ConnectionCreatedEvent",
    "ConnectionReadyEvent",
    "PoolClearedEvent",
    "PoolClosedEvent",
    "PoolCreatedEvent",
    "PoolEvent",
    "PoolReadyEvent",
]


class ConnectionClosedReason(enum.Enum):
    """Why a connection left the pool (ConnectionClosedEvent.reason)."""

    STALE = "stale"
    IDLE = "idle"
    ERROR = "error"
    POOL_CLOSED = "poolClosed"


class ConnectionCheckOutFailedReason(enum.Enum):
    """Why a checkout failed (ConnectionCheckOutFailedEvent.reason)."""

    POOL_CLOSED = "poolClosed"
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connectionError"


@dataclass(frozen=True, slots=True)
class PoolCreatedEvent:
    """A pool was created; ``options`` holds the non-default ConnectionPoolOptions."""

    address: Address
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PoolReadyEvent:
    """The pool went from paused to ready (SDAM saw the server)."""

    address: Address


@dataclass(frozen=True, slots=True)
class PoolClearedEvent:
    """The pool's generation (or one service's, load-balanced) was bumped."""

    address: Address
    service_id: Hashable | None = None
    interrupt_in_use_connections: bool = False


@dataclass(frozen=True, slots=True)
class PoolClosedEvent:
    """The pool was closed for good."""

    address: Address


@dataclass(frozen=True, slots=True)
class ConnectionCreatedEvent:
    """A connection was created (pending); establishment starts now."""

    address: Address
    connection_id: int


@dataclass(frozen=True, slots=True)
class ConnectionReadyEvent:
    """A connection finished handshake and auth; ``duration_ms`` since ConnectionCreated."""

    address: Address
    connection_id: int
    duration_ms: float


@dataclass(frozen=True, slots=True)
class ConnectionClosedEvent:
    """A connection left the pool; ``error`` is set when ``reason`` is ERROR and one is known."""

    address: Address
    connection_id: int
    reason: ConnectionClosedReason
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class ConnectionCheckOutStartedEvent:
    """A checkout began."""

    address: Address


@dataclass(frozen=True, slots=True)
class ConnectionCheckOutFailedEvent:
    """A checkout failed after ``duration_ms``."""

    address: Address
    reason: ConnectionCheckOutFailedReason
    duration_ms: float
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class ConnectionCheckedOutEvent:
    """A checkout succeeded after ``duration_ms``."""

    address: Address
    connection_id: int
    duration_ms: float


@dataclass(frozen=True, slots=True)
class ConnectionCheckedInEvent:
    """A connection was handed back to the pool."""

    address: Address
    connection_id: int


PoolEvent = (
    PoolCreatedEvent
    | PoolReadyEvent
    | PoolClearedEvent
    | PoolClosedEvent
    | ConnectionCreatedEvent
    | ConnectionReadyEvent
    | ConnectionClosedEvent
    | ConnectionCheckOutStartedEvent
    | ConnectionCheckOutFailedEvent
    | ConnectionCheckedOutEvent
    | ConnectionCheckedInEvent
)

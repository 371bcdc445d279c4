"""CMAP ConnectionPoolOptions: the pool knobs, validated once, shared by all pools of a client."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asyncmongo.errors import ConfigurationError

__all__ = ["PoolOptions"]


@dataclass(frozen=True, slots=True)
class PoolOptions:
    """The spec's ConnectionPoolOptions (defaults from CMAP: Connection Pool Options).

    ``max_pool_size`` 0 means unlimited; ``max_idle_time_ms`` and ``wait_queue_timeout_ms`` 0
    mean no limit. ``load_balanced`` switches ``clear`` to per-service generations.
    """

    max_pool_size: int = 100
    min_pool_size: int = 0
    max_idle_time_ms: float = 0
    max_connecting: int = 2
    wait_queue_timeout_ms: float = 0
    load_balanced: bool = False

    def __post_init__(self) -> None:
        _require(self.max_pool_size >= 0, "maxPoolSize must be >= 0", self.max_pool_size)
        _require(self.min_pool_size >= 0, "minPoolSize must be >= 0", self.min_pool_size)
        _require(
            self.max_pool_size == 0 or self.min_pool_size <= self.max_pool_size,
            "minPoolSize must be <= maxPoolSize",
            self.min_pool_size,
        )
        _require(self.max_idle_time_ms >= 0, "maxIdleTimeMS must be >= 0", self.max_idle_time_ms)
        _require(self.max_connecting > 0, "maxConnecting must be > 0", self.max_connecting)
        _require(
            self.wait_queue_timeout_ms >= 0,
            "waitQueueTimeoutMS must be >= 0",
            self.wait_queue_timeout_ms,
        )

    def non_default(self) -> dict[str, Any]:
        """The options that differ from the defaults, under the spec's names.

        This is PoolCreatedEvent.options and the optional fields of the "Connection pool
        created" log message.
        """
        defaults = _DEFAULTS
        out: dict[str, Any] = {}
        for attr, name in _SPEC_NAMES:
            value = getattr(self, attr)
            if value != getattr(defaults, attr):
                out[name] = value
        return out


def _require(ok: bool, message: str, value: object) -> None:
    if not ok:
        raise ConfigurationError(f"{message}, got {value!r}")


_SPEC_NAMES = (
    ("max_idle_time_ms", "maxIdleTimeMS"),
    ("min_pool_size", "minPoolSize"),
    ("max_pool_size", "maxPoolSize"),
    ("max_connecting", "maxConnecting"),
    ("wait_queue_timeout_ms", "waitQueueTimeoutMS"),
)
_DEFAULTS = PoolOptions()

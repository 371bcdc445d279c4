"""maxStalenessSeconds: validation and the two staleness formulas (Max Staleness spec).

Staleness is estimated in milliseconds from lastWriteDate and lastUpdateTime, pessimistically
adding heartbeatFrequencyMS. With a primary known (ReplicaSetWithPrimary):
``(S.lastUpdateTime - S.lastWriteDate) - (P.lastUpdateTime - P.lastWriteDate) + heartbeat``;
without (ReplicaSetNoPrimary): ``SMax.lastWriteDate - S.lastWriteDate + heartbeat``, SMax
being the secondary with the greatest lastWriteDate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import ServerType
from asyncmongo.errors import ConfigurationError

IDLE_WRITE_PERIOD_MS: Final = 10_000
SMALLEST_MAX_STALENESS_SECONDS: Final = 90


def validate_max_staleness(max_staleness_seconds: int | None, heartbeat_frequency_ms: int) -> None:
    """Raise ConfigurationError if maxStalenessSeconds is below either allowed minimum."""
    if max_staleness_seconds is None:
        return
    floor_ms = heartbeat_frequency_ms + IDLE_WRITE_PERIOD_MS
    if max_staleness_seconds * 1000 < floor_ms:
        raise ConfigurationError(
            f"maxStalenessSeconds must be at least heartbeatFrequencyMS + idleWritePeriodMS "
            f"({floor_ms / 1000:g} seconds), not {max_staleness_seconds}"
        )
    if max_staleness_seconds < SMALLEST_MAX_STALENESS_SECONDS:
        raise ConfigurationError(
            f"maxStalenessSeconds must be at least {SMALLEST_MAX_STALENESS_SECONDS}, "
            f"not {max_staleness_seconds}"
        )


def staleness_with_primary_ms(
    secondary: ServerDescription, primary: ServerDescription, heartbeat_frequency_ms: int
) -> float:
    """Staleness of ``secondary`` relative to the known primary."""
    secondary_lag = _update_time(secondary) - _write_date(secondary)
    primary_lag = _update_time(primary) - _write_date(primary)
    return secondary_lag - primary_lag + heartbeat_frequency_ms


def staleness_without_primary_ms(
    secondary: ServerDescription, freshest_write_date_ms: int, heartbeat_frequency_ms: int
) -> float:
    """Staleness of ``secondary`` relative to the freshest secondary (SMax)."""
    return freshest_write_date_ms - _write_date(secondary) + heartbeat_frequency_ms


def filter_by_staleness(
    candidates: Sequence[ServerDescription],
    topology: TopologyDescription,
    max_staleness_seconds: int | None,
) -> list[ServerDescription]:
    """The candidates whose staleness is at most maxStalenessSeconds (non-secondaries: 0)."""
    if max_staleness_seconds is None:
        return list(candidates)
    limit_ms = max_staleness_seconds * 1000
    heartbeat = topology.heartbeat_frequency_ms
    primary = topology.primary
    if primary is not None:
        return [
            s
            for s in candidates
            if s.server_type is not ServerType.RS_SECONDARY
            or staleness_with_primary_ms(s, primary, heartbeat) <= limit_ms
        ]
    secondaries = [s for s in topology.servers.values() if s.server_type is ServerType.RS_SECONDARY]
    freshest = max((_write_date(s) for s in secondaries), default=0)
    return [
        s
        for s in candidates
        if s.server_type is not ServerType.RS_SECONDARY
        or staleness_without_primary_ms(s, freshest, heartbeat) <= limit_ms
    ]


def _write_date(server: ServerDescription) -> int:
    return server.last_write_date_ms or 0


def _update_time(server: ServerDescription) -> float:
    return server.last_update_time_ms or 0.0

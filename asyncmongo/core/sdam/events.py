"""SDAM monitoring events (SDAM Logging and Monitoring spec).

The monitors publish the heartbeat events defined here. The topology events, with
``SdamEvent`` and the pure ``diff`` that yields them, are defined in topology_description
next to the ``TopologyDescription`` whose transitions return them, and exported here too.
All events are frozen values. Times are milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.core.address import Address
from asyncmongo.core.sdam.topology_description import (
    SdamEvent,
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
    diff,
)

__all__ = [
    "SdamEvent",
    "ServerClosedEvent",
    "ServerDescriptionChangedEvent",
    "ServerHeartbeatFailedEvent",
    "ServerHeartbeatStartedEvent",
    "ServerHeartbeatSucceededEvent",
    "ServerOpeningEvent",
    "TopologyClosedEvent",
    "TopologyDescriptionChangedEvent",
    "TopologyOpeningEvent",
    "diff",
]


@dataclass(frozen=True, slots=True)
class ServerHeartbeatStartedEvent:
    """A monitor is about to send hello (or to connect for it)."""

    connection_id: Address
    awaited: bool


@dataclass(frozen=True, slots=True)
class ServerHeartbeatSucceededEvent:
    """A monitor's hello succeeded; ``duration_ms`` is the RTT sample unless ``awaited``."""

    connection_id: Address
    duration_ms: float
    reply: Mapping[str, Any]
    awaited: bool


@dataclass(frozen=True, slots=True)
class ServerHeartbeatFailedEvent:
    """A monitor's hello failed (network error or ``ok: 0``)."""

    connection_id: Address
    duration_ms: float
    failure: BaseException
    awaited: bool

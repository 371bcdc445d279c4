"""SDAM monitoring events (SDAM Logging and Monitoring spec) and the pure diff that yields them.

The topology publishes what ``diff`` returns after each ``TopologyDescription.apply``; the
monitors publish the heartbeat events. All events are frozen values. Times are milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asyncmongo.core.address import Address

if TYPE_CHECKING:
    from asyncmongo.core.sdam.server_description import ServerDescription
    from asyncmongo.core.sdam.topology_description import TopologyDescription


@dataclass(frozen=True, slots=True)
class TopologyOpeningEvent:
    """A topology was created; the first SDAM event of its life."""

    topology_id: object


@dataclass(frozen=True, slots=True)
class TopologyClosedEvent:
    """A topology was closed; the last SDAM event of its life."""

    topology_id: object


@dataclass(frozen=True, slots=True)
class TopologyDescriptionChangedEvent:
    """The topology description changed (by TopologyDescription equality)."""

    topology_id: object
    previous_description: TopologyDescription
    new_description: TopologyDescription


@dataclass(frozen=True, slots=True)
class ServerOpeningEvent:
    """A server joined the topology (before its monitor connects)."""

    topology_id: object
    address: Address


@dataclass(frozen=True, slots=True)
class ServerClosedEvent:
    """A server left the topology and its monitor stopped."""

    topology_id: object
    address: Address


@dataclass(frozen=True, slots=True)
class ServerDescriptionChangedEvent:
    """A server's description changed (by Server Description Equality: RTT alone does not)."""

    topology_id: object
    address: Address
    previous_description: ServerDescription
    new_description: ServerDescription


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


SdamEvent = (
    TopologyOpeningEvent
    | TopologyClosedEvent
    | TopologyDescriptionChangedEvent
    | ServerOpeningEvent
    | ServerClosedEvent
    | ServerDescriptionChangedEvent
)


def diff(
    old: TopologyDescription, new: TopologyDescription, first: Address | None = None
) -> list[SdamEvent]:
    """The events that describe going from ``old`` to ``new``.

    Order: description changes (the server being processed, ``first``, before the others),
    then opened servers, then closed servers, then the topology change.
    """
    topology_id = new.topology_id
    events: list[SdamEvent] = []
    changed = [a for a in new.servers if a in old.servers and old.servers[a] != new.servers[a]]
    if first in changed:
        changed.remove(first)
        changed.insert(0, first)
    for address in changed:
        events.append(
            ServerDescriptionChangedEvent(
                topology_id, address, old.servers[address], new.servers[address]
            )
        )
    events.extend(ServerOpeningEvent(topology_id, a) for a in new.servers if a not in old.servers)
    events.extend(ServerClosedEvent(topology_id, a) for a in old.servers if a not in new.servers)
    if old != new:
        events.append(TopologyDescriptionChangedEvent(topology_id, old, new))
    return events

"""What ``topology`` prints: the servers table and one line per event (plain functions).

Pool sizes come from the CMAP events themselves (:class:`PoolCounts`), so the view needs
nothing but ``client.events()`` and ``client.topology_description``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from asyncmongo.core.address import Address, format_address
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.monitoring import (
    CommandFailedEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
    ConnectionCheckedInEvent,
    ConnectionCheckedOutEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionCheckOutStartedEvent,
    ConnectionClosedEvent,
    ConnectionCreatedEvent,
    ConnectionReadyEvent,
    PoolClearedEvent,
    PoolClosedEvent,
    PoolCreatedEvent,
    PoolReadyEvent,
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    ServerOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
)

__all__ = [
    "CLEAR_SCREEN",
    "LIVE_EVENTS",
    "PoolCounts",
    "describe_event",
    "is_chatty",
    "render_screen",
    "render_topology",
]

#: ANSI: cursor home, clear the screen (the live view redraws in place).
CLEAR_SCREEN = "\x1b[H\x1b[2J"
#: Events the live view keeps under the table.
LIVE_EVENTS = 20

#: Events --watch shows only with --verbose: one per heartbeat or per operation.
_CHATTY = (
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    ConnectionCheckOutStartedEvent,
    ConnectionCheckedOutEvent,
    ConnectionCheckedInEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
    CommandFailedEvent,
)


@dataclass(slots=True)
class PoolCount:
    """One pool's connections: open (created, not yet closed) and checked out."""

    open: int = 0
    in_use: int = 0


class PoolCounts:
    """Every pool's counts, kept up to date from CMAP events by :meth:`apply`."""

    __slots__ = ("_pools",)

    def __init__(self) -> None:
        self._pools: dict[Address, PoolCount] = {}

    def __getitem__(self, address: Address) -> PoolCount:
        return self._pools.setdefault(address, PoolCount())

    def apply(self, event: Any) -> None:
        if isinstance(event, ConnectionCreatedEvent):
            self[event.address].open += 1
        elif isinstance(event, ConnectionClosedEvent):
            self[event.address].open -= 1
        elif isinstance(event, ConnectionCheckedOutEvent):
            self[event.address].in_use += 1
        elif isinstance(event, ConnectionCheckedInEvent):
            self[event.address].in_use -= 1
        elif isinstance(event, PoolClosedEvent):
            self._pools.pop(event.address, None)


def render_topology(description: TopologyDescription, pools: PoolCounts) -> str:
    """The deployment as a table: one row per server."""
    set_name = f"  set {description.set_name}" if description.set_name else ""
    lines = [f"{description.topology_type_name}{set_name}  {len(description.servers)} servers"]
    rows = [("ADDRESS", "TYPE", "RTT ms", "POOL open/in use", "")]
    for address, server in sorted(description.servers.items(), key=lambda kv: str(kv[0])):
        pool = pools[address]
        rows.append((
            format_address(address),
            server.server_type.value,
            _rtt(server),
            f"{pool.open}/{pool.in_use}",
            f"error: {server.error}" if server.error else "",
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].rjust(widths[2]),
                 row[3].rjust(widths[3]), row[4]]
        lines.append("  " + "  ".join(cells).rstrip())
    return "\n".join(lines)


def render_screen(
    description: TopologyDescription, pools: PoolCounts, recent: Iterable[str]
) -> str:
    """The live view: the table, then the latest events."""
    lines = list(recent)
    events = "\n".join(lines) if lines else "(no events yet)"
    return f"{render_topology(description, pools)}\n\nlatest events:\n{events}"


def _rtt(server: ServerDescription) -> str:
    rtt = server.round_trip_time_ms
    return "-" if rtt is None else f"{rtt:.2f}"


def is_chatty(event: Any) -> bool:
    """One event per heartbeat or operation: shown by ``--watch --verbose`` only."""
    return isinstance(event, _CHATTY)


def describe_event(event: Any, pools: PoolCounts, now: float | None = None) -> str:
    """One timestamped line for ``event``."""
    when = time.time() if now is None else now
    stamp = time.strftime("%H:%M:%S", time.localtime(when))
    millis = int(when % 1 * 1000)
    return f"{stamp}.{millis:03d}  {type(event).__name__:<34} {_details(event, pools)}".rstrip()


def _details(event: Any, pools: PoolCounts) -> str:
    if isinstance(event, TopologyDescriptionChangedEvent):
        old, new = event.previous_description, event.new_description
        return f"{old.topology_type_name} -> {new.topology_type_name}"
    if isinstance(event, ServerDescriptionChangedEvent):
        old_type = event.previous_description.server_type.value
        new_type = event.new_description.server_type.value
        error = event.new_description.error
        suffix = f" ({error})" if error else ""
        return f"{format_address(event.address)} {old_type} -> {new_type}{suffix}"
    if isinstance(event, TopologyOpeningEvent | TopologyClosedEvent):
        return ""
    if isinstance(event, ServerOpeningEvent | ServerClosedEvent):
        return format_address(event.address)
    if isinstance(event, ServerHeartbeatFailedEvent):
        return f"{format_address(event.connection_id)}: {event.failure}"
    if isinstance(event, ServerHeartbeatStartedEvent | ServerHeartbeatSucceededEvent):
        awaited = " (awaited)" if event.awaited else ""
        return f"{format_address(event.connection_id)}{awaited}"
    if isinstance(event, CommandStartedEvent | CommandSucceededEvent | CommandFailedEvent):
        return f"{event.command_name} on {format_address(event.connection_id)}"
    return _pool_details(event, pools)


def _pool_details(event: Any, pools: PoolCounts) -> str:
    address = getattr(event, "address", None)
    if address is None:
        return ""
    where = format_address(address)
    count = pools[address]
    sizes = f"  [{count.open} open, {count.in_use} in use]"
    if isinstance(event, ConnectionClosedEvent):
        return f"{where} connection {event.connection_id} ({event.reason.value}){sizes}"
    if isinstance(event, ConnectionCheckOutFailedEvent):
        return f"{where} ({event.reason.value}){sizes}"
    if isinstance(event, ConnectionCreatedEvent | ConnectionReadyEvent):
        return f"{where} connection {event.connection_id}{sizes}"
    if isinstance(event, ConnectionCheckedOutEvent | ConnectionCheckedInEvent):
        return f"{where} connection {event.connection_id}{sizes}"
    if isinstance(event, PoolClearedEvent | PoolCreatedEvent | PoolReadyEvent | PoolClosedEvent):
        return where
    return f"{where}{sizes}"

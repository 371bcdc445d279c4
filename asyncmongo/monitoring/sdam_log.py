"""SDAM log messages (specs/logging, SDAM Logging): topology, server monitoring, heartbeats.

Each function builds a :class:`~asyncmongo.core.cmap.log_messages.LogMessage` (structured
fields under the spec's names plus the unstructured text) from the event and the ids the
caller passes in. The topology logs them at DEBUG on "asyncmongo.topology".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from asyncmongo.core.address import Address, format_address
from asyncmongo.core.cmap.log_messages import LogMessage, format_error
from asyncmongo.core.sdam.events import (
    SdamEvent,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
)
from asyncmongo.monitoring.log_config import truncate

__all__ = [
    "SDAM_LOGGER",
    "HeartbeatEvent",
    "heartbeat_message",
    "sdam_message",
    "server_fields",
    "server_monitoring_message",
]

SDAM_LOGGER = logging.getLogger("asyncmongo.topology")

HeartbeatEvent = ServerHeartbeatStartedEvent | ServerHeartbeatSucceededEvent | (
    ServerHeartbeatFailedEvent
)


def server_fields(fields: dict[str, Any], address: Address) -> str:
    """Adds the spec's serverHost (and serverPort) to ``fields``; returns the address as text."""
    host, port = address
    fields["serverHost"] = host
    if port is not None:
        fields["serverPort"] = port
    return format_address(address)


def sdam_message(event: SdamEvent) -> LogMessage | None:
    """The topology-level log message of an SDAM event (None: the event has none)."""
    topology_id = str(event.topology_id)
    if isinstance(event, TopologyOpeningEvent):
        fields = {"message": "Starting topology monitoring", "topologyId": topology_id}
        return LogMessage(fields, f"Starting monitoring for topology with ID {topology_id}")
    if isinstance(event, TopologyClosedEvent):
        fields = {"message": "Stopped topology monitoring", "topologyId": topology_id}
        return LogMessage(fields, f"Stopped monitoring for topology with ID {topology_id}")
    if isinstance(event, TopologyDescriptionChangedEvent):
        fields = {
            "message": "Topology description changed",
            "topologyId": topology_id,
            "previousDescription": repr(event.previous_description),
            "newDescription": repr(event.new_description),
        }
        text = (
            f"Description changed for topology with ID {topology_id}. Previous description: "
            f"{fields['previousDescription']}. New description: {fields['newDescription']}"
        )
        return LogMessage(fields, text)
    return None


def server_monitoring_message(topology_id: object, address: Address, started: bool) -> LogMessage:
    """"Starting server monitoring" / "Stopped server monitoring"."""
    fields: dict[str, Any] = {
        "message": "Starting server monitoring" if started else "Stopped server monitoring",
        "topologyId": str(topology_id),
    }
    where = server_fields(fields, address)
    verb = "Starting" if started else "Stopped"
    return LogMessage(fields, f"{verb} monitoring server {where} in topology {topology_id}")


def heartbeat_message(
    topology_id: object,
    event: HeartbeatEvent,
    driver_connection_id: int | None,
    server_connection_id: int | None = None,
) -> LogMessage:
    """"Server heartbeat started/succeeded/failed" for a monitor's heartbeat event."""
    fields: dict[str, Any] = {"topologyId": str(topology_id), "awaited": event.awaited}
    where = server_fields(fields, event.connection_id)
    if driver_connection_id is not None:
        fields["driverConnectionId"] = driver_connection_id
    if server_connection_id is not None:
        fields["serverConnectionId"] = server_connection_id
    if isinstance(event, ServerHeartbeatStartedEvent):
        fields["message"] = "Server heartbeat started"
        return LogMessage(fields, f"Heartbeat started for {where}")
    fields["durationMS"] = event.duration_ms
    if isinstance(event, ServerHeartbeatSucceededEvent):
        fields["message"] = "Server heartbeat succeeded"
        fields["reply"] = _relaxed(event.reply)
        return LogMessage(fields, f"Heartbeat succeeded in {event.duration_ms:.1f} ms for {where}")
    fields["message"] = "Server heartbeat failed"
    fields["failure"] = format_error(event.failure)
    return LogMessage(
        fields,
        f"Heartbeat failed in {event.duration_ms:.1f} ms for {where}: {fields['failure']}",
    )


def _relaxed(reply: Mapping[str, Any]) -> str:
    from asyncmongo.bson import json_util
    try:
        return truncate(json_util.dumps(dict(reply)))
    except Exception:  # a log line must never fail the heartbeat
        return truncate(repr(dict(reply)))

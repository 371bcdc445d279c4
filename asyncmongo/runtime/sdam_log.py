"""SDAM and server-selection log messages (specs/logging, SDAM Logging, Server Selection Logging).

Each function builds a :class:`~asyncmongo.core.cmap.log_messages.LogMessage` (structured
fields under the spec's names plus the unstructured text) from what the runtime knows. The
topology logs SDAM messages at DEBUG on "asyncmongo.topology" and selection messages on
"asyncmongo.serverSelection" (DEBUG, the "waiting" message at INFO, as the spec says).
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

__all__ = ["SDAM_LOGGER", "SELECTION_LOGGER", "heartbeat_message", "sdam_message", "selection"]

SDAM_LOGGER = logging.getLogger("asyncmongo.topology")
SELECTION_LOGGER = logging.getLogger("asyncmongo.serverSelection")

HeartbeatEvent = ServerHeartbeatStartedEvent | ServerHeartbeatSucceededEvent | (
    ServerHeartbeatFailedEvent
)


def _server(fields: dict[str, Any], address: Address) -> str:
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
    where = _server(fields, address)
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
    where = _server(fields, event.connection_id)
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
        return json_util.dumps(dict(reply))
    except Exception:  # a log line must never fail the heartbeat
        return repr(dict(reply))


def selection(
    message: str,
    operation: str,
    selector: str,
    topology: str,
    *,
    address: Address | None = None,
    failure: BaseException | None = None,
    remaining_ms: float | None = None,
    operation_id: int | None = None,
    topology_id: object = None,
) -> LogMessage:
    """One of the four Server Selection log messages ("Server selection started", ...).

    Besides the spec's fields, a message carries the ``topologyId`` of the client that
    selects (as the SDAM messages do), so that with several clients in one process each
    selection's messages can be told apart; the spec's matching allows extra fields.
    """
    fields: dict[str, Any] = {
        "message": message,
        "selector": selector,
        "operation": operation,
        "topologyDescription": topology,
    }
    if topology_id is not None:
        fields["topologyId"] = str(topology_id)
    ident = ""
    if operation_id is not None:
        fields["operationId"] = operation_id
        ident = f" with ID {operation_id}"
    text = (
        f"{message} for operation {operation}{ident}. Selector: {selector}, "
        f"topology: {topology}"
    )
    if address is not None:
        where = _server(fields, address)
        text += f". Selected server: {where}"
    if failure is not None:
        fields["failure"] = format_error(failure)
        text += f". Failure: {fields['failure']}"
    if remaining_ms is not None:
        fields["remainingTimeMS"] = int(remaining_ms)
        text += f". Remaining time: {int(remaining_ms)} ms"
    return LogMessage(fields, text)

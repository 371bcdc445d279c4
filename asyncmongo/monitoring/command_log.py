"""Command log messages (specs/command-logging-and-monitoring, Command Logging).

"Command started/succeeded/failed" at DEBUG on the ``asyncmongo.command`` logger, one per
command event: the structured fields under the spec's names plus the unstructured text, with
documents as relaxed extended JSON cut at the configured length
(:func:`~asyncmongo.monitoring.log_config.max_document_length`, 1000 by default).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson.json_util import dumps
from asyncmongo.monitoring.command import (
    CommandEvent,
    CommandFailedEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
)
from asyncmongo.monitoring.log_config import DEFAULT_MAX_DOCUMENT_LENGTH, truncate

__all__ = [
    "DEFAULT_MAX_DOCUMENT_LENGTH",
    "LOGGER",
    "CommandLogMessage",
    "log_failed",
    "log_started",
    "log_succeeded",
    "truncate",
]

LOGGER = logging.getLogger("asyncmongo.command")


def _common(event: CommandEvent) -> dict[str, Any]:
    host, port = event.connection_id
    fields: dict[str, Any] = {
        "commandName": event.command_name,
        "databaseName": event.database_name,
        "requestId": event.request_id,
        "operationId": event.operation_id,
        "driverConnectionId": event.driver_connection_id,
        "serverHost": host,
    }
    if port is not None:
        fields["serverPort"] = port
    if event.server_connection_id is not None:
        fields["serverConnectionId"] = event.server_connection_id
    if event.service_id is not None:
        fields["serviceId"] = str(event.service_id)
    return fields


def _where(f: Mapping[str, Any]) -> str:
    port = f":{f['serverPort']}" if "serverPort" in f else ""
    service = f" with service ID {f['serviceId']}" if "serviceId" in f else ""
    server_id = f.get("serverConnectionId")
    return (
        f"using a connection with driver-generated ID {f['driverConnectionId']} and "
        f"server-generated ID {server_id} to {f['serverHost']}{port}{service}. The requestID "
        f"is {f['requestId']} and the operation ID is {f['operationId']}."
    )


@dataclass(frozen=True, slots=True)
class CommandLogMessage:
    """A structured command log message (``fields``) with its unstructured ``text``."""

    fields: Mapping[str, Any]
    text: str

    def __str__(self) -> str:
        return self.text


def log_started(event: CommandStartedEvent) -> None:
    fields = _common(event)
    fields["message"] = "Command started"
    fields["command"] = truncate(dumps(event.command))
    text = (
        f'Command "{event.command_name}" started on database "{event.database_name}" '
        f"{_where(fields)} Command: {fields['command']}"
    )
    LOGGER.debug(CommandLogMessage(fields, text))


def log_succeeded(event: CommandSucceededEvent) -> None:
    fields = _common(event)
    fields["message"] = "Command succeeded"
    fields["durationMS"] = event.duration_micros / 1000
    fields["reply"] = truncate(dumps(event.reply))
    text = (
        f'Command "{event.command_name}" succeeded on database "{event.database_name}" in '
        f"{fields['durationMS']} ms {_where(fields)} Command reply: {fields['reply']}"
    )
    LOGGER.debug(CommandLogMessage(fields, text))


def log_failed(event: CommandFailedEvent) -> None:
    fields = _common(event)
    fields["message"] = "Command failed"
    fields["durationMS"] = event.duration_micros / 1000
    fields["failure"] = truncate(dumps(event.failure))
    text = (
        f'Command "{event.command_name}" failed on database "{event.database_name}" in '
        f"{fields['durationMS']} ms {_where(fields)} Error: {fields['failure']}"
    )
    LOGGER.debug(CommandLogMessage(fields, text))

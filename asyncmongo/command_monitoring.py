"""Command monitoring and command log messages (specs/command-logging-and-monitoring).

Every command an operation sends publishes a :class:`CommandStartedEvent` and then exactly one
:class:`CommandSucceededEvent` or :class:`CommandFailedEvent` (same ``request_id``), and logs
"Command started/succeeded/failed" at DEBUG on the ``asyncmongo.command`` logger. Sensitive
commands (authentication, user management, a hello with speculativeAuthenticate) are
published with an empty command and reply, and their failures keep only code, codeName and
errorLabels. Handshakes and monitor heartbeats are never published here.

The attribute names are PyMongo's (``pymongo.monitoring``), so listeners move over unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson.json_util import dumps
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.address import Address
from asyncmongo.errors import MongoError, OperationFailure

__all__ = [
    "LOGGER",
    "CommandFailedEvent",
    "CommandStartedEvent",
    "CommandSucceededEvent",
    "is_sensitive",
    "log_failed",
    "log_started",
    "log_succeeded",
    "redacted_failure",
]

LOGGER = logging.getLogger("asyncmongo.command")
#: specs/logging: the default maximum length of a document in a log message.
DEFAULT_MAX_DOCUMENT_LENGTH = 1000

SENSITIVE_COMMANDS = frozenset(
    {
        "authenticate",
        "saslstart",
        "saslcontinue",
        "getnonce",
        "createuser",
        "updateuser",
        "copydbgetnonce",
        "copydbsaslstart",
        "copydb",
    }
)
_HELLO_NAMES = frozenset({"hello", "ismaster"})


def is_sensitive(command_name: str, command: Mapping[str, Any]) -> bool:
    """The spec's security table (case-insensitive, hello only with speculativeAuthenticate)."""
    name = command_name.lower()
    if name in SENSITIVE_COMMANDS:
        return True
    return name in _HELLO_NAMES and "speculativeAuthenticate" in command


@dataclass(frozen=True, slots=True)
class _CommandEvent:
    command_name: str
    database_name: str
    request_id: int
    operation_id: int
    connection_id: Address
    driver_connection_id: int
    server_connection_id: int | None
    service_id: ObjectId | None


@dataclass(frozen=True, slots=True)
class CommandStartedEvent(_CommandEvent):
    """A command is about to be sent; ``command`` includes document sequences as arrays."""

    command: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CommandSucceededEvent(_CommandEvent):
    """The server answered ``ok: 1`` (write errors included); ``duration_micros`` is the
    round trip."""

    duration_micros: int
    reply: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CommandFailedEvent(_CommandEvent):
    """The command failed: ``failure`` is the ``ok: 0`` reply or the error as a document."""

    duration_micros: int
    failure: Mapping[str, Any]
    exception: BaseException | None = None


def redacted_failure(failure: Mapping[str, Any]) -> dict[str, Any]:
    """A sensitive command's failure keeps only code, codeName and errorLabels."""
    return {k: failure[k] for k in ("code", "codeName", "errorLabels") if k in failure}


def failure_document(error: BaseException) -> dict[str, Any]:
    """The ``failure`` of a command that raised: the server's reply, or the error described."""
    if isinstance(error, OperationFailure) and isinstance(error.details, Mapping):
        return dict(error.details)
    document: dict[str, Any] = {"errmsg": str(error), "errtype": type(error).__name__}
    if isinstance(error, MongoError) and error.error_labels:
        document["errorLabels"] = sorted(error.error_labels)
    return document


def truncate(text: str, limit: int = DEFAULT_MAX_DOCUMENT_LENGTH) -> str:
    """specs/logging: documents longer than the limit are cut and end with ``...``."""
    return text if len(text) <= limit else text[:limit] + "..."


def _common(event: _CommandEvent) -> dict[str, Any]:
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

"""Command monitoring events (specs/command-logging-and-monitoring) and their redaction.

Every command an operation sends publishes a :class:`CommandStartedEvent` and then exactly one
:class:`CommandSucceededEvent` or :class:`CommandFailedEvent` (same ``request_id``); the log
messages of the same three moments are :mod:`asyncmongo.monitoring.command_log`'s. Sensitive
commands (authentication, user management, a hello with speculativeAuthenticate) are
published with an empty command and reply, and their failures keep only code, codeName and
errorLabels. Handshakes and monitor heartbeats are never published here.

The attribute names are PyMongo's (``pymongo.monitoring``), so listeners move over unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.address import Address
from asyncmongo.errors import MongoError, OperationFailure

__all__ = [
    "CommandEvent",
    "CommandFailedEvent",
    "CommandStartedEvent",
    "CommandSucceededEvent",
    "failure_document",
    "is_sensitive",
    "redacted_failure",
]

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


CommandEvent = CommandStartedEvent | CommandSucceededEvent | CommandFailedEvent


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

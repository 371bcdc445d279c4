"""Command monitoring as the executor does it: started, then succeeded or failed, with the same
request id, built only when someone listens (a listener, or the command logger at DEBUG).

The event classes and their redaction rules are :mod:`asyncmongo.monitoring.command`'s, the
log messages :mod:`asyncmongo.monitoring.command_log`'s; this module builds the events from a
connection and a command and hands them to the publisher.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from asyncmongo.bson.codec import decode
from asyncmongo.core.operations.base import Command
from asyncmongo.errors import OperationFailure
from asyncmongo.monitoring.command import (
    CommandFailedEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
    is_sensitive,
    redacted_failure,
)
from asyncmongo.monitoring.command_log import LOGGER as COMMAND_LOGGER
from asyncmongo.monitoring.command_log import log_failed, log_started, log_succeeded
from asyncmongo.monitoring.debug_check import debug_maybe
from asyncmongo.runtime.connection import Connection

__all__ = ["CommandEvents", "next_operation_id"]

_operation_ids = itertools.count(1)
_request_ids = itertools.count(1)
_DEBUG = logging.DEBUG
_command_debug_maybe = debug_maybe(COMMAND_LOGGER)


def next_operation_id() -> int:
    """A new operation id (the batches of one bulk write share one)."""
    return next(_operation_ids)


class CommandEvents:
    """Publishes one command's events; ``publish`` None: only the logger may want them."""

    __slots__ = ("publish",)

    def __init__(self, publish: Callable[[Any], None] | None = None) -> None:
        self.publish = publish

    @property
    def wanted(self) -> bool:
        return self.publish is not None or (
            _command_debug_maybe() and COMMAND_LOGGER.isEnabledFor(_DEBUG)
        )

    def started(
        self,
        conn: Connection,
        command: Command,
        document: Mapping[str, Any],
        operation_id: int | None,
    ) -> tuple[CommandStartedEvent, float]:
        """Publish the started event; (it, the clock reading its duration starts from)."""
        request_id = next(_request_ids)
        name = command.name
        shown: Mapping[str, Any]
        if is_sensitive(name, document):
            shown = {}
        else:
            full = {**document, **_server_api_fields(conn), "$db": command.database}
            for sequence in command.sequences:
                full[sequence.identifier] = [decode(doc) for doc in sequence.documents]
            shown = full
        server_id = conn.hello.get("connectionId")
        event = CommandStartedEvent(
            name,
            command.database,
            request_id,
            operation_id if operation_id is not None else request_id,
            conn.address,
            conn.id,
            server_id if isinstance(server_id, int) else None,
            conn.service_id,
            shown,
        )
        if COMMAND_LOGGER.isEnabledFor(_DEBUG):
            log_started(event)
        self._emit(event)
        return event, time.perf_counter()

    def succeeded(
        self, started: CommandStartedEvent, begin: float, reply: Mapping[str, Any]
    ) -> None:
        micros = int((time.perf_counter() - begin) * 1_000_000)
        event = CommandSucceededEvent(
            started.command_name,
            started.database_name,
            started.request_id,
            started.operation_id,
            started.connection_id,
            started.driver_connection_id,
            started.server_connection_id,
            started.service_id,
            micros,
            {} if _was_redacted(started) else dict(reply),
        )
        if COMMAND_LOGGER.isEnabledFor(_DEBUG):
            log_succeeded(event)
        self._emit(event)

    def failed(
        self,
        started: CommandStartedEvent,
        begin: float,
        failure: Mapping[str, Any],
        exc: BaseException | None,
    ) -> None:
        micros = int((time.perf_counter() - begin) * 1_000_000)
        if _was_redacted(started) and (exc is None or isinstance(exc, OperationFailure)):
            failure = redacted_failure(failure)  # only a server's error is redacted (spec)
        event = CommandFailedEvent(
            started.command_name,
            started.database_name,
            started.request_id,
            started.operation_id,
            started.connection_id,
            started.driver_connection_id,
            started.server_connection_id,
            started.service_id,
            micros,
            dict(failure),
            exc,
        )
        if COMMAND_LOGGER.isEnabledFor(_DEBUG):
            log_failed(event)
        self._emit(event)

    def _emit(self, event: Any) -> None:
        if self.publish is not None:
            self.publish(event)


def _server_api_fields(conn: Connection) -> dict[str, Any]:
    """The versioned-API fields the connection adds to every command it sends (shown in the
    started event as the server receives them)."""
    server_api = conn._settings.server_api
    return server_api.command_fields() if server_api is not None else {}


def _was_redacted(started: CommandStartedEvent) -> bool:
    """A sensitive command was published with an empty command (only they are empty)."""
    return not started.command

"""OpenTelemetry spans for operations, commands and transactions (open-telemetry spec).

Imported only for a client that traces (:func:`asyncmongo.monitoring.tracing.make_tracer`):
this module is the one that imports OpenTelemetry (its API only, never the SDK).

- An operation span ("find db.coll") covers one API operation, from the client's hand-off to
  the executor to its result or error; its parent is the session's transaction span in a
  transaction, else the host application's current span.
- A command span ("find") covers one command on the wire, built from the command monitoring
  events the executor publishes anyway; the events' operation id names its operation span.
  Every retry is its own command span under the same operation span. Sensitive commands
  (command monitoring's security table) get none.
- A transaction span ("transaction") runs from ``start_transaction`` to the commit or abort.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Mapping
from typing import Any, Final, TypeVar

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from asyncmongo.bson.json_util import dumps
from asyncmongo.core.wire.handshake import DRIVER_VERSION
from asyncmongo.monitoring.command import (
    CommandFailedEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
)
from asyncmongo.monitoring.log_config import truncate

__all__ = ["TRACER_NAME", "Tracer"]

T = TypeVar("T")

#: Tracer Attributes: the driver's package name, and its handshake version.
TRACER_NAME: Final = "asyncmongo"
_SYSTEM: Final = {"db.system.name": "mongodb"}
#: Covered operations: the operation names that differ from their command's.
_OPERATION_NAMES: Final = {"drop": "dropCollection", "create": "createCollection"}
#: db.query.text: the command as the started event shows it, minus these fields.
_NOT_QUERY_TEXT: Final = frozenset({"lsid", "$db", "$clusterTime", "signature"})
_CURSOR_COMMANDS: Final = frozenset({"getMore", "killCursors"})


class _OperationSpan:
    """An operation's span, and whether its namespace is known yet (the first command
    names it)."""

    __slots__ = ("name", "named", "span")

    def __init__(self, span: Span, name: str) -> None:
        self.span = span
        self.name = name
        self.named = False


class Tracer:
    """One client's tracer: operation, command and transaction spans, to ``tracer_provider``
    (None: the global one), with commands as ``db.query.text`` when ``query_text_max_length``
    is above 0."""

    __slots__ = ("_commands", "_max_text", "_operations", "_tracer")

    def __init__(self, *, query_text_max_length: int = 0, tracer_provider: Any = None) -> None:
        self._tracer = trace.get_tracer(TRACER_NAME, DRIVER_VERSION,
                                        tracer_provider=tracer_provider)
        self._max_text = query_text_max_length
        #: operation id -> the span of the operation running under it.
        self._operations: dict[int, _OperationSpan] = {}
        #: request id -> the span of a command in flight.
        self._commands: dict[int, Span] = {}

    # -- operations ------------------------------------------------------------------------

    async def run(self, op: Any, session: Any, operation_id: int, work: Awaitable[T]) -> T:
        """Await ``work`` (the executor running ``op`` under ``operation_id``) in an
        operation span."""
        name = operation_name(op)
        transaction = getattr(session, "_txn_span", None)
        parent = trace.set_span_in_context(transaction) if transaction is not None else None
        span = self._tracer.start_span(
            name, context=parent, kind=SpanKind.CLIENT,
            attributes={**_SYSTEM, "db.operation.name": name, "db.operation.summary": name})
        record = _OperationSpan(span, name)
        previous = self._operations.get(operation_id)
        self._operations[operation_id] = record
        try:
            return await work
        except Exception as exc:
            _record_exception(span, exc)
            raise
        finally:
            if previous is None:
                del self._operations[operation_id]
            else:
                self._operations[operation_id] = previous
            span.end()

    def _name_operation(self, record: _OperationSpan, database: str,
                        collection: str | None) -> None:
        """Operation Span Name: "name db.collection", or "name db" without a collection."""
        record.named = True
        summary = f"{record.name} {_target(database, collection)}"
        record.span.update_name(summary)
        attributes: dict[str, Any] = {"db.namespace": database, "db.operation.summary": summary}
        if collection is not None:
            attributes["db.collection.name"] = collection
        record.span.set_attributes(attributes)

    # -- transactions ----------------------------------------------------------------------

    def start_transaction(self) -> Span:
        """The span of a transaction (its only attribute is db.system.name)."""
        return self._tracer.start_span("transaction", kind=SpanKind.CLIENT, attributes=_SYSTEM)

    @staticmethod
    def end_transaction(span: Span) -> None:
        span.end()

    # -- commands (a command listener) -----------------------------------------------------

    def __call__(self, event: Any) -> None:
        if isinstance(event, CommandStartedEvent):
            self._started(event)
        elif isinstance(event, CommandSucceededEvent):
            span = self._commands.pop(event.request_id, None)
            if span is not None:
                cursor_id = _reply_cursor_id(event.reply)
                if cursor_id is not None:
                    span.set_attribute("db.mongodb.cursor_id", cursor_id)
                span.end()
        elif isinstance(event, CommandFailedEvent):
            span = self._commands.pop(event.request_id, None)
            if span is not None:
                _record_failure(span, event)
                span.end()

    def _started(self, event: CommandStartedEvent) -> None:
        command = event.command
        if not command:
            return  # a sensitive command: published empty, and never traced
        name = event.command_name
        database = event.database_name
        collection = _collection_of(name, database, command)
        record = self._operations.get(event.operation_id)
        parent = None
        if record is not None:
            if not record.named:
                self._name_operation(record, database, collection)
            parent = trace.set_span_in_context(record.span)
        span = self._tracer.start_span(name, context=parent, kind=SpanKind.CLIENT,
                                       attributes=self._command_attributes(event, collection))
        self._commands[event.request_id] = span

    def _command_attributes(self, event: CommandStartedEvent,
                            collection: str | None) -> dict[str, Any]:
        command = event.command
        name = event.command_name
        host, port = event.connection_id
        attributes: dict[str, Any] = {
            **_SYSTEM,
            "db.namespace": event.database_name,
            "db.command.name": name,
            "db.query.summary": f"{name} {_target(event.database_name, collection)}",
            "server.address": host,
            "network.transport": "tcp" if port is not None else "unix",
            "db.mongodb.driver_connection_id": event.driver_connection_id,
        }
        if port is not None:  # a Unix domain socket has none
            attributes["server.port"] = port
        if collection is not None:
            attributes["db.collection.name"] = collection
        if event.server_connection_id is not None:
            attributes["db.mongodb.server_connection_id"] = event.server_connection_id
        if name in _CURSOR_COMMANDS:
            cursor_id = command.get(name) if name == "getMore" else _first(command.get("cursors"))
            if isinstance(cursor_id, int):
                attributes["db.mongodb.cursor_id"] = int(cursor_id)
        lsid = command.get("lsid")
        if lsid is not None:
            attributes["db.mongodb.lsid"] = dumps(lsid)
        txn_number = command.get("txnNumber")
        if isinstance(txn_number, int):
            attributes["db.mongodb.txn_number"] = int(txn_number)
        if self._max_text > 0:
            shown = {k: v for k, v in command.items() if k not in _NOT_QUERY_TEXT}
            attributes["db.query.text"] = truncate(dumps(shown), self._max_text)
        return attributes


def operation_name(op: Any) -> str:
    """db.operation.name: the command's name, but runCommand for a generic command and the
    covered operations' own names (dropCollection, createCollection)."""
    if getattr(op, "generic", False):
        return "runCommand"
    name: str = op.name
    return _OPERATION_NAMES.get(name, name)


def _target(database: str, collection: str | None) -> str:
    return database if collection is None else f"{database}.{collection}"


def _collection_of(name: str, database: str, command: Mapping[str, Any]) -> str | None:
    """db.collection.name: the collection the command names (a string first value, or
    getMore's ``collection``); none for commands on admin."""
    if database == "admin":
        return None
    value = command.get("collection") if name == "getMore" else command.get(name)
    return value if isinstance(value, str) else None


def _first(values: Any) -> Any:
    return values[0] if isinstance(values, list) and values else None


def _reply_cursor_id(reply: Mapping[str, Any]) -> int | None:
    """db.mongodb.cursor_id of a reply that leaves a cursor open (id 0: every result came in
    the reply, no cursor was created on the server)."""
    cursor = reply.get("cursor")
    cursor_id = cursor.get("id") if isinstance(cursor, Mapping) else None
    return int(cursor_id) if isinstance(cursor_id, int) and cursor_id else None


def _record_failure(span: Span, event: CommandFailedEvent) -> None:
    """A failed command: its error code as db.response.status_code, and the exception (the
    one raised, or the server's error reply described as an OperationFailure)."""
    failure = event.failure
    code = failure.get("code")
    if isinstance(code, int) and not isinstance(code, bool):
        span.set_attribute("db.response.status_code", str(code))
    if event.exception is not None:
        _record_exception(span, event.exception)
        return
    message = failure.get("errmsg")
    _set_error(span, "asyncmongo.errors.OperationFailure",
               message if isinstance(message, str) else "command failed",
               "".join(traceback.format_stack()))


def _record_exception(span: Span, exc: BaseException) -> None:
    """Exceptions: recorded on the span (an exception event) and as its attributes."""
    kind = type(exc)
    span.record_exception(exc)
    _set_error(span, f"{kind.__module__}.{kind.__qualname__}", str(exc),
               "".join(traceback.format_exception(exc)))


def _set_error(span: Span, kind: str, message: str, stacktrace: str) -> None:
    span.set_attributes({"exception.type": kind, "exception.message": message,
                         "exception.stacktrace": stacktrace})
    span.set_status(Status(StatusCode.ERROR, message))

"""Running operation objects: ``await executor.run(op)`` (the API's one path to the server).

:class:`OperationExecutor` extends the topology engineer's :class:`Executor` (selection,
checkout, SDAM error verdicts) with what operations need besides a plain command: document
sequences and w:0 (``Command``), servers pinned by a cursor, CRUD's $out/$merge read
preference rule, ``$readPreference`` (server-selection spec, "Passing read preference to
mongos and load balancers" and "Topology type Single"), and command monitoring: every
command publishes started and then succeeded or failed, with the same request id.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, TypeVar

from asyncmongo.bson.codec import decode
from asyncmongo.core.address import Address
from asyncmongo.core.error_policy import ApplicationError
from asyncmongo.core.operations.base import Command, Operation, Target
from asyncmongo.core.operations.replies import is_ok
from asyncmongo.core.sdam.types import ServerType, TopologyType
from asyncmongo.core.selection import Mode, write_stage_read_preference
from asyncmongo.core.selection.suitability import Operation as SelectionKind
from asyncmongo.errors import AutoReconnect, OperationFailure
from asyncmongo.monitoring.command import (
    CommandFailedEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
    failure_document,
    is_sensitive,
    redacted_failure,
)
from asyncmongo.monitoring.command_log import LOGGER as COMMAND_LOGGER
from asyncmongo.monitoring.command_log import log_failed, log_started, log_succeeded
from asyncmongo.runtime.connection import Connection
from asyncmongo.runtime.executor import Executor
from asyncmongo.runtime.server import Server
from asyncmongo.runtime.topology import Topology

__all__ = ["OperationExecutor"]

T = TypeVar("T")
_operation_ids = itertools.count(1)
_request_ids = itertools.count(1)
_PRIMARY_PREFERRED = {"mode": "primaryPreferred"}
_DEBUG = logging.DEBUG


def next_operation_id() -> int:
    """A new operation id (the batches of one bulk write share one)."""
    return next(_operation_ids)


class OperationExecutor(Executor):
    """Runs operation objects; ``publish`` receives the command monitoring events."""

    __slots__ = ("_publish",)

    def __init__(self, topology: Topology, publish: Callable[[Any], None] | None = None) -> None:
        super().__init__(topology)
        self._publish = publish

    def set_publisher(self, publish: Callable[[Any], None] | None) -> None:
        """Where command events go (None: nobody listens, so none are built)."""
        self._publish = publish

    @property
    def topology(self) -> Topology:
        return self._topology

    async def run(
        self,
        op: Operation[T],
        *,
        deadline: float | None = None,
        operation_id: int | None = None,
    ) -> T:
        """Select (or take the pinned server), check out, send, parse; SDAM sees errors.

        Sessions and retries: ``Executor.run_operation``."""
        result, _ = await self.run_operation(op, deadline=deadline, operation_id=operation_id)
        return result

    #: Like :meth:`run`, also saying which server answered (a cursor's home): the executor's
    #: own path, without one more coroutine around it.
    run_with_address = Executor.run_operation

    def _server_for(
        self,
        target: Target,
        deadline: float | None,
        name: str,
        deprioritized: Collection[Address] = (),
        operation_id: int | None = None,
    ) -> Awaitable[Server]:
        topology = self._topology
        if target.address is not None:
            return _pinned_server(topology, target.address)
        selection = target.selection
        if target.write_stage:
            preference = write_stage_read_preference(
                topology.description, selection.read_preference
            )
            selection = dataclasses.replace(selection, read_preference=preference)
        return topology.select_server(
            selection, deadline, deprioritized, operation=name, operation_id=operation_id
        )

    def _read_preference(self, target: Target, server: Server) -> dict[str, Any] | None:
        """The ``$readPreference`` to send, if any (server-selection: "Topology type:
        Single", "Passing read preference to mongos and load balancers", replica sets)."""
        if target.address is not None or target.selection.operation is SelectionKind.WRITE:
            return None
        description = self._topology.description
        preference = target.selection.read_preference
        if description.topology_type is TopologyType.SINGLE:
            known = description.servers.get(server.address)
            server_type = known.server_type if known is not None else None
            if server_type is ServerType.STANDALONE:
                return None  # a standalone MUST NOT be sent a read preference
            if server_type is not ServerType.MONGOS and preference.mode is Mode.PRIMARY:
                return _PRIMARY_PREFERRED  # a direct connection to any member may answer
        if preference.mode is Mode.PRIMARY:
            return None
        return preference.document()

    async def _run_operation(
        self,
        server: Server,
        conn: Connection,
        op: Operation[T],
        deadline: float | None,
        operation_id: int | None,
    ) -> T:
        try:
            command = op.build(conn)
        except BaseException:
            server.pool.check_in(conn)  # a client-side refusal (too large, ...) sent nothing
            raise
        document = command.document
        read_preference = self._read_preference(op.target, server)
        if read_preference is not None:
            document = {**document, "$readPreference": read_preference}
        monitored = self._publish is not None or COMMAND_LOGGER.isEnabledFor(_DEBUG)
        if monitored:
            request_id = next(_request_ids)
            started = self._started(conn, command, document, request_id, operation_id)
            begin = time.perf_counter()
        pool = server.pool
        generation = pool.generation_of(conn)  # the connection's own (its service's, if LB)
        try:
            reply = await conn.command(
                command.database,
                document,
                sequences=command.sequences,
                deadline=deadline,
                unacknowledged=command.unacknowledged,
                codec_options=op.codec_options,
            )
        except BaseException as exc:
            if monitored:
                self._failed(started, begin, failure_document(exc), exc)
            await self._release_after_error(server, conn, generation, exc)
            raise
        if command.unacknowledged:
            reply = {"ok": 1}
        if monitored:
            if is_ok(reply):
                self._succeeded(started, begin, reply)
            else:
                self._failed(started, begin, reply, None)
        error = None
        if "writeConcernError" in reply or not is_ok(reply):  # else from_command_reply: None
            error = ApplicationError.from_command_reply(
                reply,
                generation,
                max_wire_version=conn.max_wire_version,
                service_id=conn.service_id,
            )
        try:
            if error is not None:  # a command error reply: SDAM before check-in, as above
                await self._topology.handle_error(server.address, error)
        finally:
            pool.check_in(conn)
        return op.parse(reply)

    # -- command monitoring ----------------------------------------------------------------

    def _emit(self, event: Any) -> None:
        if self._publish is not None:
            self._publish(event)

    def _started(
        self,
        conn: Connection,
        command: Command,
        document: Mapping[str, Any],
        request_id: int,
        operation_id: int | None,
    ) -> CommandStartedEvent:
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
        return event

    def _succeeded(
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

    def _failed(
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


async def _pinned_server(topology: Topology, address: Address) -> Server:
    """A cursor's server (getMore, killCursors); gone from the topology: AutoReconnect."""
    server = topology.server(address)
    if server is None:
        raise AutoReconnect(f"{address[0]}:{address[1]} left the topology; its cursors are gone")
    return server


def _server_api_fields(conn: Connection) -> dict[str, Any]:
    """The versioned-API fields the connection adds to every command it sends (shown in the
    started event as the server receives them)."""
    server_api = conn._settings.server_api
    return server_api.command_fields() if server_api is not None else {}


def _was_redacted(started: CommandStartedEvent) -> bool:
    """A sensitive command was published with an empty command (only they are empty)."""
    return not started.command

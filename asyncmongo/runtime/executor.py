"""The operation executor: select a server, check out a connection, run, feed errors to SDAM.

``Executor.run_command`` is the one path every command takes (the public database/collection
API builds on it, issue #9). One attempt is ``_attempt``: retryable reads and writes (issue
#10) will loop around it with ``deprioritized`` servers and the same deadline.

SDAM: an error on the way (establishing a connection, the network, a state-change reply or
write concern error) becomes an ``ApplicationError`` and goes to
``Topology.handle_error``, whose pure verdict decides whether to mark the server Unknown,
clear its pool, cancel or request a check. The caller gets the error; cancellation at any
await leaves no connection checked out (the checkout context discards it).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from asyncmongo.bson import CodecOptions
from asyncmongo.core.address import Address
from asyncmongo.core.error_policy import (
    ApplicationError,
    ErrorPhase,
    is_state_change_error,
)
from asyncmongo.core.selection import Selection
from asyncmongo.errors import NotPrimaryError, OperationFailure, PoolClosedError
from asyncmongo.runtime.connection import Connection
from asyncmongo.runtime.server import Server
from asyncmongo.runtime.topology import Topology

__all__ = ["Executor"]


class Executor:
    """Runs commands against a topology."""

    __slots__ = ("_topology",)

    def __init__(self, topology: Topology) -> None:
        self._topology = topology

    async def run_command(
        self,
        db: str,
        command: Mapping[str, Any],
        selection: Selection,
        *,
        deadline: float | None = None,
        deprioritized: Collection[Address] = (),
        codec_options: CodecOptions | None = None,
    ) -> dict[str, Any]:
        """Run ``command`` on a server chosen for ``selection``; return the ok reply.

        ``deadline`` (``loop.time()``) bounds selection, checkout and the round trip.
        An ``ok: 0`` reply raises NotPrimaryError (state change codes) or OperationFailure.
        """
        operation = next(iter(command), "command")
        server = await self._topology.select_server(
            selection, deadline, deprioritized, operation=operation
        )
        return await self._attempt(server, db, command, deadline, codec_options)

    async def _attempt(
        self,
        server: Server,
        db: str,
        command: Mapping[str, Any],
        deadline: float | None,
        codec_options: CodecOptions | None,
    ) -> dict[str, Any]:
        """One try on one server (the retry seam)."""
        server.operation_count += 1
        try:
            conn = await self._check_out(server, deadline)
            return await self._run(server, conn, db, command, deadline, codec_options)
        finally:
            server.operation_count -= 1

    async def _check_out(self, server: Server, deadline: float | None) -> Connection:
        """A connection; an establishment error goes to SDAM first (a network error before
        the handshake completes changes nothing, an authentication error marks Unknown)."""
        pool = server.pool
        generation = pool.generation
        try:
            return await pool.check_out(deadline)
        except PoolClosedError:
            raise
        except Exception as exc:
            failed_auth = isinstance(exc, OperationFailure)
            phase = ErrorPhase.AUTHENTICATING if failed_auth else ErrorPhase.CONNECTING
            await self._topology.handle_application_error(
                server.address, exc, generation, phase=phase
            )
            raise

    async def _run(
        self,
        server: Server,
        conn: Connection,
        db: str,
        command: Mapping[str, Any],
        deadline: float | None,
        codec_options: CodecOptions | None,
    ) -> dict[str, Any]:
        """Run on a checked-out connection and give it back whatever happens."""
        pool = server.pool
        generation = pool.generation  # a checked-out connection is of the current generation
        try:
            reply = await conn.command(db, command, deadline=deadline, codec_options=codec_options)
        except BaseException as exc:
            if conn.is_closed or not isinstance(exc, Exception):
                pool.discard(conn, exc)  # cancelled or broken: never reused
            else:
                pool.check_in(conn)
            if isinstance(exc, Exception):
                await self._topology.handle_application_error(
                    server.address,
                    exc,
                    generation,
                    max_wire_version=conn.max_wire_version,
                    service_id=conn.service_id,
                )
            raise
        pool.check_in(conn)
        error = ApplicationError.from_command_reply(
            reply, generation, max_wire_version=conn.max_wire_version, service_id=conn.service_id
        )
        if error is not None:
            await self._topology.handle_error(server.address, error)
        _raise_for_reply(reply)
        return reply


def _raise_for_reply(reply: Mapping[str, Any]) -> None:
    """``ok: 0`` -> NotPrimaryError for state-change errors, else OperationFailure."""
    if reply.get("ok") in (1, 1.0, True):
        return
    message = reply.get("errmsg")
    text = message if isinstance(message, str) else "command failed"
    code = reply.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if is_state_change_error(code, text):
        raise NotPrimaryError(text, dict(reply), error_labels=reply.get("errorLabels") or ())
    raise OperationFailure(text, code, reply)


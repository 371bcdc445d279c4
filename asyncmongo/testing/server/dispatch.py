"""Routing one decoded request of the simulated server to what answers it, and shaping the
reply.

:class:`Dispatcher` is the network's handler. For each request it applies the faults (a
slow reply, a fired fail point), checks the handshake's client metadata, sends hellos to the
hello conversation (awaitable and exhaust, SDAM "Streaming Protocol") and every other command
to the :class:`~asyncmongo.testing.server.commands.CommandRunner`; the reply is decorated by
the role, answered once or, for an exhaust getMore, streamed batch by batch.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Mapping
from typing import Any

from asyncmongo.testing.failpoint import FailCommand
from asyncmongo.testing.protocol import Request
from asyncmongo.testing.replies import error_reply
from asyncmongo.testing.server.command_fields import HELLO_NAMES, app_name
from asyncmongo.testing.server.commands import CommandRunner, open_cursor
from asyncmongo.testing.server.faults import Faults, Preemption, primary_write_refusal
from asyncmongo.testing.server.network import Connection, Network
from asyncmongo.testing.server.role import RoleState
from asyncmongo.testing.store import Store
from asyncmongo.testing.streaming import awaitable_hello

#: Builds the hello reply the server sends now on a connection (``SimServer.hello_reply``).
HelloReply = Callable[[Mapping[str, Any], Connection | None], dict[str, Any]]


class Dispatcher:
    """Answers the requests of one server; see the module docstring."""

    __slots__ = ("_commands", "_faults", "_hello_reply", "_network", "_role", "_store",
                 "awaited_hellos", "command_counts")

    def __init__(self, *, network: Network, faults: Faults, role: RoleState,
                 commands: CommandRunner, store: Store, hello_reply: HelloReply) -> None:
        self._network = network
        self._faults = faults
        self._role = role
        self._commands = commands
        self._store = store
        self._hello_reply = hello_reply
        #: Requests answered, by command name (hello streams count each reply).
        self.command_counts: collections.Counter[str] = collections.Counter()
        #: Awaitable hellos received (topologyVersion + maxAwaitTimeMS).
        self.awaited_hellos = 0

    async def respond(self, conn: Connection, request: Request) -> bool:
        """Answer one request; False closes the connection."""
        await self._faults.delay(request.name)
        self.command_counts[request.name] += 1
        command = request.command
        if request.name in HELLO_NAMES and "client" in command:
            if conn.metadata is not None:
                return await self._network.send(conn, request, error_reply(
                    186, "The client metadata document may only be sent in the first hello"))
            conn.metadata = command["client"]
            conn.app_name = app_name(command)
        fired = self._faults.fire(request.name, conn.app_name)
        verdict = await self._carry_out(conn, request, fired)
        if verdict is not None:
            return verdict
        if request.name in HELLO_NAMES:
            return await self._hello(conn, request)
        return await self._command(conn, request, fired)

    async def _command(self, conn: Connection, request: Request, fired: FailCommand | None
                       ) -> bool:
        """Answer a command other than hello; ``fired`` is a fail point that fired without
        stopping the command (its writeConcernError goes into the reply)."""
        command = request.command
        written = self._faults.primary_write_verdict(command, self._role.role,
                                                     self._store.transactions)
        if written is not None and not written.applies_write:
            return await self._send_preemption(conn, request,
                                               primary_write_refusal(written, command))
        recovered = self._role.mongos_refusal(request.name, command, self._store.transactions)
        if recovered is not None:
            return await self._network.send(conn, request, self._role.decorate(recovered))
        reply = await self._commands.run(conn, request)
        self._commands.record_api(request.name, command, reply)
        if written is not None and written.fault.close_connection:
            return False  # onPrimaryTransactionalWrite: applied and recorded, no reply
        if fired is not None and fired.write_concern_error is not None and reply.get("ok"):
            reply = fired.add_write_concern_error(reply, command)
        self._role.add_recovery_token(reply, command)
        if request.more_to_come:
            return True
        if request.name == "getMore" and request.exhaust_allowed:
            return await self._stream_get_more(conn, request, reply)
        return await self._network.send(conn, request, self._role.decorate(reply))

    async def _stream_get_more(self, conn: Connection, request: Request,
                               reply: dict[str, Any]) -> bool:
        """An exhaust cursor (OP_MSG exhaustAllowed on getMore): moreToCome batches, each
        answering the previous reply, until the cursor is exhausted (id 0) or fails."""
        response_to = request.request_id
        while open_cursor(reply):
            sent = await self._network.send_reply(conn, request, self._role.decorate(reply),
                                                  more_to_come=True, response_to=response_to)
            if sent is None:
                return False
            response_to = sent
            # mongod runs the command again for every exhaust reply: fail points apply.
            fired = self._faults.fire(request.name, conn.app_name)
            verdict = await self._carry_out(conn, request, fired, response_to)
            if verdict is not None:
                return verdict
            reply = await self._commands.run(conn, request)
        return await self._network.send(conn, request, self._role.decorate(reply),
                                        response_to=response_to)

    async def _carry_out(self, conn: Connection, request: Request, fired: FailCommand | None,
                         response_to: int | None = None) -> bool | None:
        """Do what a fired fail point says before the command runs: block, close the
        connection (False) or answer its error (True); None: go on and run the command."""
        preempted = await self._faults.carry_out(fired, request.command)
        if preempted is None:
            return None
        return await self._send_preemption(conn, request, preempted, response_to)

    async def _send_preemption(self, conn: Connection, request: Request,
                               preempted: Preemption, response_to: int | None = None) -> bool:
        """Answer what a fault put in place of the command; False closes the connection."""
        if preempted.reply is None:
            return False
        reply = self._with_base_backoff(preempted.reply)
        return await self._network.send(conn, request, self._role.decorate(reply),
                                        response_to=response_to)

    def _with_base_backoff(self, reply: dict[str, Any]) -> dict[str, Any]:
        """Client backpressure: with the externalClientBaseBackoffMS parameter set, mongod
        tells clients the base backoff to use with each overload error (``baseBackoffMS``)."""
        base = self._commands.parameters.get("externalClientBaseBackoffMS")
        labels = reply.get("errorLabels") or ()
        if not isinstance(base, int | float) or base <= 0 or "SystemOverloadedError" not in labels:
            return reply
        return {**reply, "baseBackoffMS": base}

    # --- hello -----------------------------------------------------------------------------

    async def _hello(self, conn: Connection, request: Request) -> bool:
        """Answer hello; an awaitable one waits for a change, an exhaust one streams."""
        # mongod checks a hello's API parameters like any command's (a strict isMaster is
        # refused: it is not in API Version 1).
        refused = self._commands.api_refusal(request.name, request.command)
        if refused is not None:
            return await self._network.send(conn, request, refused)
        waiting = awaitable_hello(request.command) if self._role.streaming else None
        if waiting is not None:
            self.awaited_hellos += 1
            await self._role.clock.wait_for_change(*waiting)
        reply = self._hello_reply(request.command, conn)
        if waiting is None or not request.exhaust_allowed:
            return await self._network.send(conn, request, reply)
        return await self._stream_hello(conn, request, reply, waiting[1])

    async def _stream_hello(self, conn: Connection, request: Request,
                            reply: dict[str, Any], max_await_ms: float) -> bool:
        """Exhaust: moreToCome replies, each answering the previous one, until the client
        closes the connection (SDAM "Streaming Protocol")."""
        eof = asyncio.ensure_future(conn.reader.read(1))
        change: asyncio.Future[None] | None = None
        response_to = request.request_id
        try:
            while True:
                if not self._faults.silent:
                    sent = await self._network.send_reply(conn, request, reply,
                                                          more_to_come=True,
                                                          response_to=response_to)
                    if sent is None:
                        return False
                    response_to = sent
                change = asyncio.ensure_future(
                    self._role.clock.wait_for_change(reply.get("topologyVersion"),
                                                     max_await_ms))
                done, _ = await asyncio.wait({eof, change},
                                             return_when=asyncio.FIRST_COMPLETED)
                if eof in done:
                    return False
                verdict = await self._next_hello(conn, request, response_to)
                if verdict is not None:
                    return verdict
                reply = self._hello_reply(request.command, conn)
        finally:
            await _end_read(eof, change)

    async def _next_hello(self, conn: Connection, request: Request, response_to: int
                          ) -> bool | None:
        """mongod runs hello again for every exhaust reply: it is slowed and counted, fail
        points apply, and an error reply (without moreToCome) ends the stream."""
        await self._faults.delay(request.name)
        self.command_counts[request.name] += 1
        fired = self._faults.fire(request.name, conn.app_name)
        return await self._carry_out(conn, request, fired, response_to)


async def _end_read(eof: asyncio.Future[bytes], change: asyncio.Future[None] | None) -> None:
    """Cancel a hello stream's pending read and wait; the read must be over before the
    connection's read loop reads again (a fail point's error reply ends the stream, the
    connection stays): a pending read(1) makes the next readexactly raise "another coroutine
    is already waiting"."""
    eof.cancel()
    if change is not None:
        change.cancel()
    await asyncio.wait({eof})
    if not eof.cancelled():
        eof.exception()  # retrieved; EOF or a reset is the caller's business

"""The operation executor: select a server, check out a connection, run, feed errors to SDAM.

``Executor.run_command`` is the one path every command takes (the public database/collection
API builds on it, issue #9). One attempt is ``_attempt``: retryable reads and writes (issue
#10) will loop around it with ``deprioritized`` servers and the same deadline.

SDAM: an error on the way (establishing a connection, the network, a state-change reply or
write concern error) becomes an ``ApplicationError`` and goes to
``Topology.handle_error``, whose pure verdict decides whether to mark the server Unknown,
clear its pool, cancel or request a check. The caller gets the error; cancellation at any
await leaves no connection checked out (the checkout context discards it).

``run_operation`` is the path of operation objects (issue #10): the session (the one bound by
the API for ``session=``, the one owning a cursor, or an implicit one from the client's pool)
decorates each attempt (``asyncmongo.runtime.attempt``), and a retryable read or write gets
exactly one retry on a retryable error, on another mongos when sharded (deprioritized). When
the retry also fails, its error is raised, unless it says NoWritesPerformed: then the first
error is (retryable writes spec).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Collection, Mapping
from contextvars import ContextVar
from typing import Any, TypeVar

from asyncmongo.bson import CodecOptions
from asyncmongo.core.address import Address
from asyncmongo.core.error_policy import (
    ApplicationError,
    is_state_change_error,
)
from asyncmongo.core.operations.base import Operation, Target
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.core.selection import Selection
from asyncmongo.errors import AutoReconnect, MongoError, NotPrimaryError, OperationFailure
from asyncmongo.runtime.attempt import ClusterTimeKeeper, OperationSession, SessionOperation
from asyncmongo.runtime.connection import Connection
from asyncmongo.runtime.pool import Pinned
from asyncmongo.runtime.server import Server
from asyncmongo.runtime.topology import Topology

__all__ = ["Executor", "bound_session"]

T = TypeVar("T")

#: The explicit session of the API call in progress (``session=``; see asyncmongo.session).
bound_session: ContextVar[Any] = ContextVar("asyncmongo_bound_session", default=None)
NO_WRITES_PERFORMED = "NoWritesPerformed"
_CURSOR_OPS = frozenset({"getMore", "killCursors"})
_TXN_END = frozenset({"commitTransaction", "abortTransaction"})
#: Commands that may leave a server cursor open (pinned to its connection behind a load
#: balancer).
_CURSOR_OPENERS = frozenset({"find", "aggregate", "listCollections", "listIndexes"})
#: Sessions spec: commands that never take a session (endSessions names the ones to end).
_SESSIONLESS = frozenset(
    {
        "endSessions",
        "hello",
        "isMaster",
        "ismaster",
        "saslStart",
        "saslContinue",
        "authenticate",
        "getnonce",
    }
)


class Executor:
    """Runs commands against a topology.

    ``sessions`` is the client (``asyncmongo.session.ClientSessions``): it makes implicit
    sessions and says whether retryWrites/retryReads are on. Without it (tests of the
    topology alone) operations run without sessions and without retries.
    """

    __slots__ = ("_topology", "clock", "cursor_connections", "cursor_sessions", "sessions")

    def __init__(self, topology: Topology) -> None:
        self._topology = topology
        self.clock = ClusterTimeKeeper()
        self.sessions: Any = None
        #: (server, cursor id) -> the session its getMore/killCursors must use.
        self.cursor_sessions: dict[tuple[Address, int], OperationSession] = {}
        #: Load-balanced mode: (server, cursor id) -> its pinned connection.
        self.cursor_connections: dict[tuple[Address, int], _CursorPin] = {}

    async def run_operation(
        self,
        op: Operation[T],
        *,
        deadline: float | None = None,
        operation_id: int | None = None,
    ) -> tuple[T, Address]:
        """Run ``op`` in its session with the retry rules; (result, the server's address)."""
        session, implicit = self._session_for(op)
        # CSOT: inside with_transaction with timeoutMS the whole call shares one deadline,
        # and commit/abort honour the session's defaultTimeoutMS (the session carries it).
        cap = getattr(session, "_session_deadline", None)
        if cap is not None and (deadline is None or cap < deadline):
            deadline = cap
        owner = self.sessions
        options = getattr(owner, "options", None)
        attempt = SessionOperation(
            op,
            session,
            self.clock,
            owner=owner,
            retry_writes=bool(getattr(options, "retry_writes", False)),
            retry_reads=bool(getattr(options, "retry_reads", False)),
        )
        keep = False
        try:
            result, address = await self._attempts(attempt, deadline, operation_id)
            keep = self._track_cursor(op, session, result, address)
            return result, address
        finally:
            if implicit and not keep and session is not None:
                session._release()

    def _session_for(self, op: Operation[Any]) -> tuple[OperationSession | None, bool]:
        """(the session to use, whether this operation owns it as an implicit one)."""
        target = op.target
        if op.name in _CURSOR_OPS and target.address is not None:
            key = (target.address, getattr(op, "cursor_id", 0))
            owned = self.cursor_sessions.get(key)
            if owned is not None:
                return owned, False
        explicit = bound_session.get()
        if explicit is not None:
            return explicit, False
        if self.sessions is None or op.name in _SESSIONLESS:
            return None, False
        return self.sessions._implicit_session(), True

    def _track_cursor(
        self, op: Operation[Any], session: OperationSession | None, result: Any, address: Address
    ) -> bool:
        """Remember which session a cursor belongs to; True when it keeps an implicit one."""
        if session is None:
            return False
        if op.name in _CURSOR_OPS:
            key = (address, getattr(op, "cursor_id", 0))
            if op.name == "killCursors" or getattr(result, "cursor_id", 0) == 0:
                owned = self.cursor_sessions.pop(key, None)
                if owned is not None and owned._implicit:
                    owned._release()
            return False
        cursor_id = getattr(result, "cursor_id", None)
        if isinstance(cursor_id, int) and cursor_id:
            self.cursor_sessions[(address, cursor_id)] = session
            return True
        return False

    async def _attempts(
        self, attempt: SessionOperation[T], deadline: float | None, operation_id: int | None
    ) -> tuple[T, Address]:
        """The first attempt and, when allowed, one retry (retryable reads/writes specs)."""
        if attempt.name == "killCursors":
            released = self._release_broken_cursor_pin(attempt)
            if released is not None:
                return released
        deprioritized: list[Address] = []
        first_error: BaseException | None = None
        while True:
            try:
                server = await self._server_for(
                    attempt.target, deadline, attempt.name, deprioritized, operation_id
                )
            except Exception as exc:
                if first_error is not None:
                    raise first_error from exc  # no server for the retry: the original error
                attempt.failed(exc)
                raise
            attempt.attempt += 1
            attempt.address = server.address
            topology_type = self._topology.description.topology_type
            sharded = topology_type is TopologyType.SHARDED
            attempt.sharded = sharded
            server.operation_count += 1
            runs_on: Any = None
            try:
                if (
                    attempt.name in _CURSOR_OPS
                    or attempt.in_transaction
                    or topology_type is TopologyType.LOAD_BALANCED
                ):
                    conn, runs_on = await self._connection_for(attempt, server, deadline)
                else:  # the usual case, what _connection_for does for it
                    conn = await self._check_out(server, deadline)
                    runs_on = server
                result = await self._run_operation(runs_on, conn, attempt, deadline, operation_id)
                if runs_on is not server:  # pinned or held: nothing to settle on the pool
                    self._settle_cursor_connection(attempt, server, runs_on, result)
                return result, server.address
            except Exception as exc:
                if runs_on is not server and runs_on is not None:
                    self._settle_cursor_connection(attempt, server, runs_on, None)
                attempt.failed(exc)
                if first_error is None and attempt.may_retry(exc):
                    first_error = exc
                    if sharded:
                        deprioritized.append(server.address)
                    continue
                if (
                    first_error is not None
                    and isinstance(exc, MongoError)
                    and exc.has_error_label(NO_WRITES_PERFORMED)
                ):
                    raise first_error from exc
                replacement = attempt.replacement(exc)
                if replacement is not None:
                    raise replacement from exc
                raise
            finally:
                server.operation_count -= 1

    def _settle_cursor_connection(
        self, attempt: SessionOperation[Any], server: Server, runs_on: Any, result: Any
    ) -> None:
        """Load balancers spec: a cursor keeps the connection that opened it until it is
        exhausted or killed (``result`` None: the command failed). Only a ``_PinnedServer``
        has anything to settle: on a server's own pool every case below is a no-op."""
        pool = getattr(runs_on, "pool", None)
        cursor_id = getattr(result, "cursor_id", 0) if result is not None else 0
        if isinstance(pool, _HeldPool):
            if pool.held is not None and isinstance(cursor_id, int) and cursor_id:
                self.cursor_connections[(server.address, cursor_id)] = _CursorPin(
                    pool.held, server.pool
                )
                server.pool.pin(pool.held, Pinned.CURSOR)
                pool.held = None
            pool.release()
            return
        if attempt.name not in _CURSOR_OPS or not isinstance(pool, _CursorPinnedPool):
            return
        key = (server.address, getattr(attempt.op, "cursor_id", 0))
        if attempt.name == "killCursors" or (result is not None and cursor_id == 0):
            pin = self.cursor_connections.pop(key, None)
            if pin is not None:
                pin.pool.check_in(pin.conn)

    def _release_broken_cursor_pin(self, attempt: SessionOperation[T]) -> tuple[T, Address] | None:
        """Load balancers spec: after a getMore network error the connection stays pinned to
        the cursor, and closing the cursor sends no killCursors (the connection is no longer
        valid) but gives the connection back; (killCursors' result, address) when so."""
        address = attempt.target.address
        if attempt.name != "killCursors" or address is None:
            return None
        key = (address, getattr(attempt.op, "cursor_id", 0))
        pin = self.cursor_connections.get(key)
        if pin is None or pin.error is None:
            return None
        del self.cursor_connections[key]
        pin.pool.discard(pin.conn, pin.error)
        return attempt.op.parse({"ok": 1}), address

    async def _connection_for(
        self, attempt: SessionOperation[Any], server: Server, deadline: float | None
    ) -> tuple[Connection, Any]:
        """A checked-out connection and the server to run on: in load-balanced mode a
        transaction runs on the connection its session pinned (load balancers spec), which
        ``_PinnedServer`` keeps out of the pool until the session unpins it."""
        session = attempt.session
        if attempt.name in _CURSOR_OPS:
            key = (server.address, getattr(attempt.op, "cursor_id", 0))
            pin = self.cursor_connections.get(key)
            if pin is not None:
                unpin: Callable[[], object] = functools.partial(
                    self.cursor_connections.pop, key, None
                )
                closing = attempt.name == "killCursors"
                pool = _CursorPinnedPool(pin, unpin, closing)
                return pin.conn, _PinnedServer(server.address, pool)
        if session is None or not attempt.in_transaction:
            conn = await self._check_out(server, deadline)
            if (
                attempt.name in _CURSOR_OPENERS
                and self._topology.description.topology_type is TopologyType.LOAD_BALANCED
            ):
                return conn, _PinnedServer(server.address, _HeldPool(server.pool))
            return conn, server
        pinned = session._pinned_connection
        if pinned is not None:
            unpin = session._drop_pinned_connection
            return pinned, _PinnedServer(server.address, _PinnedPool(server.pool, unpin))
        conn = await self._check_out(server, deadline)
        if (
            self._topology.description.topology_type is not TopologyType.LOAD_BALANCED
            or attempt.name in _TXN_END  # a retried commit after an unpinning pins nothing
        ):
            return conn, server
        session._pin_connection(conn, server.pool, server.address)
        server.pool.pin(conn, Pinned.TRANSACTION)
        unpin = session._drop_pinned_connection
        return conn, _PinnedServer(server.address, _PinnedPool(server.pool, unpin))

    def _server_for(
        self,
        target: Target,
        deadline: float | None,
        name: str,
        deprioritized: Collection[Address] = (),
        operation_id: int | None = None,
    ) -> Awaitable[Server]:
        """The pinned server or one selected for the target (OperationExecutor refines it).

        A plain function returning what to await (selection's own coroutine, not one more
        around it: this runs for every operation)."""
        if target.address is not None:
            server = self._topology.server(target.address)
            if server is not None:
                return _ready(server)
        return self._topology.select_server(
            target.selection, deadline, deprioritized, operation=name, operation_id=operation_id
        )

    async def _run_operation(
        self,
        server: Server,
        conn: Connection,
        op: Operation[T],
        deadline: float | None,
        operation_id: int | None,
    ) -> T:
        """Build, run and parse on a checked-out connection (OperationExecutor adds command
        monitoring, read preferences and document sequences)."""
        command = op.build(conn)
        reply = await self._run(
            server, conn, command.database, command.document, deadline, op.codec_options
        )
        return op.parse(reply)

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
        """A connection from the server's pool. Establishment errors already went to SDAM
        (``runtime.establish``: it alone knows whether authentication had begun).

        The connection's handshake reply feeds the client's cluster time (as PyMongo does:
        it is an application connection's reply, so the first command on it already
        gossips). The monitors' hello replies do NOT: the sessions spec takes cluster times
        from non-SDAM responses only, since a heartbeat to a member of another deployment
        would otherwise leave an invalid, possibly never-surpassed cluster time."""
        conn = await server.pool.check_out(deadline)
        self.clock.advance(conn.hello)
        return conn

    async def _release_after_error(
        self, server: Server, conn: Connection, generation: int, exc: BaseException
    ) -> None:
        """Give back the connection an operation failed on: SDAM hears of the error first, so
        a cleared pool closes this connection as stale on check-in (SDAM: "Pool is cleared
        before application connection is checked in"); a cancelled operation's connection is
        never reused."""
        pool = server.pool
        if not isinstance(exc, Exception):
            pool.discard(conn, exc)
            return
        try:
            await self._topology.handle_application_error(
                server.address,
                exc,
                generation,
                max_wire_version=conn.max_wire_version,
                service_id=conn.service_id,
            )
        finally:
            if conn.is_closed:
                pool.discard(conn, exc)
            else:
                pool.check_in(conn)

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
        generation = pool.generation_of(conn)  # the connection's own (its service's, if LB)
        try:
            reply = await conn.command(db, command, deadline=deadline, codec_options=codec_options)
        except BaseException as exc:
            await self._release_after_error(server, conn, generation, exc)
            raise
        error = ApplicationError.from_command_reply(
            reply, generation, max_wire_version=conn.max_wire_version, service_id=conn.service_id
        )
        try:
            if error is not None:
                await self._topology.handle_error(server.address, error)
        finally:
            pool.check_in(conn)
        _raise_for_reply(reply)
        return reply


async def _ready(server: Server) -> Server:
    return server


class _PinnedPool:
    """The pool as a pinned connection sees it: check-in keeps it pinned (to a session's
    transaction or a cursor); a discard (broken or cancelled) also unpins it."""

    __slots__ = ("_pool", "_unpin")

    def __init__(self, pool: Any, unpin: Callable[[], object]) -> None:
        self._pool = pool
        self._unpin = unpin

    @property
    def generation(self) -> int:
        return int(self._pool.generation)

    def generation_of(self, conn: Connection) -> int:
        return int(self._pool.generation_of(conn))

    def check_in(self, conn: Connection) -> None:
        """Stays pinned (given back when its transaction or cursor ends)."""

    def discard(self, conn: Connection, exc: BaseException | None = None) -> None:
        self._unpin()
        self._pool.discard(conn, exc)


class _CursorPin:
    """A cursor's pinned connection (load-balanced mode) and the error that broke it, if a
    getMore failed on it: it stays pinned until the cursor is closed (load balancers spec)."""

    __slots__ = ("conn", "error", "pool")

    def __init__(self, conn: Connection, pool: Any) -> None:
        self.conn = conn
        self.pool = pool
        self.error: BaseException | None = None


class _CursorPinnedPool(_PinnedPool):
    """A cursor's pinned connection as a getMore or killCursors sees it: a broken connection
    stays pinned after a getMore (given back, unused, when the cursor is closed), while a
    killCursors releases it whatever happens."""

    __slots__ = ("_closing", "_pin")

    def __init__(self, pin: _CursorPin, unpin: Callable[[], object], closing: bool) -> None:
        super().__init__(pin.pool, unpin)
        self._pin = pin
        self._closing = closing

    def discard(self, conn: Connection, exc: BaseException | None = None) -> None:
        if self._closing:
            super().discard(conn, exc)
        else:
            self._pin.error = exc or AutoReconnect("the cursor's pinned connection broke")


class _HeldPool:
    """A cursor-opening command's pool in load-balanced mode: the check-in is held until the
    reply says whether a cursor stays open (then the connection is pinned to it)."""

    __slots__ = ("_pool", "held")

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.held: Connection | None = None

    @property
    def generation(self) -> int:
        return int(self._pool.generation)

    def generation_of(self, conn: Connection) -> int:
        return int(self._pool.generation_of(conn))

    def check_in(self, conn: Connection) -> None:
        self.held = conn

    def discard(self, conn: Connection, exc: BaseException | None = None) -> None:
        self.held = None
        self._pool.discard(conn, exc)

    def release(self) -> None:
        """Give a held connection back (no cursor, or the command failed)."""
        conn, self.held = self.held, None
        if conn is not None:
            self._pool.check_in(conn)


class _PinnedServer:
    """A server whose pool is a _PinnedPool (or _CursorPinnedPool) or a _HeldPool."""

    __slots__ = ("address", "pool")

    def __init__(self, address: Address, pool: _PinnedPool | _HeldPool) -> None:
        self.address = address
        self.pool = pool


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

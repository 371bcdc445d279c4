"""The executor: the one place an operation runs, from its session to the socket and back.

``await executor.run(op, session)``:

1. takes the session (the caller's, the one owning a cursor, or an implicit one) and lets it
   prepare the operation (``runtime.attempt.SessionOperation``: the transaction transition,
   retryability);
2. selects a server (the pinned one for getMore/killCursors and a pinned transaction; CRUD's
   $out/$merge rule for the read preference), or on a retry another one;
3. checks out a connection and decides how it is given back (:class:`Lease`: to the pool, kept
   pinned to a load-balanced transaction or cursor, or held until the reply says whether a
   cursor stays open on it);
4. builds the command, decorates it (session fields and $clusterTime by the attempt,
   ``$readPreference`` here), publishes command events, sends it and awaits the reply;
5. reports errors to SDAM (``Topology.handle_error``: its pure verdict marks the server
   Unknown, clears the pool, requests a check) before the connection goes back, parses the
   reply, and retries: once per the retryable reads/writes rules (until the deadline with
   timeoutMS), and any command that failed with a retryable overload error up to
   maxAdaptiveRetries times, after an exponential backoff with jitter (client backpressure).

Cancellation at any await leaves no connection checked out: the connection of a cancelled
attempt is discarded, never reused.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import math
import random
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

from asyncmongo.bson import CodecOptions
from asyncmongo.bson.codec_options import DEFAULT_CODEC_OPTIONS
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.core.address import Address, format_address
from asyncmongo.core.backpressure import (
    DEFAULT_MAX_ADAPTIVE_RETRIES,
    backoff_seconds,
    base_backoff_ms_of,
    is_overload_error,
    is_retryable_overload_error,
)
from asyncmongo.core.error_policy import ApplicationError, is_state_change_error
from asyncmongo.core.operations.base import Command, Operation, Target
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.operations.cursors import KillCursors
from asyncmongo.core.operations.replies import is_ok
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.core.selection import (
    Selection,
    read_preference_to_send,
    write_stage_read_preference,
)
from asyncmongo.core.wire.op_msg import DocumentSequence
from asyncmongo.errors import (
    AutoReconnect,
    ExecutionTimeout,
    MongoError,
    NotPrimaryError,
    OperationFailure,
)
from asyncmongo.monitoring.command import failure_document
from asyncmongo.runtime.attempt import (
    ClusterTimeKeeper,
    OperationSession,
    SessionOperation,
    may_retry_overload,
)
from asyncmongo.runtime.command_events import CommandEvents
from asyncmongo.runtime.connection import Connection
from asyncmongo.runtime.pool import Pinned
from asyncmongo.runtime.server import Server
from asyncmongo.runtime.topology import Route, Topology

__all__ = ["CommandEncrypter", "Executor", "Lease", "ReplyDecrypter"]

T = TypeVar("T")

#: Automatic decryption (client-side encryption spec): the raw reply, the codec options
#: the operation decodes with and the operation's deadline (CSOT), to the decrypted reply
#: decoded with them.
ReplyDecrypter = Callable[[Any, CodecOptions, float | None], Awaitable[dict[str, Any]]]
#: Automatic encryption (client-side encryption spec): the database, the command document,
#: its kind-1 sequences and the operation's deadline (CSOT), to the encrypted command sent
#: in their place (one document).
CommandEncrypter = Callable[
    [str, dict[str, Any], Sequence[DocumentSequence], float | None], Awaitable[dict[str, Any]]
]
#: Client-side encryption spec, "Size limits for Write Commands": with automatic encryption
#: write batches are split at 2 MiB before encryption (a larger single statement goes alone).
ENCRYPTION_BATCH_SPLIT_BYTES = 2 * 1024 * 1024
#: With a ReplyDecrypter, replies are read raw: decrypted as bytes, decoded once after.
RAW_REPLY: CodecOptions = CodecOptions(document_class=RawBSONDocument)

NO_WRITES_PERFORMED = "NoWritesPerformed"
#: The server's ReauthenticationRequired: the connection's credential expired.
REAUTHENTICATION_REQUIRED = 391
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
#: _CHECKOUT_GOSSIP: a checked-out connection's handshake reply feeds the client's cluster
#: time (as PyMongo does: it is an application connection's reply, so the first command on
#: it already gossips). The monitors' hello replies do NOT: the sessions spec takes cluster
#: times from non-SDAM responses only, since a heartbeat to a member of another deployment
#: would otherwise leave an invalid, possibly never-surpassed cluster time. Establishment
#: errors already went to SDAM (``runtime.establish`` alone knows whether authentication
#: had begun).


class Lease(enum.Enum):
    """How an attempt's connection is given back (load balancers spec: a cursor or a
    transaction keeps its connection until it ends)."""

    #: The usual: checked back in to the pool after the command.
    POOLED = "pooled"
    #: A load-balanced transaction's connection: stays pinned to the session.
    TRANSACTION = "transaction"
    #: A load-balanced cursor's connection (getMore, killCursors): stays pinned to the cursor.
    CURSOR = "cursor"
    #: A load-balanced cursor-opening command: pinned to the cursor if one stays open.
    HOLD = "hold"


class _CursorPin:
    """A cursor's pinned connection (load-balanced mode) and the error that broke it, if a
    getMore failed on it: it stays pinned until the cursor is closed (load balancers spec)."""

    __slots__ = ("conn", "error", "pool")

    def __init__(self, conn: Connection, pool: Any) -> None:
        self.conn = conn
        self.pool = pool
        self.error: BaseException | None = None


class Executor:
    """Runs operations against a topology.

    ``implicit_session`` makes a session for an operation run without one (None: operations
    run without sessions, as in tests of the topology alone); ``retry_reads`` and
    ``retry_writes`` are the client's retryReads/retryWrites; ``events`` publishes command
    monitoring events; ``max_adaptive_retries`` and ``overload_retargeting`` are the client
    backpressure options, ``jitter`` and ``sleep`` the backoff's randomness and wait.
    ``decrypt_reply`` (None: replies are decoded as they come) is
    automatic decryption's: a client with auto encryption options sets it.
    """

    __slots__ = (
        "_implicit_session",
        "_topology",
        "clock",
        "cursor_pins",
        "cursor_sessions",
        "decrypt_reply",
        "encrypt_command",
        "events",
        "jitter",
        "max_adaptive_retries",
        "overload_retargeting",
        "retry_reads",
        "retry_writes",
        "sleep",
    )

    def __init__(
        self,
        topology: Topology,
        *,
        implicit_session: Callable[[], OperationSession] | None = None,
        retry_reads: bool = False,
        retry_writes: bool = False,
        events: CommandEvents | None = None,
        max_adaptive_retries: int = DEFAULT_MAX_ADAPTIVE_RETRIES,
        overload_retargeting: bool = False,
        jitter: Callable[[], float] = random.random,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._topology = topology
        self._implicit_session = implicit_session
        self.retry_reads = retry_reads
        self.retry_writes = retry_writes
        #: Client backpressure: maxAdaptiveRetries, the most retries once an overload error
        #: was seen, and enableOverloadRetargeting (retry an overload error elsewhere).
        self.max_adaptive_retries = max_adaptive_retries
        self.overload_retargeting = overload_retargeting
        #: The backoff's jitter source (a float in [0, 1)) and its sleep: replaceable so tests
        #: pin the schedule or record it instead of waiting.
        self.jitter = jitter
        self.sleep = sleep
        self.events = events or CommandEvents()
        self.clock = ClusterTimeKeeper()
        #: (server, cursor id) -> the session its getMore/killCursors must use.
        self.cursor_sessions: dict[tuple[Address, int], OperationSession] = {}
        #: Load-balanced mode: (server, cursor id) -> its pinned connection.
        self.cursor_pins: dict[tuple[Address, int], _CursorPin] = {}
        self.decrypt_reply: ReplyDecrypter | None = None
        self.encrypt_command: CommandEncrypter | None = None

    async def run(
        self,
        op: Operation[T],
        session: OperationSession | None = None,
        *,
        deadline: float | None = None,
        operation_id: int | None = None,
        max_time: bool = False,
    ) -> T:
        """Run ``op`` in ``session`` with the retry rules; its parsed result. A cursor page
        whose cursor stays open names the server that owns it (``CursorPage.address``).

        The first attempt and the retries the rules allow: one under the retryable
        reads/writes specs, as many as the deadline allows with timeoutMS (CSOT
        "Retryability"), and at most maxAdaptiveRetries once an overload error was seen, with
        a backoff before each retry of an overload error (client backpressure, "Overload retry
        policy" and "Interaction with Other Retry Policies").

        ``deadline`` (a loop.time()) is the operation's timeoutMS: it bounds selection,
        checkout, connection establishment, every retry and the reply; with ``max_time``
        the command carries what is left of it, less the server's minimum RTT, as maxTimeMS
        (CSOT "Command Execution")."""
        name = op.name
        if session is None and name not in _CURSOR_OPS:
            # the usual: the operation's own implicit session (sessions spec), no deadline
            # of its own
            new_session = self._implicit_session
            implicit = False
            if new_session is not None and name not in _SESSIONLESS:
                session, implicit = new_session(), True
        else:
            session, implicit = self._session_for(op, session)
            if session is not None:
                # CSOT: inside with_transaction with timeoutMS the whole call shares one
                # deadline, and commit/abort honour the session's defaultTimeoutMS.
                cap = session._session_deadline
                if cap is not None and (deadline is None or cap < deadline):
                    deadline = cap
        # CSOT: timeoutMS is set (math.inf: to 0, no limit): retry until the deadline, no
        # socketTimeoutMS or wTimeoutMS; a finite deadline also times each step
        timed = deadline is not None
        if deadline == math.inf:
            deadline = None
        attempt = SessionOperation(
            op,
            session,
            self.clock,
            retry_writes=self.retry_writes,
            retry_reads=self.retry_reads,
            timed=timed,
            max_time=max_time,
        )
        keep = False
        try:
            if name == "killCursors" and self._release_broken_cursor_pin(attempt):
                return op.parse({"ok": 1})
            deprioritized: list[Address] = []
            #: The error to raise if no attempt succeeds (retryable writes, "error propagation").
            reported: BaseException | None = None
            retries = 0
            allowed_retries = math.inf if attempt.timed else 1
            topology = self._topology
            while True:
                overloaded: BaseException | None = None  # the overload error to back off from
                target = attempt.target
                # the usual case: the topology remembers what this selection resolved to
                route = (
                    topology.route(target.selection)
                    if not deprioritized and target.address is None and not target.write_stage
                    else None
                )
                if route is None:
                    route = await self._select(
                        attempt, target, deadline, deprioritized, operation_id, reported
                    )
                server, topology_type, read_preference = route
                attempt.attempt += 1
                attempt.address = server.address
                sharded = topology_type is TopologyType.SHARDED
                attempt.sharded = sharded
                server.operation_count += 1
                lease: Lease | None = None
                try:
                    if (
                        attempt.in_transaction
                        or attempt.name in _CURSOR_OPS
                        or topology_type is TopologyType.LOAD_BALANCED
                    ):
                        lease, conn = self._lease_for(attempt, server, topology_type)
                    else:  # the usual: a connection from the pool, back to it after the reply
                        lease, conn = Lease.POOLED, None
                    if conn is None:
                        # an idle connection without a coroutine when nobody waits or
                        # listens, else the full checkout (events, queue, establishment)
                        pool = server.pool
                        conn = pool.try_check_out() or await pool.check_out(deadline)
                        if "$clusterTime" in conn.hello:  # see _CHECKOUT_GOSSIP
                            self.clock.advance(conn.hello)
                        if lease is Lease.TRANSACTION:
                            self._pin_to_session(attempt, server, conn)
                    result = await self._execute(
                        server, conn, lease, attempt, deadline, operation_id, read_preference
                    )
                    if lease is not Lease.POOLED:
                        self._settle(attempt, server, lease, result)
                    break  # the attempt succeeded
                except Exception as exc:
                    if lease is not None and lease is not Lease.POOLED:
                        self._settle(attempt, server, lease, None)
                    attempt.failed(exc)
                    reported = _error_to_report(reported, exc)
                    overload = is_overload_error(exc)
                    if overload:
                        allowed_retries = self.max_adaptive_retries
                    # client backpressure: a retryable overload error may be retried (in a
                    # transaction too) as retryReads/retryWrites allow for this kind of command
                    retryable = attempt.may_retry(exc) or (
                        is_retryable_overload_error(exc)
                        and may_retry_overload(attempt.op, self.retry_reads, self.retry_writes)
                    )
                    if not retryable or retries >= allowed_retries or _expired(deadline):
                        if reported is not exc:
                            raise reported from exc
                        replacement = attempt.replacement(exc)
                        if replacement is not None:
                            raise replacement from exc
                        raise
                    retries += 1
                    attempt.retarget()
                    if overload:
                        overloaded = exc
                    if sharded or (overload and self.overload_retargeting):
                        deprioritized.append(server.address)
                finally:
                    server.operation_count -= 1
                if overloaded is not None:  # not counted in flight on the server while it waits
                    await self._back_off(retries, overloaded, deadline, reported or overloaded)
            cursor_id = getattr(result, "cursor_id", None)
            # a closed cursor of an operation that opens one (find_one...) has nothing to track
            if (
                session is not None
                and cursor_id is not None
                and (cursor_id or name in _CURSOR_OPS)
            ):
                keep = self._track_cursor(op, session, cursor_id, attempt.address)
            with_address = getattr(result, "with_address", None)
            if with_address is not None:  # a cursor's home: where its getMores go
                result = with_address(attempt.address)
            return result
        finally:
            if implicit and not keep and session is not None:
                session._release()

    def run_command(
        self,
        db: str,
        command: Mapping[str, Any],
        selection: Selection,
        *,
        deadline: float | None = None,
        codec_options: CodecOptions | None = None,
    ) -> Awaitable[dict[str, Any]]:
        """Run ``command`` on a server chosen for ``selection``; the ok reply (an ``ok: 0``
        raises NotPrimaryError for state change codes, else OperationFailure). An operation
        like any other: the document is the user's, so it is a generic command."""
        op: CommandOperation[dict[str, Any]] = CommandOperation(
            db,
            dict(command),
            _checked,
            Target(selection),
            codec_options or DEFAULT_CODEC_OPTIONS,
            generic=True,
        )
        return self.run(op, deadline=deadline)

    async def kill_dropped(self, kill: KillCursors, deadline: float | None) -> None:
        """killCursors for a cursor the application dropped while it was open (see
        ``runtime.cursor_reaper``). Whatever the outcome the cursor is forgotten: its
        implicit session released, a connection pinned to it discarded. A cursor of an
        explicit session is only forgotten: the application's session is not used behind its
        back (ending it ends the cursor on the server)."""
        address = kill.target.address
        assert address is not None, "a killCursors names its cursor's server"
        key = (address, kill.cursor_id)
        owned = self.cursor_sessions.get(key)
        try:
            if owned is None or owned._implicit:
                await self.run(kill, deadline=deadline)
        except MongoError:
            pass  # best effort, as cursor.close(): the server times idle cursors out anyway
        finally:
            self._forget_session(key)
            pin = self.cursor_pins.pop(key, None)
            if pin is not None:
                pin.pool.discard(pin.conn, pin.error)

    # -- sessions ----------------------------------------------------------------------------

    def _session_for(
        self, op: Operation[Any], session: OperationSession | None
    ) -> tuple[OperationSession | None, bool]:
        """(the session to use, whether this operation owns it as an implicit one)."""
        target = op.target
        if target.address is not None and op.name in _CURSOR_OPS:
            owned = self.cursor_sessions.get((target.address, getattr(op, "cursor_id", 0)))
            if owned is not None:
                return owned, False
        if session is not None:
            return session, False
        if self._implicit_session is None or op.name in _SESSIONLESS:
            return None, False
        return self._implicit_session(), True

    def _track_cursor(
        self, op: Operation[Any], session: OperationSession, cursor_id: Any, address: Any
    ) -> bool:
        """Remember which session a cursor belongs to; True when it keeps an implicit one."""
        if op.name in _CURSOR_OPS:
            key = (address, getattr(op, "cursor_id", 0))
            if op.name == "killCursors" or cursor_id == 0:
                self._forget_session(key)
            return False
        if isinstance(cursor_id, int) and cursor_id:
            self.cursor_sessions[(address, cursor_id)] = session
            return True
        return False

    def _forget_session(self, key: tuple[Address, int]) -> None:
        """The cursor ``key`` is gone: forget its session, releasing an implicit one."""
        owned = self.cursor_sessions.pop(key, None)
        if owned is not None and owned._implicit:
            owned._release()

    # -- attempts ----------------------------------------------------------------------------

    async def _select(
        self,
        attempt: SessionOperation[Any],
        target: Target,
        deadline: float | None,
        deprioritized: list[Address],
        operation_id: int | None,
        reported: BaseException | None,
    ) -> Route:
        """Selection for an attempt the topology has no remembered route for: the server,
        the topology's type and the ``$readPreference`` to send. When a retry finds no
        server, the error to raise is the previous attempt's (``reported``) unless the
        deadline ran out (CSOT: then a timeout error)."""
        topology = self._topology
        try:
            server = await self._server_for(
                target, deadline, attempt.name, deprioritized, operation_id
            )
        except Exception as exc:
            if reported is not None:
                if deadline is not None and getattr(exc, "timeout", False):
                    raise exc from reported  # CSOT: out of time, a timeout error
                raise reported from exc  # no server for the retry: the previous error
            attempt.failed(exc)
            raise
        description = topology.description
        read_preference = (
            None
            if target.address is not None
            else read_preference_to_send(description, target.selection, server.address)
        )
        return Route(server, description.topology_type, read_preference)

    async def _back_off(
        self, retry: int, exc: BaseException, deadline: float | None, reported: BaseException
    ) -> None:
        """Client backpressure: sleep ``jitter * min(MAX_BACKOFF, base * 2**retry)`` before
        retrying an overload error; a backoff that would end past the deadline ends the
        operation now with the error instead. The connection is already back in the pool."""
        delay = backoff_seconds(retry, self.jitter(), base_backoff_ms_of(exc))
        if deadline is not None and asyncio.get_running_loop().time() + delay > deadline:
            if reported is exc:
                raise exc
            raise reported from exc
        if delay > 0:
            await self.sleep(delay)

    def _server_for(
        self,
        target: Target,
        deadline: float | None,
        name: str,
        deprioritized: Collection[Address] = (),
        operation_id: int | None = None,
    ) -> Awaitable[Server]:
        """The cursor's server, or one selected for the target. A plain function returning
        what to await (selection's own coroutine, not one more around it)."""
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

    # -- connections -------------------------------------------------------------------------

    def _lease_for(
        self, attempt: SessionOperation[Any], server: Server, topology_type: TopologyType
    ) -> tuple[Lease, Connection | None]:
        """How the attempt gets its connection and gives it back: (the lease, the pinned
        connection it runs on, or None to check one out of the pool). In load-balanced mode a
        cursor's getMore runs on the cursor's connection, and a transaction on the connection
        its session pinned (load balancers spec)."""
        load_balanced = topology_type is TopologyType.LOAD_BALANCED
        if attempt.name in _CURSOR_OPS:
            pin = self.cursor_pins.get((server.address, getattr(attempt.op, "cursor_id", 0)))
            if pin is not None:
                return Lease.CURSOR, pin.conn
        session = attempt.session
        if session is None or not attempt.in_transaction:
            if load_balanced and attempt.name in _CURSOR_OPENERS:
                return Lease.HOLD, None
            return Lease.POOLED, None
        pinned = session._pinned_connection
        if pinned is not None:
            return Lease.TRANSACTION, pinned
        if not load_balanced or attempt.name in _TXN_END:
            return Lease.POOLED, None  # a retried commit after an unpinning pins nothing
        return Lease.TRANSACTION, None  # checked out, then pinned to the session

    @staticmethod
    def _pin_to_session(attempt: SessionOperation[Any], server: Server, conn: Connection) -> None:
        """Load balancers spec: a transaction keeps its first connection until it ends."""
        assert attempt.session is not None
        attempt.session._pin_connection(conn, server.pool, server.address)
        server.pool.pin(conn, Pinned.TRANSACTION)

    def _give_back(
        self,
        server: Server,
        conn: Connection,
        lease: Lease,
        attempt: SessionOperation[Any],
        error: BaseException | None = None,
    ) -> None:
        """The command is over: give the connection back as its lease says (``error``: it
        failed or was interrupted and must not be reused)."""
        pool = server.pool
        if lease is Lease.POOLED:
            if error is None:
                pool.check_in(conn)
            else:
                pool.discard(conn, error)
        elif lease is Lease.HOLD:
            attempt.held = conn if error is None else None
            if error is not None:
                pool.discard(conn, error)
        elif error is None:
            return  # stays pinned to its transaction or cursor
        elif lease is Lease.TRANSACTION:
            assert attempt.session is not None
            attempt.session._drop_pinned_connection()
            pool.discard(conn, error)
        else:  # a cursor's: a broken getMore keeps it pinned until the cursor is closed
            key = (server.address, getattr(attempt.op, "cursor_id", 0))
            if attempt.name == "killCursors":
                self.cursor_pins.pop(key, None)
                pool.discard(conn, error)
            else:
                pin = self.cursor_pins.get(key)
                if pin is not None:
                    pin.error = error

    def _settle(
        self, attempt: SessionOperation[Any], server: Server, lease: Lease, result: Any
    ) -> None:
        """After a pinned or held attempt (``result`` None: it failed): a cursor keeps the
        connection that opened it until it is exhausted or killed (load balancers spec)."""
        cursor_id = getattr(result, "cursor_id", 0) if result is not None else 0
        if lease is Lease.HOLD:
            held, attempt.held = attempt.held, None
            if held is None:
                return
            if isinstance(cursor_id, int) and cursor_id:
                self.cursor_pins[(server.address, cursor_id)] = _CursorPin(held, server.pool)
                server.pool.pin(held, Pinned.CURSOR)
            else:
                server.pool.check_in(held)
            return
        if lease is not Lease.CURSOR:
            return
        key = (server.address, getattr(attempt.op, "cursor_id", 0))
        if attempt.name == "killCursors" or (result is not None and cursor_id == 0):
            pin = self.cursor_pins.pop(key, None)
            if pin is not None:
                pin.pool.check_in(pin.conn)

    def _release_broken_cursor_pin(self, attempt: SessionOperation[Any]) -> bool:
        """Load balancers spec: after a getMore network error the connection stays pinned to
        the cursor, and closing the cursor sends no killCursors (the connection is no longer
        valid) but gives the connection back. True when so."""
        address = attempt.target.address
        if address is None:
            return False
        key = (address, getattr(attempt.op, "cursor_id", 0))
        pin = self.cursor_pins.get(key)
        if pin is None or pin.error is None:
            return False
        del self.cursor_pins[key]
        pin.pool.discard(pin.conn, pin.error)
        attempt.address = address
        return True

    # -- one attempt on one connection -------------------------------------------------------

    async def _execute(
        self,
        server: Server,
        conn: Connection,
        lease: Lease,
        attempt: SessionOperation[T],
        deadline: float | None,
        operation_id: int | None,
        read_preference: dict[str, Any] | None,
    ) -> T:
        """Build, decorate, send and parse on a leased connection (``read_preference``: the
        ``$readPreference`` to add, if any); SDAM hears of an error
        before the connection goes back (SDAM: "Pool is cleared before application
        connection is checked in"), so a cleared pool closes it as stale."""
        encrypt = self.encrypt_command
        try:
            command, document = attempt.build_document(
                conn if encrypt is None else _EncryptionLimits(conn))
            timed = attempt.timed
            checked_at = None
            if timed:
                if deadline is not None:
                    checked_at = conn.time()  # once per attempt
                document = self._csot_fields(
                    document, server, deadline, attempt.max_time, checked_at)
            if read_preference is not None:
                document["$readPreference"] = read_preference  # the attempt's own copy
            if encrypt is not None:
                # Client-side encryption spec: encrypted before command monitoring sees it,
                # as one document (the sequences folded in).
                document = await encrypt(command.database, document, command.sequences,
                                         deadline)
                checked_at = None  # encrypting took time: the connection reads the clock
                command = Command(command.database, document, (), command.unacknowledged)
        except BaseException:
            self._give_back(server, conn, lease, attempt)  # a client-side refusal sent nothing
            raise
        events = self.events
        monitored = events.wanted
        if monitored:
            started, begin = events.started(conn, command, document, operation_id)
        decrypt_reply = self.decrypt_reply
        codec_options = attempt.codec_options if decrypt_reply is None else RAW_REPLY
        try:
            reply = await conn.command(
                command.database,
                document,
                sequences=command.sequences,
                deadline=deadline,
                unacknowledged=command.unacknowledged,
                codec_options=codec_options,
                csot=timed,
                checked_at=checked_at,
            )
            ok = command.unacknowledged or is_ok(reply)
            if (
                not ok
                and reply.get("code") == REAUTHENTICATION_REQUIRED
                and conn.authenticator is not None
            ):
                # Auth spec, "Reauthentication": authenticate this connection again (no
                # hello) and send the same command once more, retryable or not.
                if monitored:
                    events.failed(started, begin, reply, None)
                    monitored = False
                await _reauthenticate(conn, deadline)
                monitored = events.wanted
                if monitored:
                    started, begin = events.started(conn, command, document, operation_id)
                reply = await conn.command(
                    command.database,
                    document,
                    sequences=command.sequences,
                    deadline=deadline,
                    unacknowledged=command.unacknowledged,
                    codec_options=codec_options,
                    csot=timed,
                )
                ok = command.unacknowledged or is_ok(reply)
        except BaseException as exc:
            if monitored:
                events.failed(started, begin, failure_document(exc), exc)
            await self._release_after_error(server, conn, lease, attempt, exc)
            raise
        if command.unacknowledged:
            reply = {"ok": 1}
        if monitored:
            if ok:
                events.succeeded(started, begin, reply)
            else:
                events.failed(started, begin, reply, None)
        error = None
        if not ok or "writeConcernError" in reply:  # else from_command_reply: None
            error = ApplicationError.from_command_reply(
                reply,
                # the connection's own generation (its service's, if LB), fixed when it was
                # created: asked only when an error needs it, while it is still checked out
                server.pool.generation_of(conn),
                max_wire_version=conn.max_wire_version,
                service_id=conn.service_id,
            )
        if error is None and lease is Lease.POOLED:
            server.pool.check_in(conn)  # the usual end of an attempt
        else:
            try:
                if error is not None:
                    await self._topology.handle_error(server.address, error)
            finally:
                self._give_back(server, conn, lease, attempt)
        if decrypt_reply is not None and not command.unacknowledged:
            # Client-side encryption spec: decrypt after the connection is back (the key
            # vault's reads may need one) and after command monitoring (events see ciphertext).
            reply = await decrypt_reply(reply, attempt.codec_options, deadline)
        return attempt.parse(reply)

    async def _release_after_error(
        self,
        server: Server,
        conn: Connection,
        lease: Lease,
        attempt: SessionOperation[Any],
        exc: BaseException,
    ) -> None:
        """Give back the connection an attempt failed on: SDAM hears of the error first; a
        cancelled attempt's connection is never reused."""
        if not isinstance(exc, Exception):
            self._give_back(server, conn, lease, attempt, exc)
            return
        try:
            await self._topology.handle_application_error(
                server.address,
                exc,
                server.pool.generation_of(conn),  # its own, fixed at its creation
                max_wire_version=conn.max_wire_version,
                service_id=conn.service_id,
            )
        finally:
            self._give_back(server, conn, lease, attempt, exc if conn.is_closed else None)

    def _csot_fields(
        self,
        document: dict[str, Any],
        server: Server,
        deadline: float | None,
        max_time: bool,
        now: float | None,
    ) -> dict[str, Any]:
        """CSOT "Command Execution": a command that cannot finish in time (at ``now``, the
        loop.time() when a ``deadline`` is set) is not sent; one that can carries maxTimeMS
        = remaining - minRoundTripTime (replacing the deprecated per-operation maxTimeMS),
        unless ``max_time`` is False (getMore, iteration mode) or the server is a
        mongocryptd."""
        if "writeConcern" in document:
            document = _without_wtimeout(document)
        if deadline is None or now is None:
            return document
        address = server.address
        known = self._topology.description.servers.get(address)
        rtt_ms = (known.min_round_trip_time_ms if known is not None else None) or 0.0
        remaining_ms = (deadline - now) * 1000
        if remaining_ms <= rtt_ms:
            raise timeout_before_send(address, remaining_ms, rtt_ms)
        budget = int(remaining_ms - rtt_ms) or 1
        if known is not None and known.iscryptd:
            # CSOT "Client Side Encryption": never to mongocryptd, so that the marked-up
            # command can carry the application's maxTimeMS once encrypted.
            return document
        if not max_time:
            wait = document.get("maxTimeMS")  # an awaitData getMore's maxAwaitTimeMS
            if isinstance(wait, int) and wait > budget:
                document["maxTimeMS"] = budget
            return document
        document["maxTimeMS"] = budget  # the attempt's own copy of the command
        return document


async def _pinned_server(topology: Topology, address: Address) -> Server:
    """A cursor's server (getMore, killCursors); gone from the topology: AutoReconnect."""
    server = topology.server(address)
    if server is None:
        raise AutoReconnect(f"{address[0]}:{address[1]} left the topology; its cursors are gone")
    return server


def timeout_before_send(address: Address, remaining_ms: float, rtt_ms: float) -> ExecutionTimeout:
    """CSOT: the command was not sent, its budget being spent or within the server's minimum
    round trip time (an ExecutionTimeout, as PyMongo raises, with no server reply)."""
    return ExecutionTimeout(
        f"{format_address(address)}: timeoutMS expired before send: {max(remaining_ms, 0):.0f}ms "
        f"left, server minimum round trip time {rtt_ms:.0f}ms",
        50,
    )


def _without_wtimeout(document: dict[str, Any]) -> dict[str, Any]:
    """CSOT: wTimeoutMS (deprecated) is ignored when timeoutMS is set."""
    concern = document["writeConcern"]
    if not isinstance(concern, Mapping) or "wtimeout" not in concern:
        return document
    rest = {k: v for k, v in concern.items() if k != "wtimeout"}
    if rest:
        return {**document, "writeConcern": rest}
    return {k: v for k, v in document.items() if k != "writeConcern"}


def _checked(reply: Mapping[str, Any]) -> dict[str, Any]:
    """``ok: 0`` -> NotPrimaryError for state-change errors, else OperationFailure."""
    if reply.get("ok") in (1, 1.0, True):
        return dict(reply) if not isinstance(reply, dict) else reply
    message = reply.get("errmsg")
    text = message if isinstance(message, str) else "command failed"
    code = reply.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if is_state_change_error(code, text):
        raise NotPrimaryError(text, dict(reply), error_labels=reply.get("errorLabels") or ())
    raise OperationFailure(text, code, reply)


async def _reauthenticate(conn: Connection, deadline: float | None) -> None:
    """After ReauthenticationRequired (391): a fresh conversation on ``conn``; a connection
    whose reauthentication failed is closed (it is never reused half-authenticated)."""
    assert conn.authenticator is not None
    try:
        await conn.authenticator.reauthenticate(conn, conn.hello, deadline=deadline)
    except BaseException:
        conn.close()
        raise


def _error_to_report(reported: BaseException | None, exc: BaseException) -> BaseException:
    """Retryable writes, "error propagation": the most recent error that says a write was
    attempted; while every error says none was (``NoWritesPerformed``), the first."""
    if reported is None:
        return exc
    if isinstance(exc, MongoError) and exc.has_error_label(NO_WRITES_PERFORMED):
        return reported
    return exc


def _expired(deadline: float | None) -> bool:
    """Whether the operation's timeoutMS has run out: no retry starts then (CSOT
    "Retryability": retries continue only while time is left)."""
    return deadline is not None and asyncio.get_running_loop().time() >= deadline


class _EncryptionLimits:
    """The connection as an operation building a command for automatic encryption sees it:
    write batches split at 2 MiB (``batch_split_bytes``), every other limit the server's."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    @property
    def max_wire_version(self) -> int:
        return self._conn.max_wire_version

    @property
    def max_bson_object_size(self) -> int:
        return self._conn.max_bson_object_size

    @property
    def max_message_size_bytes(self) -> int:
        return self._conn.max_message_size_bytes

    @property
    def max_write_batch_size(self) -> int:
        return self._conn.max_write_batch_size

    @property
    def batch_split_bytes(self) -> int:
        return ENCRYPTION_BATCH_SPLIT_BYTES

    @property
    def supports_sessions(self) -> bool:
        return self._conn.supports_sessions

    @property
    def supports_retryable_writes(self) -> bool:
        return self._conn.supports_retryable_writes

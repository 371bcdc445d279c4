"""The simulated server: an asyncio TCP (optionally TLS) listener on 127.0.0.1 that speaks the
wire protocol like a mongod 8.0 (or a mongos), one task per client connection.

A :class:`SimServer` plays one member: its :class:`~asyncmongo.testing.member.Role`, its
:class:`~asyncmongo.testing.streaming.TopologyClock`, its fail points and network faults. It
answers ``hello`` itself (streaming and exhaust included), authenticates with
:class:`~asyncmongo.testing.scram.SaslServer`, refuses what its role cannot do (writes on a
secondary: NotWritablePrimary; reads without secondaryOk: NotPrimaryNoSecondaryOk) and hands
every CRUD/admin command to its :class:`~asyncmongo.testing.store.Store` (shared by the members
of a replica set). Deployments (``asyncmongo.testing.deployment``) wire several together.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import enum
import os
import ssl
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson import Binary, Int64, ObjectId, Timestamp
from asyncmongo.core.wire.compression import SUPPORTED_COMPRESSORS
from asyncmongo.core.wire.opcodes import HEADER, HEADER_SIZE, OpCode
from asyncmongo.errors import ConfigurationError, ProtocolError
from asyncmongo.testing import failpoint, primary_write_failpoint, stable_api, write_concern
from asyncmongo.testing.builtins import BUILTINS, ConnectionInfo
from asyncmongo.testing.codes import NOT_PRIMARY_CODES
from asyncmongo.testing.failpoint import FailCommand, FailPointState
from asyncmongo.testing.member import HelloState, Role, build_hello
from asyncmongo.testing.mongos_router import TransactionRouter
from asyncmongo.testing.protocol import Request, decode_request, encode_reply, read_header
from asyncmongo.testing.replies import error_reply
from asyncmongo.testing.replset import ReplicaSetGroup
from asyncmongo.testing.scram import SaslServer, UserDirectory
from asyncmongo.testing.store import SessionContext, Store
from asyncmongo.testing.store.change_streams import is_change_stream
from asyncmongo.testing.store.tailable import DEFAULT_AWAIT_MS
from asyncmongo.testing.store.transactions import lsid_of
from asyncmongo.testing.store.where import javascript_sleeps
from asyncmongo.testing.streaming import TopologyClock, awaitable_hello
from asyncmongo.testing.tls import peer_subject

HELLO_NAMES = frozenset({"hello", "isMaster", "ismaster"})
WRITE_COMMANDS = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify",
                            "create", "drop", "dropDatabase", "createIndexes", "dropIndexes",
                            "deleteIndexes", "collMod", "commitTransaction",
                            "abortTransaction", "bulkWrite"})
READ_COMMANDS = frozenset({"find", "aggregate", "count", "distinct", "listCollections",
                           "listIndexes", "listDatabases"})
#: Commands an unauthenticated connection may run when the server has users.
NO_AUTH_COMMANDS = HELLO_NAMES | {"saslStart", "saslContinue", "authenticate", "ping",
                                  "buildInfo", "buildinfo", "getnonce", "logout", "endSessions"}
#: Fields of the command envelope the store does not need.
_ENVELOPE = frozenset({"$db", "$readPreference", "$clusterTime", "apiVersion", "apiStrict",
                       "apiDeprecationErrors", "$audit", "maxTimeMS"})

#: Pauses (seconds) between tries of a plain write an open transaction's document lock refused:
#: mongod blocks the write until the transaction ends, the synchronous store answers
#: WriteConflict at once, so the front end waits a little (0.3 s in all) before giving up.
LOCK_WAIT_PAUSES = (0.005, 0.01, 0.02, 0.04, 0.08, 0.145)
#: How often an awaitData getMore looks for new documents while it waits (seconds).
AWAIT_DATA_POLL_S = 0.005

StepDownHook = Callable[["SimServer"], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ServerStatistics:
    """What :meth:`SimServer.statistics` reports."""

    role: Role
    host: str
    running: bool
    silent: bool
    slow_ms: float
    connections: int
    total_connections: int
    topology_version: tuple[ObjectId, int]
    compressed_requests: Mapping[str, int]
    command_counts: Mapping[str, int]
    awaited_hellos: int
    fail_points: Mapping[str, str]


class ReplyFault(enum.Enum):
    """A broken reply the server can send instead of the real one."""

    GARBAGE = "garbage"  # a header with an unknown opcode, then noise
    TRUNCATED = "truncated"  # the first half of the reply, then the connection closes


@dataclass(frozen=True, slots=True)
class _ReplyFault:
    """A pending broken reply and the commands it targets (None: all but hello)."""

    kind: ReplyFault
    commands: frozenset[str] | None


def _fault_commands(commands: Iterable[str] | None) -> frozenset[str] | None:
    return frozenset(commands) if commands is not None else None


class _Connection:
    """One accepted client connection."""

    __slots__ = ("app_name", "connection_id", "metadata", "peer", "peer_subject", "reader",
                 "sasl", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 connection_id: int, users: UserDirectory) -> None:
        self.reader = reader
        self.writer = writer
        self.connection_id = connection_id
        self.sasl = SaslServer(users)
        self.app_name: str | None = None
        #: The handshake's ``client`` document (mongod accepts it once per connection).
        self.metadata: Mapping[str, Any] | None = None
        #: The TLS client certificate's subject (MONGODB-X509), None without one.
        self.peer_subject = peer_subject(writer.get_extra_info("ssl_object"))
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "unknown"


class SimServer:
    """One simulated mongod/mongos; see the module docstring.

    Start it with ``await server.start()`` (or ``async with``); ``port=0`` picks a free port
    and :attr:`port` reports it. Fault injection (:meth:`partition`, :meth:`slow`,
    :meth:`send_garbage`, :meth:`send_truncated`, :meth:`fail_point`) takes effect at once.
    """

    def __init__(
        self,
        role: Role = Role.STANDALONE,
        *,
        store: Store | None = None,
        port: int = 0,
        users: UserDirectory | None = None,
        ssl_context: ssl.SSLContext | None = None,
        streaming: bool = True,
        compressors: tuple[str, ...] = SUPPORTED_COMPRESSORS,
        replica_set: ReplicaSetGroup | None = None,
        load_balanced: bool = False,
        services: int = 1,
        on_step_down: StepDownHook | None = None,
        on_unreachable: Callable[[SimServer], None] | None = None,
        count_acknowledgers: Callable[[], int] | None = None,
        host_name: str = "127.0.0.1",
    ) -> None:
        self.role = role
        #: The name the member gives itself in hello's ``me``/``hosts`` (it always listens on
        #: 127.0.0.1): e.g. ``"localhost"`` for the DNS seedlist tests, whose replica set is
        #: named ``localhost:27017``... while the SRV records point at another name.
        self.host_name = host_name
        self.store = store if store is not None else Store()
        self.users = users if users is not None else UserDirectory()
        self.ssl_context = ssl_context
        self.streaming = streaming
        self.compressors = compressors
        self.replica_set = replica_set
        if replica_set is not None:
            # Change events take their cluster times from the set's optimes, so a reply's
            # operationTime works as a change stream's startAtOperationTime.
            self.store.changes.tick = replica_set.record_write
        self.load_balanced = load_balanced
        #: Behind a load balancer: one serviceId per backend mongos; connection N reaches
        #: backend N mod len(service_ids), as a round-robin balancer spreads them.
        self.service_ids = tuple(ObjectId() for _ in range(max(1, services)))
        self.on_step_down = on_step_down
        #: Called when the member stops or is partitioned (a replica set may elect anew).
        self.on_unreachable = on_unreachable
        #: How many data-bearing members could acknowledge a write now (write concern).
        self.count_acknowledgers = count_acknowledgers
        self.clock = TopologyClock()
        self.transaction_router = TransactionRouter()
        self.fail_points: dict[str, FailPointState] = {}
        #: Server parameters (getParameter/setParameter; requireApiVersion and
        #: acceptApiVersion2 steer the Stable API checks, see stable_api).
        self.parameters: dict[str, Any] = dict(stable_api.DEFAULT_PARAMETERS)
        #: The API parameters open cursors and transactions began with.
        self.api_memory = stable_api.ApiParameterMemory()
        self._port = port
        self._listener: asyncio.Server | None = None
        self._connections: dict[_Connection, asyncio.Task[Any]] = {}
        self._next_connection_id = 0
        self._next_request_id = 0
        self._started_once = False
        self._silent = False
        self._slow_ms = 0.0
        self._slow_commands: frozenset[str] | None = None
        #: Requests answered, by command name (hello streams count each reply).
        self.command_counts: collections.Counter[str] = collections.Counter()
        #: Awaitable hellos received (topologyVersion + maxAwaitTimeMS).
        self.awaited_hellos = 0
        self._reply_faults: list[_ReplyFault] = []
        self._cluster_time = Timestamp(0, 0)
        #: How many requests arrived compressed, by compressor name (for tests).
        self.compressed_requests: collections.Counter[str] = collections.Counter()

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`; the requested one before)."""
        return self._port

    @property
    def host(self) -> str:
        """``"<host_name>:<port>"`` (``127.0.0.1:<port>`` by default): how the member names
        itself in hello's ``me``/``hosts``."""
        return f"{self.host_name}:{self._port}"

    @property
    def running(self) -> bool:
        return self._listener is not None

    def service_id_of(self, connection_id: int) -> ObjectId:
        """The serviceId of the backend a (load-balanced) connection reached."""
        return self.service_ids[connection_id % len(self.service_ids)]

    @property
    def reachable(self) -> bool:
        """Running and not partitioned: what the other members of a set can see."""
        return self._listener is not None and not self._silent

    @property
    def connection_count(self) -> int:
        """Open client connections now."""
        return len(self._connections)

    @property
    def total_connections(self) -> int:
        """Client connections accepted since the server was created."""
        return self._next_connection_id

    def statistics(self) -> ServerStatistics:
        """A snapshot of the server's state and counters."""
        return ServerStatistics(
            role=self.role, host=self.host, running=self.running, silent=self._silent,
            slow_ms=self._slow_ms, connections=len(self._connections),
            total_connections=self._next_connection_id,
            topology_version=(self.clock.process_id, self.clock.counter),
            compressed_requests=dict(self.compressed_requests),
            command_counts=dict(self.command_counts),
            awaited_hellos=self.awaited_hellos,
            fail_points={name: repr(point) for name, point in self.fail_points.items()},
        )

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        faults = []
        if self._silent:
            faults.append("silent")
        if self._slow_ms:
            faults.append(f"slow {self._slow_ms:g}ms")
        extra = f" [{', '.join(faults)}]" if faults else ""
        return (f"<SimServer {self.role.value} {self.host} {state}, "
                f"{len(self._connections)} connections, topologyVersion "
                f"{self.clock.counter}{extra}>")

    async def __aenter__(self) -> SimServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Listen (again); a start after a stop is a new process: a new ``processId``."""
        if self._listener is not None:
            return
        if self._started_once:
            self.clock.restart()
        await self._listen()
        self._started_once = True

    async def stop(self) -> None:
        """Stop listening and close every connection (the process is gone)."""
        self._silent = False
        await self._close_listener()
        self._notify_unreachable()

    def _notify_unreachable(self) -> None:
        if self.on_unreachable is not None:
            self.on_unreachable(self)

    async def restart(self) -> None:
        """Stop and start again on the same port (new ``processId``)."""
        await self.stop()
        await self.start()

    async def _listen(self) -> None:
        self._listener = await asyncio.start_server(
            self._serve, "127.0.0.1", self._port, ssl=self.ssl_context, reuse_address=True)
        self._port = self._listener.sockets[0].getsockname()[1]

    async def _close_listener(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        tasks = list(self._connections.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if listener is not None:
            await listener.wait_closed()

    # --- state and faults -----------------------------------------------------------------

    def set_role(self, role: Role) -> None:
        """Change role (an election, a step down): the topology version moves."""
        self.role = role
        self.clock.bump()

    async def partition(self, mode: str = "silent") -> None:
        """Cut the member off: ``"silent"`` keeps sockets open but never answers (timeouts);
        ``"refuse"`` closes every connection and refuses new ones."""
        if mode == "silent":
            self._silent = True
        elif mode == "refuse":
            await self._close_listener()
        else:
            raise ConfigurationError(f"partition mode must be 'silent' or 'refuse', not {mode!r}")
        self._notify_unreachable()

    async def heal(self) -> None:
        """End a partition: answer again, accept connections again (same process)."""
        self._silent = False
        if self._listener is None and self._started_once:
            await self._listen()

    def slow(self, ms: float, *, commands: Iterable[str] | None = None) -> None:
        """Delay replies by ``ms`` milliseconds (0 ends it): every reply, or only those to
        ``commands`` (e.g. ``["hello", "isMaster"]`` to slow the monitors, RTT included)."""
        self._slow_ms = max(0.0, ms)
        self._slow_commands = _fault_commands(commands)

    async def _delay(self, command_name: str) -> None:
        if self._slow_ms and (self._slow_commands is None
                              or command_name in self._slow_commands):
            await asyncio.sleep(self._slow_ms / 1000)

    def send_garbage(self, count: int = 1, *, commands: Iterable[str] | None = None) -> None:
        """The next ``count`` replies are bytes no driver can parse (a bad opcode).

        ``commands`` picks the replies hit; by default any command but hello, so the
        application's operations get them and not the monitors' (``commands=["hello"]``)."""
        self._reply_faults += [_ReplyFault(ReplyFault.GARBAGE, _fault_commands(commands))] * count

    def send_truncated(self, count: int = 1, *, commands: Iterable[str] | None = None) -> None:
        """The next ``count`` replies stop halfway and the connection closes (``commands`` as
        for :meth:`send_garbage`)."""
        self._reply_faults += [_ReplyFault(ReplyFault.TRUNCATED, _fault_commands(commands))] * count

    def fail_point(self, mode: str | Mapping[str, int] = "alwaysOn",
                   data: Mapping[str, Any] | None = None, **fields: Any) -> FailPointHandle:
        """Configure ``failCommand`` (as ``configureFailPoint`` does); the handle turns it off
        as a context manager. Keyword fields are added to ``data`` (camelCase names)."""
        command = failpoint.fail_point_command(mode, {**(data or {}), **fields})
        failpoint.configure(self.fail_points, command)
        return FailPointHandle(self)

    # --- connections -----------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._next_connection_id += 1
        conn = _Connection(reader, writer, self._next_connection_id, self.users)
        self._connections[conn] = task
        try:
            await self._read_loop(conn)
        except (asyncio.IncompleteReadError, ConnectionError, ProtocolError, ssl.SSLError):
            pass
        except asyncio.CancelledError:
            # stop()/partition cancel this task; it ends normally, or Python 3.11's stream
            # callback logs the cancellation as an unretrieved error.
            pass
        finally:
            self._connections.pop(conn, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _read_loop(self, conn: _Connection) -> None:
        while True:
            header = await conn.reader.readexactly(HEADER_SIZE)
            length = read_header(header)
            request = decode_request(header + await conn.reader.readexactly(
                length - HEADER_SIZE))
            if request.compressor is not None:
                self.compressed_requests[request.compressor.handshake_name] += 1
            if self._silent:
                continue
            if not await self._respond(conn, request):
                return

    async def _respond(self, conn: _Connection, request: Request) -> bool:
        """Answer one request; False closes the connection."""
        await self._delay(request.name)
        self.command_counts[request.name] += 1
        command = request.command
        if request.name in HELLO_NAMES and "client" in command:
            if conn.metadata is not None:
                return await self._send(conn, request, error_reply(
                    186, "The client metadata document may only be sent in the first hello"))
            conn.metadata = command["client"]
            conn.app_name = _app_name(command)
        fired = self._fire(request.name, conn.app_name)
        verdict = await self._carry_out(conn, request, fired)
        if verdict is not None:
            return verdict
        if request.name in HELLO_NAMES:
            # mongod checks a hello's API parameters like any command's (a strict
            # isMaster is refused: it is not in API Version 1).
            refused = stable_api.api_refusal(request.name, command, self.parameters)
            if refused is not None:
                return await self._send(conn, request, refused)
            return await self._hello(conn, request)
        written = self._primary_write_verdict(command)
        if written is not None and not written.applies_write:
            return await self._refuse_primary_write(conn, request, written)
        if self.role is Role.MONGOS:
            recovered = self.transaction_router.refusal(request.name, command,
                                                        self.store.transactions)
            if recovered is not None:
                return await self._send(conn, request, self._decorate(recovered))
        reply = await self._run(conn, request)
        self.api_memory.record(request.name, command, reply, lsid_of(command))
        if written is not None and written.fault.close_connection:
            return False  # onPrimaryTransactionalWrite: applied and recorded, no reply
        if fired is not None and fired.write_concern_error is not None and reply.get("ok"):
            reply = fired.add_write_concern_error(reply, command)
        if self.role is Role.MONGOS and command.get("autocommit") is False:
            # mongos' transaction router answers every command of a transaction with the
            # recoveryToken the driver must send with commit/abort (transactions spec).
            reply["recoveryToken"] = TransactionRouter.recovery_token()
        if request.more_to_come:
            return True
        if request.name == "getMore" and request.exhaust_allowed:
            return await self._stream_get_more(conn, request, reply)
        return await self._send(conn, request, self._decorate(reply))

    async def _stream_get_more(self, conn: _Connection, request: Request,
                               reply: dict[str, Any]) -> bool:
        """An exhaust cursor (OP_MSG exhaustAllowed on getMore): moreToCome batches, each
        answering the previous reply, until the cursor is exhausted (id 0) or fails."""
        response_to = request.request_id
        while _open_cursor(reply):
            sent = await self._send_reply(conn, request, self._decorate(reply),
                                          more_to_come=True, response_to=response_to)
            if sent is None:
                return False
            response_to = sent
            # mongod runs the command again for every exhaust reply: fail points apply.
            fired = self._fire(request.name, conn.app_name)
            verdict = await self._carry_out(conn, request, fired, response_to)
            if verdict is not None:
                return verdict
            reply = await self._run(conn, request)
        return await self._send(conn, request, self._decorate(reply), response_to=response_to)

    async def _carry_out(self, conn: _Connection, request: Request, fired: FailCommand | None,
                         response_to: int | None = None) -> bool | None:
        """Do what a fired fail point says before the command runs: block, close the
        connection (False) or answer its error (True); None: go on and run the command."""
        if fired is None:
            return None
        if fired.block_connection:
            await asyncio.sleep(fired.block_time_ms / 1000)
        if fired.close_connection:
            return False
        if fired.error_code is not None:
            return await self._send(conn, request, self._decorate(
                fired.error_reply(request.command)), response_to=response_to)
        if fired.block_connection and _max_time_exceeded(request.command,
                                                         fired.block_time_ms):
            # The block ate the command's maxTimeMS: mongod's first interrupt check fails.
            return await self._send(conn, request, self._decorate(error_reply(
                50, "operation exceeded time limit")), response_to=response_to)
        return None

    def _primary_write_verdict(self, command: Mapping[str, Any]
                               ) -> primary_write_failpoint.PrimaryWriteVerdict | None:
        """Where ``onPrimaryTransactionalWrite`` fires in this command: only on a primary and
        only for a retryable write the store will apply now (a retry it answers from the
        bookkeeping applies no statement, so the fail point is not evaluated)."""
        point = self.fail_points.get(primary_write_failpoint.NAME)
        if point is None or self.role is not Role.PRIMARY:
            return None
        txn_number = command.get("txnNumber")
        lsid_key = lsid_of(command)
        if not isinstance(txn_number, int) or lsid_key is None or (
                self.store.transactions.already_applied(lsid_key, txn_number)):
            return None
        return primary_write_failpoint.evaluate(point, command)

    async def _refuse_primary_write(self, conn: _Connection, request: Request,
                                    written: primary_write_failpoint.PrimaryWriteVerdict
                                    ) -> bool:
        """``failBeforeCommitExceptionCode``: the write is not applied; the connection is
        closed (False), or, with ``closeConnection: false``, the code is the reply."""
        if written.fault.close_connection:
            return False
        code = written.fault.fail_before_commit_code
        assert code is not None
        return await self._send(conn, request, self._decorate(error_reply(
            code, f"Failing write for {request.command.get('txnNumber')} due to failpoint. "
                  "The write must not be reflected.", request.command)))

    def _take_fault(self, command_name: str) -> ReplyFault | None:
        """The first pending reply fault that targets this command (consumed), if any."""
        for index, fault in enumerate(self._reply_faults):
            if (command_name in fault.commands if fault.commands is not None
                    else command_name not in HELLO_NAMES):
                del self._reply_faults[index]
                return fault.kind
        return None

    def _fire(self, name: str, app_name: str | None) -> FailCommand | None:
        point = self.fail_points.get("failCommand")
        fired = point.fire(name, app_name) if point is not None else None
        if fired is None and name == "getMore":
            after = self.fail_points.get(failpoint.GET_MORE_AFTER_CHECKOUT)
            fired = after.fire(name, app_name) if after is not None else None
        return fired

    async def _send(self, conn: _Connection, request: Request, reply: Mapping[str, Any], *,
                    more_to_come: bool = False, response_to: int | None = None) -> bool:
        """Write one reply; False when the connection must close (a truncated reply)."""
        return await self._send_reply(conn, request, reply, more_to_come=more_to_come,
                                      response_to=response_to) is not None

    async def _send_reply(self, conn: _Connection, request: Request, reply: Mapping[str, Any],
                          *, more_to_come: bool = False, response_to: int | None = None
                          ) -> int | None:
        """Write one reply and return its requestID (what the next exhaust reply answers);
        None when the connection must close (a truncated reply)."""
        self._next_request_id += 1
        request_id = self._next_request_id
        data = encode_reply(request, request_id, reply, more_to_come=more_to_come,
                            response_to=response_to)
        fault = self._take_fault(request.name)
        if fault is ReplyFault.GARBAGE:
            noise = os.urandom(32)
            data = HEADER.pack(HEADER_SIZE + len(noise), request_id, request.request_id,
                               0x7EADBEEF) + noise
        elif fault is ReplyFault.TRUNCATED:
            conn.writer.write(data[: max(1, len(data) // 2)])
            await conn.writer.drain()
            return None
        conn.writer.write(data)
        await conn.writer.drain()
        return request_id

    # --- hello -----------------------------------------------------------------------------

    async def _hello(self, conn: _Connection, request: Request) -> bool:
        """Answer hello; an awaitable one waits for a change, an exhaust one streams."""
        waiting = awaitable_hello(request.command) if self.streaming else None
        if waiting is not None:
            self.awaited_hellos += 1
            await self.clock.wait_for_change(*waiting)
        reply = self.hello_reply(request.command, conn)
        if waiting is None or not request.exhaust_allowed:
            return await self._send(conn, request, reply)
        return await self._stream_hello(conn, request, reply, waiting[1])

    async def _stream_hello(self, conn: _Connection, request: Request,
                            reply: dict[str, Any], max_await_ms: float) -> bool:
        """Exhaust: moreToCome replies, each answering the previous one, until the client
        closes the connection (SDAM "Streaming Protocol")."""
        eof = asyncio.ensure_future(conn.reader.read(1))
        change: asyncio.Future[None] | None = None
        response_to = request.request_id
        try:
            while True:
                if not self._silent:
                    sent = await self._send_reply(conn, request, reply, more_to_come=True,
                                                  response_to=response_to)
                    if sent is None:
                        return False
                    response_to = sent
                change = asyncio.ensure_future(
                    self.clock.wait_for_change(reply.get("topologyVersion"), max_await_ms))
                done, _ = await asyncio.wait({eof, change},
                                             return_when=asyncio.FIRST_COMPLETED)
                if eof in done:
                    return False
                await self._delay(request.name)
                self.command_counts[request.name] += 1
                # mongod runs hello again for every exhaust reply: fail points apply, and an
                # error reply (without moreToCome) ends the stream.
                fired = self._fire(request.name, conn.app_name)
                verdict = await self._carry_out(conn, request, fired, response_to)
                if verdict is not None:
                    return verdict
                reply = self.hello_reply(request.command, conn)
        finally:
            eof.cancel()
            if change is not None:
                change.cancel()
            # The read must be over before the connection's read loop reads again (a fail
            # point's error reply ends the stream, the connection stays): a pending read(1)
            # makes the next readexactly raise "another coroutine is already waiting".
            await asyncio.wait({eof})
            if not eof.cancelled():
                eof.exception()  # retrieved; EOF or a reset is the caller's business

    def hello_reply(self, command: Mapping[str, Any], conn: _Connection | None = None
                    ) -> dict[str, Any]:
        """The hello reply this member sends now (also for tests and the command line)."""
        now = _now()
        group = self.replica_set
        state = HelloState(
            role=self.role,
            me=self.host,
            process_id=self.clock.process_id,
            counter=self.clock.counter,
            connection_id=conn.connection_id if conn is not None else 0,
            now=now,
            replica_set=group.view() if group is not None else None,
            last_write=group.last_write_for(self.host, now) if group is not None else None,
            streaming=self.streaming,
            load_balanced=self.load_balanced,
            service_id=self.service_id_of(conn.connection_id if conn is not None else 0),
            compressors=self.compressors,
        )
        reply = build_hello(command, state)
        if conn is not None:
            reply.update(conn.sasl.hello_fields(command, peer_subject=conn.peer_subject))
        return self._decorate(reply)

    # --- commands --------------------------------------------------------------------------

    async def _run(self, conn: _Connection, request: Request) -> dict[str, Any]:
        name, command, db = request.name, request.command, request.db
        if request.opcode is OpCode.OP_QUERY:
            return error_reply(352, f"Unsupported OP_QUERY command: {name}. The client driver "
                               "may require an upgrade. For more details see "
                               "https://dochub.mongodb.org/core/legacy-opcode-removal")
        refused = stable_api.api_refusal(name, command, self.parameters) or (
            self.api_memory.refusal(name, command, lsid_of(command)))
        if refused is not None:
            return refused
        body = _strip(command)
        if SaslServer.handles(name):
            return conn.sasl.handle(db, body, peer_subject=conn.peer_subject)
        if len(self.users) and not conn.sasl.authenticated_users and (
                name not in NO_AUTH_COMMANDS):
            return error_reply(13, f"Command {name} requires authentication")
        builtin = BUILTINS.get(name)
        if builtin is not None:
            info = ConnectionInfo(conn.peer, tuple(conn.sasl.authenticated_users))
            return await builtin(self, info, db, command)
        refusal = self._role_refusal(name, command)
        if refusal is not None:
            return refusal
        if name in WRITE_COMMANDS and self.role is Role.STANDALONE:
            refused = write_concern.standalone_refusal(command.get("writeConcern"))
            if refused is not None:
                return refused
        if self.role is Role.STANDALONE and _read_concern_level(command) == "snapshot":
            # mongod: snapshot reads need replication (sessions: snapshot-sessions-not-
            # supported-server-error)
            return error_reply(123, "node needs to be a replica set member to use "
                                    "readConcern: snapshot", command)
        if (self.role is Role.STANDALONE and name == "aggregate"
                and is_change_stream(body)):
            return error_reply(40573, "The $changeStream stage is only supported on replica "
                                      "sets", command)
        reply = await self._handle_in_store(name, db, body, command)
        if name == "getMore" and self.store.awaits_data(body):
            reply = await self._await_data(db, body, command, reply)
        if name in WRITE_COMMANDS and self.replica_set is not None and reply.get("ok"):
            self.replica_set.record_write(_now())
            return await self._wait_for_write_concern(command.get("writeConcern"), reply)
        return reply

    async def _handle_in_store(self, name: str, db: str, body: Mapping[str, Any],
                               command: Mapping[str, Any]) -> dict[str, Any]:
        """Run the command in the store. A plain write refused because an open transaction
        holds its document (112 without labels) that wrote nothing is tried again after
        short pauses, as mongod waits for the lock; then the 112 goes out as it came."""
        for pause in LOCK_WAIT_PAUSES:
            version = self.store.transactions.version
            reply = await self._store_handle(db, body, command)
            if not _locked_out(name, body, reply) or self.store.transactions.version != version:
                return reply
            await asyncio.sleep(pause)
        return await self._store_handle(db, body, command)

    async def _store_handle(self, db: str, body: Mapping[str, Any], command: Mapping[str, Any]
                            ) -> dict[str, Any]:
        """``store.handle``, then the ``sleep`` of its ``$where`` scripts (store/where.py),
        awaited so only this command waits; past a positive maxTimeMS it answers 50
        MaxTimeMSExpired, as mongod interrupts the script."""
        with javascript_sleeps() as slept:
            reply = self.store.handle(db, body, SessionContext(cluster_time=self._store_time()))
        if slept.ms <= 0:
            return reply
        if _max_time_exceeded(command, slept.ms):
            await asyncio.sleep(float(command["maxTimeMS"]) / 1000)
            return error_reply(50, "operation exceeded time limit")
        await asyncio.sleep(slept.ms / 1000)
        return reply

    async def _await_data(self, db: str, body: Mapping[str, Any], command: Mapping[str, Any],
                          reply: dict[str, Any]) -> dict[str, Any]:
        """An awaitData getMore that found nothing waits for new documents up to its
        maxTimeMS (mongod's default: 1 s), asking the store again every few ms; then it
        answers what came, or the empty batch (mongod: no error when the wait ends)."""
        limit = command.get("maxTimeMS")
        wait_ms = limit if isinstance(limit, int) and not isinstance(limit, bool) and (
            limit > 0) else DEFAULT_AWAIT_MS
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_ms / 1000
        while _empty_open_batch(reply) and self.store.awaits_data(body):
            left = deadline - loop.time()
            if left <= 0:
                break
            await asyncio.sleep(min(AWAIT_DATA_POLL_S, left))
            if not self.store.awaits_data(body):
                break  # killed meanwhile (killCursors): the wait ends with nothing
            reply = await self._store_handle(db, body, command)
        return reply

    def _store_time(self) -> Timestamp | None:
        """The cluster time the store's snapshot reads run at: a replica set's newest optime
        (no write is newer), a mongos's own clock; None for a standalone (no snapshots)."""
        if self.replica_set is not None:
            return self.replica_set.cluster_time(_now())
        if self.role is Role.MONGOS:
            return self._cluster_time if self._cluster_time.time else (
                Timestamp(int(_now().timestamp()), 1))
        return None

    async def _wait_for_write_concern(self, concern: Any, reply: dict[str, Any]
                                      ) -> dict[str, Any]:
        """Wait until enough members could acknowledge the write (or wtimeout passes)."""
        assert self.replica_set is not None
        members = self.replica_set.members
        required = write_concern.required_acknowledgements(concern, members)
        error = write_concern.unsatisfiable(required, members)
        timeout = write_concern.wtimeout_ms(concern)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout / 1000 if timeout is not None else None
        while error is None and self.count_acknowledgers is not None and (
                self.count_acknowledgers() < required):
            if deadline is not None and loop.time() >= deadline:
                error = write_concern.timed_out(concern)
                break
            await asyncio.sleep(0.01)
        if error is not None:
            reply = {**reply, "writeConcernError": error}
        return reply

    def _role_refusal(self, name: str, command: Mapping[str, Any]) -> dict[str, Any] | None:
        """What a member refuses in its role (none for standalone and mongos)."""
        if self.role in (Role.ARBITER, Role.OTHER) and name not in ("endSessions",):
            return error_reply(13436, "node is not in primary or recovering state", command)
        if self.role is not Role.SECONDARY:
            return None
        if name in WRITE_COMMANDS:
            return error_reply(10107, "not primary", command)
        if name in READ_COMMANDS and not _secondary_ok(command):
            return error_reply(13435, "not primary and secondaryOk=false", command)
        return None

    def _decorate(self, reply: dict[str, Any]) -> dict[str, Any]:
        """Replica-set members and mongos gossip ``$clusterTime`` and ``operationTime``; a
        not-primary error carries the member's ``topologyVersion`` (SDAM stale errors; mongod
        stamps shutdown errors only in quiesce mode, which the simulator does not model)."""
        if self.streaming and not reply.get("ok", 1) and reply.get("code") in (
                NOT_PRIMARY_CODES):
            reply["topologyVersion"] = {"processId": self.clock.process_id,
                                        "counter": Int64(self.clock.counter)}
        if self.replica_set is None and self.role is not Role.MONGOS:
            return reply
        now = _now()
        if self.replica_set is not None:
            cluster_time = self.replica_set.cluster_time(now)
        else:
            seconds = int(now.timestamp())
            inc = self._cluster_time.inc + 1 if seconds <= self._cluster_time.time else 1
            self._cluster_time = Timestamp(max(seconds, self._cluster_time.time), inc)
            cluster_time = self._cluster_time
        reply["$clusterTime"] = {"clusterTime": cluster_time,
                                 "signature": {"hash": Binary(bytes(20)), "keyId": Int64(0)}}
        reply["operationTime"] = cluster_time
        return reply


class FailPointHandle:
    """Returned by :meth:`SimServer.fail_point`: ``with`` it, or call :meth:`off`."""

    __slots__ = ("_server",)

    def __init__(self, server: SimServer) -> None:
        self._server = server

    def off(self) -> None:
        self._server.fail_points.pop("failCommand", None)

    def __enter__(self) -> FailPointHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.off()


def _strip(command: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in command.items() if key not in _ENVELOPE}


def _locked_out(name: str, command: Mapping[str, Any], reply: Mapping[str, Any]) -> bool:
    """A plain (non-transaction) write the store refused with an unlabelled WriteConflict:
    an open transaction holds a document it writes."""
    return (name in WRITE_COMMANDS and "autocommit" not in command and reply.get("code") == 112
            and "errorLabels" not in reply)


def _secondary_ok(command: Mapping[str, Any]) -> bool:
    preference = command.get("$readPreference")
    return isinstance(preference, Mapping) and preference.get("mode", "primary") != "primary"


def _max_time_exceeded(command: Mapping[str, Any], spent_ms: float) -> bool:
    """True when the command set a positive ``maxTimeMS`` that ``spent_ms`` has used up."""
    limit = command.get("maxTimeMS")
    if isinstance(limit, bool) or not isinstance(limit, int | float):
        return False
    return 0 < int(limit) <= spent_ms


def _empty_open_batch(reply: Mapping[str, Any]) -> bool:
    """A getMore reply with no documents whose cursor stays open."""
    cursor = reply.get("cursor")
    return _open_cursor(reply) and isinstance(cursor, Mapping) and not cursor.get("nextBatch")


def _open_cursor(reply: Mapping[str, Any]) -> bool:
    """A successful cursor reply whose cursor stays open (id != 0)."""
    cursor = reply.get("cursor")
    return bool(reply.get("ok")) and isinstance(cursor, Mapping) and cursor.get("id", 0) != 0


def _read_concern_level(command: Mapping[str, Any]) -> object:
    read_concern = command.get("readConcern")
    return read_concern.get("level") if isinstance(read_concern, Mapping) else None


def _app_name(command: Mapping[str, Any]) -> str | None:
    client = command.get("client")
    application = client.get("application") if isinstance(client, Mapping) else None
    name = application.get("name") if isinstance(application, Mapping) else None
    return name if isinstance(name, str) else None


def _now() -> datetime.datetime:
    now = datetime.datetime.now(datetime.UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)

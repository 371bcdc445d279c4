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
import ssl
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson import ObjectId
from asyncmongo.core.wire.compression import SUPPORTED_COMPRESSORS
from asyncmongo.core.wire.opcodes import OpCode
from asyncmongo.errors import ConfigurationError
from asyncmongo.testing import stable_api
from asyncmongo.testing.builtins import BUILTINS, ConnectionInfo
from asyncmongo.testing.failpoint import FailCommand, FailPointState
from asyncmongo.testing.member import Role
from asyncmongo.testing.mongos_router import TransactionRouter
from asyncmongo.testing.protocol import Request
from asyncmongo.testing.replies import error_reply
from asyncmongo.testing.replset import ReplicaSetGroup
from asyncmongo.testing.scram import SaslServer, UserDirectory
from asyncmongo.testing.server.command_fields import (
    HELLO_NAMES,
    NO_AUTH_COMMANDS,
    WRITE_COMMANDS,
    app_name,
    max_time_exceeded,
)
from asyncmongo.testing.server.faults import (
    FailPointHandle,
    Faults,
    Preemption,
    primary_write_refusal,
)
from asyncmongo.testing.server.network import Connection, Network
from asyncmongo.testing.server.role import RoleState
from asyncmongo.testing.store import SessionContext, Store
from asyncmongo.testing.store.tailable import DEFAULT_AWAIT_MS
from asyncmongo.testing.store.transactions import lsid_of
from asyncmongo.testing.store.where import javascript_sleeps
from asyncmongo.testing.streaming import TopologyClock, awaitable_hello

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
        self.store = store if store is not None else Store()
        if replica_set is not None:
            # Change events take their cluster times from the set's optimes, so a reply's
            # operationTime works as a change stream's startAtOperationTime.
            self.store.changes.tick = replica_set.record_write
        self.role_state = RoleState(
            role, replica_set=replica_set, streaming=streaming, compressors=compressors,
            load_balanced=load_balanced, services=services,
            count_acknowledgers=count_acknowledgers)
        #: Asked to step down (replSetStepDown): the deployment elects another member.
        self.on_step_down = on_step_down
        #: Called when the member stops or is partitioned (a replica set may elect anew).
        self.on_unreachable = on_unreachable
        self.faults = Faults()
        #: Server parameters (getParameter/setParameter; requireApiVersion and
        #: acceptApiVersion2 steer the Stable API checks, see stable_api).
        self.parameters: dict[str, Any] = dict(stable_api.DEFAULT_PARAMETERS)
        #: The API parameters open cursors and transactions began with.
        self.api_memory = stable_api.ApiParameterMemory()
        self.network = Network(
            self.faults, port=port, users=users if users is not None else UserDirectory(),
            ssl_context=ssl_context, host_name=host_name)
        #: Requests answered, by command name (hello streams count each reply).
        self.command_counts: collections.Counter[str] = collections.Counter()
        #: Awaitable hellos received (topologyVersion + maxAwaitTimeMS).
        self.awaited_hellos = 0

    # --- the collaborators' state ----------------------------------------------------------

    @property
    def role(self) -> Role:
        return self.role_state.role

    @role.setter
    def role(self, role: Role) -> None:
        """Set the role without moving the topology version (:meth:`set_role` moves it)."""
        self.role_state.role = role

    @property
    def streaming(self) -> bool:
        """Hello replies carry ``topologyVersion`` and awaitable hellos wait."""
        return self.role_state.streaming

    @streaming.setter
    def streaming(self, streaming: bool) -> None:
        self.role_state.streaming = streaming

    @property
    def clock(self) -> TopologyClock:
        return self.role_state.clock

    @property
    def replica_set(self) -> ReplicaSetGroup | None:
        return self.role_state.replica_set

    @property
    def compressors(self) -> tuple[str, ...]:
        return self.role_state.compressors

    @property
    def load_balanced(self) -> bool:
        return self.role_state.load_balanced

    @property
    def service_ids(self) -> tuple[ObjectId, ...]:
        """Behind a load balancer: one serviceId per backend mongos; connection N reaches
        backend N mod len(service_ids), as a round-robin balancer spreads them."""
        return self.role_state.service_ids

    @property
    def count_acknowledgers(self) -> Callable[[], int] | None:
        """How many data-bearing members could acknowledge a write now (write concern)."""
        return self.role_state.count_acknowledgers

    @property
    def transaction_router(self) -> TransactionRouter:
        return self.role_state.transaction_router

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def fail_points(self) -> dict[str, FailPointState]:
        """The configured fail points, by name (``failCommand``, ...)."""
        return self.faults.fail_points

    @property
    def users(self) -> UserDirectory:
        return self.network.users

    @property
    def ssl_context(self) -> ssl.SSLContext | None:
        return self.network.ssl_context

    @property
    def compressed_requests(self) -> collections.Counter[str]:
        """How many requests arrived compressed, by compressor name (for tests)."""
        return self.network.compressed_requests

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`; the requested one before)."""
        return self.network.port

    @property
    def host_name(self) -> str:
        """The name the member gives itself in hello's ``me``/``hosts`` (it always listens on
        127.0.0.1): e.g. ``"localhost"`` for the DNS seedlist tests, whose replica set is
        named ``localhost:27017``... while the SRV records point at another name."""
        return self.network.host_name

    @property
    def host(self) -> str:
        """``"<host_name>:<port>"`` (``127.0.0.1:<port>`` by default): how the member names
        itself in hello's ``me``/``hosts``."""
        return self.network.host

    @property
    def running(self) -> bool:
        return self.network.listening

    def service_id_of(self, connection_id: int) -> ObjectId:
        """The serviceId of the backend a (load-balanced) connection reached."""
        return self.role_state.service_id_of(connection_id)

    @property
    def reachable(self) -> bool:
        """Running and not partitioned: what the other members of a set can see."""
        return self.network.listening and not self.faults.silent

    @property
    def connection_count(self) -> int:
        """Open client connections now."""
        return len(self.network.connections)

    @property
    def total_connections(self) -> int:
        """Client connections accepted since the server was created."""
        return self.network.total_connections

    def statistics(self) -> ServerStatistics:
        """A snapshot of the server's state and counters."""
        return ServerStatistics(
            role=self.role, host=self.host, running=self.running, silent=self.faults.silent,
            slow_ms=self.faults.slow_ms, connections=self.connection_count,
            total_connections=self.total_connections,
            topology_version=(self.clock.process_id, self.clock.counter),
            compressed_requests=dict(self.compressed_requests),
            command_counts=dict(self.command_counts),
            awaited_hellos=self.awaited_hellos,
            fail_points={name: repr(point) for name, point in self.fail_points.items()},
        )

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        faults = self.faults.describe()
        extra = f" [{', '.join(faults)}]" if faults else ""
        return (f"<SimServer {self.role.value} {self.host} {state}, "
                f"{self.connection_count} connections, topologyVersion "
                f"{self.clock.counter}{extra}>")

    async def __aenter__(self) -> SimServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Listen (again); a start after a stop is a new process: a new ``processId``."""
        if self.network.listening:
            return
        if self.network.has_listened:
            self.clock.restart()
        await self.network.listen(self._respond)

    async def stop(self) -> None:
        """Stop listening and close every connection (the process is gone)."""
        self.faults.silent = False
        await self.network.close()
        self._notify_unreachable()

    def _notify_unreachable(self) -> None:
        if self.on_unreachable is not None:
            self.on_unreachable(self)

    async def restart(self) -> None:
        """Stop and start again on the same port (new ``processId``)."""
        await self.stop()
        await self.start()

    # --- state and faults -----------------------------------------------------------------

    def set_role(self, role: Role) -> None:
        """Change role (an election, a step down): the topology version moves."""
        self.role_state.set_role(role)

    async def partition(self, mode: str = "silent") -> None:
        """Cut the member off: ``"silent"`` keeps sockets open but never answers (timeouts);
        ``"refuse"`` closes every connection and refuses new ones."""
        if mode == "silent":
            self.faults.silent = True
        elif mode == "refuse":
            await self.network.close()
        else:
            raise ConfigurationError(f"partition mode must be 'silent' or 'refuse', not {mode!r}")
        self._notify_unreachable()

    async def heal(self) -> None:
        """End a partition: answer again, accept connections again (same process)."""
        self.faults.silent = False
        if not self.network.listening and self.network.has_listened:
            await self.network.listen(self._respond)

    def slow(self, ms: float, *, commands: Iterable[str] | None = None) -> None:
        """Delay replies by ``ms`` milliseconds (0 ends it): every reply, or only those to
        ``commands`` (e.g. ``["hello", "isMaster"]`` to slow the monitors, RTT included)."""
        self.faults.slow(ms, commands=commands)

    def send_garbage(self, count: int = 1, *, commands: Iterable[str] | None = None) -> None:
        """The next ``count`` replies are bytes no driver can parse (a bad opcode).

        ``commands`` picks the replies hit; by default any command but hello, so the
        application's operations get them and not the monitors' (``commands=["hello"]``)."""
        self.faults.send_garbage(count, commands=commands)

    def send_truncated(self, count: int = 1, *, commands: Iterable[str] | None = None) -> None:
        """The next ``count`` replies stop halfway and the connection closes (``commands`` as
        for :meth:`send_garbage`)."""
        self.faults.send_truncated(count, commands=commands)

    def fail_point(self, mode: str | Mapping[str, int] = "alwaysOn",
                   data: Mapping[str, Any] | None = None, **fields: Any) -> FailPointHandle:
        """Configure ``failCommand`` (as ``configureFailPoint`` does); the handle turns it off
        as a context manager. Keyword fields are added to ``data`` (camelCase names)."""
        return self.faults.fail_point(mode, data, **fields)

    # --- connections -----------------------------------------------------------------------

    async def _respond(self, conn: Connection, request: Request) -> bool:
        """Answer one request; False closes the connection."""
        await self.faults.delay(request.name)
        self.command_counts[request.name] += 1
        command = request.command
        if request.name in HELLO_NAMES and "client" in command:
            if conn.metadata is not None:
                return await self.network.send(conn, request, error_reply(
                    186, "The client metadata document may only be sent in the first hello"))
            conn.metadata = command["client"]
            conn.app_name = app_name(command)
        fired = self.faults.fire(request.name, conn.app_name)
        verdict = await self._carry_out(conn, request, fired)
        if verdict is not None:
            return verdict
        if request.name in HELLO_NAMES:
            # mongod checks a hello's API parameters like any command's (a strict
            # isMaster is refused: it is not in API Version 1).
            refused = stable_api.api_refusal(request.name, command, self.parameters)
            if refused is not None:
                return await self.network.send(conn, request, refused)
            return await self._hello(conn, request)
        written = self.faults.primary_write_verdict(command, self.role, self.store.transactions)
        if written is not None and not written.applies_write:
            return await self._send_preemption(conn, request,
                                               primary_write_refusal(written, command))
        recovered = self.role_state.mongos_refusal(request.name, command,
                                                   self.store.transactions)
        if recovered is not None:
            return await self.network.send(conn, request, self.role_state.decorate(recovered))
        reply = await self._run(conn, request)
        self.api_memory.record(request.name, command, reply, lsid_of(command))
        if written is not None and written.fault.close_connection:
            return False  # onPrimaryTransactionalWrite: applied and recorded, no reply
        if fired is not None and fired.write_concern_error is not None and reply.get("ok"):
            reply = fired.add_write_concern_error(reply, command)
        self.role_state.add_recovery_token(reply, command)
        if request.more_to_come:
            return True
        if request.name == "getMore" and request.exhaust_allowed:
            return await self._stream_get_more(conn, request, reply)
        return await self.network.send(conn, request, self.role_state.decorate(reply))

    async def _stream_get_more(self, conn: Connection, request: Request,
                               reply: dict[str, Any]) -> bool:
        """An exhaust cursor (OP_MSG exhaustAllowed on getMore): moreToCome batches, each
        answering the previous reply, until the cursor is exhausted (id 0) or fails."""
        response_to = request.request_id
        while _open_cursor(reply):
            sent = await self.network.send_reply(conn, request, self.role_state.decorate(reply),
                                                 more_to_come=True, response_to=response_to)
            if sent is None:
                return False
            response_to = sent
            # mongod runs the command again for every exhaust reply: fail points apply.
            fired = self.faults.fire(request.name, conn.app_name)
            verdict = await self._carry_out(conn, request, fired, response_to)
            if verdict is not None:
                return verdict
            reply = await self._run(conn, request)
        return await self.network.send(conn, request, self.role_state.decorate(reply),
                                       response_to=response_to)

    async def _carry_out(self, conn: Connection, request: Request, fired: FailCommand | None,
                         response_to: int | None = None) -> bool | None:
        """Do what a fired fail point says before the command runs: block, close the
        connection (False) or answer its error (True); None: go on and run the command."""
        preempted = await self.faults.carry_out(fired, request.command)
        if preempted is None:
            return None
        return await self._send_preemption(conn, request, preempted, response_to)

    async def _send_preemption(self, conn: Connection, request: Request,
                               preempted: Preemption, response_to: int | None = None) -> bool:
        """Answer what a fault put in place of the command; False closes the connection."""
        if preempted.reply is None:
            return False
        return await self.network.send(conn, request, self.role_state.decorate(preempted.reply),
                                       response_to=response_to)

    # --- hello -----------------------------------------------------------------------------

    async def _hello(self, conn: Connection, request: Request) -> bool:
        """Answer hello; an awaitable one waits for a change, an exhaust one streams."""
        waiting = awaitable_hello(request.command) if self.streaming else None
        if waiting is not None:
            self.awaited_hellos += 1
            await self.clock.wait_for_change(*waiting)
        reply = self.hello_reply(request.command, conn)
        if waiting is None or not request.exhaust_allowed:
            return await self.network.send(conn, request, reply)
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
                if not self.faults.silent:
                    sent = await self.network.send_reply(conn, request, reply,
                                                         more_to_come=True,
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
                await self.faults.delay(request.name)
                self.command_counts[request.name] += 1
                # mongod runs hello again for every exhaust reply: fail points apply, and an
                # error reply (without moreToCome) ends the stream.
                fired = self.faults.fire(request.name, conn.app_name)
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

    def hello_reply(self, command: Mapping[str, Any], conn: Connection | None = None
                    ) -> dict[str, Any]:
        """The hello reply this member sends now (also for tests and the command line)."""
        reply = self.role_state.hello(command, self.host,
                                      conn.connection_id if conn is not None else 0)
        if conn is not None:
            reply.update(conn.sasl.hello_fields(command, peer_subject=conn.peer_subject))
        return self.role_state.decorate(reply)

    # --- commands --------------------------------------------------------------------------

    async def _run(self, conn: Connection, request: Request) -> dict[str, Any]:
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
        refusal = self.role_state.refusal(name, command, body)
        if refusal is not None:
            return refusal
        reply = await self._handle_in_store(name, db, body, command)
        if name == "getMore" and self.store.awaits_data(body):
            reply = await self._await_data(db, body, command, reply)
        if name in WRITE_COMMANDS and reply.get("ok"):
            return await self.role_state.replicate(command.get("writeConcern"), reply)
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
            session = SessionContext(cluster_time=self.role_state.store_time())
            reply = self.store.handle(db, body, session)
        if slept.ms <= 0:
            return reply
        if max_time_exceeded(command, slept.ms):
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


def _strip(command: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in command.items() if key not in _ENVELOPE}


def _locked_out(name: str, command: Mapping[str, Any], reply: Mapping[str, Any]) -> bool:
    """A plain (non-transaction) write the store refused with an unlabelled WriteConflict:
    an open transaction holds a document it writes."""
    return (name in WRITE_COMMANDS and "autocommit" not in command and reply.get("code") == 112
            and "errorLabels" not in reply)


def _empty_open_batch(reply: Mapping[str, Any]) -> bool:
    """A getMore reply with no documents whose cursor stays open."""
    cursor = reply.get("cursor")
    return _open_cursor(reply) and isinstance(cursor, Mapping) and not cursor.get("nextBatch")


def _open_cursor(reply: Mapping[str, Any]) -> bool:
    """A successful cursor reply whose cursor stays open (id != 0)."""
    cursor = reply.get("cursor")
    return bool(reply.get("ok")) and isinstance(cursor, Mapping) and cursor.get("id", 0) != 0

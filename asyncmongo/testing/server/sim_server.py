"""The simulated server: an asyncio TCP (optionally TLS) listener on 127.0.0.1 that speaks the
wire protocol like a mongod 8.0 (or a mongos), one task per client connection.

A :class:`SimServer` plays one member: its :class:`~asyncmongo.testing.member.Role`, its
:class:`~asyncmongo.testing.streaming.TopologyClock`, its fail points and network faults. It
answers ``hello`` itself (streaming and exhaust included), authenticates with
:class:`~asyncmongo.testing.scram.SaslServer`, refuses what its role cannot do (writes on a
secondary: NotWritablePrimary; reads without secondaryOk: NotPrimaryNoSecondaryOk) and hands
every CRUD/admin command to its :class:`~asyncmongo.testing.store.Store` (shared by the members
of a replica set). Deployments (``asyncmongo.testing.deployment``) wire several together.

The work is done by one part per job, each an attribute of the server: :attr:`~SimServer.network`
listens, accepts and writes; :attr:`~SimServer.faults` holds the fail points and network faults;
:attr:`~SimServer.role_state` answers what differs by role; :attr:`~SimServer.dispatcher`
routes each request and :attr:`~SimServer.commands` runs the commands. The server wires them
and is the public surface: lifecycle, fault injection, the state tests read.
"""

from __future__ import annotations

import collections
import ssl
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson import ObjectId
from asyncmongo.core.wire.compression import SUPPORTED_COMPRESSORS
from asyncmongo.errors import ConfigurationError
from asyncmongo.testing import stable_api
from asyncmongo.testing.failpoint import FailPointState
from asyncmongo.testing.member import Role
from asyncmongo.testing.mongos_router import TransactionRouter
from asyncmongo.testing.proxy import FaultProxy
from asyncmongo.testing.replset import ReplicaSetGroup
from asyncmongo.testing.scram import UserDirectory
from asyncmongo.testing.server.commands import CommandRunner
from asyncmongo.testing.server.dispatch import Dispatcher
from asyncmongo.testing.server.faults import FailPointHandle, Faults
from asyncmongo.testing.server.network import Connection, Network
from asyncmongo.testing.server.role import RoleState
from asyncmongo.testing.store import Store
from asyncmongo.testing.streaming import TopologyClock

#: Asked to step down (replSetStepDown); the deployment elects another member.
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
        fault_proxy: bool = False,
    ) -> None:
        store = store if store is not None else Store()
        users = users if users is not None else UserDirectory()
        if replica_set is not None:
            # Change events take their cluster times from the set's optimes, so a reply's
            # operationTime works as a change stream's startAtOperationTime.
            store.changes.tick = replica_set.record_write
        #: Asked to step down (replSetStepDown): the deployment elects another member.
        self.on_step_down = on_step_down
        #: Called when the member stops or is partitioned (a replica set may elect anew).
        self.on_unreachable = on_unreachable
        self.faults = Faults()
        #: With ``fault_proxy=True``: the proxy in front of the member, on ``port``; the member
        #: listens on a free port behind it and gives the proxy's address as its own (network
        #: faults on cue, see asyncmongo.testing.proxy).
        self.proxy = FaultProxy(port=port, framed=ssl_context is None) if fault_proxy else None
        self.role_state = RoleState(
            role, replica_set=replica_set, streaming=streaming, compressors=compressors,
            load_balanced=load_balanced, services=services,
            count_acknowledgers=count_acknowledgers)
        self.network = Network(self.faults, port=0 if fault_proxy else port, users=users,
                               ssl_context=ssl_context, host_name=host_name)
        self.commands = CommandRunner(self, role=self.role_state, store=store, users=users)
        self.dispatcher = Dispatcher(
            network=self.network, faults=self.faults, role=self.role_state,
            commands=self.commands, store=store,
            # Looked up at every hello, so a test that wraps server.hello_reply sees each
            # handshake (the handshake spec's test-only backdoor).
            hello_reply=lambda command, conn: self.hello_reply(command, conn))

    # --- the parts' state ------------------------------------------------------------------

    @property
    def store(self) -> Store:
        return self.commands.store

    @property
    def users(self) -> UserDirectory:
        return self.network.users

    @property
    def ssl_context(self) -> ssl.SSLContext | None:
        return self.network.ssl_context

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

    def service_id_of(self, connection_id: int) -> ObjectId:
        """The serviceId of the backend a (load-balanced) connection reached."""
        return self.role_state.service_id_of(connection_id)

    @property
    def count_acknowledgers(self) -> Callable[[], int] | None:
        """How many data-bearing members could acknowledge a write now (write concern)."""
        return self.role_state.count_acknowledgers

    @property
    def transaction_router(self) -> TransactionRouter:
        return self.role_state.transaction_router

    @property
    def fail_points(self) -> dict[str, FailPointState]:
        """The configured fail points, by name (``failCommand``, ...)."""
        return self.faults.fail_points

    @property
    def parameters(self) -> dict[str, Any]:
        """Server parameters (getParameter/setParameter; requireApiVersion and
        acceptApiVersion2 steer the Stable API checks, see stable_api)."""
        return self.commands.parameters

    @property
    def api_memory(self) -> stable_api.ApiParameterMemory:
        """The API parameters open cursors and transactions began with."""
        return self.commands.api_memory

    @property
    def command_counts(self) -> collections.Counter[str]:
        """Requests answered, by command name (hello streams count each reply)."""
        return self.dispatcher.command_counts

    @property
    def awaited_hellos(self) -> int:
        """Awaitable hellos received (topologyVersion + maxAwaitTimeMS)."""
        return self.dispatcher.awaited_hellos

    @property
    def compressed_requests(self) -> collections.Counter[str]:
        """How many requests arrived compressed, by compressor name (for tests)."""
        return self.network.compressed_requests

    # --- lifecycle -------------------------------------------------------------------------

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
        await self.network.listen(self.dispatcher.respond)
        if self.proxy is not None:
            await self.proxy.start(self.network.port)
            self.network.advertised_port = self.proxy.port

    async def stop(self) -> None:
        """Stop listening and close every connection (the process is gone)."""
        self.faults.silent = False
        if self.proxy is not None:
            await self.proxy.close()
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
            await self.network.listen(self.dispatcher.respond)

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

    def hello_reply(self, command: Mapping[str, Any], conn: Connection | None = None
                    ) -> dict[str, Any]:
        """The hello reply this member sends now (also for tests and the command line); on a
        connection, with its authentication fields (speculative authentication,
        saslSupportedMechs)."""
        reply = self.role_state.hello(command, self.host,
                                      conn.connection_id if conn is not None else 0)
        if conn is not None:
            reply.update(conn.sasl.hello_fields(command, peer_subject=conn.peer_subject))
        return self.role_state.decorate(reply)

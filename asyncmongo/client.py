"""AsyncMongoClient: options, the connect/close lifecycle, and the command path for tests.

``AsyncMongoClient(host_or_uri, port=None, *, event_listeners=(), **options)`` parses its
options at once (bad options fail here, not at first use) and connects lazily: on the first
operation or ``await client.aconnect()``. Connecting starts the topology: one monitor task per
server, pool maintenance tasks and (mongodb+srv) the SRV poller, all owned by the client's
TaskSet in a clean contextvars context. ``await client.close()`` (or leaving ``async with``)
cancels and awaits every one of them and closes every socket.

A client belongs to the event loop it connected on; using it from another loop raises
InvalidOperation instead of failing obscurely inside asyncio.

Every operation of the API reaches the server through :meth:`AsyncMongoClient._run`: connect
if needed, check the session, apply the client's ``timeoutMS`` and hand the operation with its
session to the one :class:`~asyncmongo.runtime.executor.Executor`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from asyncmongo.bson import ObjectId
from asyncmongo.bson.types import Timestamp
from asyncmongo.client_api import ClientApi, EventListener, split_api_options
from asyncmongo.core.address import Address
from asyncmongo.core.auth.scram import ScramCache
from asyncmongo.core.cmap.options import PoolOptions
from asyncmongo.core.error_policy import ErrorPhase
from asyncmongo.core.operations.base import Operation
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.core.selection import PRIMARY, ReadPreference, Selection
from asyncmongo.core.uri import ClientOptions
from asyncmongo.core.uri.parse import parse
from asyncmongo.core.wire.handshake import DriverInfo, append_driver_info
from asyncmongo.errors import ConfigurationError, InvalidArgument, InvalidOperation
from asyncmongo.monitoring import Listeners
from asyncmongo.runtime.auth import CredentialAuthenticator
from asyncmongo.runtime.command_events import next_operation_id
from asyncmongo.runtime.connection import Connection, ConnectionSettings
from asyncmongo.runtime.establish import Establisher
from asyncmongo.runtime.executor import Executor
from asyncmongo.runtime.monitor import Monitor, MonitorSettings, streaming_enabled
from asyncmongo.runtime.pool import Pool
from asyncmongo.runtime.server import Server
from asyncmongo.runtime.srv import DnspythonResolver, SrvPoller, resolve_srv_options
from asyncmongo.runtime.tasks import TaskSet
from asyncmongo.runtime.topology import Topology
from asyncmongo.sessions import AsyncClientSession, ServerSessions
from asyncmongo.sessions.options import IMPLICIT_OPTIONS, SessionOptions, TransactionOptions

__all__ = ["AsyncMongoClient"]

T = TypeVar("T")


class AsyncMongoClient(ClientApi):
    """An asyncio MongoDB client (the public database/command API: ``ClientApi``)."""

    def __init__(
        self,
        host_or_uri: str = "mongodb://localhost:27017",
        port: int | None = None,
        *,
        event_listeners: Iterable[EventListener] = (),
        **options: Any,
    ) -> None:
        uri = host_or_uri
        if "://" not in uri:
            uri = f"mongodb://{uri}" + (f":{port}" if port is not None else "")
        api_options, options = split_api_options(options)
        self._options: ClientOptions = parse(uri, **options)
        self._listeners = Listeners(self._init_api(api_options, event_listeners))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: TaskSet | None = None
        self._topology: Topology | None = None
        self._executor: Executor | None = None
        self._poller: SrvPoller | None = None
        self._connecting: asyncio.Future[None] | None = None
        self._closed = False
        self._scram_cache = ScramCache()
        self._server_sessions = ServerSessions(lambda: self.topology_description)
        #: Each server's connection factory, so append_metadata reaches new connections.
        self._establishers: dict[Address, Establisher] = {}

    def __repr__(self) -> str:
        state = "closed" if self._closed else "connected" if self._topology else "not connected"
        return f"<AsyncMongoClient {state} {self._options!r}>"

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def options(self) -> ClientOptions:
        return self._options

    @property
    def topology_description(self) -> TopologyDescription:
        """A snapshot of the deployment as the client sees it now."""
        if self._topology is not None:
            return self._topology.description
        if not self._options.hosts:  # mongodb+srv before resolution
            return TopologyDescription(TopologyType.UNKNOWN, {}, _placeholder_settings())
        return TopologyDescription.initial(TopologySettings.from_options(self._options))

    async def __aenter__(self) -> AsyncMongoClient:
        await self.aconnect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def aconnect(self) -> None:
        """Start monitoring the deployment (idempotent; operations call it implicitly)."""
        while True:
            self._check_loop()
            if self._topology is not None:
                return
            connecting = self._connecting
            if connecting is None:
                break
            try:
                await asyncio.shield(connecting)  # another task is connecting (SRV lookup)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                # that task was cancelled, not us: connect ourselves
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._connecting = connecting = loop.create_future()
        try:
            await self._start(loop)
        except BaseException as exc:
            self._connecting = None
            if self._tasks is None:
                self._loop = None
            if isinstance(exc, asyncio.CancelledError):
                connecting.cancel()
            else:
                connecting.set_exception(exc)
                connecting.exception()  # retrieved: concurrent waiters re-raise it
            raise
        connecting.set_result(None)

    async def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        options = self._options
        answer_ttl: float | None = None
        if options.is_srv:
            options, answer = await resolve_srv_options(options, DnspythonResolver())
            self._options = options
            answer_ttl = answer.ttl
        tasks = TaskSet(loop)
        settings = TopologySettings.from_options(options)
        topology = Topology(settings, self._make_server, tasks.spawn, listeners=self._listeners)
        self._tasks = tasks
        self._topology = topology
        self._executor = Executor(
            topology,
            implicit_session=self._implicit_session,
            retry_reads=options.retry_reads,
            retry_writes=options.retry_writes,
            events=self._command_events,
        )
        topology.open()
        if options.is_srv and not options.load_balanced:
            self._poller = SrvPoller(
                options,
                resolver=DnspythonResolver(),
                on_hosts_changed=self._srv_hosts_changed,
                should_poll=self._should_poll_srv,
                initial_ttl_s=answer_ttl,
            )
            # In the client's task set, like the monitors: a clean context, awaited by close().
            self._poller.start(tasks.spawn)

    async def close(self) -> None:
        """End every task and close every socket the client started, and wait for them."""
        if self._closed:
            return
        if self._loop is not None:
            self._check_loop()
        if self._topology is not None:
            await self._server_sessions.end_all(self._run)  # sessions spec: on close
        self._closed = True
        try:
            if self._poller is not None:
                await self._poller.close()
            if self._topology is not None:
                await self._topology.close()
        finally:
            if self._tasks is not None:
                await self._tasks.close()

    def _check_loop(self) -> None:
        running = asyncio.get_running_loop()
        if self._closed:
            raise InvalidOperation("the client is closed")
        if self._loop is not None and running is not self._loop:
            raise InvalidOperation(
                "this AsyncMongoClient belongs to the event loop it connected on and cannot be "
                "used from another one; create one client per event loop"
            )

    # -- sessions ---------------------------------------------------------------------------

    def start_session(
        self,
        causal_consistency: bool | None = None,
        default_transaction_options: TransactionOptions | None = None,
        snapshot: bool = False,
        default_timeout_ms: int | None = None,
        snapshot_time: Timestamp | None = None,
    ) -> AsyncClientSession:
        """A new explicit session (use ``async with``, or call ``end_session``).

        Its server session is taken from the pool on first use and may have as little as
        a minute left before the server considers it stale: an application that waits more
        than a minute between starting a session and using it risks errors (sessions spec).
        Causally consistent operations are not causally consistent with unacknowledged
        (w:0) writes, which get no operationTime back (causal consistency spec)."""
        if self._closed:
            raise InvalidOperation("the client is closed")
        options = SessionOptions(
            causal_consistency,
            default_transaction_options,
            snapshot,
            default_timeout_ms,
            snapshot_time,
        )
        return AsyncClientSession(self, options)

    def _implicit_session(self) -> AsyncClientSession:
        return AsyncClientSession(self, IMPLICIT_OPTIONS, implicit=True)

    # -- running operations -----------------------------------------------------------------

    async def _run(
        self, op: Operation[T], session: Any = None, operation_id: int | None = None
    ) -> T:
        """Run one operation in ``session`` (None: an implicit one), connecting first if
        needed, within the client's timeoutMS."""
        if session is not None:
            if not isinstance(session, AsyncClientSession):
                raise InvalidArgument(
                    f"session must be an AsyncClientSession, not {type(session).__name__}"
                )
            if session._client is not self:
                raise InvalidOperation(
                    "this session was started by another AsyncMongoClient and cannot be used "
                    "with this one"
                )
        executor = self._executor
        if executor is None or self._closed or self._loop is not asyncio.get_running_loop():
            await self.aconnect()
            executor = self._executor
            assert executor is not None
        return await executor.run(op, session, deadline=self._deadline(), operation_id=operation_id)

    def _deadline(self) -> float | None:
        timeout_ms = self._options.timeout_ms
        if not timeout_ms:
            return None
        return asyncio.get_running_loop().time() + timeout_ms / 1000

    def _timeout_ms(self) -> int | None:
        return self._options.timeout_ms

    @staticmethod
    def _next_operation_id() -> int:
        return next_operation_id()

    def _spawn_unless_closed(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``coro`` as a task of the client (closed with it), unless it is not running."""
        if self._tasks is None:
            coro.close()
            return
        self._tasks.spawn_unless_closed(coro, name)

    async def _run_command(
        self,
        db: str,
        command: Mapping[str, Any],
        *,
        read_preference: ReadPreference = PRIMARY,
        selection: Selection | None = None,
    ) -> dict[str, Any]:
        """Run one command document (tests and tools; the public API is ``db.command``)."""
        await self.aconnect()
        assert self._executor is not None
        return await self._executor.run_command(
            db, command, selection or Selection.read(read_preference), deadline=self._deadline()
        )

    async def admin_command(
        self, command: Mapping[str, Any], *, read_preference: ReadPreference = PRIMARY
    ) -> dict[str, Any]:
        """Run a command on the admin database."""
        return await self._run_command("admin", command, read_preference=read_preference)

    @property
    def _topology_runtime(self) -> Topology:
        """The running topology (tests and the API layer; connect first)."""
        if self._topology is None:
            raise InvalidOperation("the client is not connected yet")
        return self._topology

    def append_metadata(self, driver_info: DriverInfo) -> None:
        """Append a wrapping library's name/version/platform to the handshake metadata
        (handshake spec, "Metadata updates after MongoClient initialization").

        Connections made from now on (pooled and monitoring) send it, joined to what is
        there with "|"; connections already open are left as they are, none is opened or
        closed for it. Appending info equal to info already given (empty string = unset)
        changes nothing.
        """
        if not isinstance(driver_info, DriverInfo):
            raise ConfigurationError(
                f"append_metadata takes a DriverInfo, not {type(driver_info).__name__}"
            )
        merged = append_driver_info(self._options.driver_info, driver_info)
        if merged == self._options.driver_info:
            return
        self._options = dataclasses.replace(self._options, driver_info=merged)
        servers = self._topology.servers if self._topology is not None else {}
        for address in list(self._establishers):
            establisher = self._establishers[address]
            if address not in servers:
                del self._establishers[address]  # its server left the topology
                continue
            establisher.settings = dataclasses.replace(establisher.settings, driver_info=merged)
        for server in servers.values():
            if server.monitor is not None:
                server.monitor.connection_settings = dataclasses.replace(
                    server.monitor.connection_settings, driver_info=merged
                )

    # -- wiring ----------------------------------------------------------------------------

    def _make_server(self, address: Address, topology: Topology) -> Server:
        options = self._options
        tasks = self._tasks
        assert tasks is not None
        settings = ConnectionSettings.from_client_options(options)
        authenticator = (
            CredentialAuthenticator(options.credential, self._scram_cache)
            if options.credential is not None
            else None
        )

        async def report(
            exc: BaseException, generation: int, phase: ErrorPhase, service_id: ObjectId | None
        ) -> None:
            if service_id is not None:  # load-balanced: a new connection of that service
                generation = pool.generation_for(service_id)
            await topology.handle_application_error(
                address, exc, generation, phase=phase, service_id=service_id
            )

        establish = Establisher(address, settings, authenticator, lambda: pool.generation, report)
        self._establishers[address] = establish

        pool: Pool[Connection] = Pool(
            address,
            _pool_options(options),
            establish,
            listener=self._listeners.publish if self._listeners else None,
            spawn=lambda coro: tasks.spawn(coro, "asyncmongo-pool-maintenance"),
        )
        server = Server(address, pool, None)
        if not options.load_balanced:
            monitor_settings = MonitorSettings(
                heartbeat_frequency_ms=options.heartbeat_frequency_ms,
                connect_timeout_ms=options.connect_timeout_ms,
                streaming=streaming_enabled(options.server_monitoring_mode),
            )
            monitor_connection = ConnectionSettings(
                connect_timeout=settings.connect_timeout,
                socket_timeout=None,
                tls=settings.tls,
                app_name=settings.app_name,
                driver_info=settings.driver_info,
                server_api=settings.server_api,
            )
            server.monitor = Monitor(
                server, topology, monitor_settings, monitor_connection, tasks.spawn
            )
        return server

    def _srv_hosts_changed(self, hosts: tuple[Address, ...]) -> None:
        if self._topology is not None and self._tasks is not None:
            self._tasks.spawn_unless_closed(
                self._topology.apply_srv_hosts(hosts), "asyncmongo-srv-update"
            )

    def _should_poll_srv(self) -> bool:
        topology = self._topology
        if topology is None:
            return False
        return topology.description.topology_type in (TopologyType.SHARDED, TopologyType.UNKNOWN)


def _pool_options(options: ClientOptions) -> PoolOptions:
    return PoolOptions(
        max_pool_size=options.max_pool_size,
        min_pool_size=options.min_pool_size,
        max_idle_time_ms=options.max_idle_time_ms or 0,
        max_connecting=options.max_connecting,
        wait_queue_timeout_ms=options.wait_queue_timeout_ms or 0,
        load_balanced=options.load_balanced,
    )


def _placeholder_settings() -> TopologySettings:
    return TopologySettings(seeds=(("localhost", 27017),))

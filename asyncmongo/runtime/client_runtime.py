"""What a connected client runs: its task set, topology, executor, cursor reaper and SRV
poller.

:meth:`ClientRuntime.create` resolves a ``mongodb+srv://`` URI and builds the topology and
executor; :meth:`ClientRuntime.open` starts monitoring (one monitor task per server, pool
maintenance) and the SRV poller, all in one :class:`~asyncmongo.runtime.tasks.TaskSet`;
:meth:`ClientRuntime.close` ends every task and socket and waits for them. The client holds
one while it is connected.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

from asyncmongo.bson import ObjectId
from asyncmongo.core.address import Address
from asyncmongo.core.auth.aws_sources import AwsCredentialCache
from asyncmongo.core.auth.oidc import MONGODB_OIDC
from asyncmongo.core.auth.scram import ScramCache
from asyncmongo.core.cmap.options import PoolOptions
from asyncmongo.core.error_policy import ErrorPhase
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.core.uri import ClientOptions
from asyncmongo.core.wire.handshake import DriverInfo
from asyncmongo.monitoring import Listeners
from asyncmongo.runtime.attempt import OperationSession
from asyncmongo.runtime.auth import CredentialAuthenticator
from asyncmongo.runtime.command_events import CommandEvents
from asyncmongo.runtime.connection import Authenticator, Connection, ConnectionSettings
from asyncmongo.runtime.cursor_reaper import CursorReaper
from asyncmongo.runtime.establish import Establisher
from asyncmongo.runtime.executor import Executor
from asyncmongo.runtime.monitor import Monitor, MonitorSettings, streaming_enabled
from asyncmongo.runtime.oidc import OidcAuthenticator
from asyncmongo.runtime.pool import Pool
from asyncmongo.runtime.server import Server
from asyncmongo.runtime.shutdown_guard import ShutdownGuard
from asyncmongo.runtime.srv import DnspythonResolver, SrvPoller, resolve_srv_options
from asyncmongo.runtime.tasks import TaskSet
from asyncmongo.runtime.topology import Topology

__all__ = ["ClientRuntime"]


class ClientRuntime:
    """One connected client's tasks, topology, executor and SRV poller."""

    __slots__ = (
        "_aws_cache",
        "_establishers",
        "_oidc",
        "_scram_cache",
        "executor",
        "guard",
        "listeners",
        "options",
        "poller",
        "reaper",
        "tasks",
        "topology",
    )

    def __init__(
        self,
        options: ClientOptions,
        loop: asyncio.AbstractEventLoop,
        listeners: Listeners,
        events: CommandEvents,
        implicit_session: Callable[[], OperationSession],
        scram_cache: ScramCache,
    ) -> None:
        self.options = options
        self.listeners = listeners
        listeners.on_observed = self._observe_pools
        self._scram_cache = scram_cache
        #: MONGODB-AWS credentials fetched from AWS endpoints, shared by every connection.
        self._aws_cache = AwsCredentialCache()
        credential = options.credential
        #: MONGODB-OIDC: one authenticator for all servers, holding the client's token cache.
        self._oidc = (
            OidcAuthenticator(credential)
            if credential is not None and credential.mechanism == MONGODB_OIDC
            else None
        )
        #: Each server's connection factory, so append_metadata reaches new connections.
        self._establishers: dict[Address, Establisher] = {}
        self.tasks = TaskSet(loop)
        settings = TopologySettings.from_options(options)
        self.topology = Topology(
            settings, self._make_server, self.tasks.spawn, listeners=listeners
        )
        self.executor = Executor(
            self.topology,
            implicit_session=implicit_session,
            retry_reads=options.retry_reads,
            retry_writes=options.retry_writes,
            events=events,
            max_adaptive_retries=options.max_adaptive_retries,
            overload_retargeting=options.enable_overload_retargeting,
        )
        #: Kills the server cursors of cursors dropped while open (their ``__del__``).
        self.reaper = CursorReaper(
            self.executor, self.tasks.spawn_unless_closed, loop, options.timeout_ms
        )
        self.poller: SrvPoller | None = None
        #: Closes this runtime if the loop ends with the client never closed.
        self.guard = ShutdownGuard(self._close_at_loop_shutdown)

    @classmethod
    async def create(
        cls,
        options: ClientOptions,
        listeners: Listeners,
        events: CommandEvents,
        implicit_session: Callable[[], OperationSession],
        scram_cache: ScramCache,
    ) -> ClientRuntime:
        """Resolve the seed list (mongodb+srv) and build the runtime; :meth:`open` starts it."""
        answer_ttl: float | None = None
        if options.is_srv:
            options, answer = await resolve_srv_options(options, DnspythonResolver())
            answer_ttl = answer.ttl
        loop = asyncio.get_running_loop()
        runtime = cls(options, loop, listeners, events, implicit_session, scram_cache)
        if options.is_srv and not options.load_balanced:
            runtime.poller = SrvPoller(
                options,
                resolver=DnspythonResolver(),
                on_hosts_changed=runtime._srv_hosts_changed,
                should_poll=runtime._should_poll_srv,
                initial_ttl_s=answer_ttl,
            )
        return runtime

    def open(self) -> None:
        """Start monitoring (the topology's tasks) and SRV polling."""
        self.topology.open()
        if self.poller is not None:
            # In the client's task set, like the monitors: a clean context, awaited by close().
            self.poller.start(self.tasks.spawn)

    async def close(self) -> None:
        """End every task and close every socket, and wait for them."""
        await self.guard.disarm()
        await self._close()

    async def _close_at_loop_shutdown(self) -> None:
        """The loop is ending and the application never closed the client: its tasks are
        already cancelled; close the sockets so none is left to the garbage collector."""
        await self._close()

    async def _close(self) -> None:
        try:
            if self.poller is not None:
                await self.poller.close()
            await self.topology.close()
        finally:
            await self.tasks.close()

    def _observe_pools(self, observed: bool) -> None:
        """``events()`` subscribers came or went: the pools build CMAP events or not."""
        listener = self.listeners.publish if observed else None
        for server in self.topology.servers.values():
            server.pool.observe(listener)

    def append_metadata(self, driver_info: tuple[DriverInfo, ...]) -> None:
        """New connections (pooled and monitoring) send ``driver_info`` in their handshake."""
        self.options = dataclasses.replace(self.options, driver_info=driver_info)
        servers = self.topology.servers
        for address in list(self._establishers):
            establisher = self._establishers[address]
            if address not in servers:
                del self._establishers[address]  # its server left the topology
                continue
            establisher.settings = dataclasses.replace(
                establisher.settings, driver_info=driver_info
            )
        for server in servers.values():
            if server.monitor is not None:
                server.monitor.connection_settings = dataclasses.replace(
                    server.monitor.connection_settings, driver_info=driver_info
                )

    # -- wiring ----------------------------------------------------------------------------

    def _make_server(self, address: Address, topology: Topology) -> Server:
        options = self.options
        tasks = self.tasks
        settings = ConnectionSettings.from_client_options(options)
        authenticator: Authenticator | None = self._oidc or (
            CredentialAuthenticator(
                options.credential, self._scram_cache, aws_cache=self._aws_cache
            )
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

        timeout_ms = options.timeout_ms
        establish = Establisher(
            address,
            settings,
            authenticator,
            lambda: pool.generation,
            report,
            background_timeout=timeout_ms / 1000 if timeout_ms else None,
        )
        self._establishers[address] = establish

        pool: Pool[Connection] = Pool(
            address,
            _pool_options(options),
            establish,
            establish_background=establish.background,
            listener=self.listeners.publish if self.listeners else None,
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
                proxy=settings.proxy,
                app_name=settings.app_name,
                driver_info=settings.driver_info,
                server_api=settings.server_api,
            )
            server.monitor = Monitor(
                server, topology, monitor_settings, monitor_connection, tasks.spawn
            )
        return server

    def _srv_hosts_changed(self, hosts: tuple[Address, ...]) -> None:
        self.tasks.spawn_unless_closed(
            self.topology.apply_srv_hosts(hosts), "asyncmongo-srv-update"
        )

    def _should_poll_srv(self) -> bool:
        return self.topology.description.topology_type in (
            TopologyType.SHARDED,
            TopologyType.UNKNOWN,
        )


def _pool_options(options: ClientOptions) -> PoolOptions:
    return PoolOptions(
        max_pool_size=options.max_pool_size,
        min_pool_size=options.min_pool_size,
        max_idle_time_ms=options.max_idle_time_ms or 0,
        max_connecting=options.max_connecting,
        wait_queue_timeout_ms=options.wait_queue_timeout_ms or 0,
        load_balanced=options.load_balanced,
    )

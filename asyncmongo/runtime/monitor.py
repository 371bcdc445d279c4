"""Monitor and RttMonitor: one task each per server (Server Monitoring spec).

``Monitor`` checks its server on a dedicated connection. Against a server that sends a
``topologyVersion`` (4.4+) it streams: one awaitable hello (``topologyVersion`` +
``maxAwaitTimeMS``, ``exhaustAllowed``) and then every ``moreToCome`` reply as the server pushes
it, so a state change reaches the topology as it happens. Otherwise (or with
serverMonitoringMode=poll, or "auto" in a FaaS environment) it polls every heartbeatFrequencyMS.
``request_check()`` sets an event that wakes a sleeping monitor at once (no sooner than
minHeartbeatFrequencyMS after the previous check); there is no sleep loop.

Failures follow "Network or command error during server check": the check's connection is
closed, the server marked Unknown, its pool cleared (interrupting in-use connections for a
timeout), and a network error on a server that was known is retried once at once.

``RttMonitor`` runs while streaming: its own connection, a plain hello every heartbeat, feeding
the server's RTT statistics (the streamed replies cannot measure RTT: they wait on purpose).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from asyncmongo.core.address import format_address
from asyncmongo.core.error_policy import ErrorKind, MonitorError
from asyncmongo.core.sdam.events import (
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
)
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.settings import MIN_HEARTBEAT_FREQUENCY_MS
from asyncmongo.core.wire.handshake import faas_env
from asyncmongo.errors import ConfigurationError, NetworkTimeout, OperationFailure
from asyncmongo.runtime.connection import Connection, ConnectionSettings, connect

if TYPE_CHECKING:
    from asyncmongo.runtime.server import Server
    from asyncmongo.runtime.topology import Topology

__all__ = ["Monitor", "MonitorSettings", "RttMonitor", "streaming_enabled"]

#: Monitoring connections are numbered apart from the pools' (they are never pooled).
_monitor_connection_ids = itertools.count(1)

#: RTT is measured with the high-resolution clock: uvloop's loop.time() has 1 ms steps.
_clock = time.perf_counter

Spawn = Callable[[Coroutine[Any, Any, None], str], "asyncio.Task[None]"]

MODES: Final = ("auto", "stream", "poll")


def streaming_enabled(mode: str, environ: Mapping[str, str] | None = None) -> bool:
    """serverMonitoringMode: stream / poll, or "auto": stream unless running in a FaaS."""
    if mode not in MODES:
        raise ConfigurationError(f"serverMonitoringMode must be one of {MODES}, not {mode!r}")
    if mode == "auto":
        return not faas_env(dict(os.environ) if environ is None else environ)
    return mode == "stream"


@dataclass(frozen=True, slots=True)
class MonitorSettings:
    """The monitoring options (milliseconds; ``connect_timeout_ms`` None: no limit)."""

    heartbeat_frequency_ms: float = 10_000
    min_heartbeat_frequency_ms: float = MIN_HEARTBEAT_FREQUENCY_MS
    connect_timeout_ms: float | None = 20_000
    streaming: bool = True


class Monitor:
    """The monitor task of one server."""

    __slots__ = (
        "_awaited",
        "_cancel_requested",
        "_checking",
        "_connection",
        "_connection_id",
        "_connection_settings",
        "_description",
        "_hello_ok",
        "_rtt_monitor",
        "_server",
        "_settings",
        "_spawn",
        "_task",
        "_topology",
        "_wake",
        "checks",
        "streamed_replies",
    )

    def __init__(
        self,
        server: Server,
        topology: Topology,
        settings: MonitorSettings,
        connection_settings: ConnectionSettings,
        spawn: Spawn,
    ) -> None:
        self._server = server
        self._topology = topology
        self._settings = settings
        self._connection_settings = connection_settings
        self._spawn = spawn
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._connection: Connection | None = None
        self._connection_id = 0
        self._description = ServerDescription.unknown(server.address)
        self._hello_ok = connection_settings.server_api is not None
        self._checking = False
        self._awaited = False
        self._cancel_requested = False
        self._rtt_monitor: RttMonitor | None = None
        #: How many checks ran, and how many replies came flagged moreToCome (pushed).
        self.checks = 0
        self.streamed_replies = 0

    def __repr__(self) -> str:
        if self._task is None:
            state = "not started"
        elif self._task.done():
            state = "stopped"
        elif self.streaming:
            state = "streaming"
        else:
            state = "checking" if self._checking else "waiting"
        return f"<Monitor {format_address(self._server.address)}: {state}, {self.checks} checks>"

    @property
    def streaming(self) -> bool:
        """True while the monitor awaits pushed replies (an awaitable hello or its stream)."""
        return self._checking and self._awaited

    def start(self) -> None:
        address = format_address(self._server.address)
        self._task = self._spawn(self._run(), f"asyncmongo-monitor {address}")

    def request_check(self) -> None:
        """Wake the monitor for an immediate check (spec: "Requesting an immediate check")."""
        self._wake.set()

    def cancel_check(self) -> None:
        """Interrupt the check in progress and drop its connection (the outcome is ignored)."""
        conn = self._connection
        if conn is None:
            return
        if self._checking:
            self._cancel_requested = True
        conn.close()

    async def close(self) -> None:
        """Stop the task (and the RTT monitor) and close their connections."""
        task, self._task = self._task, None
        try:
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        finally:
            if self._rtt_monitor is not None:
                await self._rtt_monitor.close()
            self._drop_connection()

    # -- the loop ----------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while True:
                previous = self._description
                outcome = await self._check(previous)
                if outcome is None:  # cancelled by an application's network error
                    await self._wait()
                    continue
                if isinstance(outcome, MonitorError):
                    transitioned = await self._topology.on_monitor_error(
                        self._server, previous, outcome
                    )
                    self._description = ServerDescription.unknown(self._server.address)
                    if transitioned:
                        continue  # spec: retry a network error on a known server once, at once
                    await self._wait()
                    continue
                self._description = outcome
                await self._topology.on_check_succeeded(self._server, outcome)
                streamable = self._settings.streaming and outcome.topology_version is not None
                if streamable:
                    self._start_rtt_monitor()
                    continue
                await self._wait()
        finally:
            self._drop_connection()

    async def _wait(self) -> None:
        """Sleep until heartbeatFrequencyMS passes or a check is requested, but at least
        minHeartbeatFrequencyMS since the wait began (spec pseudo-code ``wait()``)."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        try:
            async with asyncio.timeout(self._settings.heartbeat_frequency_ms / 1000):
                await self._wake.wait()
        except TimeoutError:
            pass
        self._wake.clear()
        left = self._settings.min_heartbeat_frequency_ms / 1000 - (loop.time() - start)
        if left > 0:
            await asyncio.sleep(left)

    @property
    def connection_settings(self) -> ConnectionSettings:
        """What the monitor's next connection (and its RTT monitor's) is made with.
        ``AsyncMongoClient.append_metadata`` swaps it; an open monitoring connection keeps
        the metadata it was handshaken with (handshake spec)."""
        return self._connection_settings

    @connection_settings.setter
    def connection_settings(self, settings: ConnectionSettings) -> None:
        self._connection_settings = settings
        if self._rtt_monitor is not None:
            self._rtt_monitor.connection_settings = settings

    def _start_rtt_monitor(self) -> None:
        if self._rtt_monitor is None:
            self._rtt_monitor = RttMonitor(
                self._server, self._topology, self._settings, self._connection_settings
            )
            self._rtt_monitor.start(self._spawn)

    def _drop_connection(self) -> None:
        conn, self._connection = self._connection, None
        if conn is not None:
            conn.close()

    # -- one check ---------------------------------------------------------------------------

    async def _check(self, previous: ServerDescription) -> ServerDescription | MonitorError | None:
        """One check: connect (the handshake is the check), read the next streamed reply,
        start a stream, or poll. Returns the new description, the error, or None if an
        application cancelled the check."""
        loop = asyncio.get_running_loop()
        conn = self._connection
        fresh = conn is None or conn.is_closed
        assert conn is not None or fresh
        streamed = not fresh and conn is not None and conn.more_to_come
        start_stream = (
            not fresh
            and not streamed
            and self._settings.streaming
            and previous.topology_version is not None
        )
        awaited = streamed or start_stream
        self._checking = True
        self._awaited = awaited
        self._cancel_requested = False
        self.checks += 1
        self._wake.clear()  # a request during the check is satisfied by it
        topology = self._topology
        if fresh:
            self._connection_id = next(_monitor_connection_ids)
        ids = (self._connection_id, _server_connection_id(conn))
        topology.publish_heartbeat(ServerHeartbeatStartedEvent(self._server.address, awaited), *ids)
        start = _clock()
        try:
            reply = await self._hello(conn, fresh, streamed, start_stream, previous)
            duration = (_clock() - start) * 1000
            if reply.get("ok") not in (1, 1.0, True):
                raise OperationFailure(str(reply.get("errmsg", "hello failed")), None, reply)
            rtt = self._server.rtt if awaited else self._server.rtt.add(duration)
            description = ServerDescription.from_hello(
                self._server.address, reply, rtt, loop.time() * 1000
            )
        except Exception as exc:  # network, timeout, ok: 0 or a malformed reply
            self._drop_connection()
            self._server.rtt = self._server.rtt.reset()
            if self._cancel_requested:
                return None
            duration = (_clock() - start) * 1000
            topology.publish_heartbeat(
                ServerHeartbeatFailedEvent(self._server.address, duration, exc, awaited), *ids
            )
            return MonitorError(_error_kind(exc), str(exc) or type(exc).__name__)
        finally:
            self._checking = False
        self._server.rtt = rtt
        if fresh:
            # Handshake spec: the handshake's reply (helloOk) or a declared serverApi decides
            # that this connection's later checks use hello; a reply to hello itself does not
            # repeat helloOk, so it must not switch the checks back to a legacy isMaster
            # (which a server refuses under apiStrict: it is not in API Version 1).
            self._hello_ok = (
                self._connection_settings.server_api is not None or reply.get("helloOk") is True
            )
        topology.publish_heartbeat(
            ServerHeartbeatSucceededEvent(self._server.address, duration, reply, awaited),
            self._connection_id,
            _server_connection_id(self._connection),
        )
        return description

    async def _hello(
        self,
        conn: Connection | None,
        fresh: bool,
        streamed: bool,
        start_stream: bool,
        previous: ServerDescription,
    ) -> Mapping[str, Any]:
        loop = asyncio.get_running_loop()
        timeout_ms = self._settings.connect_timeout_ms
        if fresh:
            self._connection = conn = await connect(
                self._server.address,
                self._connection_settings,
                id=self._connection_id,
                deadline=None,
            )
            return conn.hello
        assert conn is not None
        if streamed or start_stream:
            # Spec: connectTimeoutMS + heartbeatFrequencyMS bounds an awaited reply.
            deadline = None
            if timeout_ms is not None:
                limit = timeout_ms + self._settings.heartbeat_frequency_ms
                deadline = loop.time() + limit / 1000
            if streamed:
                reply = await conn.read_more_to_come(deadline)
            else:
                assert previous.topology_version is not None
                command = self._hello_command()
                command["topologyVersion"] = previous.topology_version.to_document()
                command["maxAwaitTimeMS"] = int(self._settings.heartbeat_frequency_ms)
                reply = await conn.command(
                    "admin", command, deadline=deadline, exhaust_allowed=True
                )
            if conn.more_to_come:
                self.streamed_replies += 1  # the server pushed it with moreToCome set
            return reply
        deadline = None if timeout_ms is None else loop.time() + timeout_ms / 1000
        return await conn.command("admin", self._hello_command(), deadline=deadline)

    def _hello_command(self) -> dict[str, Any]:
        return {"hello": 1} if self._hello_ok else {"isMaster": 1, "helloOk": True}


def _server_connection_id(conn: Connection | None) -> int | None:
    """The server's id for our monitoring connection (hello's ``connectionId``)."""
    value = conn.hello.get("connectionId") if conn is not None else None
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _error_kind(exc: BaseException) -> ErrorKind:
    if isinstance(exc, NetworkTimeout | TimeoutError):
        return ErrorKind.TIMEOUT
    if isinstance(exc, OperationFailure):
        return ErrorKind.COMMAND
    return ErrorKind.NETWORK


class RttMonitor:
    """Measures a streaming server's round trip time on its own connection."""

    __slots__ = (
        "_connection",
        "_connection_settings",
        "_server",
        "_settings",
        "_task",
        "_topology",
        "samples",
    )

    def __init__(
        self,
        server: Server,
        topology: Topology,
        settings: MonitorSettings,
        connection_settings: ConnectionSettings,
    ) -> None:
        self._server = server
        self._topology = topology
        self._settings = settings
        self._connection_settings = connection_settings
        self._connection: Connection | None = None
        self._task: asyncio.Task[None] | None = None
        #: How many samples it took.
        self.samples = 0

    def __repr__(self) -> str:
        return f"<RttMonitor {format_address(self._server.address)}: {self.samples} samples>"

    @property
    def connection_settings(self) -> ConnectionSettings:
        """What the next RTT connection is made with (see Monitor.connection_settings)."""
        return self._connection_settings

    @connection_settings.setter
    def connection_settings(self, settings: ConnectionSettings) -> None:
        self._connection_settings = settings

    def start(self, spawn: Spawn) -> None:
        address = format_address(self._server.address)
        self._task = spawn(self._run(), f"asyncmongo-rtt-monitor {address}")

    async def close(self) -> None:
        task, self._task = self._task, None
        try:
            if task is not None and not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        finally:
            self._drop()

    def _drop(self) -> None:
        conn, self._connection = self._connection, None
        if conn is not None:
            conn.close()

    async def _run(self) -> None:
        try:
            while True:
                try:
                    sample = await self._ping()
                except Exception:
                    # Spec: close the connection and try again later; the Monitor, not the
                    # RttMonitor, resets the average.
                    self._drop()
                else:
                    if sample is not None:  # None: a new connection, no sample yet
                        self.samples += 1
                        self._server.rtt = self._server.rtt.add(sample)
                        await self._topology.on_rtt_sample(self._server)
                await asyncio.sleep(self._settings.heartbeat_frequency_ms / 1000)
        finally:
            self._drop()

    async def _ping(self) -> float | None:
        """One RTT sample in milliseconds; None after opening the connection (a handshake,
        with TCP, TLS and authentication, is no round trip sample)."""
        loop = asyncio.get_running_loop()
        start = _clock()
        timeout_ms = self._settings.connect_timeout_ms
        if self._connection is None or self._connection.is_closed:
            self._connection = await connect(
                self._server.address,
                self._connection_settings,
                id=next(_monitor_connection_ids),
            )
            return None
        deadline = None if timeout_ms is None else loop.time() + timeout_ms / 1000
        await self._connection.command("admin", {"hello": 1}, deadline=deadline)
        return (_clock() - start) * 1000

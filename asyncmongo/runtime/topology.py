"""Topology: the one owner of the TopologyDescription, and server selection that awaits change.

Every change (a monitor's check, an application error's verdict, an RTT sample, an SRV rescan)
goes through the pure ``TopologyDescription.apply`` (or ``apply_srv_hosts``); the topology swaps
in the result, publishes the SDAM events to the listeners and as log messages, creates or
closes the ``Server`` of every address that joined or left, bumps ``version`` and wakes
everyone waiting on its one ``asyncio.Condition``. Nobody else writes the description.

``select_server`` selects from the current snapshot; when nothing suits it asks every monitor
for an immediate check and waits on the condition (for what is left of
serverSelectionTimeoutMS / the operation's deadline), then selects again: it wakes only when
the description changed, never on a timer. On timeout it raises ServerSelectionTimeoutError
with the description and the reason no server suited.

Mutations are coroutines only to take the condition's lock for ``notify_all``; the lock is
never held across a suspension (waiters release it in ``wait``), so each mutation is one
uninterrupted step of the event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping
from typing import Any, NamedTuple

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.address import Address, format_address
from asyncmongo.core.error_policy import (
    ApplicationError,
    ErrorPhase,
    MonitorError,
    application_error_verdict,
    monitor_error_verdict,
)
from asyncmongo.core.sdam.events import SdamEvent, ServerClosedEvent, ServerOpeningEvent
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.core.selection import Selection, read_preference_to_send, select_server
from asyncmongo.core.selection.explain import describe_selection, selection_timeout_error
from asyncmongo.errors import ConfigurationError, InvalidOperation, ServerSelectionTimeoutError
from asyncmongo.monitoring import Listeners, sdam_log
from asyncmongo.monitoring.debug_check import debug_maybe
from asyncmongo.monitoring.selection_log import SELECTION_LOGGER, SelectionLog
from asyncmongo.runtime.server import Server

__all__ = ["Route", "Topology"]

#: False when selection logging is certainly off (monitoring/debug_check.py).
_selection_debug_maybe = debug_maybe(SELECTION_LOGGER)


class Route(NamedTuple):
    """What a selection resolved to under one description: the server, the topology's type
    and the ``$readPreference`` its commands carry (all three pure functions of the
    description and the selection, so remembered together)."""

    server: Server
    topology_type: TopologyType
    read_preference: dict[str, Any] | None


ServerFactory = Callable[[Address, "Topology"], Server]
Spawn = Callable[[Coroutine[Any, Any, None], str], "asyncio.Task[None]"]


class Topology:
    """The runtime topology of one client."""

    __slots__ = (
        "_closed",
        "_closing",
        "_condition",
        "_description",
        "_last_selection",
        "_listeners",
        "_loop",
        "_rng",
        "_server_factory",
        "_servers",
        "_spawn",
        "selection_attempts",
        "settings",
        "topology_id",
        "version",
        "wakeups",
    )

    def __init__(
        self,
        settings: TopologySettings,
        server_factory: ServerFactory,
        spawn: Spawn,
        *,
        listeners: Listeners | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self.topology_id = ObjectId()
        self._server_factory = server_factory
        self._spawn = spawn
        self._listeners = listeners if listeners is not None else Listeners()
        self._rng = rng or random.Random()
        self._servers: dict[Address, Server] = {}
        self._condition = asyncio.Condition()
        self._description = TopologyDescription.initial(settings, self.topology_id)
        self._closed = False
        #: In a one-server topology: the description and, per selection run against it,
        #: the route found (reads and writes each have theirs).
        self._last_selection: tuple[TopologyDescription, list[tuple[Selection, Route]]] | None = (
            None
        )
        self._closing: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Bumped on every change of the description (not on RTT-only updates).
        self.version = 0
        #: Selection attempts and condition wake-ups of select_server (tests count them).
        self.selection_attempts = 0
        self.wakeups = 0

    def __repr__(self) -> str:
        return f"<Topology v{self.version} {self._description!r}>"

    # -- reading -------------------------------------------------------------------------------

    @property
    def description(self) -> TopologyDescription:
        """The current snapshot (immutable)."""
        return self._description

    @property
    def servers(self) -> Mapping[Address, Server]:
        return dict(self._servers)

    def server(self, address: Address) -> Server | None:
        return self._servers.get(address)

    async def wait_for_change(
        self,
        timeout: float | None,  # noqa: ASYNC109 (a bounded wait, like the Rust driver's)
        version: int | None = None,
    ) -> bool:
        """Wait until ``version`` (default: the current one) is superseded; False on timeout."""
        seen = self.version if version is None else version
        async with self._condition:
            try:
                async with asyncio.timeout(timeout):
                    await self._condition.wait_for(lambda: self.version != seen)
            except TimeoutError:
                return False
        return True

    # -- lifecycle -----------------------------------------------------------------------------

    def open(self) -> None:
        """Publish the opening events and start a Server (and its monitor) per seed."""
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        description, events = TopologyDescription.open(self.settings, self.topology_id)
        self._install(description, events)

    async def close(self) -> None:
        """Stop every monitor, close every pool, publish the closing events."""
        if self._closed:
            return
        self._closed = True
        servers = list(self._servers.values())
        self._servers.clear()
        closing = [*(s.close() for s in servers), *self._closing]
        results = await asyncio.gather(*closing, return_exceptions=True)
        description, events = self._description.close()
        self._description = description
        self._publish(events)
        self.version += 1
        await self._notify()
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result

    # -- changes -------------------------------------------------------------------------------

    async def on_check_succeeded(self, server: Server, description: ServerDescription) -> None:
        """A monitor's check: apply it; a server now known gets its pool marked ready."""
        self._apply(description)
        current = self._description.servers.get(server.address)
        if current is not None and current.is_known and self._servers.get(server.address) is server:
            server.pool.ready()
        # Server Monitoring: "each time a check completes, threads waiting for a suitable
        # server are unblocked" (changed or not), so they request the next check.
        await self._notify()

    async def on_monitor_error(
        self, server: Server, previous: ServerDescription, error: MonitorError
    ) -> bool:
        """A failed check: Unknown, then the pool cleared. True: check again at once."""
        verdict = monitor_error_verdict(previous, error)
        self._apply(verdict.new_description)
        if verdict.clear_pool and self._servers.get(server.address) is server:
            server.pool.clear(interrupt_in_use_connections=verdict.interrupt_in_use_connections)
        await self._notify()  # a completed check, as above
        return verdict.check_again_immediately

    async def on_rtt_sample(self, server: Server) -> None:
        """The RttMonitor measured: the description's RTT follows (no event: RTT is not
        part of Server Description Equality)."""
        current = self._description.servers.get(server.address)
        if current is None or not current.is_known:
            return
        if self._servers.get(server.address) is not server:
            return
        updated = current.replace(
            round_trip_time_ms=server.rtt.average, min_round_trip_time_ms=server.rtt.minimum
        )
        if self._apply(updated):
            await self._notify()

    async def handle_application_error(
        self,
        address: Address,
        exc: BaseException,
        generation: int,
        *,
        phase: ErrorPhase = ErrorPhase.ESTABLISHED,
        max_wire_version: int | None = None,
        service_id: ObjectId | None = None,
    ) -> None:
        """SDAM "Error handling": carry out the pure verdict on an operation's error.

        Mark the server Unknown (through the same apply as a check), then clear its pool
        (interrupting in-use connections if the verdict says so), request an immediate check
        or cancel the check in progress. Stale errors (older pool generation or
        topologyVersion) change nothing.
        """
        error = ApplicationError.from_exception(
            exc, generation, phase, max_wire_version, service_id
        )
        if error is not None:
            await self.handle_error(address, error)

    async def handle_error(self, address: Address, error: ApplicationError) -> None:
        """Like ``handle_application_error`` for an error already described as data."""
        if self.carry_out_error(address, error):
            await self._notify()

    def carry_out_error(self, address: Address, error: ApplicationError) -> bool:
        """The synchronous part of ``handle_error``: True if the description changed (the
        caller then notifies the waiters).

        The verdict is carried out with no await in between (mark Unknown, clear the pool,
        cancel or request a check), so a caller that goes on only after this returns sees the
        pool already cleared: a failed establishment reports here before the pool emits
        ConnectionClosed/ConnectionCheckOutFailed (CMAP logging spec order), and the same
        error reported again later carries the old generation and is ignored as stale.
        """
        server = self._servers.get(address)
        current = self._description.servers.get(address)
        if server is None or current is None:
            return False
        verdict = application_error_verdict(
            current,
            self._description.topology_type,
            server.pool.generation_for(error.service_id),
            error,
        )
        if verdict.ignored_because is not None:
            return False
        changed = False
        if verdict.new_description is not None:
            changed = self._apply(verdict.new_description)
        if verdict.clear_pool:
            server.pool.clear(
                interrupt_in_use_connections=verdict.interrupt_in_use_connections,
                service_id=verdict.service_id,
                cause=None,
            )
        if verdict.cancel_check:
            server.cancel_check()
        if verdict.request_immediate_check:
            server.request_check()
        return changed

    async def apply_srv_hosts(self, hosts: Iterable[Address]) -> None:
        """SRV polling found a new host list: the mongos set follows it."""
        new, events = self._description.apply_srv_hosts(
            hosts, self.settings.srv_max_hosts, self._rng
        )
        if self._install(new, events):
            await self._notify()

    def request_checks(self) -> None:
        """Ask every monitor for an immediate check."""
        for server in self._servers.values():
            server.request_check()

    # -- selection -----------------------------------------------------------------------------

    async def select_server(
        self,
        selection: Selection,
        deadline: float | None = None,
        deprioritized: Collection[Address] = (),
        *,
        operation: str = "command",
        operation_id: int | None = None,
    ) -> Server:
        """A Server suitable for ``selection``, waiting for the topology to change if needed.

        ``deadline`` is a ``loop.time()`` (the operation's timeoutMS); without one,
        serverSelectionTimeoutMS applies. Raises ServerSelectionTimeoutError when it passes,
        ConfigurationError for an incompatible topology or invalid maxStalenessSeconds,
        InvalidOperation once the topology is closed.
        """
        if not deprioritized:
            route = self.route(selection)
            if route is not None:
                return route.server
        loop = asyncio.get_running_loop()
        start = loop.time()
        limit = start + self.settings.server_selection_timeout_ms / 1000
        # CSOT: min(serverSelectionTimeoutMS, what is left of timeoutMS)
        budget_ms = None if deadline is None or deadline >= limit else (deadline - start) * 1000
        deadline = limit if deadline is None else min(deadline, limit)
        if deprioritized:
            selection = dataclasses.replace(selection, deprioritized=frozenset(deprioritized))
        selector = describe_selection(selection)
        log = SelectionLog(self, operation, selector, operation_id)
        log("Server selection started")
        logged_wait = False
        async with self._condition:
            while True:
                found = self._try_select(selection, log)
                if found is not None:
                    return found
                self.request_checks()
                remaining = deadline - loop.time()
                if not logged_wait:
                    logged_wait = True
                    log(
                        "Waiting for suitable server to become available",
                        remaining_ms=max(remaining, 0) * 1000,
                        level=logging.INFO,
                    )
                try:
                    if remaining <= 0:
                        raise TimeoutError
                    async with asyncio.timeout_at(deadline):
                        await self._condition.wait()
                except TimeoutError:
                    found = self._try_select(selection, log)
                    if found is not None:
                        return found
                    error = self._selection_timeout(selection, budget_ms)
                    log("Server selection failed", failure=error)
                    raise error from None
                self.wakeups += 1

    def route(self, selection: Selection) -> Route | None:
        """The fast path of every operation: the description is the very one a selection
        equal to ``selection`` ran against, and it has one server, so selection (a pure
        function of the two; the choice by operation count has nothing to choose) finds
        that server again, with the same read preference to send. None otherwise, and while
        selection logging is on (it logs every step): then ``select_server`` runs."""
        last = self._last_selection
        if last is None or last[0] is not self._description or self._closed:
            return None
        entries = last[1]  # a few entries (selections are not hashable)
        # a collection's operations share its Target, hence its Selection: look for the
        # very object among all entries before comparing any field by field
        found = None
        for remembered, route in entries:
            if remembered is selection:
                found = route
                break
        else:
            for remembered, route in entries:
                if remembered == selection:
                    if len(entries) < 8:  # so that the next time identity finds it
                        entries.append((selection, route))
                    found = route
                    break
            else:
                return None
        if _selection_debug_maybe() and SELECTION_LOGGER.isEnabledFor(logging.DEBUG):
            return None
        self.selection_attempts += 1
        return found

    def _remember(
        self, description: TopologyDescription, selection: Selection, server: Server
    ) -> None:
        last = self._last_selection
        if last is None or last[0] is not description or len(last[1]) >= 8:
            last = self._last_selection = (description, [])
        preference = read_preference_to_send(description, selection, server.address)
        last[1].append((selection, Route(server, description.topology_type, preference)))

    def _try_select(self, selection: Selection, log: SelectionLog) -> Server | None:
        if self._closed:
            raise InvalidOperation("the client is closed")
        self.selection_attempts += 1
        description = self._description
        counts = {a: s.operation_count for a, s in self._servers.items()}
        try:
            chosen = select_server(description, selection, counts, self._rng)
        except ConfigurationError as exc:
            log("Server selection failed", failure=exc)
            raise
        if chosen is None:
            return None
        server = self._servers.get(chosen.address)
        if server is not None and len(description.servers) == 1:
            self._remember(description, selection, server)
        if server is not None:
            log("Server selection succeeded", address=server.address)
        return server

    def _selection_timeout(
        self, selection: Selection, budget_ms: float | None = None
    ) -> ServerSelectionTimeoutError:
        return selection_timeout_error(
            self._description, selection, self.settings.server_selection_timeout_ms, budget_ms
        )

    # -- plumbing ------------------------------------------------------------------------------

    def _apply(self, description: ServerDescription) -> bool:
        new, events = self._description.apply(description)
        return self._install(new, events)

    def _install(self, new: TopologyDescription, events: list[SdamEvent]) -> bool:
        """Swap in ``new``, publish, follow the server set; True if anything changed."""
        if self._closed:
            return False
        self._description = new
        self._publish(events)
        self._follow_servers()
        if not events:
            return False
        self.version += 1
        return True

    def _follow_servers(self) -> None:
        """Create a Server per new address, close those whose address left."""
        wanted = self._description.servers
        for address in [a for a in self._servers if a not in wanted]:
            server = self._servers.pop(address)
            self._close_later(server)
        for address in wanted:
            if address not in self._servers:
                server = self._server_factory(address, self)
                self._servers[address] = server
                server.start()

    def _close_later(self, server: Server) -> None:
        """A removed server is closed in a task of its own: its monitor may be the caller.
        ``close()`` awaits these before it returns."""
        task = self._spawn(server.close(), f"asyncmongo-close {format_address(server.address)}")
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _publish(self, events: list[SdamEvent]) -> None:
        logger = sdam_log.SDAM_LOGGER
        log = logger.isEnabledFor(logging.DEBUG)
        for event in events:
            self._listeners.publish(event)
            if log:
                message = sdam_log.sdam_message(event)
                if message is not None:
                    logger.debug(message)
            self._log_server_monitoring(event, log)

    def _log_server_monitoring(self, event: SdamEvent, log: bool) -> None:
        if not log or not isinstance(event, ServerOpeningEvent | ServerClosedEvent):
            return
        started = isinstance(event, ServerOpeningEvent)
        sdam_log.SDAM_LOGGER.debug(
            sdam_log.server_monitoring_message(self.topology_id, event.address, started)
        )

    def publish_heartbeat(
        self,
        event: sdam_log.HeartbeatEvent,
        driver_connection_id: int | None,
        server_connection_id: int | None,
    ) -> None:
        """Monitors publish heartbeat events (and their log messages) through here."""
        self._listeners.publish(event)
        logger = sdam_log.SDAM_LOGGER
        if logger.isEnabledFor(logging.DEBUG):
            message = sdam_log.heartbeat_message(
                self.topology_id, event, driver_connection_id, server_connection_id
            )
            logger.debug(message)

    async def _notify(self) -> None:
        async with self._condition:
            self._condition.notify_all()

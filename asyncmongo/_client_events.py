"""A client's event plumbing: its listeners and ``client.events()`` subscribers.

Listeners (``event_listeners=``) may be plain callables or coroutine functions; a coroutine
listener runs as a task owned by the client (closed with it). PyMongo's listener objects
(CommandListener, ConnectionPoolListener, ... subclasses) are taken too, each event going to
the method PyMongo calls for it. ``client.events()`` is an async
iterator over every event (command events always; SDAM and CMAP events when the client was
created with ``event_listeners`` or ``observe_events=True``, because pools and monitors decide
at creation whether to build events at all, which keeps the unobserved hot path free).
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from typing import Any

from asyncmongo.errors import ConfigurationError
from asyncmongo.monitoring import Listeners
from asyncmongo.monitoring.listener_objects import is_listener_object, listener_object_callable
from asyncmongo.monitoring.listeners import LOGGER
from asyncmongo.runtime.command_events import CommandEvents

__all__ = ["EVENT_BACKLOG", "ClientEvents", "EventListener"]

EventListener = Callable[[Any], Any]
#: Events kept for an ``events()`` consumer that falls behind (the oldest are dropped).
EVENT_BACKLOG = 10_000


class ClientEvents:
    """One client's listeners and subscribers; ``spawn`` runs a coroutine listener's call as a
    task of the client (False: the client is not running, the call is dropped)."""

    __slots__ = (
        "_observe",
        "_queues",
        "_spawn",
        "_tracer",
        "_user_listeners",
        "command_events",
        "listeners",
    )

    def __init__(
        self,
        listeners: Iterable[EventListener],
        observe: bool,
        spawn: Callable[[Coroutine[Any, Any, Any]], bool],
        tracer: Callable[[Any], None] | None = None,
    ) -> None:
        self._spawn = spawn
        self._user_listeners = [self._wrap(listener) for listener in listeners]
        #: OpenTelemetry's command spans (a client that traces): fed command events only.
        self._tracer = tracer
        self._queues: set[_EventQueue] = set()
        self.command_events = CommandEvents()
        self._observe = observe or bool(self._user_listeners)
        #: What the runtime publishes SDAM, heartbeat and CMAP events through; observed while
        #: there is a listener or a subscriber (or ``observe_events=True``).
        self.listeners = Listeners(
            [*self._user_listeners, self._fan_out], observed=self._observe
        )
        self._update_publisher()

    def subscribe(self, backlog: int = EVENT_BACKLOG) -> AsyncIterator[Any]:
        """Every event from this call on (see ``AsyncMongoClient.events``)."""
        queue = _EventQueue(backlog)
        self._queues.add(queue)
        self._update_publisher()
        return self._drain(queue)

    @property
    def subscribers(self) -> int:
        return len(self._queues)

    async def _drain(self, queue: _EventQueue) -> AsyncIterator[Any]:
        try:
            while True:
                yield await queue.get()
        finally:
            self._queues.discard(queue)
            self._update_publisher()

    def _wrap(self, listener: EventListener) -> EventListener:
        if is_listener_object(listener):  # PyMongo's monitoring API: one method per event
            return listener_object_callable(listener)
        if not callable(listener):
            raise ConfigurationError(f"an event listener must be callable, not {listener!r}")
        if not inspect.iscoroutinefunction(listener):
            return listener
        spawn = self._spawn

        def spawned(event: Any) -> None:
            coro = listener(event)
            if not spawn(coro):
                coro.close()

        return spawned

    def _fan_out(self, event: Any) -> None:
        for queue in self._queues:
            queue.put(event)

    def _update_publisher(self) -> None:
        """Command and CMAP events go to the listeners and ``events()`` consumers, when there
        are any (nobody listening: none are built)."""
        observed = bool(self._user_listeners) or bool(self._queues)
        traced = observed or self._tracer is not None
        self.command_events.publish = self._publish_command if traced else None
        self.listeners.set_observed(observed or self._observe)

    def _publish_command(self, event: Any) -> None:
        if self._tracer is not None:
            self._tracer(event)
        for listener in self._user_listeners:
            try:
                listener(event)
            except Exception:
                LOGGER.exception("event listener %r failed on %r", listener, event)
        self._fan_out(event)


class _EventQueue:
    """One ``events()`` subscriber: a bounded deque and a waiter future."""

    __slots__ = ("_events", "_waiter", "dropped")

    def __init__(self, backlog: int) -> None:
        self._events: deque[Any] = deque(maxlen=backlog)
        self._waiter: asyncio.Future[None] | None = None
        self.dropped = 0

    def put(self, event: Any) -> None:
        if len(self._events) == self._events.maxlen:
            self.dropped += 1
        self._events.append(event)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> Any:
        while not self._events:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._events.popleft()

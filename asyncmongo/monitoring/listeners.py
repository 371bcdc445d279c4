"""Event listeners: how applications observe SDAM, heartbeat and CMAP events.

A listener is any callable taking one event (the frozen event values exported by
:mod:`asyncmongo.monitoring`). ``AsyncMongoClient(..., event_listeners=[...])`` hands them to
:class:`Listeners`, which the runtime publishes through.
A listener that raises is logged and skipped: an observer must never break the driver.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from asyncmongo.errors import ConfigurationError

__all__ = ["LOGGER", "EventListener", "Listeners"]

LOGGER = logging.getLogger("asyncmongo.monitoring")

EventListener = Callable[[Any], None]


class Listeners:
    """The client's listeners; ``publish(event)`` calls each in registration order."""

    __slots__ = ("_listeners",)

    def __init__(self, listeners: Iterable[EventListener] = ()) -> None:
        self._listeners: tuple[EventListener, ...] = tuple(listeners)
        for listener in self._listeners:
            if not callable(listener):
                raise ConfigurationError(f"an event listener must be callable, not {listener!r}")

    def __bool__(self) -> bool:
        return bool(self._listeners)

    def __repr__(self) -> str:
        return f"<Listeners {len(self._listeners)}>"

    def publish(self, event: Any) -> None:
        """Deliver ``event`` to every listener; failures are logged, never raised."""
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                LOGGER.exception("event listener %r failed on %r", listener, event)

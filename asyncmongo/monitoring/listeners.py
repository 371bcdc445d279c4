"""Event listeners: how applications observe SDAM, heartbeat and CMAP events.

A listener is any callable taking one event (the frozen event values exported by
:mod:`asyncmongo.monitoring`). ``AsyncMongoClient(..., event_listeners=[...])`` hands them to
:class:`Listeners`, which the runtime publishes through.
A listener that raises is logged and skipped: an observer must never break the driver.

Whether anyone observes can change while the client runs (``client.events()`` subscribers come
and go): :meth:`Listeners.set_observed` flips ``bool(listeners)`` and tells ``on_observed``, so
the runtime builds CMAP events only while someone consumes them.
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
    """The client's listeners; ``publish(event)`` calls each in registration order.

    ``bool(listeners)`` says whether events are observed: by default whether there is any
    listener, else what :meth:`set_observed` last said.
    """

    __slots__ = ("_listeners", "_observed", "on_observed")

    def __init__(
        self, listeners: Iterable[EventListener] = (), *, observed: bool | None = None
    ) -> None:
        self._listeners: tuple[EventListener, ...] = tuple(listeners)
        for listener in self._listeners:
            if not callable(listener):
                raise ConfigurationError(f"an event listener must be callable, not {listener!r}")
        self._observed = bool(self._listeners) if observed is None else observed
        #: Called with the new value when :meth:`set_observed` changes it (the runtime turns
        #: its pools' events on or off).
        self.on_observed: Callable[[bool], None] | None = None

    def __bool__(self) -> bool:
        return self._observed

    def __repr__(self) -> str:
        state = "observed" if self._observed else "unobserved"
        return f"<Listeners {len(self._listeners)} {state}>"

    def set_observed(self, observed: bool) -> None:
        """Consumers came or went: say whether events should be built from now on."""
        if observed == self._observed:
            return
        self._observed = observed
        if self.on_observed is not None:
            self.on_observed(observed)

    def publish(self, event: Any) -> None:
        """Deliver ``event`` to every listener; failures are logged, never raised."""
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                LOGGER.exception("event listener %r failed on %r", listener, event)

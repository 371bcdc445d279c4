"""PyMongo's listener objects taken as event listeners.

asyncmongo's listeners are callables taking any event. PyMongo's monitoring API instead has
objects with one method per event (``started``/``succeeded``/``failed`` on a
``CommandListener``, ``pool_created`` ... on a ``ConnectionPoolListener``), passed as
``event_listeners=[...]`` or registered globally with ``pymongo.monitoring.register``. Such an
object (an instance of a subclass of one or more of PyMongo's five listener classes, known by
their module, without importing PyMongo) becomes one callable that routes each event to the
method PyMongo would call, and ignores the events its classes do not listen to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["is_listener_object", "listener_object_callable"]

_PYMONGO_MONITORING = "pymongo.monitoring"

#: PyMongo listener class -> {asyncmongo event class name: the method PyMongo calls}.
_METHODS: dict[str, dict[str, str]] = {
    "CommandListener": {
        "CommandStartedEvent": "started",
        "CommandSucceededEvent": "succeeded",
        "CommandFailedEvent": "failed",
    },
    "ServerHeartbeatListener": {
        "ServerHeartbeatStartedEvent": "started",
        "ServerHeartbeatSucceededEvent": "succeeded",
        "ServerHeartbeatFailedEvent": "failed",
    },
    "ServerListener": {
        "ServerOpeningEvent": "opened",
        "ServerDescriptionChangedEvent": "description_changed",
        "ServerClosedEvent": "closed",
    },
    "TopologyListener": {
        "TopologyOpeningEvent": "opened",
        "TopologyDescriptionChangedEvent": "description_changed",
        "TopologyClosedEvent": "closed",
    },
    "ConnectionPoolListener": {
        "PoolCreatedEvent": "pool_created",
        "PoolReadyEvent": "pool_ready",
        "PoolClearedEvent": "pool_cleared",
        "PoolClosedEvent": "pool_closed",
        "ConnectionCreatedEvent": "connection_created",
        "ConnectionReadyEvent": "connection_ready",
        "ConnectionClosedEvent": "connection_closed",
        "ConnectionCheckOutStartedEvent": "connection_check_out_started",
        "ConnectionCheckOutFailedEvent": "connection_check_out_failed",
        "ConnectionCheckedOutEvent": "connection_checked_out",
        "ConnectionCheckedInEvent": "connection_checked_in",
    },
}


def _listener_kinds(listener: object) -> list[str]:
    return [
        cls.__name__
        for cls in type(listener).__mro__
        if cls.__module__ == _PYMONGO_MONITORING and cls.__name__ in _METHODS
    ]


def is_listener_object(listener: object) -> bool:
    """Whether ``listener`` is an instance of one of PyMongo's listener classes."""
    return bool(_listener_kinds(listener))


def listener_object_callable(listener: object) -> Callable[[Any], None]:
    """One callable delivering each event to ``listener``'s method for it."""
    routes: dict[str, Callable[[Any], Any]] = {}
    for kind in _listener_kinds(listener):
        for event_name, method in _METHODS[kind].items():
            routes[event_name] = getattr(listener, method)

    def deliver(event: Any) -> None:
        route = routes.get(type(event).__name__)
        if route is not None:
            route(event)

    deliver.__qualname__ = f"deliver to {type(listener).__name__}"
    return deliver

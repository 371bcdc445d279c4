"""Monitoring: every event the driver publishes, the listeners, and the logging spec's loggers.

``from asyncmongo.monitoring import ...`` is the public home of every event class: command
events (:mod:`~asyncmongo.monitoring.command`), SDAM and heartbeat events (defined, pure, in
``asyncmongo.core.sdam.events``) and CMAP events (``asyncmongo.core.cmap.events``), plus
:class:`Listeners`, through which the runtime publishes them. An application receives them
through ``AsyncMongoClient(event_listeners=[...])`` or ``async for event in client.events()``.

The logging spec's messages are built and logged by ``command_log`` ("asyncmongo.command"),
``sdam_log`` ("asyncmongo.topology") and ``selection_log`` ("asyncmongo.serverSelection"); the
connection pool's ("asyncmongo.connection") are built by ``asyncmongo.core.cmap.log_messages``.
:mod:`~asyncmongo.monitoring.log_config` applies the ``MONGODB_LOG_*`` environment variables.

The package sits below the runtime: it imports only ``asyncmongo.bson``, ``asyncmongo.core``
and ``asyncmongo.errors``, so the runtime can publish and log without reaching upwards.
"""

from __future__ import annotations

from asyncmongo.core.cmap.events import (
    ConnectionCheckedInEvent,
    ConnectionCheckedOutEvent,
    ConnectionCheckOutFailedEvent,
    ConnectionCheckOutFailedReason,
    ConnectionCheckOutStartedEvent,
    ConnectionClosedEvent,
    ConnectionClosedReason,
    ConnectionCreatedEvent,
    ConnectionReadyEvent,
    PoolClearedEvent,
    PoolClosedEvent,
    PoolCreatedEvent,
    PoolReadyEvent,
)
from asyncmongo.core.sdam.events import (
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerHeartbeatFailedEvent,
    ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent,
    ServerOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
)
from asyncmongo.monitoring.command import (
    CommandFailedEvent,
    CommandStartedEvent,
    CommandSucceededEvent,
)
from asyncmongo.monitoring.listeners import EventListener, Listeners

__all__ = [
    "CommandFailedEvent",
    "CommandStartedEvent",
    "CommandSucceededEvent",
    "ConnectionCheckOutFailedEvent",
    "ConnectionCheckOutFailedReason",
    "ConnectionCheckOutStartedEvent",
    "ConnectionCheckedInEvent",
    "ConnectionCheckedOutEvent",
    "ConnectionClosedEvent",
    "ConnectionClosedReason",
    "ConnectionCreatedEvent",
    "ConnectionReadyEvent",
    "EventListener",
    "Listeners",
    "PoolClearedEvent",
    "PoolClosedEvent",
    "PoolCreatedEvent",
    "PoolReadyEvent",
    "ServerClosedEvent",
    "ServerDescriptionChangedEvent",
    "ServerHeartbeatFailedEvent",
    "ServerHeartbeatStartedEvent",
    "ServerHeartbeatSucceededEvent",
    "ServerOpeningEvent",
    "TopologyClosedEvent",
    "TopologyDescriptionChangedEvent",
    "TopologyOpeningEvent",
]

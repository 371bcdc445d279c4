"""Server Discovery and Monitoring, pure: what each server is and what the deployment is.

``TopologyDescription.apply(ServerDescription)`` returns the next description and the SDAM
events; the runtime owns the current value and carries out the error verdicts of
``asyncmongo.core.error_policy``.
"""

from asyncmongo.core.sdam.events import (
    SdamEvent,
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
from asyncmongo.core.sdam.rtt import RttStats
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.topology_version import TopologyVersion
from asyncmongo.core.sdam.types import ServerType, TopologyType

__all__ = [
    "RttStats",
    "SdamEvent",
    "ServerClosedEvent",
    "ServerDescription",
    "ServerDescriptionChangedEvent",
    "ServerHeartbeatFailedEvent",
    "ServerHeartbeatStartedEvent",
    "ServerHeartbeatSucceededEvent",
    "ServerOpeningEvent",
    "ServerType",
    "TopologyClosedEvent",
    "TopologyDescription",
    "TopologyDescriptionChangedEvent",
    "TopologyOpeningEvent",
    "TopologySettings",
    "TopologyType",
    "TopologyVersion",
]

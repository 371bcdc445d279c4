"""TopologyDescription: the client's immutable view of the whole deployment.

``apply(server_description)`` is the only way it changes: it returns a new description and
the SDAM events describing the change (computed by a pure diff). The topology runtime keeps
the current value, swaps it and publishes the events; readers hold snapshots. The events of
the topology (SDAM Logging and Monitoring spec) are defined here with it, and exported by
asyncmongo.core.sdam.events with the heartbeat events.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.address import Address
from asyncmongo.core.sdam import updates
from asyncmongo.core.sdam.compatibility import first_compatibility_error
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_version import compare_topology_version
from asyncmongo.core.sdam.types import ServerType, TopologyType


@dataclass(frozen=True, slots=True)
class TopologyDescription:
    """Every field of the SDAM TopologyDescription, plus the settings that shaped it.

    Equality (used to suppress TopologyDescriptionChangedEvents) compares the SDAM fields and
    the servers by Server Description Equality; ``settings`` and ``topology_id`` do not count.
    """

    topology_type: TopologyType
    servers: Mapping[Address, ServerDescription]
    settings: TopologySettings = field(compare=False)
    set_name: str | None = None
    max_set_version: int | None = None
    max_election_id: ObjectId | None = None
    compatible: bool = True
    compatibility_error: str | None = None
    logical_session_timeout_minutes: int | None = None
    topology_id: object = field(default=None, compare=False)

    # -- construction -------------------------------------------------------------------

    @classmethod
    def initial(cls, settings: TopologySettings, topology_id: object = None) -> TopologyDescription:
        """The description before any check: every seed Unknown, the initial TopologyType."""
        servers = {seed: ServerDescription.unknown(seed) for seed in settings.seeds}
        return cls(
            settings.initial_topology_type,
            servers,
            settings,
            set_name=settings.replica_set_name,
            topology_id=topology_id,
        )

    @classmethod
    def open(
        cls, settings: TopologySettings, topology_id: object = None
    ) -> tuple[TopologyDescription, list[SdamEvent]]:
        """The initial description and the events of opening the topology.

        TopologyOpening, the first TopologyDescriptionChanged (from an empty Unknown
        description), a ServerOpening per seed, and for a load balancer the switch of the
        seed to LoadBalancer (load balancers are not monitored).
        """
        empty = cls(TopologyType.UNKNOWN, {}, settings, topology_id=topology_id)
        description = cls.initial(settings, topology_id)
        events: list[SdamEvent] = [
            TopologyOpeningEvent(topology_id),
            TopologyDescriptionChangedEvent(topology_id, empty, description),
        ]
        events.extend(ServerOpeningEvent(topology_id, seed) for seed in description.servers)
        if description.topology_type is TopologyType.LOAD_BALANCED:
            seed = settings.seeds[0]
            description, changes = description.apply(ServerDescription.load_balancer(seed))
            events.extend(changes)
        return description, events

    # -- updates --------------------------------------------------------------------------

    def apply(self, server: ServerDescription) -> tuple[TopologyDescription, list[SdamEvent]]:
        """Process one ServerDescription (a check outcome or an error's Unknown).

        Ignored (same description, no events) when the server is no longer in the topology
        or when its topologyVersion is older than the one we have.
        """
        current = self.servers.get(server.address)
        if current is None or is_stale_server_description(current, server):
            return self, []
        draft = self._draft()
        updates.process(draft, server)
        new = self._from_draft(draft)
        return new, diff(self, new, first=server.address)

    def apply_srv_hosts(
        self, hosts: Iterable[Address], srv_max_hosts: int, rng: random.Random
    ) -> tuple[TopologyDescription, list[SdamEvent]]:
        """SRV polling: make the mongos list match the DNS answer (Sharded/Unknown only).

        Hosts that went away are removed, unchanged ones left alone, new ones added as
        Unknown; with ``srv_max_hosts`` > 0 new hosts are picked at random (Fisher-Yates, as
        initial seedlist discovery does) until the topology has that many.
        """
        wanted = list(dict.fromkeys(hosts))
        if not wanted or self.topology_type not in (TopologyType.SHARDED, TopologyType.UNKNOWN):
            return self, []
        draft = self._draft()
        for address in [a for a in draft.servers if a not in wanted]:
            updates.remove(draft, address)
        new_hosts = [a for a in wanted if a not in draft.servers]
        if srv_max_hosts > 0:
            rng.shuffle(new_hosts)
            new_hosts = new_hosts[: max(0, srv_max_hosts - len(draft.servers))]
        for address in new_hosts:
            draft.servers[address] = ServerDescription.unknown(address)
        new = self._from_draft(draft)
        return new, diff(self, new)

    def close(self) -> tuple[TopologyDescription, list[SdamEvent]]:
        """Closing: every server removed, TopologyType Unknown, then TopologyClosed."""
        closed = TopologyDescription(
            TopologyType.UNKNOWN, {}, self.settings, topology_id=self.topology_id
        )
        return closed, [*diff(self, closed), TopologyClosedEvent(self.topology_id)]

    def _draft(self) -> updates.Draft:
        return updates.Draft(
            self.topology_type,
            dict(self.servers),
            self.set_name,
            self.max_set_version,
            self.max_election_id,
            self.settings,
        )

    def _from_draft(self, draft: updates.Draft) -> TopologyDescription:
        servers = draft.servers
        error = first_compatibility_error(servers.values())
        return TopologyDescription(
            draft.topology_type,
            servers,
            self.settings,
            set_name=draft.set_name,
            max_set_version=draft.max_set_version,
            max_election_id=draft.max_election_id,
            compatible=error is None,
            compatibility_error=error,
            logical_session_timeout_minutes=logical_session_timeout(servers.values()),
            topology_id=self.topology_id,
        )

    # -- queries --------------------------------------------------------------------------

    @property
    def primary(self) -> ServerDescription | None:
        """The RSPrimary, if any."""
        for server in self.servers.values():
            if server.server_type is ServerType.RS_PRIMARY:
                return server
        return None

    @property
    def known_servers(self) -> list[ServerDescription]:
        return [s for s in self.servers.values() if s.is_known]

    @property
    def heartbeat_frequency_ms(self) -> int:
        return self.settings.heartbeat_frequency_ms

    # -- PyMongo's names --------------------------------------------------------------------

    def server_descriptions(self) -> dict[Address, ServerDescription]:
        """Every server by address, as PyMongo's method returns them (a new dict)."""
        return dict(self.servers)

    @property
    def topology_type_name(self) -> str:
        """The SDAM name of the topology type ("ReplicaSetWithPrimary"), as PyMongo's."""
        return self.topology_type.value

    def __repr__(self) -> str:
        servers = ", ".join(repr(s) for s in self.servers.values())
        name = f" set {self.set_name}," if self.set_name else ""
        return f"<TopologyDescription {self.topology_type.value},{name} servers: [{servers}]>"


def is_stale_server_description(current: ServerDescription, incoming: ServerDescription) -> bool:
    """True if ``incoming`` carries an older topologyVersion than ``current`` (SDAM)."""
    return compare_topology_version(current.topology_version, incoming.topology_version) > 0


def logical_session_timeout(servers: Iterable[ServerDescription]) -> int | None:
    """SDAM "Logical Session Timeout": the minimum over data-bearing servers, null if any is."""
    minimum: int | None = None
    for server in servers:
        if not server.is_data_bearing:
            continue
        if server.logical_session_timeout_minutes is None:
            return None
        if minimum is None or server.logical_session_timeout_minutes < minimum:
            minimum = server.logical_session_timeout_minutes
    return minimum


# -- SDAM events --


@dataclass(frozen=True, slots=True)
class TopologyOpeningEvent:
    """A topology was created; the first SDAM event of its life."""

    topology_id: object


@dataclass(frozen=True, slots=True)
class TopologyClosedEvent:
    """A topology was closed; the last SDAM event of its life."""

    topology_id: object


@dataclass(frozen=True, slots=True)
class TopologyDescriptionChangedEvent:
    """The topology description changed (by TopologyDescription equality)."""

    topology_id: object
    previous_description: TopologyDescription
    new_description: TopologyDescription


@dataclass(frozen=True, slots=True)
class ServerOpeningEvent:
    """A server joined the topology (before its monitor connects)."""

    topology_id: object
    address: Address


@dataclass(frozen=True, slots=True)
class ServerClosedEvent:
    """A server left the topology and its monitor stopped."""

    topology_id: object
    address: Address


@dataclass(frozen=True, slots=True)
class ServerDescriptionChangedEvent:
    """A server's description changed (by Server Description Equality: RTT alone does not)."""

    topology_id: object
    address: Address
    previous_description: ServerDescription
    new_description: ServerDescription


SdamEvent = (
    TopologyOpeningEvent
    | TopologyClosedEvent
    | TopologyDescriptionChangedEvent
    | ServerOpeningEvent
    | ServerClosedEvent
    | ServerDescriptionChangedEvent
)


def diff(
    old: TopologyDescription, new: TopologyDescription, first: Address | None = None
) -> list[SdamEvent]:
    """The events that describe going from ``old`` to ``new``.

    Order: description changes (the server being processed, ``first``, before the others),
    then opened servers, then closed servers, then the topology change.
    """
    topology_id = new.topology_id
    events: list[SdamEvent] = []
    changed = [a for a in new.servers if a in old.servers and old.servers[a] != new.servers[a]]
    if first in changed:
        changed.remove(first)
        changed.insert(0, first)
    for address in changed:
        events.append(
            ServerDescriptionChangedEvent(
                topology_id, address, old.servers[address], new.servers[address]
            )
        )
    events.extend(ServerOpeningEvent(topology_id, a) for a in new.servers if a not in old.servers)
    events.extend(ServerClosedEvent(topology_id, a) for a in old.servers if a not in new.servers)
    if old != new:
        events.append(TopologyDescriptionChangedEvent(topology_id, old, new))
    return events

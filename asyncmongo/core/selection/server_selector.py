"""Server selection as one pure step: topology snapshot in, a server (or None) out.

The runtime loops: call ``select_server`` on the current description; if it returns None,
request an immediate check and wait for the description to change (bounded by
serverSelectionTimeoutMS), then try again. ``suitable_and_in_window`` exposes the stages the
spec tests check separately.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.core.address import Address
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import ServerType, TopologyType
from asyncmongo.core.selection.latency import choose_by_operation_count, in_latency_window
from asyncmongo.core.selection.read_preference import PRIMARY, Mode, ReadPreference
from asyncmongo.core.selection.staleness import validate_max_staleness
from asyncmongo.core.selection.suitability import Operation, suitable_servers
from asyncmongo.errors import ConfigurationError

#: MongoDB 5.0: secondaries may run aggregate with $out/$merge (CRUD spec).
WRITE_STAGE_ON_SECONDARY_WIRE_VERSION = 13

ServerFilter = Callable[[list[ServerDescription]], list[ServerDescription]]


@dataclass(frozen=True, slots=True)
class Selection:
    """What an operation asks of server selection."""

    operation: Operation
    read_preference: ReadPreference = PRIMARY
    deprioritized: Collection[Address] = field(default_factory=frozenset)
    server_filter: ServerFilter | None = None

    @classmethod
    def read(cls, read_preference: ReadPreference = PRIMARY) -> Selection:
        return cls(Operation.READ, read_preference)

    @classmethod
    def write(cls) -> Selection:
        return cls(Operation.WRITE)


def suitable_and_in_window(
    topology: TopologyDescription, selection: Selection
) -> tuple[list[ServerDescription], list[ServerDescription]]:
    """Steps 2-5 of the selection algorithm: (suitable servers, those in the latency window).

    Raises ConfigurationError when the topology is wire-incompatible or maxStalenessSeconds
    is too small for this replica set.
    """
    if not topology.compatible:
        raise ConfigurationError(topology.compatibility_error or "incompatible topology")
    if topology.topology_type.is_replica_set:
        validate_max_staleness(
            selection.read_preference.max_staleness_seconds, topology.heartbeat_frequency_ms
        )
    suitable = _suitable_with_deprioritization(topology, selection)
    if selection.server_filter is not None and suitable:
        suitable = selection.server_filter(suitable)
    window = in_latency_window(suitable, topology.settings.local_threshold_ms)
    return suitable, window


def _suitable_with_deprioritization(
    topology: TopologyDescription, selection: Selection
) -> list[ServerDescription]:
    """Deprioritized servers are left out unless nothing else is suitable."""
    servers = list(topology.servers.values())
    preferred = [s for s in servers if s.address not in selection.deprioritized]
    found = suitable_servers(topology, preferred, selection.operation, selection.read_preference)
    if found or len(preferred) == len(servers):
        return found
    return suitable_servers(topology, servers, selection.operation, selection.read_preference)


def select_server(
    topology: TopologyDescription,
    selection: Selection,
    operation_counts: Mapping[Address, int],
    rng: random.Random,
) -> ServerDescription | None:
    """One selection attempt: a server for the operation, or None if none is suitable now."""
    _, window = suitable_and_in_window(topology, selection)
    if not window:
        return None
    return choose_by_operation_count(window, operation_counts, rng)


def write_stage_read_preference(
    topology: TopologyDescription, read_preference: ReadPreference
) -> ReadPreference:
    """CRUD: aggregate with $out/$merge may use a secondary only if every known server is 5.0+.

    Otherwise it falls back to the primary.
    """
    if read_preference.mode is Mode.PRIMARY:
        return read_preference
    known: Sequence[ServerDescription] = topology.known_servers
    if any((s.max_wire_version or 0) < WRITE_STAGE_ON_SECONDARY_WIRE_VERSION for s in known):
        return PRIMARY
    return read_preference


_PRIMARY_PREFERRED: dict[str, Any] = {"mode": "primaryPreferred"}


def read_preference_to_send(
    topology: TopologyDescription, selection: Selection, address: Address
) -> dict[str, Any] | None:
    """The ``$readPreference`` a command selected for ``selection`` carries to the server at
    ``address``, if any (server selection: "Topology type: Single", "Passing read preference
    to mongos and load balancers", replica sets). A pure function of the three, so the
    runtime may remember it with the selection's answer."""
    if selection.operation is Operation.WRITE:
        return None
    preference = selection.read_preference
    if topology.topology_type is TopologyType.SINGLE:
        known = topology.servers.get(address)
        server_type = known.server_type if known is not None else None
        if server_type is ServerType.STANDALONE:
            return None  # a standalone MUST NOT be sent a read preference
        if server_type is not ServerType.MONGOS and preference.mode is Mode.PRIMARY:
            return _PRIMARY_PREFERRED  # a direct connection to any member may answer
    if preference.mode is Mode.PRIMARY:
        return None
    return preference.document()

"""Which servers are suitable for an operation (Server Selection "Rules for server selection").

Per TopologyType: Unknown has none; Single its one known server whatever the read
preference; LoadBalanced its load balancer; Sharded every mongos; a replica set applies the
read preference mode, then maxStalenessSeconds, then the tag sets (writes: the primary only).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import ServerType, TopologyType
from asyncmongo.core.selection.read_preference import PRIMARY, Mode, ReadPreference, TagSet
from asyncmongo.core.selection.staleness import filter_by_staleness


class Operation(Enum):
    """What the selected server will run."""

    READ = "read"
    WRITE = "write"


def suitable_servers(
    topology: TopologyDescription,
    servers: Sequence[ServerDescription],
    operation: Operation,
    read_preference: ReadPreference = PRIMARY,
) -> list[ServerDescription]:
    """The suitable subset of ``servers`` (drawn from ``topology``) for the operation."""
    kind = topology.topology_type
    if kind is TopologyType.UNKNOWN:
        return []
    if kind is TopologyType.SINGLE:
        return [s for s in servers if s.is_known]
    if kind is TopologyType.LOAD_BALANCED:
        return [s for s in servers if s.server_type is ServerType.LOAD_BALANCER]
    if kind is TopologyType.SHARDED:
        return [s for s in servers if s.server_type is ServerType.MONGOS]
    if operation is Operation.WRITE:
        return _primaries(servers)
    return replica_set_read_servers(topology, servers, read_preference)


def replica_set_read_servers(
    topology: TopologyDescription,
    servers: Sequence[ServerDescription],
    read_preference: ReadPreference,
) -> list[ServerDescription]:
    """Server Selection "Read operations" for ReplicaSetWithPrimary and ReplicaSetNoPrimary."""
    mode = read_preference.mode
    if mode is Mode.PRIMARY:
        return _primaries(servers)
    if mode is Mode.PRIMARY_PREFERRED:
        return _primaries(servers) or _eligible(topology, _secondaries(servers), read_preference)
    if mode is Mode.SECONDARY:
        return _eligible(topology, _secondaries(servers), read_preference)
    if mode is Mode.SECONDARY_PREFERRED:
        return _eligible(topology, _secondaries(servers), read_preference) or _primaries(servers)
    nearest = [s for s in servers if s.server_type in _PRIMARY_OR_SECONDARY]
    return _eligible(topology, nearest, read_preference)


_PRIMARY_OR_SECONDARY = (ServerType.RS_PRIMARY, ServerType.RS_SECONDARY)


def _primaries(servers: Sequence[ServerDescription]) -> list[ServerDescription]:
    return [s for s in servers if s.server_type is ServerType.RS_PRIMARY]


def _secondaries(servers: Sequence[ServerDescription]) -> list[ServerDescription]:
    return [s for s in servers if s.server_type is ServerType.RS_SECONDARY]


def _eligible(
    topology: TopologyDescription,
    candidates: Sequence[ServerDescription],
    read_preference: ReadPreference,
) -> list[ServerDescription]:
    """maxStalenessSeconds first, then tag sets ("why is maxStalenessSeconds applied first")."""
    fresh = filter_by_staleness(candidates, topology, read_preference.max_staleness_seconds)
    return filter_by_tag_sets(fresh, read_preference.tag_sets)


def filter_by_tag_sets(
    candidates: Sequence[ServerDescription], tag_sets: Sequence[TagSet]
) -> list[ServerDescription]:
    """The candidates matching the first tag set that matches any (all if the list is empty)."""
    if not tag_sets:
        return list(candidates)
    for tag_set in tag_sets:
        matching = [s for s in candidates if tags_match(tag_set, s.tags)]
        if matching:
            return matching
    return []


def tags_match(wanted: TagSet, server_tags: TagSet) -> bool:
    """A read preference tag set matches a server whose tags are a superset of it."""
    return all(server_tags.get(key) == value for key, value in wanted.items())

"""The SDAM update rules: one function per spec case, named after it.

``process`` dispatches on the TopologyType (the spec's "TopologyType table") to the actions
updateUnknownWithStandalone, updateRSWithoutPrimary, updateRSWithPrimaryFromMember,
updateRSFromPrimary, checkIfHasPrimary and remove. They work on a ``Draft``: a private,
mutable scratch copy that ``TopologyDescription.apply`` creates and freezes again, so the
public values stay immutable (the mongo-rust-driver's TopologyDescription::update, in Python).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.address import Address
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.types import ServerType, TopologyType

#: updateRSFromPrimary uses the 6.0+ (electionId first) ordering from this maxWireVersion on.
ELECTION_ID_PRECEDENCE_WIRE_VERSION = 17

STALE_PRIMARY_NEWER = "primary marked stale due to discovery of newer primary"
STALE_PRIMARY_TUPLE = "primary marked stale due to electionId/setVersion mismatch"


@dataclass(slots=True)
class Draft:
    """The working copy of a TopologyDescription while one ServerDescription is processed."""

    topology_type: TopologyType
    servers: dict[Address, ServerDescription]
    set_name: str | None
    max_set_version: int | None
    max_election_id: ObjectId | None
    settings: TopologySettings


def process(draft: Draft, server: ServerDescription) -> None:
    """Replace the server's description, then run the action the TopologyType table names."""
    if server.address not in draft.servers:
        return
    draft.servers[server.address] = server
    handler = _BY_TOPOLOGY_TYPE[draft.topology_type]
    handler(draft, server)


# -- one handler per TopologyType ------------------------------------------------------------


def update_single(draft: Draft, server: ServerDescription) -> None:
    """TopologyType Single: keep the server; "Verifying setName with TopologyType Single"."""
    wanted = draft.settings.replica_set_name
    if wanted is not None and server.is_known and server.set_name != wanted:
        message = (
            f"replica set name mismatch: expected {wanted!r}, server reports {server.set_name!r}"
        )
        draft.servers[server.address] = ServerDescription.unknown(server.address, message)


def update_load_balanced(draft: Draft, server: ServerDescription) -> None:
    """TopologyType LoadBalanced: the one load balancer is always kept as it is."""


def update_topology_unknown(draft: Draft, server: ServerDescription) -> None:
    """TopologyType Unknown column of the TopologyType table."""
    kind = server.server_type
    if kind is ServerType.STANDALONE:
        update_unknown_with_standalone(draft, server)
    elif kind is ServerType.MONGOS:
        draft.topology_type = TopologyType.SHARDED
    elif kind is ServerType.RS_PRIMARY:
        draft.topology_type = TopologyType.REPLICA_SET_WITH_PRIMARY
        update_rs_from_primary(draft, server)
    elif kind.is_rs_member:
        draft.topology_type = TopologyType.REPLICA_SET_NO_PRIMARY
        update_rs_without_primary(draft, server)
    # Unknown and RSGhost: no-op ("TopologyType remains Unknown when an RSGhost is discovered").


def update_topology_sharded(draft: Draft, server: ServerDescription) -> None:
    """TopologyType Sharded: keep Unknown servers and mongoses, remove the rest."""
    if server.server_type not in (ServerType.UNKNOWN, ServerType.MONGOS):
        remove(draft, server.address)


def update_topology_rs_no_primary(draft: Draft, server: ServerDescription) -> None:
    """TopologyType ReplicaSetNoPrimary column of the TopologyType table."""
    kind = server.server_type
    if kind in (ServerType.STANDALONE, ServerType.MONGOS):
        remove(draft, server.address)
    elif kind is ServerType.RS_PRIMARY:
        draft.topology_type = TopologyType.REPLICA_SET_WITH_PRIMARY
        update_rs_from_primary(draft, server)
    elif kind.is_rs_member:
        update_rs_without_primary(draft, server)


def update_topology_rs_with_primary(draft: Draft, server: ServerDescription) -> None:
    """TopologyType ReplicaSetWithPrimary column of the TopologyType table."""
    kind = server.server_type
    if kind in (ServerType.STANDALONE, ServerType.MONGOS):
        remove(draft, server.address)
        check_if_has_primary(draft)
    elif kind is ServerType.RS_PRIMARY:
        update_rs_from_primary(draft, server)
    elif kind.is_rs_member:
        update_rs_with_primary_from_member(draft, server)
    else:
        check_if_has_primary(draft)


_BY_TOPOLOGY_TYPE: dict[TopologyType, Callable[[Draft, ServerDescription], None]] = {
    TopologyType.SINGLE: update_single,
    TopologyType.LOAD_BALANCED: update_load_balanced,
    TopologyType.UNKNOWN: update_topology_unknown,
    TopologyType.SHARDED: update_topology_sharded,
    TopologyType.REPLICA_SET_NO_PRIMARY: update_topology_rs_no_primary,
    TopologyType.REPLICA_SET_WITH_PRIMARY: update_topology_rs_with_primary,
}


# -- the spec's actions ----------------------------------------------------------------------


def update_unknown_with_standalone(draft: Draft, server: ServerDescription) -> None:
    """SDAM updateUnknownWithStandalone: one seed means Single, otherwise drop the server."""
    if server.address not in draft.servers:
        return
    if len(draft.settings.seeds) == 1:
        draft.topology_type = TopologyType.SINGLE
    else:
        remove(draft, server.address)


def update_rs_without_primary(draft: Draft, server: ServerDescription) -> None:
    """SDAM updateRSWithoutPrimary: learn members; never removes anyone but the server."""
    if server.address not in draft.servers:
        return
    if draft.set_name is None:
        draft.set_name = server.set_name
    elif draft.set_name != server.set_name:
        remove(draft, server.address)
        return
    add_missing_members(draft, server)
    mark_possible_primary(draft, server.primary)
    if server.me is not None and server.address != server.me:
        remove(draft, server.address)


def update_rs_with_primary_from_member(draft: Draft, server: ServerDescription) -> None:
    """SDAM updateRSWithPrimaryFromMember: a member's reply while a primary is known."""
    if server.address not in draft.servers:
        return
    if draft.set_name != server.set_name or (server.me is not None and server.address != server.me):
        remove(draft, server.address)
        check_if_has_primary(draft)
        return
    if not _has_primary(draft):
        # Had this member been the primary?
        draft.topology_type = TopologyType.REPLICA_SET_NO_PRIMARY
        mark_possible_primary(draft, server.primary)


def update_rs_from_primary(draft: Draft, server: ServerDescription) -> None:
    """SDAM updateRSFromPrimary: the primary's view of the set replaces ours."""
    if server.address not in draft.servers:
        return
    if draft.set_name is None:
        draft.set_name = server.set_name
    elif draft.set_name != server.set_name:
        # A primary, but not of the set the user named (or we discovered).
        remove(draft, server.address)
        check_if_has_primary(draft)
        return
    if (server.max_wire_version or 0) >= ELECTION_ID_PRECEDENCE_WIRE_VERSION:
        fresh = _accept_primary_election_id_first(draft, server)
    else:
        fresh = _accept_primary_set_version_first(draft, server)
    if not fresh:
        check_if_has_primary(draft)
        return
    invalidate_old_primaries(draft, server.address)
    add_missing_members(draft, server)
    members = set(server.all_hosts)
    for address in [a for a in draft.servers if a not in members]:
        remove(draft, address)
    check_if_has_primary(draft)


def _accept_primary_election_id_first(draft: Draft, server: ServerDescription) -> bool:
    """MongoDB 6.0+: (electionId, setVersion) ordered, electionId first; null is smallest."""
    incoming = (_order_key(server.election_id), _order_key(server.set_version))
    current = (_order_key(draft.max_election_id), _order_key(draft.max_set_version))
    if incoming >= current:
        draft.max_election_id = server.election_id
        draft.max_set_version = server.set_version
        return True
    _mark_stale_primary(draft, server)
    return False


def _accept_primary_set_version_first(draft: Draft, server: ServerDescription) -> bool:
    """Before 6.0: setVersion is compared before electionId, and only when both are set."""
    if server.set_version is not None and server.election_id is not None:
        if (
            draft.max_set_version is not None
            and draft.max_election_id is not None
            and (
                draft.max_set_version > server.set_version
                or (
                    draft.max_set_version == server.set_version
                    and draft.max_election_id > server.election_id
                )
            )
        ):
            _mark_stale_primary(draft, server)
            return False
        draft.max_election_id = server.election_id
    if server.set_version is not None and (
        draft.max_set_version is None or server.set_version > draft.max_set_version
    ):
        draft.max_set_version = server.set_version
    return True


def _mark_stale_primary(draft: Draft, server: ServerDescription) -> None:
    stale = f"({server.election_id}, {server.set_version})"
    newest = f"({draft.max_election_id}, {draft.max_set_version})"
    message = f"{STALE_PRIMARY_TUPLE}, {stale} is stale compared to {newest}"
    draft.servers[server.address] = ServerDescription.unknown(server.address, message)


def _order_key(value: Any) -> tuple[int, Any]:
    """Orders None before every value (the spec's "null is always considered less")."""
    return (0, 0) if value is None else (1, value)


def invalidate_old_primaries(draft: Draft, new_primary: Address) -> None:
    """A newer primary was found: any other RSPrimary becomes Unknown (no pool clear)."""
    for address, other in list(draft.servers.items()):
        if address != new_primary and other.server_type is ServerType.RS_PRIMARY:
            draft.servers[address] = ServerDescription.unknown(address, STALE_PRIMARY_NEWER)


def add_missing_members(draft: Draft, server: ServerDescription) -> None:
    """Add every address in hosts/passives/arbiters that is not monitored yet, as Unknown."""
    for address in server.all_hosts:
        if address not in draft.servers:
            draft.servers[address] = ServerDescription.unknown(address)


def mark_possible_primary(draft: Draft, primary: Address | None) -> None:
    """A member named a primary we have not checked yet: mark it PossiblePrimary."""
    if primary is None:
        return
    candidate = draft.servers.get(primary)
    if candidate is not None and candidate.server_type is ServerType.UNKNOWN:
        draft.servers[primary] = candidate.replace(server_type=ServerType.POSSIBLE_PRIMARY)


def check_if_has_primary(draft: Draft) -> None:
    """SDAM checkIfHasPrimary: ReplicaSetWithPrimary iff some server is RSPrimary."""
    draft.topology_type = (
        TopologyType.REPLICA_SET_WITH_PRIMARY
        if _has_primary(draft)
        else TopologyType.REPLICA_SET_NO_PRIMARY
    )


def remove(draft: Draft, address: Address) -> None:
    """SDAM remove: drop the server (the runtime stops its monitor and pool)."""
    draft.servers.pop(address, None)


def _has_primary(draft: Draft) -> bool:
    return any(s.server_type is ServerType.RS_PRIMARY for s in draft.servers.values())

"""Property tests: any sequence of hello outcomes keeps the TopologyDescription invariants,
and the published events always describe the change exactly."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.address import Address, format_address
from asyncmongo.core.sdam.events import (
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerOpeningEvent,
    TopologyDescriptionChangedEvent,
)
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import ServerType, TopologyType

ADDRESSES: list[Address] = [("a", 27017), ("b", 27017), ("c", 27017), ("d", 27017)]
HOSTS = [format_address(a) for a in ADDRESSES]

roles = st.sampled_from(
    ["primary", "secondary", "arbiter", "other", "ghost", "mongos", "standalone"]
)


@st.composite
def hello_outcomes(draw: st.DrawFn) -> tuple[Address, dict[str, Any]]:
    address = draw(st.sampled_from(ADDRESSES))
    if draw(st.integers(0, 6)) == 0:
        return address, {}
    role = draw(roles)
    reply: dict[str, Any] = {
        "ok": 1,
        "minWireVersion": 0,
        "maxWireVersion": draw(st.sampled_from([9, 21])),
    }
    if role == "mongos":
        reply["msg"] = "isdbgrid"
    elif role == "ghost":
        reply["isreplicaset"] = True
    elif role != "standalone":
        reply["setName"] = draw(st.sampled_from(["rs", "rs", "other"]))
        reply["hosts"] = draw(st.lists(st.sampled_from(HOSTS), min_size=1, max_size=4))
        reply["isWritablePrimary"] = role == "primary"
        reply["secondary"] = role == "secondary"
        reply["arbiterOnly"] = role == "arbiter"
        if role == "primary":
            reply["setVersion"] = draw(st.integers(1, 3))
            counter = draw(st.integers(1, 3))
            reply["electionId"] = ObjectId(f"{counter:024x}")
        if draw(st.booleans()):
            reply["primary"] = draw(st.sampled_from(HOSTS))
        if draw(st.integers(0, 5)) == 0:
            reply["me"] = draw(st.sampled_from(HOSTS))
    return address, reply


def check_invariants(description: TopologyDescription) -> None:
    kinds = [s.server_type for s in description.servers.values()]
    primaries = kinds.count(ServerType.RS_PRIMARY)
    assert primaries <= 1
    topology_type = description.topology_type
    if topology_type is TopologyType.REPLICA_SET_WITH_PRIMARY:
        assert primaries == 1
    if topology_type is TopologyType.REPLICA_SET_NO_PRIMARY:
        assert primaries == 0
    if topology_type is TopologyType.SHARDED:
        # SDAM: an RSGhost in an Unknown topology is a no-op, so one seen before a mongos
        # turned the topology Sharded stays until its own next check removes it.
        assert set(kinds) <= {ServerType.UNKNOWN, ServerType.MONGOS, ServerType.RS_GHOST}
    if topology_type is TopologyType.SINGLE:
        assert len(description.servers) == 1
    if topology_type.is_replica_set:
        assert description.set_name is not None or not any(k.is_rs_member for k in kinds)
        assert ServerType.STANDALONE not in kinds and ServerType.MONGOS not in kinds
        for server in description.servers.values():
            assert server.set_name in (None, description.set_name)


def replay(before: TopologyDescription, events: list[Any]) -> dict[Address, ServerDescription]:
    servers = dict(before.servers)
    for event in events:
        if isinstance(event, ServerOpeningEvent):
            assert event.address not in servers
            servers[event.address] = ServerDescription.unknown(event.address)
        elif isinstance(event, ServerClosedEvent):
            del servers[event.address]
        elif isinstance(event, ServerDescriptionChangedEvent):
            assert servers[event.address] == event.previous_description
            servers[event.address] = event.new_description
    return servers


@settings(max_examples=200, deadline=None)
@given(
    seeds=st.lists(st.sampled_from(ADDRESSES), min_size=1, max_size=3, unique=True),
    replica_set=st.sampled_from([None, "rs"]),
    outcomes=st.lists(hello_outcomes(), max_size=12),
)
def test_any_sequence_keeps_the_invariants(
    seeds: list[Address], replica_set: str | None, outcomes: list[tuple[Address, dict[str, Any]]]
) -> None:
    description = TopologyDescription.initial(
        TopologySettings(tuple(seeds), replica_set_name=replica_set)
    )
    for address, reply in outcomes:
        server = (
            ServerDescription.from_hello(address, reply)
            if reply
            else ServerDescription.unknown(address, "network error")
        )
        new, events = description.apply(server)
        check_invariants(new)
        assert replay(description, events) == dict(new.servers)
        changed = [e for e in events if isinstance(e, TopologyDescriptionChangedEvent)]
        assert len(changed) == (0 if new == description else 1)
        description = new

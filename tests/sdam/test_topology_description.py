"""TopologyDescription: opening/closing events, staleness, compatibility, SRV updates, settings."""

from __future__ import annotations

import random

import pytest

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.sdam.events import (
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
)
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import ServerType, TopologyType
from asyncmongo.errors import ConfigurationError

A, B, C, D = (("a", 27017), ("b", 27017), ("c", 27017), ("d", 27017))
PID = ObjectId("000000000000000000000001")


def hello(address: tuple[str, int], **fields: object) -> ServerDescription:
    return ServerDescription.from_hello(
        address, {"ok": 1, "minWireVersion": 0, "maxWireVersion": 21, **fields}
    )


def test_open_publishes_opening_events_in_spec_order() -> None:
    description, events = TopologyDescription.open(TopologySettings((A, B)), topology_id=7)
    assert [type(e) for e in events] == [
        TopologyOpeningEvent,
        TopologyDescriptionChangedEvent,
        ServerOpeningEvent,
        ServerOpeningEvent,
    ]
    assert description.topology_type is TopologyType.UNKNOWN
    assert all(e.topology_id == 7 for e in events)


def test_load_balanced_seed_becomes_a_load_balancer_on_open() -> None:
    description, events = TopologyDescription.open(TopologySettings((A,), load_balanced=True))
    assert description.servers[A].server_type is ServerType.LOAD_BALANCER
    assert isinstance(events[-2], ServerDescriptionChangedEvent)


def test_close_removes_every_server_then_closes() -> None:
    description, _ = TopologyDescription.open(TopologySettings((A, B)), topology_id=1)
    closed, events = description.close()
    assert closed.servers == {} and closed.topology_type is TopologyType.UNKNOWN
    assert [type(e) for e in events] == [
        ServerClosedEvent,
        ServerClosedEvent,
        TopologyDescriptionChangedEvent,
        TopologyClosedEvent,
    ]


def test_equal_description_publishes_nothing() -> None:
    description = TopologyDescription.initial(TopologySettings((A,), direct_connection=True))
    first, events = description.apply(hello(A))
    assert events
    second, events = first.apply(hello(A))
    assert events == [] and second == first


def test_reply_from_a_removed_server_is_ignored() -> None:
    description = TopologyDescription.initial(TopologySettings((A,)))
    assert description.apply(hello(B)) == (description, [])


def test_older_topology_version_is_ignored() -> None:
    settings = TopologySettings((A,), direct_connection=True)
    newer = {"processId": PID, "counter": 2}
    description, _ = TopologyDescription.initial(settings).apply(hello(A, topologyVersion=newer))
    older = hello(A, topologyVersion={"processId": PID, "counter": 1}, tags={"x": "y"})
    assert description.apply(older) == (description, [])


def test_incompatible_server_makes_the_topology_incompatible() -> None:
    settings = TopologySettings((A,), direct_connection=True)
    old = ServerDescription.from_hello(A, {"ok": 1, "maxWireVersion": 6})
    description, _ = TopologyDescription.initial(settings).apply(old)
    assert not description.compatible
    assert description.compatibility_error == (
        "Server at a:27017 reports wire version 6, but this version of asyncmongo requires at "
        "least 8 (MongoDB 4.2)."
    )
    new = ServerDescription.from_hello(A, {"ok": 1, "minWireVersion": 99, "maxWireVersion": 99})
    description, _ = description.apply(new)
    assert "requires wire version 99" in (description.compatibility_error or "")


def test_srv_hosts_replace_the_mongos_list_respecting_srv_max_hosts() -> None:
    description = TopologyDescription.initial(TopologySettings((A, B)))
    updated, events = description.apply_srv_hosts([B, C, D], srv_max_hosts=2, rng=random.Random(1))
    assert A not in updated.servers and B in updated.servers
    assert len(updated.servers) == 2
    assert any(isinstance(e, ServerClosedEvent) and e.address == A for e in events)
    assert updated.servers[B] is description.servers[B]
    unlimited, _ = description.apply_srv_hosts([B, C, D], 0, random.Random(1))
    assert list(unlimited.servers) == [B, C, D]


def test_srv_hosts_ignored_for_replica_sets_and_empty_answers() -> None:
    replica_set = TopologyDescription.initial(TopologySettings((A,), replica_set_name="rs"))
    assert replica_set.apply_srv_hosts([B], 0, random.Random(1)) == (replica_set, [])
    sharded = TopologyDescription.initial(TopologySettings((A,)))
    assert sharded.apply_srv_hosts([], 0, random.Random(1)) == (sharded, [])


def test_logical_session_timeout_is_the_minimum_of_data_bearing_servers() -> None:
    description = TopologyDescription.initial(TopologySettings((A, B), replica_set_name="rs"))
    members = {"setName": "rs", "hosts": ["a:27017", "b:27017"]}
    description, _ = description.apply(
        hello(A, isWritablePrimary=True, logicalSessionTimeoutMinutes=30, **members)
    )
    description, _ = description.apply(
        hello(B, secondary=True, logicalSessionTimeoutMinutes=10, **members)
    )
    assert description.logical_session_timeout_minutes == 10
    description, _ = description.apply(hello(B, secondary=True, **members))
    assert description.logical_session_timeout_minutes is None


def test_wrong_set_name_with_direct_connection_is_unknown() -> None:
    settings = TopologySettings((A,), direct_connection=True, replica_set_name="rs")
    description, _ = TopologyDescription.initial(settings).apply(
        hello(A, setName="other", isWritablePrimary=True)
    )
    assert description.servers[A].server_type is ServerType.UNKNOWN
    assert "replica set name mismatch" in (description.servers[A].error or "")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"seeds": ()},
        {"seeds": (A, B), "direct_connection": True},
        {"seeds": (A,), "load_balanced": True, "direct_connection": True},
        {"seeds": (A,), "load_balanced": True, "replica_set_name": "rs"},
        {"seeds": (A, B), "load_balanced": True},
        {"seeds": (A,), "heartbeat_frequency_ms": 100},
        {"seeds": (A,), "local_threshold_ms": -1},
    ],
)
def test_invalid_settings_raise_configuration_error(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        TopologySettings(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"direct_connection": True}, TopologyType.SINGLE),
        ({"direct_connection": True, "replica_set_name": "rs"}, TopologyType.SINGLE),
        ({"direct_connection": False}, TopologyType.UNKNOWN),
        ({"replica_set_name": "rs"}, TopologyType.REPLICA_SET_NO_PRIMARY),
        ({}, TopologyType.UNKNOWN),
        ({"load_balanced": True}, TopologyType.LOAD_BALANCED),
    ],
)
def test_initial_topology_type(kwargs: dict[str, object], expected: TopologyType) -> None:
    settings = TopologySettings((A,), **kwargs)  # type: ignore[arg-type]
    assert settings.initial_topology_type is expected


def test_settings_from_parsed_uri() -> None:
    from asyncmongo.core.uri import parse

    options = parse("mongodb://A:1,b/?replicaSet=rs&heartbeatFrequencyMS=600&localThresholdMS=5")
    settings = TopologySettings.from_options(options)
    assert settings.seeds == (("a", 1), ("b", 27017))
    assert settings.replica_set_name == "rs"
    assert (settings.heartbeat_frequency_ms, settings.local_threshold_ms) == (600, 5)


def test_repr_summarises() -> None:
    description = TopologyDescription.initial(TopologySettings((A,), replica_set_name="rs"))
    assert repr(description) == (
        "<TopologyDescription ReplicaSetNoPrimary, set rs, servers: "
        "[<ServerDescription a:27017, Unknown>]>"
    )

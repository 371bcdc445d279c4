"""ServerDescription.from_hello: the ServerType table, parsing, and Server Description Equality."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.sdam.rtt import RttStats
from asyncmongo.core.sdam.server_description import ServerDescription, hello_server_type
from asyncmongo.core.sdam.topology_version import TopologyVersion, compare_topology_version
from asyncmongo.core.sdam.types import ServerType
from asyncmongo.errors import ProtocolError

A = ("a", 27017)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"ok": 0}, ServerType.UNKNOWN),
        ({"ok": 1}, ServerType.STANDALONE),
        ({"ok": 1, "msg": "isdbgrid"}, ServerType.MONGOS),
        ({"ok": 1, "isreplicaset": True}, ServerType.RS_GHOST),
        ({"ok": 1, "setName": "rs", "isWritablePrimary": True}, ServerType.RS_PRIMARY),
        ({"ok": 1, "setName": "rs", "ismaster": True}, ServerType.RS_PRIMARY),
        (
            {"ok": 1, "setName": "rs", "isWritablePrimary": False, "ismaster": True},
            ServerType.RS_OTHER,
        ),
        ({"ok": 1, "setName": "rs", "secondary": True}, ServerType.RS_SECONDARY),
        ({"ok": 1, "setName": "rs", "arbiterOnly": True}, ServerType.RS_ARBITER),
        ({"ok": 1, "setName": "rs", "secondary": True, "hidden": True}, ServerType.RS_OTHER),
        ({"ok": 1, "setName": "rs"}, ServerType.RS_OTHER),
    ],
)
def test_server_type_table(reply: dict[str, Any], expected: ServerType) -> None:
    assert hello_server_type(reply) is expected


def test_from_hello_parses_every_field() -> None:
    election_id = ObjectId("000000000000000000000002")
    process_id = ObjectId("000000000000000000000001")
    reply = {
        "ok": 1,
        "isWritablePrimary": True,
        "setName": "rs",
        "setVersion": 3,
        "electionId": election_id,
        "hosts": ["A:27017", "b:27018", "a:27017"],
        "passives": ["C"],
        "arbiters": ["d:1"],
        "primary": "A:27017",
        "me": "A:27017",
        "tags": {"dc": "ny"},
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "logicalSessionTimeoutMinutes": 30,
        "topologyVersion": {"processId": process_id, "counter": 4},
        "lastWrite": {"lastWriteDate": datetime(1970, 1, 1, 0, 0, 2, tzinfo=UTC), "opTime": 7},
        "helloOk": True,
    }
    rtt = RttStats().add(4.0).add(9.0)
    server = ServerDescription.from_hello(A, reply, rtt, now_ms=123.0)
    assert server.server_type is ServerType.RS_PRIMARY
    assert server.hosts == (("a", 27017), ("b", 27018))
    assert server.passives == (("c", 27017),)
    assert server.arbiters == (("d", 1),)
    assert server.primary == server.me == ("a", 27017)
    assert server.tags == {"dc": "ny"}
    assert (server.set_name, server.set_version, server.election_id) == ("rs", 3, election_id)
    assert server.topology_version == TopologyVersion(process_id, 4)
    assert server.last_write_date_ms == 2000
    assert server.op_time == 7
    assert server.last_update_time_ms == 123.0
    assert server.round_trip_time_ms == pytest.approx(5.0)
    assert server.min_round_trip_time_ms == 4.0
    assert server.logical_session_timeout_minutes == 30
    assert server.hello_ok


def test_not_ok_reply_is_unknown_with_the_error() -> None:
    server = ServerDescription.from_hello(A, {"ok": 0, "errmsg": "auth failed"})
    assert server.server_type is ServerType.UNKNOWN
    assert server.error == "auth failed"


@pytest.mark.parametrize(
    "reply",
    [
        {"ok": 1, "hosts": "a:1"},
        {"ok": 1, "setVersion": "one"},
        {"ok": 1, "electionId": "not an oid"},
        {"ok": 1, "tags": ["x"]},
        {"ok": 1, "me": 5},
        {"ok": 1, "hosts": ["a:notaport"]},
        {"ok": 1, "topologyVersion": {"processId": 1, "counter": 1}},
        {"ok": 1, "lastWrite": {"lastWriteDate": "yesterday"}},
    ],
)
def test_malformed_replies_raise_protocol_error(reply: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError):
        ServerDescription.from_hello(A, reply)


def test_equality_ignores_rtt_and_times_and_host_order() -> None:
    reply = {"ok": 1, "setName": "rs", "secondary": True, "hosts": ["a:27017", "b:27017"]}
    first = ServerDescription.from_hello(A, reply, RttStats().add(1.0), now_ms=1.0)
    reordered = {**reply, "hosts": ["b:27017", "a:27017"]}
    second = ServerDescription.from_hello(A, reordered, RttStats().add(50.0), now_ms=2.0)
    assert first == second
    assert first != ServerDescription.from_hello(A, {**reply, "tags": {"dc": "ny"}})
    assert first != first.replace(error="boom")


def test_possible_primary_equals_unknown_for_events() -> None:
    unknown = ServerDescription.unknown(A)
    assert unknown.replace(server_type=ServerType.POSSIBLE_PRIMARY) == unknown


def test_unknown_from_an_exception_keeps_its_text() -> None:
    server = ServerDescription.unknown(A, ConnectionResetError("reset by peer"))
    assert server.error == "ConnectionResetError: reset by peer"


def test_topology_version_comparison() -> None:
    one, two = ObjectId("000000000000000000000001"), ObjectId("000000000000000000000002")
    assert compare_topology_version(None, TopologyVersion(one, 1)) == -1
    assert compare_topology_version(TopologyVersion(one, 1), None) == -1
    assert compare_topology_version(TopologyVersion(one, 1), TopologyVersion(two, 0)) == -1
    assert compare_topology_version(TopologyVersion(one, 2), TopologyVersion(one, 1)) == 1
    assert compare_topology_version(TopologyVersion(one, 1), TopologyVersion(one, 1)) == 0
    assert compare_topology_version(TopologyVersion(one, 1), TopologyVersion(one, 2)) == -1

"""The simulator's pure parts: hello replies per role, fail point decisions, request parsing."""

from __future__ import annotations

import datetime
import struct
from typing import Any

import pytest

from asyncmongo.bson import Int64, ObjectId, encode
from asyncmongo.core.wire.compression import Compressor, encode_op_compressed
from asyncmongo.core.wire.op_msg import DocumentSequence, encode_op_msg, encode_op_msg_payload
from asyncmongo.core.wire.opcodes import HEADER, OpCode, OpMsgFlags
from asyncmongo.errors import ConfigurationError, ProtocolError
from asyncmongo.testing import ReplicaSet, ShardedCluster
from asyncmongo.testing.failpoint import FailCommand, FailPointMode, FailPointState
from asyncmongo.testing.member import HelloState, MemberConfig, Role, build_hello
from asyncmongo.testing.protocol import Request, decode_request, encode_reply, read_header
from asyncmongo.testing.replset import ReplicaSetGroup
from asyncmongo.testing.tls import peer_subject, subject_string
from asyncmongo.testing.write_concern import (
    required_acknowledgements,
    standalone_refusal,
    unsatisfiable,
    wtimeout_ms,
)

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
PID = ObjectId("0123456789abcdef01234567")


def group() -> ReplicaSetGroup:
    members = [
        MemberConfig("h:1", tags={"dc": "ny"}),
        MemberConfig("h:2", priority=0),
        MemberConfig("h:3", hidden=True, priority=0),
        MemberConfig("h:4", arbiter=True, priority=0),
    ]
    rs = ReplicaSetGroup("rs0", members, replication_lag_ms=2000)
    rs.elect("h:1")
    return rs


def hello_of(role: Role, me: str, rs: ReplicaSetGroup | None = None,
             command: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    state = HelloState(role=role, me=me, process_id=PID, counter=3, connection_id=7, now=NOW,
                       replica_set=rs.view() if rs else None,
                       last_write=rs.last_write_for(me, NOW) if rs else None, **kwargs)
    return build_hello(command or {"hello": 1}, state)


def test_primary_hello_has_mongod_fields() -> None:
    rs = group()
    reply = hello_of(Role.PRIMARY, "h:1", rs)
    assert reply["isWritablePrimary"] is True and reply["secondary"] is False
    assert reply["hosts"] == ["h:1"] and reply["passives"] == ["h:2"]
    assert reply["arbiters"] == ["h:4"]
    assert (reply["setName"], reply["setVersion"], reply["primary"], reply["me"]) == (
        "rs0", 1, "h:1", "h:1")
    assert reply["electionId"] == ObjectId("7fffffff0000000000000001")
    assert reply["tags"] == {"dc": "ny"}
    assert reply["topologyVersion"] == {"processId": PID, "counter": Int64(3)}
    last_write = reply["lastWrite"]
    assert last_write["lastWriteDate"] == NOW
    assert set(last_write) == {"opTime", "lastWriteDate", "majorityOpTime", "majorityWriteDate"}
    assert reply["localTime"] == NOW and reply["connectionId"] == 7
    assert reply["maxWireVersion"] == 25 and reply["logicalSessionTimeoutMinutes"] == 30
    assert "msg" not in reply and "serviceId" not in reply


def test_secondary_passive_hidden_and_arbiter() -> None:
    rs = group()
    passive = hello_of(Role.SECONDARY, "h:2", rs)
    assert passive["secondary"] is True and passive["passive"] is True
    assert "electionId" not in passive
    assert NOW - passive["lastWrite"]["lastWriteDate"] == datetime.timedelta(seconds=2)
    hidden = hello_of(Role.SECONDARY, "h:3", rs)
    assert hidden["hidden"] is True and "h:3" not in hidden["hosts"] + hidden["passives"]
    arbiter = hello_of(Role.ARBITER, "h:4", rs, {"isMaster": 1})
    assert arbiter["arbiterOnly"] is True and arbiter["ismaster"] is False
    assert "lastWrite" not in arbiter and "logicalSessionTimeoutMinutes" not in arbiter


def test_standalone_mongos_load_balancer_and_options() -> None:
    standalone = hello_of(Role.STANDALONE, "h:1", command={"ismaster": 1, "helloOk": True})
    assert standalone["ismaster"] is True and standalone["helloOk"] is True
    assert "setName" not in standalone and "hosts" not in standalone
    mongos = hello_of(Role.MONGOS, "h:1", streaming=False)
    assert mongos["msg"] == "isdbgrid" and "topologyVersion" not in mongos
    service = ObjectId()
    lb = hello_of(Role.MONGOS, "h:1", command={"hello": 1, "loadBalanced": True},
                  load_balanced=True, service_id=service)
    assert lb["serviceId"] == service
    assert "serviceId" not in hello_of(Role.MONGOS, "h:1", load_balanced=True,
                                       service_id=service)
    negotiated = hello_of(Role.STANDALONE, "h:1", command={"hello": 1,
                                                           "compression": ["zlib", "lz4"]},
                          compressors=("zstd", "zlib"))
    assert negotiated["compression"] == ["zlib"]


def test_elections_and_reconfig_bookkeeping() -> None:
    rs = group()
    assert rs.step_down() == "h:1" and rs.primary is None
    assert rs.next_electable({"h:1"}) is None  # h:2 has priority 0, h:3 hidden, h:4 arbiter
    with pytest.raises(ConfigurationError):
        rs.elect("h:4")
    rs.reconfig(add=[MemberConfig("h:5")], remove=["h:3"])
    assert rs.set_version == 2 and [m.host for m in rs.members] == ["h:1", "h:2", "h:4", "h:5"]
    rs.elect("h:5")
    assert rs.term == 2 and rs.view().election_id == ObjectId("7fffffff0000000000000002")
    with pytest.raises(ConfigurationError):
        rs.reconfig(remove=["h:5"])
    first = rs.record_write(NOW)
    assert rs.record_write(NOW) > first


def test_fail_point_modes() -> None:
    data = {"failCommands": ["insert"], "errorCode": 91}
    times = FailPointState.from_command({"mode": {"times": 2}, "data": data})
    assert [times.fire("insert", None) is not None for _ in range(3)] == [True, True, False]
    assert times.mode is FailPointMode.OFF
    skip = FailPointState.from_command({"mode": {"skip": 2}, "data": data})
    assert [skip.fire("insert", None) is not None for _ in range(4)] == [False, False, True,
                                                                          True]
    always = FailPointState.from_command({"mode": "alwaysOn", "data": data})
    assert always.fire("find", None) is None and always.fire("insert", "x") is not None
    assert always.fire("configureFailPoint", None) is None
    app = FailPointState.from_command({"mode": "alwaysOn",
                                       "data": {**data, "appName": "a"}})
    assert app.fire("insert", "b") is None and app.fire("insert", "a") is not None
    assert FailPointState.from_command({"mode": {"times": 0}, "data": data}).mode is (
        FailPointMode.OFF)
    for bad in ("sometimes", {"times": -1}, {"often": 1}):
        with pytest.raises(ConfigurationError):
            FailPointState.from_command({"mode": bad, "data": data})
    with pytest.raises(ConfigurationError):
        FailPointState.from_command({"mode": "alwaysOn", "data": {"errorCode": 1}})


def test_fail_point_matches_a_command_by_any_of_its_names() -> None:
    # mongod: an entry of failCommands names the command or one of its aliases, so the
    # spec tests' ["hello", "ismaster"] also fails a legacy handshake sent as "isMaster"
    data = {"failCommands": ["hello", "ismaster", "findandmodify"], "closeConnection": True}
    point = FailPointState.from_command({"mode": "alwaysOn", "data": data})
    for name in ("hello", "isMaster", "ismaster", "findAndModify", "findandmodify"):
        assert point.fire(name, None) is not None, name
    only_hello = FailPointState.from_command(
        {"mode": "alwaysOn", "data": {"failCommands": ["hello"], "closeConnection": True}}
    )
    assert only_hello.fire("isMaster", None) is None  # hello is its own command (7.0)


def test_fail_point_error_labels() -> None:
    retryable_write = {"insert": "c", "txnNumber": Int64(1), "lsid": {}}
    fail = FailCommand.from_document({"failCommands": ["insert"], "errorCode": 91})
    assert fail.error_reply(retryable_write)["errorLabels"] == ["RetryableWriteError"]
    assert "errorLabels" not in fail.error_reply({"insert": "c"})
    # inside a transaction a retryable code is transient instead (mongod's rule)
    in_transaction = fail.error_reply({**retryable_write, "autocommit": False})
    assert in_transaction["errorLabels"] == ["TransientTransactionError"]
    given = FailCommand.from_document({"failCommands": ["insert"], "errorCode": 91,
                                       "errorLabels": [], "errmsg": "custom"})
    reply = given.error_reply(retryable_write)
    assert "errorLabels" not in reply and reply["errmsg"] == "custom"
    wce = FailCommand.from_document({"failCommands": ["insert"],
                                     "writeConcernError": {"code": 91, "errmsg": "x"}})
    reply = wce.add_write_concern_error({"ok": 1.0, "n": 1}, retryable_write)
    assert reply["writeConcernError"] == {"code": 91, "errmsg": "x"}
    assert reply["errorLabels"] == ["RetryableWriteError"]


def test_decode_op_msg_with_sequences_and_compression() -> None:
    body = encode({"insert": "c", "$db": "db"})
    docs = DocumentSequence("documents", (encode({"_id": 1}), encode({"_id": 2})))
    raw = b"".join(encode_op_msg(5, body, [docs], flags=OpMsgFlags.EXHAUST_ALLOWED))
    request = decode_request(raw)
    assert request.command["documents"] == [{"_id": 1}, {"_id": 2}]
    assert (request.db, request.name, request.exhaust_allowed) == ("db", "insert", True)
    compressed = b"".join(encode_op_compressed(6, OpCode.OP_MSG,
                                               encode_op_msg_payload(body), Compressor.ZSTD))
    assert decode_request(compressed).compressor is Compressor.ZSTD


def test_bad_requests_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError):
        read_header(HEADER.pack(5, 1, 0, OpCode.OP_MSG))
    with pytest.raises(ProtocolError):
        decode_request(HEADER.pack(20, 1, 0, 1234) + b"\x00" * 4)
    no_db = b"".join(encode_op_msg(1, encode({"ping": 1})))
    with pytest.raises(ProtocolError, match=r"\$db"):
        decode_request(no_db)
    garbage_bson = b"".join(encode_op_msg(1, b"\x0c\x00\x00\x00\x99a\x00\x00\x00\x00\x00\x00"))
    with pytest.raises(ProtocolError):
        decode_request(garbage_bson)
    body = struct.pack("<i", 0) + b"admin.$cmd"  # no terminator
    with pytest.raises(ProtocolError):
        decode_request(HEADER.pack(16 + len(body), 1, 0, OpCode.OP_QUERY) + body)
    short = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + b"\x30\x00"
    with pytest.raises(ProtocolError):
        decode_request(HEADER.pack(16 + len(short), 1, 0, OpCode.OP_QUERY) + short)


def test_op_query_unwraps_dollar_query_and_replies_op_reply() -> None:
    query = encode({"$query": {"isMaster": 1}, "$readPreference": {"mode": "primary"}})
    body = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + query
    request = decode_request(HEADER.pack(16 + len(body), 9, 0, OpCode.OP_QUERY) + body)
    assert (request.command, request.db) == ({"isMaster": 1}, "admin")
    reply = encode_reply(request, 10, {"ok": 1.0})
    length, request_id, response_to, opcode = HEADER.unpack_from(reply)
    assert (length, request_id, response_to, opcode) == (len(reply), 10, 9, OpCode.OP_REPLY)
    compressed = Request(3, OpCode.OP_MSG, "db", {"find": "c"}, 0, Compressor.ZLIB)
    assert HEADER.unpack_from(encode_reply(compressed, 4, {"ok": 1.0}))[3] == (
        OpCode.OP_COMPRESSED)
    hello = Request(3, OpCode.OP_MSG, "db", {"hello": 1}, 0, Compressor.ZLIB)
    assert HEADER.unpack_from(encode_reply(hello, 4, {"ok": 1.0}))[3] == OpCode.OP_MSG


def test_write_concern_arithmetic() -> None:
    psa = [MemberConfig("a"), MemberConfig("b"), MemberConfig("c", arbiter=True)]
    assert required_acknowledgements({"w": "majority"}, psa) == 2
    pss_a = [*psa[:2], MemberConfig("d"), MemberConfig("e", arbiter=True)]
    assert required_acknowledgements({"w": "majority"}, pss_a) == 3  # calculated majority
    assert required_acknowledgements(None, psa) == 1
    assert required_acknowledgements({"w": "dc-tags"}, psa) == 1
    assert unsatisfiable(3, psa) is not None and unsatisfiable(2, psa) is None
    assert wtimeout_ms({"w": 2, "wtimeout": 50}) == 50.0
    assert wtimeout_ms({"w": 2, "wtimeout": 0}) is None
    assert standalone_refusal({"w": 2}) is not None and standalone_refusal({"w": 1}) is None


def test_deployment_options_are_validated() -> None:
    for bad in ({"members": 0}, {"members": 2, "hidden": 2}, {"members": 2, "tags": [{}]},
                {"members": 2, "priorities": [1, 1, 1]}, {"members": 1, "arbiters": -1}):
        with pytest.raises(ConfigurationError):
            ReplicaSet(**bad)
    with pytest.raises(ConfigurationError):
        ShardedCluster(mongos=0)


def test_certificate_subject_as_mongod_names_it() -> None:
    subject = ((("countryName", "US"),), (("organizationName", "Acme, Inc."),),
               (("organizationalUnitName", "db"), ("commonName", "svc+1")))
    assert subject_string(subject) == "OU=db+CN=svc\\+1,O=Acme\\, Inc.,C=US"
    assert subject_string(()) is None
    assert subject_string(((("commonName", " lead"),),)) == "CN=\\ lead"
    assert peer_subject(None) is None

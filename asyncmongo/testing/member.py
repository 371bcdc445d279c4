"""A simulated member's role and the ``hello`` reply a real mongod 8.0 builds from it.

Pure: the reply is a function of the member's :class:`HelloState` (role, replica-set view,
topology version, last write) and the ``hello`` command, so every field is tested without a
socket. The field names and their presence follow mongod: ``isWritablePrimary`` answers
``hello``, ``ismaster`` answers the legacy ``isMaster``; ``hosts``/``passives``/``arbiters``
list the visible members by kind; hidden members and arbiters say so; mongos says
``msg: "isdbgrid"``; a load-balanced mongos adds ``serviceId`` when the client says
``loadBalanced``.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.bson import Int64, ObjectId, Timestamp
from asyncmongo.core.wire.opcodes import (
    DEFAULT_MAX_BSON_OBJECT_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    DEFAULT_MAX_WRITE_BATCH_SIZE,
)

#: MongoDB 8.0 (the spec suites' 8.0 tests, client bulkWrite among them, need it). A test that
#: wants an older server patches this and ``builtins.SERVER_VERSION`` together (7.0: 21).
MAX_WIRE_VERSION = 25
MIN_WIRE_VERSION = 0
LOGICAL_SESSION_TIMEOUT_MINUTES = 30


class Role(enum.Enum):
    """What a simulated server plays."""

    STANDALONE = "standalone"
    PRIMARY = "primary"
    SECONDARY = "secondary"
    ARBITER = "arbiter"
    #: A replica-set member that is neither (no primary elected yet, or removed).
    OTHER = "other"
    MONGOS = "mongos"

    @property
    def is_replica_set_member(self) -> bool:
        return self in (Role.PRIMARY, Role.SECONDARY, Role.ARBITER, Role.OTHER)


@dataclass(frozen=True, slots=True)
class MemberConfig:
    """One member of a replica-set configuration (``replSetGetConfig``'s members[])."""

    host: str
    arbiter: bool = False
    hidden: bool = False
    priority: float = 1.0
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def electable(self) -> bool:
        return not self.arbiter and not self.hidden and self.priority > 0

    @property
    def passive(self) -> bool:
        """Data-bearing, visible, never primary: listed in ``passives``."""
        return not self.arbiter and not self.hidden and self.priority == 0


@dataclass(frozen=True, slots=True)
class ReplicaSetView:
    """What every member of a set knows about the set."""

    set_name: str
    set_version: int
    members: tuple[MemberConfig, ...]
    primary: str | None
    term: int

    @property
    def election_id(self) -> ObjectId:
        """mongod's electionId: 0x7fffffff then the term as 8 big-endian bytes."""
        return ObjectId(b"\x7f\xff\xff\xff" + self.term.to_bytes(8, "big"))

    def hosts(self) -> list[str]:
        return [m.host for m in self.members if not m.arbiter and not m.hidden and not m.passive]

    def passives(self) -> list[str]:
        return [m.host for m in self.members if m.passive]

    def arbiters(self) -> list[str]:
        return [m.host for m in self.members if m.arbiter]

    def config_of(self, host: str) -> MemberConfig | None:
        return next((m for m in self.members if m.host == host), None)


@dataclass(frozen=True, slots=True)
class LastWrite:
    """The member's ``lastWrite`` (for max staleness): optime and wall clock."""

    op_time: Timestamp
    date: datetime.datetime
    term: int

    def to_document(self) -> dict[str, Any]:
        op_time = {"ts": self.op_time, "t": Int64(self.term)}
        return {"opTime": op_time, "lastWriteDate": self.date,
                "majorityOpTime": op_time, "majorityWriteDate": self.date}


@dataclass(frozen=True, slots=True)
class HelloState:
    """Everything a hello reply depends on, besides the command itself."""

    role: Role
    me: str
    process_id: ObjectId
    counter: int
    connection_id: int
    now: datetime.datetime
    replica_set: ReplicaSetView | None = None
    last_write: LastWrite | None = None
    streaming: bool = True
    load_balanced: bool = False
    service_id: ObjectId | None = None
    compressors: tuple[str, ...] = ()


def build_hello(command: Mapping[str, Any], state: HelloState) -> dict[str, Any]:
    """The reply to ``hello`` / ``isMaster`` / ``ismaster``, field for field as mongod's."""
    legacy = next(iter(command), "") != "hello"
    reply: dict[str, Any] = {}
    writable = state.role in (Role.PRIMARY, Role.STANDALONE, Role.MONGOS)
    if state.streaming:
        reply["topologyVersion"] = {"processId": state.process_id,
                                    "counter": Int64(state.counter)}
    if state.replica_set is not None and state.role.is_replica_set_member:
        reply.update(_replica_set_fields(state, state.replica_set, writable, legacy))
    else:
        reply["ismaster" if legacy else "isWritablePrimary"] = writable
    if state.role is Role.MONGOS:
        reply["msg"] = "isdbgrid"
    if command.get("helloOk") is True:
        reply["helloOk"] = True
    reply.update({
        "maxBsonObjectSize": DEFAULT_MAX_BSON_OBJECT_SIZE,
        "maxMessageSizeBytes": DEFAULT_MAX_MESSAGE_SIZE_BYTES,
        "maxWriteBatchSize": DEFAULT_MAX_WRITE_BATCH_SIZE,
        "localTime": state.now,
    })
    if state.role is not Role.ARBITER:
        reply["logicalSessionTimeoutMinutes"] = LOGICAL_SESSION_TIMEOUT_MINUTES
    reply["connectionId"] = state.connection_id
    if state.load_balanced and command.get("loadBalanced") is True:
        reply["serviceId"] = state.service_id
    compression = _negotiate(command.get("compression"), state.compressors)
    if compression is not None:
        reply["compression"] = compression
    reply.update({"minWireVersion": MIN_WIRE_VERSION, "maxWireVersion": MAX_WIRE_VERSION,
                  "readOnly": False, "ok": 1.0})
    return reply


def _replica_set_fields(state: HelloState, rs: ReplicaSetView, writable: bool,
                        legacy: bool) -> dict[str, Any]:
    me = rs.config_of(state.me)
    fields: dict[str, Any] = {"hosts": rs.hosts()}
    if rs.passives():
        fields["passives"] = rs.passives()
    if rs.arbiters():
        fields["arbiters"] = rs.arbiters()
    fields["setName"] = rs.set_name
    fields["setVersion"] = rs.set_version
    fields["ismaster" if legacy else "isWritablePrimary"] = writable
    fields["secondary"] = state.role is Role.SECONDARY
    if rs.primary is not None:
        fields["primary"] = rs.primary
    if state.role is Role.ARBITER:
        fields["arbiterOnly"] = True
    if me is not None and me.passive:
        fields["passive"] = True
    if me is not None and me.hidden:
        fields["hidden"] = True
    if me is not None and me.tags:
        fields["tags"] = dict(me.tags)
    fields["me"] = state.me
    if state.role is Role.PRIMARY:
        fields["electionId"] = rs.election_id
    if state.last_write is not None and state.role is not Role.ARBITER:
        fields["lastWrite"] = state.last_write.to_document()
    return fields


def _negotiate(requested: Any, supported: tuple[str, ...]) -> list[str] | None:
    """mongod answers with the client's compressors it supports, in the client's order."""
    if not isinstance(requested, list):
        return None
    return [name for name in requested if name in supported]

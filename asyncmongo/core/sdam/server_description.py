"""ServerDescription: the client's view of one server, built from a hello reply or an error.

Every field of the SDAM spec's ServerDescription. Equality (``==``) is the spec's "Server
Description Equality": only the fields marked (=) count, hosts/passives/arbiters compare as
sets; RTT, lastWriteDate, opTime and lastUpdateTime do not. That equality is what suppresses
ServerDescriptionChangedEvents. Times are milliseconds; ``now`` comes in as an argument.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.address import Address, format_address, parse_address
from asyncmongo.core.sdam.rtt import RttStats
from asyncmongo.core.sdam.topology_version import TopologyVersion
from asyncmongo.core.sdam.types import ServerType
from asyncmongo.errors import ConfigurationError, ProtocolError

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True, eq=False)
class ServerDescription:
    """One server as last seen by its monitor (or as marked by an application error)."""

    address: Address
    server_type: ServerType = ServerType.UNKNOWN
    error: str | None = None
    round_trip_time_ms: float | None = None
    min_round_trip_time_ms: float | None = None
    last_write_date_ms: int | None = None
    op_time: Any = None
    min_wire_version: int | None = 0
    max_wire_version: int | None = 0
    me: Address | None = None
    hosts: tuple[Address, ...] = ()
    passives: tuple[Address, ...] = ()
    arbiters: tuple[Address, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    set_name: str | None = None
    election_id: ObjectId | None = None
    set_version: int | None = None
    primary: Address | None = None
    last_update_time_ms: float | None = None
    logical_session_timeout_minutes: int | None = None
    topology_version: TopologyVersion | None = None
    iscryptd: bool = False
    service_id: ObjectId | None = None
    hello_ok: bool = False

    # -- construction -------------------------------------------------------------------

    @classmethod
    def unknown(
        cls,
        address: Address,
        error: str | BaseException | None = None,
        topology_version: TopologyVersion | None = None,
    ) -> ServerDescription:
        """A default (Unknown) description, optionally carrying the error that caused it."""
        return cls(address, error=_error_text(error), topology_version=topology_version)

    @classmethod
    def load_balancer(cls, address: Address) -> ServerDescription:
        """The description of a load balancer: only the address and type are set."""
        return cls(
            address,
            server_type=ServerType.LOAD_BALANCER,
            min_wire_version=None,
            max_wire_version=None,
        )

    @classmethod
    def from_hello(
        cls,
        address: Address,
        reply: Mapping[str, Any],
        rtt: RttStats | None = None,
        now_ms: float | None = None,
    ) -> ServerDescription:
        """Parse a hello (or legacy hello) reply per SDAM "Parsing a hello response".

        ``rtt`` holds the server's RTT statistics including this check's sample; ``now_ms`` is
        the monotonic time of the check (lastUpdateTime). A reply without ``ok: 1`` yields an
        Unknown description. Malformed fields raise ProtocolError.
        """
        server_type = hello_server_type(reply)
        if server_type is ServerType.UNKNOWN:
            message = reply.get("errmsg") if isinstance(reply.get("errmsg"), str) else None
            return cls.unknown(address, message or "hello reply without ok: 1")
        rtt = rtt or RttStats()
        last_write = _document(reply, "lastWrite")
        return cls(
            address,
            server_type=server_type,
            round_trip_time_ms=rtt.average,
            min_round_trip_time_ms=rtt.minimum,
            last_write_date_ms=_date_ms(last_write.get("lastWriteDate")) if last_write else None,
            op_time=last_write.get("opTime") if last_write else None,
            min_wire_version=_int(reply, "minWireVersion", 0),
            max_wire_version=_int(reply, "maxWireVersion", 0),
            me=_address(reply.get("me")),
            hosts=_addresses(reply, "hosts"),
            passives=_addresses(reply, "passives"),
            arbiters=_addresses(reply, "arbiters"),
            tags=_tags(reply),
            set_name=_str(reply, "setName"),
            election_id=_object_id(reply, "electionId"),
            set_version=_optional_int(reply, "setVersion"),
            primary=_address(reply.get("primary")),
            last_update_time_ms=now_ms,
            logical_session_timeout_minutes=_optional_int(reply, "logicalSessionTimeoutMinutes"),
            topology_version=TopologyVersion.from_document(reply.get("topologyVersion")),
            iscryptd=bool(reply.get("iscryptd", False)),
            service_id=_object_id(reply, "serviceId"),
            hello_ok=bool(reply.get("helloOk", False)),
        )

    # -- queries ---------------------------------------------------------------------------

    @property
    def is_known(self) -> bool:
        return self.server_type.is_known

    @property
    def is_data_bearing(self) -> bool:
        return self.server_type.is_data_bearing

    @property
    def all_hosts(self) -> tuple[Address, ...]:
        """hosts, passives and arbiters: this member's opinion of the replica set."""
        return self.hosts + self.passives + self.arbiters

    def replace(self, **changes: Any) -> ServerDescription:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    # -- Server Description Equality -------------------------------------------------------

    def _equality_key(self) -> tuple[Any, ...]:
        # PossiblePrimary is "synonymous with Unknown" for async clients: no event between them.
        kind = ServerType.UNKNOWN if not self.server_type.is_known else self.server_type
        return (
            self.address,
            kind,
            self.error,
            self.min_wire_version,
            self.max_wire_version,
            self.me,
            frozenset(self.hosts),
            frozenset(self.passives),
            frozenset(self.arbiters),
            tuple(sorted(self.tags.items())),
            self.set_name,
            self.election_id,
            self.set_version,
            self.primary,
            self.logical_session_timeout_minutes,
            self.topology_version,
            self.iscryptd,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerDescription):
            return NotImplemented
        return self._equality_key() == other._equality_key()

    def __hash__(self) -> int:
        return hash((self.address, self.server_type, self.set_name))

    def __repr__(self) -> str:
        parts = [format_address(self.address), self.server_type.value]
        if self.set_name is not None:
            parts.append(f"set {self.set_name}")
        if self.round_trip_time_ms is not None:
            parts.append(f"rtt {self.round_trip_time_ms:.1f}ms")
        if self.error:
            parts.append(f"error {self.error!r}")
        return f"<ServerDescription {', '.join(parts)}>"


def hello_server_type(reply: Mapping[str, Any]) -> ServerType:
    """SDAM's ServerType table applied to a hello reply."""
    if reply.get("ok") not in (1, 1.0, True):
        return ServerType.UNKNOWN
    if reply.get("isreplicaset"):
        return ServerType.RS_GHOST
    if reply.get("setName") is not None:
        return _replica_set_member_type(reply)
    if reply.get("msg") == "isdbgrid":
        return ServerType.MONGOS
    return ServerType.STANDALONE


def _replica_set_member_type(reply: Mapping[str, Any]) -> ServerType:
    writable = reply["isWritablePrimary"] if "isWritablePrimary" in reply else reply.get("ismaster")
    if reply.get("hidden"):
        return ServerType.RS_OTHER
    if writable:
        return ServerType.RS_PRIMARY
    if reply.get("secondary"):
        return ServerType.RS_SECONDARY
    if reply.get("arbiterOnly"):
        return ServerType.RS_ARBITER
    return ServerType.RS_OTHER


def _error_text(error: str | BaseException | None) -> str | None:
    if error is None or isinstance(error, str):
        return error
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _document(reply: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = reply.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ProtocolError(f"hello field {key!r} must be a document, not {value!r}")
    return value


def _int(reply: Mapping[str, Any], key: str, default: int) -> int:
    value = _optional_int(reply, key)
    return default if value is None else value


def _optional_int(reply: Mapping[str, Any], key: str) -> int | None:
    value = reply.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProtocolError(f"hello field {key!r} must be a number, not {value!r}")
    return int(value)


def _str(reply: Mapping[str, Any], key: str) -> str | None:
    value = reply.get(key)
    if value is not None and not isinstance(value, str):
        raise ProtocolError(f"hello field {key!r} must be a string, not {value!r}")
    return value


def _object_id(reply: Mapping[str, Any], key: str) -> ObjectId | None:
    value = reply.get(key)
    if value is not None and not isinstance(value, ObjectId):
        raise ProtocolError(f"hello field {key!r} must be an ObjectId, not {value!r}")
    return value


def _address(value: Any) -> Address | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProtocolError(f"a host in a hello reply must be a string, not {value!r}")
    try:
        return parse_address(value)
    except ConfigurationError as exc:
        raise ProtocolError(f"bad host in a hello reply: {exc}") from exc


def _addresses(reply: Mapping[str, Any], key: str) -> tuple[Address, ...]:
    values = reply.get(key)
    if values is None:
        return ()
    if not isinstance(values, Iterable) or isinstance(values, str | bytes | Mapping):
        raise ProtocolError(f"hello field {key!r} must be an array, not {values!r}")
    seen: dict[Address, None] = {}
    for value in values:
        address = _address(value)
        if address is not None:
            seen[address] = None
    return tuple(seen)


def _tags(reply: Mapping[str, Any]) -> Mapping[str, str]:
    tags = _document(reply, "tags")
    if tags is None:
        return {}
    return {str(key): str(value) for key, value in tags.items()}


def _date_ms(value: Any) -> int | None:
    """lastWriteDate as milliseconds since the epoch (a BSON datetime or a plain number)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return (moment - _EPOCH) // _MILLISECOND
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    raise ProtocolError(f"lastWriteDate must be a datetime, not {value!r}")


_MILLISECOND = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - _EPOCH

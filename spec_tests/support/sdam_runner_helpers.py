"""Shared helpers of the SDAM and server-selection spec runners.

* ``plain``: finishes Extended JSON conversion ($oid, $numberLong, $date) for values the shared
  loader left as documents, so the runners work before and after ``json_util`` lands.
* ``settings_from_uri``: the TopologySettings of a test's connection string, through
  ``asyncmongo.core.uri.parse`` when it exists, else a tiny parser for the URI shapes the SDAM
  tests use.
* ``SdamHarness``: plays a test's phases against the pure core exactly as the runtime would:
  hello replies become ServerDescriptions, application errors go through the error verdicts,
  pool generations are kept per server and bumped when a verdict clears the pool.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.address import Address, parse_address
from asyncmongo.core.error_policy import (
    ApplicationError,
    ErrorKind,
    ErrorPhase,
    application_error_verdict,
)
from asyncmongo.core.sdam.compatibility import first_compatibility_error
from asyncmongo.core.sdam.events import SdamEvent
from asyncmongo.core.sdam.rtt import RttStats
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import ServerType, TopologyType
from spec_tests.support.spec_json import load_spec_json


def load_test_json(path: Path) -> Any:
    """A spec file through the shared loader, with any leftover Extended JSON converted.

    While ``asyncmongo.bson.json_util`` is still landing the shared loader may not be usable;
    then the file is read with the standard library and converted by ``plain`` alone.
    """
    try:
        return plain(load_spec_json(path))
    except (ImportError, AttributeError):
        return plain(json.loads(path.read_text(encoding="utf-8")))


def plain(value: Any) -> Any:
    """Convert leftover Extended JSON documents into ObjectId / int / datetime."""
    if isinstance(value, Mapping):
        if set(value) == {"$oid"}:
            return ObjectId(value["$oid"])
        if set(value) == {"$numberLong"}:
            return int(value["$numberLong"])
        if set(value) == {"$date"}:
            return _date(value["$date"])
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def _date(value: Any) -> datetime:
    if isinstance(value, Mapping):
        value = int(value["$numberLong"])
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return datetime.fromtimestamp(int(value) / 1000, tz=UTC)


def settings_from_uri(uri: str, **overrides: Any) -> TopologySettings:
    """TopologySettings for a test connection string (overrides win)."""
    parse = getattr(importlib.import_module("asyncmongo.core.uri"), "parse", None)
    if parse is None:
        return _settings_from_simple_uri(uri, **overrides)
    settings = TopologySettings.from_options(parse(uri))
    if not overrides:
        return settings
    values = {name: getattr(settings, name) for name in TopologySettings.__dataclass_fields__}
    values.update(overrides)
    return TopologySettings(**values)


_BOOLEANS = {"true": True, "false": False}


def _settings_from_simple_uri(uri: str, **overrides: Any) -> TopologySettings:
    """``mongodb://h1[:p],h2/?replicaSet=x&directConnection=..&loadBalanced=..`` only."""
    parts = urlsplit(uri)
    if parts.scheme != "mongodb":
        raise ValueError(f"the local URI parser only understands mongodb:// URIs: {uri}")
    options = {key.lower(): value for key, value in parse_qsl(parts.query)}
    values: dict[str, Any] = {
        "seeds": tuple(parse_address(host) for host in parts.netloc.split(",")),
        "replica_set_name": options.get("replicaset"),
        "direct_connection": _BOOLEANS.get(options.get("directconnection", "")),
        "load_balanced": _BOOLEANS.get(options.get("loadbalanced", ""), False),
    }
    if "heartbeatfrequencyms" in options:
        values["heartbeat_frequency_ms"] = int(options["heartbeatfrequencyms"])
    values.update(overrides)
    return TopologySettings(**values)


_KINDS = {"network": ErrorKind.NETWORK, "timeout": ErrorKind.TIMEOUT, "command": ErrorKind.COMMAND}
_PHASES = {
    "beforeHandshakeCompletes": ErrorPhase.CONNECTING,
    "afterHandshakeCompletes": ErrorPhase.ESTABLISHED,
}


@dataclass
class SdamHarness:
    """A topology driven by a test's responses and application errors, without any I/O."""

    description: TopologyDescription
    generations: dict[Address, int] = field(default_factory=dict)
    events: list[SdamEvent] = field(default_factory=list)
    now_ms: float = 0.0

    @classmethod
    def open(cls, uri: str) -> SdamHarness:
        description, events = TopologyDescription.open(settings_from_uri(uri), topology_id="42")
        return cls(description, events=list(events))

    def generation(self, address: Address) -> int:
        return self.generations.get(address, 0)

    def _apply(self, server: ServerDescription) -> None:
        self.description, events = self.description.apply(server)
        self.events.extend(events)

    def hello(self, address_text: str, reply: Mapping[str, Any]) -> None:
        """A monitor check: ``{}`` stands for a network error."""
        address = parse_address(address_text)
        self.now_ms += 1.0
        if not reply:
            self._apply(ServerDescription.unknown(address, "network error during hello"))
            return
        self._apply(ServerDescription.from_hello(address, reply, RttStats().add(1.0), self.now_ms))

    def application_error(self, spec: Mapping[str, Any]) -> None:
        """Simulate an application error the way the runtime reports it to the topology."""
        address = parse_address(spec["address"])
        server = self.description.servers.get(address)
        if server is None:
            return
        generation = spec.get("generation", self.generation(address))
        kind, phase = _KINDS[spec["type"]], _PHASES[spec["when"]]
        error: ApplicationError | None
        if kind is ErrorKind.COMMAND:
            error = ApplicationError.from_command_reply(
                spec["response"], generation, phase, spec.get("maxWireVersion")
            )
        else:
            error = ApplicationError(
                kind,
                phase,
                generation,
                message="simulated",
                max_wire_version=spec.get("maxWireVersion"),
            )
        if error is None:
            return
        verdict = application_error_verdict(
            server, self.description.topology_type, self.generation(address), error
        )
        if verdict.new_description is not None:
            self._apply(verdict.new_description)
        if verdict.clear_pool:
            self.generations[address] = self.generation(address) + 1


# -- server selection test files ---------------------------------------------------------------

#: Server selection files without maxWireVersion describe current servers.
DEFAULT_TEST_MAX_WIRE_VERSION = 21


def server_from_selection_test(spec: Mapping[str, Any]) -> ServerDescription:
    """A ServerDescription from a server-selection (or max-staleness) test's server entry."""
    address = parse_address(spec["address"])
    server_type = ServerType(spec["type"])
    last_write = spec.get("lastWrite") or {}
    return ServerDescription(
        address,
        server_type=server_type,
        round_trip_time_ms=spec.get("avg_rtt_ms"),
        last_write_date_ms=_ms(last_write.get("lastWriteDate")),
        last_update_time_ms=spec.get("lastUpdateTime"),
        max_wire_version=spec.get("maxWireVersion", DEFAULT_TEST_MAX_WIRE_VERSION),
        tags=dict(spec.get("tags") or {}),
    )


def _ms(value: Any) -> int | None:
    if isinstance(value, datetime):
        return int((value - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000)
    return None if value is None else int(value)


def topology_from_selection_test(test: Mapping[str, Any]) -> TopologyDescription:
    """The mocked TopologyDescription of a server-selection test (incl. heartbeatFrequencyMS)."""
    spec = test["topology_description"]
    servers = {s.address: s for s in map(server_from_selection_test, spec["servers"])}
    seeds = tuple(servers) or (("placeholder.invalid", 27017),)
    settings = TopologySettings(
        seeds,
        heartbeat_frequency_ms=test.get("heartbeatFrequencyMS", 10_000),
    )
    error = first_compatibility_error(servers.values())
    return TopologyDescription(
        TopologyType(spec["type"]),
        servers,
        settings,
        compatible=error is None,
        compatibility_error=error,
    )

"""Shared helpers of the SDAM and server-selection spec runners.

* ``load_test_json``: the shared spec loader (Extended JSON becomes BSON types).
* ``settings_from_uri``: the TopologySettings of a test's connection string.
* ``SdamHarness``: plays a test's phases against the pure core exactly as the runtime would:
  hello replies become ServerDescriptions, application errors go through the error verdicts,
  pool generations are kept per server and bumped when a verdict clears the pool.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
from asyncmongo.core.uri import parse
from spec_tests.support.spec_json import load_spec_json


def load_test_json(path: Path) -> Any:
    """A spec file through the shared loader (Extended JSON converted to BSON types)."""
    return load_spec_json(path)


def settings_from_uri(uri: str, **overrides: Any) -> TopologySettings:
    """TopologySettings for a test connection string (overrides win)."""
    settings = TopologySettings.from_options(parse(uri))
    return dataclasses.replace(settings, **overrides) if overrides else settings


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

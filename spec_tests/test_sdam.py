"""Server Discovery and Monitoring spec tests (the phase-based JSON format), no event loop.

Every JSON under spec_tests/data/server-discovery-and-monitoring/ is one test case. Each phase
feeds hello replies and application errors into the pure core (``SdamHarness``) and compares
the resulting TopologyDescription (or, in monitoring/, the SDAM events) with the outcome.
The unified/ folder is written in the Unified Test Format and is run, against the runtime, by
spec_tests/test_sdam_unified.py; this runner does not collect it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from asyncmongo.core.address import format_address, parse_address
from asyncmongo.core.sdam.events import (
    SdamEvent,
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerOpeningEvent,
    TopologyClosedEvent,
    TopologyDescriptionChangedEvent,
    TopologyOpeningEvent,
)
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.topology_version import TopologyVersion
from spec_tests.support.sdam_runner_helpers import SdamHarness, load_test_json

SUITE = Path(__file__).parent / "data" / "server-discovery-and-monitoring"
#: The pure-SDAM files; the unified/ folder is run by spec_tests/test_sdam_unified.py.
FILES = sorted(p for p in SUITE.rglob("*.json") if p.relative_to(SUITE).parts[0] != "unified")


def _case_id(path: Path) -> str:
    return str(path.relative_to(SUITE).with_suffix(""))


@pytest.mark.parametrize("path", FILES, ids=[_case_id(p) for p in FILES])
def test_sdam(path: Path) -> None:
    test = load_test_json(path)
    harness = SdamHarness.open(test["uri"])
    for number, phase in enumerate(test["phases"]):
        for address, reply in phase.get("responses", []):
            harness.hello(address, reply)
        for error in phase.get("applicationErrors", []):
            harness.application_error(error)
        where = f"phase {number} ({phase.get('description', '')})"
        outcome = phase["outcome"]
        if "events" in outcome:
            check_events(harness.events, outcome["events"], where)
            harness.events.clear()
        else:
            check_topology(harness, outcome, where)


# -- topology outcomes ---------------------------------------------------------------------


def check_topology(harness: SdamHarness, outcome: Mapping[str, Any], where: str) -> None:
    description = harness.description
    assert description.topology_type.value == outcome["topologyType"], where
    assert description.set_name == outcome["setName"], where
    optional = {
        "logicalSessionTimeoutMinutes": description.logical_session_timeout_minutes,
        "maxSetVersion": description.max_set_version,
        "maxElectionId": description.max_election_id,
        "compatible": description.compatible,
    }
    for key, actual in optional.items():
        if key in outcome:
            assert actual == outcome[key], f"{where}: {key}"
    expected_servers = {parse_address(a): s for a, s in outcome["servers"].items()}
    assert set(description.servers) == set(expected_servers), where
    for address, expected in expected_servers.items():
        server = description.servers[address]
        check_server(server, expected, f"{where}: {format_address(address)}")
        if "pool" in expected:
            assert harness.generation(address) == expected["pool"]["generation"], where


def check_server(server: ServerDescription, expected: Mapping[str, Any], where: str) -> None:
    assert server.server_type.value == expected["type"], where
    fields = {
        "setName": server.set_name,
        "setVersion": server.set_version,
        "electionId": server.election_id,
        "logicalSessionTimeoutMinutes": server.logical_session_timeout_minutes,
        "minWireVersion": server.min_wire_version,
        "maxWireVersion": server.max_wire_version,
        "topologyVersion": server.topology_version,
    }
    for key, actual in fields.items():
        if key not in expected:
            continue
        wanted = expected[key]
        if key == "topologyVersion":
            wanted = TopologyVersion.from_document(wanted)
        assert actual == wanted, f"{where}: {key}"
    if "error" in expected:
        assert server.error is not None and expected["error"] in server.error, where


# -- monitoring outcomes -------------------------------------------------------------------


def check_events(actual: list[SdamEvent], expected: list[Mapping[str, Any]], where: str) -> None:
    names = [_EVENT_NAMES[type(event)] for event in actual]
    assert names == [next(iter(e)) for e in expected], where
    for event, wanted in zip(actual, expected, strict=True):
        check_event(event, next(iter(wanted.values())), where)


_EVENT_NAMES: dict[type, str] = {
    TopologyOpeningEvent: "topology_opening_event",
    TopologyClosedEvent: "topology_closed_event",
    TopologyDescriptionChangedEvent: "topology_description_changed_event",
    ServerOpeningEvent: "server_opening_event",
    ServerClosedEvent: "server_closed_event",
    ServerDescriptionChangedEvent: "server_description_changed_event",
}


_SERVER_EVENTS = (ServerOpeningEvent, ServerClosedEvent, ServerDescriptionChangedEvent)


def check_event(event: SdamEvent, expected: Mapping[str, Any], where: str) -> None:
    assert event.topology_id == expected["topologyId"], where
    if "address" in expected:
        assert isinstance(event, _SERVER_EVENTS), where
        assert event.address == parse_address(expected["address"]), where
    if isinstance(event, ServerDescriptionChangedEvent):
        match_server_shape(event.previous_description, expected["previousDescription"], where)
        match_server_shape(event.new_description, expected["newDescription"], where)
    if isinstance(event, TopologyDescriptionChangedEvent):
        match_topology_shape(event.previous_description, expected["previousDescription"], where)
        match_topology_shape(event.new_description, expected["newDescription"], where)


def match_topology_shape(
    description: TopologyDescription, expected: Mapping[str, Any], where: str
) -> None:
    assert description.topology_type.value == expected["topologyType"], where
    if "setName" in expected:
        assert description.set_name == expected["setName"], where
    by_address = {parse_address(s["address"]): s for s in expected["servers"]}
    assert set(description.servers) == set(by_address), where
    for address, wanted in by_address.items():
        match_server_shape(description.servers[address], wanted, where)


def match_server_shape(server: ServerDescription, expected: Mapping[str, Any], where: str) -> None:
    assert server.address == parse_address(expected["address"]), where
    assert server.server_type.value == expected["type"], where
    for key, actual in (
        ("hosts", server.hosts),
        ("passives", server.passives),
        ("arbiters", server.arbiters),
    ):
        assert set(actual) == {parse_address(a) for a in expected.get(key, [])}, f"{where}: {key}"
    primary = expected.get("primary")
    assert server.primary == (parse_address(primary) if primary else None), where
    assert server.set_name == expected.get("setName"), where

"""Server Selection spec tests: every folder under spec_tests/data/server-selection/, no loop.

* rtt/: the RTT moving average.
* server_selection/ (and any file of that format, including max-staleness files with
  heartbeatFrequencyMS, lastUpdateTime/lastWrite, maxStalenessSeconds and ``error``): the
  suitable servers and the latency window, with deprioritized servers.
* in_window/: the power of two random choices by operation count, with a seeded rng.
* logging/: Unified Test Format files, run by spec_tests/test_server_selection_logging_unified.py
  (not collected here).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from asyncmongo.core.address import parse_address
from asyncmongo.core.sdam.rtt import RttStats
from asyncmongo.core.selection.read_preference import PRIMARY, ReadPreference
from asyncmongo.core.selection.server_selector import (
    Selection,
    select_server,
    suitable_and_in_window,
)
from asyncmongo.core.selection.suitability import Operation
from asyncmongo.errors import ConfigurationError
from spec_tests.support.sdam_runner_helpers import load_test_json, topology_from_selection_test

SUITE = Path(__file__).parent / "data" / "server-selection"
FILES = sorted(p for p in SUITE.rglob("*.json") if p.relative_to(SUITE).parts[0] != "logging")


def _case_id(path: Path) -> str:
    return str(path.relative_to(SUITE).with_suffix(""))


@pytest.mark.parametrize("path", FILES, ids=[_case_id(p) for p in FILES])
def test_server_selection(path: Path) -> None:
    test = load_test_json(path)
    if "new_rtt_ms" in test:
        run_rtt_test(test)
    elif "mocked_topology_state" in test:
        run_in_window_test(test)
    else:
        run_selection_test(test)


def run_rtt_test(test: Mapping[str, Any]) -> None:
    previous = test["avg_rtt_ms"]
    stats = RttStats() if previous == "NULL" else RttStats(average=float(previous))
    assert stats.add(float(test["new_rtt_ms"])).average == pytest.approx(test["new_avg_rtt"])


def _selection(test: Mapping[str, Any]) -> Selection:
    document = test.get("read_preference")
    read_preference = ReadPreference.from_document(document) if document else PRIMARY
    deprioritized = frozenset(
        parse_address(s["address"]) for s in test.get("deprioritized_servers", [])
    )
    return Selection(Operation(test.get("operation", "read")), read_preference, deprioritized)


def run_selection_test(test: Mapping[str, Any]) -> None:
    topology = topology_from_selection_test(test)
    if test.get("error"):
        with pytest.raises(ConfigurationError):
            suitable_and_in_window(topology, _selection(test))
        return
    suitable, window = suitable_and_in_window(topology, _selection(test))
    if "suitable_servers" in test:
        assert _addresses(suitable) == _expected(test["suitable_servers"])
    assert _addresses(window) == _expected(test["in_latency_window"])


def _addresses(servers: Any) -> set[Any]:
    return {server.address for server in servers}


def _expected(servers: list[Mapping[str, Any]]) -> set[Any]:
    return {parse_address(s["address"]) for s in servers}


def run_in_window_test(test: Mapping[str, Any]) -> None:
    topology = topology_from_selection_test(test)
    counts = {
        parse_address(s["address"]): s["operation_count"] for s in test["mocked_topology_state"]
    }
    selection = Selection.read(ReadPreference.from_document({"mode": "nearest"}))
    rng = random.Random(20261121)
    iterations = test["iterations"]
    chosen: Counter[Any] = Counter()
    for _ in range(iterations):
        server = select_server(topology, selection, counts, rng)
        assert server is not None
        chosen[server.address] += 1
    outcome = test["outcome"]
    for address_text, expected in outcome["expected_frequencies"].items():
        frequency = chosen[parse_address(address_text)] / iterations
        if expected in (0, 1):
            assert frequency == expected, address_text
        else:
            assert abs(frequency - expected) <= outcome["tolerance"], address_text

"""maxStalenessSeconds: validation and both staleness formulas, in the max-staleness JSON format.

The max-staleness spec's JSON tests are not vendored here, so these cases (same format, run by
the same helpers as spec_tests/test_server_selection.py) were computed by hand from the spec's
formulas, boundaries included.
"""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.core.address import parse_address
from asyncmongo.core.selection.read_preference import ReadPreference
from asyncmongo.core.selection.server_selector import Selection, suitable_and_in_window
from asyncmongo.core.selection.staleness import (
    staleness_with_primary_ms,
    staleness_without_primary_ms,
    validate_max_staleness,
)
from asyncmongo.core.selection.suitability import Operation
from asyncmongo.errors import ConfigurationError
from spec_tests.support.sdam_runner_helpers import (
    server_from_selection_test,
    topology_from_selection_test,
)


def server(address: str, kind: str, update: int, write: int, rtt: int = 5) -> dict[str, Any]:
    return {
        "address": address,
        "type": kind,
        "avg_rtt_ms": rtt,
        "lastUpdateTime": update,
        "lastWrite": {"lastWriteDate": write},
        "maxWireVersion": 21,
    }


WITH_PRIMARY = {
    "heartbeatFrequencyMS": 25000,
    "topology_description": {
        "type": "ReplicaSetWithPrimary",
        "servers": [
            server("a:27017", "RSPrimary", 200000, 200000),
            server("b:27017", "RSSecondary", 200000, 199999),  # 1 + 25000 ms
            server("c:27017", "RSSecondary", 200000, 74000),  # 126000 + 25000 ms: too stale
            server("d:27017", "RSSecondary", 200000, 75000),  # exactly 150000 ms: eligible
        ],
    },
}

WITHOUT_PRIMARY = {
    "heartbeatFrequencyMS": 10000,
    "topology_description": {
        "type": "ReplicaSetNoPrimary",
        "servers": [
            server("b:27017", "RSSecondary", 0, 100000),  # SMax
            server("c:27017", "RSSecondary", 0, 20000),  # 80000 + 10000 = 90000 ms: eligible
            server("d:27017", "RSSecondary", 0, 19999),  # 90001 ms: too stale
        ],
    },
}


def addresses(*texts: str) -> set[Any]:
    return {parse_address(text) for text in texts}


def run(test: dict[str, Any], document: dict[str, Any]) -> tuple[set[Any], set[Any]]:
    topology = topology_from_selection_test(test)
    selection = Selection(Operation.READ, ReadPreference.from_document(document))
    suitable, window = suitable_and_in_window(topology, selection)
    return {s.address for s in suitable}, {s.address for s in window}


def test_formula_with_a_primary() -> None:
    suitable, _ = run(WITH_PRIMARY, {"mode": "secondary", "maxStalenessSeconds": 150})
    assert suitable == addresses("b:27017", "d:27017")


def test_primary_has_zero_staleness_for_nearest() -> None:
    suitable, _ = run(WITH_PRIMARY, {"mode": "nearest", "maxStalenessSeconds": 150})
    assert suitable == addresses("a:27017", "b:27017", "d:27017")


def test_formula_without_a_primary() -> None:
    suitable, _ = run(WITHOUT_PRIMARY, {"mode": "nearest", "maxStalenessSeconds": 90})
    assert suitable == addresses("b:27017", "c:27017")


def test_secondary_preferred_falls_back_to_the_primary_when_all_are_stale() -> None:
    test = {
        "heartbeatFrequencyMS": 10000,
        "topology_description": {
            "type": "ReplicaSetWithPrimary",
            "servers": [
                server("a:27017", "RSPrimary", 500000, 500000),
                server("b:27017", "RSSecondary", 500000, 1000),
            ],
        },
    }
    suitable, _ = run(test, {"mode": "secondaryPreferred", "maxStalenessSeconds": 120})
    assert suitable == addresses("a:27017")


def test_direct_formulas() -> None:
    primary, secondary = (
        server_from_selection_test(spec)
        for spec in (
            server("a:27017", "RSPrimary", 200000, 200000),
            server("b:27017", "RSSecondary", 200000, 199999),
        )
    )
    assert staleness_with_primary_ms(secondary, primary, 25000) == 25001
    assert staleness_without_primary_ms(secondary, 200000, 10000) == 10001


@pytest.mark.parametrize(
    ("max_staleness", "heartbeat_ms"),
    [(89, 10000), (100, 120000), (1, 500)],
)
def test_too_small_for_a_replica_set(max_staleness: int, heartbeat_ms: int) -> None:
    with pytest.raises(ConfigurationError, match="maxStalenessSeconds must be at least"):
        validate_max_staleness(max_staleness, heartbeat_ms)
    test = {**WITHOUT_PRIMARY, "heartbeatFrequencyMS": heartbeat_ms}
    with pytest.raises(ConfigurationError):
        run(test, {"mode": "secondary", "maxStalenessSeconds": max_staleness})


def test_smallest_allowed_values_are_accepted() -> None:
    validate_max_staleness(90, 10000)
    validate_max_staleness(130, 120000)
    validate_max_staleness(None, 10000)


def test_sharded_ignores_max_staleness() -> None:
    test = {
        "heartbeatFrequencyMS": 10000,
        "topology_description": {
            "type": "Sharded",
            "servers": [server("a:27017", "Mongos", 0, 0), server("b:27017", "Mongos", 0, 0)],
        },
    }
    suitable, _ = run(test, {"mode": "secondary", "maxStalenessSeconds": 1})
    assert suitable == addresses("a:27017", "b:27017")

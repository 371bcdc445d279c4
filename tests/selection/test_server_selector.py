"""Server selection mechanics: two random choices, deprioritization, the latency window,
compatibility errors and the $out/$merge rule, with an injected rng."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from asyncmongo.core.address import Address
from asyncmongo.core.sdam.server_description import ServerDescription
from asyncmongo.core.sdam.settings import TopologySettings
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.core.sdam.types import ServerType, TopologyType
from asyncmongo.core.selection.latency import choose_by_operation_count, in_latency_window
from asyncmongo.core.selection.read_preference import PRIMARY, Mode, ReadPreference
from asyncmongo.core.selection.server_selector import (
    Selection,
    select_server,
    suitable_and_in_window,
    write_stage_read_preference,
)
from asyncmongo.core.selection.suitability import Operation
from asyncmongo.errors import ConfigurationError

A, B, C = ("a", 27017), ("b", 27017), ("c", 27017)


def mongos(address: Address, rtt: float = 5.0, wire: int = 21) -> ServerDescription:
    return ServerDescription(
        address, ServerType.MONGOS, round_trip_time_ms=rtt, max_wire_version=wire
    )


def topology(
    kind: TopologyType, *servers: ServerDescription, **settings: Any
) -> TopologyDescription:
    seeds = tuple(s.address for s in servers) or (A,)
    return TopologyDescription(
        kind, {s.address: s for s in servers}, TopologySettings(seeds, **settings)
    )


def pick(description: TopologyDescription, selection: Selection) -> Address:
    server = select_server(description, selection, {}, random.Random(1))
    assert server is not None
    return server.address


def test_two_choices_prefers_the_less_busy_server() -> None:
    servers = [mongos(A), mongos(B)]
    rng = random.Random(3)
    picks = {choose_by_operation_count(servers, {A: 0, B: 5}, rng).address for _ in range(50)}
    assert picks == {A}


def test_two_choices_never_picks_the_busiest_of_three() -> None:
    servers = [mongos(A), mongos(B), mongos(C)]
    rng = random.Random(11)
    counts = Counter(
        choose_by_operation_count(servers, {A: 1, B: 1, C: 9}, rng).address for _ in range(600)
    )
    assert counts[C] == 0
    assert abs(counts[A] - counts[B]) < 100


def test_one_server_needs_no_randomness() -> None:
    class NoRandom(random.Random):
        def sample(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("rng used")

    assert choose_by_operation_count([mongos(A)], {}, NoRandom()).address == A


def test_latency_window() -> None:
    servers = [mongos(A, 10), mongos(B, 25), mongos(C, 25.5)]
    assert [s.address for s in in_latency_window(servers, 15)] == [A, B]
    assert [s.address for s in in_latency_window(servers, 0)] == [A]


def test_deprioritized_mongos_is_avoided_unless_it_is_the_only_one() -> None:
    sharded = topology(TopologyType.SHARDED, mongos(A), mongos(B))
    avoid_a = Selection(Operation.WRITE, deprioritized=frozenset({A}))
    assert pick(sharded, avoid_a) == B
    avoid_both = Selection(Operation.WRITE, deprioritized=frozenset({A, B}))
    suitable, _ = suitable_and_in_window(sharded, avoid_both)
    assert {s.address for s in suitable} == {A, B}


def test_nothing_suitable_returns_none() -> None:
    no_primary = topology(
        TopologyType.REPLICA_SET_NO_PRIMARY,
        ServerDescription(A, ServerType.RS_SECONDARY, max_wire_version=21, set_name="rs"),
    )
    assert select_server(no_primary, Selection.write(), {}, random.Random(1)) is None
    unknown = topology(TopologyType.UNKNOWN, ServerDescription.unknown(A))
    assert select_server(unknown, Selection.read(), {}, random.Random(1)) is None


def test_incompatible_topology_raises() -> None:
    sharded = topology(TopologyType.SHARDED, mongos(A))
    incompatible = TopologyDescription(
        sharded.topology_type,
        sharded.servers,
        sharded.settings,
        compatible=False,
        compatibility_error="Server at a:27017 reports wire version 6",
    )
    with pytest.raises(ConfigurationError, match="wire version 6"):
        select_server(incompatible, Selection.read(), {}, random.Random(1))


def test_server_filter_narrows_suitable_servers() -> None:
    sharded = topology(TopologyType.SHARDED, mongos(A), mongos(B))
    only_b = Selection(
        Operation.READ, server_filter=lambda servers: [s for s in servers if s.address == B]
    )
    assert pick(sharded, only_b) == B


def test_single_ignores_read_preference_and_accepts_writes() -> None:
    secondary = ServerDescription(A, ServerType.RS_SECONDARY, max_wire_version=21, set_name="rs")
    single = topology(TopologyType.SINGLE, secondary, direct_connection=True)
    assert select_server(single, Selection.write(), {}, random.Random(1)) == secondary
    assert select_server(single, Selection.read(PRIMARY), {}, random.Random(1)) == secondary


def test_write_stage_falls_back_to_primary_on_pre_50_servers() -> None:
    secondary = ReadPreference(Mode.SECONDARY)
    modern = topology(TopologyType.SHARDED, mongos(A, wire=21), mongos(B, wire=21))
    assert write_stage_read_preference(modern, secondary) is secondary
    mixed = topology(TopologyType.SHARDED, mongos(A, wire=21), mongos(B, wire=9))
    assert write_stage_read_preference(mixed, secondary) is PRIMARY
    assert write_stage_read_preference(mixed, PRIMARY) is PRIMARY

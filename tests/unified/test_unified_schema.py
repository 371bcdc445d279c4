"""The unified runner's file checks: the schema subset, schemaVersion and runOnRequirements."""

from __future__ import annotations

from typing import Any

import pytest

from spec_tests.unified.jsonschema_lite import SchemaViolation, validate
from spec_tests.unified.schema import (
    InvalidTestFile,
    ServerInfo,
    check_schema,
    is_compatible,
    parse_version,
    requirement_unmet_reason,
    requirements_unmet_reason,
)

_MINIMAL: dict[str, Any] = {
    "description": "d", "schemaVersion": "1.0", "tests": [{"description": "t", "operations": []}],
}


def test_version_strings() -> None:
    assert parse_version("4.9.0-alpha4-271-g7d5cf02") == (4, 9, 0)
    assert parse_version("7") == (7, 0, 0)
    assert parse_version("4.0.10") > parse_version("4.0.9")
    with pytest.raises(InvalidTestFile):
        parse_version("x")


def test_schema_version_compatibility() -> None:
    assert is_compatible("1.0", (1, 5, 1))
    assert is_compatible("1.5", (1, 5, 1))
    assert not is_compatible("1.6", (1, 5, 1))
    assert not is_compatible("2.0", (1, 5, 1))
    assert not is_compatible("1.0", (2, 1, 0))
    assert not is_compatible("2.0.2", (2, 0, 1))


def test_minimal_file_passes_and_mutations_fail() -> None:
    check_schema(_MINIMAL)
    for broken in (
        {**_MINIMAL, "tests": []},
        {**_MINIMAL, "extra": 1},
        {**_MINIMAL, "createEntities": [{"client": {"id": "c", "observeEvents": []}}]},
        {**_MINIMAL, "createEntities": [{"client": {"id": "c"}, "thread": {"id": "t"}}]},
        {**_MINIMAL, "tests": [{"description": "t", "operations": [
            {"name": "x", "object": "y", "expectError": {"isError": True}, "expectResult": 1}]}]},
    ):
        with pytest.raises(InvalidTestFile):
            check_schema(broken)


def test_event_type_decides_the_allowed_events() -> None:
    def with_events(event_type: str | None, event: dict[str, Any]) -> dict[str, Any]:
        expect: dict[str, Any] = {"client": "c", "events": [event]}
        if event_type is not None:
            expect["eventType"] = event_type
        return {**_MINIMAL, "tests": [{"description": "t", "operations": [],
                                       "expectEvents": [expect]}]}

    check_schema(with_events(None, {"commandStartedEvent": {"commandName": "ping"}}))
    check_schema(with_events("cmap", {"poolClearedEvent": {"hasServiceId": False}}))
    check_schema(with_events("sdam", {"topologyOpeningEvent": {}}))
    with pytest.raises(InvalidTestFile):
        check_schema(with_events("cmap", {"commandStartedEvent": {}}))
    with pytest.raises(InvalidTestFile):
        check_schema(with_events(None, {"poolReadyEvent": {}}))


def test_validator_keywords() -> None:
    validate(1, {"type": ["string", "integer"]}, {})
    with pytest.raises(SchemaViolation):
        validate(True, {"type": "integer"}, {})
    with pytest.raises(SchemaViolation):
        validate(1, {"const": True}, {})
    with pytest.raises(SchemaViolation, match="exactly one"):
        validate(1, {"oneOf": [{"type": "integer"}, {"type": "number"}]}, {})
    validate({"a": 1}, {"$ref": "#/definitions/x"}, {"x": {"required": ["a"]}})


_SERVER = ServerInfo(version=(7, 0, 0), topology="replicaset",
                     server_parameters={"enableTestCommands": True, "x": 1.0})


@pytest.mark.parametrize(("requirement", "unmet"), [
    ({"minServerVersion": "4.4"}, None),
    ({"minServerVersion": "7.0.1"}, "server 7.0.0 < minServerVersion 7.0.1"),
    ({"maxServerVersion": "6.0.99"}, "server 7.0.0 > maxServerVersion 6.0.99"),
    ({"maxServerVersion": "7.0"}, None),
    ({"topologies": ["single", "replicaset"]}, None),
    ({"topologies": ["sharded"]}, "topology replicaset not in ['sharded']"),
    ({"serverless": "require"}, "needs Atlas Serverless"),
    ({"serverless": "forbid"}, None),
    ({"auth": True}, "needs authentication enabled"),
    ({"auth": False}, None),
    ({"authMechanism": "PLAIN"}, "server does not support authMechanism PLAIN"),
    ({"serverParameters": {"x": 1}}, None),
    ({"serverParameters": {"x": 2}}, "server parameter x is not 2"),
    ({"serverParameters": {"nope": 1}}, "server parameter nope is not supported"),
    ({"csfle": True}, "needs client-side field level encryption (pymongocrypt is not installed)"),
    ({"csfle": False}, None),
])
def test_run_on_requirement(requirement: dict[str, Any], unmet: str | None) -> None:
    assert requirement_unmet_reason(requirement, _SERVER) == unmet


def test_sharded_replicaset_needs_replica_set_shards() -> None:
    req = {"topologies": ["sharded-replicaset"]}
    assert requirement_unmet_reason(req, ServerInfo((7, 0, 0), "sharded")) is not None
    assert requirement_unmet_reason(
        req, ServerInfo((7, 0, 0), "sharded", shards_are_replica_sets=True)) is None


def test_any_requirement_suffices() -> None:
    assert requirements_unmet_reason([], _SERVER) is None
    assert requirements_unmet_reason(
        [{"topologies": ["single"]}, {"minServerVersion": "4.0"}], _SERVER) is None
    reason = requirements_unmet_reason(
        [{"topologies": ["single"]}, {"minServerVersion": "8.0"}], _SERVER)
    assert reason is not None and "single" in reason and "8.0" in reason


def test_choose_topology_runs_the_most_tests() -> None:
    from spec_tests.unified.target import choose_topology

    tests = [{"runOnRequirements": [{"topologies": ["replicaset"]}]}, {}, {}]
    assert choose_topology([], tests) == "replicaset"
    assert choose_topology([{"topologies": ["sharded", "load-balanced"]}], [{}]) == "sharded"
    # Nothing can run (auth): still a topology the file accepts, so the reason says "auth".
    assert choose_topology([{"topologies": ["replicaset"], "auth": True}], [{}]) == "replicaset"


def test_choose_deployment_turns_auth_on_only_when_asked() -> None:
    from spec_tests.unified.target import choose_deployment

    assert choose_deployment([], [{}]) == ("single", False)
    assert choose_deployment([{"auth": True, "topologies": ["replicaset"]}], [{}]) == (
        "replicaset", True)
    assert choose_deployment([{"auth": False}], [{}]) == ("single", False)


def test_csfle_requirement_with_libmongocrypt() -> None:
    from spec_tests.unified.encryption import CSFLE_AVAILABLE, libmongocrypt_version

    if not CSFLE_AVAILABLE:
        pytest.skip("pymongocrypt is not installed")
    server = ServerInfo(version=(7, 0, 0), topology="replicaset", csfle=True)
    assert requirement_unmet_reason({"csfle": True}, server) is None
    assert requirement_unmet_reason({"csfle": False}, server) == (
        "forbidden when CSFLE is supported")
    assert requirement_unmet_reason({"csfle": {"minLibmongocryptVersion": "1.0.0"}},
                                    server) is None
    version = libmongocrypt_version()
    assert version is not None
    too_new = f"{version[0] + 1}.0.0"
    assert requirement_unmet_reason({"csfle": {"minLibmongocryptVersion": too_new}},
                                    server) == f"needs libmongocrypt {too_new}"

"""The read-write-concern suite's connection-string/ and document/ folders (its operation/
folder runs in the unified test runner)."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.uri import parse
from asyncmongo.errors import ConfigurationError
from spec_tests.support.uri_cases import cases, recorded_warnings


@pytest.mark.parametrize("case", cases("read-write-concern", "connection-string/*.json"))
def test_concern_from_connection_string(case: dict[str, Any]) -> None:
    if not case["valid"]:
        with pytest.raises(ConfigurationError):
            parse(case["uri"])
        return
    with recorded_warnings() as found:
        options = parse(case["uri"])
    if case.get("warning") is not None:
        assert bool(found) == case["warning"]
    if case.get("readConcern") is not None:
        assert options.read_concern.document == case["readConcern"]
    if case.get("writeConcern") is not None:
        expected = case["writeConcern"]
        assert options.write_concern == WriteConcern.from_document(expected)


@pytest.mark.parametrize("case", cases("read-write-concern", "document/*.json"))
def test_concern_document(case: dict[str, Any]) -> None:
    if "writeConcern" in case:
        check_write_concern(case)
    if "readConcern" in case:
        check_read_concern(case)


def check_write_concern(case: dict[str, Any]) -> None:
    if not case["valid"]:
        with pytest.raises(ConfigurationError):
            WriteConcern.from_document(case["writeConcern"])
        return
    concern = WriteConcern.from_document(case["writeConcern"])
    assert concern.document == case["writeConcernDocument"]
    assert concern.is_server_default == case["isServerDefault"]
    assert concern.acknowledged == case["isAcknowledged"]


def check_read_concern(case: dict[str, Any]) -> None:
    concern = ReadConcern(case["readConcern"].get("level"))
    assert case["valid"]
    assert concern.document == case["readConcernDocument"]
    assert concern.is_server_default == case["isServerDefault"]

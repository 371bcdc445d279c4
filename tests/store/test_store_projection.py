"""Find and $project projections (store.projection)."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.projection import compile_projection

DOC: dict[str, Any] = {"_id": 7, "a": 1, "b": {"c": 2, "d": 3},
                       "l": [{"x": 1, "y": 1}, {"x": 2, "y": 2}, 5], "n": [1, 2, 3, 4, 5]}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, DOC),
        ({}, DOC),
        ({"a": 1}, {"_id": 7, "a": 1}),
        ({"a": True, "_id": 0}, {"a": 1}),
        ({"_id": 1}, {"_id": 7}),
        ({"_id": 0}, {k: v for k, v in DOC.items() if k != "_id"}),
        ({"b.c": 1}, {"_id": 7, "b": {"c": 2}}),
        ({"l.x": 1}, {"_id": 7, "l": [{"x": 1}, {"x": 2}]}),
        ({"b.c": 0, "l": 0, "n": 0}, {"_id": 7, "a": 1, "b": {"d": 3}}),
        ({"l.y": 0, "b": 0, "n": 0, "_id": 0}, {"a": 1, "l": [{"x": 1}, {"x": 2}, 5]}),
        ({"n": {"$slice": 2}, "a": 1}, {"_id": 7, "a": 1, "n": [1, 2]}),
        ({"n": {"$slice": -2}}, {**DOC, "n": [4, 5]}),
        ({"n": {"$slice": [1, 2]}}, {**DOC, "n": [2, 3]}),
        ({"l": {"$elemMatch": {"x": 2}}}, {"_id": 7, "l": [{"x": 2, "y": 2}]}),
        ({"a": 1, "sum": {"$add": ["$a", "$b.c"]}}, {"_id": 7, "a": 1, "sum": 3}),
        ({"_id": 0, "label": {"$literal": 1}}, {"label": 1}),
        ({"_id": 0, "copy": "$b.d"}, {"copy": 3}),
    ],
)
def test_projections(spec: Any, expected: dict[str, Any]) -> None:
    assert compile_projection(spec)(DOC) == expected


def test_inclusion_keeps_document_order() -> None:
    assert list(compile_projection({"n": 1, "a": 1})(DOC)) == ["_id", "a", "n"]


def test_positional_projection_uses_the_query() -> None:
    project = compile_projection({"l.$": 1}, query={"l.x": 2})
    assert project(DOC) == {"_id": 7, "l": [{"x": 2, "y": 2}]}


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"a": 1, "b": 0}, 31254),
        ({"a": 0, "b": 1}, 31253),
        ({"a": 0, "x": {"$add": [1, 2]}}, 31254),
    ],
)
def test_mixed_projections_fail(spec: dict[str, Any], code: int) -> None:
    with pytest.raises(StoreError) as caught:
        compile_projection(spec)
    assert caught.value.code == code


def test_empty_project_stage_fails() -> None:
    with pytest.raises(StoreError) as caught:
        compile_projection({}, aggregate=True)
    assert caught.value.code == 51272


NESTED: dict[str, Any] = {"_id": 1, "a": [1, [{"b": 1, "c": 1}], {"b": 2, "c": 2}]}


@pytest.mark.parametrize(
    ("spec", "aggregate", "expected"),
    [
        # mongod's projection policies: find does not recurse into an array nested in an
        # array (inclusion drops it, exclusion keeps it whole); $project does
        ({"a.b": 1}, False, {"_id": 1, "a": [{"b": 2}]}),
        ({"a.b": 0}, False, {"_id": 1, "a": [1, [{"b": 1, "c": 1}], {"c": 2}]}),
        ({"a.b": 1}, True, {"_id": 1, "a": [[{"b": 1}], {"b": 2}]}),
        ({"a.b": 0}, True, {"_id": 1, "a": [1, [{"c": 1}], {"c": 2}]}),
    ],
)
def test_nested_arrays_by_projection_policy(spec: dict[str, Any], aggregate: bool,
                                            expected: dict[str, Any]) -> None:
    assert compile_projection(spec, aggregate=aggregate)(NESTED) == expected

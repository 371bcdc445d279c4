"""The harness's own pieces: the manual's rules it applies to jongodb's answers (each checked
on the manual's examples), the comparison's numeric rules, and the grammar's determinism."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.bson import Decimal128, Int64
from tests.differential_server import reference
from tests.differential_server.canonical import canonical, multiset
from tests.differential_server.deviations import JONGODB_DEVIATIONS, UNSUPPORTED
from tests.differential_server.grammar import Grammar


def ids(documents: list[dict[str, Any]]) -> list[Any]:
    return [document["_id"] for document in documents]


def test_sort_follows_the_manuals_order() -> None:
    documents = [{"_id": 1, "a": [3, 1]}, {"_id": 2, "a": []}, {"_id": 3},
                 {"_id": 4, "a": None}, {"_id": 5, "a": 2}, {"_id": 6, "a": {"b": 1}},
                 {"_id": 7, "a": "s"}, {"_id": 8, "a": Decimal128("2")}]
    # ascending: [] < null = missing < numbers (an array by its smallest) < string < object
    assert ids(reference.sort_documents(documents, {"a": 1, "_id": 1})) == [
        2, 3, 4, 1, 5, 8, 7, 6]
    # descending: an array by its largest element
    assert ids(reference.sort_documents(documents, {"a": -1, "_id": 1})) == [
        6, 7, 1, 5, 8, 3, 4, 2]


def test_documents_compare_value_type_before_field_name() -> None:
    assert reference.compare_values({"a": "x"}, {"b": 1}) == 1
    assert reference.compare_values({"a": 1}, {"b": 1}) == -1
    assert reference.compare_values({"a": 1}, {"a": 1, "b": 0}) == -1


@pytest.mark.parametrize(
    ("projection", "expected"),
    [
        ({"a.b": 1}, {"_id": 1, "a": [{"b": 1}, {}]}),
        ({"a.b": 0, "_id": 0}, {"a": [{"c": 2}, {"c": 3}, 5, [{"b": 4}]], "d": 6}),
        ({"d": 1, "_id": 0}, {"d": 6}),
    ],
)
def test_find_projection(projection: dict[str, Any], expected: dict[str, Any]) -> None:
    document = {"_id": 1, "a": [{"b": 1, "c": 2}, {"c": 3}, 5, [{"b": 4}]], "d": 6}
    assert reference.project(document, projection) == expected


def test_distinct_keeps_nested_arrays_and_indexes() -> None:
    documents = [{"a": [1, [2], 1.0]}, {"a": [[2], {"b": 1}]}, {"a": 3}]
    assert reference.distinct(documents, "a") == [1, [2], {"b": 1}, 3]
    assert reference.distinct([{"a": [[5], 6]}], "a.0") == [5]


def test_rewrites_keep_the_manuals_meaning() -> None:
    assert reference.rewrite_null_comparisons({"a": {"$gte": None}}) == {"a": {"$eq": None}}
    assert reference.rewrite_null_comparisons({"$or": [{"a": {"$lt": None}}]}) == {
        "$or": [{"a": {"$in": []}}]}
    expanded = reference.expand_numeric_equality({"a": 3, "b": {"$nin": [None, 2.5]}})
    assert expanded["a"] == {"$in": [3.0, 3, Int64(3), Decimal128("3"), Decimal128("3.0")]}
    assert expanded["b"] == {"$ne": None, "$nin": [2.5, Decimal128("2.5")]}


def test_numbers_compare_with_their_type() -> None:
    assert canonical(1) != canonical(1.0)
    assert canonical(Int64(1)) != canonical(1)
    assert canonical(Decimal128("3.0")) == canonical(Decimal128("3"))
    assert canonical({"a": 1, "b": 2}) != canonical({"b": 2, "a": 1})
    assert multiset([1, 2.0], typed=False) == multiset([2, 1.0], typed=False)


def test_grammar_is_seeded() -> None:
    assert Grammar(7).case() == Grammar(7).case()
    assert {Grammar(seed).case().kind for seed in range(50)} == {
        "find", "count", "distinct", "update", "aggregate"}


def test_every_deviation_states_mongods_behaviour() -> None:
    for deviation in [*JONGODB_DEVIATIONS.values(), *UNSUPPORTED.values()]:
        assert deviation.mongod and deviation.reason
    assert not set(JONGODB_DEVIATIONS) & set(UNSUPPORTED)

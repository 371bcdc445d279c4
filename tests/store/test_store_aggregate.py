"""Aggregation pipelines and expressions (store.aggregate, store.expressions)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from asyncmongo.bson.types import Int64
from asyncmongo.testing.store.aggregate import PipelineContext, run_pipeline
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.expressions import evaluate

DOCS: list[dict[str, Any]] = [
    {"_id": 1, "g": "a", "v": 1, "tags": ["x", "y"]},
    {"_id": 2, "g": "b", "v": 2, "tags": []},
    {"_id": 3, "g": "a", "v": 3.5},
    {"_id": 4, "g": "b", "v": None, "tags": "z"},
]
CONTEXT = PipelineContext("db")


def run(pipeline: list[dict[str, Any]], docs: list[dict[str, Any]] | None = None) -> Any:
    return run_pipeline(DOCS if docs is None else docs, pipeline, CONTEXT)


def test_match_sort_skip_limit() -> None:
    result = run([{"$match": {"v": {"$gt": 0}}}, {"$sort": {"v": -1}}, {"$skip": 1},
                  {"$limit": 1}])
    assert [d["_id"] for d in result] == [2]


def test_group_accumulators() -> None:
    result = run([{"$group": {
        "_id": "$g",
        "sum": {"$sum": "$v"},
        "count": {"$sum": 1},
        "avg": {"$avg": "$v"},
        "min": {"$min": "$v"},
        "max": {"$max": "$v"},
        "first": {"$first": "$v"},
        "last": {"$last": "$v"},
        "all": {"$push": "$v"},
        "set": {"$addToSet": "$g"},
        "n": {"$count": {}},
    }}, {"$sort": {"_id": 1}}])
    assert result == [
        {"_id": "a", "sum": 4.5, "count": 2, "avg": 2.25, "min": 1, "max": 3.5, "first": 1,
         "last": 3.5, "all": [1, 3.5], "set": ["a"], "n": 2},
        {"_id": "b", "sum": 2, "count": 2, "avg": 2.0, "min": 2, "max": 2, "first": 2,
         "last": None, "all": [2, None], "set": ["b"], "n": 2},
    ]


def test_group_by_null_and_compound_keys() -> None:
    assert run([{"$group": {"_id": None, "n": {"$sum": 1}}}]) == [{"_id": None, "n": 4}]
    keys = [d["_id"] for d in run([{"$group": {"_id": {"g": "$g"}}}])]
    assert keys == [{"g": "a"}, {"g": "b"}]


def test_count_and_sort_by_count() -> None:
    assert run([{"$count": "total"}]) == [{"total": 4}]
    assert run([{"$match": {"nope": 1}}, {"$count": "total"}]) == []
    assert run([{"$sortByCount": "$g"}])[0]["count"] == 2


def test_unwind() -> None:
    assert [d["tags"] for d in run([{"$unwind": "$tags"}])] == ["x", "y", "z"]
    preserved = run([{"$unwind": {"path": "$tags", "preserveNullAndEmptyArrays": True,
                                  "includeArrayIndex": "i"}}])
    assert [(d["_id"], d.get("tags"), d["i"]) for d in preserved] == [
        (1, "x", Int64(0)), (1, "y", Int64(1)), (2, None, None), (3, None, None),
        (4, "z", None)]
    assert "tags" not in preserved[2]


def test_project_add_fields_unset_replace_root() -> None:
    result = run([{"$match": {"_id": 1}}, {"$project": {"g": 1, "double": {"$multiply": [
        "$v", 2]}}}, {"$addFields": {"sub.x": 1, "g": {"$toUpper": "$g"}}}, {"$unset": "_id"}])
    assert result == [{"g": "A", "double": 2, "sub": {"x": 1}}]
    assert run([{"$match": {"_id": 1}}, {"$replaceWith": {"t": "$tags"}}]) == [
        {"t": ["x", "y"]}]
    assert run([{"$match": {"_id": 1}}, {"$replaceRoot": {"newRoot": {"v": "$v"}}}]) == [
        {"v": 1}]


def test_facet() -> None:
    result = run([{"$facet": {"n": [{"$count": "n"}], "ids": [{"$project": {"_id": 1}}]}}])
    assert result == [{"n": [{"n": 4}], "ids": [{"_id": 1}, {"_id": 2}, {"_id": 3},
                                                {"_id": 4}]}]


@pytest.mark.parametrize(
    ("pipeline", "code"),
    [
        ([{"$nope": {}}], 40324),
        ([{"$match": {}, "$limit": 1}], 40323),
        ([{"$limit": 0}], 15958),
        ([{"$skip": -1}], 15956),
        ([{"$group": {"v": {"$sum": 1}}}], 15955),
        ([{"$group": {"_id": 1, "v": {"$median": 1}}}], 15952),
        ([{"$project": {"x": {"$nope": 1}}}], 168),
        ([{"$out": "x"}, {"$match": {}}], 40601),
    ],
)
def test_pipeline_errors(pipeline: list[dict[str, Any]], code: int) -> None:
    with pytest.raises(StoreError) as caught:
        run(pipeline)
    assert caught.value.code == code


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$add": [1, 2.5]}, 3.5),
        ({"$add": [2**31 - 1, 1]}, Int64(2**31)),
        ({"$subtract": [5, "$missing"]}, None),
        ({"$divide": [7, 2]}, 3.5),
        ({"$mod": [-7, 3]}, -1),
        ({"$cond": [{"$gte": ["$v", 1]}, "big", "small"]}, "big"),
        ({"$cond": {"if": False, "then": 1, "else": 2}}, 2),
        ({"$ifNull": ["$missing", "$v"]}, 1),
        ({"$concat": ["a", "$g"]}, "aa"),
        ({"$size": "$tags"}, 2),
        ({"$arrayElemAt": ["$tags", -1]}, "y"),
        ({"$in": ["x", "$tags"]}, True),
        ({"$and": [1, "$v"]}, True),
        ({"$or": [0, None]}, False),
        ({"$not": [0]}, True),
        ({"$cmp": ["$v", 2]}, -1),
        ({"$sum": [1, 2, "x"]}, 3),
        ({"$max": [1, 5, None]}, 5),
        ({"$type": "$missing"}, "missing"),
        ({"$concatArrays": ["$tags", [1]]}, ["x", "y", 1]),
        ({"$mergeObjects": [{"a": 1}, {"b": 2}]}, {"a": 1, "b": 2}),
        ("$$ROOT._id", 1),
        ({"$literal": "$v"}, "$v"),
    ],
)
def test_expressions(expression: Any, expected: Any) -> None:
    value = evaluate(expression, DOCS[0])
    assert value == expected
    assert type(value) is type(expected)


def test_divide_by_zero() -> None:
    with pytest.raises(StoreError, match="can't \\$divide by zero"):
        evaluate({"$divide": [1, 0]}, {})


def test_lookup_with_let_and_pipeline() -> None:
    from asyncmongo.testing.store import Store

    store = Store()
    store.handle("db", {"insert": "orders", "documents": [{"_id": 1, "item": "a", "qty": 5}]})
    store.handle("db", {"insert": "stock", "documents": [
        {"_id": 10, "item": "a", "n": 3}, {"_id": 11, "item": "a", "n": 9},
        {"_id": 12, "item": "b", "n": 9}]})
    reply = store.handle("db", {"aggregate": "orders", "cursor": {}, "pipeline": [
        {"$lookup": {"from": "stock", "let": {"want": "$qty", "item": "$item"},
                     "pipeline": [{"$match": {"$expr": {"$and": [
                         {"$eq": ["$item", "$$item"]}, {"$gte": ["$n", "$$want"]}]}}},
                         {"$project": {"_id": 1}}],
                     "as": "enough"}}]})
    assert reply["cursor"]["firstBatch"] == [
        {"_id": 1, "item": "a", "qty": 5, "enough": [{"_id": 11}]}]


@pytest.mark.parametrize(("direction", "expected"), [(1, [2, 3, 4, 5, 1]), (-1, [5, 1, 3, 4, 2])])
def test_an_empty_array_sorts_below_null_and_missing(direction: int, expected: list[int]) -> None:
    """The manual (Comparison/Sort Order): "a comparison of an empty array considers the empty
    array as less than a null value or a missing field value"; a nested empty array is an
    array value (above every number)."""
    docs = [{"_id": 1, "a": [3]}, {"_id": 2, "a": []}, {"_id": 3}, {"_id": 4, "a": None},
            {"_id": 5, "a": [[], 0]}]
    result = run([{"$sort": {"a": direction, "_id": 1}}], docs)
    assert [d["_id"] for d in result] == expected


DATE = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"$add": ["$d", 1000]}, DATE + datetime.timedelta(seconds=1)),
        ({"$add": [1000, "$d", 0.5]}, DATE + datetime.timedelta(milliseconds=1001)),
        ({"$subtract": ["$d", 60000]}, DATE - datetime.timedelta(minutes=1)),
        ({"$subtract": [{"$add": ["$d", 86400000]}, "$d"]}, Int64(86400000)),
        ({"$add": ["$d", None, "x"]}, None),
    ],
)
def test_date_arithmetic(expression: dict[str, Any], expected: Any) -> None:
    """$add takes one date and milliseconds; $subtract a date from a date gives a long."""
    assert evaluate(expression, {"d": DATE}) == expected


@pytest.mark.parametrize(
    ("expression", "code", "message"),
    [
        ({"$add": ["$d", "$d"]}, 16612, "only one date allowed in an $add expression"),
        ({"$add": ["$d", "x"]}, 16554, "$add only supports numeric or date types, not string"),
        ({"$subtract": [5, "$d"]}, 16556, "can't $subtract date from int"),
        ({"$subtract": ["$d", "x"]}, 16613, "can't $subtract string from Date"),
    ],
)
def test_date_arithmetic_errors(expression: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(StoreError) as refused:
        evaluate(expression, {"d": DATE})
    assert (refused.value.code, refused.value.errmsg) == (code, message)

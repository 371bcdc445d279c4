"""Query operators, dotted paths and MongoDB's array semantics (store.matcher)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from asyncmongo.bson.types import Int64, Regex
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.matcher import compile_filter, matches

DOCS: list[dict[str, Any]] = [
    {"_id": 0, "a": 1, "s": "apple", "t": ["x", "y"]},
    {"_id": 1, "a": 2.5, "s": "Banana", "t": ["y"], "n": {"b": 1, "c": [1, 2]}},
    {"_id": 2, "a": [1, 5], "s": None, "n": {"b": 2}},
    {"_id": 3, "a": {"b": 3}, "arr": [{"b": 1, "c": 1}, {"b": 2, "c": 2}]},
    {"_id": 4, "a": Int64(5), "arr": [{"b": 1, "c": 2}], "t": []},
    {"_id": 5},
]


def ids(query: dict[str, Any]) -> list[int]:
    predicate = compile_filter(query)
    return [d["_id"] for d in DOCS if predicate(d)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, [0, 1, 2, 3, 4, 5]),
        ({"a": 1}, [0, 2]),
        ({"a": 5}, [2, 4]),
        ({"a": 1.0}, [0, 2]),
        ({"a": [1, 5]}, [2]),
        ({"a": {"b": 3}}, [3]),
        ({"a.b": 3}, [3]),
        ({"a": {"$eq": 1}}, [0, 2]),
        ({"a": {"$ne": 1}}, [1, 3, 4, 5]),
        ({"a": {"$gt": 1}}, [1, 2, 4]),
        ({"a": {"$gte": 2.5}}, [1, 2, 4]),
        ({"a": {"$lt": 2}}, [0, 2]),
        ({"a": {"$lte": 1}}, [0, 2]),
        ({"a": {"$gt": 1, "$lt": 5}}, [1, 2]),
        ({"s": {"$gt": "a"}}, [0]),
        ({"a": {"$in": [2.5, 5]}}, [1, 2, 4]),
        ({"a": {"$nin": [1, 5]}}, [1, 3, 5]),
        ({"s": {"$in": [re.compile("^b", re.IGNORECASE)]}}, [1]),
        ({"s": None}, [2, 3, 4, 5]),
        ({"s": {"$ne": None}}, [0, 1]),
        ({"s": {"$exists": True}}, [0, 1, 2]),
        ({"s": {"$exists": False}}, [3, 4, 5]),
        ({"n.c": 2}, [1]),
        ({"n.c.1": 2}, [1]),
        ({"a.1": 5}, [2]),
        ({"arr.b": 2}, [3]),
        ({"arr.1.c": 2}, [3]),
        ({"arr": {"$elemMatch": {"b": 1, "c": 2}}}, [4]),
        ({"arr.b": 1, "arr.c": 2}, [3, 4]),  # without $elemMatch: different elements may match
        ({"a": {"$elemMatch": {"$gt": 2}}}, [2]),
        ({"t": {"$size": 0}}, [4]),
        ({"t": {"$size": 2}}, [0]),
        ({"t": {"$all": ["x", "y"]}}, [0]),
        ({"t": {"$all": ["y"]}}, [0, 1]),
        ({"t": {"$all": []}}, []),
        ({"arr": {"$all": [{"$elemMatch": {"b": 2}}]}}, [3]),
        ({"a": {"$mod": [2, 1]}}, [0, 2, 4]),
        ({"a": {"$mod": [2, 0]}}, [1]),  # 2.5 truncates to 2
        ({"a": {"$type": "double"}}, [1]),
        ({"a": {"$type": "number"}}, [0, 1, 2, 4]),
        ({"a": {"$type": "long"}}, [4]),
        ({"a": {"$type": ["object", 16]}}, [0, 2, 3]),
        ({"a": {"$type": "array"}}, [2]),
        ({"s": {"$regex": "^a"}}, [0]),
        ({"s": {"$regex": "^b", "$options": "i"}}, [1]),
        ({"s": Regex("AN", "i")}, [1]),
        ({"s": {"$not": {"$regex": "^a"}}}, [1, 2, 3, 4, 5]),
        ({"s": {"$not": re.compile("^a")}}, [1, 2, 3, 4, 5]),
        ({"a": {"$not": {"$gt": 1}}}, [0, 3, 5]),
        ({"$or": [{"a": 1}, {"s": "Banana"}]}, [0, 1, 2]),
        ({"$and": [{"a": {"$gt": 0}}, {"a": {"$lt": 2}}]}, [0, 2]),
        ({"$nor": [{"a": 1}, {"s": {"$exists": True}}]}, [3, 4, 5]),
        ({"$expr": {"$gt": ["$a", 2]}}, [1, 2, 3, 4]),
        ({"$comment": "ignored", "a": 1}, [0, 2]),
    ],
)
def test_filters(query: dict[str, Any], expected: list[int]) -> None:
    assert ids(query) == expected


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"a": {"$foo": 1}}, "unknown operator: $foo"),
        ({"$foo": 1}, "unknown top level operator: $foo"),
        ({"$where": "this.a == 1"}, "it has no JavaScript engine"),
        ({"$and": []}, "$and must be a nonempty array"),
        ({"$or": [1]}, "$or argument's entries must be objects"),
        ({"a": {"$in": 1}}, "$in needs an array"),
        ({"a": {"$size": -1}}, "$size"),
        ({"a": {"$size": "x"}}, "$size needs a number"),
        ({"a": {"$all": 1}}, "$all needs an array"),
        ({"a": {"$elemMatch": 1}}, "$elemMatch needs an Object"),
        ({"a": {"$mod": [0, 1]}}, "divisor cannot be 0"),
        ({"a": {"$mod": [1]}}, "not enough elements"),
        ({"a": {"$type": "nope"}}, "Unknown type name alias: nope"),
        ({"a": {"$type": 99}}, "Invalid numerical type code: 99"),
        ({"a": {"$not": {}}}, "$not cannot be empty"),
        ({"a": {"$options": "i"}}, "$options needs a $regex"),
    ],
)
def test_bad_filters_raise_bad_value(query: dict[str, Any], message: str) -> None:
    with pytest.raises(StoreError) as caught:
        compile_filter(query)
    assert caught.value.code == 2
    assert message in caught.value.errmsg


def test_invalid_regex_gives_51091() -> None:
    with pytest.raises(StoreError) as caught:
        matches({"s": {"$regex": "("}}, {"s": "x"})
    assert caught.value.code == 51091


def test_unknown_expression_operator_in_expr() -> None:
    with pytest.raises(StoreError) as caught:
        compile_filter({"$expr": {"$nope": 1}})
    assert caught.value.code == 168

"""MongoDB's behaviour where jongodb disagrees (see asyncmongo/testing/store/__init__.py).

Each case is a documented MongoDB rule; the differential test accepts jongodb's different
answer only for these shapes, so these tests pin what the store does instead.
"""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.bson.types import Int64
from asyncmongo.testing.store.matcher import matches
from asyncmongo.testing.store.update import UpdateContext, apply_update


@pytest.mark.parametrize(
    ("query", "document", "expected"),
    [
        # Numbers compare by value across types.
        ({"a": 3.0}, {"a": 3}, True),
        ({"a": {"$ne": 3.0}}, {"a": 3}, False),
        # Documents and arrays compare in BSON order within their bracket.
        ({"a": {"$gt": {"x": 1}}}, {"a": {"x": 2}}, True),
        ({"a": {"$gt": {"x": 1}}}, {"a": {"x": "s"}}, True),  # string bracket > number
        ({"a": {"$lt": [2]}}, {"a": [1, 9]}, True),
        ({"a": {"$gt": {}}}, {"a": 5}, False),  # different bracket: never matches
        # $all is $and of equalities, so it matches scalars and null/missing.
        ({"a": {"$all": [1]}}, {"a": 1}, True),
        ({"a": {"$all": [None]}}, {}, True),
        # $mod truncates the dividend; one array level only.
        ({"a": {"$mod": [2, 0]}}, {"a": 2.9}, True),
        ({"a": {"$mod": [3, 0]}}, {"a": [[3]]}, False),
        # null also matches a missing field for $lte/$gte/$nin.
        ({"a": {"$lte": None}}, {}, True),
        ({"a": {"$gte": None}}, {"a": None}, True),
        ({"a": {"$nin": [None]}}, {}, False),
        # $regex expands one array level only; an array element may equal an array value.
        ({"a": {"$regex": "x"}}, {"a": [["x"]]}, False),
        ({"a": []}, {"a": [[], 1]}, True),
        # A numeric path component indexes the array; embedded documents without a field
        # named "0" do not make it "missing".
        ({"a.0": None}, {"a": [{"y": 1}, 2]}, False),
        ({"a.0": 5}, {"a": [{"0": 5}]}, True),
    ],
)
def test_query_rules(query: dict[str, Any], document: dict[str, Any], expected: bool) -> None:
    assert matches(query, document) is expected


@pytest.mark.parametrize(
    ("document", "update", "expected"),
    [
        ({"_id": 1, "b": [1, 2]}, {"$unset": {"b.0": ""}}, {"_id": 1, "b": [None, 2]}),
        ({"_id": 1, "a": [0]}, {"$set": {"a.2": 5}}, {"_id": 1, "a": [0, None, 5]}),
        ({"_id": 1, "a": [0]}, {"$addToSet": {"a.1": 3}}, {"_id": 1, "a": [0, [3]]}),
        ({"_id": 1, "b": {"x": 1}}, {"$addToSet": {"b.0": 2}}, {"_id": 1, "b": {"x": 1, "0": [2]}}),
        ({"_id": 1, "n": 2**31 - 1}, {"$inc": {"n": 1}}, {"_id": 1, "n": Int64(2**31)}),
    ],
)
def test_update_rules(document: dict[str, Any], update: dict[str, Any],
                      expected: dict[str, Any]) -> None:
    result = apply_update(document, update, UpdateContext())
    assert result == expected
    assert [type(v) for v in result.values()] == [type(v) for v in expected.values()]

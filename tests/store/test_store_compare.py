"""BSON ordering and equality as MongoDB defines them (asyncmongo.testing.store.compare)."""

from __future__ import annotations

import datetime
import functools
import itertools
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncmongo.bson.binary import Binary
from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.types import Int64, MaxKey, MinKey, Regex, Timestamp
from asyncmongo.testing.store.compare import (
    bson_type_code,
    compare,
    hash_key,
    type_name,
    values_equal,
)

DATE = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
OID = ObjectId("0123456789abcdef01234567")

# One value per type bracket, in MongoDB's order.
ORDERED = [
    MinKey(),
    None,
    -5,
    "a",
    {"a": 1},
    [1],
    Binary(b"x", 0),
    OID,
    False,
    DATE,
    Timestamp(1, 1),
    Regex("a"),
    MaxKey(),
]


@pytest.mark.parametrize("index", range(len(ORDERED) - 1))
def test_type_brackets_are_ordered(index: int) -> None:
    assert compare(ORDERED[index], ORDERED[index + 1]) == -1
    assert compare(ORDERED[index + 1], ORDERED[index]) == 1


def test_sorting_a_mixture_follows_the_brackets() -> None:
    shuffled = list(reversed(ORDERED))
    assert sorted(shuffled, key=functools.cmp_to_key(compare)) == ORDERED


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (1, 1.0, 0),
        (1, Int64(1), 0),
        (Decimal128("1.0"), 1, 0),
        (1, 1.5, -1),
        (2**53 + 1, float(2**53), 1),
        (float("nan"), -float("inf"), -1),
        (float("nan"), float("nan"), 0),
        (Decimal128("NaN"), float("nan"), 0),
        (Decimal128("Infinity"), float("inf"), 0),
        (Decimal128("-Infinity"), -(2**62), -1),
        (True, False, 1),
        ("B", "a", -1),
        ("ab", "a", 1),
    ],
)
def test_scalars(a: Any, b: Any, expected: int) -> None:
    assert compare(a, b) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"a": 1}, {"a": 1.0}, 0),
        ({"a": 1}, {"b": 1}, -1),
        ({"a": 1}, {"a": 1, "b": 1}, -1),
        ({"a": "x"}, {"a": 5}, 1),  # the value's type bracket decides before the name
        ({"b": 1, "a": 1}, {"a": 1, "b": 1}, 1),  # field order matters
        ([1, 2], [1, 2, 0], -1),
        ([2], [1, 5], 1),
        (Binary(b"zz", 0), Binary(b"aaa", 0), -1),  # length first
        (Binary(b"a", 1), Binary(b"a", 0), 1),  # then subtype
        (Timestamp(1, 2), Timestamp(2, 1), -1),
        (DATE, DATE.replace(tzinfo=None), 0),  # naive means UTC
        (Regex("a", "i"), Regex("a", ""), 1),
        (re.compile("a"), Regex("a"), 0),
    ],
)
def test_structures(a: Any, b: Any, expected: int) -> None:
    assert compare(a, b) == expected


def test_hash_key_agrees_with_equality() -> None:
    equal_groups = [
        [1, 1.0, Int64(1), Decimal128("1"), Decimal128("1.00")],
        [{"a": 1}, {"a": 1.0}],
        [[1, "x"], [Int64(1), "x"]],
        [float("nan"), Decimal128("NaN")],
    ]
    for group in equal_groups:
        assert len({hash_key(v) for v in group}) == 1, group
        assert all(values_equal(group[0], v) for v in group)
    assert hash_key(True) != hash_key(1)
    assert hash_key({"a": 1, "b": 2}) != hash_key({"b": 2, "a": 1})


@pytest.mark.parametrize(
    ("value", "code", "name"),
    [
        (1.5, 1, "double"),
        ("s", 2, "string"),
        ({}, 3, "object"),
        ([], 4, "array"),
        (b"x", 5, "binData"),
        (OID, 7, "objectId"),
        (True, 8, "bool"),
        (DATE, 9, "date"),
        (None, 10, "null"),
        (Regex("a"), 11, "regex"),
        (5, 16, "int"),
        (2**40, 18, "long"),
        (Int64(5), 18, "long"),
        (Timestamp(1, 1), 17, "timestamp"),
        (Decimal128("1"), 19, "decimal"),
        (MinKey(), -1, "minKey"),
        (MaxKey(), 127, "maxKey"),
    ],
)
def test_type_codes(value: Any, code: int, name: str) -> None:
    assert bson_type_code(value) == code
    assert type_name(value) == name


def test_a_non_bson_value_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not a BSON value"):
        compare(object(), 1)


# --- properties: compare is a total order and hash_key agrees with it -------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(Int64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**6), max_value=10**6).map(lambda i: Decimal128(str(i))),
    st.sampled_from([Decimal128("NaN"), Decimal128("Infinity"), Decimal128("-0.5")]),
    st.text(max_size=3),
    st.binary(max_size=3),
    st.sampled_from([OID, DATE, Timestamp(1, 2), Regex("a", "i"), MinKey(), MaxKey()]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from("abc"), inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(_values, _values)
def test_compare_is_antisymmetric_and_agrees_with_hash_key(a: Any, b: Any) -> None:
    assert compare(a, b) == -compare(b, a)
    assert compare(a, a) == 0
    assert (compare(a, b) == 0) == (hash_key(a) == hash_key(b))


@settings(max_examples=80, deadline=None)
@given(st.lists(_values, min_size=3, max_size=6))
def test_sorting_is_consistent(values: list[Any]) -> None:
    ordered = sorted(values, key=functools.cmp_to_key(compare))
    for first, second in itertools.pairwise(ordered):
        assert compare(first, second) <= 0
    for x in ordered:
        for y in ordered:
            for z in ordered:
                if compare(x, y) <= 0 and compare(y, z) <= 0:
                    assert compare(x, z) <= 0

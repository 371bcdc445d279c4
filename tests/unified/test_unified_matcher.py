"""The unified runner's matcher: Evaluating Matches and every special operator."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import pytest

from asyncmongo.bson import Binary, Code, Decimal128, Int64, ObjectId, Timestamp
from spec_tests.unified.matcher import (
    IterableResult,
    MatchError,
    TestFormatError,
    bson_type_name,
    is_operator,
    match,
)


class _Entities:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {"oid": ObjectId("000000000000000000000001")}
        self.lsids = {"session0": {"id": Binary(b"\x01" * 16, 4)}}

    def bson_entity(self, name: str) -> Any:
        if name not in self.values:
            raise TestFormatError(f"no entity {name}")
        return self.values[name]

    def session_lsid(self, name: str) -> Mapping[str, Any]:
        if name not in self.lsids:
            raise TestFormatError(f"no session {name}")
        return self.lsids[name]


def _fails(expected: Any, actual: Any, **kwargs: Any) -> str:
    with pytest.raises(MatchError) as info:
        match(expected, actual, _Entities(), **kwargs)
    return str(info.value)


def test_root_document_allows_extra_keys_nested_does_not() -> None:
    match({"x": 1}, {"x": 1, "y": 2})
    assert "unexpected keys ['z']" in _fails({"x": {"y": 1}}, {"x": {"y": 1, "z": 1}})
    assert "unexpected keys" in _fails({"x": 1}, {"x": 1, "y": 1}, root=False)


def test_missing_key_and_key_order() -> None:
    match({"x": 1, "y": 1}, {"y": 1, "x": 1})
    assert "$.y: missing" in _fails({"x": 1, "y": 1}, {"x": 1})


def test_arrays_same_length_and_elements_not_root() -> None:
    match([1, 2], [1, 2])
    assert "expected 3 elements, got 4" in _fails([1, 2, 3], [1, 2, 3, 4])
    assert "$[1]: expected 2" in _fails([1, 2], [1, 3])
    assert "unexpected keys" in _fails([{"x": 1}], [{"x": 1, "y": 1}])


def test_iterable_results_have_root_level_elements() -> None:
    match([{"x": 1}], IterableResult([{"x": 1, "y": 1}]))


def test_flexible_numerics_but_not_bool_or_decimal() -> None:
    match(1, 1.0)
    match(1, Int64(1))
    match({"ok": 1}, {"ok": 1.0})
    _fails(1, 1.5)
    _fails(1, True)
    _fails(True, 1)
    _fails(Decimal128("1"), 1)
    match(2**40, Int64(2**40))


def test_scalars_compare_by_type() -> None:
    _fails("1", 1)
    _fails(None, 0)
    match(b"ab", Binary(b"ab", 0))
    _fails(b"ab", Binary(b"ab", 4))
    match(Timestamp(1, 2), Timestamp(1, 2))
    when = datetime.datetime(2020, 1, 1)
    match(when, when)


def test_exists() -> None:
    match({"a": {"$$exists": True}}, {"a": None})
    match({"a": {"$$exists": False}}, {"b": 1})
    assert "expected to be absent" in _fails({"a": {"$$exists": False}}, {"a": 1})
    assert "expected to exist" in _fails({"a": {"$$exists": True}}, {})


def test_type_single_list_and_number_alias() -> None:
    match({"a": {"$$type": "int"}}, {"a": 1})
    match({"a": {"$$type": ["int", "long"]}}, {"a": Int64(5)})
    match({"a": {"$$type": "long"}}, {"a": 2**40})
    match({"a": {"$$type": "number"}}, {"a": 1.5})
    match({"a": {"$$type": "number"}}, {"a": Decimal128("1")})
    match({"a": {"$$type": "array"}}, {"a": ["x"]})
    match({"$$type": "objectId"}, ObjectId())
    _fails({"a": {"$$type": "string"}}, {"a": 1})
    _fails({"a": {"$$type": "int"}}, {})
    _fails({"a": {"$$type": "number"}}, {"a": True})


def test_type_names() -> None:
    assert bson_type_name(True) == "bool"
    assert bson_type_name(Code("x")) == "javascript"
    assert bson_type_name(Code("x", {"a": 1})) == "javascriptWithScope"
    assert bson_type_name({}) == "object"
    assert bson_type_name(None) == "null"
    assert bson_type_name(datetime.datetime(2020, 1, 1)) == "date"


def test_unset_or_matches() -> None:
    match({"a": {"$$unsetOrMatches": 2}}, {})
    match({"a": {"$$unsetOrMatches": 2}}, {"a": 2})
    _fails({"a": {"$$unsetOrMatches": 2}}, {"a": 3})
    match({"$$unsetOrMatches": {"n": 1}}, {"n": 1, "extra": 1})
    _fails({"a": {"$$unsetOrMatches": {"n": 1}}}, {"a": {"n": 1, "extra": 1}})


def test_matches_entity_and_session_lsid() -> None:
    ents = _Entities()
    match({"_id": {"$$matchesEntity": "oid"}}, {"_id": ObjectId("000000000000000000000001")}, ents)
    _fails({"_id": {"$$matchesEntity": "oid"}}, {"_id": ObjectId()})
    with pytest.raises(TestFormatError):
        match({"_id": {"$$matchesEntity": "nope"}}, {"_id": 1}, _Entities())
    match({"lsid": {"$$sessionLsid": "session0"}}, {"lsid": {"id": Binary(b"\x01" * 16, 4)}}, ents)
    _fails({"lsid": {"$$sessionLsid": "session0"}}, {"lsid": {"id": Binary(b"\x02" * 16, 4)}})
    with pytest.raises(TestFormatError):
        match({"$$sessionLsid": "session9"}, {}, _Entities())
    with pytest.raises(TestFormatError):
        match({"$$sessionLsid": "session0"}, {})


def test_matches_hex_bytes() -> None:
    match({"$$matchesHexBytes": "12ab"}, b"\x12\xab")
    match({"$$matchesHexBytes": ""}, b"")
    _fails({"$$matchesHexBytes": "12ab"}, b"\x12")
    with pytest.raises(TestFormatError):
        match({"$$matchesHexBytes": "123"}, b"\x12")


def test_lte() -> None:
    match({"$$lte": 1}, 1.0)
    match({"$$lte": 1}, 0)
    _fails({"$$lte": 1}, 1.1)
    _fails({"$$lte": 1}, "0")


def test_match_as_document_and_root() -> None:
    match({"$$matchAsDocument": {"a": Int64(1)}}, '{"a": 1}')
    match({"$$matchAsDocument": {"a": 1}}, '{"a": {"$numberLong": "1"}}')
    _fails({"$$matchAsDocument": {"a": 1}}, '{"a": 1, "b": 2}')
    match({"$$matchAsDocument": {"$$matchAsRoot": {"a": 1}}}, '{"a": 1, "b": 2}')
    match({"x": {"$$matchAsRoot": {"a": 1}}}, {"x": {"a": 1, "b": 2}})


def test_unknown_operator_is_a_format_error() -> None:
    with pytest.raises(TestFormatError):
        match({"$$nope": 1}, 1)


def test_is_operator() -> None:
    assert is_operator({"$$exists": True})
    assert not is_operator({"$exists": True})
    assert not is_operator({"$$exists": True, "b": 1})

"""Extended JSON (specs/extended-json): generators, parsers, legacy forms, options, errors."""

from __future__ import annotations

import json
import math
import re
import uuid
from collections import OrderedDict
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncmongo.bson.binary import Binary
from asyncmongo.bson.codec import encode
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.dbref import DBRef
from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.errors import InvalidBinary, InvalidDocument, InvalidExtendedJSON
from asyncmongo.bson.json_util import (
    CANONICAL_JSON_OPTIONS,
    RELAXED_JSON_OPTIONS,
    JSONMode,
    JSONOptions,
    dumps,
    loads,
    object_hook,
    object_pairs_hook,
)
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.bson.types import (
    Code,
    DatetimeConversion,
    DatetimeMS,
    DBPointer,
    Int64,
    MaxKey,
    MinKey,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
    UuidRepresentation,
)

STANDARD_CANONICAL = CANONICAL_JSON_OPTIONS.with_options(
    uuid_representation=UuidRepresentation.STANDARD
)
LEGACY = RELAXED_JSON_OPTIONS.with_options(accept_legacy=True)


def _as_json(text: str) -> Any:
    return json.loads(text, object_pairs_hook=list)


# -- generators --------------------------------------------------------------------------


def test_spec_canonical_example() -> None:
    """The "Canonical Extended JSON Example" of specs/extended-json, key for key."""
    document = {
        "_id": ObjectId("57e193d7a9cc81b4027498b5"),
        "String": "string",
        "Int32": 42,
        "Int64": Int64(42),
        "Double": 42.42,
        "Decimal": Decimal128("1234.5"),
        "Binary": uuid.UUID("c8edabc3-f738-4ca3-b68d-ab92a91478a3"),
        "BinaryUserDefined": Binary(b"123", 80),
        "Code": Code("function() {}"),
        "CodeWithScope": Code("function() {}", scope={}),
        "Subdocument": {"foo": "bar"},
        "Array": [1, 2, 3, 4, 5],
        "Timestamp": Timestamp(42, 1),
        "RegularExpression": Regex("foo*", "xi"),
        "DatetimeEpoch": datetime(1970, 1, 1),
        "DatetimePositive": datetime.max,
        "DatetimeNegative": datetime.min,
        "True": True,
        "False": False,
        "DBRef": DBRef("collection", ObjectId("57e193d7a9cc81b4027498b1"), database="database"),
        "DBRefNoDB": DBRef("collection", ObjectId("57fd71e96e32ab4225b723fb")),
        "Minkey": MinKey(),
        "Maxkey": MaxKey(),
        "Null": None,
    }
    expected = """{
      "_id": {"$oid": "57e193d7a9cc81b4027498b5"}, "String": "string",
      "Int32": {"$numberInt": "42"}, "Int64": {"$numberLong": "42"},
      "Double": {"$numberDouble": "42.42"}, "Decimal": {"$numberDecimal": "1234.5"},
      "Binary": {"$binary": {"base64": "yO2rw/c4TKO2jauSqRR4ow==", "subType": "04"}},
      "BinaryUserDefined": {"$binary": {"base64": "MTIz", "subType": "50"}},
      "Code": {"$code": "function() {}"},
      "CodeWithScope": {"$code": "function() {}", "$scope": {}},
      "Subdocument": {"foo": "bar"},
      "Array": [{"$numberInt": "1"}, {"$numberInt": "2"}, {"$numberInt": "3"},
                {"$numberInt": "4"}, {"$numberInt": "5"}],
      "Timestamp": {"$timestamp": {"t": 42, "i": 1}},
      "RegularExpression": {"$regularExpression": {"pattern": "foo*", "options": "ix"}},
      "DatetimeEpoch": {"$date": {"$numberLong": "0"}},
      "DatetimePositive": {"$date": {"$numberLong": "253402300799999"}},
      "DatetimeNegative": {"$date": {"$numberLong": "-62135596800000"}},
      "True": true, "False": false,
      "DBRef": {"$ref": "collection", "$id": {"$oid": "57e193d7a9cc81b4027498b1"},
                "$db": "database"},
      "DBRefNoDB": {"$ref": "collection", "$id": {"$oid": "57fd71e96e32ab4225b723fb"}},
      "Minkey": {"$minKey": 1}, "Maxkey": {"$maxKey": 1}, "Null": null
    }"""
    # (The spec's example writes Binary(b"123", 80) as subType "80": 80 decimal is 0x50.)
    assert _as_json(dumps(document, STANDARD_CANONICAL)) == _as_json(expected)


def test_relaxed_output() -> None:
    document = {
        "Int32": 42,
        "Int64": Int64(42),
        "Double": 42.42,
        "Whole": 1.0,
        "Inf": float("inf"),
        "NaN": float("nan"),
        "DatetimeEpoch": datetime(1970, 1, 1),
        "WithMillis": datetime(2012, 12, 24, 12, 15, 30, 501999, tzinfo=UTC),
        "BeforeEpoch": datetime(1969, 12, 31, 23, 59, 59),
        "Y10K": DatetimeMS(253402300800000),
    }
    assert _as_json(dumps(document)) == _as_json(
        """{"Int32": 42, "Int64": 42, "Double": 42.42, "Whole": 1.0,
        "Inf": {"$numberDouble": "Infinity"}, "NaN": {"$numberDouble": "NaN"},
        "DatetimeEpoch": {"$date": "1970-01-01T00:00:00Z"},
        "WithMillis": {"$date": "2012-12-24T12:15:30.501Z"},
        "BeforeEpoch": {"$date": {"$numberLong": "-1000"}},
        "Y10K": {"$date": {"$numberLong": "253402300800000"}}}"""
    )
    assert dumps({"d": -0.0}) == '{"d": -0.0}'


def test_canonical_numbers() -> None:
    assert dumps([2**31 - 1, 2**31, -(2**31), Int64(1)], CANONICAL_JSON_OPTIONS) == (
        '[{"$numberInt": "2147483647"}, {"$numberLong": "2147483648"}, '
        '{"$numberInt": "-2147483648"}, {"$numberLong": "1"}]'
    )
    assert dumps(1.2345678921232e18, CANONICAL_JSON_OPTIONS) == (
        '{"$numberDouble": "1.2345678921232E+18"}'
    )
    assert dumps(-0.0, CANONICAL_JSON_OPTIONS) == '{"$numberDouble": "-0.0"}'
    with pytest.raises(InvalidDocument):
        dumps(2**63)


def test_other_types() -> None:
    aware = datetime(2020, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    document = {
        "symbol": Symbol("s"),
        "undefined": Undefined(),
        "pointer": DBPointer("db.coll", ObjectId("56e1fc72e0c917e9c4714161")),
        "pattern": re.compile("^a", re.IGNORECASE | re.MULTILINE),
        "regex": Regex("b", "xmi"),
        "bytes": b"\x01\x02",
        "tuple": (1, "a"),
        "aware": aware,
        "scope": Code("x", {"y": 1}),
    }
    assert _as_json(dumps(document, CANONICAL_JSON_OPTIONS)) == _as_json(
        """{"symbol": {"$symbol": "s"}, "undefined": {"$undefined": true},
        "pointer": {"$dbPointer": {"$ref": "db.coll",
                                   "$id": {"$oid": "56e1fc72e0c917e9c4714161"}}},
        "pattern": {"$regularExpression": {"pattern": "^a", "options": "im"}},
        "regex": {"$regularExpression": {"pattern": "b", "options": "imx"}},
        "bytes": {"$binary": {"base64": "AQI=", "subType": "00"}},
        "tuple": [{"$numberInt": "1"}, "a"],
        "aware": {"$date": {"$numberLong": "1577836800000"}},
        "scope": {"$code": "x", "$scope": {"y": {"$numberInt": "1"}}}}"""
    )


def test_generator_errors() -> None:
    with pytest.raises(InvalidDocument, match="no BSON type"):
        dumps({"a": object()})
    with pytest.raises(InvalidDocument, match="keys must be str"):
        dumps({1: "a"})
    with pytest.raises(InvalidBinary):
        dumps(uuid.uuid4())  # UUID spec: UNSPECIFIED refuses to write a native UUID
    assert dumps({"a": {1, 2}}, default=sorted) == '{"a": [1, 2]}'
    assert dumps({"a": 1}, indent=1) == '{\n "a": 1\n}'


def test_raw_bson_document_dumps_its_contents() -> None:
    raw = RawBSONDocument(encode({"a": Int64(1), "b": [True]}))
    assert dumps(raw, CANONICAL_JSON_OPTIONS) == '{"a": {"$numberLong": "1"}, "b": [true]}'


# -- parsers -----------------------------------------------------------------------------


def test_loads_keeps_key_order_and_types() -> None:
    value = loads('{"z": 1, "a": {"$numberLong": "2"}, "m": [1.5, 3000000000, 1e400]}')
    assert list(value) == ["z", "a", "m"]
    assert type(value["a"]) is Int64
    assert value["m"][:2] == [1.5, 3000000000]
    assert math.isinf(value["m"][2])


def test_integers_beyond_int64_become_doubles() -> None:
    # Spec: an integer that cannot be represented exactly MUST be a double, never a string.
    assert loads("[9223372036854775807, 9223372036854775808]") == [
        9223372036854775807,
        9.223372036854775808e18,
    ]
    assert type(loads("[9223372036854775808]")[0]) is float


def test_every_canonical_wrapper() -> None:
    text = """{"a": {"$oid": "56E1FC72E0C917E9C4714161"}, "b": {"$symbol": "s"},
      "c": {"$numberInt": "-5"}, "d": {"$numberDouble": "-Infinity"},
      "e": {"$numberDecimal": "1.0"}, "f": {"$binary": {"subType": "80", "base64": "AQ=="}},
      "g": {"$code": "c"}, "h": {"$scope": {}, "$code": "c"},
      "i": {"$timestamp": {"i": 2, "t": 1}},
      "j": {"$regularExpression": {"pattern": "p", "options": "mi"}},
      "k": {"$date": "2012-12-24T12:15:30.501+01:00"}, "l": {"$minKey": 1},
      "m": {"$maxKey": 1}, "n": {"$undefined": true}, "o": {"$binary": {"base64": "",
      "subType": "0"}}}"""
    value = loads(text)
    assert value == {
        "a": ObjectId("56e1fc72e0c917e9c4714161"),
        "b": Symbol("s"),
        "c": -5,
        "d": float("-inf"),
        "e": Decimal128("1.0"),
        "f": Binary(b"\x01", 0x80),
        "g": Code("c"),
        "h": Code("c", {}),
        "i": Timestamp(1, 2),
        "j": Regex("p", "mi"),
        "k": datetime(2012, 12, 24, 11, 15, 30, 501000),
        "l": MinKey(),
        "m": MaxKey(),
        "n": Undefined(),
        "o": b"",
    }
    assert type(value["b"]) is Symbol


def test_dates_follow_the_codec_options() -> None:
    text = '{"$date": {"$numberLong": "253402300800000"}}'
    with pytest.raises(InvalidExtendedJSON, match="outside the range"):
        loads(f"[{text}]")
    auto = RELAXED_JSON_OPTIONS.with_options(datetime_conversion=DatetimeConversion.DATETIME_AUTO)
    assert loads(f"[{text}]", auto) == [DatetimeMS(253402300800000)]
    aware = RELAXED_JSON_OPTIONS.with_options(tz_aware=True)
    assert loads('[{"$date": "1970-01-01T00:00:00Z"}]', aware) == [datetime(1970, 1, 1, tzinfo=UTC)]
    assert loads('[{"$date": "1970-01-01T00:00:00Z"}]', aware)[0].tzinfo is not None


def test_uuid_forms() -> None:
    text = '[{"$uuid": "c8edabc3-f738-4ca3-b68d-ab92a91478a3"}]'
    expected = uuid.UUID("c8edabc3-f738-4ca3-b68d-ab92a91478a3")
    assert loads(text) == [Binary(expected.bytes, 4)]  # UNSPECIFIED: kept as Binary
    standard = RELAXED_JSON_OPTIONS.with_options(uuid_representation=UuidRepresentation.STANDARD)
    assert loads(text, standard) == [expected]
    assert loads('[{"$uuid": "c8edabc3f7384ca3b68dab92a91478a3"}]', standard) == [expected]
    legacy = RELAXED_JSON_OPTIONS.with_options(uuid_representation=UuidRepresentation.PYTHON_LEGACY)
    b64 = '[{"$binary": {"base64": "yO2rw/c4TKO2jauSqRR4ow==", "subType": "03"}}]'
    assert loads(b64, legacy) == [expected]
    assert dumps(expected, STANDARD_CANONICAL) == (
        '{"$binary": {"base64": "yO2rw/c4TKO2jauSqRR4ow==", "subType": "04"}}'
    )


def test_dbref_and_near_misses() -> None:
    value = loads(
        '[{"$ref": "c", "$id": 1, "$db": "d", "x": 2}, {"$ref": "c"}, '
        '{"$ref": 1, "$id": 2}, {"$ref": "c", "$id": 1, "$db": 3}]'
    )
    assert value[0] == DBRef("c", 1, "d", x=2)
    assert value[1:] == [{"$ref": "c"}, {"$ref": 1, "$id": 2}, {"$ref": "c", "$id": 1, "$db": 3}]


def test_unknown_dollar_keys_and_query_operators_stay_documents() -> None:
    text = """{"q": {"$gt": 1, "$type": "string"}, "r": {"$regex": "^a", "$options": "i"},
               "s": {"$regex": {"$regularExpression": {"pattern": "a", "options": ""}}},
               "t": {"$type": 2}}"""
    value = loads(text)
    assert value["q"] == {"$gt": 1, "$type": "string"}
    assert value["r"] == {"$regex": "^a", "$options": "i"}
    assert value["s"] == {"$regex": Regex("a", "")}
    assert value["t"] == {"$type": 2}


def test_top_level_object_is_never_a_wrapper() -> None:
    assert loads('{"$oid": "56e1fc72e0c917e9c4714161"}') == {"$oid": "56e1fc72e0c917e9c4714161"}
    assert loads('{"$oid": 42}') == {"$oid": 42}
    assert loads('{"$ref": "c", "$id": 1}') == {"$ref": "c", "$id": 1}
    # ...but the same objects one level down are wrappers.
    assert loads('[{"$oid": "56e1fc72e0c917e9c4714161"}]') == [ObjectId("56e1fc72e0c917e9c4714161")]
    with pytest.raises(InvalidExtendedJSON):
        loads('{"a": {"$oid": 42}}')


def test_legacy_forms_only_when_asked() -> None:
    assert loads('[{"$regex": "^a", "$options": "i"}]', LEGACY) == [Regex("^a", "i")]
    assert loads('[{"$regex": "^a"}]', LEGACY) == [Regex("^a", "")]
    assert loads('[{"$binary": "AQI=", "$type": "80"}]', LEGACY) == [Binary(b"\x01\x02", 0x80)]
    assert loads('[{"$date": 1356351330501}]', LEGACY) == [
        datetime(2012, 12, 24, 12, 15, 30, 501000)
    ]
    # The query operators still parse as documents in legacy mode.
    assert loads('[{"$type": "string"}, {"$type": 2}]', LEGACY) == [
        {"$type": "string"},
        {"$type": 2},
    ]
    nested = (
        '[{"$regex": {"$regularExpression": {"pattern": "a", "options": ""}}, "$options": "i"}]'
    )
    assert loads(nested, LEGACY) == [{"$regex": Regex("a", ""), "$options": "i"}]
    for text in ('[{"$binary": "AQI=", "$type": "80"}]', '[{"$date": 42}]'):
        with pytest.raises(InvalidExtendedJSON):
            loads(text)


@pytest.mark.parametrize(
    "wrapper",
    [
        '{"$oid": "56e1fc72e0c917e9c471416"}',
        '{"$oid": "56e1fc72e0c917e9c471416g"}',
        '{"$numberInt": "2147483648"}',
        '{"$numberInt": "1.0"}',
        '{"$numberLong": "9223372036854775808"}',
        '{"$numberLong": 1}',
        '{"$numberDouble": "inf"}',
        '{"$numberDouble": "1_0"}',
        '{"$numberDecimal": "1..0"}',
        '{"$binary": {"base64": "AQI", "subType": "00"}}',
        '{"$binary": {"base64": "AQI=", "subType": "100"}}',
        '{"$binary": {"base64": "A*I=", "subType": "00"}}',
        '{"$uuid": "c8edabc3-f738-4ca3-b68d"}',
        '{"$scope": {}}',
        '{"$code": "x", "$scope": []}',
        '{"$timestamp": {"t": -1, "i": 0}}',
        '{"$timestamp": {"t": 4294967296, "i": 0}}',
        '{"$timestamp": {"t": 1.0, "i": 0}}',
        '{"$date": "2012-13-01T00:00:00Z"}',
        '{"$date": "yesterday"}',
        '{"$date": {"$numberLong": "1"}, "$oid": "56e1fc72e0c917e9c4714161"}',
        '{"$minKey": 2}',
        '{"$maxKey": "1"}',
        '{"$undefined": 1}',
        '{"$dbPointer": {"$ref": "a", "$id": 1}}',
        '{"$dbPointer": {"$ref": "a", "$id": {"$oid": "56e1fc72e0c917e9c4714161"}, "$db": "x"}}',
    ],
)
def test_malformed_wrappers(wrapper: str) -> None:
    with pytest.raises(InvalidExtendedJSON) as info:
        loads(f'{{"x": {wrapper}}}')
    assert isinstance(info.value, ValueError)


def test_json_errors() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads('{"a": ')
    with pytest.raises(InvalidExtendedJSON, match="numberDouble"):
        loads('{"a": NaN}')


def test_nesting_limits() -> None:
    # Spec: parsers support at least 200 levels, generators at least 100.
    deep_text = '{"a": ' * 200 + '{"$numberLong": "1"}' + "}" * 200
    value = loads(deep_text)
    for _ in range(200):
        value = value["a"]
    assert value == Int64(1)
    deep: dict[str, Any] = {"leaf": Int64(1)}
    for _ in range(100):
        deep = {"a": [deep]}
    assert loads(dumps(deep, CANONICAL_JSON_OPTIONS), CANONICAL_JSON_OPTIONS) == deep
    with pytest.raises(InvalidExtendedJSON, match="too deeply"):
        loads("[" * 100_000 + "]" * 100_000)
    looped: dict[str, Any] = {}
    looped["self"] = looped
    with pytest.raises(InvalidDocument, match="too deeply"):
        dumps(looped)


def test_document_class_and_hooks() -> None:
    options = RELAXED_JSON_OPTIONS.with_options(document_class=OrderedDict)
    value = loads('{"a": {"b": 1}, "c": [{"d": {"$numberLong": "1"}}]}', options)
    assert type(value) is OrderedDict
    assert type(value["a"]) is OrderedDict
    assert type(value["c"][0]) is OrderedDict
    raw_options = RELAXED_JSON_OPTIONS.with_options(document_class=RawBSONDocument)
    raw = loads('{"a": {"$numberLong": "1"}}', raw_options)
    assert isinstance(raw, RawBSONDocument)
    assert raw.raw == encode({"a": Int64(1)})
    assert object_hook({"$numberLong": "7"}) == Int64(7)
    assert object_hook({"plain": 1}) == {"plain": 1}
    parsed = json.loads(
        '{"x": {"$oid": "56e1fc72e0c917e9c4714161"}}', object_pairs_hook=object_pairs_hook()
    )
    assert parsed == {"x": ObjectId("56e1fc72e0c917e9c4714161")}


def test_options() -> None:
    assert RELAXED_JSON_OPTIONS.json_mode is JSONMode.RELAXED
    assert CANONICAL_JSON_OPTIONS.codec_options == CodecOptions()
    codec_options = CodecOptions(tz_aware=True, uuid_representation=UuidRepresentation.STANDARD)
    options = JSONOptions.from_codec_options(codec_options, JSONMode.CANONICAL)
    assert options.codec_options == codec_options
    assert options.with_options(json_mode=JSONMode.RELAXED).tz_aware is True
    with pytest.raises(TypeError):
        JSONOptions(json_mode=7)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        RELAXED_JSON_OPTIONS.with_options(bogus=1)
    with pytest.raises(TypeError):
        JSONOptions(tzinfo=UTC)  # tzinfo needs tz_aware, as in CodecOptions


# -- round trips ---------------------------------------------------------------------------

keys = st.text(min_size=1, max_size=5).filter(lambda k: "\x00" not in k and k[0] != "$")
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.floats(allow_nan=False),
    st.text(max_size=10),
    st.binary(max_size=10),
    st.builds(Binary, st.binary(max_size=10), st.integers(1, 255)),
    st.binary(min_size=12, max_size=12).map(ObjectId),
    st.integers(-(10**34) + 1, 10**34 - 1).map(lambda i: Decimal128(str(i))),
    st.integers(-(2**62), 2**62).map(DatetimeMS),
    st.builds(Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
    st.builds(Regex, st.text(max_size=5).filter(lambda s: "\x00" not in s), st.just("imsx")),
    st.builds(Code, st.text(max_size=5)),
    st.sampled_from([MinKey(), MaxKey(), Undefined(), Symbol("s")]),
)
documents = st.recursive(
    st.dictionaries(keys, scalars, max_size=4),
    lambda children: st.dictionaries(
        keys,
        st.one_of(scalars, children, st.lists(st.one_of(scalars, children), max_size=3)),
        max_size=4,
    ),
    max_leaves=12,
)
MS_OPTIONS = JSONOptions(datetime_conversion=DatetimeConversion.DATETIME_MS)
CODEC_MS = MS_OPTIONS.codec_options


@settings(max_examples=150, deadline=None)
@given(documents)
def test_canonical_round_trip_keeps_every_type(document: dict[str, Any]) -> None:
    canonical = MS_OPTIONS.with_options(json_mode=JSONMode.CANONICAL)
    parsed = loads(dumps(document, canonical), canonical)
    assert encode(parsed, codec_options=CODEC_MS) == encode(document, codec_options=CODEC_MS)


@settings(max_examples=150, deadline=None)
@given(documents)
def test_relaxed_output_is_stable(document: dict[str, Any]) -> None:
    relaxed = dumps(document, MS_OPTIONS)
    assert dumps(loads(relaxed, MS_OPTIONS), MS_OPTIONS) == relaxed

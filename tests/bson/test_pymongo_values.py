"""PyMongo's bson values, encoded by asyncmongo exactly as PyMongo encodes them.

Each check encodes one document with PyMongo's ``bson.encode`` and with asyncmongo's
encoder (both implementations, through the ``bson_impl`` fixture) and compares the bytes:
BSON type, binary subtype and integer width included. The values stand alone, nested in
documents, arrays, SON, Code scopes and DBRef fields, and mixed with asyncmongo's own types.
Values that cannot be written raise asyncmongo's InvalidDocument.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip(
    "pymongo",
    reason="PyMongo (a test-only dependency) is not installed: nothing to compare with",
)

import bson
from bson import (
    SON,
    Binary,
    Code,
    DBRef,
    Decimal128,
    Int64,
    MaxKey,
    MinKey,
    ObjectId,
    Regex,
    Timestamp,
)
from bson.binary import UuidRepresentation as PyMongoUuidRepresentation
from bson.codec_options import CodecOptions as PyMongoCodecOptions
from bson.datetime_ms import DatetimeMS
from bson.raw_bson import RawBSONDocument
from hypothesis import given, settings
from hypothesis import strategies as st

import asyncmongo.bson as am
from asyncmongo.bson import CodecOptions, InvalidDocument, InvalidStringData, codec

pytestmark = pytest.mark.usefixtures("bson_impl")

UUID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
OID = ObjectId("5f0c3b0e9d1e4a2b3c4d5e6f")


class MyInt64(Int64):
    """A user subclass: the marker is inherited, so still an int64."""


class MyBinary(Binary):
    """A user subclass of bson.Binary (itself a bytes subclass)."""


VALUES: dict[str, Any] = {
    "object_id": OID,
    "binary_0": Binary(b"\x00\x01\xff", 0),
    "binary_old": Binary(b"old bytes", 2),
    "binary_uuid_legacy": Binary.from_uuid(UUID, PyMongoUuidRepresentation.PYTHON_LEGACY),
    "binary_uuid": Binary.from_uuid(UUID),
    "binary_md5": Binary(b"0123456789abcdef", 5),
    "binary_user": Binary(b"user", 128),
    "binary_255": Binary(b"", 255),
    "binary_subclass": MyBinary(b"sub", 4),
    "int64_small": Int64(7),
    "int64_zero": Int64(0),
    "int64_negative": Int64(-1),
    "int64_max": Int64(2**63 - 1),
    "int64_min": Int64(-(2**63)),
    "int64_subclass": MyInt64(3),
    "decimal128": Decimal128("1.5"),
    "decimal128_negative_zero": Decimal128("-0"),
    "decimal128_nan": Decimal128("NaN"),
    "decimal128_inf": Decimal128("-Infinity"),
    "decimal128_big": Decimal128("9.999999999999999999999999999999999E+6144"),
    "regex": Regex("^a.b$"),
    "regex_flags": Regex("x", "imsx"),
    "regex_all_flags": Regex("x", "ilmsux"),
    "regex_unicode": Regex("é", re.UNICODE),
    "regex_bytes": Regex(b"bytes pattern", re.IGNORECASE),
    "code": Code("function () { return 1; }"),
    "code_empty_scope": Code("x", {}),
    "code_scope": Code("return x", {"x": Int64(1), "o": OID}),
    "dbref": DBRef("coll", OID),
    "dbref_db": DBRef("coll", 5, "db"),
    "dbref_extra": DBRef("coll", Int64(5), "db", extra=Binary(b"e", 4), n=1),
    "timestamp": Timestamp(1_700_000_000, 7),
    "timestamp_zero": Timestamp(0, 0),
    "min_key": MinKey(),
    "max_key": MaxKey(),
    "datetime_ms": DatetimeMS(1_700_000_000_123),
    "datetime_ms_negative": DatetimeMS(-(2**62)),
    "son": SON([("z", Int64(1)), ("a", OID), ("m", SON([("k", Binary(b"k", 3))]))]),
    "raw": RawBSONDocument(bson.encode({"a": Int64(1), "b": [Binary(b"x", 4)]})),
    "empty_raw": RawBSONDocument(bson.encode({})),
}


def pymongo_encode(document: Mapping[str, Any]) -> bytes:
    return bson.encode(document)


def assert_same(document: Mapping[str, Any]) -> None:
    assert codec.encode(document) == pymongo_encode(document)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_value_alone(name: str) -> None:
    assert_same({"v": VALUES[name]})


@pytest.mark.parametrize("name", sorted(VALUES))
def test_value_nested(name: str) -> None:
    value = VALUES[name]
    assert_same(
        {
            "doc": {"inner": value, "deeper": {"x": [value]}},
            "array": [value, 1, [value], {"k": value}],
            "tuple": (value,),
            "son": SON([("s", value)]),
            "scope": Code("f", {"v": value}),
            "dbref": DBRef("c", value, "db", field=value),
        }
    )


def test_every_value_in_one_document() -> None:
    document = dict(VALUES)
    assert_same(document)
    assert_same(document)  # again: the second pass takes the cached per-type encoders


def test_int64_is_int64_whatever_its_size() -> None:
    encoded = codec.encode({"v": Int64(7)})
    assert encoded == pymongo_encode({"v": Int64(7)})
    assert encoded[4] == 0x12
    assert codec.encode({"v": 7})[4] == 0x10  # a plain int that fits stays an int32


@pytest.mark.parametrize("subtype", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 128, 200, 255])
def test_binary_keeps_its_subtype(subtype: int) -> None:
    assert_same({"v": Binary(b"payload", subtype)})


def test_mixed_with_asyncmongo_values() -> None:
    ours = {
        "am_oid": am.ObjectId(str(OID)),
        "am_int64": am.Int64(7),
        "am_binary": am.Binary(b"a", 4),
        "am_decimal": am.Decimal128("1.5"),
        "am_code": am.Code("c", {"x": 1}),
        "am_ts": am.Timestamp(1, 2),
        "am_min": am.MinKey(),
        "am_max": am.MaxKey(),
    }
    theirs = {
        "am_oid": OID,
        "am_int64": Int64(7),
        "am_binary": Binary(b"a", 4),
        "am_decimal": Decimal128("1.5"),
        "am_code": Code("c", {"x": 1}),
        "am_ts": Timestamp(1, 2),
        "am_min": MinKey(),
        "am_max": MaxKey(),
    }
    common = {"s": "str", "i": 1, "f": 1.5, "b": True, "n": None, "d": datetime(2024, 1, 2)}
    assert codec.encode({**common, **ours}) == pymongo_encode({**common, **theirs})
    assert codec.encode({**common, **ours, **VALUES}) == pymongo_encode(
        {**common, **theirs, **VALUES}
    )


def test_raw_document_at_the_top_level_is_its_bytes() -> None:
    raw = RawBSONDocument(bson.encode({"a": Int64(1), "b": Regex("x", "i")}))
    assert codec.encode(raw) == raw.raw == pymongo_encode(raw)


def test_son_at_the_top_level() -> None:
    son = SON([("b", Int64(1)), ("a", Binary(b"\x01", 4)), ("c", OID)])
    assert_same(son)


def test_uuid_under_standard_matches_pymongo() -> None:
    document = {"u": UUID, "b": Binary.from_uuid(UUID)}
    theirs = bson.encode(
        document, codec_options=PyMongoCodecOptions(uuid_representation=4)  # STANDARD
    )
    ours = codec.encode(
        document, codec_options=CodecOptions(uuid_representation=am.UuidRepresentation.STANDARD)
    )
    assert ours == theirs


def test_aware_datetime_alongside_pymongo_values() -> None:
    assert_same({"d": datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC), "i": Int64(2)})


# -- values BSON cannot hold --


@pytest.mark.parametrize("value", [Int64(2**63), Int64(-(2**63) - 1), MyInt64(2**64)])
def test_int64_out_of_range(value: Int64) -> None:
    with pytest.raises(InvalidDocument, match="does not fit in a BSON int64"):
        codec.encode({"v": value})


def test_regex_pattern_with_nul() -> None:
    with pytest.raises(InvalidDocument, match="must not contain a NUL"):
        codec.encode({"v": Regex("a\x00b")})


def test_regex_bytes_pattern_not_utf8() -> None:
    with pytest.raises(InvalidStringData, match="not UTF-8"):
        codec.encode({"v": Regex(b"\xff")})


class FakeObjectId:
    _type_marker = 7
    binary = b"short"


class FakeDecimal128:
    _type_marker = 19
    bid = "not bytes"


class FakeBinary:
    _type_marker = 5
    subtype = 4


class FakeRegex:
    _type_marker = 11
    pattern = 3
    flags = 0


class FakeDatetimeMS:
    _type_marker = 9

    def __int__(self) -> int:
        return 2**63


class UnknownMarker:
    _type_marker = 42


class MarkerNotInt:
    _type_marker = "7"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (FakeObjectId(), r"key 'v': FakeObjectId.binary must be 12 bytes"),
        (FakeDecimal128(), r"key 'v': FakeDecimal128.bid must be 16 bytes"),
        (FakeBinary(), r"key 'v': cannot encode .* as BSON binary"),
        (FakeRegex(), r"key 'v': cannot encode .* as a BSON regex"),
        (FakeDatetimeMS(), r"key 'v': int 9223372036854775808 does not fit in a BSON int64"),
        (UnknownMarker(), r"key 'v': cannot encode object .* of type UnknownMarker"),
        (MarkerNotInt(), r"key 'v': cannot encode object .* of type MarkerNotInt"),
    ],
)
def test_bad_marked_values(value: Any, message: str) -> None:
    with pytest.raises(InvalidDocument, match=message):
        codec.encode({"v": value})
    with pytest.raises(InvalidDocument, match=message.replace("'v'", "'0'")):
        codec.encode({"a": [value]})


# -- generated documents --

_keys = st.text(st.characters(blacklist_characters="\x00", codec="utf-8"), max_size=5)
_leaves = st.one_of(
    st.builds(Int64, st.integers(-(2**63), 2**63 - 1)),
    st.builds(Binary, st.binary(max_size=20), st.integers(0, 255)),
    st.builds(ObjectId, st.binary(min_size=12, max_size=12)),
    st.builds(
        Decimal128, st.decimals(allow_nan=False, places=3, min_value=-(10**6), max_value=10**6)
    ),
    st.builds(
        Regex,
        st.text(st.characters(blacklist_characters="\x00", codec="utf-8"), max_size=8),
        st.integers(0, 127),
    ),
    st.builds(Code, st.text(max_size=8).filter(lambda s: "\x00" not in s)),
    st.builds(Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
    st.builds(DatetimeMS, st.integers(-(2**63), 2**63 - 1)),
    st.sampled_from([MinKey(), MaxKey(), None, True, "s", 1, 2**40, 1.5]),
)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_keys, inner, max_size=4),
        st.builds(lambda d: SON(sorted(d.items())), st.dictionaries(_keys, inner, max_size=3)),
        st.builds(lambda d: Code("f", d), st.dictionaries(_keys, inner, max_size=3)),
        st.builds(lambda v: DBRef("c", v, "db"), inner),
        st.builds(
            lambda d: RawBSONDocument(bson.encode(d)), st.dictionaries(_keys, inner, max_size=3)
        ),
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=5))
def test_generated_documents(document: dict[str, Any]) -> None:
    assert_same(document)


def test_str_subclasses_are_written_as_the_characters_they_hold() -> None:
    """A str-mixin Enum's __str__ is "Color.RED"; PyMongo writes "red", as keys and values."""
    import enum

    class Color(str, enum.Enum):  # noqa: UP042 - the mixin, whose __str__ differs
        RED = "red"
        FIELD = "a.b"

    document = {Color.FIELD: {"$gt": 1}, "c": Color.RED, "list": [Color.RED]}
    assert codec.encode(document) == bson.encode(document)
    assert codec.decode(codec.encode(document)) == {
        "a.b": {"$gt": 1},
        "c": "red",
        "list": ["red"],
    }

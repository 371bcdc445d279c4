"""The BSON codec: round trips of every type, the codec options, errors, lossless re-encoding."""

from __future__ import annotations

import collections
import math
import re
import struct
import uuid
from collections.abc import Iterator, MutableMapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from asyncmongo.bson import (
    MAX_NESTING_DEPTH,
    Binary,
    Code,
    CodecOptions,
    DatetimeConversion,
    DatetimeMS,
    DBPointer,
    DBRef,
    Decimal128,
    Int64,
    InvalidBSON,
    InvalidDocument,
    InvalidStringData,
    MaxKey,
    MinKey,
    ObjectId,
    RawBSONDocument,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
    UuidRepresentation,
    decode,
    decode_all,
    decode_iter,
    encode,
)

#: Every case runs on each codec implementation this install has (conftest.py).
pytestmark = pytest.mark.usefixtures("bson_impl")

OID = ObjectId("5f1d7f8e9a0b1c2d3e4f5a6b")

# One value of every BSON type, as decoding gives it back.
EVERY_TYPE: dict[str, Any] = {
    "double": 1.5,
    "string": "héllo wörld \u2603",
    "empty_string": "",
    "nul_in_string": "a\x00b",
    "document": {"a": 1, "nested": {"b": [1, 2]}},
    "array": [1, "two", 3.0, None, [4], {"five": 5}],
    "binary0": b"\x00\x01\x02",
    "binary_other": Binary(b"\xff", 0x80),
    "undefined": Undefined(),
    "oid": OID,
    "false": False,
    "true": True,
    "datetime": datetime(2021, 3, 4, 5, 6, 7, 891000),
    "null": None,
    "regex": Regex("^a.*b$", "imsx"),
    "dbpointer": DBPointer("db.coll", OID),
    "code": Code("function() { return 1; }"),
    "symbol": Symbol("sym"),
    "code_w_scope": Code("x + y", {"x": 1, "y": {"z": "w"}}),
    "int32": -(2**31),
    "timestamp": Timestamp(4_000_000_000, 7),
    "int64": Int64(2**63 - 1),
    "small_int64": Int64(1),
    "decimal128": Decimal128("1.2345E+6000"),
    "minkey": MinKey(),
    "maxkey": MaxKey(),
    "dbref": DBRef("coll", OID, "db", extra="field"),
}


def test_every_type_round_trips() -> None:
    data = encode(EVERY_TYPE)
    decoded = decode(data)
    assert decoded == EVERY_TYPE
    assert list(decoded) == list(EVERY_TYPE)
    for key, value in EVERY_TYPE.items():
        assert type(decoded[key]) is type(value), key
    assert encode(decoded) == data


def test_pymongo_agrees_on_every_type() -> None:
    """PyMongo (test-only peer) decodes our bytes and re-encodes them identically (minus the
    deprecated types it turns into others: DBPointer, undefined and symbol)."""
    bson = pytest.importorskip("bson")
    kept = {k: v for k, v in EVERY_TYPE.items() if k not in ("dbpointer", "undefined", "symbol")}
    data = encode(kept)
    opts = bson.CodecOptions(document_class=collections.OrderedDict)
    assert bson.encode(bson.decode(data, opts)) == data


@pytest.mark.parametrize(
    ("value", "type_byte"),
    [
        (0, 0x10),
        (2**31 - 1, 0x10),
        (-(2**31), 0x10),
        (2**31, 0x12),
        (-(2**31) - 1, 0x12),
        (2**63 - 1, 0x12),
        (-(2**63), 0x12),
        (Int64(0), 0x12),
        (True, 0x08),
    ],
)
def test_int_width(value: int, type_byte: int) -> None:
    data = encode({"n": value})
    assert data[4] == type_byte
    back = decode(data)["n"]
    assert back == value
    assert type(back) is (Int64 if type_byte == 0x12 else type(value))


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_int_out_of_range_names_the_key(value: int) -> None:
    with pytest.raises(InvalidDocument, match="'big'"):
        encode({"big": value})
    with pytest.raises(InvalidDocument, match="'big'"):
        encode({"big": Int64(value)})


def test_floats_keep_negative_zero_infinities_and_nan_payloads() -> None:
    doc = decode(encode({"nz": -0.0, "inf": math.inf, "ninf": -math.inf, "nan": math.nan}))
    assert math.copysign(1.0, doc["nz"]) == -1.0
    assert doc["inf"] == math.inf and doc["ninf"] == -math.inf and math.isnan(doc["nan"])
    payload = bytes.fromhex("10000000016400010000000000F87F00")  # a NaN with a payload
    assert encode(decode(payload)) == payload


def test_tuples_and_subclasses_encode_like_their_base() -> None:
    class MyDict(dict[str, Any]):
        pass

    class MyStr(str):
        pass

    class MyInt(int):
        pass

    doc = {"t": (1, 2), "d": MyDict(a=1), "s": MyStr("x"), "i": MyInt(5), "b": 2**40}
    assert decode(encode(doc)) == {"t": [1, 2], "d": {"a": 1}, "s": "x", "i": 5, "b": 2**40}


def test_generic_mappings_and_ordered_dicts_encode() -> None:
    class Mapping(collections.abc.Mapping[str, Any]):
        def __getitem__(self, key: str) -> Any:
            return {"k": "v"}[key]

        def __iter__(self) -> Iterator[str]:
            return iter(["k"])

        def __len__(self) -> int:
            return 1

    assert decode(encode({"m": Mapping()})) == {"m": {"k": "v"}}
    assert decode(encode(Mapping())) == {"k": "v"}
    ordered = collections.OrderedDict([("b", 1), ("a", 2)])
    assert list(decode(encode(ordered))) == ["b", "a"]


def test_python_regex_encodes_as_bson_regex() -> None:
    pattern = re.compile(r"^abc", re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE)
    assert decode(encode({"r": pattern}))["r"] == Regex("^abc", "imsx")
    assert Regex.from_native(pattern).try_compile().flags & re.IGNORECASE


def test_regex_flags_are_encoded_sorted() -> None:
    data = encode({"r": Regex("a", "xmi")})
    assert data.endswith(b"a\x00imx\x00\x00")
    assert Regex("a", "xmi").flags == "xmi"


@pytest.mark.parametrize("value", [Regex("a\x00b"), Regex("a", "i\x00")])
def test_regex_with_nul_is_refused(value: Regex) -> None:
    with pytest.raises(InvalidDocument):
        encode({"r": value})


# -- datetimes --


def test_naive_datetime_is_utc_and_millisecond_precision() -> None:
    value = datetime(2000, 1, 1, 0, 0, 0, 123456)
    decoded = decode(encode({"d": value}))["d"]
    assert decoded == datetime(2000, 1, 1, 0, 0, 0, 123000)
    assert decoded.tzinfo is None


def test_aware_datetime_is_converted_to_utc() -> None:
    value = datetime(2000, 1, 1, 2, 0, tzinfo=timezone(timedelta(hours=2)))
    assert decode(encode({"d": value}))["d"] == datetime(2000, 1, 1)


def test_pre_epoch_datetime() -> None:
    value = datetime(1960, 5, 6, 7, 8, 9, 10000)
    assert decode(encode({"d": value}))["d"] == value
    assert decode(encode({"d": datetime(1969, 12, 31, 23, 59, 59, 999500)}))["d"] == datetime(
        1969, 12, 31, 23, 59, 59, 999000
    )


def test_tz_aware_and_tzinfo() -> None:
    data = encode({"d": datetime(2000, 1, 1)})
    aware = decode(data, CodecOptions(tz_aware=True))["d"]
    assert aware == datetime(2000, 1, 1, tzinfo=UTC) and aware.tzinfo is UTC
    zone = timezone(timedelta(hours=-5))
    local = decode(data, CodecOptions(tz_aware=True, tzinfo=zone))["d"]
    assert local.tzinfo is zone and local.hour == 19


@pytest.mark.parametrize("ms", [2**62, -(2**62), 253402300800000, -62135596800001])
def test_datetime_conversion_out_of_range(ms: int) -> None:
    data = encode({"d": DatetimeMS(ms)})
    with pytest.raises(InvalidBSON, match="DATETIME_AUTO"):
        decode(data)
    auto = decode(data, CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO))
    assert auto["d"] == DatetimeMS(ms) and type(auto["d"]) is DatetimeMS
    assert encode(auto) == data
    clamped = decode(data, CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_CLAMP))
    assert clamped["d"] in (datetime.min, datetime.max.replace(microsecond=999000))


def test_datetime_conversion_ms_and_auto_in_range() -> None:
    data = encode({"d": datetime(2000, 1, 1)})
    as_ms = decode(data, CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS))["d"]
    assert as_ms == DatetimeMS(946684800000)
    assert as_ms.to_datetime() == datetime(2000, 1, 1)
    assert as_ms.to_datetime(CodecOptions(tz_aware=True)) == datetime(2000, 1, 1, tzinfo=UTC)
    auto = decode(data, CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO))["d"]
    assert auto == datetime(2000, 1, 1)
    assert DatetimeMS(datetime(2000, 1, 1)) == as_ms


# -- document classes, raw documents, DBRef --


def test_document_class() -> None:
    data = encode({"a": {"b": 1}, "c": [{"d": 2}]})
    doc = decode(data, CodecOptions(document_class=collections.OrderedDict))
    assert type(doc) is collections.OrderedDict
    assert type(doc["a"]) is collections.OrderedDict
    assert type(doc["c"][0]) is collections.OrderedDict


def test_custom_mutable_mapping_document_class() -> None:
    class Doc(MutableMapping[str, Any]):
        def __init__(self) -> None:
            self.data: dict[str, Any] = {}

        def __getitem__(self, key: str) -> Any:
            return self.data[key]

        def __setitem__(self, key: str, value: Any) -> None:
            self.data[key] = value

        def __delitem__(self, key: str) -> None:
            del self.data[key]

        def __iter__(self) -> Iterator[str]:
            return iter(self.data)

        def __len__(self) -> int:
            return len(self.data)

    doc = decode(encode({"a": 1}), CodecOptions(document_class=Doc))
    assert isinstance(doc, Doc) and doc["a"] == 1


def test_raw_bson_document_is_lazy_and_lossless() -> None:
    data = encode({"a": 1, "sub": {"b": "x"}, "arr": [{"c": 2}]})
    raw = decode(data, CodecOptions(document_class=RawBSONDocument))
    assert isinstance(raw, RawBSONDocument) and raw.raw == data
    assert raw["a"] == 1
    assert isinstance(raw["sub"], RawBSONDocument) and raw["sub"]["b"] == "x"
    assert isinstance(raw["arr"][0], RawBSONDocument)
    assert len(raw) == 3 and list(raw) == ["a", "sub", "arr"]
    assert encode(raw) == data
    assert encode({"wrapped": raw}) == encode({"wrapped": decode(data)})
    assert RawBSONDocument(data) == raw
    assert decode_all(data + data, CodecOptions(document_class=RawBSONDocument)) == [raw, raw]


def test_a_raw_bson_document_subclass_is_built_like_pymongo_builds_it() -> None:
    class Raw(RawBSONDocument):
        __slots__ = ()

    data = encode({"sub": {"b": "x"}})
    raw = decode(data, CodecOptions(document_class=Raw))
    assert type(raw) is Raw and raw.raw == data
    assert type(raw["sub"]) is RawBSONDocument and raw["sub"]["b"] == "x"
    assert encode(raw) == data


def test_raw_bson_document_checks_its_envelope_and_reports_bad_content() -> None:
    with pytest.raises(InvalidBSON):
        RawBSONDocument(b"\x06\x00\x00\x00\x00")
    with pytest.raises(InvalidBSON):
        RawBSONDocument(b"\x05\x00\x00\x00\x01")
    bad = RawBSONDocument(bytes.fromhex("0C0000000261000000000000"))
    with pytest.raises(InvalidBSON):
        bad["a"]


def test_dbref_decoding_per_spec() -> None:
    ref = {"$ref": "coll", "$id": 1}
    assert decode(encode({"r": ref}))["r"] == DBRef("coll", 1)
    with_db = {"$ref": "coll", "$id": 1, "$db": "db", "x": 2}
    assert decode(encode({"r": with_db}))["r"] == DBRef("coll", 1, "db", x=2)
    out_of_order = {"$db": "db", "$id": 1, "$ref": "coll"}
    decoded = decode(encode({"r": out_of_order}))["r"]
    assert decoded == DBRef("coll", 1, "db")
    assert list(decode(encode({"r": decoded}), CodecOptions())["r"].as_doc()) == [
        "$ref",
        "$id",
        "$db",
    ]
    for not_a_ref in (
        {"$ref": "coll"},
        {"$id": 1},
        {"$ref": 1, "$id": 1},
        {"$ref": "coll", "$id": 1, "$db": 1},
        {"$ref": "coll", "$id": 1, "$db": None},
    ):
        assert decode(encode({"r": not_a_ref}))["r"] == not_a_ref


def test_dbref_model() -> None:
    ref = DBRef("coll", OID, "db", extra=1)
    assert ref.collection == "coll" and ref.id == OID and ref.database == "db"
    assert ref.extra == {"extra": 1}
    assert ref.as_doc() == {"$ref": "coll", "$id": OID, "$db": "db", "extra": 1}
    assert hash(ref) == hash(DBRef("coll", OID, "db", extra=1))
    assert "DBRef('coll'" in repr(ref)


# -- keys --


def test_nul_in_key_is_refused() -> None:
    with pytest.raises(InvalidDocument):
        encode({"a\x00b": 1})
    with pytest.raises(InvalidDocument):
        encode({"ok": {"a\x00": 1}})


def test_non_string_keys_are_refused() -> None:
    with pytest.raises(InvalidDocument, match="string keys"):
        encode({1: 1})  # type: ignore[dict-item]


def test_check_keys_refuses_dollar_and_dot_at_top_level_only() -> None:
    with pytest.raises(InvalidDocument):
        encode({"$set": 1}, check_keys=True)
    with pytest.raises(InvalidDocument):
        encode({"a.b": 1}, check_keys=True)
    assert encode({"$set": 1})
    assert encode({"a": {"$gt": 1, "x.y": 2}}, check_keys=True)


def test_many_distinct_keys_survive_the_key_cache() -> None:
    doc = {f"key{i}": i for i in range(20_000)}
    assert decode(encode(doc)) == doc


def test_long_arrays() -> None:
    doc = {"a": list(range(3000))}
    assert decode(encode(doc)) == doc


# -- encode errors --


def test_lone_surrogates_raise_invalid_string_data() -> None:
    with pytest.raises(InvalidStringData):
        encode({"s": "\ud800"})
    with pytest.raises(InvalidStringData):
        encode({"\ud800": 1})


def test_unsupported_type_names_the_key() -> None:
    with pytest.raises(InvalidDocument, match=r"'thing'.*object"):
        encode({"thing": object()})
    with pytest.raises(InvalidDocument):
        encode({"s": {1, 2}})


def test_encode_takes_a_mapping() -> None:
    with pytest.raises(TypeError):
        encode([1, 2])  # type: ignore[arg-type]


def test_too_deep_and_circular_documents_raise_invalid_document() -> None:
    deep: dict[str, Any] = {}
    for _ in range(10_000):
        deep = {"a": deep}
    with pytest.raises(InvalidDocument, match="nested"):
        encode(deep)
    circular: dict[str, Any] = {}
    circular["self"] = circular
    with pytest.raises(InvalidDocument):
        encode(circular)
    nested_list: list[Any] = []
    for _ in range(10_000):
        nested_list = [nested_list]
    with pytest.raises(InvalidDocument):
        encode({"l": nested_list})


def test_nesting_up_to_the_limit_works() -> None:
    doc: dict[str, Any] = {}
    for _ in range(MAX_NESTING_DEPTH):
        doc = {"a": doc}
    assert decode(encode(doc)) == doc


# -- decode errors --


def _nested(levels: int) -> bytes:
    data = b"\x05\x00\x00\x00\x00"
    for _ in range(levels):
        data = struct.pack("<i", len(data) + 8) + b"\x03a\x00" + data + b"\x00"
    return data


def test_ten_thousand_levels_raise_invalid_bson() -> None:
    with pytest.raises(InvalidBSON, match="nested"):
        decode(_nested(10_000))


@pytest.mark.parametrize(
    "hex_data",
    [
        "",
        "05000000",
        "0500000001",
        "0600000000",
        "0400000000",
        "0500000000ff",
        "0C0000000261000000000000",
        "0D000000086100020000",  # bool 2 (and wrong length)
        "0900000008610002",
        "0C00000010610001000000",  # int32 cut short
        "0D000000106100010000000000",  # trailing byte inside the document
        "0C0000001A6100010000000000",  # unknown type 0x1A
        "0C000000026100FFFFFF7F00",  # huge string length
        "0E00000002610002000000E90000",  # bad UTF-8
        "0D00000003610005000000000000",  # nested length leaks
    ],
)
def test_bad_bytes_raise_invalid_bson(hex_data: str) -> None:
    with pytest.raises(InvalidBSON):
        decode(bytes.fromhex(hex_data))


def test_trailing_bytes_after_the_document_are_refused() -> None:
    data = encode({"a": 1})
    with pytest.raises(InvalidBSON, match="after"):
        decode(data + b"\x00")


def test_decode_needs_bytes_like() -> None:
    with pytest.raises(TypeError):
        decode("not bytes")  # type: ignore[arg-type]


def test_unicode_decode_error_handler() -> None:
    data = bytes.fromhex("0E00000002610002000000E90000")
    assert decode(data, CodecOptions(unicode_decode_error_handler="replace")) == {"a": "\ufffd"}
    assert decode(data, CodecOptions(unicode_decode_error_handler="ignore")) == {"a": ""}


# -- decode_all / decode_iter / memoryview --


def test_decode_all_and_iter_and_memoryview() -> None:
    docs = [{"i": i, "s": "x" * i} for i in range(5)]
    data = b"".join(encode(d) for d in docs)
    assert decode_all(data) == docs
    assert list(decode_iter(memoryview(data))) == docs
    assert decode_all(bytearray(data)) == docs
    assert decode(memoryview(data)[: len(encode(docs[0]))]) == docs[0]
    assert decode_all(b"") == []
    with pytest.raises(InvalidBSON):
        decode_all(data[:-1])
    with pytest.raises(InvalidBSON):
        list(decode_iter(data + b"\x01"))


# -- codec options --


def test_codec_options_defaults_and_with_options() -> None:
    opts = CodecOptions()
    assert opts.document_class is dict and not opts.tz_aware
    assert opts.uuid_representation == UuidRepresentation.UNSPECIFIED
    assert opts.datetime_conversion == DatetimeConversion.DATETIME
    changed = opts.with_options(tz_aware=True, uuid_representation=4)
    assert changed.tz_aware and changed.uuid_representation is UuidRepresentation.STANDARD
    assert opts.tz_aware is False


@pytest.mark.parametrize(
    "kwargs",
    [
        {"document_class": list},
        {"document_class": "dict"},
        {"tz_aware": 1},
        {"tzinfo": UTC},
        {"tz_aware": True, "tzinfo": "UTC"},
        {"uuid_representation": 42},
        {"datetime_conversion": 0},
        {"unicode_decode_error_handler": "nope"},
        {"unicode_decode_error_handler": "\udcff"},
        {"unicode_decode_error_handler": "st\x00rict"},
    ],
)
def test_codec_options_validation(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        CodecOptions(**kwargs)


def test_a_lone_surrogate_handler_name_is_a_type_error_naming_it() -> None:
    """codecs looks error handler names up as UTF-8: a lone surrogate must not escape as a
    UnicodeEncodeError (a ValueError) but be refused like any unknown handler."""
    with pytest.raises(TypeError, match="lone surrogate") as info:
        CodecOptions(unicode_decode_error_handler="\udcff")
    assert not isinstance(info.value, UnicodeError)


def test_uuid_options_round_trip() -> None:
    value = uuid.uuid4()
    opts = CodecOptions(uuid_representation=UuidRepresentation.STANDARD)
    assert decode(encode({"u": value}, codec_options=opts), opts) == {"u": value}


def test_subclass_encoders_are_remembered_and_stay_right() -> None:
    import enum

    class Color(enum.IntEnum):
        RED = 1
        BIG = 2**40

    for _ in range(2):
        assert decode(encode({"c": Color.RED, "b": Color.BIG})) == {"c": 1, "b": 2**40}
    ordered = collections.OrderedDict(a=collections.OrderedDict(b=1))
    for _ in range(2):
        assert decode(encode({"o": ordered})) == {"o": {"a": {"b": 1}}}


def test_datetime_with_a_tzinfo_that_gives_no_offset_is_naive_utc() -> None:
    from datetime import tzinfo

    class NoOffset(tzinfo):
        def utcoffset(self, dt: datetime | None) -> None:
            return None

        def dst(self, dt: datetime | None) -> None:
            return None

        def tzname(self, dt: datetime | None) -> None:
            return None

    value = datetime(2000, 1, 1, 12, tzinfo=NoOffset())
    assert decode(encode({"d": value}))["d"] == datetime(2000, 1, 1, 12)

"""Decoding into PyMongo's classes (CodecOptions.value_classes), compared with PyMongo.

The same bytes are decoded by PyMongo's ``bson.decode`` and by asyncmongo with
``pymongo_codec_options(...)`` (both implementations, through the ``bson_impl`` fixture);
the results must be equal value for value *and* class for class. Hypothesis documents check
that the two asyncmongo implementations agree with each other and with PyMongo, and mutated
bytes that they still raise only InvalidBSON.
"""

from __future__ import annotations

import datetime
import struct
import uuid
from typing import Any

import pytest

pytest.importorskip(
    "pymongo",
    reason="PyMongo (a test-only dependency) is not installed: nothing to compare with",
)

import bson
from bson import SON
from bson.codec_options import CodecOptions as PyMongoCodecOptions
from bson.raw_bson import RawBSONDocument as PyMongoRawBSONDocument
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asyncmongo.bson as am
from asyncmongo.bson import CodecOptions, InvalidBSON, codec
from asyncmongo.bson.codec_options import ValueClasses, as_codec_options
from asyncmongo.compat._values import (
    pymongo_codec_options,
    pymongo_value_classes,
    to_pymongo_codec_options,
)

OID = am.ObjectId("5f0c3b0e9d1e4a2b3c4d5e6f")
UUID_BYTES = bytes(range(16))

EVERY_TYPE: dict[str, Any] = {
    "oid": OID,
    "int64": am.Int64(-(2**40)),
    "int32": 7,
    "decimal": am.Decimal128("-1.25E+3"),
    "nan": am.Decimal128("NaN"),
    "binary0": b"\x00\x01",
    "binary2": am.Binary(b"old", 2),
    "binary3": am.Binary(UUID_BYTES, 3),
    "binary4": am.Binary(UUID_BYTES, 4),
    "binary4_short": am.Binary(b"short", 4),  # a UUID under STANDARD: see below
    "binary9": am.Binary(b"\x03\x00\x01", 9),
    "binary128": am.Binary(b"user", 128),
    "dbref": am.DBRef("coll", OID, "db", {"extra": am.Int64(1)}),
    "dbref_plain": am.DBRef("coll", 5),
    "dbref_null_db": {"$ref": "coll", "$id": 1, "$db": None},
    "not_dbref": {"$ref": 1, "$id": 2},
    "regex": am.Regex("^a.*b$", "imsx"),
    "regex_plain": am.Regex("x", ""),
    "timestamp": am.Timestamp(4_000_000_000, 17),
    "code": am.Code("function() {}"),
    "code_scope": am.Code("f(x)", {"x": am.Int64(3), "o": OID}),
    "min": am.MinKey(),
    "max": am.MaxKey(),
    "symbol": am.Symbol("sym"),
    "undefined": am.Undefined(),
    "dbpointer": am.DBPointer("db.coll", OID),
    "date": datetime.datetime(2020, 5, 17, 1, 2, 3, 4000),
    "date_ms": am.DatetimeMS(-(2**50)),
    "nested": {"a": [am.Int64(1), OID, {"t": am.Timestamp(1, 2)}], "b": {"c": am.MinKey()}},
    "array": [am.Decimal128("1"), am.Regex("r", "i"), None, True, 1.5, "s"],
}

OPTIONS: list[dict[str, Any]] = [
    {"datetime_conversion": 4},
    {"datetime_conversion": 3, "uuid_representation": 4},
    {"datetime_conversion": 2, "uuid_representation": 3, "tz_aware": True},
    {"datetime_conversion": 4, "uuid_representation": 5},
    {"datetime_conversion": 4, "uuid_representation": 6, "document_class": SON},
    {
        "datetime_conversion": 4,
        "tz_aware": True,
        "tzinfo": datetime.timezone(datetime.timedelta(hours=2)),
    },
]


def typed(value: Any) -> Any:
    """``value`` with the class of every part spelled out, for exact comparisons."""
    if isinstance(value, bson.DBRef):
        extra = {k: typed(v) for k, v in value.as_doc().items()}
        return (bson.DBRef, value.collection, typed(value.id), value.database, extra)
    if isinstance(value, bson.Code):
        return (bson.Code, str(value), typed(value.scope))
    if isinstance(value, PyMongoRawBSONDocument):
        return (PyMongoRawBSONDocument, value.raw, {k: typed(v) for k, v in value.items()})
    if isinstance(value, dict):
        return (type(value), [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return (list, [typed(v) for v in value])
    if isinstance(value, bson.Regex):
        return (bson.Regex, value.pattern, value.flags, type(value.flags))
    if isinstance(value, float) and value != value:
        return (float, "nan")
    return (type(value), value)


@pytest.mark.usefixtures("bson_impl")
@pytest.mark.parametrize(
    "options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items())
)
def test_every_type_decodes_as_pymongo_decodes_it(options: dict[str, Any]) -> None:
    data = am.encode({k: v for k, v in EVERY_TYPE.items() if k != "binary4_short"})
    want = bson.decode(data, codec_options=PyMongoCodecOptions(**options))
    got = am.decode(data, pymongo_codec_options(PyMongoCodecOptions(**options)))
    assert typed(got) == typed(want)


@pytest.mark.usefixtures("bson_impl")
@pytest.mark.parametrize("name", sorted(set(EVERY_TYPE) - {"binary4_short"}))
def test_each_value_alone_in_documents_and_arrays(name: str) -> None:
    value = EVERY_TYPE[name]
    opts = PyMongoCodecOptions(datetime_conversion=4, uuid_representation=4)
    for doc in ({"v": value}, {"a": [value, value]}, {"d": {"e": value}}):
        data = am.encode(doc)
        want = bson.decode(data, codec_options=opts)
        got = am.decode(data, pymongo_codec_options(opts))
        assert typed(got) == typed(want)
        assert am.decode_all(data + data, pymongo_codec_options(opts)) == [got, got]
        assert list(am.decode_iter(data, pymongo_codec_options(opts))) == [got]


@pytest.mark.usefixtures("bson_impl")
def test_values_are_instances_pydantic_and_odms_accept() -> None:
    auto = CodecOptions(datetime_conversion=am.DatetimeConversion.DATETIME_AUTO)
    got = am.decode(am.encode(EVERY_TYPE), pymongo_codec_options(auto))
    assert type(got["date_ms"]) is bson.DatetimeMS
    assert type(got["oid"]) is bson.ObjectId and bson.ObjectId(got["oid"]) == got["oid"]
    assert str(got["oid"]) == str(OID) and got["oid"].generation_time is not None
    assert type(got["int64"]) is bson.Int64 and got["int64"] == -(2**40)
    assert type(got["decimal"]) is bson.Decimal128
    assert str(got["decimal"].to_decimal()) == "-1.25E+3"
    assert type(got["binary4"]) is bson.Binary and got["binary4"].subtype == 4
    assert type(got["binary0"]) is bytes
    assert type(got["timestamp"]) is bson.Timestamp
    assert (got["timestamp"].time, got["timestamp"].inc) == (4_000_000_000, 17)
    assert type(got["code_scope"]) is bson.Code and got["code_scope"].scope["x"] == 3
    assert type(got["code"]) is bson.Code and got["code"].scope is None
    assert type(got["regex"]) is bson.Regex and got["regex"].try_compile().pattern == "^a.*b$"
    assert type(got["dbref"]) is bson.DBRef and got["dbref"].database == "db"
    assert type(got["dbref"].id) is bson.ObjectId and got["dbref"].extra == 1
    assert got["min"] == bson.MinKey() and got["max"] == bson.MaxKey()
    assert got["symbol"] == "sym" and got["undefined"] is None
    # Re-encoded, asyncmongo writes them as PyMongo does (symbols, undefined and DBPointers
    # became str, None and DBRef, as in PyMongo, so the bytes differ from the source there).
    assert am.encode(got) == bson.encode(got)
    same = {
        k: v
        for k, v in EVERY_TYPE.items()
        if k not in ("symbol", "undefined", "dbpointer", "dbref_null_db")
    }
    assert am.encode(am.decode(am.encode(same), pymongo_codec_options(auto))) == am.encode(same)


@pytest.mark.usefixtures("bson_impl")
def test_a_uuid_of_the_wrong_length_is_invalid_as_in_pymongo() -> None:
    data = am.encode({"u": am.Binary(b"short", 4), "l": am.Binary(b"x" * 17, 3)})
    for rep in (3, 4):
        with pytest.raises(bson.errors.InvalidBSON):
            bson.decode(data, codec_options=PyMongoCodecOptions(uuid_representation=rep))
        with pytest.raises(InvalidBSON, match="16"):
            am.decode(data, pymongo_codec_options(CodecOptions(uuid_representation=rep)))
        # asyncmongo's own classes keep such a payload as Binary.
        assert type(am.decode(data, CodecOptions(uuid_representation=rep))["u"]) is am.Binary


@pytest.mark.usefixtures("bson_impl")
def test_uuid_representations_follow_pymongo() -> None:
    data = am.encode({"b3": am.Binary(UUID_BYTES, 3), "b4": am.Binary(UUID_BYTES, 4)})
    standard = am.decode(data, pymongo_codec_options(CodecOptions(uuid_representation=4)))
    assert type(standard["b3"]) is bson.Binary
    assert standard["b4"] == uuid.UUID(bytes=UUID_BYTES)
    legacy = am.decode(data, pymongo_codec_options(CodecOptions(uuid_representation=3)))
    assert type(legacy["b3"]) is uuid.UUID and type(legacy["b4"]) is bson.Binary
    unspecified = am.decode(data, pymongo_codec_options())
    assert {type(v) for v in unspecified.values()} == {bson.Binary}


@pytest.mark.usefixtures("bson_impl")
def test_pymongo_raw_bson_document_as_document_class() -> None:
    data = am.encode({"a": OID, "b": {"c": am.Int64(5)}, "d": [am.Timestamp(1, 2)]})
    opts = pymongo_codec_options(PyMongoCodecOptions(document_class=PyMongoRawBSONDocument))
    got = am.decode(data, opts)
    assert type(got) is PyMongoRawBSONDocument and got.raw == data
    assert type(got["a"]) is bson.ObjectId and type(got["b"]) is PyMongoRawBSONDocument
    assert got["b"]["c"] == 5 and type(got["b"]["c"]) is bson.Int64
    want = bson.decode(
        data, codec_options=PyMongoCodecOptions(document_class=PyMongoRawBSONDocument)
    )
    assert typed(got) == typed(want)
    # asyncmongo's RawBSONDocument keeps asyncmongo's options, with PyMongo's values.
    ours = am.decode(data, pymongo_codec_options(CodecOptions(document_class=am.RawBSONDocument)))
    assert type(ours) is am.RawBSONDocument and type(ours["a"]) is bson.ObjectId


def test_to_pymongo_codec_options_round_trips() -> None:
    source = PyMongoCodecOptions(
        document_class=SON,
        tz_aware=True,
        uuid_representation=4,
        unicode_decode_error_handler="replace",
        tzinfo=datetime.UTC,
        datetime_conversion=3,
    )
    ours = as_codec_options(source)
    back = to_pymongo_codec_options(ours)
    assert back == source
    assert as_codec_options(back) == ours


def test_as_codec_options_converts_pymongo_options_field_by_field() -> None:
    source = PyMongoCodecOptions(
        document_class=SON,
        tz_aware=True,
        uuid_representation=3,
        unicode_decode_error_handler="ignore",
        tzinfo=datetime.timezone(datetime.timedelta(hours=-3)),
        datetime_conversion=2,
    )
    got = as_codec_options(source)
    assert got == CodecOptions(
        document_class=SON,
        tz_aware=True,
        uuid_representation=am.UuidRepresentation.PYTHON_LEGACY,
        unicode_decode_error_handler="ignore",
        tzinfo=source.tzinfo,
        datetime_conversion=am.DatetimeConversion.DATETIME_CLAMP,
    )
    assert got.value_classes is None
    assert as_codec_options(got) is got
    assert as_codec_options(PyMongoCodecOptions()) == CodecOptions()
    with pytest.raises(TypeError, match="must be a CodecOptions"):
        as_codec_options({"tz_aware": True})


def test_value_classes_field() -> None:
    assert CodecOptions().value_classes is None
    table = pymongo_value_classes()
    assert isinstance(table, ValueClasses) and table is pymongo_value_classes()
    assert pymongo_codec_options().value_classes is table
    assert pymongo_codec_options(CodecOptions(tz_aware=True)).tz_aware
    with pytest.raises(TypeError, match="value_classes"):
        CodecOptions(value_classes=object())  # type: ignore[arg-type]
    hash(pymongo_codec_options())


# -- hypothesis: both implementations agree with each other and with PyMongo --

_no_nul = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")
keys = st.text(_no_nul, max_size=6).filter(lambda k: not k.startswith("$"))
object_ids = st.binary(min_size=12, max_size=12).map(am.ObjectId)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**63), 2**63 - 1).map(am.Int64),
    st.floats(allow_nan=False),
    st.text(max_size=10),
    st.binary(max_size=18),
    st.builds(am.Binary, st.binary(max_size=18), st.integers(1, 255)),
    object_ids,
    st.integers(-(2**62), 2**62).map(am.DatetimeMS),
    st.builds(am.Regex, st.text(_no_nul, max_size=6), st.text("imsxlu", max_size=4)),
    st.builds(am.Code, st.text(max_size=8)),
    st.builds(am.Symbol, st.text(max_size=8)),
    st.builds(am.Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
    st.builds(am.DBPointer, st.text(max_size=8), object_ids),
    st.sampled_from([am.MinKey(), am.MaxKey(), am.Undefined()]),
    st.integers(-(10**20), 10**20).map(lambda i: am.Decimal128(str(i))),
    st.builds(am.DBRef, st.text(max_size=5), object_ids),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(keys, children, max_size=3),
        st.builds(am.Code, st.text(max_size=5), st.dictionaries(keys, children, max_size=2)),
    ),
    max_leaves=8,
)
documents = st.dictionaries(keys, values, max_size=5)
HYPOTHESIS = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class _Wrap(am.TypeDecoder):
    """A decoder of documents, to run the type registry's path under fuzzing."""

    bson_type = dict

    def transform_bson(self, value: Any) -> Any:
        return {"wrapped": value}


FUZZ_OPTIONS = [
    pymongo_codec_options(CodecOptions(uuid_representation=4, datetime_conversion=4)),
    pymongo_codec_options(
        CodecOptions(
            uuid_representation=3, datetime_conversion=2, type_registry=am.TypeRegistry([_Wrap()])
        )
    ),
    CodecOptions(type_registry=am.TypeRegistry([_Wrap()]), datetime_conversion=4),
]


def _each_implementation(data: bytes, opts: CodecOptions) -> list[Any]:
    results = []
    before = codec.implementation()
    try:
        for name in codec.available_implementations():
            codec.use_implementation(name)
            try:
                results.append(typed(am.decode(data, opts)))
            except InvalidBSON as exc:
                results.append(("InvalidBSON", type(exc)))
    finally:
        codec.use_implementation(before)
    return results


@HYPOTHESIS
@given(documents, st.sampled_from(OPTIONS))
def test_generated_documents_decode_as_pymongo(
    doc: dict[str, Any], options: dict[str, Any]
) -> None:
    data = am.encode(doc)
    want = typed(bson.decode(data, codec_options=PyMongoCodecOptions(**options)))
    results = _each_implementation(data, pymongo_codec_options(PyMongoCodecOptions(**options)))
    assert results == [want] * len(results)


@settings(HYPOTHESIS, max_examples=600)
@given(documents, st.data())
def test_mutated_bytes_raise_only_invalid_bson(doc: dict[str, Any], data: st.DataObject) -> None:
    raw = bytearray(am.encode(doc))
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        kind = data.draw(st.sampled_from(["flip", "cut", "length"]))
        if kind == "flip":
            raw[pos] = data.draw(st.integers(0, 255))
        elif kind == "cut":
            del raw[max(pos, 1) :]
        elif len(raw) >= pos + 4:
            struct.pack_into("<i", raw, pos, data.draw(st.integers(-(2**31), 2**31 - 1)))
    opts = data.draw(st.sampled_from(FUZZ_OPTIONS))
    results = _each_implementation(bytes(raw), opts)  # anything but InvalidBSON propagates
    assert all(r == results[0] for r in results)

"""Fuzzing the BSON codec with hypothesis.

Whatever bytes arrive (random, random behind a plausible header, or a valid document with
bytes flipped, cut or inserted), decoding either succeeds or raises InvalidBSON: never
IndexError, struct.error, UnicodeDecodeError, RecursionError or anything else. Generated
documents round trip and re-encode to the same bytes. Over 10,000 examples in total (10,800), kept
to a few seconds. Validity also agrees with PyMongo's C decoder on mutated documents. Every
check runs on each codec implementation this install has (the pure reference and the C
accelerators).
"""

from __future__ import annotations

import json
import struct
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncmongo.bson import (
    Binary,
    Code,
    CodecOptions,
    DatetimeConversion,
    DBPointer,
    Decimal128,
    Int64,
    InvalidBSON,
    MaxKey,
    MinKey,
    ObjectId,
    RawBSONDocument,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
    UuidRepresentation,
    codec,
    decode,
    decode_all,
    encode,
)

FUZZ = settings(
    max_examples=3000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

IMPLEMENTATIONS = codec.available_implementations()


def on_each_implementation(check: Callable[[], None]) -> None:
    """Run ``check`` once per codec implementation (hypothesis and function-scoped fixtures do
    not mix, so the loop is inside the test)."""
    before = codec.implementation()
    try:
        for name in IMPLEMENTATIONS:
            codec.use_implementation(name)
            check()
    finally:
        codec.use_implementation(before)


OPTIONS = [
    CodecOptions(),
    CodecOptions(
        tz_aware=True,
        uuid_representation=UuidRepresentation.STANDARD,
        datetime_conversion=DatetimeConversion.DATETIME_AUTO,
        unicode_decode_error_handler="replace",
    ),
    CodecOptions(uuid_representation=UuidRepresentation.JAVA_LEGACY),
    CodecOptions(document_class=RawBSONDocument),
]

_no_nul = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")
keys = st.text(_no_nul, max_size=8)
cstrings = st.text(_no_nul, max_size=8)
datetimes = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
)
object_ids = st.binary(min_size=12, max_size=12).map(ObjectId)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=20),
    st.builds(Binary, st.binary(max_size=20), st.integers(1, 255)),
    object_ids,
    datetimes,
    st.builds(Regex, cstrings, st.text("imsxlu", max_size=4)),
    st.builds(Code, st.text(max_size=10)),
    st.builds(Symbol, st.text(max_size=10)),
    st.builds(Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
    st.builds(DBPointer, st.text(max_size=10), object_ids),
    st.sampled_from([MinKey(), MaxKey(), Undefined()]),
    st.integers(-(10**20), 10**20).map(lambda i: Decimal128(str(i))),
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
        st.builds(Code, st.text(max_size=5), st.dictionaries(keys, children, max_size=3)),
    )


values = st.recursive(scalars, _containers, max_leaves=8)
documents = st.dictionaries(keys, values, max_size=6)


def _decode_or_invalid(data: bytes, opts: CodecOptions) -> None:
    try:
        doc = decode(data, opts)
    except InvalidBSON:
        return
    if isinstance(doc, RawBSONDocument):
        try:
            _touch(doc)
        except InvalidBSON:
            return


def _touch(value: Any) -> None:
    """Read every field (RawBSONDocument decodes lazily)."""
    if isinstance(value, RawBSONDocument | dict):
        for item in value.values():
            _touch(item)
    elif isinstance(value, list):
        for item in value:
            _touch(item)


@settings(FUZZ, max_examples=3500)
@given(st.binary(max_size=64), st.sampled_from(OPTIONS))
def test_random_bytes_raise_only_invalid_bson(data: bytes, opts: CodecOptions) -> None:
    on_each_implementation(lambda: _decode_or_invalid(data, opts))


@FUZZ
@given(st.binary(max_size=60), st.sampled_from(OPTIONS))
def test_random_bytes_behind_a_valid_header(body: bytes, opts: CodecOptions) -> None:
    data = struct.pack("<i", len(body) + 5) + body + b"\x00"

    def check() -> None:
        _decode_or_invalid(data, opts)
        try:
            decode_all(data + data[:-1])
        except InvalidBSON:
            pass

    on_each_implementation(check)


def _valid_corpus() -> list[bytes]:
    """Every valid document of the bson-corpus suite: a cheap, diverse source to mutate."""
    folder = Path(__file__).resolve().parents[2] / "spec_tests" / "data" / "bson-corpus"
    found = [
        bytes.fromhex(case["canonical_bson"])
        for path in sorted(folder.glob("*.json"))
        for case in json.loads(path.read_text()).get("valid", [])
    ]
    return found or [encode({"a": 1, "b": [{"c": "d"}]})]


VALID = _valid_corpus()


@st.composite
def mutated_documents(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "delete", "length"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 4))]
        elif len(data) >= pos + 4:
            struct.pack_into("<i", data, pos, draw(st.integers(-(2**31), 2**31 - 1)))
    return bytes(data)


@settings(FUZZ, max_examples=2500)
@given(mutated_documents(), st.sampled_from(OPTIONS))
def test_mutated_documents_raise_only_invalid_bson(data: bytes, opts: CodecOptions) -> None:
    on_each_implementation(lambda: _decode_or_invalid(data, opts))


@settings(FUZZ, max_examples=300)
@given(documents)
def test_generated_documents_round_trip(doc: dict[str, Any]) -> None:
    def check() -> None:
        data = encode(doc)
        decoded = decode(data)
        assert decoded == _expected(doc)
        assert encode(decoded) == data
        raw = decode(data, CodecOptions(document_class=RawBSONDocument))
        assert encode(raw) == data
        _touch(raw)

    on_each_implementation(check)


@settings(FUZZ, max_examples=300)
@given(st.lists(st.floats(), max_size=5), st.integers(0, 2**64 - 1).map(lambda b: b))
def test_float_bits_are_kept(floats: list[float], bits: int) -> None:
    payload = struct.unpack("<d", struct.pack("<Q", bits))[0]

    def check() -> None:
        data = encode({"f": floats, "p": payload})
        assert encode(decode(data)) == data

    on_each_implementation(check)


def _expected(value: Any) -> Any:
    """What decoding gives for a generated value: tuples are lists, DBRef-shaped documents
    become DBRefs (none are generated by these strategies: keys are random)."""
    if isinstance(value, dict):
        return {k: _expected(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expected(v) for v in value]
    if isinstance(value, datetime):
        return value - timedelta(microseconds=value.microsecond % 1000)
    return value


_uuid_opts = CodecOptions(uuid_representation=UuidRepresentation.STANDARD, tz_aware=True)


@settings(FUZZ, max_examples=200)
@given(st.dictionaries(keys, st.one_of(st.uuids(), datetimes, values), max_size=6))
def test_uuids_and_aware_datetimes_round_trip(doc: dict[str, Any]) -> None:
    def check() -> None:
        data = encode(doc, codec_options=_uuid_opts)
        decoded = decode(data, _uuid_opts)
        assert encode(decoded, codec_options=_uuid_opts) == data
        for key, value in doc.items():
            if isinstance(value, uuid.UUID):
                assert decoded[key] == value
            elif type(value) is datetime:
                assert decoded[key] == _expected(value).replace(tzinfo=UTC)

    on_each_implementation(check)


@settings(FUZZ, max_examples=1000)
@given(mutated_documents())
def test_validity_agrees_with_pymongo(data: bytes) -> None:
    """Differential check against an independent decoder (PyMongo's C extension, a test-only
    peer): the same mutated bytes are valid for both or invalid for both."""
    bson = pytest.importorskip("bson")
    peer_options = bson.CodecOptions(datetime_conversion=bson.DatetimeConversion.DATETIME_AUTO)
    ours_options = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO)
    try:
        bson.decode(data, peer_options)
        peer_ok = True
    except Exception:
        peer_ok = False

    def check() -> None:
        try:
            decode(data, ours_options)
            ours_ok = True
        except InvalidBSON:
            ours_ok = False
        assert ours_ok == peer_ok

    on_each_implementation(check)

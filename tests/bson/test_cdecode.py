"""The compiled decoder (asyncmongo.bson._cdecode) against the pure reference (_decode.py).

For every input the two must be indistinguishable: the same values of the same Python types
(compared by :func:`same`, which also tells 1, 1.0, True and Int64(1) apart), or the same
exception type. Differential hypothesis fuzz (arbitrary bytes, bytes behind a valid header,
mutated valid documents) under many codec options, the benchmark documents, hostile nesting,
odd arguments and a leak check.
"""

from __future__ import annotations

import codecs
import gc
import json
import random
import struct
import sys
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from datetime import datetime, timedelta, timezone
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
    DatetimeMS,
    DBPointer,
    DBRef,
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
)
from asyncmongo.bson import _decode as pure

cdecode = pytest.importorskip(
    "asyncmongo.bson._cdecode",
    reason="the C decoder is not built here (python setup.py build_ext --inplace)",
)

FUZZ = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class SONLike(MutableMapping[str, Any]):
    """An ordered MutableMapping that is not a dict (document_class other than dict)."""

    def __init__(self) -> None:
        self._items: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._items[key] = value

    def __delitem__(self, key: str) -> None:
        del self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def _count_handler(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    return f"<{exc.end - exc.start}>", exc.end


codecs.register_error("h31_count", _count_handler)

OPTIONS = [
    CodecOptions(),
    CodecOptions(tz_aware=True),
    CodecOptions(tz_aware=True, tzinfo=timezone(timedelta(hours=-5))),
    CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO),
    CodecOptions(tz_aware=True, datetime_conversion=DatetimeConversion.DATETIME_AUTO),
    CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_CLAMP),
    CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS),
    CodecOptions(document_class=OrderedDict),
    CodecOptions(document_class=SONLike),
    CodecOptions(document_class=RawBSONDocument),
    CodecOptions(unicode_decode_error_handler="replace"),
    CodecOptions(unicode_decode_error_handler="surrogateescape"),
    CodecOptions(unicode_decode_error_handler="ignore"),
    CodecOptions(unicode_decode_error_handler="h31_count"),
    CodecOptions(uuid_representation=UuidRepresentation.STANDARD),
    CodecOptions(uuid_representation=UuidRepresentation.PYTHON_LEGACY),
    CodecOptions(uuid_representation=UuidRepresentation.JAVA_LEGACY),
    CodecOptions(uuid_representation=UuidRepresentation.CSHARP_LEGACY),
]
options = st.sampled_from(OPTIONS)


def _option_id(opts: CodecOptions) -> str:
    """The fields that differ from the defaults, e.g. ``tz_aware=True``."""
    default = CodecOptions()
    changed = [
        f"{name}={getattr(opts, name)!s}"
        for name in opts.__dataclass_fields__
        if getattr(opts, name) != getattr(default, name)
    ]
    return ",".join(changed) or "default"


# -- comparing outcomes ----------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Equal values of identical types, all the way down (1 == 1.0 == True is not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, RawBSONDocument):
        return bool(a.raw == b.raw and a.codec_options == b.codec_options)
    if isinstance(a, Mapping):
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, datetime):
        return repr(a) == repr(b)
    if isinstance(a, Code):
        return str(a) == str(b) and same(a.scope, b.scope)
    if isinstance(a, DBRef):
        return (
            same(a.collection, b.collection)
            and same(a.id, b.id)
            and same(a.database, b.database)
            and same(a.extra, b.extra)
        )
    if isinstance(a, Binary):
        return bytes(a) == bytes(b) and a.subtype == b.subtype
    if isinstance(a, Decimal128):
        return bool(a.bid == b.bid)
    if isinstance(a, Regex):
        return same(a.pattern, b.pattern) and same(a.flags, b.flags)
    if isinstance(a, DBPointer):
        return same(a.namespace, b.namespace) and same(a.id, b.id)
    if isinstance(a, Timestamp):
        return same(a.time, b.time) and same(a.inc, b.inc)
    if isinstance(a, ObjectId):
        return same(a.binary, b.binary)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", call()
    except Exception as exc:  # the exception's type is the verdict under test
        return "error", type(exc)


def assert_same_outcome(c: tuple[str, Any], p: tuple[str, Any]) -> None:
    assert c[0] == p[0], (c, p)
    if c[0] == "error":
        assert c[1] is p[1], (c, p)
    else:
        assert same(c[1], p[1]), (c, p)


def check_all_entry_points(data: bytes, opts: CodecOptions, pos: int = 0) -> None:
    """decode, decode_all and decode_document_at agree, on bytes and on other buffers."""
    assert_same_outcome(
        outcome(lambda: cdecode.decode(data, opts)), outcome(lambda: codec._py_decode(data, opts))
    )
    assert_same_outcome(
        outcome(lambda: cdecode.decode_all(data, opts)),
        outcome(lambda: codec._py_decode_all(data, opts)),
    )
    assert_same_outcome(
        outcome(lambda: cdecode.decode_document_at(data, pos, opts)),
        outcome(lambda: pure.decode_document_at(data, pos, opts)),
    )
    for buffer in (bytearray(data), memoryview(data)):
        assert_same_outcome(
            outcome(lambda: cdecode.decode(buffer, opts)),  # noqa: B023 (called at once)
            outcome(lambda: codec._py_decode(buffer, opts)),  # noqa: B023
        )


# -- inputs ----------------------------------------------------------------------------------

_no_nul = st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")
keys = st.one_of(
    st.sampled_from(["$ref", "$id", "$db", "_id", "a", "é"]), st.text(_no_nul, max_size=6)
)
object_ids = st.binary(min_size=12, max_size=12).map(ObjectId)
ms = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-62135596800000 - 2000, -62135596800000 + 2000),
    st.integers(253402300799000 - 2000, 253402300799000 + 2000),
    st.integers(-(10**13), 10**13),
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**63), 2**63 - 1).map(Int64),
    st.floats(),
    st.text(max_size=12),
    st.binary(max_size=20),
    st.builds(Binary, st.binary(max_size=20), st.integers(1, 255)),
    st.builds(Binary, st.binary(min_size=16, max_size=16), st.sampled_from([3, 4])),
    object_ids,
    ms.map(DatetimeMS),
    st.builds(Regex, st.text(_no_nul, max_size=5), st.text("imsxlu", max_size=3)),
    st.builds(Code, st.text(max_size=6)),
    st.builds(Symbol, st.text(max_size=6)),
    st.builds(Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
    st.builds(DBPointer, st.text(max_size=6), object_ids),
    st.sampled_from([MinKey(), MaxKey(), Undefined()]),
    st.integers(-(10**20), 10**20).map(lambda i: Decimal128(str(i))),
    st.builds(DBRef, st.text(max_size=5), st.integers(0, 9)),
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
        st.builds(Code, st.text(max_size=4), st.dictionaries(keys, children, max_size=3)),
    )


documents = st.dictionaries(keys, st.recursive(scalars, _containers, max_leaves=6), max_size=5)


def encode(doc: dict[str, Any]) -> bytes:
    return codec._py_encode(doc, False, CodecOptions())


def _random_value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(26 if depth < 4 else 22)
    text = "".join(rng.choice("abé\u20ac\U0001f600xyz_$") for _ in range(rng.randrange(8)))
    simple: list[Callable[[], Any]] = [
        lambda: None,
        lambda: rng.random() < 0.5,
        lambda: rng.randint(-(2**31), 2**31 - 1),
        lambda: Int64(rng.randint(-(2**63), 2**63 - 1)),
        lambda: rng.uniform(-1e300, 1e300),
        lambda: text,
        lambda: rng.randbytes(rng.randrange(10)),
        lambda: Binary(rng.randbytes(16), rng.choice([1, 3, 4, 5, 0x80])),
        lambda: ObjectId(rng.randbytes(12)),
        lambda: DatetimeMS(rng.choice([rng.randint(-(2**63), 2**63 - 1), rng.randint(0, 2**41)])),
        lambda: Regex(text.replace("\x00", ""), rng.choice(["", "i", "ms"])),
        lambda: Code(text),
        lambda: Symbol(text),
        lambda: Timestamp(rng.randrange(2**32), rng.randrange(2**32)),
        lambda: DBPointer(text, ObjectId(rng.randbytes(12))),
        lambda: rng.choice([MinKey(), MaxKey(), Undefined()]),
        lambda: Decimal128(str(rng.randint(-(10**30), 10**30))),
        lambda: DBRef(text, rng.randrange(9), rng.choice([None, "db"]), {"x": 1}),
        lambda: {"$ref": rng.choice([text, 5]), "$id": 1, "$db": rng.choice(["d", 2])},
        lambda: 2.5,
        lambda: "",
        lambda: True,
        lambda: [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))],
        lambda: _random_document(rng, depth + 1),
        lambda: Code(text, _random_document(rng, depth + 1)),
        lambda: [_random_document(rng, depth + 1)],
    ]
    return simple[kind]()


def _random_document(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    names = ["_id", "a", "b", "name", "é", "$ref", "$id", "$db", "k" * rng.randrange(1, 60)]
    return {
        rng.choice(names) + str(i % 3): _random_value(rng, depth) for i in range(rng.randrange(7))
    }


def _generated_pool() -> list[bytes]:
    """Documents of every type and shape, built once from a fixed seed (cheap to draw)."""
    rng = random.Random(31)
    return [encode(_random_document(rng)) for _ in range(300)]


def _valid_corpus() -> list[bytes]:
    folder = Path(__file__).resolve().parents[2] / "spec_tests" / "data" / "bson-corpus"
    return [
        bytes.fromhex(case["canonical_bson"])
        for path in sorted(folder.glob("*.json"))
        for case in json.loads(path.read_text()).get("valid", [])
    ]


VALID = _valid_corpus() + _generated_pool()
TYPE_BYTES = [*range(0x01, 0x14), 0x7F, 0xFF, 0x00, 0x20, 0x80]
BAD_UTF8 = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80", b"\xc0\xaf"]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(
            st.sampled_from(["flip", "small", "cut", "insert", "delete", "length", "type", "utf8"])
        )
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif kind == "small" and data:
            data[pos] = draw(st.integers(0, 3))
        elif kind == "cut":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 4))]
        elif kind == "type" and data:
            data[pos] = draw(st.sampled_from(TYPE_BYTES))
        elif kind == "utf8":
            data[pos:pos] = draw(st.sampled_from(BAD_UTF8))
        elif len(data) >= pos + 4:
            delta = draw(st.sampled_from([-(2**31), -1, 1, 2, 4, 2**31 - 1]))
            value = struct.unpack_from("<i", data, pos)[0] + delta
            struct.pack_into("<i", data, pos, max(-(2**31), min(2**31 - 1, value)))
    return bytes(data)


# -- differential fuzz: 3000 + 2000 + 5000 + 500 = 10,500 examples --


@settings(FUZZ, max_examples=3000)
@given(st.binary(max_size=48), options)
def test_arbitrary_bytes(data: bytes, opts: CodecOptions) -> None:
    check_all_entry_points(data, opts)


@settings(FUZZ, max_examples=2000)
@given(st.binary(max_size=48), options, st.integers(0, 3))
def test_bytes_behind_a_valid_header(body: bytes, opts: CodecOptions, pos: int) -> None:
    data = b"\x00" * pos + struct.pack("<i", len(body) + 5) + body + b"\x00"
    check_all_entry_points(data, opts, pos)
    check_all_entry_points(data[pos:] * 2, opts)


@settings(FUZZ, max_examples=5000)
@given(mutated(), options)
def test_mutated_documents(data: bytes, opts: CodecOptions) -> None:
    check_all_entry_points(data, opts)


@settings(FUZZ, max_examples=500)
@given(documents, options)
def test_valid_documents(doc: dict[str, Any], opts: CodecOptions) -> None:
    data = encode(doc)
    check_all_entry_points(data, opts)
    check_all_entry_points(data + encode({"next": doc}), opts, len(data))


PAYLOADS = [
    b"",
    b"\x00",
    b"\x01",
    b"\x02",
    b"\xff",
    b"\x00" * 4,
    b"\x01\x00\x00\x00\x00",
    b"\x02\x00\x00\x00a\x00",
    b"\x02\x00\x00\x00\xff\x00",
    b"\x05\x00\x00\x00\x00",
    b"\x0c\x00\x00\x00\x080\x00\x02\x00\x00\x00\x00",
    b"\x03\x00\x00\x00\x00abc",
    b"\x10\x00\x00\x00\x04" + bytes(range(16)),
    b"\x10\x00\x00\x00\x03" + bytes(range(16)),
    b"\x10\x00\x00\x00\x02" + bytes(range(16)),
    b"\x04\x00\x00\x00\x00abcd",
    b"a\x00i\x00",
    b"\xff\x00\x00",
    bytes(range(1, 13)),
    bytes(range(1, 17)),
    b"\xff" * 8,
    b"\x00" * 7 + b"\x80",
    b"\x16\x00\x00\x00\x02\x00\x00\x00x\x00\x0c\x00\x00\x00\x10a\x00\x01\x00\x00\x00\x00",
]


@pytest.mark.parametrize("opts", OPTIONS[:8] + OPTIONS[10:11] + OPTIONS[14:15], ids=_option_id)
def test_every_type_byte_with_many_payloads(opts: CodecOptions) -> None:
    """Exhaustive over the type byte: each of 256 types followed by short payloads, in a
    document and in an array, with the element last or followed by another one."""
    for t in range(256):
        for payload in PAYLOADS:
            for wrapper in (b"\x03", b"\x04"):
                for tail in (b"", b"\x10z\x00\x07\x00\x00\x00"):
                    body = bytes([t]) + b"k\x00" + payload + tail
                    inner = struct.pack("<i", len(body) + 5) + body + b"\x00"
                    outer_body = wrapper + b"w\x00" + inner
                    outer = struct.pack("<i", len(outer_body) + 5) + outer_body + b"\x00"
                    for data in (inner, outer):
                        assert_same_outcome(
                            outcome(lambda: cdecode.decode(data, opts)),  # noqa: B023
                            outcome(lambda: codec._py_decode(data, opts)),  # noqa: B023
                        )


# -- the benchmark documents --


def _benchmark_documents() -> list[Any]:
    benchmarks = pytest.importorskip("benchmarks.bench_support")
    if not benchmarks.TGZ.exists():
        pytest.skip(f"the benchmark data set is not on this machine ({benchmarks.TGZ})")
    data = benchmarks.load_data()
    return [data.tweet, data.small, data.large]


def test_benchmark_documents_decode_identically() -> None:
    tweet, small, large = _benchmark_documents()
    for doc in (tweet, small, large):
        data = encode(doc)
        decoded = cdecode.decode(data, CodecOptions())
        assert same(decoded, codec._py_decode(data, CodecOptions()))
        assert decoded == doc
    for doc in (tweet, small):
        data = encode(doc) * 3
        for opts in (
            CodecOptions(tz_aware=True),
            CodecOptions(unicode_decode_error_handler="replace"),
        ):
            assert same(cdecode.decode_all(data, opts), codec._py_decode_all(data, opts))


# -- hostile nesting --


def same_chain(a: Any, b: Any) -> bool:
    """`same` for values nested hundreds of levels deep with one child per level (walked
    in a loop: recursion would hit Python's limit)."""
    while True:
        if type(a) is not type(b):
            return False
        if isinstance(a, Code):
            if str(a) != str(b):
                return False
            a, b = a.scope, b.scope
        elif isinstance(a, Mapping):
            if list(a) != list(b) or len(a) > 1:
                return same(a, b)
            if not a:
                return True
            a, b = next(iter(a.values())), next(iter(b.values()))
        elif isinstance(a, list):
            if len(a) != len(b) or len(a) > 1:
                return same(a, b)
            if not a:
                return True
            a, b = a[0], b[0]
        else:
            return same(a, b)


def _nested(levels: int, element_type: int) -> bytes:
    """``levels`` documents (0x03) or arrays (0x04) nested in each other, one element each."""
    data = b"\x05\x00\x00\x00\x00"
    for _ in range(levels):
        body = bytes([element_type]) + b"0\x00" + data
        data = struct.pack("<i", len(body) + 5) + body + b"\x00"
    return data


def _nested_code_with_scope(levels: int) -> bytes:
    data = b"\x05\x00\x00\x00\x00"
    for _ in range(levels):
        code = struct.pack("<i", 2) + b"x\x00"
        cws = code + data
        body = b"\x0fc\x00" + struct.pack("<i", len(cws) + 4) + cws
        data = struct.pack("<i", len(body) + 5) + body + b"\x00"
    return data


@pytest.mark.parametrize("levels", [400, 401, 10_000])
@pytest.mark.parametrize(
    "build",
    [lambda n: _nested(n, 0x03), lambda n: _nested(n, 0x04), _nested_code_with_scope],
    ids=["documents", "arrays", "code_with_scope"],
)
def test_deep_nesting_fails_as_the_reference(levels: int, build: Callable[[int], bytes]) -> None:
    data = build(levels)
    for opts in (CodecOptions(), CodecOptions(document_class=OrderedDict)):
        try:
            expected: Any = codec._py_decode(data, opts)
        except InvalidBSON as exc:
            with pytest.raises(InvalidBSON) as raised:
                cdecode.decode(data, opts)
            assert str(raised.value) == str(exc)
        else:
            assert same_chain(cdecode.decode(data, opts), expected)


def test_nesting_bound_is_the_reference_bound() -> None:
    data = _nested(400, 0x03)
    assert same_chain(cdecode.decode(data, CodecOptions()), codec._py_decode(data, CodecOptions()))
    with pytest.raises(InvalidBSON, match="nested deeper than 400"):
        cdecode.decode(_nested(401, 0x04), CodecOptions())


# -- arguments that are not the usual ones --


@pytest.mark.parametrize("data", ["abc", None, 5, [1], bytearray(b"\x05\x00\x00\x00\x00")])
def test_non_bytes_input_as_the_reference(data: Any) -> None:
    import array

    for value in (data, array.array("b", b"\x05\x00\x00\x00\x00")):
        c = outcome(lambda: cdecode.decode(value, CodecOptions()))  # noqa: B023
        p = outcome(lambda: codec._py_decode(value, CodecOptions()))  # noqa: B023
        assert_same_outcome(c, p)
        c = outcome(lambda: cdecode.decode_all(value, CodecOptions()))  # noqa: B023
        p = outcome(lambda: codec._py_decode_all(value, CodecOptions()))  # noqa: B023
        assert_same_outcome(c, p)


def test_type_error_message_matches() -> None:
    with pytest.raises(TypeError) as c:
        cdecode.decode("text", CodecOptions())
    with pytest.raises(TypeError) as p:
        codec._py_decode("text", CodecOptions())
    assert str(c.value) == str(p.value)


class _BytesWithDunder(bytes):
    def __bytes__(self) -> bytes:
        return b"\x0c\x00\x00\x00\x10a\x00\x07\x00\x00\x00\x00"


@pytest.mark.parametrize(
    ("data", "pos"),
    [
        (b"\x05\x00\x00\x00\x00", -5),
        (b"\x00\x05\x00\x00\x00\x00", True),
        (b"\x05\x00\x00\x00\x00", 2**70),
        (b"\x05\x00\x00\x00\x00", "0"),
        (b"\x05\x00\x00\x00\x00", 9),
        (bytearray(b"\x0d\x00\x00\x00\x05b\x00\x01\x00\x00\x00\x00x\x00"), 0),
        (memoryview(b"\x05\x00\x00\x00\x00"), 0),
        (_BytesWithDunder(b"\x05\x00\x00\x00\x00"), 0),
    ],
)
def test_decode_document_at_odd_arguments(data: Any, pos: Any) -> None:
    assert_same_outcome(
        outcome(lambda: cdecode.decode_document_at(data, pos, CodecOptions())),
        outcome(lambda: pure.decode_document_at(data, pos, CodecOptions())),
    )


def test_bytes_subclass_goes_through_bytes() -> None:
    data = _BytesWithDunder(b"\x05\x00\x00\x00\x00")
    assert_same_outcome(
        outcome(lambda: cdecode.decode(data, CodecOptions())),
        outcome(lambda: codec._py_decode(data, CodecOptions())),
    )


def test_options_that_are_not_codec_options() -> None:
    not_options: list[Any] = [None, {"document_class": dict}]
    for opts in not_options:
        for c_fn, p_fn in (
            (cdecode.decode, codec._py_decode),
            (cdecode.decode_all, codec._py_decode_all),
        ):
            assert_same_outcome(
                outcome(lambda: c_fn(b"\x05\x00\x00\x00\x00", opts)),  # noqa: B023
                outcome(lambda: p_fn(b"\x05\x00\x00\x00\x00", opts)),  # noqa: B023
            )


def test_wrong_argument_count_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        cdecode.decode(b"\x05\x00\x00\x00\x00")
    with pytest.raises(TypeError):
        cdecode.decode_document_at(b"\x05\x00\x00\x00\x00", 0)


def test_native_values_have_the_reference_types() -> None:
    doc = {
        "s": "é",
        "i": 1,
        "l": Int64(2**40),
        "f": 1.5,
        "b": True,
        "n": None,
        "o": ObjectId(b"123456789012"),
        "d": datetime(2020, 1, 2, 3, 4, 5, 6000),
        "t": Timestamp(7, 8),
        "m": Decimal128("1.10"),
        "x": [MinKey(), MaxKey(), Undefined(), b"\x00raw"],
        "u": Binary(uuid.UUID(int=5).bytes, 4),
        "r": {"$ref": "c", "$id": 1, "$db": "d", "k": 2},
        "e": {"$ref": 1, "$id": 2},
    }
    data = encode(doc)
    for opts in OPTIONS:
        check_all_entry_points(data, opts)
    decoded = cdecode.decode(data, CodecOptions())
    assert type(decoded["l"]) is Int64 and decoded["l"] == 2**40
    assert type(decoded["r"]) is DBRef and type(decoded["e"]) is dict


def test_extreme_datetimes() -> None:
    values = [
        -(2**63),
        2**63 - 1,
        -62135596800000,
        -62135596800001,
        253402300799999,
        253402300800000,
        -1,
        0,
        -86400001,
    ]
    for value in values:
        data = encode({"d": DatetimeMS(value), "a": [DatetimeMS(value)]})
        for opts in OPTIONS:
            check_all_entry_points(data, opts)


_INNER = codec._py_encode({"inner": [1, "x"], "k" * 50: Int64(3)}, False, CodecOptions())


def _reentrant_handler(exc: UnicodeError) -> tuple[str, int]:
    """A decode error handler that decodes another document, with other options, with the
    C decoder itself (its options and key caches must survive the nested call)."""
    assert isinstance(exc, UnicodeDecodeError)
    inner = cdecode.decode(_INNER, CodecOptions(tz_aware=True))
    return f"<{len(inner)}>", exc.end


codecs.register_error("h31_reentrant", _reentrant_handler)


def test_decoding_again_from_inside_a_decode() -> None:
    opts = CodecOptions(unicode_decode_error_handler="h31_reentrant")
    doc = encode({"a": "x", "é": "bad", "b": {"inner": 2}, "k" * 50: "bad"})
    data = doc.replace(b"bad", b"b\xffd")
    for _ in range(3):
        check_all_entry_points(data, opts)
        check_all_entry_points(doc, CodecOptions())


# -- leaks --


def _leak_inputs() -> list[bytes]:
    doc = {
        "_id": ObjectId(b"abcdefghijkl"),
        "s": "text",
        "u": "ünï",
        "n": [1, Int64(5), 2.5, None, True, {"x": [Timestamp(1, 2)]}],
        "d": DatetimeMS(1_600_000_000_000),
        "far": DatetimeMS(2**62),
        "dec": Decimal128("3.14"),
        "bin": b"raw",
        "uuid": Binary(b"0123456789abcdef", 4),
        "re": Regex("a.*", "i"),
        "code": Code("f()", {"a": 1}),
        "ref": {"$ref": "c", "$id": 1},
        "keys": {f"k{i}": i for i in range(40)},
    }
    good = encode(doc)
    return [
        good,
        good[:-9] + b"\xff" + good[-8:],  # broken near the end, after everything allocated
        good.replace(b"text", b"te\xffx"),  # bad UTF-8 in a string value
        good.replace(b"a.*\x00i", b"a.*\x00\xff"),  # a reader's UnicodeDecodeError, translated
        _nested(401, 0x03),
        # errors on elements whose keys are not cached (non-ASCII, long): their refs count
        encode({"x": 1, "kë": "bad"}).replace(b"bad", b"b\xffd"),
        encode({"k" * 60: Regex("r", "i")}).replace(b"r\x00i", b"r\x00\xff"),
    ]


def test_no_leaks() -> None:
    inputs = _leak_inputs()
    auto = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO)

    def run(times: int) -> None:
        for _ in range(times):
            for data in inputs:
                for opts in (CodecOptions(), auto):
                    try:
                        cdecode.decode(data, opts)
                    except InvalidBSON:
                        pass
            cdecode.decode_all(inputs[0] * 2, auto)

    run(200)
    gc.collect()
    before = sys.getallocatedblocks()
    run(10_000)  # 110,000 decode calls
    gc.collect()
    assert sys.getallocatedblocks() - before < 200

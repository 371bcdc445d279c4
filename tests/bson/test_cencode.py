"""The C encoder (asyncmongo.bson._cencode) against the pure-Python reference (codec._py_encode).

Every check is differential: for the same input, both give the same bytes, or raise the same
exception type with the same message. Hypothesis generates documents of every BSON type the
encoder knows (nested, unicode, surrogates, big ints, aware/naive datetimes, subclasses,
unencodable objects, bad keys, odd Mapping items); explicit cases cover the benchmark
documents, reference counts, memory, and the error paths one by one.
"""

from __future__ import annotations

import collections
import gc
import inspect
import math
import re
import sys
import tracemalloc
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncmongo.bson import (
    MAX_NESTING_DEPTH,
    Binary,
    Code,
    CodecOptions,
    DatetimeMS,
    DBPointer,
    DBRef,
    Decimal128,
    Int64,
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
)
from asyncmongo.bson.codec import _py_encode
from asyncmongo.bson.codec_options import DEFAULT_CODEC_OPTIONS

try:
    from asyncmongo.bson import _cencode
except ImportError:  # pragma: no cover - CI sets ASYNCMONGO_REQUIRE_EXTENSIONS=1
    pytest.skip(
        "asyncmongo.bson._cencode is not built (no C compiler at install time); build it with "
        "`python setup.py build_ext --inplace`",
        allow_module_level=True,
    )

c_encode: Callable[[Any, bool, CodecOptions], bytes] = _cencode.encode
STANDARD = CodecOptions(uuid_representation=UuidRepresentation.STANDARD)
OPTIONS = (
    DEFAULT_CODEC_OPTIONS,
    STANDARD,
    CodecOptions(uuid_representation=UuidRepresentation.PYTHON_LEGACY),
    CodecOptions(uuid_representation=UuidRepresentation.JAVA_LEGACY),
    CodecOptions(uuid_representation=UuidRepresentation.CSHARP_LEGACY),
)


def fast(examples: int) -> settings:
    """Hypothesis settings for the differential tests: no deadline (the machine is shared)."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def outcome(encode: Callable[..., bytes], *args: Any) -> tuple[Any, ...]:
    """What one implementation makes of the input: its bytes, or its error type and text."""
    try:
        return ("bytes", encode(*args))
    except Exception as exc:
        return ("error", type(exc), str(exc))


def assert_same(document: Any, check_keys: bool = False, opts: CodecOptions = STANDARD) -> Any:
    expected = outcome(_py_encode, document, check_keys, opts)
    got = outcome(c_encode, document, check_keys, opts)
    assert got == expected
    return expected


# -- values of every kind, as hypothesis strategies --


class MyDict(dict[Any, Any]):
    pass


class MyList(list[Any]):
    pass


class MyTuple(tuple[Any, ...]):
    pass


class MyStr(str):
    pass


class MyInt(int):
    pass


class MyFloat(float):
    pass


class MyBytes(bytes):
    pass


class MyDatetime(datetime):
    pass


class MyInt64(Int64):
    pass


class MyObjectId(ObjectId):
    pass


class MyBinary(Binary):
    pass


class Unencodable:
    def __repr__(self) -> str:
        return "Unencodable()"


class Pairs(Mapping[Any, Any]):
    """A Mapping whose items() are whatever it was given (pairs, lists, wrong shapes)."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    def __getitem__(self, key: Any) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[Any]:
        return iter([item[0] for item in self._items if isinstance(item, tuple | list) and item])

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> Any:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"Pairs({self._items!r})"


class NoOffset(tzinfo):
    """A tzinfo that knows no offset: the datetime counts as naive."""

    def tzname(self, dt: datetime | None) -> str:
        return "none"

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None


class BrokenOffset(NoOffset):
    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        raise LookupError("no offset here")


SURROGATES = st.sampled_from(["\ud800", "a\udfffb", "\udc80\udc81", "ok\ud83d"])
TEXT = st.text(max_size=12) | SURROGATES | st.sampled_from(["", "a\x00b", "日本語", "\U0001f600"])
STR_KEYS = st.text(max_size=8) | st.sampled_from(
    ["$set", "a.b", ".", "$", "a\x00", "\x00", "_id", "é", "\ud800", "k\udfff"]
)
ANY_KEYS = STR_KEYS | st.integers(-5, 5) | st.sampled_from([None, b"k", 1.5, MyStr("sub"), ("t",)])
ZONES = st.sampled_from([UTC, NoOffset(), BrokenOffset()]) | st.builds(
    timezone,
    st.timedeltas(
        min_value=timedelta(hours=-23, minutes=-59, seconds=-59, microseconds=-999_999),
        max_value=timedelta(hours=23, minutes=59, seconds=59, microseconds=999_999),
    ),
)
NAIVE = st.datetimes()
AWARE = st.builds(lambda dt, tz: dt.replace(tzinfo=tz), st.datetimes(), ZONES)
INTS = (
    st.integers()
    | st.integers(-(2**65), 2**65)
    | st.sampled_from(
        [2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1]
    )
)
FLOATS = st.floats() | st.sampled_from([math.nan, math.inf, -math.inf, -0.0])


def _bson_scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        TEXT,
        INTS,
        FLOATS,
        st.booleans(),
        st.none(),
        NAIVE,
        AWARE,
        st.binary(max_size=16),
        st.binary(min_size=12, max_size=12).map(ObjectId),
        INTS.map(Int64),
        st.builds(Binary, st.binary(max_size=8), st.integers(0, 255) | st.just(2)),
        st.binary(min_size=16, max_size=16).map(Decimal128.from_bid),
        st.builds(Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
        st.sampled_from([MinKey(), MaxKey(), Undefined()]),
        st.uuids(),
        st.builds(
            Regex,
            TEXT,
            st.sampled_from(["", "i", "mi", "xsm", "u", "a\x00", "zyxa", "é", "ü i", "x" * 40]),
        ),
        st.sampled_from([re.compile("a+", re.I | re.M), re.compile(b"bytes"), re.compile("x")]),
        st.builds(Code, TEXT),
        st.builds(Symbol, TEXT),
        st.integers(-(2**63), 2**63 - 1).map(DatetimeMS),
        st.builds(DBPointer, st.text(max_size=5), st.just(ObjectId(b"123456789012"))),
        st.builds(DBRef, st.text(max_size=5), INTS, st.none() | st.text(max_size=3)),
        st.builds(MyStr, TEXT),
        st.builds(MyInt, INTS),
        st.builds(MyFloat, FLOATS),
        st.builds(MyBytes, st.binary(max_size=8)),
        st.builds(MyInt64, INTS),
        st.builds(MyObjectId, st.binary(min_size=12, max_size=12)),
        st.builds(MyBinary, st.binary(max_size=8), st.integers(0, 255)),
        st.builds(
            lambda d: MyDatetime.fromtimestamp(0, UTC) + timedelta(seconds=d),
            st.integers(-(10**9), 10**9),
        ),
        st.sampled_from([Unencodable(), object, 1j, Decimal("1.5"), {1, 2}, frozenset()]),
    )


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    pairs = st.tuples(ANY_KEYS, children)
    return st.one_of(
        st.dictionaries(STR_KEYS, children, max_size=5),
        st.dictionaries(ANY_KEYS, children, max_size=3),
        st.lists(children, max_size=5),
        st.lists(children, max_size=4).map(tuple),
        st.lists(children, max_size=4).map(MyList),
        st.lists(children, max_size=4).map(MyTuple),
        st.dictionaries(STR_KEYS, children, max_size=4).map(MyDict),
        st.dictionaries(STR_KEYS, children, max_size=4).map(collections.OrderedDict),
        st.lists(pairs | pairs.map(list), max_size=4).map(Pairs),
        st.dictionaries(STR_KEYS, children, max_size=3).map(lambda d: Code("f()", d)),
        st.dictionaries(STR_KEYS, children, max_size=3).map(
            lambda d: RawBSONDocument(_py_encode(d, False, STANDARD)) if _encodable(d) else MinKey()
        ),
    )


def _encodable(document: Mapping[str, Any]) -> bool:
    try:
        _py_encode(document, False, STANDARD)
    except Exception:
        return False
    return True


VALUES = st.recursive(_bson_scalars(), _containers, max_leaves=4)

# Values that always encode: the byte-for-byte comparison of deeper, successful documents.
CLEAN_TEXT = st.text(max_size=12, alphabet=st.characters(exclude_categories=["Cs"]))
CLEAN_KEYS = st.text(
    max_size=6, alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
)
CLEAN_INTS = st.integers(-(2**63), 2**63 - 1)
CLEAN_SCALARS = st.one_of(
    CLEAN_TEXT,
    CLEAN_INTS,
    CLEAN_INTS.map(Int64),
    CLEAN_INTS.map(MyInt),
    FLOATS,
    st.booleans(),
    st.none(),
    NAIVE,
    st.builds(
        lambda dt, tz: dt.replace(tzinfo=tz),
        st.datetimes(),
        ZONES.filter(lambda z: not isinstance(z, BrokenOffset)),
    ),
    st.binary(max_size=16),
    st.binary(min_size=12, max_size=12).map(ObjectId),
    st.builds(Binary, st.binary(max_size=8), st.integers(0, 255)),
    st.binary(min_size=16, max_size=16).map(Decimal128.from_bid),
    st.builds(Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
    st.sampled_from([MinKey(), MaxKey(), Undefined(), re.compile("x", re.S)]),
    st.uuids(),
    st.builds(Code, CLEAN_TEXT),
    st.builds(MyStr, CLEAN_TEXT),
)
CLEAN_DOCUMENTS = st.recursive(
    st.dictionaries(CLEAN_KEYS, CLEAN_SCALARS, max_size=4),
    lambda children: st.one_of(
        st.dictionaries(CLEAN_KEYS, children | CLEAN_SCALARS, max_size=4),
        st.dictionaries(CLEAN_KEYS, st.lists(children | CLEAN_SCALARS, max_size=4), max_size=3),
        st.dictionaries(CLEAN_KEYS, children, max_size=3).map(collections.OrderedDict),
        st.dictionaries(CLEAN_KEYS, st.tuples(children, CLEAN_SCALARS), max_size=3),
    ),
    max_leaves=8,
)
ODD_ITEMS = st.sampled_from([("k",), ("k", 1, 2), 5, "ab", "abc", ["k", 1], iter(())])
TOP_LEVEL = st.one_of(
    st.dictionaries(STR_KEYS, VALUES, max_size=5),
    st.dictionaries(ANY_KEYS, VALUES, max_size=3),
    st.dictionaries(STR_KEYS, VALUES, max_size=4).map(MyDict),
    st.dictionaries(STR_KEYS, VALUES, max_size=4).map(collections.OrderedDict),
    st.lists(st.tuples(ANY_KEYS, VALUES) | ODD_ITEMS, max_size=4).map(Pairs),
    st.sampled_from([[("a", 1)], 5, "text", None, b"\x05\x00\x00\x00\x00"]),
    st.dictionaries(STR_KEYS, VALUES, max_size=3).map(
        lambda d: RawBSONDocument(_py_encode(d, False, STANDARD)) if _encodable(d) else d
    ),
)


# -- (1) differential: hypothesis --


@fast(1500)
@given(document=TOP_LEVEL, check_keys=st.booleans(), opts=st.sampled_from(OPTIONS))
def test_same_as_reference_for_any_document(
    document: Any, check_keys: bool, opts: CodecOptions
) -> None:
    assert_same(document, check_keys, opts)


@fast(1000)
@given(document=CLEAN_DOCUMENTS)
def test_same_bytes_for_valid_documents(document: dict[str, Any]) -> None:
    assert assert_same(document)[0] == "bytes"


@fast(1000)
@given(keys=st.lists(STR_KEYS | ANY_KEYS, min_size=1, max_size=6), check_keys=st.booleans())
def test_same_keys_rules(keys: list[Any], check_keys: bool) -> None:
    assert_same({k: 1 for k in keys}, check_keys)
    assert_same({"outer": {k: "v" for k in keys}}, check_keys)
    assert_same(Pairs([(k, None) for k in keys]), check_keys)


@fast(1000)
@given(
    value=NAIVE
    | AWARE
    | st.builds(
        lambda d: MyDatetime(2000, 1, 1) + d,
        st.timedeltas(min_value=timedelta(days=-700_000), max_value=timedelta(days=2_900_000)),
    )
)
def test_same_datetimes(value: datetime) -> None:
    assert_same({"d": value, "a": [value]})


@fast(1000)
@given(value=INTS | INTS.map(Int64) | INTS.map(MyInt) | FLOATS | TEXT)
def test_same_numbers_and_strings(value: Any) -> None:
    assert_same({"v": value, "l": [value, value], "n": {"v": value}})


# -- (2) the benchmark documents --


@pytest.fixture(scope="module")
def bench_docs() -> dict[str, Any]:
    from benchmarks.bench_support import load_data

    data = load_data()
    return {"tweet": data.tweet, "small": data.small, "large": data.large}


@pytest.mark.parametrize("name", ["tweet", "small", "large"])
def test_benchmark_documents_encode_identically(bench_docs: dict[str, Any], name: str) -> None:
    document = bench_docs[name]
    encoded = c_encode(document, False, DEFAULT_CODEC_OPTIONS)
    assert encoded == _py_encode(document, False, DEFAULT_CODEC_OPTIONS)
    assert len(encoded) > 100


# -- (3) reference counts and memory --


def _sample_document(key: str, text: str, big: int, nested: list[Any], when: datetime) -> Any:
    return {
        key: text,
        "big": big,
        "nested": nested,
        "when": when,
        "tuple": (1, text),
        "od": collections.OrderedDict([(key, big)]),
        "uuid": uuid.UUID(int=5),
        "code": Code("x", {key: nested}),
        "ts": Timestamp(1, 2),
        "dec": Decimal128("1.5"),
        "bin": Binary(b"xy", 2),
        "oid": ObjectId(b"abcdefghijkl"),
    }


def test_encoding_keeps_reference_counts() -> None:
    key, text, big = "k" + "ey" * 3, "v\u00e9" * 10, 2**40 + 7
    nested = [1, "two", {"three": 3.0}]
    when = datetime(2020, 5, 6, 7, 8, 9, 123456, tzinfo=timezone(timedelta(hours=5, minutes=7)))
    document = _sample_document(key, text, big, nested, when)
    bad_key = {"ok": 1, "bad\x00": text}
    bad_value = {"ok": 1, "v": Unencodable(), "w": text}
    samples = (key, text, big, nested, when, document, bad_key, bad_value)
    c_encode(document, False, STANDARD)
    before = [sys.getrefcount(obj) for obj in samples]
    for _ in range(3000):
        c_encode(document, True, STANDARD)
        with pytest.raises(InvalidDocument):
            c_encode(bad_key, False, STANDARD)
        with pytest.raises(InvalidDocument):
            c_encode(bad_value, False, STANDARD)
    gc.collect()
    assert [sys.getrefcount(obj) for obj in samples] == before


def test_encoding_does_not_grow_memory() -> None:
    document = _sample_document("key", "text\u00e9", 2**50, [1, [2, [3]]], datetime(2001, 1, 1))
    document["many"] = list(range(2000))  # beyond the 1024 index keys
    for _ in range(200):
        c_encode(document, False, STANDARD)
    gc.collect()
    tracemalloc.start()
    try:
        first, _ = tracemalloc.get_traced_memory()
        for _ in range(5000):
            c_encode(document, False, STANDARD)
            try:
                c_encode({"x": Unencodable()}, False, STANDARD)
            except InvalidDocument:
                pass
        gc.collect()
        last, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert last - first < 64 * 1024


# -- (4) the error paths, one by one --


def test_not_a_mapping_is_a_type_error() -> None:
    for value in (5, [("a", 1)], "a", None, b"\x05\x00\x00\x00\x00"):
        result = assert_same(value)
        assert result[:2] == ("error", TypeError)


def test_wrong_argument_count() -> None:
    with pytest.raises(TypeError):
        _cencode.encode({})  # type: ignore[call-arg]


def test_raw_document_top_level_is_its_bytes() -> None:
    raw = RawBSONDocument(_py_encode({"a": 1}, False, STANDARD))
    assert c_encode(raw, True, STANDARD) is raw.raw
    assert_same({"x": raw, "y": [raw]})


class RaisingItems(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(["a"])

    def __len__(self) -> int:
        return 1

    def items(self) -> Any:
        raise LookupError("items() is broken")


class RaisingIteration(RaisingItems):
    def items(self) -> Any:
        def gen() -> Iterator[tuple[str, int]]:
            yield "a", 1
            raise OSError("items iteration failed")

        return gen()


@pytest.mark.parametrize("mapping", [RaisingItems(), RaisingIteration()])
def test_mapping_whose_items_raise(mapping: Mapping[str, Any]) -> None:
    top = assert_same(mapping)
    nested = assert_same({"m": mapping})
    assert top[0] == nested[0] == "error"


@pytest.mark.parametrize(
    "make_items",
    [
        lambda: [("k",)],
        lambda: [("k", 1, 2)],
        lambda: [5],
        lambda: ["ab"],
        lambda: ["abc"],
        lambda: [["k", 1]],
        lambda: [iter(["k", 2])],
        lambda: [("k", 1), iter([])],
    ],
)
def test_odd_items_shapes(make_items: Callable[[], list[Any]]) -> None:
    """``for key, value in items`` unpacking: same errors for pairs of the wrong shape."""
    expected = outcome(_py_encode, Pairs(make_items()), False, STANDARD)
    assert outcome(c_encode, Pairs(make_items()), False, STANDARD) == expected
    expected = outcome(_py_encode, {"n": Pairs(make_items())}, False, STANDARD)
    assert outcome(c_encode, {"n": Pairs(make_items())}, False, STANDARD) == expected


@pytest.mark.parametrize(
    "key", [1, None, b"k", 1.5, ("t",), MyStr("s"), MyStr("s\x00"), "\ud800", "a\x00"]
)
def test_bad_and_odd_keys(key: Any) -> None:
    assert_same({key: 1})
    assert_same({"n": {key: "v"}})
    assert_same(Pairs([(key, [1])]))


def test_unhashable_key_from_items() -> None:
    result = assert_same(Pairs([(["list"], 1)]))
    assert result[:2] == ("error", TypeError)


@pytest.mark.parametrize("key", ["$set", "a.b", "$", ".", "ok", MyStr("$sub"), 5])
def test_check_keys(key: Any) -> None:
    assert_same({key: {"$inner": 1}}, True)
    assert_same({key: 1}, False)


def _nested(depth: int, make: Callable[[Any], Any]) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = make(value)
    return value


@pytest.mark.parametrize(
    "make",
    [
        lambda v: {"a": v},
        lambda v: [v],
        lambda v: (v,),
        lambda v: collections.OrderedDict(a=v),
        lambda v: MyList([v]),
    ],
    ids=["dict", "list", "tuple", "ordereddict", "list-subclass"],
)
@pytest.mark.parametrize("depth", [MAX_NESTING_DEPTH - 1, MAX_NESTING_DEPTH, MAX_NESTING_DEPTH + 5])
def test_nesting_depth(make: Callable[[Any], Any], depth: int) -> None:
    result = assert_same({"top": _nested(depth, make)})
    if depth > MAX_NESTING_DEPTH:
        assert result[:2] == ("error", InvalidDocument)


def test_very_deep_nesting_is_an_error_not_a_crash() -> None:
    deep: Any = {}
    for _ in range(100_000):
        deep = {"a": deep}
    with pytest.raises(InvalidDocument, match="nested deeper"):
        c_encode(deep, False, STANDARD)


def test_python_stack_exhaustion_is_invalid_document() -> None:
    """Deep in the Python stack both run out of recursion before MAX_NESTING_DEPTH and say
    so with InvalidDocument (the C side counts each nested document as a recursion level)."""
    deep = _nested(300, lambda v: {"a": v})
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 100)
    try:
        expected = outcome(_py_encode, deep, False, STANDARD)
        got = outcome(c_encode, deep, False, STANDARD)
    finally:
        sys.setrecursionlimit(limit)
    assert (
        got
        == expected
        == ("error", InvalidDocument, "document nested too deeply for the Python stack")
    )


class MutatingMapping(Mapping[str, Any]):
    """Encoded through items() like any Mapping: runs ``action`` (mutating a container that is
    being encoded) when its items are asked for."""

    def __init__(self, action: Callable[[], None]) -> None:
        self._action = action

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter([])

    def __len__(self) -> int:
        return 0

    def items(self) -> Any:
        self._action()
        return []


def _mutations() -> list[tuple[str, Callable[[], tuple[Any, Any]]]]:
    def grow_dict() -> tuple[Any, Any]:
        target: dict[str, Any] = {"a": 1}
        target["m"] = MutatingMapping(lambda: target.__setitem__("new", 1))
        target["z"] = 2
        return target, target

    def shrink_dict() -> tuple[Any, Any]:
        target: dict[str, Any] = {"a": 1}
        target["m"] = MutatingMapping(lambda: target.pop("a"))
        target["z"] = 2
        return target, target

    def swap_keys() -> tuple[Any, Any]:
        target: dict[str, Any] = {"a": 1}

        def swap() -> None:
            del target["a"]
            target["b"] = 3

        target["m"] = MutatingMapping(swap)
        return target, target

    def grow_list() -> tuple[Any, Any]:
        target: list[Any] = [1]
        target.append(MutatingMapping(lambda: target.extend(["x", "y"])))
        return {"l": target}, target

    def shrink_list() -> tuple[Any, Any]:
        target: list[Any] = [1, 2]
        target.insert(1, MutatingMapping(lambda: target.clear()))
        return {"l": target}, target

    def grow_list_past_index_keys() -> tuple[Any, Any]:
        target: list[Any] = [MutatingMapping(lambda: target.extend(range(2000)))]
        return {"l": target}, target

    return [
        ("grow_dict", grow_dict),
        ("shrink_dict", shrink_dict),
        ("swap_keys", swap_keys),
        ("grow_list", grow_list),
        ("shrink_list", shrink_list),
        ("grow_list_past_index_keys", grow_list_past_index_keys),
    ]


@pytest.mark.parametrize("build", [m[1] for m in _mutations()], ids=[m[0] for m in _mutations()])
def test_mutation_during_encoding(build: Callable[[], tuple[Any, Any]]) -> None:
    expected = outcome(_py_encode, build()[0], False, STANDARD)
    got = outcome(c_encode, build()[0], False, STANDARD)
    assert got == expected


@pytest.mark.parametrize(
    "value",
    [2**63, -(2**63) - 1, 2**200, -(10**50), Int64(2**63), Int64(-(2**64)), MyInt(2**70)],
    ids=str,
)
def test_ints_that_do_not_fit(value: int) -> None:
    result = assert_same({"big": value})
    assert result[:2] == ("error", InvalidDocument)
    assert "'big'" in result[2]
    assert_same({"arr": [0, value]})


def test_int_too_long_for_str() -> None:
    huge = 10 ** (sys.get_int_max_str_digits() + 10)
    assert_same({"big": huge})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -0.0, 5e-324, MyFloat("nan")])
def test_special_floats(value: float) -> None:
    assert_same({"f": value})


@pytest.mark.parametrize(
    "value",
    [
        datetime(1, 1, 1),
        datetime(9999, 12, 31, 23, 59, 59, 999999),
        datetime(1969, 12, 31, 23, 59, 59, 999999),
        datetime(1969, 12, 31, 23, 59, 59, 999),
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=timezone(timedelta(hours=-23, microseconds=-5))),
        datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=23, seconds=59))),
        datetime(2000, 6, 1, tzinfo=timezone(timedelta(minutes=-1, microseconds=1))),
        datetime(2000, 6, 1, tzinfo=NoOffset()),
        datetime(2000, 6, 1, tzinfo=BrokenOffset()),
        MyDatetime(2000, 6, 1, 1, 2, 3, 4567),
        MyDatetime(1900, 1, 1, tzinfo=timezone(timedelta(hours=3))),
    ],
    ids=repr,
)
def test_datetimes(value: datetime) -> None:
    assert_same({"d": value})


@pytest.mark.parametrize("value", ["\ud800", "x\udfffy", "\udc80\udc81z", MyStr("\ud800")])
def test_lone_surrogates_in_values(value: str) -> None:
    result = assert_same({"s": value})
    assert result[:2] == ("error", InvalidStringData)


def test_surrogate_value_is_reported_before_a_bad_key() -> None:
    result = assert_same({1: "\ud800"})
    assert result[:2] == ("error", InvalidStringData)


@pytest.mark.parametrize(
    "value",
    [
        uuid.UUID(int=1),
        Unencodable(),
        re.compile(b"bytes"),
        Regex("a\x00", "i"),
        Code("c", {"k": Unencodable()}),
        DBRef("c", Unencodable()),
    ],
    ids=repr,
)
def test_reference_errors_pass_through(value: Any) -> None:
    result = assert_same({"v": value}, opts=DEFAULT_CODEC_OPTIONS)
    assert result[0] == "error"


def test_tampered_native_types_go_to_the_reference() -> None:
    odd_ts = Timestamp(1, 2)
    object.__setattr__(odd_ts, "inc", 2**40)
    odd_bin = Binary(b"x", 3)
    odd_bin._subtype = 300
    odd_dec = Decimal128("1")
    object.__setattr__(odd_dec, "_bits", -1)
    no_subtype = bytes.__new__(Binary, b"abc")
    odd_regex = Regex("a")
    object.__setattr__(odd_regex, "pattern", b"bytes")
    odd_flags = Regex("a")
    object.__setattr__(odd_flags, "flags", 5)
    odd_code = Code("c", {"a": 1})
    odd_code.scope = 5  # type: ignore[assignment]
    odd_dtms = int.__new__(DatetimeMS, 2**70)
    odd_uuid = uuid.UUID(int=5)
    object.__setattr__(odd_uuid, "int", -1)
    for value in (odd_ts, odd_bin, odd_dec, no_subtype, odd_regex, odd_flags, odd_code, odd_dtms):
        result = assert_same({"v": value})
        assert result[0] == "error"
    assert_same({"v": odd_uuid})


@pytest.mark.parametrize("opts", [None, object(), DEFAULT_CODEC_OPTIONS, *OPTIONS])
def test_uuid_under_every_option(opts: Any) -> None:
    document = {"u": uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"), "l": [uuid.UUID(int=0)]}
    expected = outcome(_py_encode, document, False, opts)
    assert outcome(c_encode, document, False, opts) == expected


@pytest.mark.parametrize(
    "value",
    [
        Code("c"),
        Code("c\ud800"),
        Code("c", {"a": [1, {"b": Code("d", {})}]}),
        Code("c", collections.OrderedDict(a=1)),
        Code("c\x00", {}),
        Code("c", {"a": "\ud800"}),
        Symbol("s\u00e9"),
        Symbol("\ud800"),
        Regex("p", "zyxmi"),
        Regex("p\x00", "i"),
        Regex("p", "i\x00"),
        Regex("\ud800", ""),
        Regex("p", "é"),
        DatetimeMS(-(2**63)),
        DatetimeMS(2**63 - 1),
        Undefined(),
    ],
    ids=repr,
)
def test_natively_written_rare_types(value: Any) -> None:
    assert_same({"v": value})
    assert_same({"v": [value]})
    assert_same({1: value})
    assert_same({"v": value, "deep": _nested(MAX_NESTING_DEPTH, lambda v: {"a": v, "c": value})})


def test_old_binary_subtype_and_all_subtypes() -> None:
    for subtype in range(256):
        assert_same({"b": Binary(b"payload", subtype)})


def test_long_arrays_and_index_keys() -> None:
    for n in (0, 1, 9, 10, 11, 1023, 1024, 1025, 3000):
        assert_same({"l": list(range(n)), "t": tuple(range(n)), "s": MyList(range(n))})


def test_every_type_together() -> None:
    document = {
        "double": 1.5,
        "string": "héllo \u2603",
        "doc": {"a": 1},
        "array": [1, "two", None],
        "bin": b"\x00\x01",
        "binary": Binary(b"\xff", 0x80),
        "undefined": Undefined(),
        "oid": ObjectId(b"123456789012"),
        "bool": True,
        "date": datetime(2020, 1, 2, 3, 4, 5, 678000),
        "null": None,
        "regex": Regex("^a", "im"),
        "pattern": re.compile("^b", re.I),
        "dbpointer": DBPointer("db.c", ObjectId(b"123456789012")),
        "code": Code("x = 1"),
        "symbol": Symbol("sym"),
        "code_w_scope": Code("y", {"z": 1}),
        "int32": 5,
        "ts": Timestamp(3, 4),
        "int64": Int64(5),
        "dec": Decimal128("1.5"),
        "min": MinKey(),
        "max": MaxKey(),
        "uuid": uuid.UUID(int=7),
        "dbref": DBRef("c", 1, "db", extra=2),
        "dtms": DatetimeMS(-5),
        "raw": RawBSONDocument(b"\x05\x00\x00\x00\x00"),
    }
    assert assert_same(document)[0] == "bytes"


# -- adversarial objects: whatever they do, both implementations do the same --


class UnhashableKey:
    __hash__ = None  # type: ignore[assignment]


class HashRaises:
    def __hash__(self) -> int:
        raise ArithmeticError("no hash")


class EqualsCachedKey:
    """Hashes and compares like "a": the reference's key caches accept it as that key."""

    def __hash__(self) -> int:
        return hash("a")

    def __eq__(self, other: object) -> bool:
        return other == "a"


class SpoofsDict:
    """Claims to be a dict through __class__ (isinstance honours it)."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return dict

    def items(self) -> Any:
        return [("spoofed", 1)]


class LenRaises(list[Any]):
    def __len__(self) -> int:
        raise ZeroDivisionError("len")


class IterOverridden(list[Any]):
    def __iter__(self) -> Iterator[Any]:
        return iter(["overridden", 2])


class LyingLen(tuple[Any, ...]):
    def __len__(self) -> int:
        return 5000


class ItemsOverridden(dict[str, Any]):
    def items(self) -> Any:
        return [("from_items", True)]


class StrOverridesStr(str):
    def __str__(self) -> str:
        return "different"


@pytest.mark.parametrize(
    "make",
    [
        lambda: {"v": SpoofsDict()},
        lambda: {"v": LenRaises([1, 2])},
        lambda: {"v": IterOverridden([1, 2, 3])},
        lambda: {"v": LyingLen((1, 2))},
        lambda: {"v": ItemsOverridden(real=1)},
        lambda: ItemsOverridden(real=1),
        lambda: {"v": StrOverridesStr("same")},
        lambda: {EqualsCachedKey(): 1, "b": {EqualsCachedKey(): "x"}},
        lambda: Pairs([(HashRaises(), 1)]),
        lambda: Pairs([(UnhashableKey(), 1)]),
        lambda: {"v": Pairs([(UnhashableKey(), 1)])},
    ],
)
def test_adversarial_objects(make: Callable[[], Any]) -> None:
    c_encode({"a": 1}, False, STANDARD)  # "a" is in the reference's caches
    _py_encode({"a": 1, "b": {"a": "x"}}, False, STANDARD)
    expected = outcome(_py_encode, make(), False, STANDARD)
    assert outcome(c_encode, make(), False, STANDARD) == expected

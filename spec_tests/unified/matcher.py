"""Evaluating Matches (unified test format): expected values against actual results.

The rules: documents match as query criteria (the root-level document may carry extra
keys, nested documents may not, key order never matters); arrays match element by element
with the same length; scalars match by BSON type and value, except that int32, int64 and
double are one numeric family (Flexible Numeric Comparisons). A document whose first and only
key starts with ``$$`` is a special operator: ``$$exists``, ``$$type``, ``$$unsetOrMatches``,
``$$matchesEntity``, ``$$matchesHexBytes``, ``$$sessionLsid``, ``$$lte``,
``$$matchAsDocument`` and ``$$matchAsRoot``.

A failed match raises :class:`MatchError` naming the path (``$.cursor.firstBatch[0].x``) and
both values, so a failing spec test says exactly what differed.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from asyncmongo.bson import (
    Binary,
    Code,
    DatetimeMS,
    DBPointer,
    DBRef,
    Decimal128,
    Int64,
    MaxKey,
    MinKey,
    ObjectId,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
)
from asyncmongo.bson.json_util import loads as json_loads
from asyncmongo.bson.raw import RawBSONDocument

__all__ = [
    "IterableResult",
    "MatchContext",
    "MatchError",
    "TestFormatError",
    "bson_type_name",
    "exactly_equal",
    "is_operator",
    "match",
]

_NUMBER_TYPES: Final = frozenset({"int", "long", "double", "decimal"})
_NUMERIC_FAMILY: Final = frozenset({"int", "long", "double"})
_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1


class MatchError(AssertionError):
    """An actual value does not match the expected one."""


class TestFormatError(Exception):
    """The test file uses an operator wrongly (malformed hex, unknown entity, ...)."""

    __test__ = False


class IterableResult(list[Any]):
    """A list of documents iterated from a cursor: each element is a root-level document."""

    __slots__ = ()


class MatchContext(Protocol):
    """What $$matchesEntity and $$sessionLsid need from the entity map."""

    def bson_entity(self, name: str) -> Any:
        """The BSON value saved as entity ``name`` (TestFormatError if undefined)."""
        ...

    def session_lsid(self, name: str) -> Mapping[str, Any]:
        """The logical session id of session entity ``name`` (TestFormatError if undefined)."""
        ...


_MISSING: Final = object()


def is_operator(value: Any) -> bool:
    """A document whose first and only key starts with "$$"."""
    return (isinstance(value, Mapping) and len(value) == 1
            and next(iter(value)).startswith("$$"))


def bson_type_name(value: Any) -> str:
    """The $type alias of a decoded Python value ("int", "long", "objectId", ...)."""
    if isinstance(value, int) and not isinstance(value, bool | Int64):
        return "int" if _INT32_MIN <= value <= _INT32_MAX else "long"
    for kinds, name in _TYPE_TABLE:
        if isinstance(value, kinds):
            if name == "javascript" and getattr(value, "scope", None) is not None:
                return "javascriptWithScope"
            return name
    return type(value).__name__


# Order matters: subclasses (bool < int, Int64 < int, Code/Symbol < str, Binary < bytes)
# come before their bases.
_TYPE_TABLE: Final[tuple[tuple[type | tuple[type, ...], str], ...]] = (
    (bool, "bool"),
    (Int64, "long"),
    (float, "double"),
    (Decimal128, "decimal"),
    (Code, "javascript"),
    (Symbol, "symbol"),
    (str, "string"),
    ((bytes, bytearray), "binData"),
    (ObjectId, "objectId"),
    ((datetime.datetime, DatetimeMS), "date"),
    (type(None), "null"),
    ((Regex, re.Pattern), "regex"),
    (DBPointer, "dbPointer"),
    (Timestamp, "timestamp"),
    (MinKey, "minKey"),
    (MaxKey, "maxKey"),
    (Undefined, "undefined"),
    ((Mapping, DBRef, RawBSONDocument), "object"),
    ((list, tuple), "array"),
)


def match(expected: Any, actual: Any, ctx: MatchContext | None = None, *,
          root: bool = True, path: str = "$") -> None:
    """Raise :class:`MatchError` unless ``actual`` matches ``expected``."""
    _Matcher(ctx).value(expected, actual, root, path)


class _Matcher:
    __slots__ = ("_ctx",)

    def __init__(self, ctx: MatchContext | None) -> None:
        self._ctx = ctx

    def value(self, expected: Any, actual: Any, root: bool, path: str) -> None:
        if is_operator(expected):
            self.operator(expected, actual, root, path)
        elif isinstance(expected, Mapping):
            self.document(expected, actual, root, path)
        elif isinstance(expected, list):
            self.array(expected, actual, path)
        else:
            _scalar(expected, actual, path)

    def document(self, expected: Mapping[str, Any], actual: Any, root: bool,
                 path: str) -> None:
        actual = _as_mapping(actual)
        if actual is None:
            raise MatchError(f"{path}: expected a document {expected!r}")
        for key, want in expected.items():
            where = f"{path}.{key}"
            got = actual.get(key, _MISSING)
            if is_operator(want):
                self.operator(want, got, False, where)
                continue
            if got is _MISSING:
                raise MatchError(f"{where}: missing (expected {want!r})")
            self.value(want, got, False, where)
        if not root:
            extra = [key for key in actual if key not in expected]
            if extra:
                raise MatchError(f"{path}: unexpected keys {extra} in a nested document")

    def array(self, expected: list[Any], actual: Any, path: str) -> None:
        if not isinstance(actual, list | tuple):
            raise MatchError(f"{path}: expected an array, got {actual!r}")
        if len(actual) != len(expected):
            raise MatchError(
                f"{path}: expected {len(expected)} elements, got {len(actual)}: {actual!r}")
        element_root = isinstance(actual, IterableResult)
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            self.value(want, got, element_root, f"{path}[{index}]")

    def operator(self, expected: Mapping[str, Any], actual: Any, root: bool, path: str) -> None:
        name, argument = next(iter(expected.items()))
        if name == "$$exists":
            if bool(argument) != (actual is not _MISSING):
                raise MatchError(f"{path}: expected to {'exist' if argument else 'be absent'}")
            return
        if name == "$$unsetOrMatches":
            if actual is not _MISSING:
                self.value(argument, actual, root, path)
            return
        if actual is _MISSING:
            raise MatchError(f"{path}: missing (expected {dict(expected)!r})")
        handler = _OPERATORS.get(name)
        if handler is None:
            raise TestFormatError(f"{path}: unknown special operator {name}")
        handler(self, argument, actual, root, path)

    def op_type(self, argument: Any, actual: Any, root: bool, path: str) -> None:
        names = [argument] if isinstance(argument, str) else list(argument)
        got = bson_type_name(actual)
        if got in names or ("number" in names and got in _NUMBER_TYPES):
            return
        raise MatchError(f"{path}: expected type {names}, got {got} ({actual!r})")

    def op_matches_entity(self, argument: Any, actual: Any, root: bool, path: str) -> None:
        self.value(self._context().bson_entity(argument), actual, root, path)

    def op_matches_hex_bytes(self, argument: Any, actual: Any, root: bool, path: str) -> None:
        if not isinstance(argument, str) or not re.fullmatch(r"(?:[0-9A-Fa-f]{2})*", argument):
            raise TestFormatError(f"{path}: malformed $$matchesHexBytes {argument!r}")
        if not isinstance(actual, bytes | bytearray) or bytes(actual) != bytes.fromhex(argument):
            raise MatchError(f"{path}: expected bytes {argument}, got {actual!r}")

    def op_session_lsid(self, argument: Any, actual: Any, root: bool, path: str) -> None:
        self.value(dict(self._context().session_lsid(argument)), actual, False, path)

    def op_lte(self, argument: Any, actual: Any, root: bool, path: str) -> None:
        if not (_is_number(actual) and _is_number(argument)) or not actual <= argument:
            raise MatchError(f"{path}: expected a number <= {argument!r}, got {actual!r}")

    def op_match_as_document(self, argument: Any, actual: Any, root: bool, path: str) -> None:
        if not isinstance(actual, str):
            raise MatchError(f"{path}: $$matchAsDocument needs a JSON string, got {actual!r}")
        try:
            document = json_loads(actual)
        except ValueError as exc:
            raise MatchError(f"{path}: $$matchAsDocument cannot decode {actual!r}: {exc}") from None
        self.value(argument, document, False, path)

    def op_match_as_root(self, argument: Any, actual: Any, root: bool, path: str) -> None:
        self.value(argument, actual, True, path)

    def _context(self) -> MatchContext:
        if self._ctx is None:
            raise TestFormatError("this operator needs the entity map")
        return self._ctx


_OPERATORS: Final = {
    "$$type": _Matcher.op_type,
    "$$matchesEntity": _Matcher.op_matches_entity,
    "$$matchesHexBytes": _Matcher.op_matches_hex_bytes,
    "$$sessionLsid": _Matcher.op_session_lsid,
    "$$lte": _Matcher.op_lte,
    "$$matchAsDocument": _Matcher.op_match_as_document,
    "$$matchAsRoot": _Matcher.op_match_as_root,
}


def exactly_equal(expected: Any, actual: Any) -> bool:
    """Exact equality of BSON values (same types and values; key order is free): what a
    test's outcome documents demand."""
    if isinstance(expected, Mapping):
        actual = _as_mapping(actual)
        return (actual is not None and set(expected) == set(actual)
                and all(exactly_equal(v, actual[k]) for k, v in expected.items()))
    if isinstance(expected, list):
        return (isinstance(actual, list | tuple) and len(expected) == len(actual)
                and all(exactly_equal(e, a) for e, a in zip(expected, actual, strict=True)))
    return bson_type_name(expected) == bson_type_name(actual) and _scalar_equal(expected, actual)


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, DBRef):
        return value.as_doc()
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scalar(expected: Any, actual: Any, path: str) -> None:
    want, got = bson_type_name(expected), bson_type_name(actual)
    if want in _NUMERIC_FAMILY and got in _NUMERIC_FAMILY:
        if _numbers_equal(expected, actual):
            return
        raise MatchError(f"{path}: expected {expected!r}, got {actual!r}")
    if want != got:
        raise MatchError(f"{path}: expected {want} {expected!r}, got {got} {actual!r}")
    if not _scalar_equal(expected, actual):
        raise MatchError(f"{path}: expected {expected!r}, got {actual!r}")


def _numbers_equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, int) and isinstance(actual, int):
        return int(expected) == int(actual)
    return float(expected) == float(actual)


def _scalar_equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, bytes | bytearray):
        return (_subtype(expected), bytes(expected)) == (_subtype(actual), bytes(actual))
    if isinstance(expected, Sequence) and not isinstance(expected, str):
        return list(expected) == list(actual)
    return bool(expected == actual)


def _subtype(value: Any) -> int:
    return value.subtype if isinstance(value, Binary) else 0

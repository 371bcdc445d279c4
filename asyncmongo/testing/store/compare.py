"""BSON values ordered and compared the way MongoDB does it.

MongoDB orders values first by a canonical type bracket (MinKey < null < numbers <
symbol/string < object < array < binData < ObjectId < bool < date < timestamp < regex <
DBPointer < code < code with scope < MaxKey), then within the bracket. Numbers compare by value
across int, Int64, float and Decimal128 (NaN sorts below every other number and equals itself).
Documents compare element by element (type bracket, then field name, then value); arrays
element by element; binary by length, then subtype, then bytes.

``hash_key`` gives a hashable value with the same equality, so 1, 1.0 and Int64(1) are one key
(as in a unique index).
"""

from __future__ import annotations

import datetime
import math
import re
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from asyncmongo.bson.binary import Binary
from asyncmongo.bson.dbref import DBRef
from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.types import (
    Code,
    DatetimeMS,
    DBPointer,
    Int64,
    MaxKey,
    MinKey,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
)
from asyncmongo.testing.store.collation import string_key

RANK_MINKEY = -1
RANK_UNDEFINED = 0
RANK_NULL = 5
RANK_NUMBER = 10
RANK_STRING = 15
RANK_OBJECT = 20
RANK_ARRAY = 25
RANK_BINARY = 30
RANK_OBJECTID = 35
RANK_BOOL = 40
RANK_DATE = 45
RANK_TIMESTAMP = 47
RANK_REGEX = 50
RANK_DBPOINTER = 55
RANK_CODE = 60
RANK_CODE_W_SCOPE = 65
RANK_MAXKEY = 100

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def is_number(value: Any) -> bool:
    """True for int, Int64, float and Decimal128 (not bool)."""
    return isinstance(value, int | float | Decimal128) and not isinstance(
        value, bool | DatetimeMS
    )


def type_rank(value: Any) -> int:
    """The canonical type bracket of ``value`` (MongoDB's ``canonicalizeBSONType``)."""
    rank = _EXACT_RANKS.get(type(value))
    if rank is not None:
        return rank
    if value is None:
        return RANK_NULL
    if isinstance(value, bool):
        return RANK_BOOL
    if isinstance(value, DatetimeMS | datetime.datetime):
        return RANK_DATE
    if is_number(value):
        return RANK_NUMBER
    if isinstance(value, Code):
        return RANK_CODE if value.scope is None else RANK_CODE_W_SCOPE
    if isinstance(value, str):
        return RANK_STRING
    return _structured_rank(value)


def _structured_rank(value: Any) -> int:
    if isinstance(value, Mapping | DBRef):
        return RANK_OBJECT
    if isinstance(value, list | tuple):
        return RANK_ARRAY
    if isinstance(value, bytes | uuid.UUID):
        return RANK_BINARY
    for kind, rank in _CLASS_RANKS:
        if isinstance(value, kind):
            return rank
    raise TypeError(f"not a BSON value: {type(value).__name__}")


_CLASS_RANKS: tuple[tuple[type, int], ...] = (
    (ObjectId, RANK_OBJECTID),
    (Timestamp, RANK_TIMESTAMP),
    (Regex, RANK_REGEX),
    (re.Pattern, RANK_REGEX),
    (MinKey, RANK_MINKEY),
    (MaxKey, RANK_MAXKEY),
    (Undefined, RANK_UNDEFINED),
    (DBPointer, RANK_DBPOINTER),
)


# Exact classes (not subclasses such as Code, Symbol, DatetimeMS or Binary) for a fast lookup.
_EXACT_RANKS: dict[type, int] = {
    type(None): RANK_NULL, bool: RANK_BOOL, int: RANK_NUMBER, float: RANK_NUMBER,
    Int64: RANK_NUMBER, Decimal128: RANK_NUMBER, str: RANK_STRING, dict: RANK_OBJECT,
    list: RANK_ARRAY, bytes: RANK_BINARY, ObjectId: RANK_OBJECTID,
    datetime.datetime: RANK_DATE, Timestamp: RANK_TIMESTAMP, Regex: RANK_REGEX,
}


def to_millis(value: datetime.datetime | DatetimeMS) -> int:
    """Milliseconds since the epoch (a naive datetime is UTC)."""
    if isinstance(value, DatetimeMS):
        return int(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def number_value(value: Any) -> int | float | Decimal:
    """A plain Python number for arithmetic and comparison."""
    if isinstance(value, Decimal128):
        return value.to_decimal()
    if isinstance(value, float):
        return value
    return int(value)


_PLAIN_NUMBERS = frozenset({int, float, Int64})


def integral(value: Any) -> int | None:
    """The value as an int if it is a finite whole number (of any numeric type), else None."""
    if not is_number(value):
        return None
    number = number_value(value)
    if _is_nan(number) or number in (float("inf"), float("-inf")):
        return None
    whole = int(number)
    return whole if whole == number else None


def _is_nan(value: int | float | Decimal) -> bool:
    return isinstance(value, float | Decimal) and value != value


def compare_numbers(a: Any, b: Any) -> int:
    if type(a) in _PLAIN_NUMBERS and type(b) in _PLAIN_NUMBERS and a == a and b == b:
        plain: int = (a > b) - (a < b)
        return plain
    x, y = number_value(a), number_value(b)
    x_nan, y_nan = _is_nan(x), _is_nan(y)
    if x_nan or y_nan:
        return int(y_nan) - int(x_nan)
    if isinstance(x, Decimal) and isinstance(y, float) and math.isinf(y):
        y = Decimal(y)
    if isinstance(y, Decimal) and isinstance(x, float) and math.isinf(x):
        x = Decimal(x)
    return (x > y) - (x < y)


def _cmp(a: Any, b: Any) -> int:
    result: int = (a > b) - (a < b)
    return result


def as_document(value: Any) -> Mapping[str, Any]:
    """The document form of an object value (a DBRef is its ``$ref/$id/$db`` document)."""
    if isinstance(value, DBRef):
        doc: Mapping[str, Any] = value.as_doc()
        return doc
    assert isinstance(value, Mapping)
    return value


def _binary_parts(value: Any) -> tuple[int, int, bytes]:
    if isinstance(value, uuid.UUID):
        return 16, 4, value.bytes
    subtype = value.subtype if isinstance(value, Binary) else 0
    data = bytes(value)
    return len(data), subtype, data


def _regex_parts(value: Any) -> tuple[str, str]:
    if isinstance(value, re.Pattern):
        return value.pattern, regex_flags(value)
    return value.pattern, "".join(sorted(value.flags))


def regex_flags(pattern: re.Pattern[Any]) -> str:
    """MongoDB option letters for a compiled Python pattern."""
    letters = ""
    for flag, letter in ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"),
                         (re.VERBOSE, "x")):
        if pattern.flags & flag:
            letters += letter
    return letters


def compare(a: Any, b: Any) -> int:
    """-1, 0 or 1 as MongoDB orders ``a`` and ``b`` (total order over BSON values)."""
    ra, rb = type_rank(a), type_rank(b)
    if ra != rb:
        return _cmp(ra, rb)
    result: int = _SAME_RANK[ra](a, b)
    return result


def _compare_documents(a: Any, b: Any) -> int:
    ia, ib = iter(as_document(a).items()), iter(as_document(b).items())
    while True:
        ea, eb = next(ia, None), next(ib, None)
        if ea is None or eb is None:
            return _cmp(ea is not None, eb is not None)
        result = (_cmp(type_rank(ea[1]), type_rank(eb[1])) or _cmp(ea[0], eb[0])
                  or compare(ea[1], eb[1]))
        if result:
            return result


def _compare_arrays(a: Any, b: Any) -> int:
    for x, y in zip(a, b, strict=False):
        result = compare(x, y)
        if result:
            return result
    return _cmp(len(a), len(b))


def _compare_code(a: Any, b: Any) -> int:
    result = _cmp(str(a), str(b))
    if result or a.scope is None:
        return result
    return _compare_documents(a.scope, b.scope)


def _compare_dbpointer(a: Any, b: Any) -> int:
    return (_cmp(len(a.namespace), len(b.namespace)) or _cmp(a.namespace, b.namespace)
            or _cmp(a.id.binary, b.id.binary))


_SAME_RANK: dict[int, Any] = {
    RANK_MINKEY: lambda a, b: 0,
    RANK_UNDEFINED: lambda a, b: 0,
    RANK_NULL: lambda a, b: 0,
    RANK_MAXKEY: lambda a, b: 0,
    RANK_NUMBER: compare_numbers,
    RANK_STRING: lambda a, b: _cmp(string_key(str(a)), string_key(str(b))),
    RANK_OBJECT: _compare_documents,
    RANK_ARRAY: _compare_arrays,
    RANK_BINARY: lambda a, b: _cmp(_binary_parts(a), _binary_parts(b)),
    RANK_OBJECTID: lambda a, b: _cmp(a.binary, b.binary),
    RANK_BOOL: lambda a, b: _cmp(a, b),
    RANK_DATE: lambda a, b: _cmp(to_millis(a), to_millis(b)),
    RANK_TIMESTAMP: lambda a, b: _cmp((a.time, a.inc), (b.time, b.inc)),
    RANK_REGEX: lambda a, b: _cmp(_regex_parts(a), _regex_parts(b)),
    RANK_DBPOINTER: _compare_dbpointer,
    RANK_CODE: _compare_code,
    RANK_CODE_W_SCOPE: _compare_code,
}


def values_equal(a: Any, b: Any) -> bool:
    """MongoDB equality: same bracket and compare() == 0 (so 1 == 1.0 == Int64(1))."""
    return compare(a, b) == 0


_NAN_KEY = ("nan",)


def hash_key(value: Any) -> Any:
    """A hashable stand-in with the same equality as :func:`values_equal`."""
    rank = type_rank(value)
    if rank == RANK_NUMBER:
        number = number_value(value)
        return (rank, _NAN_KEY if _is_nan(number) else number)
    if rank == RANK_OBJECT:
        return (rank, tuple((k, hash_key(v)) for k, v in as_document(value).items()))
    if rank == RANK_ARRAY:
        return (rank, tuple(hash_key(v) for v in value))
    return (rank, _scalar_key(rank, value))


def _scalar_key(rank: int, value: Any) -> Any:
    if rank in (RANK_MINKEY, RANK_MAXKEY, RANK_NULL, RANK_UNDEFINED):
        return None
    if rank == RANK_STRING:
        return string_key(str(value))
    if rank == RANK_BINARY:
        return _binary_parts(value)
    if rank == RANK_OBJECTID:
        return value.binary
    if rank == RANK_DATE:
        return to_millis(value)
    if rank == RANK_TIMESTAMP:
        return (value.time, value.inc)
    if rank == RANK_REGEX:
        return _regex_parts(value)
    if rank in (RANK_CODE, RANK_CODE_W_SCOPE):
        scope = None if value.scope is None else hash_key(dict(value.scope))
        return (str(value), scope)
    if rank == RANK_DBPOINTER:
        return (value.namespace, value.id.binary)
    return value


def type_name(value: Any) -> str:
    """The server's type alias of ``value`` (``double``, ``string``, ``int``, ``long``, ...)."""
    return TYPE_ALIASES_BY_CODE[bson_type_code(value)]


TYPE_CODES: dict[str, int] = {
    "double": 1, "string": 2, "object": 3, "array": 4, "binData": 5, "undefined": 6,
    "objectId": 7, "bool": 8, "date": 9, "null": 10, "regex": 11, "dbPointer": 12,
    "javascript": 13, "symbol": 14, "javascriptWithScope": 15, "int": 16, "timestamp": 17,
    "long": 18, "decimal": 19, "minKey": -1, "maxKey": 127,
}
TYPE_ALIASES_BY_CODE: dict[int, str] = {code: name for name, code in TYPE_CODES.items()}


def bson_type_code(value: Any) -> int:
    """The BSON element type number ``value`` encodes as (as ``$type`` reports it)."""
    if isinstance(value, Int64):
        return 18
    if isinstance(value, bool):
        return 8
    if isinstance(value, float):
        return 1
    if isinstance(value, Decimal128):
        return 19
    if isinstance(value, DatetimeMS | datetime.datetime):
        return 9
    if isinstance(value, int):
        return 16 if -(2**31) <= value < 2**31 else 18
    if isinstance(value, Symbol):
        return 14
    return _RANK_TYPE_CODES[type_rank(value)]


_RANK_TYPE_CODES: dict[int, int] = {
    RANK_MINKEY: -1, RANK_UNDEFINED: 6, RANK_NULL: 10, RANK_STRING: 2, RANK_OBJECT: 3,
    RANK_ARRAY: 4, RANK_BINARY: 5, RANK_OBJECTID: 7, RANK_TIMESTAMP: 17, RANK_REGEX: 11,
    RANK_DBPOINTER: 12, RANK_CODE: 13, RANK_CODE_W_SCOPE: 15, RANK_MAXKEY: 127,
}

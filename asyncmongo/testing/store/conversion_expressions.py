"""``$toString`` and ``$toObjectId``, the conversions ``$lookup`` pipelines join on.

As mongod: null or missing gives null; a failed conversion is 241 ConversionFailure. A double
has no ``$toString`` here: mongod's own number formatting is not reproduced, so it is refused
by name rather than answered differently.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.types import Int64
from asyncmongo.testing.store.compare import RANK_NULL, RANK_UNDEFINED, type_name, type_rank
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.paths import MISSING

Scope = dict[str, Any]
Evaluate = Callable[[Any, Scope], Any]
Operator = Callable[[Any, Scope, Evaluate], Any]
_HEX = frozenset("0123456789abcdefABCDEF")


def _one(name: str, argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    values = argument if isinstance(argument, list) else [argument]
    if len(values) != 1:
        raise StoreError(16020, f"Expression {name} takes exactly 1 arguments. {len(values)} "
                                "were passed in.")
    return evaluate(values[0], scope)


def _null(value: Any) -> bool:
    return value is MISSING or type_rank(value) in (RANK_NULL, RANK_UNDEFINED)


def _to_string(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    value = _one("$toString", argument, scope, evaluate)
    if _null(value):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Int64):
        return str(int(value))
    if isinstance(value, Decimal128):
        return str(value)
    if isinstance(value, ObjectId):
        return str(value)
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, float):
        raise StoreError(241, "$toString of a double is not supported by asyncmongo.testing "
                              "(mongod's number formatting is not reproduced)")
    raise StoreError(241, f"Unsupported conversion from {type_name(value)} to string in "
                          "$convert with no onError value")


def _to_object_id(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    value = _one("$toObjectId", argument, scope, evaluate)
    if _null(value):
        return None
    if isinstance(value, ObjectId):
        return value
    if not isinstance(value, str):
        raise StoreError(241, f"Unsupported conversion from {type_name(value)} to objectId in "
                              "$convert with no onError value")
    if len(value) != 24:
        raise StoreError(241, f"Failed to parse objectId '{value}' in $convert with no onError "
                              f"value: Invalid string length for parsing to OID, expected 24 "
                              f"but found {len(value)}")
    if not set(value) <= _HEX:
        raise StoreError(241, f"Failed to parse objectId '{value}' in $convert with no onError "
                              "value: Invalid character found in hex string")
    return ObjectId(value)


OPERATORS: dict[str, Operator] = {
    "$toString": _to_string,
    "$toObjectId": _to_object_id,
}

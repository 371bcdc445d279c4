"""Results reduced to a comparable form, with mongod's numeric rules: a number keeps its BSON
type (int, long, double, decimal) and its exact value, so ``1`` and ``1.0`` differ (mongod's
arithmetic defines the result type) while ``Decimal128("3.0")`` and ``Decimal128("3")`` carry
the same value and type. Documents keep their field order (mongod's replies define it)."""

from __future__ import annotations

import datetime
import decimal
import re
from fractions import Fraction
from typing import Any

from asyncmongo.bson import Decimal128, Int64, ObjectId, Regex

__all__ = ["canonical", "multiset", "numeric_value"]


def numeric_value(value: Any) -> Fraction | None:
    """The exact value of a BSON number, None for any other value (and for NaN/infinity)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value) if value == value and abs(value) != float("inf") else None
    if isinstance(value, Decimal128):
        number = value.to_decimal()
        return Fraction(number) if number.is_finite() else None
    return None


def _number_type(value: Any) -> str:
    if isinstance(value, Int64):
        return "long"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    return "decimal"


def canonical(value: Any, unordered: frozenset[str] = frozenset(), typed: bool = True) -> Any:
    """A hashable, ordered stand-in for ``value``; arrays under a field named in
    ``unordered`` (or starting with ``addToSet``) compare as multisets; ``typed=False``
    compares numbers by value alone (where mongod keeps whichever of equal values it met
    first, as distinct does)."""
    if isinstance(value, bool) or value is None:
        return ("scalar", value)
    number = numeric_value(value)
    if number is not None:
        return ("number", _number_type(value) if typed else "number", number)
    if isinstance(value, float | Decimal128):
        return ("number", _number_type(value), str(value))
    if isinstance(value, dict):
        return ("document", tuple(
            (key, _canonical_field(key, item, unordered, typed)) for key, item in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(canonical(item, unordered, typed) for item in value))
    if isinstance(value, re.Pattern | Regex):
        return ("regex", value.pattern)
    if isinstance(value, datetime.datetime):
        return ("date", value.replace(tzinfo=None).isoformat())
    if isinstance(value, ObjectId | str | decimal.Decimal):
        return (type(value).__name__, str(value))
    return (type(value).__name__, repr(value))


def _canonical_field(key: str, item: Any, unordered: frozenset[str], typed: bool) -> Any:
    if isinstance(item, list) and (key in unordered or key.startswith("addToSet")):
        return ("set", multiset(item, typed))
    return canonical(item, unordered, typed)


def multiset(values: list[Any], typed: bool = True) -> tuple[Any, ...]:
    """Values compared regardless of order."""
    return tuple(sorted((canonical(value, typed=typed) for value in values), key=repr))

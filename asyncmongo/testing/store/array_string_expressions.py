"""Array, set and string aggregation operators: ``$slice $indexOfArray $range $setUnion
$setIntersection $setDifference $setEquals $setIsSubset $split $strLenCP``, as mongod
documents them (a null or missing input gives null where mongod says so).

Each takes the operator's argument, the scope and the evaluator of ``expressions``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asyncmongo.testing.store.compare import (
    RANK_NULL,
    RANK_UNDEFINED,
    hash_key,
    integral,
    type_name,
    type_rank,
)
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.paths import MISSING

Scope = dict[str, Any]
Evaluate = Callable[[Any, Scope], Any]
Operator = Callable[[Any, Scope, Evaluate], Any]


def _null(value: Any) -> bool:
    return value is MISSING or type_rank(value) in (RANK_NULL, RANK_UNDEFINED)


def _args(name: str, argument: Any, scope: Scope, evaluate: Evaluate, low: int,
          high: int) -> list[Any]:
    values = argument if isinstance(argument, list) else [argument]
    if low == high and len(values) != low:
        raise StoreError(16020, f"Expression {name} takes exactly {low} arguments. "
                                f"{len(values)} were passed in.")
    if not low <= len(values) <= high:
        raise StoreError(28667, f"Expression {name} takes at least {low} arguments, and at "
                                f"most {high}, but {len(values)} were passed in.")
    return [evaluate(v, scope) for v in values]


def _whole(name: str, value: Any, what: str) -> int:
    whole = integral(value)
    if whole is None:
        raise StoreError(28669 if name == "$slice" else 40096,
                         f"{name}'s {what} must be an integral value, found: "
                         f"{type_name(value) if value is not MISSING else 'missing'}")
    return whole


def _slice(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    values = _args("$slice", argument, scope, evaluate, 2, 3)
    array = values[0]
    if any(_null(v) for v in values):
        return None
    if not isinstance(array, list):
        raise StoreError(28724, f"First argument to $slice must be an array, but is of type: "
                                f"{type_name(array)}")
    if len(values) == 2:
        count = _whole("$slice", values[1], "second argument")
        return array[:count] if count >= 0 else array[max(0, len(array) + count):]
    start = _whole("$slice", values[1], "second argument")
    count = _whole("$slice", values[2], "third argument")
    if count <= 0:
        raise StoreError(28729, f"Third argument to $slice must be positive: {count}")
    begin = start if start >= 0 else max(0, len(array) + start)
    return array[begin:begin + count]


def _index_of_array(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    values = _args("$indexOfArray", argument, scope, evaluate, 2, 4)
    array, wanted = values[0], values[1]
    if _null(array):
        return None
    if not isinstance(array, list):
        raise StoreError(40090, f"$indexOfArray requires an array as a first argument, found: "
                                f"{type_name(array)}")
    start = _whole("$indexOfArray", values[2], "starting index") if len(values) > 2 else 0
    end = _whole("$indexOfArray", values[3], "ending index") if len(values) > 3 else len(array)
    if start < 0 or end < 0:
        raise StoreError(40097, "$indexOfArray requires a nonnegative index")
    key = hash_key(None if wanted is MISSING else wanted)
    for position in range(start, min(end, len(array))):
        if hash_key(array[position]) == key:
            return position
    return -1


def _range(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    values = _args("$range", argument, scope, evaluate, 2, 3)
    start = _whole("$range", values[0], "starting value")
    end = _whole("$range", values[1], "ending value")
    step = _whole("$range", values[2], "step value") if len(values) > 2 else 1
    if step == 0:
        raise StoreError(34449, "$range requires a non-zero step value")
    return list(range(start, end, step))


def _sets(name: str, argument: Any, scope: Scope, evaluate: Evaluate,
          low: int, high: int) -> list[list[Any]] | None:
    values = _args(name, argument, scope, evaluate, low, high)
    if any(_null(v) for v in values):
        return None
    for value in values:
        if not isinstance(value, list):
            raise StoreError(17044 if name == "$setUnion" else 17047,
                             f"All operands of {name} must be arrays. One argument is of type: "
                             f"{type_name(value)}")
    return values


def _unique(values: list[Any]) -> dict[Any, Any]:
    unique: dict[Any, Any] = {}
    for value in values:
        unique.setdefault(hash_key(value), value)
    return unique


def _set_union(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    arrays = _sets("$setUnion", argument, scope, evaluate, 0, 1 << 30)
    return None if arrays is None else list(_unique([v for a in arrays for v in a]).values())


def _set_intersection(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    arrays = _sets("$setIntersection", argument, scope, evaluate, 0, 1 << 30)
    if arrays is None:
        return None
    if not arrays:
        return []
    common = _unique(arrays[0])
    for other in arrays[1:]:
        keys = set(_unique(other))
        common = {k: v for k, v in common.items() if k in keys}
    return list(common.values())


def _set_difference(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    arrays = _sets("$setDifference", argument, scope, evaluate, 2, 2)
    if arrays is None:
        return None
    removed = set(_unique(arrays[1]))
    return [v for k, v in _unique(arrays[0]).items() if k not in removed]


def _set_equals(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    arrays = _sets("$setEquals", argument, scope, evaluate, 2, 1 << 30)
    if arrays is None:
        raise StoreError(17044, "All operands of $setEquals must be arrays.")
    first = set(_unique(arrays[0]))
    return all(set(_unique(a)) == first for a in arrays[1:])


def _set_is_subset(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    arrays = _sets("$setIsSubset", argument, scope, evaluate, 2, 2)
    if arrays is None:
        raise StoreError(17046, "both operands of $setIsSubset must be arrays.")
    return set(_unique(arrays[0])) <= set(_unique(arrays[1]))


def _split(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    text, separator = _args("$split", argument, scope, evaluate, 2, 2)
    if _null(text):
        return None
    if not isinstance(text, str):
        raise StoreError(40085, f"$split requires an expression that evaluates to a string as "
                                f"a first argument, found: {type_name(text)}")
    if not isinstance(separator, str):
        raise StoreError(40086, f"$split requires an expression that evaluates to a string as "
                                f"a second argument, found: {type_name(separator)}")
    if not separator:
        raise StoreError(40087, "$split requires a non-empty separator")
    return text.split(separator)


def _str_len_cp(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    (text,) = _args("$strLenCP", argument, scope, evaluate, 1, 1)
    if not isinstance(text, str):
        raise StoreError(34471, f"$strLenCP requires a string argument, found: "
                                f"{type_name(text) if text is not MISSING else 'missing'}")
    return len(text)


OPERATORS: dict[str, Operator] = {
    "$slice": _slice,
    "$indexOfArray": _index_of_array,
    "$range": _range,
    "$setUnion": _set_union,
    "$setIntersection": _set_intersection,
    "$setDifference": _set_difference,
    "$setEquals": _set_equals,
    "$setIsSubset": _set_is_subset,
    "$split": _split,
    "$strLenCP": _str_len_cp,
}

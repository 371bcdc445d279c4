"""Aggregation expressions that bind variables or walk arrays and objects: ``$map $filter
$reduce $let $switch $reverseArray $objectToArray $arrayToObject``, as mongod documents them.

Each takes the operator's argument, the evaluation scope (variables by name) and the
evaluator of ``expressions`` (passed in, so this module does not import it). A null or missing
input gives null, as in mongod.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from asyncmongo.testing.store.compare import (
    RANK_NULL,
    RANK_UNDEFINED,
    is_number,
    number_value,
    type_name,
    type_rank,
)
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.paths import MISSING

Scope = dict[str, Any]
Evaluate = Callable[[Any, Scope], Any]
Operator = Callable[[Any, Scope, Evaluate], Any]


def truthy(value: Any) -> bool:
    """Aggregation truthiness: false, null, missing, undefined and zero are false."""
    if value is MISSING or value is False:
        return False
    if type_rank(value) in (RANK_NULL, RANK_UNDEFINED):
        return False
    if is_number(value):
        return number_value(value) != 0
    return True


def _null(value: Any) -> bool:
    return value is MISSING or type_rank(value) in (RANK_NULL, RANK_UNDEFINED)


def _spec(name: str, argument: Any, required: tuple[str, ...],
          optional: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(argument, Mapping):
        raise StoreError(16878 if name == "$filter" else 16877,
                         f"{name} only supports an object as its argument")
    for field in argument:
        if field not in required and field not in optional:
            raise StoreError(16879, f"Unrecognized parameter to {name}: {field}")
    for field in required:
        if field not in argument:
            raise StoreError(16880, f"Missing '{field}' parameter to {name}")
    return argument


def _variable(name: str, argument: Mapping[str, Any]) -> str:
    variable = argument.get("as", "this")
    if not isinstance(variable, str) or not variable:
        raise StoreError(16866, f"{name}: 'as' must be a non-empty string")
    return variable


def _map(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    spec = _spec("$map", argument, ("input", "in"), ("as",))
    variable = _variable("$map", spec)
    source = evaluate(spec["input"], scope)
    if _null(source):
        return None
    if not isinstance(source, list):
        raise StoreError(16883, f"input to $map must be an array not {type_name(source)}")
    results = [evaluate(spec["in"], {**scope, variable: item}) for item in source]
    return [None if r is MISSING else r for r in results]


def _filter(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    spec = _spec("$filter", argument, ("input", "cond"), ("as", "limit"))
    variable = _variable("$filter", spec)
    source = evaluate(spec["input"], scope)
    if _null(source):
        return None
    if not isinstance(source, list):
        raise StoreError(28651, f"input to $filter must be an array not {type_name(source)}")
    limit = evaluate(spec["limit"], scope) if "limit" in spec else None
    kept = []
    for item in source:
        if truthy(evaluate(spec["cond"], {**scope, variable: item})):
            kept.append(item)
            if isinstance(limit, int) and len(kept) >= limit:
                break
    return kept


def _reduce(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    spec = _spec("$reduce", argument, ("input", "initialValue", "in"), ())
    source = evaluate(spec["input"], scope)
    if _null(source):
        return None
    if not isinstance(source, list):
        raise StoreError(40080, f"$reduce requires that 'input' be an array, found: "
                                f"{type_name(source)}")
    value = evaluate(spec["initialValue"], scope)
    for item in source:
        value = evaluate(spec["in"], {**scope, "value": value, "this": item})
    return value


def _let(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    spec = _spec("$let", argument, ("vars", "in"), ())
    bindings = spec["vars"]
    if not isinstance(bindings, Mapping):
        raise StoreError(10065, "invalid parameter: expected an object (vars)")
    inner = {**scope, **{name: evaluate(e, scope) for name, e in bindings.items()}}
    return evaluate(spec["in"], inner)


def _switch(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    if not isinstance(argument, Mapping):
        raise StoreError(40060, "$switch requires an object as an argument")
    branches = argument.get("branches")
    if not isinstance(branches, list):
        raise StoreError(40061, "$switch expected an array for 'branches'")
    if not branches:
        raise StoreError(40068, "$switch requires at least one branch.")
    for branch in branches:
        if not isinstance(branch, Mapping) or "case" not in branch or "then" not in branch:
            raise StoreError(40064, "$switch requires each branch have a 'case' and 'then'")
        if truthy(evaluate(branch["case"], scope)):
            return evaluate(branch["then"], scope)
    if "default" not in argument:
        raise StoreError(40066, "$switch could not find a matching branch for an input, and "
                                "no default was specified.")
    return evaluate(argument["default"], scope)


def _single(name: str, argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    values = argument if isinstance(argument, list) else [argument]
    if len(values) != 1:
        raise StoreError(16020, f"Expression {name} takes exactly 1 arguments. {len(values)} "
                                "were passed in.")
    return evaluate(values[0], scope)


def _reverse_array(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    value = _single("$reverseArray", argument, scope, evaluate)
    if _null(value):
        return None
    if not isinstance(value, list):
        raise StoreError(34435, f"The argument to $reverseArray must be an array, but was of "
                                f"type: {type_name(value)}")
    return value[::-1]


def _object_to_array(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    value = _single("$objectToArray", argument, scope, evaluate)
    if _null(value):
        return None
    if not isinstance(value, Mapping):
        raise StoreError(40390, f"$objectToArray requires a document input, found: "
                                f"{type_name(value)}")
    return [{"k": k, "v": v} for k, v in value.items()]


def _array_to_object(argument: Any, scope: Scope, evaluate: Evaluate) -> Any:
    value = _single("$arrayToObject", argument, scope, evaluate)
    if _null(value):
        return None
    if not isinstance(value, list):
        raise StoreError(40386, f"$arrayToObject requires an array input, found: "
                                f"{type_name(value)}")
    result: dict[str, Any] = {}
    for item in value:
        if isinstance(item, Mapping) and set(item) == {"k", "v"} and isinstance(item["k"], str):
            result[item["k"]] = item["v"]
        elif isinstance(item, list) and len(item) == 2 and isinstance(item[0], str):
            result[item[0]] = item[1]
        else:
            raise StoreError(40392, "$arrayToObject requires an array of key-value pairs "
                                    "(a {k, v} document or a two-element array with a string "
                                    "key)")
    return result


OPERATORS: dict[str, Operator] = {
    "$map": _map,
    "$filter": _filter,
    "$reduce": _reduce,
    "$let": _let,
    "$switch": _switch,
    "$reverseArray": _reverse_array,
    "$objectToArray": _object_to_array,
    "$arrayToObject": _array_to_object,
}

"""Aggregation expressions: field paths, variables, literals and the common operators.

Used by ``$expr`` in filters and by the ``$project``/``$addFields``/``$group`` stages. A
field path (``"$a.b"``) maps over arrays as the server does; a missing value is
:data:`~asyncmongo.testing.store.paths.MISSING` (``$ifNull`` and ``$$REMOVE`` tell it from
null). An unknown operator raises code 168 InvalidPipelineOperator.
"""

from __future__ import annotations

import datetime
import functools
import random
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.types import Int64
from asyncmongo.testing.store import (
    array_string_expressions,
    conversion_expressions,
    metadata,
    unsupported,
    variable_expressions,
)
from asyncmongo.testing.store.compare import (
    RANK_NULL,
    RANK_UNDEFINED,
    compare,
    integral,
    is_number,
    number_value,
    to_millis,
    type_name,
    type_rank,
)
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.paths import MISSING
from asyncmongo.testing.store.variable_expressions import truthy as truthy

Variables = Mapping[str, Any]


def parse(expression: Any) -> Any:
    """Validate ``expression`` (unknown operators fail now, not per document)."""
    if isinstance(expression, Mapping):
        keys = list(expression)
        if keys and keys[0].startswith("$"):
            if len(keys) != 1:
                raise StoreError(15983, "an expression specification must contain exactly "
                                        "one field, the name of the expression")
            if keys[0] in unsupported.EXPRESSIONS:
                raise unsupported.expression(keys[0])
            if keys[0] != "$literal" and keys[0] not in _OPERATORS:
                raise StoreError(168, f"Unrecognized expression '{keys[0]}'")
            if keys[0] == "$meta":
                metadata.check_meta(expression[keys[0]])
            elif keys[0] != "$literal":
                parse(expression[keys[0]])
        else:
            for value in expression.values():
                parse(value)
    elif isinstance(expression, list):
        for value in expression:
            parse(value)
    return expression


def _with_evaluator(operator: variable_expressions.Operator, argument: Any,
                    scope: dict[str, Any]) -> Any:
    return operator(argument, scope, _eval)


def evaluate(expression: Any, document: Any, variables: Variables | None = None) -> Any:
    """The value of ``expression`` for ``document`` (``$$ROOT``/``$$CURRENT``)."""
    scope = {"ROOT": document, "CURRENT": document, **(variables or {})}
    return _eval(expression, scope)


def _eval(expression: Any, scope: dict[str, Any]) -> Any:
    if isinstance(expression, str) and expression.startswith("$"):
        return _path(expression, scope)
    if isinstance(expression, Mapping):
        keys = list(expression)
        if keys and keys[0].startswith("$"):
            operator = keys[0]
            if operator == "$literal":
                return expression[operator]
            return _OPERATORS[operator](expression[operator], scope)
        result = {}
        for key, value in expression.items():
            evaluated = _eval(value, scope)
            if evaluated is not MISSING:
                result[key] = evaluated
        return result
    if isinstance(expression, list):
        return [_missing_to_null(_eval(e, scope)) for e in expression]
    return expression


def _missing_to_null(value: Any) -> Any:
    return None if value is MISSING else value


def _path(expression: str, scope: dict[str, Any]) -> Any:
    if expression.startswith("$$"):
        name, _, rest = expression[2:].partition(".")
        if name == "REMOVE":
            return MISSING
        if name not in scope:
            raise StoreError(17276, f"Use of undefined variable: {name}")
        base = scope[name]
        return field_path(base, rest.split(".")) if rest else base
    return field_path(scope["CURRENT"], expression[1:].split("."))


def field_path(value: Any, parts: list[str]) -> Any:
    """An aggregation field path: maps over arrays, dropping elements without the field."""
    for i, key in enumerate(parts):
        if isinstance(value, list):
            mapped = [field_path(e, parts[i:]) for e in value if isinstance(e, Mapping | list)]
            return [m for m in mapped if m is not MISSING]
        if not isinstance(value, Mapping) or key not in value:
            return MISSING
        value = value[key]
    return value


def _args(argument: Any, scope: dict[str, Any]) -> list[Any]:
    if isinstance(argument, list):
        return [_eval(a, scope) for a in argument]
    return [_eval(argument, scope)]


def _exactly(name: str, count: int, argument: Any, scope: dict[str, Any]) -> list[Any]:
    """The evaluated arguments of an operator that takes exactly ``count`` of them."""
    values = _args(argument, scope)
    if len(values) != count:
        raise StoreError(16020, f"Expression {name} takes exactly {count} arguments. "
                                f"{len(values)} were passed in.")
    return values


def _is_null(value: Any) -> bool:
    return value is MISSING or type_rank(value) in (RANK_NULL, RANK_UNDEFINED)


def from_number(value: int | float | Decimal, *, like: list[Any]) -> Any:
    """Wrap a Python result in the widest BSON number type among ``like``."""
    if any(isinstance(v, Decimal128) for v in like):
        return Decimal128(Decimal(value))
    if any(isinstance(v, float) for v in like) or isinstance(value, float):
        return float(value)
    if isinstance(value, Decimal):
        return Decimal128(value)
    if any(_is_long(v) for v in like) or not -(2**31) <= value < 2**31:
        return Int64(value)
    return value


def _is_long(value: Any) -> bool:
    """An Int64, or a plain int that only fits in 64 bits (it encodes as a long)."""
    return isinstance(value, Int64) or (
        isinstance(value, int) and not isinstance(value, bool) and not -(2**31) <= value < 2**31)


def _numeric(name: str, values: list[Any]) -> list[Any] | None:
    if any(_is_null(v) for v in values):
        return None
    for v in values:
        if not is_number(v):
            raise StoreError(16554, f"{name} only supports numeric types, not {type_name(v)}")
    return values


def _add(argument: Any, scope: dict[str, Any]) -> Any:
    """$add: numbers, or one date plus numbers (milliseconds), which is a date."""
    arguments = _args(argument, scope)
    for v in arguments:  # in order, as mongod: a null before a bad operand is a null result
        if _is_null(v):
            return None
        if not is_number(v) and not isinstance(v, datetime.datetime):
            raise StoreError(16554, f"$add only supports numeric or date types, not "
                                    f"{type_name(v)}")
    dates = [v for v in arguments if isinstance(v, datetime.datetime)]
    if not dates:
        values = _numeric("$add", arguments)
        if values is None:
            return None
        total: Any = 0
        for v in values:
            total = _plus(total, number_value(v))
        return from_number(total, like=values)
    if len(dates) > 1:
        raise StoreError(16612, "only one date allowed in an $add expression")
    numbers = _numeric("$add", [v for v in arguments if v is not dates[0]]) or []
    return _shift(dates[0], sum((Decimal(number_value(v)) for v in numbers), Decimal(0)))


def _shift(date: datetime.datetime, millis: Decimal) -> datetime.datetime:
    """``date`` moved by ``millis`` rounded half away from zero (mongod's llround)."""
    whole = int(millis.to_integral_value(rounding=ROUND_HALF_UP))
    return from_millis(to_millis(date) + whole)


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def from_millis(millis: int) -> datetime.datetime:
    """The UTC datetime ``millis`` milliseconds after the epoch."""
    return _EPOCH + datetime.timedelta(milliseconds=millis)


def _plus(a: Any, b: Any) -> Any:
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return Decimal(a) + Decimal(b)
    return a + b


def _multiply(argument: Any, scope: dict[str, Any]) -> Any:
    values = _numeric("$multiply", _args(argument, scope))
    if values is None:
        return None
    product: Any = 1
    for v in values:
        n = number_value(v)
        product = (Decimal(product) * Decimal(n) if isinstance(n, Decimal)
                   or isinstance(product, Decimal) else product * n)
    return from_number(product, like=values)


def _binary(name: str, argument: Any, scope: dict[str, Any]) -> list[Any] | None:
    return _numeric(name, _exactly(name, 2, argument, scope))


def _subtract(argument: Any, scope: dict[str, Any]) -> Any:
    """$subtract: numbers; a date minus a date (milliseconds, a long) or minus a number
    (a date)."""
    pair = _exactly("$subtract", 2, argument, scope)
    if isinstance(pair[0], datetime.datetime) and not any(_is_null(v) for v in pair):
        if isinstance(pair[1], datetime.datetime):
            return Int64(to_millis(pair[0]) - to_millis(pair[1]))
        if is_number(pair[1]):
            return _shift(pair[0], -Decimal(number_value(pair[1])))
        raise StoreError(16613, f"can't $subtract {type_name(pair[1])} from Date")
    if isinstance(pair[1], datetime.datetime) and not any(_is_null(v) for v in pair):
        raise StoreError(16556, f"can't $subtract date from {type_name(pair[0])}")
    values = _binary("$subtract", argument, scope)
    if values is None:
        return None
    a, b = (number_value(v) for v in values)
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return from_number(Decimal(a) - Decimal(b), like=values)
    return from_number(a - b, like=values)


def _divide(argument: Any, scope: dict[str, Any]) -> Any:
    values = _binary("$divide", argument, scope)
    if values is None:
        return None
    a, b = (number_value(v) for v in values)
    if b == 0:
        raise StoreError(2, "can't $divide by zero")
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return Decimal128(Decimal(a) / Decimal(b))
    return a / b


def _mod(argument: Any, scope: dict[str, Any]) -> Any:
    values = _binary("$mod", argument, scope)
    if values is None:
        return None
    a, b = (number_value(v) for v in values)
    if b == 0:
        raise StoreError(16610, "can't $mod by zero")
    left: Any = abs(a)
    result = left % abs(b)
    return from_number(-result if a < 0 else result, like=values)


def _abs(argument: Any, scope: dict[str, Any]) -> Any:
    values = _numeric("$abs", _args(argument, scope))
    if values is None:
        return None
    magnitude: Any = abs(number_value(values[0]))
    return from_number(magnitude, like=values)


def _comparison(accept: Callable[[int], bool]) -> Callable[[Any, dict[str, Any]], Any]:
    def run(argument: Any, scope: dict[str, Any]) -> Any:
        a, b = (_missing_to_null(v) for v in _exactly("comparison", 2, argument, scope))
        return accept(compare(a, b))

    return run


def _cmp(argument: Any, scope: dict[str, Any]) -> Any:
    a, b = (_missing_to_null(v) for v in _exactly("$cmp", 2, argument, scope))
    return compare(a, b)


def _and(argument: Any, scope: dict[str, Any]) -> Any:
    return all(truthy(_eval(a, scope)) for a in (argument if isinstance(argument, list)
                                                    else [argument]))


def _or(argument: Any, scope: dict[str, Any]) -> Any:
    return any(truthy(_eval(a, scope)) for a in (argument if isinstance(argument, list)
                                                    else [argument]))


def _not(argument: Any, scope: dict[str, Any]) -> Any:
    return not truthy(_args(argument, scope)[0])


def _cond(argument: Any, scope: dict[str, Any]) -> Any:
    if isinstance(argument, Mapping):
        branches = [argument.get("if"), argument.get("then"), argument.get("else")]
    else:
        branches = list(argument) if isinstance(argument, list) else [argument]
    if len(branches) != 3:
        raise StoreError(16020, "Expression $cond takes exactly 3 arguments.")
    return _eval(branches[1] if truthy(_eval(branches[0], scope)) else branches[2], scope)


def _if_null(argument: Any, scope: dict[str, Any]) -> Any:
    values = list(argument) if isinstance(argument, list) else []
    if len(values) < 2:
        raise StoreError(1257300, "$ifNull needs at least two arguments")
    for expression in values[:-1]:
        value = _eval(expression, scope)
        if not _is_null(value):
            return value
    return _eval(values[-1], scope)


def _concat(argument: Any, scope: dict[str, Any]) -> Any:
    values = _args(argument, scope)
    if any(_is_null(v) for v in values):
        return None
    for v in values:
        if not isinstance(v, str):
            raise StoreError(16702, f"$concat only supports strings, not {type_name(v)}")
    return "".join(values)


def _string_case(upper: bool) -> Callable[[Any, dict[str, Any]], Any]:
    def run(argument: Any, scope: dict[str, Any]) -> Any:
        value = _args(argument, scope)[0]
        text = "" if _is_null(value) else str(value)
        return text.upper() if upper else text.lower()

    return run


def _size(argument: Any, scope: dict[str, Any]) -> Any:
    value = _args(argument, scope)[0]
    if not isinstance(value, list):
        raise StoreError(17124, "The argument to $size must be an array. Type of argument was:"
                                f" {'missing' if value is MISSING else type_name(value)}")
    return len(value)


def _array_elem_at(argument: Any, scope: dict[str, Any]) -> Any:
    array, index = _exactly("$arrayElemAt", 2, argument, scope)
    if _is_null(array) or _is_null(index):
        return None
    if not isinstance(array, list):
        raise StoreError(28689, "$arrayElemAt's first argument must be an array")
    position = integral(index)
    if position is None:
        raise StoreError(28691, "$arrayElemAt's second argument must be representable as a "
                                "32-bit integer")
    if -len(array) <= position < len(array):
        return array[position]
    return MISSING


def _in(argument: Any, scope: dict[str, Any]) -> Any:
    value, array = _exactly("$in", 2, argument, scope)
    if not isinstance(array, list):
        raise StoreError(40081, "$in requires an array as a second argument")
    return any(compare(_missing_to_null(value), e) == 0 for e in array)


def _array_accumulator(name: str) -> Callable[[Any, dict[str, Any]], Any]:
    def run(argument: Any, scope: dict[str, Any]) -> Any:
        values = _args(argument, scope)
        if len(values) == 1 and isinstance(values[0], list):
            values = values[0]
        return accumulate(name, [v for v in values if v is not MISSING])

    return run


def accumulate(name: str, values: list[Any]) -> Any:
    """$sum/$avg/$min/$max/$first/$last over ``values`` (the $group and array forms)."""
    if name in ("$first", "$last"):
        if not values:
            return None
        return values[0] if name == "$first" else values[-1]
    present = [v for v in values if not _is_null(v)]
    if name in ("$min", "$max"):
        if not present:
            return None
        best = present[0]
        for v in present[1:]:
            if (compare(v, best) < 0) == (name == "$min") and compare(v, best) != 0:
                best = v
        return best
    numbers = [v for v in present if is_number(v)]
    if name == "$sum":
        return sum_numbers(numbers)
    if not numbers:
        return None
    total = sum_numbers(numbers)
    if isinstance(total, Decimal128):
        return Decimal128(total.to_decimal() / len(numbers))
    return float(number_value(total)) / len(numbers)


def sum_numbers(numbers: list[Any]) -> Any:
    """The sum with the server's widening (int -> long -> double, decimal wins)."""
    total: Any = 0
    for v in numbers:
        total = _plus(total, number_value(v))
    if not numbers:
        return 0
    return from_number(total, like=numbers)


def _type(argument: Any, scope: dict[str, Any]) -> Any:
    value = _args(argument, scope)[0]
    return "missing" if value is MISSING else type_name(value)


def _concat_arrays(argument: Any, scope: dict[str, Any]) -> Any:
    values = _args(argument, scope)
    if any(_is_null(v) for v in values):
        return None
    result: list[Any] = []
    for v in values:
        if not isinstance(v, list):
            raise StoreError(28664, f"$concatArrays only supports arrays, not {type_name(v)}")
        result.extend(v)
    return result


def _is_array(argument: Any, scope: dict[str, Any]) -> Any:
    return isinstance(_args(argument, scope)[0], list)


def _merge_objects(argument: Any, scope: dict[str, Any]) -> Any:
    result: dict[str, Any] = {}
    for value in _args(argument, scope):
        if _is_null(value):
            continue
        if not isinstance(value, Mapping):
            raise StoreError(40400, "$mergeObjects requires object inputs, but input "
                                    f"{value!r} is of type {type_name(value)}")
        result.update(value)
    return result


def _field_arguments(name: str, argument: Any, scope: dict[str, Any]) -> tuple[str, Any]:
    if not isinstance(argument, Mapping) or "field" not in argument:
        raise StoreError(4161102, f"{name} requires 'field' to be specified")
    field = _eval(argument["field"], scope)
    if not isinstance(field, str):
        raise StoreError(4161106, f"{name} requires 'field' to evaluate to type String")
    source = _eval(argument.get("input", "$$CURRENT"), scope)
    return field, source


def _get_field(argument: Any, scope: dict[str, Any]) -> Any:
    if not isinstance(argument, Mapping):
        argument = {"field": argument}
    field, source = _field_arguments("$getField", argument, scope)
    if _is_null(source):
        return None
    if not isinstance(source, Mapping):
        return MISSING
    return source.get(field, MISSING)


def _set_field(argument: Any, scope: dict[str, Any]) -> Any:
    field, source = _field_arguments("$setField", argument, scope)
    if _is_null(source):
        return None
    if not isinstance(source, Mapping):
        raise StoreError(4161105, "$setField requires 'input' to evaluate to type Object")
    value = _eval(argument.get("value"), scope) if "value" in argument else MISSING
    result = dict(source)
    if value is MISSING:
        result.pop(field, None)
    else:
        result[field] = value
    return result


def _unset_field(argument: Any, scope: dict[str, Any]) -> Any:
    return _set_field({**argument, "value": "$$REMOVE"}, scope)


def _rand(argument: Any, scope: dict[str, Any]) -> Any:
    """A random double in [0, 1) (the server's $rand; not reproducible, as on the server)."""
    return random.random()


_OPERATORS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "$rand": _rand,
    "$meta": lambda argument, scope: metadata.meta_score(scope["CURRENT"]),
    "$getField": _get_field,
    "$setField": _set_field,
    "$unsetField": _unset_field,
    "$add": _add,
    "$subtract": _subtract,
    "$multiply": _multiply,
    "$divide": _divide,
    "$mod": _mod,
    "$abs": _abs,
    "$eq": _comparison(lambda c: c == 0),
    "$ne": _comparison(lambda c: c != 0),
    "$gt": _comparison(lambda c: c > 0),
    "$gte": _comparison(lambda c: c >= 0),
    "$lt": _comparison(lambda c: c < 0),
    "$lte": _comparison(lambda c: c <= 0),
    "$cmp": _cmp,
    "$and": _and,
    "$or": _or,
    "$not": _not,
    "$cond": _cond,
    "$ifNull": _if_null,
    "$concat": _concat,
    "$toUpper": _string_case(True),
    "$toLower": _string_case(False),
    "$size": _size,
    "$arrayElemAt": _array_elem_at,
    "$in": _in,
    "$sum": _array_accumulator("$sum"),
    "$avg": _array_accumulator("$avg"),
    "$min": _array_accumulator("$min"),
    "$max": _array_accumulator("$max"),
    "$first": _array_accumulator("$first"),
    "$last": _array_accumulator("$last"),
    "$type": _type,
    "$concatArrays": _concat_arrays,
    "$isArray": _is_array,
    "$mergeObjects": _merge_objects,
}
_OPERATORS.update({name: functools.partial(_with_evaluator, operator)
                   for name, operator in {**variable_expressions.OPERATORS,
                                          **array_string_expressions.OPERATORS,
                                          **conversion_expressions.OPERATORS}.items()})

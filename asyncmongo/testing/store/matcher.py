"""Query filters: MongoDB's match language, compiled into predicates over documents.

``compile_filter(query)`` validates the whole filter first (so a bad operator fails even on an
empty collection, as on the server) and returns a predicate. Supported: $eq $ne $gt $gte $lt
$lte $in $nin $and $or $nor $not $exists $type $regex/$options $elemMatch $size $all $mod $expr
$comment, ``$text`` (its predicate comes from the caller, see ``text_search.py``) and
``$where`` (only the sleep/true/false scripts ``where.py`` reads), with dotted paths and
MongoDB's array semantics (a condition on an array field holds if it holds for the
array itself or for one of its elements). Anything else raises a
``StoreError`` naming the operator (code 2, BadValue), as the server does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from asyncmongo.bson.types import Regex
from asyncmongo.testing.store import expressions, unsupported
from asyncmongo.testing.store.compare import (
    RANK_NULL,
    RANK_UNDEFINED,
    TYPE_CODES,
    bson_type_code,
    compare,
    is_number,
    number_value,
    type_rank,
    values_equal,
)
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.paths import MISSING, collect, split_path
from asyncmongo.testing.store.where import compile_where

Predicate = Callable[[Mapping[str, Any]], bool]
CandidatesTest = Callable[[list[Any]], bool]
ValueTest = Callable[[Any], bool]


def compile_filter(query: Mapping[str, Any] | None,
                   variables: Mapping[str, Any] | None = None,
                   text: Predicate | None = None) -> Predicate:
    """A predicate for ``query`` (None or {} matches everything); ``variables`` are the
    command's ``let`` values, visible as ``$$name`` inside ``$expr``; ``text`` decides a
    ``$text`` at the top level (or in the top-level ``$and``), where mongod allows it."""
    if query is None:
        return lambda doc: True
    if not isinstance(query, Mapping):
        raise bad_value("filter must be an object")
    return _compile_document(query, variables, text)


def matches(query: Mapping[str, Any] | None, document: Mapping[str, Any]) -> bool:
    """True if ``document`` matches ``query``."""
    return compile_filter(query)(document)


def _compile_document(query: Mapping[str, Any],
                      variables: Mapping[str, Any] | None = None,
                      text: Predicate | None = None) -> Predicate:
    predicates = [
        _compile_top_level(key, cond, variables, text) if key.startswith("$")
        else _compile_field(key, cond)
        for key, cond in query.items()
    ]
    if len(predicates) == 1:
        return predicates[0]
    return lambda doc: all(p(doc) for p in predicates)


def _compile_top_level(operator: str, argument: Any, variables: Mapping[str, Any] | None,
                       text: Predicate | None = None) -> Predicate:
    if operator == "$and":
        return _compile_logical(operator, argument, variables, text)
    if operator in ("$or", "$nor"):
        return _compile_logical(operator, argument, variables)
    if operator == "$text":
        if text is None:
            raise bad_value("$text is supported by asyncmongo.testing only at the top level "
                            "of a find, count, distinct, update or delete filter, or in the "
                            "first $match of an aggregation (and needs a text index)")
        return text
    if operator == "$expr":
        expression = expressions.parse(argument)
        return lambda doc: expressions.truthy(expressions.evaluate(expression, doc, variables))
    if operator == "$comment":
        return lambda doc: True
    if operator == "$where":
        return compile_where(argument)
    if operator in unsupported.QUERY_OPERATORS:
        raise unsupported.query_operator(operator, top_level=True)
    raise bad_value(f"unknown top level operator: {operator}")


def _compile_logical(operator: str, argument: Any, variables: Mapping[str, Any] | None,
                     text: Predicate | None = None) -> Predicate:
    if not isinstance(argument, list) or not argument:
        raise bad_value(f"{operator} must be a nonempty array")
    clauses: list[Predicate] = []
    for clause in argument:
        if not isinstance(clause, Mapping):
            raise bad_value(f"{operator} argument's entries must be objects")
        clauses.append(_compile_document(clause, variables, text))
    if operator == "$and":
        return lambda doc: all(c(doc) for c in clauses)
    if operator == "$or":
        return lambda doc: any(c(doc) for c in clauses)
    return lambda doc: not any(c(doc) for c in clauses)


def is_operator_document(value: Any) -> bool:
    """True for ``{$op: ...}`` conditions (the first key decides, as on the server)."""
    return isinstance(value, Mapping) and bool(value) and next(iter(value)).startswith("$")


def _compile_field(path: str, condition: Any) -> Predicate:
    test = compile_condition(condition)
    parts = split_path(path)
    return lambda doc: test(collect(doc, parts))


def compile_condition(condition: Any) -> CandidatesTest:
    """A test over the values a path reaches, for a condition (operators or a plain value)."""
    if not is_operator_document(condition):
        if isinstance(condition, Regex | re.Pattern):
            return _any_value(_regex_test(condition))
        return _equality(condition)
    tests = [
        _compile_operator(op, arg, condition)
        for op, arg in condition.items()
        if op != "$options"
    ]
    if "$options" in condition and "$regex" not in condition:
        raise bad_value("$options needs a $regex")
    if len(tests) == 1:
        return tests[0]
    return lambda values: all(t(values) for t in tests)


def _any_value(test: ValueTest) -> CandidatesTest:
    """Holds if ``test`` holds for a value or, for an array value, for one of its elements."""

    def run(values: list[Any]) -> bool:
        for value in values:
            if test(value):
                return True
            if isinstance(value, list) and any(test(e) for e in value):
                return True
        return False

    return run


def _is_nullish(value: Any) -> bool:
    return value is MISSING or type_rank(value) in (RANK_NULL, RANK_UNDEFINED)


def _equals_test(query_value: Any) -> ValueTest:
    if query_value is None:
        return _is_nullish
    return lambda v: v is not MISSING and values_equal(v, query_value)


def _equality(query_value: Any) -> CandidatesTest:
    return _any_value(_equals_test(query_value))


def _comparison(query_value: Any, accept: Callable[[int], bool]) -> CandidatesTest:
    if query_value is None:
        if accept(0):
            return _any_value(_is_nullish)
        return lambda values: False
    rank = type_rank(query_value)

    def test(value: Any) -> bool:
        if value is MISSING or type_rank(value) != rank:
            return False
        return accept(compare(value, query_value))

    return _any_value(test)


_COMPARISONS: dict[str, Callable[[int], bool]] = {
    "$gt": lambda c: c > 0,
    "$gte": lambda c: c >= 0,
    "$lt": lambda c: c < 0,
    "$lte": lambda c: c <= 0,
}


def _compile_operator(operator: str, argument: Any, condition: Mapping[str, Any]) -> CandidatesTest:
    if operator == "$eq":
        return _equality(argument)
    if operator == "$ne":
        positive = _equality(argument)
        return lambda values: not positive(values)
    if operator in _COMPARISONS:
        return _comparison(argument, _COMPARISONS[operator])
    if operator in ("$in", "$nin"):
        return _in(operator, argument)
    compiler = _OPERATORS.get(operator)
    if compiler is None:
        if operator in unsupported.QUERY_OPERATORS:
            raise unsupported.query_operator(operator, top_level=False)
        raise bad_value(f"unknown operator: {operator}")
    return compiler(argument, condition)


def _in(operator: str, argument: Any) -> CandidatesTest:
    if not isinstance(argument, list):
        raise bad_value(f"{operator} needs an array")
    tests: list[ValueTest] = []
    for item in argument:
        if is_operator_document(item):
            raise bad_value("cannot nest $ under $in")
        tests.append(_regex_test(item) if isinstance(item, Regex | re.Pattern)
                     else _equals_test(item))
    positive = _any_value(lambda v: any(t(v) for t in tests))
    if operator == "$in":
        return positive
    return lambda values: not positive(values)


def _exists(argument: Any, condition: Mapping[str, Any]) -> CandidatesTest:
    wanted = expressions.truthy(argument)
    return lambda values: any(v is not MISSING for v in values) == wanted


def _not(argument: Any, condition: Mapping[str, Any]) -> CandidatesTest:
    if isinstance(argument, Regex | re.Pattern):
        inner = _any_value(_regex_test(argument))
    elif isinstance(argument, Mapping):
        if not argument:
            raise bad_value("$not cannot be empty")
        if not is_operator_document(argument):
            raise bad_value("$not needs a regex or a document")
        inner = compile_condition(argument)
    else:
        raise bad_value("$not needs a regex or a document")
    return lambda values: not inner(values)


def _regex_operator(argument: Any, condition: Mapping[str, Any]) -> CandidatesTest:
    options = condition.get("$options", "")
    if not isinstance(options, str):
        raise bad_value("$options has to be a string")
    if isinstance(argument, Regex):
        if options and argument.flags:
            raise bad_value("options set in both $regex and $options")
        return _any_value(_regex_test(Regex(argument.pattern, argument.flags or options)))
    if isinstance(argument, re.Pattern):
        return _any_value(_regex_test(argument))
    if not isinstance(argument, str):
        raise bad_value("$regex has to be a string")
    return _any_value(_regex_test(Regex(argument, options)))


_REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE,
                "u": 0}


def compile_regex(pattern: str, flags: str) -> re.Pattern[str]:
    """A Python pattern for a MongoDB (PCRE) regex; invalid ones give code 51091. mongod's
    PCRE always matches UTF-8, so "u" (PyMongo's re.UNICODE) is accepted and changes nothing:
    Python's str patterns are Unicode-aware already."""
    bits = 0
    for letter in flags:
        bit = _REGEX_FLAGS.get(letter)
        if bit is None:
            raise bad_value(f"invalid flag in regex options: {letter}")
        bits |= bit
    try:
        return re.compile(pattern, bits)
    except re.error as exc:
        raise StoreError(51091, f"Regular expression is invalid: {exc}") from exc


def _regex_test(query: Regex | re.Pattern[Any]) -> ValueTest:
    compiled = query if isinstance(query, re.Pattern) else compile_regex(query.pattern,
                                                                          query.flags)

    def test(value: Any) -> bool:
        if isinstance(value, str):
            return compiled.search(value) is not None
        if isinstance(value, Regex | re.Pattern):
            return values_equal(value, query)
        return False

    return test


def _type(argument: Any, condition: Mapping[str, Any]) -> CandidatesTest:
    wanted = [_type_code(a) for a in (argument if isinstance(argument, list) else [argument])]

    def test(value: Any) -> bool:
        if value is MISSING:
            return False
        code = bson_type_code(value)
        return code in wanted or ("number" in wanted and is_number(value))

    return _any_value(test)


def _type_code(alias: Any) -> int | str:
    if isinstance(alias, str):
        if alias == "number":
            return alias
        if alias not in TYPE_CODES:
            raise bad_value(f"Unknown type name alias: {alias}")
        return TYPE_CODES[alias]
    if is_number(alias):
        number = number_value(alias)
        if number != int(number) or int(number) not in TYPE_CODES.values():
            raise bad_value(f"Invalid numerical type code: {alias}")
        return int(number)
    raise bad_value("type must be represented as a number or a string")


def _size(argument: Any, condition: Mapping[str, Any]) -> CandidatesTest:
    if not is_number(argument):
        raise bad_value("$size needs a number")
    number = number_value(argument)
    if number != number or math.isinf(number) or number != int(number):
        raise bad_value(f"Failed to parse $size. Expected an integer, but found {argument}")
    if number < 0:
        raise bad_value(f"Failed to parse $size. Expected a non-negative number in: $size: "
                        f"{argument}")
    size = int(number)
    return lambda values: any(isinstance(v, list) and len(v) == size for v in values)


def _all(argument: Any, condition: Mapping[str, Any]) -> CandidatesTest:
    if not isinstance(argument, list):
        raise bad_value("$all needs an array")
    if not argument:
        return lambda values: False
    tests: list[CandidatesTest] = []
    for item in argument:
        if isinstance(item, Mapping) and next(iter(item), None) == "$elemMatch":
            tests.append(_elem_match(item["$elemMatch"], item))
        elif is_operator_document(item):
            raise bad_value("no $ expressions in $all")
        elif isinstance(item, Regex | re.Pattern):
            tests.append(_any_value(_regex_test(item)))
        else:
            tests.append(_equality(item))
    return lambda values: all(t(values) for t in tests)


def compile_element_test(condition: Mapping[str, Any]) -> ValueTest:
    """A test for one array element, as $elemMatch, $pull and the $elemMatch projection use:
    ``{$gt: 1}`` tests the element itself, ``{a: 1}`` queries an embedded document."""
    first = next(iter(condition), "")
    if first.startswith("$") and first not in ("$and", "$or", "$nor", "$expr"):
        value_test = compile_condition(condition)
        return lambda element: value_test([element])
    document_test = _compile_document(condition)
    return lambda element: isinstance(element, Mapping) and document_test(element)


def _elem_match(argument: Any, condition: Mapping[str, Any]) -> CandidatesTest:
    if not isinstance(argument, Mapping):
        raise bad_value("$elemMatch needs an Object")
    element_test = compile_element_test(argument)
    return lambda values: any(
        isinstance(v, list) and any(element_test(e) for e in v) for v in values
    )


def _mod(argument: Any, condition: Mapping[str, Any]) -> CandidatesTest:
    if not isinstance(argument, list):
        raise bad_value("malformed mod, needs to be an array")
    if len(argument) < 2:
        raise bad_value("malformed mod, not enough elements")
    if len(argument) > 2:
        raise bad_value("malformed mod, too many elements")
    if not all(is_number(a) for a in argument):
        raise bad_value("malformed mod, divisor and remainder must be numbers")
    divisor, remainder = (_truncate(a) for a in argument)
    if divisor is None or remainder is None:
        raise bad_value("malformed mod, divisor and remainder must be finite")
    if divisor == 0:
        raise bad_value("divisor cannot be 0")

    def test(value: Any) -> bool:
        if value is MISSING or not is_number(value):
            return False
        dividend = _truncate(value)
        return dividend is not None and _c_mod(dividend, divisor) == remainder

    return _any_value(test)


def _truncate(value: Any) -> int | None:
    number = number_value(value)
    if number != number or (isinstance(number, float) and math.isinf(number)):
        return None
    try:
        return int(number)
    except (OverflowError, ValueError):
        return None


def _c_mod(a: int, b: int) -> int:
    """C's truncated remainder (the sign follows the dividend)."""
    result = abs(a) % abs(b)
    return -result if a < 0 else result


_OPERATORS: dict[str, Callable[[Any, Mapping[str, Any]], CandidatesTest]] = {
    "$exists": _exists,
    "$not": _not,
    "$regex": _regex_operator,
    "$type": _type,
    "$size": _size,
    "$all": _all,
    "$elemMatch": _elem_match,
    "$mod": _mod,
}

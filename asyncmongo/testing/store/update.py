"""Update documents: operators, replacements and upsert seeding, with the server's errors.

``apply_update`` returns a new document; the original is never changed (transactions and
retries rely on it). Modifications are applied in lexicographic path order (MongoDB 5.0+, so
new fields appear sorted), conflicting paths fail with code 40, changing ``_id`` with code 66,
type errors with code 14, paths through scalars with code 28. Positional ``$``, ``$[]`` and
``$[<identifier>]`` with ``arrayFilters`` are supported.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson.types import Regex, Timestamp
from asyncmongo.testing.store.compare import (
    bson_type_code,
    compare,
    hash_key,
    integral,
    is_number,
    number_value,
    type_name,
    values_equal,
)
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.expressions import from_number
from asyncmongo.testing.store.matcher import (
    compile_condition,
    compile_element_test,
    compile_filter,
    matches,
)
from asyncmongo.testing.store.paths import MISSING, get_path, split_path
from asyncmongo.testing.store.render import render
from asyncmongo.testing.store.values import copy_document, deep_copy, same_bson

Document = dict[str, Any]


@dataclass(frozen=True, slots=True)
class UpdateContext:
    """What an update needs besides the document: the query (for ``$``), array filters,
    whether this is an upsert's insert, and the clock for ``$currentDate``."""

    query: Mapping[str, Any] | None = None
    array_filters: tuple[Mapping[str, Any], ...] = ()
    is_insert: bool = False
    now: datetime.datetime | None = None
    timestamp: Timestamp | None = None


def is_replacement(update: Any) -> bool:
    """True for a replacement document (no ``$`` operators at the top)."""
    return isinstance(update, Mapping) and not (update and next(iter(update)).startswith("$"))


def strict_key(value: Any) -> Any:
    """Equality including BSON types and field order (what counts as "modified")."""
    if isinstance(value, Mapping):
        return (3, tuple((k, strict_key(v)) for k, v in value.items()))
    if isinstance(value, list):
        return (4, tuple(strict_key(v) for v in value))
    return (bson_type_code(value), hash_key(value))


def apply_update(document: Mapping[str, Any], update: Any, context: UpdateContext) -> Document:
    """The document after ``update`` (operators or replacement)."""
    if is_replacement(update):
        return apply_replacement(document, update, context)
    return _apply_operators(document, update, context)


def apply_replacement(document: Mapping[str, Any], replacement: Mapping[str, Any],
                      context: UpdateContext) -> Document:
    validate_replacement(replacement)
    new = copy_document(replacement)
    if "_id" in document:
        if "_id" in new and not context.is_insert:
            if not same_bson(new["_id"], document["_id"]):
                raise StoreError(66, "After applying the update, the (immutable) field '_id' "
                                     f"was found to have been altered to _id: "
                                     f"{render(new['_id'])}")
        new = {"_id": deep_copy(document["_id"]), **{k: v for k, v in new.items()
                                                          if k != "_id"}}
    return new


def validate_replacement(replacement: Mapping[str, Any]) -> None:
    for key in replacement:
        if key.startswith("$"):
            raise StoreError(52, f"The dollar ($) prefixed field '{key}' in '{key}' is not "
                                 "allowed in the context of an update's replacement document. "
                                 "Consider using an aggregation pipeline with $replaceWith.")


@dataclass(frozen=True, slots=True)
class _Modification:
    operator: str
    path: str
    argument: Any


def parse_operators(update: Mapping[str, Any]) -> list[_Modification]:
    """Validate an operator update and list its modifications in application order."""
    modifications: list[_Modification] = []
    for operator, fields in update.items():
        if operator not in _OPERATORS:
            if not operator.startswith("$"):
                raise StoreError(9, "Unknown modifier: " + operator + ". Expected a valid update "
                                 "modifier or pipeline-style update specified as an array")
            raise StoreError(9, f"Unknown modifier: {operator}. Expected a valid update modifier "
                                "or pipeline-style update specified as an array")
        if not isinstance(fields, Mapping):
            raise StoreError(9, f"Modifiers operate on fields but we found type "
                                f"{type_name(fields)} instead. For example: {{$mod: {{<field>: "
                                f"...}}}} not {{{operator}: {render(fields)}}}")
        for path, argument in fields.items():
            _check_path(path)
            if operator == "$rename":
                _check_rename(path, argument)
            modifications.append(_Modification(operator, path, argument))
    _check_conflicts(modifications)
    return sorted(modifications, key=lambda m: split_path(m.path))


def _check_path(path: str) -> None:
    if not path or "" in split_path(path):
        raise StoreError(56, "An empty update path is not valid.")


def _check_conflicts(modifications: list[_Modification]) -> None:
    seen: list[list[str]] = []
    for m in modifications:
        paths = [m.path] + ([m.argument] if m.operator == "$rename"
                            and isinstance(m.argument, str) else [])
        for path in paths:
            parts = split_path(path)
            for other in seen:
                shorter = min(len(parts), len(other))
                if parts[:shorter] == other[:shorter]:
                    raise StoreError(40, f"Updating the path '{path}' would create a conflict "
                                         f"at '{'.'.join(parts[:shorter])}'")
            seen.append(parts)


def _apply_operators(document: Mapping[str, Any], update: Mapping[str, Any],
                     context: UpdateContext) -> Document:
    modifications = parse_operators(update)
    filters = _compile_array_filters(context.array_filters, modifications)
    new = copy_document(document)
    for m in modifications:
        if m.operator == "$setOnInsert" and not context.is_insert:
            continue
        for parts in _expand(new, split_path(m.path), m.path, filters, context):
            _OPERATORS[m.operator](new, parts, m.argument, context)
    if "_id" in document and not context.is_insert:
        if "_id" not in new or not same_bson(new["_id"], document["_id"]):
            raise StoreError(66, "Performing an update on the path '_id' would modify the "
                                 "immutable field '_id'")
    return new


# --- positional paths ------------------------------------------------------------------------


def _compile_array_filters(array_filters: tuple[Mapping[str, Any], ...],
                           modifications: list[_Modification]) -> dict[str, Any]:
    filters: dict[str, Any] = {}
    for array_filter in array_filters:
        if not isinstance(array_filter, Mapping) or not array_filter:
            raise StoreError(9, "Cannot use an expression without a top-level field name in "
                                "arrayFilters")
        identifier = split_path(next(iter(array_filter)))[0]
        if identifier in filters:
            raise StoreError(9, f"Found multiple array filters with the same top-level field "
                                f"name {identifier}")
        filters[identifier] = compile_filter(array_filter)
    used = {p[2:-1] for m in modifications for p in split_path(m.path)
            if p.startswith("$[") and p != "$[]"}
    for identifier in filters:
        if identifier not in used:
            raise StoreError(9, f"The array filter for identifier '{identifier}' was not used "
                                "in the update")
    return filters


def _expand(document: Document, parts: list[str], path: str, filters: dict[str, Any],
            context: UpdateContext) -> list[list[str]]:
    if not any(p.startswith("$") for p in parts):
        return [parts]
    for i, part in enumerate(parts):
        if part == "$":
            index = positional_index(context.query, document, parts[:i])
            return _expand(document, [*parts[:i], str(index), *parts[i + 1:]], path, filters,
                           context)
        if part.startswith("$["):
            return _expand_all(document, parts, i, path, filters, context)
    return [parts]


def _expand_all(document: Document, parts: list[str], i: int, path: str,
                filters: dict[str, Any], context: UpdateContext) -> list[list[str]]:
    prefix = parts[:i]
    array = get_path(document, ".".join(prefix))
    if array is MISSING and context.is_insert:
        return []
    if not isinstance(array, list):
        raise bad_value(f"The path '{'.'.join(prefix)}' must exist in the document in order "
                        "to apply array updates.")
    identifier = parts[i][2:-1]
    if identifier and identifier not in filters:
        raise bad_value(f"No array filter found for identifier '{identifier}' in path '{path}'")
    result: list[list[str]] = []
    for index, element in enumerate(array):
        if identifier and not filters[identifier]({identifier: element}):
            continue
        concrete = [*prefix, str(index), *parts[i + 1:]]
        result.extend(_expand(document, concrete, path, filters, context))
    return result


def positional_index(query: Mapping[str, Any] | None, document: Mapping[str, Any],
                     prefix: list[str]) -> int:
    """The index of the first element of the array at ``prefix`` that the query matched."""
    error = bad_value("The positional operator did not find the match needed from the query.")
    array = get_path(document, ".".join(prefix))
    clauses = _clauses_under(query or {}, prefix)
    if not isinstance(array, list) or not clauses:
        raise error
    for index, element in enumerate(array):
        if all(test(element) for test in clauses):
            return index
    raise error


def _clauses_under(query: Mapping[str, Any], prefix: list[str]) -> list[Callable[[Any], bool]]:
    tests: list[Callable[[Any], bool]] = []
    for key, condition in query.items():
        if key == "$and" and isinstance(condition, list):
            for clause in condition:
                tests.extend(_clauses_under(clause, prefix))
            continue
        parts = split_path(key)
        if parts[:len(prefix)] != prefix:
            continue
        rest = ".".join(parts[len(prefix):])
        tests.append(_element_test(rest, condition))
    return tests


def _element_test(rest: str, condition: Any) -> Callable[[Any], bool]:
    if rest:
        return lambda e: isinstance(e, Mapping) and matches({rest: condition}, e)
    if isinstance(condition, Mapping) and list(condition) == ["$elemMatch"] and isinstance(
            condition["$elemMatch"], Mapping):
        return compile_element_test(condition["$elemMatch"])
    test = compile_condition(condition)
    return lambda e: test([e])


# --- walking to a field ----------------------------------------------------------------------


def _parent(document: Document, parts: list[str], create: bool) -> Any:
    """The container holding the last component (created on the way if ``create``)."""
    container: Any = document
    for i, key in enumerate(parts[:-1]):
        child = _child(container, key)
        if child is MISSING:
            if not create:
                return MISSING
            if not isinstance(container, dict | list) or (
                    isinstance(container, list) and not key.isdigit()):
                raise _not_viable(key, parts[:i], document)
            child = {}
            _assign(container, key, child)
        elif not isinstance(child, dict | list):
            if not create:
                return MISSING
            raise _not_viable(parts[i + 1], parts[:i + 1], document)
        container = child
    if isinstance(container, list) and not parts[-1].isdigit():
        if not create:
            return MISSING
        raise _not_viable(parts[-1], parts[:-1], document)
    return container


def _not_viable(key: str, prefix: list[str], document: Document) -> StoreError:
    element = get_path(document, ".".join(prefix)) if prefix else document
    name = prefix[-1] if prefix else ""
    shown = {name: element} if prefix else element
    return StoreError(28, f"Cannot create field '{key}' in element {render(shown)}")


def _child(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key, MISSING)
    if isinstance(container, list) and key.isdigit() and int(key) < len(container):
        return container[int(key)]
    return MISSING


def _assign(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    index = int(key)
    while len(container) <= index:
        container.append(None)
    container[index] = value


def _current(document: Document, parts: list[str]) -> tuple[Any, Any]:
    parent = _parent(document, parts, create=False)
    if parent is MISSING:
        return MISSING, MISSING
    return parent, _child(parent, parts[-1])


# --- the operators ---------------------------------------------------------------------------


def _set(document: Document, parts: list[str], argument: Any, context: UpdateContext) -> None:
    _assign(_parent(document, parts, create=True), parts[-1], deep_copy(argument))


def _unset(document: Document, parts: list[str], argument: Any, context: UpdateContext) -> None:
    parent, value = _current(document, parts)
    if value is MISSING:
        return
    if isinstance(parent, list):
        parent[int(parts[-1])] = None
    else:
        del parent[parts[-1]]


def _describe_id(document: Document) -> str:
    return render({"_id": document["_id"]}) if "_id" in document else "{}"


def _arithmetic(name: str, verb: str) -> Callable[[Document, list[str], Any, UpdateContext],
                                                 None]:
    def run(document: Document, parts: list[str], argument: Any, context: UpdateContext) -> None:
        path = ".".join(parts)
        if not is_number(argument):
            raise StoreError(14, f"Cannot {verb} with non-numeric argument: "
                                 f"{render({path: argument})}")
        parent = _parent(document, parts, create=True)
        current = _child(parent, parts[-1])
        if current is MISSING:
            result = argument if name == "$inc" else from_number(0, like=[argument])
        elif not is_number(current):
            raise StoreError(14, f"Cannot apply {name} to a value of non-numeric type. "
                                 f"{_describe_id(document)} has the field '{parts[-1]}' of "
                                 f"non-numeric type {type_name(current)}")
        else:
            result = _combine(name, current, argument)
        _assign(parent, parts[-1], result)

    return run


def _combine(name: str, current: Any, argument: Any) -> Any:
    from decimal import Decimal

    a, b = number_value(current), number_value(argument)
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        value: Any = Decimal(a) + Decimal(b) if name == "$inc" else Decimal(a) * Decimal(b)
    else:
        value = a + b if name == "$inc" else a * b
    return from_number(value, like=[current, argument])


def _min_max(name: str) -> Callable[[Document, list[str], Any, UpdateContext], None]:
    def run(document: Document, parts: list[str], argument: Any, context: UpdateContext) -> None:
        parent = _parent(document, parts, create=True)
        current = _child(parent, parts[-1])
        order = compare(argument, current) if current is not MISSING else 0
        if current is MISSING or (order < 0 if name == "$min" else order > 0):
            _assign(parent, parts[-1], deep_copy(argument))

    return run


def _check_rename(path: str, argument: Any) -> None:
    if not isinstance(argument, str):
        raise bad_value(f"The 'to' field for $rename must be a string: {path}: "
                        f"{render(argument)}")
    if argument == path:
        raise bad_value(f"The source and target field for $rename must differ: {path}: "
                        f"{render(argument)}")
    _check_path(argument)


def _rename(document: Document, parts: list[str], argument: Any, context: UpdateContext) -> None:
    path = ".".join(parts)
    parent, value = _current(document, parts)
    if value is MISSING:
        return
    if isinstance(parent, list):
        raise bad_value(f"The source field cannot be an array element, '{path}' in doc with "
                        f"{render(document)} has an array field called '{parts[-2]}'")
    target = split_path(argument)
    del parent[parts[-1]]
    _assign(_parent(document, target, create=True), target[-1], value)


def _array_at(document: Document, parts: list[str], operator: str) -> tuple[Any, Any]:
    parent = _parent(document, parts, create=True)
    current = _child(parent, parts[-1])
    if current is not MISSING and not isinstance(current, list):
        raise bad_value(f"The field '{'.'.join(parts)}' must be an array but is of type "
                        f"{type_name(current)} in document {_describe_id(document)}")
    return parent, current


def _push(document: Document, parts: list[str], argument: Any, context: UpdateContext) -> None:
    parent, current = _array_at(document, parts, "$push")
    array = list(current) if current is not MISSING else []
    if isinstance(argument, Mapping) and "$each" in argument:
        _push_each(array, argument)
    else:
        array.append(deep_copy(argument))
    _assign(parent, parts[-1], array)


def _push_each(array: list[Any], spec: Mapping[str, Any]) -> None:
    for key in spec:
        if key not in ("$each", "$slice", "$sort", "$position"):
            raise bad_value(f"Unrecognized clause in $push: {key}")
    values = spec["$each"]
    if not isinstance(values, list):
        raise bad_value(f"The argument to $each in $push must be an array but it was of type: "
                        f"{type_name(values)}")
    position = _int_clause(spec, "$position", len(array))
    if position < 0:
        position = max(0, len(array) + position)
    array[min(position, len(array)):min(position, len(array))] = deep_copy(values)
    if "$sort" in spec:
        _sort_array(array, spec["$sort"])
    if "$slice" in spec:
        size = _int_clause(spec, "$slice", 0)
        array[:] = array[:size] if size >= 0 else array[max(0, len(array) + size):]


def _int_clause(spec: Mapping[str, Any], name: str, default: int) -> int:
    if name not in spec:
        return default
    value = spec[name]
    whole = integral(value)
    if whole is None:
        raise bad_value(f"The value for {name} must be an integer value but was given type: "
                        f"{type_name(value)}")
    return whole


def _sort_array(array: list[Any], spec: Any) -> None:
    import functools

    if isinstance(spec, Mapping):
        if not spec:
            raise bad_value("The $sort pattern is empty when it should be a set of fields.")
        from asyncmongo.testing.store.sorting import compile_sort

        array.sort(key=functools.cmp_to_key(compile_sort(spec, documents_only=False)))
        return
    if not is_number(spec) or number_value(spec) not in (1, -1):
        raise bad_value("The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1}"
                        " to sort embedded fields")
    sign = int(number_value(spec))
    array.sort(key=functools.cmp_to_key(lambda a, b: sign * compare(a, b)))


def _add_to_set(document: Document, parts: list[str], argument: Any,
                context: UpdateContext) -> None:
    parent, current = _array_at(document, parts, "$addToSet")
    array = list(current) if current is not MISSING else []
    values = [argument]
    if isinstance(argument, Mapping) and "$each" in argument:
        values = argument["$each"]
        if not isinstance(values, list):
            raise bad_value(f"The argument to $each in $addToSet must be an array but it was of "
                            f"type {type_name(values)}")
    for value in values:
        if not any(values_equal(value, e) for e in array):
            array.append(deep_copy(value))
    _assign(parent, parts[-1], array)


def _pop(document: Document, parts: list[str], argument: Any, context: UpdateContext) -> None:
    if not is_number(argument) or number_value(argument) not in (1, -1):
        raise bad_value(f"$pop expects 1 or -1, found: {render(argument)}")
    parent, current = _current(document, parts)
    if current is MISSING:
        return
    if not isinstance(current, list):
        raise StoreError(14, f"Path '{'.'.join(parts)}' contains an element of non-array type "
                             f"'{type_name(current)}'")
    if current:
        _assign(parent, parts[-1], current[1:] if number_value(argument) == -1 else current[:-1])


def _pull(document: Document, parts: list[str], argument: Any, context: UpdateContext) -> None:
    test = _pull_test(argument)
    _remove_where(document, parts, test)


def _pull_test(argument: Any) -> Callable[[Any], bool]:
    if isinstance(argument, Mapping):
        return compile_element_test(argument)
    if isinstance(argument, Regex):
        condition = compile_condition(argument)
        return lambda e: condition([e])
    return lambda e: values_equal(e, argument)


def _pull_all(document: Document, parts: list[str], argument: Any,
              context: UpdateContext) -> None:
    if not isinstance(argument, list):
        raise bad_value(f"$pullAll requires an array argument but was given a "
                        f"{type_name(argument)}")
    _remove_where(document, parts, lambda e: any(values_equal(e, v) for v in argument))


def _remove_where(document: Document, parts: list[str], test: Callable[[Any], bool]) -> None:
    parent, current = _current(document, parts)
    if current is MISSING:
        return
    if not isinstance(current, list):
        raise bad_value("Cannot apply $pull to a non-array value")
    _assign(parent, parts[-1], [e for e in current if not test(e)])


def _current_date(document: Document, parts: list[str], argument: Any,
                  context: UpdateContext) -> None:
    now = context.now or datetime.datetime.now(datetime.UTC)
    value: Any = now
    if isinstance(argument, Mapping):
        kind = argument.get("$type")
        if list(argument) != ["$type"] or kind not in ("date", "timestamp"):
            raise bad_value("The '$type' string field is required to be 'date' or 'timestamp': "
                            "{$currentDate: {field : {$type: 'date'}}}")
        if kind == "timestamp":
            value = context.timestamp or Timestamp(int(now.timestamp()), 1)
    elif not isinstance(argument, bool):
        raise bad_value(f"{'.'.join(parts)} is not valid type for $currentDate. Please use a "
                        "boolean ('true') or a $type expression ({$type: 'timestamp/date'}).")
    _set(document, parts, value, context)


def _bit(document: Document, parts: list[str], argument: Any, context: UpdateContext) -> None:
    if not isinstance(argument, Mapping) or not argument:
        raise bad_value(f"The $bit modifier is not compatible with a {type_name(argument)}. You "
                        f"must pass in an embedded document: {{$bit: {{field: {{and/or/xor: "
                        f"#}}}}")
    parent = _parent(document, parts, create=True)
    current = _child(parent, parts[-1])
    if current is MISSING:
        current = 0
    if not isinstance(current, int) or isinstance(current, bool):
        raise bad_value("Cannot apply $bit to a value of non-integral type."
                        f"{_describe_id(document)} has the field {parts[-1]} of non-integer "
                        f"type {type_name(current)}")
    result = int(current)
    for operation, operand in argument.items():
        if operation not in ("and", "or", "xor"):
            raise bad_value(f"The $bit modifier only supports 'and', 'or', and 'xor', not "
                            f"'{operation}' which is an unknown operator: {{{operation}: "
                            f"{render(operand)}}}")
        if not isinstance(operand, int) or isinstance(operand, bool):
            raise bad_value(f"The $bit modifier field must be an Integer(32/64 bit); a "
                            f"'{type_name(operand)}' is not supported here: {{{operation}: "
                            f"{render(operand)}}}")
        result = {"and": result & operand, "or": result | operand,
                  "xor": result ^ operand}[operation]
    _assign(parent, parts[-1], from_number(result, like=[current, *argument.values()]))


_OPERATORS: dict[str, Callable[[Document, list[str], Any, UpdateContext], None]] = {
    "$bit": _bit,
    "$set": _set,
    "$setOnInsert": _set,
    "$unset": _unset,
    "$inc": _arithmetic("$inc", "increment"),
    "$mul": _arithmetic("$mul", "multiply"),
    "$min": _min_max("$min"),
    "$max": _min_max("$max"),
    "$rename": _rename,
    "$push": _push,
    "$addToSet": _add_to_set,
    "$pop": _pop,
    "$pull": _pull,
    "$pullAll": _pull_all,
    "$currentDate": _current_date,
}


def upsert_seed(query: Mapping[str, Any] | None) -> Document:
    """The document an upsert starts from: the equality conditions of its filter."""
    seed: Document = {}
    for key, condition in (query or {}).items():
        if key == "$and" and isinstance(condition, list):
            for clause in condition:
                if isinstance(clause, Mapping):
                    for k, v in upsert_seed(clause).items():
                        seed[k] = v
            continue
        if key.startswith("$"):
            continue
        value = _equality_value(condition)
        if value is not MISSING:
            _set_seed(seed, key, value)
    return seed


def _equality_value(condition: Any) -> Any:
    if isinstance(condition, Mapping) and condition and next(iter(condition)).startswith("$"):
        if list(condition) == ["$eq"]:
            return condition["$eq"]
        return MISSING
    if isinstance(condition, Regex):
        return MISSING
    return condition


def _set_seed(seed: Document, path: str, value: Any) -> None:
    parts = split_path(path)
    try:
        _assign(_parent(seed, parts, create=True), parts[-1], deep_copy(value))
    except StoreError as exc:
        raise StoreError(54, f"cannot infer query fields to set, path '{path}' is matched "
                             "twice") from exc

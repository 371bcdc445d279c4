"""Projections for find and ``$project``: inclusion, exclusion, ``_id``, dotted paths,
computed fields (aggregation expressions), ``$slice``, ``$elemMatch`` and positional ``a.$``.

Inclusion keeps the document's own field order, with computed fields after; a projection that
mixes inclusion and exclusion (other than ``_id``) fails with 31253/31254 as on the server.

A dotted path applies to each element of an array it meets. An array nested directly in such
an array is projected too by ``$project`` but left alone by find (mongod's projection
policies: find does not recurse into nested arrays, so inclusion drops them and exclusion keeps
them whole).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.testing.store import expressions
from asyncmongo.testing.store.compare import integral, is_number, number_value
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.matcher import compile_element_test
from asyncmongo.testing.store.paths import MISSING, split_path
from asyncmongo.testing.store.values import deep_copy

Projector = Callable[[Mapping[str, Any]], dict[str, Any]]


@dataclass(slots=True)
class _Node:
    """One level of a projection: included/excluded fields, subtrees, computed fields."""

    flags: dict[str, bool] = field(default_factory=dict)
    children: dict[str, _Node] = field(default_factory=dict)
    computed: dict[str, Any] = field(default_factory=dict)
    slices: dict[str, Any] = field(default_factory=dict)
    elem_matches: dict[str, Callable[[Any], bool]] = field(default_factory=dict)
    positional: set[str] = field(default_factory=set)


def _flag(value: Any) -> bool | None:
    """True/False for an inclusion/exclusion value, None for an expression."""
    if isinstance(value, bool):
        return value
    if is_number(value):
        return number_value(value) != 0
    return None


def compile_projection(spec: Mapping[str, Any] | None, *, query: Mapping[str, Any] | None = None,
                       aggregate: bool = False,
                       variables: Mapping[str, Any] | None = None) -> Projector:
    """A function that projects one document by ``spec``."""
    if not spec:
        if aggregate:
            raise StoreError(51272, "$project specification must have at least one field")
        return lambda doc: dict(doc)
    if not isinstance(spec, Mapping):
        raise bad_value("projection must be an object")
    root = _Node()
    inclusion: bool | None = None
    id_flag = True
    for path, value in spec.items():
        kind = _add(root, path, value, aggregate)
        if path == "_id" and kind in ("include", "exclude"):
            id_flag = kind == "include"
            continue
        if kind in ("include", "exclude"):
            wanted = kind == "include"
            if inclusion is None:
                inclusion = wanted
            elif inclusion != wanted:
                if wanted:
                    raise StoreError(31253, f"Cannot do inclusion on field {path} in exclusion "
                                            "projection")
                raise StoreError(31254, f"Cannot do exclusion on field {path} in inclusion "
                                        "projection")
        elif kind == "computed":
            if inclusion is False:
                raise StoreError(31254, "Cannot use expression other than $meta in exclusion "
                                        "projection")
            inclusion = True
        elif kind == "elemMatch" and inclusion is None:
            inclusion = True
    if inclusion is None:
        inclusion = id_flag and "_id" in spec and not root.slices
    root.flags["_id"] = id_flag
    return _projector(root, inclusion, query, variables, aggregate)


def _add(root: _Node, path: str, value: Any, aggregate: bool) -> str:
    parts = split_path(path)
    if "" in parts:
        raise StoreError(40352, "FieldPath cannot be constructed with empty string")
    if parts[0].startswith("$"):
        raise StoreError(16410, "FieldPath field names may not start with '$'. Consider using "
                                "$getField or $setField.")
    if parts[-1] == "$":
        parts = parts[:-1]
        node = _descend(root, parts[:-1])
        node.positional.add(parts[-1])
        node.flags[parts[-1]] = True
        return "include"
    node = _descend(root, parts[:-1])
    name = parts[-1]
    flag = _flag(value)
    if flag is not None:
        node.flags[name] = flag
        return "include" if flag else "exclude"
    if isinstance(value, Mapping) and list(value) == ["$slice"] and not aggregate:
        node.slices[name] = _parse_slice(value["$slice"])
        return "slice"
    if isinstance(value, Mapping) and list(value) == ["$elemMatch"] and not aggregate:
        condition = value["$elemMatch"]
        if not isinstance(condition, Mapping):
            raise bad_value("elemMatch: Invalid argument, object required.")
        node.elem_matches[name] = compile_element_test(condition)
        node.flags[name] = True
        return "elemMatch"
    if isinstance(value, Mapping) and value and not next(iter(value)).startswith("$"):
        for key, sub in value.items():
            kind = _add(root, f"{path}.{key}", sub, aggregate)
        return kind
    node.computed[name] = expressions.parse(value)
    if isinstance(value, Mapping) and list(value) == ["$meta"]:
        return "meta"  # neither an inclusion nor an exclusion, as in mongod
    return "computed"


def _descend(root: _Node, parts: list[str]) -> _Node:
    node = root
    for part in parts:
        node = node.children.setdefault(part, _Node())
    return node


def _parse_slice(argument: Any) -> tuple[int, int | None]:
    if integral(argument) is not None:
        return integral(argument) or 0, None
    if (isinstance(argument, list) and len(argument) == 2
            and all(integral(a) is not None for a in argument)):
        skip, limit = (integral(a) or 0 for a in argument)
        if limit <= 0:
            raise bad_value(f"$slice limit must be positive, got {limit}")
        return skip, limit
    raise bad_value("$slice only supports numbers and [skip, limit] arrays")


@dataclass(frozen=True, slots=True)
class _Scope:
    """What computed fields and positional projections see: the whole document, the query
    and the ``let`` variables."""

    root: Mapping[str, Any]
    query: Mapping[str, Any] | None
    variables: Mapping[str, Any] | None
    nested_arrays: bool


def _projector(root: _Node, inclusion: bool, query: Mapping[str, Any] | None,
               variables: Mapping[str, Any] | None, nested_arrays: bool) -> Projector:
    def project(document: Mapping[str, Any]) -> dict[str, Any]:
        if inclusion:
            scope = _Scope(document, query, variables, nested_arrays)
            return _include(document, root, scope, top=True)
        result = _exclude(document, root, nested_arrays)
        for key, expression in root.computed.items():
            result[key] = expressions.evaluate(expression, document, variables)
        return result

    return project


def _slice(value: Any, spec: tuple[int, int | None]) -> Any:
    if not isinstance(value, list):
        return value
    skip, limit = spec
    if limit is None:
        return value[:skip] if skip >= 0 else value[max(0, len(value) + skip):]
    start = skip if skip >= 0 else max(0, len(value) + skip)
    return value[start:start + limit]


def _include(document: Mapping[str, Any], node: _Node, scope: _Scope,
             top: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in document.items():
        if node.flags.get(key) and key not in node.children:
            included = _special(key, value, node, scope)
        elif key in node.children:
            included = _include_value(value, node.children[key], scope)
        elif key in node.slices:
            included = _slice(deep_copy(value), node.slices[key])
        else:
            continue
        if included is not MISSING:
            result[key] = included
    if top and "_id" in document and node.flags.get("_id", True) and "_id" not in result:
        result = {"_id": document["_id"], **result}
    for key, expression in node.computed.items():
        value = expressions.evaluate(expression, scope.root, scope.variables)
        if value is not MISSING:
            result[key] = value
    return result


def _special(key: str, value: Any, node: _Node, scope: _Scope) -> Any:
    if key in node.elem_matches:
        if not isinstance(value, list):
            return MISSING
        for element in value:
            if node.elem_matches[key](element):
                return [deep_copy(element)]
        return MISSING
    if key in node.positional and isinstance(value, list):
        from asyncmongo.testing.store.update import positional_index

        try:
            index = positional_index(scope.query, scope.root, [key])
        except StoreError as exc:
            raise bad_value("Executor error during find command :: caused by :: positional "
                            "operator '.$' couldn't find a matching element in the array") from exc
        return [deep_copy(value[index])]
    if key in node.slices:
        return _slice(deep_copy(value), node.slices[key])
    return deep_copy(value)


def _include_value(value: Any, node: _Node, scope: _Scope) -> Any:
    if isinstance(value, Mapping):
        return _include(value, node, scope)
    if isinstance(value, list):
        items = [_include_value(e, node, scope) for e in value
                 if isinstance(e, Mapping) or (isinstance(e, list) and scope.nested_arrays)]
        return [i for i in items if i is not MISSING]
    if node.computed:
        return _include({}, node, scope)
    return MISSING


def _exclude(document: Mapping[str, Any], node: _Node, nested_arrays: bool) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in document.items():
        if node.flags.get(key) is False:
            continue
        if key in node.children:
            result[key] = _exclude_value(value, node.children[key], nested_arrays)
        elif key in node.slices:
            result[key] = _slice(deep_copy(value), node.slices[key])
        else:
            result[key] = deep_copy(value)
    return result


def _exclude_value(value: Any, node: _Node, nested_arrays: bool) -> Any:
    if isinstance(value, Mapping):
        return _exclude(value, node, nested_arrays)
    if isinstance(value, list):
        return [deep_copy(e) if isinstance(e, list) and not nested_arrays
                else _exclude_value(e, node, nested_arrays) for e in value]
    return deep_copy(value)

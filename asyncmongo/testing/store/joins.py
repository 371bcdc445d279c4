"""The stages that read a second collection besides ``$lookup``: ``$unionWith`` and
``$graphLookup``, as mongod documents them.

``$unionWith`` appends the documents of another collection (or view), run through its own
pipeline, after the stage's input. ``$graphLookup`` searches ``from`` breadth-first: documents
whose ``connectToField`` equals a value of ``startWith``, then those matching the
``connectFromField`` values found so far, each document once, up to ``maxDepth``, optionally
recording its depth (an int64) and filtered by ``restrictSearchWithMatch``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from asyncmongo.bson.types import Int64
from asyncmongo.testing.store import expressions
from asyncmongo.testing.store.compare import hash_key, integral
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.matcher import compile_filter
from asyncmongo.testing.store.paths import MISSING, collect, split_path
from asyncmongo.testing.store.values import deep_copy

Document = dict[str, Any]
Stage = Callable[[list[Document]], list[Document]]
#: Runs a sub-pipeline over documents (the pipeline compiler, bound to its context).
SubPipeline = Callable[[list[Document]], list[Document]]
#: Reads a collection (or view) of the pipeline's database by name.
Reader = Callable[[str], list[Document]]


def union_with(argument: Any, read: Reader,
               compile_sub: Callable[[Any], SubPipeline]) -> Stage:
    spec = {"coll": argument} if isinstance(argument, str) else argument
    if not isinstance(spec, Mapping):
        raise StoreError(9, "the $unionWith stage specification must "
                                                     "be an object or string, but found "
                                                     f"{type(argument).__name__}")
    unknown = [k for k in spec if k not in ("coll", "pipeline")]
    if unknown:
        raise StoreError(40415, f"BSON field '$unionWith.{unknown[0]}' is an unknown field.")
    source, pipeline = spec.get("coll"), spec.get("pipeline", [])
    if source is None and "pipeline" not in spec:
        raise StoreError(9, "$unionWith stage without explicit "
                                                     "collection must have a pipeline with "
                                                     "$documents as first stage")
    if source is not None and not isinstance(source, str):
        raise StoreError(14, "BSON field '$unionWith.coll' is the wrong "
                                                   "type, expected type 'string'")
    sub = compile_sub(pipeline)

    def run(docs: list[Document]) -> list[Document]:
        return docs + sub(read(source) if isinstance(source, str) else [])

    return run


_GRAPH_FIELDS = frozenset({"from", "startWith", "connectFromField", "connectToField", "as",
                           "maxDepth", "depthField", "restrictSearchWithMatch"})


def graph_lookup(argument: Any, read: Reader) -> Stage:
    if not isinstance(argument, Mapping):
        raise StoreError(9, "the $graphLookup stage specification "
                                                     "must be an object")
    unknown = [k for k in argument if k not in _GRAPH_FIELDS]
    if unknown:
        raise StoreError(40105, f"Unknown argument to $graphLookup: {unknown[0]}")
    for field in ("from", "connectFromField", "connectToField", "as"):
        if not isinstance(argument.get(field), str):
            raise StoreError(40105, f"$graphLookup requires '{field}' to be a string")
    if "startWith" not in argument:
        raise StoreError(40105, "$graphLookup requires 'startWith'")
    max_depth = _max_depth(argument.get("maxDepth"))
    depth_field = argument.get("depthField")
    restrict = compile_filter(argument.get("restrictSearchWithMatch"))
    start = expressions.parse(argument["startWith"])
    source, as_field = argument["from"], argument["as"]
    from_parts = split_path(argument["connectFromField"])
    to_parts = split_path(argument["connectToField"])

    def run(docs: list[Document]) -> list[Document]:
        candidates = [d for d in read(source) if restrict(d)]
        output = []
        for doc in docs:
            found = _search(expressions.evaluate(start, doc), candidates, from_parts, to_parts,
                            max_depth)
            new = deep_copy(doc)
            new[as_field] = [
                {**deep_copy(d), depth_field: Int64(depth)} if isinstance(depth_field, str)
                else deep_copy(d) for d, depth in found]
            output.append(new)
        return output

    return run


def _max_depth(value: Any) -> int | None:
    if value is None:
        return None
    whole = integral(value)
    if whole is None or whole < 0:
        raise StoreError(40101, f"maxDepth requires a nonnegative argument, found: {value}")
    return whole


def _search(start: Any, candidates: list[Document], from_parts: list[str],
            to_parts: list[str], max_depth: int | None) -> list[tuple[Document, int]]:
    frontier = _keys(start)
    seen: set[Any] = set()
    found: list[tuple[Document, int]] = []
    depth = 0
    while frontier and (max_depth is None or depth <= max_depth):
        following: set[Any] = set()
        for doc in candidates:
            identity = hash_key(doc.get("_id"))
            if identity in seen or not frontier & _field_keys(doc, to_parts, True):
                continue
            seen.add(identity)
            found.append((doc, depth))
            following |= _field_keys(doc, from_parts, False)
        frontier, depth = following, depth + 1
    return found


def _keys(value: Any) -> set[Any]:
    values = value if isinstance(value, list) else [value]
    return {hash_key(None if v is MISSING else v) for v in values}


def _field_keys(doc: Document, parts: list[str], missing_is_null: bool) -> set[Any]:
    """The keys a document offers on ``parts``; a missing field matches null on the
    connectTo side (mongod queries it with $in) but connects to nothing on the from side."""
    keys: set[Any] = set()
    for value in collect(doc, parts):
        if value is MISSING:
            if missing_is_null:
                keys.add(hash_key(None))
        else:
            keys |= _keys(value)
    return keys

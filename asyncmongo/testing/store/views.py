"""Views: ``create`` with ``viewOn`` and ``pipeline``, read through their pipeline.

A view is a catalog entry with no documents of its own (a :class:`Collection` whose options
hold ``viewOn`` and ``pipeline``). Reads (find, aggregate, count, distinct) see the source's
documents (itself possibly a view) through the view's pipeline, as mongod resolves a view
into an aggregation; writes, index commands and tailable cursors on a view fail with 166
CommandNotSupportedOnView, mongod's answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.store.aggregate import (
    MAX_VIEW_DEPTH,
    PipelineContext,
    compile_pipeline,
    read_namespace,
)
from asyncmongo.testing.store.collection import Collection, Document
from asyncmongo.testing.store.database import Namespaces
from asyncmongo.testing.store.errors import StoreError

#: Commands mongod refuses on a view (the value: how its message starts).
REFUSED_ON_VIEW: dict[str, str] = {
    "insert": "Namespace {ns} is a view, not a collection",
    "update": "Namespace {ns} is a view, not a collection",
    "delete": "Namespace {ns} is a view, not a collection",
    "findAndModify": "Namespace {ns} is a view, not a collection",
    "findandmodify": "Namespace {ns} is a view, not a collection",
    "createIndexes": "Cannot create indexes on a view: {ns}",
    "listIndexes": "Namespace {ns} is a view, not a collection",
    "dropIndexes": "Cannot drop indexes on view {ns}",
    "deleteIndexes": "Cannot drop indexes on view {ns}",
}

#: How deep views may nest (mongod: ViewGraph::kMaxViewDepth).

#: ``create`` options that may come with ``viewOn`` (the rest is InvalidOptions).
_VIEW_OPTIONS = frozenset({"viewOn", "pipeline", "collation"})


def view_options(db_name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """A view's create options, validated as mongod does (``pipeline`` defaults to [])."""
    view_on = options.get("viewOn")
    if not isinstance(view_on, str):
        raise StoreError(14, "BSON field 'create.viewOn' is the wrong type, expected type "
                             "'string'")
    if not view_on:
        raise StoreError(73, f"Invalid namespace specified '{db_name}.'")
    pipeline = options.get("pipeline", [])
    if not isinstance(pipeline, list):
        raise StoreError(14, "BSON field 'create.pipeline' is the wrong type, expected type "
                             "'array'")
    extra = sorted(set(options) - _VIEW_OPTIONS)
    if extra:
        raise StoreError(72, f"option not supported on a view: {extra[0]}")
    for stage in pipeline:
        if isinstance(stage, Mapping) and ("$out" in stage or "$merge" in stage):
            raise StoreError(17390 if "$out" in stage else 6144,
                             f"{next(iter(stage))} cannot be used in a view definition")
    compile_pipeline(pipeline, PipelineContext(db_name))
    return {"viewOn": view_on, "pipeline": pipeline, **(
        {"collation": options["collation"]} if "collation" in options else {})}


def check_cycle(namespaces: Namespaces, db_name: str, name: str, view_on: str) -> None:
    """150 GraphContainsCycle if a view ``name`` on ``view_on`` would read itself; 149 past
    mongod's depth limit."""
    chain = [name, view_on]
    current = namespaces.get(db_name, view_on)
    while current is not None and current.is_view:
        following = current.options["viewOn"]
        chain.append(following)
        if following == name:
            shown = " => ".join(f"{db_name}.{n}" for n in chain)
            raise StoreError(150, f"View cycle detected: [{shown}]")
        if len(chain) > MAX_VIEW_DEPTH:
            raise StoreError(149, f"View depth too deep or view cycle detected; maximum "
                                  f"depth is {MAX_VIEW_DEPTH}")
        current = namespaces.get(db_name, following)
    if view_on == name:
        raise StoreError(150, f"View cycle detected: [{db_name}.{name} => {db_name}.{name}]")


def refuse_on_view(command_name: str, collection: Collection | None) -> None:
    """166 CommandNotSupportedOnView when ``command_name`` targets a view."""
    message = REFUSED_ON_VIEW.get(command_name)
    if message is not None and collection is not None and collection.is_view:
        raise StoreError(166, message.format(ns=collection.namespace))


def documents_of(namespaces: Namespaces, collection: Collection | None) -> list[Document]:
    """What a read of ``collection`` sees: its documents, or a view's pipeline applied to
    its source's (recursively; a missing source reads as empty)."""
    return read_namespace(namespaces, collection)


def view_info(collection: Collection) -> dict[str, Any]:
    """A view's listCollections entry (mongod: type "view", read-only, no uuid or idIndex)."""
    return {"name": collection.name, "type": "view", "options": dict(collection.options),
            "info": {"readOnly": True}}

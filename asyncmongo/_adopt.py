"""PyMongo's write and index models taken as asyncmongo's own, in every client.

``bulk_write`` takes PyMongo's InsertOne, UpdateOne, ... (and subclasses of them, which
libraries define), ``create_indexes`` PyMongo's IndexModel: each is rebuilt as asyncmongo's
model from the attributes PyMongo's keep, recognised by module as in
``asyncmongo.core.adopt`` (without importing PyMongo). asyncmongo's own models pass through
after one type test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asyncmongo.core.adopt import is_pymongo_object
from asyncmongo.operations import (
    DeleteMany,
    DeleteOne,
    IndexModel,
    InsertOne,
    ReplaceOne,
    SearchIndexModel,
    UpdateMany,
    UpdateOne,
    WriteModel,
)

__all__ = ["adopt_index_model", "adopt_search_index_model", "adopt_write_model"]


def adopt_index_model(value: Any) -> Any:
    """PyMongo's IndexModel as asyncmongo's: the same createIndexes document."""
    if type(value) is IndexModel or not is_pymongo_object(value, "pymongo.operations"):
        return value
    if type(value).__name__ == "SearchIndexModel":
        return value
    document = dict(value.document)
    return IndexModel(document.pop("key"), **document)


def adopt_search_index_model(value: Any) -> Any:
    """PyMongo's SearchIndexModel as asyncmongo's."""
    if type(value) is SearchIndexModel or not is_pymongo_object(value, "pymongo.operations"):
        return value
    document = dict(value.document)
    return SearchIndexModel(document.pop("definition"), **document)


#: PyMongo's write model -> (asyncmongo's class, the attributes holding its positional
#: arguments, its keyword arguments read from the attributes named ``_<keyword>``).
_WRITE_MODELS: dict[str, tuple[Callable[..., WriteModel], tuple[str, ...], tuple[str, ...]]] = {
    "InsertOne": (InsertOne, ("_doc",), ()),
    "DeleteOne": (DeleteOne, ("_filter",), ("collation", "hint")),
    "DeleteMany": (DeleteMany, ("_filter",), ("collation", "hint")),
    "ReplaceOne": (ReplaceOne, ("_filter", "_doc"), ("upsert", "collation", "hint", "sort")),
    "UpdateOne": (
        UpdateOne,
        ("_filter", "_doc"),
        ("upsert", "collation", "array_filters", "hint", "sort"),
    ),
    "UpdateMany": (
        UpdateMany,
        ("_filter", "_doc"),
        ("upsert", "collation", "array_filters", "hint"),
    ),
}


def adopt_write_model(value: Any) -> Any:
    """PyMongo's write model (InsertOne, UpdateOne, ...; or a subclass) as asyncmongo's,
    read from the attributes PyMongo's models keep."""
    if isinstance(value, WriteModel) or not is_pymongo_object(value, "pymongo.operations"):
        return value
    kind = next(
        (c.__name__ for c in type(value).__mro__ if c.__module__ == "pymongo.operations"), ""
    )
    entry = _WRITE_MODELS.get(kind)
    if entry is None:
        return value
    model, positional, keywords = entry
    arguments = [getattr(value, name) for name in positional]
    options = {name: getattr(value, f"_{name}", None) for name in keywords}
    return model(*arguments, namespace=getattr(value, "_namespace", None), **options)

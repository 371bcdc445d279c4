"""PyMongo's write and index models taken as asyncmongo's own, in every client.

``bulk_write`` takes PyMongo's InsertOne, UpdateOne, ... (and subclasses of them, which
libraries define), ``create_indexes`` PyMongo's IndexModel: each is rebuilt as asyncmongo's
model from the attributes PyMongo's keep, recognised by module as in
``asyncmongo.core.adopt`` (without importing PyMongo). asyncmongo's own models pass through
after one type test.
"""

from __future__ import annotations

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


def adopt_write_model(value: Any) -> Any:
    """PyMongo's write model (InsertOne, UpdateOne, ...; or a subclass) as asyncmongo's,
    read from the attributes PyMongo's models keep."""
    if isinstance(value, WriteModel) or not is_pymongo_object(value, "pymongo.operations"):
        return value
    kind = next(
        (c.__name__ for c in type(value).__mro__ if c.__module__ == "pymongo.operations"), ""
    )
    namespace = getattr(value, "_namespace", None)
    get = getattr
    if kind == "InsertOne":
        return InsertOne(value._doc, namespace=namespace)
    if kind in ("DeleteOne", "DeleteMany"):
        model = DeleteOne if kind == "DeleteOne" else DeleteMany
        return model(
            value._filter, get(value, "_collation", None), get(value, "_hint", None), namespace
        )
    if kind == "ReplaceOne":
        return ReplaceOne(
            value._filter,
            value._doc,
            get(value, "_upsert", None),
            get(value, "_collation", None),
            get(value, "_hint", None),
            namespace,
            get(value, "_sort", None),
        )
    if kind == "UpdateOne":
        return UpdateOne(
            value._filter,
            value._doc,
            get(value, "_upsert", None),
            get(value, "_collation", None),
            get(value, "_array_filters", None),
            get(value, "_hint", None),
            namespace,
            get(value, "_sort", None),
        )
    if kind == "UpdateMany":
        return UpdateMany(
            value._filter,
            value._doc,
            get(value, "_upsert", None),
            get(value, "_collation", None),
            get(value, "_array_filters", None),
            get(value, "_hint", None),
            namespace,
        )
    return value

"""Write models for ``bulk_write`` and the index model (PyMongo's ``pymongo.operations``).

Each write model turns into one write statement (``asyncmongo.core.operations.statements``),
validated when the bulk write is built. ``namespace`` ("db.coll") is only for
``client.bulk_write``, which writes across collections in one ``bulkWrite`` command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeAlias

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.bson.typings import _DocumentType
from asyncmongo.core.operations.indexes import index_document
from asyncmongo.core.operations.search_indexes import search_index_document
from asyncmongo.core.operations.statements import (
    WriteStatement,
    delete_statement,
    insert_statement,
    update_statement,
)

__all__ = [
    "DeleteMany",
    "DeleteOne",
    "IndexModel",
    "InsertOne",
    "ReplaceOne",
    "SearchIndexModel",
    "UpdateMany",
    "UpdateOne",
    "WriteModel",
]


class WriteModel:
    """Base of the bulk write models."""

    __slots__ = ("_namespace",)

    def __init__(self, namespace: str | None) -> None:
        self._namespace = namespace

    @property
    def namespace(self) -> str | None:
        """``"db.collection"`` for ``client.bulk_write`` (None for ``Collection.bulk_write``)."""
        return self._namespace

    def _statement(self, new_id: Callable[[], Any] = ObjectId) -> WriteStatement:
        """The write statement; ``new_id`` makes an insert's missing ``_id``."""
        raise NotImplementedError

    def _fields(self) -> dict[str, Any]:
        raise NotImplementedError

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._fields().items() if v is not None)
        return f"{type(self).__name__}({shown})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, WriteModel)
        return self._fields() == other._fields() and self._namespace == other._namespace

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]  # mutable documents: unhashable like PyMongo's


class InsertOne(WriteModel, Generic[_DocumentType]):
    """Insert ``document`` (an ``_id`` is added to it if missing)."""

    __slots__ = ("_document",)

    def __init__(self, document: _DocumentType, namespace: str | None = None) -> None:
        super().__init__(namespace)
        self._document = document

    @property
    def document(self) -> _DocumentType:
        """The document to insert; the ``_id`` added when the write runs is set on it, as in
        PyMongo."""
        return self._document

    def _statement(self, new_id: Callable[[], Any] = ObjectId) -> WriteStatement:
        return insert_statement(self._document, new_id)

    def _fields(self) -> dict[str, Any]:
        return {"document": self._document}


class _Delete(WriteModel):
    __slots__ = ("_collation", "_filter", "_hint")
    _multi = False

    def __init__(
        self,
        filter: Mapping[str, Any],
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        namespace: str | None = None,
    ) -> None:
        super().__init__(namespace)
        self._filter = filter
        self._collation = collation
        self._hint = hint

    def _statement(self, new_id: Callable[[], Any] = ObjectId) -> WriteStatement:
        return delete_statement(
            self._filter, multi=self._multi, collation=self._collation, hint=self._hint
        )

    def _fields(self) -> dict[str, Any]:
        return {"filter": self._filter, "collation": self._collation, "hint": self._hint}


class DeleteOne(_Delete):
    """Delete the first document matching ``filter``."""

    __slots__ = ()


class DeleteMany(_Delete):
    """Delete every document matching ``filter``."""

    __slots__ = ()
    _multi = True


class ReplaceOne(WriteModel, Generic[_DocumentType]):
    """Replace the first document matching ``filter`` with ``replacement``."""

    __slots__ = ("_collation", "_filter", "_hint", "_replacement", "_sort", "_upsert")

    def __init__(
        self,
        filter: Mapping[str, Any],
        replacement: _DocumentType | RawBSONDocument,
        upsert: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        namespace: str | None = None,
        sort: Any = None,
    ) -> None:
        super().__init__(namespace)
        self._filter = filter
        self._replacement = replacement
        self._upsert = upsert
        self._collation = collation
        self._hint = hint
        self._sort = sort

    def _statement(self, new_id: Callable[[], Any] = ObjectId) -> WriteStatement:
        return update_statement(
            self._filter,
            self._replacement,
            multi=False,
            replace=True,
            upsert=self._upsert,
            collation=self._collation,
            hint=self._hint,
            sort=self._sort,
        )

    def _fields(self) -> dict[str, Any]:
        return {
            "filter": self._filter,
            "replacement": self._replacement,
            "upsert": self._upsert,
            "collation": self._collation,
            "hint": self._hint,
            "sort": self._sort,
        }


class _Update(WriteModel):
    __slots__ = ("_array_filters", "_collation", "_filter", "_hint", "_sort", "_update", "_upsert")
    _multi = False

    def __init__(
        self,
        filter: Mapping[str, Any],
        update: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        upsert: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        array_filters: list[Mapping[str, Any]] | None = None,
        hint: Any = None,
        namespace: str | None = None,
        sort: Any = None,
    ) -> None:
        super().__init__(namespace)
        self._filter = filter
        self._update = update
        self._upsert = upsert
        self._collation = collation
        self._array_filters = array_filters
        self._hint = hint
        self._sort = sort

    def _statement(self, new_id: Callable[[], Any] = ObjectId) -> WriteStatement:
        return update_statement(
            self._filter,
            self._update,
            multi=self._multi,
            upsert=self._upsert,
            collation=self._collation,
            array_filters=self._array_filters,
            hint=self._hint,
            sort=self._sort,
        )

    def _fields(self) -> dict[str, Any]:
        return {
            "filter": self._filter,
            "update": self._update,
            "upsert": self._upsert,
            "collation": self._collation,
            "array_filters": self._array_filters,
            "hint": self._hint,
            "sort": self._sort,
        }


class UpdateOne(_Update):
    """Update the first document matching ``filter`` (``sort`` picks which, server 8.0+)."""

    __slots__ = ()


class UpdateMany(_Update):
    """Update every document matching ``filter``."""

    __slots__ = ()
    _multi = True

    def __init__(
        self,
        filter: Mapping[str, Any],
        update: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        upsert: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        array_filters: list[Mapping[str, Any]] | None = None,
        hint: Any = None,
        namespace: str | None = None,
    ) -> None:
        super().__init__(filter, update, upsert, collation, array_filters, hint, namespace)


#: What ``AsyncCollection[T].bulk_write`` takes: the models of documents of type T (PyMongo's
#: ``_WriteOp``).
_WriteOp: TypeAlias = (
    InsertOne[_DocumentType]
    | DeleteOne
    | DeleteMany
    | ReplaceOne[_DocumentType]
    | UpdateOne
    | UpdateMany
)


class IndexModel:
    """One index for ``create_indexes``: keys plus server options (``name``, ``unique``, ...).

    ``document`` is the createIndexes entry, with the spec's generated name when none is given.
    """

    __slots__ = ("_document",)

    def __init__(self, keys: Any, **kwargs: Any) -> None:
        self._document = index_document(keys, **kwargs)

    @property
    def document(self) -> dict[str, Any]:
        """The index as sent in createIndexes' ``indexes`` list: ``key``, ``name`` (generated from
        the keys, as ``a_1_b_-1``, when none was given) and the options."""
        return self._document

    def __repr__(self) -> str:
        return f"IndexModel({self._document!r})"


class SearchIndexModel:
    """One Atlas search index for ``create_search_indexes``: its definition, and optionally a
    ``name`` (the server's default is "default") and ``type`` ("search" or "vectorSearch")."""

    __slots__ = ("_document",)

    def __init__(
        self,
        definition: Mapping[str, Any],
        name: str | None = None,
        type: str | None = None,
        **kwargs: Any,
    ) -> None:
        self._document = search_index_document(definition, name, type)
        self._document.update(kwargs)

    @property
    def document(self) -> dict[str, Any]:
        """The search index as sent in createSearchIndexes' ``indexes`` list: ``definition``, and
        ``name`` and ``type`` when given."""
        return self._document

    def __repr__(self) -> str:
        return f"SearchIndexModel({self._document!r})"

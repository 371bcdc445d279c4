"""Write statements: one insert document, update statement or delete statement each.

The single-document API (update_one, delete_many, ...) and the bulk write models build the
same statements here, so the rules (update documents need operators, replacements must not
have them, ``_id`` is added before insert) hold everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from enum import Enum
from typing import Any

from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.core.operations.common import check_document, hint_value, put, sort_document
from asyncmongo.errors import InvalidArgument

__all__ = [
    "StatementKind",
    "WriteStatement",
    "delete_statement",
    "insert_statement",
    "update_statement",
]


class StatementKind(Enum):
    """Which write command a statement belongs to (and its document-sequence name)."""

    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"

    @property
    def sequence(self) -> str:
        return _SEQUENCES[self]


_SEQUENCES = {
    StatementKind.INSERT: "documents",
    StatementKind.UPDATE: "updates",
    StatementKind.DELETE: "deletes",
}


class WriteStatement:
    """One statement of a write command, plus what the results need to know of it.

    A plain ``__slots__`` class rather than a frozen dataclass: every insert_one builds one,
    and a frozen dataclass's ``__init__`` costs an ``object.__setattr__`` call per field.
    Treat it as immutable all the same (equality, hash and repr are the dataclass's).
    """

    __slots__ = ("document", "kind", "multi")

    def __init__(
        self, kind: StatementKind, document: Mapping[str, Any], multi: bool = False
    ) -> None:
        self.kind = kind
        self.document = document
        #: update/replace/delete of at most one document (client bulkWrite's "multi: false").
        self.multi = multi

    def __repr__(self) -> str:
        return (
            f"WriteStatement(kind={self.kind!r}, document={self.document!r}, "
            f"multi={self.multi!r})"
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, WriteStatement)
        return (self.kind, self.document, self.multi) == (other.kind, other.document, other.multi)

    def __hash__(self) -> int:
        return hash((self.kind, self.document, self.multi))


def insert_statement(document: Any, new_id: Callable[[], Any] = ObjectId) -> WriteStatement:
    """The document to insert, with an ``_id`` added (in place, as PyMongo does) if missing;
    ``new_id`` makes it (the ObjectId class the client's documents decode to)."""
    if type(document) is dict:  # the common case, without the ABC checks
        if "_id" not in document:
            document["_id"] = new_id()
        return WriteStatement(StatementKind.INSERT, document)
    check_document(document, "document")
    if "_id" not in document and not isinstance(document, RawBSONDocument):
        if not isinstance(document, MutableMapping):
            raise InvalidArgument("a document without _id must be mutable to receive one")
        document["_id"] = new_id()
    return WriteStatement(StatementKind.INSERT, document)


def check_update(update: Any) -> Mapping[str, Any] | list[Any]:
    """An update is an operator document (``$set``...) or a pipeline (a list of stages)."""
    if isinstance(update, list):
        return update
    document = check_document(update, "update")
    if not document:
        raise InvalidArgument("update must not be empty")
    first = next(iter(document))
    if not isinstance(first, str) or not first.startswith("$"):
        raise InvalidArgument("update only works with $ operators (or a pipeline)")
    return document


def check_replacement(replacement: Any) -> Mapping[str, Any]:
    """A replacement is a plain document: a first key with ``$`` means an update was meant."""
    document = check_document(replacement, "replacement")
    if document and isinstance(first := next(iter(document)), str) and first.startswith("$"):
        raise InvalidArgument("replacement can not include $ operators")
    return document


def update_statement(
    filter: Any,
    update: Any,
    *,
    multi: bool,
    replace: bool = False,
    upsert: bool | None = None,
    collation: Mapping[str, Any] | None = None,
    array_filters: Sequence[Mapping[str, Any]] | None = None,
    hint: Any = None,
    sort: Any = None,
) -> WriteStatement:
    """An ``updates`` entry: ``{q, u, multi, upsert, ...}`` (only what was given)."""
    check_document(filter, "filter")
    statement: dict[str, Any] = {
        "q": filter,
        "u": check_replacement(update) if replace else check_update(update),
    }
    if multi:
        statement["multi"] = True
    if upsert is not None:
        if not isinstance(upsert, bool):
            raise InvalidArgument(f"upsert must be True or False, not {upsert!r}")
        statement["upsert"] = upsert
    if array_filters is not None:
        if replace:
            raise InvalidArgument("array_filters cannot be used with a replacement")
        if not isinstance(array_filters, list):
            raise InvalidArgument("array_filters must be a list of filter documents")
        statement["arrayFilters"] = array_filters
    put(statement, "collation", collation)
    put(statement, "hint", hint_value(hint))
    if sort is not None:
        if multi:
            raise InvalidArgument("sort is only allowed when updating a single document")
        statement["sort"] = sort_document(sort)
    return WriteStatement(StatementKind.UPDATE, statement, multi)


def delete_statement(
    filter: Any,
    *,
    multi: bool,
    collation: Mapping[str, Any] | None = None,
    hint: Any = None,
) -> WriteStatement:
    """A ``deletes`` entry: ``{q, limit: 0 (all) | 1, ...}``."""
    check_document(filter, "filter")
    statement: dict[str, Any] = {"q": filter, "limit": 0 if multi else 1}
    put(statement, "collation", collation)
    put(statement, "hint", hint_value(hint))
    return WriteStatement(StatementKind.DELETE, statement, multi)

"""AsyncCollection: CRUD, bulk writes, indexes and management of one collection.

Methods are thin (STYLE 10): build an operation from ``asyncmongo.core.operations``, run it
through the client, shape the result. Names and signatures are PyMongo's
``AsyncCollection``'s. Where we differ:

- ``session=`` runs the method's operations in that session (passed down to the executor).
- bad arguments raise :class:`~asyncmongo.errors.InvalidArgument` (also a ValueError and a
  TypeError, so PyMongo-style ``except`` clauses still catch it).

The class is put together from one module per job: ``writes``, ``reads``,
``find_and_modify``, ``indexes`` and ``management``, over ``base.CollectionBase`` (identity
and settings); ``aggregate`` is shared with AsyncDatabase and ``arguments`` holds the keyword
handling they all use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

from asyncmongo.bson.typings import _DocumentType, _DocumentTypeArg
from asyncmongo.collection.find_and_modify import CollectionFindAndModify
from asyncmongo.collection.indexes import CollectionIndexes
from asyncmongo.collection.management import CollectionManagement
from asyncmongo.collection.reads import CollectionReads
from asyncmongo.collection.writes import CollectionWrites
from asyncmongo.core.operations.find_and_modify import ReturnDocument

if TYPE_CHECKING:
    from asyncmongo.bson.codec_options import CodecOptions
    from asyncmongo.core.concern import ReadConcern, WriteConcern
    from asyncmongo.core.selection import ReadPreference

__all__ = ["AsyncCollection", "ReturnDocument"]


class AsyncCollection(
    CollectionWrites[_DocumentType],
    CollectionReads[_DocumentType],
    CollectionFindAndModify[_DocumentType],
    CollectionIndexes[_DocumentType],
    CollectionManagement[_DocumentType],
):
    """One collection; ``db["name"]`` or ``db.get_collection("name", ...)``."""

    __slots__ = ()

    if TYPE_CHECKING:  # PyMongo's overloads: new codec options may bring a document type

        @overload
        def with_options(
            self,
            codec_options: None = None,
            read_preference: ReadPreference | None = None,
            write_concern: WriteConcern | None = None,
            read_concern: ReadConcern | None = None,
            timeout_ms: int | None = None,
        ) -> AsyncCollection[_DocumentType]: ...

        @overload
        def with_options(
            self,
            codec_options: CodecOptions[_DocumentTypeArg],
            read_preference: ReadPreference | None = None,
            write_concern: WriteConcern | None = None,
            read_concern: ReadConcern | None = None,
            timeout_ms: int | None = None,
        ) -> AsyncCollection[_DocumentTypeArg]: ...

        @overload
        def with_options(
            self,
            codec_options: CodecOptions[_DocumentTypeArg] | None = None,
            read_preference: ReadPreference | None = None,
            write_concern: WriteConcern | None = None,
            read_concern: ReadConcern | None = None,
            timeout_ms: int | None = None,
        ) -> AsyncCollection[_DocumentType] | AsyncCollection[_DocumentTypeArg]: ...

        def with_options(
            self,
            codec_options: CodecOptions[Any] | None = None,
            read_preference: ReadPreference | None = None,
            write_concern: WriteConcern | None = None,
            read_concern: ReadConcern | None = None,
            timeout_ms: int | None = None,
        ) -> AsyncCollection[Any]: ...

    def __getattr__(self, name: str) -> AsyncCollection[_DocumentType]:
        if name.startswith("_"):
            raise self._private_attribute(name)
        return self[name]

    def __getitem__(self, name: str) -> AsyncCollection[_DocumentType]:
        """The sub-collection ``name`` (``coll["sub"]`` is ``db["coll.sub"]``)."""
        settings = (self._codec_options, self._read_preference, self._write_concern)
        collection: AsyncCollection[_DocumentType] = self._parent.get_collection(
            f"{self._name}.{name}", *settings, self._read_concern
        )
        return collection

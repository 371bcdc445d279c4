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

from asyncmongo.collection.find_and_modify import CollectionFindAndModify
from asyncmongo.collection.indexes import CollectionIndexes
from asyncmongo.collection.management import CollectionManagement
from asyncmongo.collection.reads import CollectionReads
from asyncmongo.collection.writes import CollectionWrites
from asyncmongo.core.operations.find_and_modify import ReturnDocument

__all__ = ["AsyncCollection", "ReturnDocument"]


class AsyncCollection(
    CollectionWrites,
    CollectionReads,
    CollectionFindAndModify,
    CollectionIndexes,
    CollectionManagement,
):
    """One collection; ``db["name"]`` or ``db.get_collection("name", ...)``."""

    __slots__ = ()

    def __getattr__(self, name: str) -> AsyncCollection:
        if name.startswith("_"):
            raise self._private_attribute(name)
        return self[name]

    def __getitem__(self, name: str) -> AsyncCollection:
        """The sub-collection ``name`` (``coll["sub"]`` is ``db["coll.sub"]``)."""
        settings = (self._codec_options, self._read_preference, self._write_concern)
        collection: AsyncCollection = self._parent.get_collection(
            f"{self._name}.{name}", *settings, self._read_concern
        )
        return collection

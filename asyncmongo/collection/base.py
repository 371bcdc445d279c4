"""What every part of AsyncCollection stands on: the collection's identity and runner.

The method groups (writes, reads, find-and-modify, indexes, management) are mixins over this
class, so each module keeps one job and all of them see the same namespace, settings and
``_run``.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from asyncmongo._scope import ClientScope, DatabaseScope, NamedScope, new_id_class
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.typings import _DocumentType
from asyncmongo.collection.arguments import with_raw_data
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.operations.common import Namespace, check_collection_name
from asyncmongo.core.operations.find import FindContext
from asyncmongo.core.operations.write import WriteContext
from asyncmongo.core.selection import ReadPreference

__all__ = ["CollectionBase"]

_T = TypeVar("_T")


class CollectionBase(NamedScope[DatabaseScope], Generic[_DocumentType]):
    """A collection's database, name, namespace and settings (AsyncCollection's base)."""

    __slots__ = ("_client", "_find_context", "_namespace", "_write_context")

    _ITEM_HINT = "coll[{name}] for a sub-collection"

    def __init__(
        self,
        database: DatabaseScope,
        name: str,
        codec_options: CodecOptions | None = None,
        read_preference: ReadPreference | None = None,
        write_concern: WriteConcern | None = None,
        read_concern: ReadConcern | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        super().__init__(
            database,
            check_collection_name(name),
            codec_options,
            read_preference,
            write_concern,
            read_concern,
            timeout_ms,
        )
        self._namespace = Namespace(database.name, name)
        #: The client operations run through (an attribute: read by every method).
        self._client: ClientScope = database.client
        #: find's and the single writes' per-collection parts, made on their first call (the
        #: settings never change; ``with_options`` makes another collection).
        self._find_context: FindContext | None = None
        self._write_context: WriteContext | None = None

    @property
    def full_name(self) -> str:
        """The collection's namespace, ``"<database>.<collection>"``."""
        return self._namespace.full_name

    @property
    def database(self) -> DatabaseScope:
        """The AsyncDatabase this collection belongs to."""
        return self._parent

    def _context_for_find(self) -> FindContext:
        """What every find through this collection shares (made once)."""
        context = self._find_context
        if context is None:
            context = self._find_context = FindContext(
                self._namespace, self._read_preference, self._read_concern, self._codec_options
            )
        return context

    def _context_for_write(self) -> WriteContext:
        """What every single write through this collection shares (made once)."""
        context = self._write_context
        if context is None:
            codec_options = self._codec_options
            context = self._write_context = WriteContext(
                self._namespace, self._write_concern, codec_options, new_id_class(codec_options)
            )
        return context

    async def _run(
        self, op: CommandOperation[_T], session: Any = None, raw_data: bool | None = None
    ) -> _T:
        """Run one command operation in ``session`` (with ``rawData`` when given)."""
        result: _T = await self._client._run(
            with_raw_data(op, raw_data), session, timeout_ms=self._timeout_ms
        )
        return result

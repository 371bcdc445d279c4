"""AsyncCollection's reads: find, find_one, counts, distinct and aggregate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from asyncmongo._scope import check_session
from asyncmongo.bson.typings import _DocumentType
from asyncmongo.collection.aggregate import aggregate_cursor
from asyncmongo.collection.arguments import (
    COUNT_OPTIONS,
    MAX_TIME,
    command_options,
)
from asyncmongo.collection.base import CollectionBase
from asyncmongo.core.operations import count as count_ops
from asyncmongo.core.operations.common import (
    check_document,
)
from asyncmongo.core.operations.cursors import CursorPage
from asyncmongo.core.operations.distinct import distinct as distinct_op
from asyncmongo.core.operations.find import DEFAULT_FIND_OPTIONS, Find, FindOne
from asyncmongo.cursor import AsyncCommandCursor, AsyncCursor, find_options
from asyncmongo.errors import InvalidOperation

if TYPE_CHECKING:
    from asyncmongo.change_stream import AsyncChangeStream

__all__ = ["CollectionReads"]



class CollectionReads(CollectionBase[_DocumentType]):
    """The read methods of :class:`~asyncmongo.collection.AsyncCollection`."""

    __slots__ = ()

    def find(
        self, filter: Any = None, projection: Any = None, **kwargs: Any
    ) -> AsyncCursor[_DocumentType]:
        """A cursor over the matching documents (the command runs on the first read).

        Keywords: skip, limit, sort, batch_size, hint, collation, comment, let, max_time_ms,
        max_await_time_ms, allow_disk_use, cursor_type, no_cursor_timeout,
        allow_partial_results, return_key, show_record_id, max, min.
        """
        session = mode = None
        if kwargs:
            session = kwargs.pop("session", None)
            check_session(session)
            mode = kwargs.pop("timeout_mode", None)
        if filter is not None:
            check_document(filter, "filter")
        if projection is None and not kwargs:  # find(filter): the options every such call shares
            return AsyncCursor(self, filter, DEFAULT_FIND_OPTIONS, session, mode)
        return AsyncCursor(self, filter, find_options(projection, **kwargs), session, mode)

    async def find_one(
        self, filter: Any = None, *args: Any, **kwargs: Any
    ) -> _DocumentType | None:
        """The first matching document or None; a non-mapping filter means ``{_id: filter}``."""
        if filter is not None and type(filter) is not dict and not isinstance(filter, Mapping):
            filter = {"_id": filter}
        session = None
        if kwargs:
            session = kwargs.pop("session", None)
        context = self._find_context or self._context_for_find()
        op: Find | FindOne
        if args or kwargs:
            kwargs["limit"] = 1  # CRUD findOne: limit 1 and singleBatch, no batchSize
            kwargs["single_batch"] = True
            op = Find(context, filter, find_options(*args, **kwargs))
        else:  # the usual call: the collection's parts made once, only the filter differs
            op = FindOne(context, filter)
        # FindOne's result: the batch (a list) of the closed cursor; else a CursorPage
        result: Any = await self._client._run(op, session, timeout_ms=self._timeout_ms)
        document: _DocumentType | None
        if result.__class__ is list:
            document = result[0] if result else None
            return document
        page: CursorPage = result
        if page.cursor_id:  # a server that kept it open anyway
            await AsyncCommandCursor(
                self._client, page, self._codec_options, session=session
            ).close()
        document = page.documents[0] if page.documents else None
        return document

    async def find_raw_batches(self, *args: Any, **kwargs: Any) -> Any:
        """Not implemented: raises InvalidOperation when awaited.

        PyMongo's ``find_raw_batches`` returns undecoded BSON batches; asyncmongo has no raw-batch
        cursor. Use ``find()`` with ``CodecOptions(document_class=RawBSONDocument)`` (via
        ``with_options``) to get documents left as BSON bytes.
        """
        raise InvalidOperation("find_raw_batches is not implemented by asyncmongo")

    async def count_documents(
        self, filter: Mapping[str, Any], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> int:
        """The number of matching documents (an aggregate; exact, unlike the estimate)."""
        options, raw_data = command_options(kwargs, COUNT_OPTIONS, "count_documents")
        settings = self._read_settings()
        op = count_ops.count_documents(
            self._namespace, filter, comment=comment, **settings, **options
        )
        return await self._run(op, session, raw_data)

    async def estimated_document_count(self, comment: Any = None, **kwargs: Any) -> int:
        """The collection's document count from its metadata (fast; no filter)."""
        options, raw_data = command_options(kwargs, MAX_TIME, "estimated_document_count")
        settings = self._read_settings()
        op = count_ops.estimated_document_count(
            self._namespace, comment=comment, **settings, **options
        )
        return await self._run(op, None, raw_data)

    async def distinct(
        self,
        key: str,
        filter: Mapping[str, Any] | None = None,
        session: Any = None,
        comment: Any = None,
        hint: Any = None,
        **kwargs: Any,
    ) -> list[Any]:
        """The distinct values of ``key`` (a field name, dotted for embedded fields) among the
        documents matching ``filter`` (all when None), in the server's order (CRUD distinct).

        An array field contributes each of its elements. ``hint`` (MongoDB 7.1+), ``collation`` and
        ``max_time_ms`` (also ``maxTimeMS``) are the command's options, any other keyword raises
        InvalidArgument; ``session`` runs it in an explicit session. Uses the collection's read
        preference and read concern. The whole result comes in one reply, so it is bounded by the 16
        MB document limit (use an aggregation with ``$group`` for more).
        """
        options, raw_data = command_options(kwargs, MAX_TIME | {"collation"}, "distinct")
        settings = self._read_settings()
        op = distinct_op(
            self._namespace, key, filter, comment=comment, hint=hint, **settings, **options
        )
        return await self._run(op, session, raw_data)

    async def aggregate(
        self,
        pipeline: Sequence[Mapping[str, Any]],
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> AsyncCommandCursor[_DocumentType]:
        """Run the pipeline; a cursor over its results ($out/$merge: usually empty)."""
        return await aggregate_cursor(
            self, self._namespace, False, pipeline, let, comment, kwargs, session
        )

    async def watch(
        self,
        pipeline: Sequence[Mapping[str, Any]] | None = None,
        full_document: str | None = None,
        resume_after: Mapping[str, Any] | None = None,
        max_await_time_ms: int | None = None,
        batch_size: int | None = None,
        collation: Mapping[str, Any] | None = None,
        start_at_operation_time: Any = None,
        session: Any = None,
        start_after: Mapping[str, Any] | None = None,
        comment: Any = None,
        full_document_before_change: str | None = None,
        show_expanded_events: bool | None = None,
    ) -> AsyncChangeStream[_DocumentType]:
        """A change stream of this collection's changes (asyncmongo.change_stream;
        PyMongo's signature)."""
        from asyncmongo.change_stream import watch

        return await watch(
            self, "collection", pipeline, full_document, resume_after, max_await_time_ms,
            batch_size, collation, start_at_operation_time, session, start_after, comment,
            full_document_before_change, show_expanded_events,
        )

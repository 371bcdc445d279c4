"""Change streams: :class:`AsyncChangeStream`, returned by ``await collection.watch()``,
``await database.watch()`` and ``await client.watch()`` (specs/change-streams).

A change stream is an aggregate whose first stage is ``$changeStream`` and a tailable,
awaitData cursor over its results. It remembers a resume token (the spec's rules: the
``startAfter``/``resumeAfter`` given, then each returned event's ``_id`` or the batch's
``postBatchResumeToken``) and, on a resumable error of a getMore (a network error,
CursorNotFound, an error labelled ResumableChangeStreamError from a 4.4+ server, the listed
codes from older ones), kills the old cursor and runs the aggregate again once, after a new
server selection, from that token (``startAfter`` while nothing was returned from a
``startAfter`` stream, else ``resumeAfter``; without a token from ``startAtOperationTime``).
Any other error closes the stream.

Iterate with ``async for change in stream``, ``await stream.next()`` (waits for a change) or
``await stream.try_next()`` (at most one getMore: None when nothing came, so the caller can
read :attr:`resume_token` between empty batches). ``await stream.close()`` or leaving
``async with stream`` kills the server cursor.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.typings import _DocumentType
from asyncmongo.core.address import Address
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations import aggregate as aggregate_ops
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.operations.common import Namespace
from asyncmongo.core.operations.cursors import CursorPage, GetMore, KillCursors, parse_cursor_page
from asyncmongo.core.selection import ReadPreference
from asyncmongo.errors import (
    ConnectionFailure,
    InvalidArgument,
    InvalidOperation,
    MongoError,
    OperationFailure,
)

__all__ = [
    "AsyncChangeStream",
    "AsyncClusterChangeStream",
    "AsyncCollectionChangeStream",
    "AsyncDatabaseChangeStream",
    "is_resumable",
]

#: Change streams spec: the server error codes resumable from servers before 4.4 (wire 9).
RESUMABLE_CODES = frozenset({6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435,
                             13436, 63, 150, 13388, 234, 133})
RESUMABLE_LABEL = "ResumableChangeStreamError"
CURSOR_NOT_FOUND = 43


def _server_code(exc: MongoError) -> int | None:
    """The code of a server's error reply, None for an error the driver raised itself."""
    if isinstance(exc, OperationFailure):
        return exc.code
    errors = getattr(exc, "errors", None)
    if isinstance(errors, Mapping) and isinstance(errors.get("code"), int):
        return int(errors["code"])
    return None


def is_resumable(exc: MongoError, max_wire_version: int | None) -> bool:
    """Change streams spec, "Resumable Error", for an error of a getMore."""
    code = _server_code(exc)
    if code is None:
        return isinstance(exc, ConnectionFailure)  # network errors, timeouts
    if code == CURSOR_NOT_FOUND:
        return True
    if max_wire_version is not None and max_wire_version >= 9:
        return exc.has_error_label(RESUMABLE_LABEL)
    return code in RESUMABLE_CODES


class _OpenedPage(CursorPage):
    """The aggregate's first page, with the reply's ``operationTime``."""

    __slots__ = ("operation_time",)

    _FIELDS = (*CursorPage._FIELDS, "operation_time")

    def __init__(
        self,
        cursor_id: int,
        namespace: Namespace,
        documents: list[Any],
        post_batch_resume_token: Any = None,
        address: Address | None = None,
        operation_time: Any = None,
    ) -> None:
        super().__init__(cursor_id, namespace, documents, post_batch_resume_token, address)
        self.operation_time = operation_time

    def with_address(self, address: Address | None) -> _OpenedPage:
        """Always named: the stream asks its server's wire version even for a closed cursor."""
        return self.with_changes(address=address)


@dataclass(frozen=True, slots=True)
class ChangeStreamOptions:
    """What ``watch()`` was given (PyMongo's keywords), kept to run the aggregate again."""

    pipeline: list[Mapping[str, Any]]
    full_document: str | None = None
    full_document_before_change: str | None = None
    resume_after: Mapping[str, Any] | None = None
    start_after: Mapping[str, Any] | None = None
    start_at_operation_time: Any = None
    max_await_time_ms: int | None = None
    batch_size: int | None = None
    collation: Mapping[str, Any] | None = None
    comment: Any = None
    show_expanded_events: bool | None = None


class AsyncChangeStream(Generic[_DocumentType]):
    """A change stream over a collection, a database or a whole deployment."""

    __slots__ = (
        "_address",
        "_all_changes",
        "_buffer",
        "_call_deadline",
        "_client",
        "_closed",
        "_codec_options",
        "_cursor_id",
        "_database_level",
        "_in_call",
        "_namespace",
        "_options",
        "_post_batch_token",
        "_read_concern",
        "_read_preference",
        "_resume_pending",
        "_resume_token",
        "_returned_any",
        "_session",
        "_start_at_operation_time",
        "_timeout_ms",
        "_uses_start_after",
        "_wire_version",
    )

    def __init__(
        self,
        client: Any,
        namespace: Namespace,
        options: ChangeStreamOptions,
        *,
        database_level: bool,
        all_changes: bool,
        read_preference: ReadPreference,
        read_concern: ReadConcern,
        codec_options: CodecOptions,
        session: Any = None,
        timeout_ms: int | None = None,
    ) -> None:
        self._client = client
        #: CSOT: the timeoutMS of each iteration (and of the initial aggregate), the deadline
        #: of the iteration in progress, and whether the last one timed out (so the next one
        #: resumes: a timeout does not invalidate the stream).
        self._timeout_ms = timeout_ms
        self._call_deadline: float | None = None
        self._in_call = False
        self._resume_pending = False
        self._namespace = namespace
        self._options = options
        self._database_level = database_level
        self._all_changes = all_changes
        self._read_preference = read_preference
        self._read_concern = read_concern
        self._codec_options = codec_options
        self._session = session
        self._buffer: deque[_DocumentType] = deque()
        self._cursor_id = 0
        self._address: Address | None = None
        self._closed = False
        self._post_batch_token: Any = None
        # Change streams spec, "Updating the Cached Resume Token": startAfter, else
        # resumeAfter, when the stream is started.
        self._resume_token: Any = options.start_after or options.resume_after
        self._uses_start_after = options.start_after is not None
        self._start_at_operation_time = options.start_at_operation_time
        self._returned_any = False
        self._wire_version: int | None = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else "alive"
        return (f"<AsyncChangeStream {self._namespace.full_name}: {state}, "
                f"{len(self._buffer)} buffered, id {self._cursor_id}>")

    # -- state -----------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """False once the stream is closed (by ``close()``, an invalidate, or an error)."""
        return not self._closed

    @property
    def resume_token(self) -> Any:
        """The token the stream would resume from now (spec: getResumeToken)."""
        return self._resume_token

    # -- the aggregate ---------------------------------------------------------------------

    def _stage(self) -> dict[str, Any]:
        """The ``$changeStream`` stage, with the resume option the spec's rules choose."""
        o = self._options
        stage: dict[str, Any] = {}
        if o.full_document is not None:
            stage["fullDocument"] = o.full_document
        if o.full_document_before_change is not None:
            stage["fullDocumentBeforeChange"] = o.full_document_before_change
        if self._resume_token is not None:
            key = "startAfter" if self._uses_start_after and not self._returned_any else (
                "resumeAfter")
            stage[key] = self._resume_token
        elif self._start_at_operation_time is not None:
            stage["startAtOperationTime"] = self._start_at_operation_time
        if self._all_changes:
            stage["allChangesForCluster"] = True
        if o.show_expanded_events is not None:
            stage["showExpandedEvents"] = o.show_expanded_events
        return {"$changeStream": stage}

    def _aggregate(self) -> CommandOperation[_OpenedPage]:
        o = self._options
        namespace = self._namespace
        op = aggregate_ops.aggregate(
            namespace,
            [self._stage(), *o.pipeline],
            database_level=self._database_level,
            batch_size=o.batch_size,
            collation=o.collation,
            comment=o.comment,
            read_preference=self._read_preference,
            read_concern=self._read_concern,
            write_concern=WriteConcern(),
            codec_options=self._codec_options,
        )

        def parse(reply: Mapping[str, Any]) -> _OpenedPage:
            page = parse_cursor_page(reply, namespace)
            return _OpenedPage(page.cursor_id, page.namespace, page.documents,
                               page.post_batch_resume_token, None, reply.get("operationTime"))

        return CommandOperation(op.database, op.document, parse, op.target, op.codec_options)

    async def _open(self) -> None:
        """Run the aggregate (first time or resuming) and take its first batch."""
        page = await self._client._run(
            self._aggregate(), self._session, deadline=self._deadline()
        )
        address = page.address
        assert address is not None
        self._address = address
        self._wire_version = self._max_wire_version(address)
        o = self._options
        if (self._resume_token is None and self._start_at_operation_time is None
                and o.start_at_operation_time is None and not page.documents
                and page.post_batch_resume_token is None
                and (self._wire_version or 0) >= 7):
            # Change streams spec, startAtOperationTime: keep the initial operationTime.
            self._start_at_operation_time = page.operation_time
        self._take(page)

    def _deadline(self) -> float | None:
        """The iteration's deadline (a fresh timeoutMS outside one)."""
        if self._in_call:
            return self._call_deadline
        deadline: float | None = self._client._deadline_for(self._timeout_ms)
        return deadline

    def _max_wire_version(self, address: Address) -> int | None:
        description = self._client.topology_description.servers.get(address)
        return description.max_wire_version if description is not None else None

    def _take(self, page: CursorPage) -> None:
        self._cursor_id = page.cursor_id
        self._namespace = page.namespace
        self._post_batch_token = page.post_batch_resume_token
        self._buffer.extend(page.documents)
        if not page.documents and page.post_batch_resume_token is not None:
            # "Updating the Cached Resume Token": an empty batch's postBatchResumeToken.
            self._resume_token = page.post_batch_resume_token
            self._start_at_operation_time = None

    async def _get_more(self) -> None:
        assert self._address is not None
        o = self._options
        op = GetMore(self._cursor_id, self._namespace, self._address, self._codec_options,
                     batch_size=o.batch_size or None, max_time_ms=o.max_await_time_ms,
                     comment=o.comment)
        page = await self._client._run(
            op, self._session, deadline=self._deadline(), max_time=False
        )
        self._take(page)

    async def _kill(self) -> None:
        """killCursors of the current server cursor, best effort (errors suppressed)."""
        cursor_id, address = self._cursor_id, self._address
        self._cursor_id = 0
        if not cursor_id or address is None:
            return
        op = KillCursors(cursor_id, self._namespace, address, self._codec_options)
        with contextlib.suppress(MongoError):
            await self._client._run(op, self._session, timeout_ms=self._timeout_ms)

    async def _resume(self) -> None:
        """Change streams spec, "Resume Process": kill the old cursor, select a server and
        run the aggregate again from the cached token (or operation time)."""
        await self._kill()
        self._buffer.clear()
        await self._open()

    # -- reading ---------------------------------------------------------------------------

    async def try_next(self) -> _DocumentType | None:
        """The next change, or None when none is available now (at most one getMore, and
        at most one resume attempt)."""
        if self._closed:
            return None
        outermost = not self._in_call
        if outermost:
            self._call_deadline = self._deadline()
            self._in_call = True
        try:
            change = await self._read_once()
        except BaseException as exc:
            if self._resume_pending:
                raise
            if not isinstance(exc, MongoError) or not is_resumable(exc, self._wire_version):
                await self.close()
            raise
        finally:
            if outermost:
                self._in_call = False
        if not self._buffer and not self._cursor_id:
            self._closed = True  # invalidated (or the server closed the cursor)
        if change is None:
            if self._post_batch_token is not None:
                self._resume_token = self._post_batch_token
                self._start_at_operation_time = None
            return None
        try:
            return self._returned(change)
        except InvalidOperation:
            await self.close()
            raise

    async def _read_once(self) -> _DocumentType | None:
        if self._buffer:
            return self._buffer.popleft()
        if self._resume_pending:
            self._resume_pending = False
            await self._resume()
            if self._buffer:
                return self._buffer.popleft()
        if not self._cursor_id:
            if self._address is not None:
                return None  # the server cursor is gone: nothing more comes
            await self._open()  # not opened yet (watch() opens it; kept for safety)
            return self._buffer.popleft() if self._buffer else None
        try:
            await self._get_more()
        except MongoError as exc:
            if exc.timeout and self._timeout_ms:
                # CSOT: a timed-out iteration leaves the stream valid; the next one resumes
                self._resume_pending = True
                raise
            if not is_resumable(exc, self._wire_version):
                raise
            try:
                await self._resume()
            except BaseException:
                await self.close()  # the resume's aggregate failed: resumed at most once
                raise
        return self._buffer.popleft() if self._buffer else None

    def _returned(self, change: _DocumentType) -> _DocumentType:
        try:
            token = change["_id"]
        except (KeyError, TypeError):
            raise InvalidOperation("Cannot provide resume functionality when the resume token "
                                   "is missing.") from None
        if not self._buffer and self._post_batch_token is not None:
            token = self._post_batch_token
        self._resume_token = token
        self._returned_any = True
        self._uses_start_after = False
        self._start_at_operation_time = None
        return change

    async def next(self) -> _DocumentType:
        """The next change, waiting (getMore after getMore) until one comes;
        StopAsyncIteration once the stream is closed or invalidated. With timeoutMS, the
        whole call (every getMore and a resume) has one timeoutMS; after a timeout, call it
        again (it resumes the stream) or close the stream and watch again, with a higher
        timeoutMS if no change came before the timeout."""
        self._call_deadline = self._deadline()
        self._in_call = True
        try:
            while self.alive:
                change = await self.try_next()
                if change is not None:
                    return change
        finally:
            self._in_call = False
        raise StopAsyncIteration

    def __aiter__(self) -> AsyncChangeStream[_DocumentType]:
        return self

    async def __anext__(self) -> _DocumentType:
        return await self.next()

    # -- closing ---------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the stream and kill its server cursor."""
        self._closed = True
        self._buffer.clear()
        await self._kill()

    aclose = close

    async def __aenter__(self) -> AsyncChangeStream[_DocumentType]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


#: PyMongo's names of the streams of a collection, a database and a deployment: one class
#: here, so typed code written for PyMongo (``AsyncCollectionChangeStream[Movie]``) reads.
AsyncCollectionChangeStream = AsyncChangeStream
AsyncDatabaseChangeStream = AsyncChangeStream
AsyncClusterChangeStream = AsyncChangeStream


async def watch(
    owner: Any,
    level: str,
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
) -> AsyncChangeStream[Any]:
    """Open a change stream on ``owner`` (``level``: collection, database or client), the
    shared body of the three ``watch`` methods (PyMongo's signature)."""
    if pipeline is None:
        pipeline = []
    if not isinstance(pipeline, list | tuple) or not all(
            isinstance(stage, Mapping) for stage in pipeline):
        raise InvalidArgument("pipeline must be a list of stage documents")
    for name, value in (("max_await_time_ms", max_await_time_ms), ("batch_size", batch_size)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise InvalidArgument(f"{name} must be a non-negative int, not {value!r}")
    timeout_ms = owner.timeout_ms
    if timeout_ms and max_await_time_ms is not None and max_await_time_ms >= timeout_ms:
        raise InvalidArgument(  # CSOT "Change Streams"
            f"max_await_time_ms ({max_await_time_ms}) must be less than timeoutMS ({timeout_ms})"
        )
    options = ChangeStreamOptions(
        list(pipeline), full_document, full_document_before_change, resume_after, start_after,
        start_at_operation_time, max_await_time_ms, batch_size, collation, comment,
        show_expanded_events)
    if level == "collection":
        client = owner.database.client
        namespace = Namespace(owner.database.name, owner.name)
    elif level == "database":
        client = owner.client
        namespace = Namespace(owner.name, "$cmd.aggregate")
    else:
        client = owner
        namespace = Namespace("admin", "$cmd.aggregate")
    stream = AsyncChangeStream(
        client, namespace, options, database_level=level != "collection",
        all_changes=level == "client", read_preference=owner.read_preference,
        read_concern=owner.read_concern, codec_options=owner.codec_options, session=session,
        timeout_ms=timeout_ms)
    await stream._open()
    return stream

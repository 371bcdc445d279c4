"""Cursors: :class:`AsyncCursor` (find) and :class:`AsyncCommandCursor` (aggregate,
listCollections, listIndexes, listDatabases).

Iterate with ``async for`` or read with ``await cursor.to_list(length)`` / ``await
cursor.next()``. A batch is fetched only when the buffer is empty (getMore on the server that
owns the cursor). The server-side cursor is killed when the cursor is closed: by ``await
cursor.close()`` or leaving ``async with cursor`` (both deterministic), or leaving an
``async for`` early: its iterator is an async generator, and asyncio runs the abandoned
generator's ``aclose`` (which kills the cursor) as a task right after the loop is left, so
the killCursors goes out a loop turn later. An exhausted cursor (id 0) needs nothing. One
dropped while open is killed by the client soon after: nothing may be awaited in
``__del__``, so it hands its killCursors to the client's cursor reaper
(``runtime.cursor_reaper``), which sends it from a client task and releases the cursor's
implicit session (a cursor of an explicit session is only forgotten: ending the session
ends it on the server). ``find`` with ``limit`` stops at the limit
and kills what remains, per find_getmore_killcursors_commands.

A tailable find (``cursor_type=CursorType.TAILABLE`` / ``TAILABLE_AWAIT``) on a capped
collection does not end when a batch comes back empty while the server keeps the cursor
open: ``async for`` and ``next()`` send getMore after getMore until a document comes (an
awaitData cursor's getMore waits on the server up to ``max_await_time_ms``), and end only
when the cursor is closed or the server closes it. ``try_next()`` returns None instead of
waiting, and ``alive`` says whether more may come. This differs from PyMongo, whose
``next()`` raises at each empty batch so that callers poll in a ``while cursor.alive`` loop:
under asyncio, waiting costs nothing and is what a consumer wants (that PyMongo loop still
works unchanged). ``Database.cursor_command`` with a tailable ``find`` behaves the same way.
"""

from __future__ import annotations

import asyncio
import enum
import math
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Mapping
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.typings import _DocumentType
from asyncmongo.core.address import Address
from asyncmongo.core.operations.base import Operation
from asyncmongo.core.operations.command import Explain
from asyncmongo.core.operations.common import Namespace, sort_document
from asyncmongo.core.operations.cursors import CursorPage, GetMore, KillCursors
from asyncmongo.core.operations.find import (
    DEFAULT_FIND_OPTIONS,
    CursorType,
    Find,
    FindContext,
    FindOptions,
    projection_document,
)
from asyncmongo.errors import InvalidArgument, InvalidOperation, MongoError, OperationFailure

__all__ = [
    "AsyncCommandCursor",
    "AsyncCursor",
    "CursorType",
    "TimeoutMode",
    "open_command_cursor",
    "timeout_mode_of",
]

T = TypeVar("T")

#: getMore errors after which the server holds no cursor to kill: CursorNotFound,
#: CursorKilled.
_CURSOR_GONE_CODES = frozenset({43, 237})
#: The pause between two getMores that found nothing on a tailable cursor without awaitData
#: (an awaitData cursor waits on the server instead, up to max_await_time_ms).
TAILABLE_RETRY_S = 0.1


class TimeoutMode(enum.Enum):
    """CSOT "Cursors": what a cursor's timeoutMS bounds. ``CURSOR_LIFETIME`` (the default of
    non-tailable cursors): the command and every getMore together; ``ITERATION`` (the only
    mode of tailable cursors and change streams): the command, then each iteration anew."""

    CURSOR_LIFETIME = "cursorLifetime"
    ITERATION = "iteration"


class Runner(Protocol):
    """What a cursor needs of its client: run an operation in a session within a deadline."""

    def _run(
        self,
        op: Operation[T],
        session: Any = None,
        operation_id: int | None = None,
        *,
        timeout_ms: int | None = None,
        deadline: float | None = None,
        max_time: bool = True,
    ) -> Awaitable[T]: ...

    def _deadline_for(self, timeout_ms: int | None) -> float | None: ...

    def _cursor_dropped(self, kill: KillCursors) -> None:
        """``kill`` is the killCursors of a cursor dropped while open: send it later."""
        ...


def timeout_mode_of(
    mode: TimeoutMode | str | None, timeout_ms: int | None, *, tailable: bool
) -> TimeoutMode:
    """The cursor's timeoutMode, checked (CSOT "Cursors": an error when set without timeoutMS,
    and CURSOR_LIFETIME for a tailable cursor)."""
    if mode is None:
        return TimeoutMode.ITERATION if tailable else TimeoutMode.CURSOR_LIFETIME
    if timeout_ms is None:
        raise InvalidArgument("timeout_mode requires timeoutMS to be set")
    try:
        mode = TimeoutMode(mode)
    except ValueError:
        raise InvalidArgument(f"not a timeout mode: {mode!r}") from None
    if tailable and mode is TimeoutMode.CURSOR_LIFETIME:
        raise InvalidArgument("a tailable cursor's timeout_mode can only be ITERATION")
    return mode


class _Cursor(Generic[_DocumentType]):
    """Batches, getMore and killCursors, shared by both cursor kinds."""

    __slots__ = (
        "_address",
        "_batch_size",
        "_buffer",
        "_call_deadline",
        "_codec_options",
        "_comment",
        "_deadline",
        "_id",
        "_in_call",
        "_killed",
        "_limit",
        "_max_await_time_ms",
        "_namespace",
        "_retrieved",
        "_runner",
        "_session",
        "_started",
        "_tailable",
        "_timeout_mode",
        "_timeout_ms",
    )

    def __init__(
        self,
        runner: Runner,
        namespace: Namespace,
        codec_options: CodecOptions,
        *,
        batch_size: int = 0,
        comment: Any = None,
        max_await_time_ms: int | None = None,
        session: Any = None,
        timeout_ms: int | None = None,
        timeout_mode: TimeoutMode = TimeoutMode.CURSOR_LIFETIME,
        deadline: float | None = None,
    ) -> None:
        self._runner = runner
        #: CSOT: the timeoutMS of the scope that made the cursor, its mode, and (cursor
        #: lifetime) the deadline its command started with (None: timeoutMS is unset,
        #: math.inf: no limit).
        self._timeout_ms = timeout_ms
        self._timeout_mode = timeout_mode
        self._deadline = deadline
        #: A next() call in progress: its deadline covers all its getMores (CSOT).
        self._call_deadline: float | None = None
        self._in_call = False
        self._session = session
        self._namespace = namespace
        self._codec_options = codec_options
        self._batch_size = batch_size
        self._comment = comment
        self._max_await_time_ms = max_await_time_ms
        self._buffer: deque[_DocumentType] = deque()
        self._id: int | None = None
        self._address: Address | None = None
        self._killed = False
        self._started = False
        self._limit = 0
        self._retrieved = 0
        #: 0: not tailable; CursorType.TAILABLE or TAILABLE_AWAIT: wait for more at the end.
        self._tailable = CursorType.NON_TAILABLE

    def __del__(self) -> None:
        # Dropped while the server still holds it: the client kills it later and forgets
        # its session (runtime.cursor_reaper); nothing can be awaited here.
        cursor_id, address = getattr(self, "_id", None), getattr(self, "_address", None)
        if cursor_id and address is not None and not self._killed:
            self._runner._cursor_dropped(
                KillCursors(cursor_id, self._namespace, address, self._codec_options)
            )

    def __repr__(self) -> str:
        state = "not started" if not self._started else "alive" if self.alive else "closed"
        return (
            f"<{type(self).__name__} {self._namespace.full_name}: {state}, "
            f"{len(self._buffer)} buffered, id {self._id}>"
        )

    # -- state -----------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """More documents may come: buffered ones, or a server cursor still open."""
        if not self._started:
            return True
        return bool(self._buffer) or (bool(self._id) and not self._killed)

    @property
    def cursor_id(self) -> int | None:
        """The server's cursor id (None before the first batch, 0 once exhausted)."""
        return self._id

    @property
    def address(self) -> Address | None:
        """The server that owns the cursor (None before the first batch)."""
        return self._address

    @property
    def session(self) -> Any:
        """The explicit session the cursor runs in, or None (implicit session)."""
        return self._session

    # -- batches ---------------------------------------------------------------------------

    async def _first_page(self) -> CursorPage:
        raise NotImplementedError

    def _take(self, page: CursorPage) -> None:
        self._id = page.cursor_id
        self._namespace = page.namespace
        documents = page.documents
        if self._limit:
            room = self._limit - self._retrieved
            documents = documents[:room]
        self._retrieved += len(documents)
        self._buffer.extend(documents)

    async def _refresh(self) -> bool:
        """Fetch the next batch when the buffer is empty; False when nothing more comes."""
        if self._buffer:
            return True
        if not self._started:
            self._started = True
            page = await self._first_page()
            self._address = page.address
            self._take(page)
        elif self._id and not self._killed and self._address is not None:
            page = await self._runner._run(
                self._get_more(self._address, self._id),
                self._session,
                deadline=self._iteration_deadline(),
                max_time=False,
            )
            self._take(page)
        else:
            return False
        if self._limit and self._retrieved >= self._limit and self._id:
            await self._kill()  # the limit is reached: the server cursor is not needed
        return bool(self._buffer)

    def _iteration_deadline(self) -> float | None:
        """CSOT: a getMore's deadline: the cursor's (cursor lifetime, shortened by an
        ``asyncmongo.timeout()`` block), or a fresh timeoutMS (iteration)."""
        if self._in_call:
            return self._call_deadline
        fresh = self._runner._deadline_for(self._timeout_ms)
        lifetime = self._deadline
        if self._timeout_mode is not TimeoutMode.CURSOR_LIFETIME or lifetime is None:
            return fresh
        return lifetime if fresh is None else min(fresh, lifetime)

    def _get_more(self, address: Address, cursor_id: int) -> GetMore:
        batch_size = self._batch_size
        if self._limit:
            remaining = self._limit - self._retrieved
            batch_size = min(batch_size, remaining) if batch_size else remaining
        return GetMore(
            cursor_id,
            self._namespace,
            address,
            self._codec_options,
            batch_size=batch_size or None,
            max_time_ms=self._max_await_time_ms,
            comment=self._comment,
        )

    # -- reading ---------------------------------------------------------------------------

    async def next(self) -> _DocumentType:
        """The next document; StopAsyncIteration when there is none. A tailable cursor
        instead waits for one while its server cursor is open (:meth:`try_next` does not)."""
        if self._buffer:
            return self._buffer.popleft()
        self._call_deadline = self._iteration_deadline()
        self._in_call = True
        try:
            if await self._refresh() or (self._tailable and await self._tail()):
                return self._buffer.popleft()
        finally:
            self._in_call = False
        raise StopAsyncIteration

    async def _tail(self) -> bool:
        """getMore until a document comes; False once the server cursor is gone (closed,
        killed or exhausted). An awaitData cursor's getMores wait on the server; between
        those of a plain tailable cursor there is a short pause."""
        while self.alive:
            if self._tailable is not CursorType.TAILABLE_AWAIT:
                await asyncio.sleep(self._pause())
            try:
                if await self._refresh():
                    return True
            except MongoError:
                if self._killed:
                    return False  # closed while its getMore waited: the getMore may fail
                raise
        return False

    def _pause(self) -> float:
        """The pause before a plain tailable cursor's next getMore: TAILABLE_RETRY_S, or
        half of what is left of the call's timeoutMS (CSOT: the getMore is still sent)."""
        deadline = self._call_deadline if self._in_call else None
        if deadline is None or deadline == math.inf:
            return TAILABLE_RETRY_S
        left = deadline - asyncio.get_running_loop().time()
        return max(0.0, min(TAILABLE_RETRY_S, left / 2))

    async def try_next(self) -> _DocumentType | None:
        """The next document, or None when none is available now (at most one getMore):
        for tailable cursors, which stay alive while empty."""
        if self._buffer or await self._refresh():
            return self._buffer.popleft()
        return None

    async def __anext__(self) -> _DocumentType:
        """``anext(cursor)``: :meth:`next`, sharing its buffer with ``async for``."""
        return await self.next()

    def __aiter__(self) -> AsyncIterator[_DocumentType]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[_DocumentType]:
        finished = False
        buffer = self._buffer  # the cursor's one deque (cleared, never replaced)
        popleft = buffer.popleft
        try:
            while buffer or await self._refresh() or (self._tailable and await self._tail()):
                while buffer:
                    yield popleft()
            finished = True
        finally:
            if not finished:
                await self.close()  # early exit of ``async for`` (break, error, cancel)

    async def to_list(self, length: int | None = None) -> list[_DocumentType]:
        """Up to ``length`` documents (all when None), fetching batches as needed."""
        if length is not None and (isinstance(length, bool) or not isinstance(length, int)):
            raise InvalidArgument(f"length must be an int or None, not {length!r}")
        if length is not None and length < 1:
            raise InvalidArgument(f"length must be at least 1, not {length}")
        result: list[_DocumentType] = []
        while length is None or len(result) < length:
            try:
                if not self._buffer and not await self._refresh():
                    break
            except OperationFailure as exc:
                # Like an ``async for`` left by an error: the documents read so far are lost
                # with the exception, so the server cursor is not needed any more. A timeout
                # keeps it (the call may be repeated); a cursor the server lost needs no kill.
                if not exc.timeout and exc.code not in _CURSOR_GONE_CODES:
                    await self._kill()
                raise
            buffer = self._buffer
            if length is None or len(buffer) <= length - len(result):
                result.extend(buffer)  # the whole batch at C speed, not one append per document
                buffer.clear()
            else:
                result.extend([buffer.popleft() for _ in range(length - len(result))])
        return result

    # -- closing ---------------------------------------------------------------------------

    async def close(self) -> None:
        """Kill the server cursor if it is open, and drop what is buffered."""
        self._buffer.clear()
        self._started = True
        await self._kill()

    async def _kill(self) -> None:
        """killCursors once, if the server still holds the cursor (the buffer is kept)."""
        cursor_id, address = self._id, self._address
        if self._killed or not cursor_id or address is None:
            self._killed = True
            return
        self._killed = True
        kill = KillCursors(cursor_id, self._namespace, address, self._codec_options)
        try:
            # CSOT: close refreshes timeoutMS for killCursors, even after the lifetime ran out
            await self._runner._run(kill, self._session, timeout_ms=self._timeout_ms)
        except MongoError:
            pass  # killCursors is best effort: the server times idle cursors out anyway

    aclose = close

    async def __aenter__(self: _C) -> _C:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


_C = TypeVar("_C", bound=_Cursor[Any])


class AsyncCommandCursor(_Cursor[_DocumentType]):
    """A cursor over a command's results (its first batch came with the command's reply)."""

    __slots__ = ("_first",)

    def __init__(
        self,
        runner: Runner,
        first: CursorPage,
        codec_options: CodecOptions,
        *,
        batch_size: int = 0,
        comment: Any = None,
        max_await_time_ms: int | None = None,
        cursor_type: CursorType = CursorType.NON_TAILABLE,
        session: Any = None,
        timeout_ms: int | None = None,
        timeout_mode: TimeoutMode = TimeoutMode.CURSOR_LIFETIME,
        deadline: float | None = None,
    ) -> None:
        super().__init__(
            runner,
            first.namespace,
            codec_options,
            batch_size=batch_size,
            comment=comment,
            max_await_time_ms=max_await_time_ms,
            session=session,
            timeout_ms=timeout_ms,
            timeout_mode=timeout_mode,
            deadline=deadline,
        )
        #: a tailable command (a find run through cursor_command) waits for more, as find does
        self._tailable = cursor_type
        self._first = first
        self._started = True
        self._address = first.address
        self._take(first)

    async def _first_page(self) -> CursorPage:
        return self._first

    def batch_size(self, batch_size: int) -> AsyncCommandCursor[_DocumentType]:
        """The batchSize of the following getMores (0: the server's default)."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 0:
            raise InvalidArgument(f"batch_size must be a non-negative int, not {batch_size!r}")
        self._batch_size = batch_size
        return self


async def open_command_cursor(
    runner: Runner,
    op: Operation[CursorPage],
    session: Any,
    codec_options: CodecOptions,
    *,
    timeout_ms: int | None,
    timeout_mode: TimeoutMode | str | None = None,
    tailable: bool = False,
    **cursor_options: Any,
) -> AsyncCommandCursor[Any]:
    """Run a cursor-opening command (aggregate, listIndexes, listCollections, ...) within
    its timeoutMS and wrap its first page in a command cursor that keeps the timeout
    (CSOT "Cursors": in iteration mode the command gets no maxTimeMS)."""
    mode = timeout_mode_of(timeout_mode, timeout_ms, tailable=tailable)
    _check_max_await(cursor_options.get("max_await_time_ms"), timeout_ms)
    if mode is TimeoutMode.ITERATION and getattr(op.target, "write_stage", False):
        raise InvalidArgument("timeout_mode ITERATION is not allowed with $out or $merge")
    deadline = runner._deadline_for(timeout_ms)
    # CSOT: maxTimeMS on the command for the cursor's lifetime, or a tailable awaitData
    # cursor (whose getMores carry maxAwaitTimeMS), not in iteration mode otherwise
    await_data = cursor_options.get("cursor_type") is CursorType.TAILABLE_AWAIT
    max_time = mode is TimeoutMode.CURSOR_LIFETIME or await_data
    page = await runner._run(op, session, deadline=deadline, max_time=max_time)
    return AsyncCommandCursor(
        runner,
        page,
        codec_options,
        session=session,
        timeout_ms=timeout_ms,
        timeout_mode=mode,
        deadline=deadline,
        **cursor_options,
    )


class AsyncCursor(_Cursor[_DocumentType]):
    """A ``find`` cursor: lazily runs the command on the first read; the chainable
    modifiers (``sort``, ``skip``, ``limit``, ...) may be used only before that."""

    __slots__ = ("_collection", "_context", "_filter", "_options")

    def __init__(
        self,
        collection: Any,
        filter: Mapping[str, Any] | None = None,
        options: FindOptions = DEFAULT_FIND_OPTIONS,
        session: Any = None,
        timeout_mode: TimeoutMode | str | None = None,
    ) -> None:
        context: FindContext = collection._context_for_find()
        timeout_ms = getattr(collection, "timeout_ms", None)
        super().__init__(
            collection.database.client,
            context.namespace,
            context.codec_options,
            batch_size=options.batch_size,
            comment=options.comment,
            max_await_time_ms=options.max_await_time_ms if options.await_data else None,
            session=session,
            timeout_ms=timeout_ms,
            timeout_mode=_checked_mode(timeout_mode, timeout_ms, options),
        )
        self._collection = collection
        self._context = context
        self._filter = filter
        self._options = options
        self._limit = abs(options.limit)
        self._tailable = options.cursor_type if options.tailable else CursorType.NON_TAILABLE

    @property
    def retrieved(self) -> int:
        """How many documents the server has returned so far (PyMongo's name)."""
        return self._retrieved

    @property
    def collection(self) -> Any:
        """The AsyncCollection this cursor reads from."""
        return self._collection

    def _find(self) -> Find:
        """The find operation for the current filter and options."""
        return Find(self._context, self._filter, self._options)

    async def _first_page(self) -> CursorPage:
        self._deadline = deadline = self._runner._deadline_for(self._timeout_ms)
        max_time = self._timeout_mode is TimeoutMode.CURSOR_LIFETIME or (
            self._tailable is CursorType.TAILABLE_AWAIT
        )
        return await self._runner._run(
            self._find(), self._session, deadline=deadline, max_time=max_time
        )

    def _check_unstarted(self) -> None:
        if self._started:
            raise InvalidOperation("cannot set options after the cursor was used")

    def _change(self, **changes: Any) -> AsyncCursor[_DocumentType]:
        self._check_unstarted()
        self._options = self._options.with_changes(**changes)
        self._limit = abs(self._options.limit)
        self._batch_size = self._options.batch_size
        self._comment = self._options.comment
        return self

    def sort(self, key_or_list: Any, direction: int | None = None) -> AsyncCursor[_DocumentType]:
        """``sort("a", -1)`` or ``sort([("a", 1), ("b", -1)])`` (PyMongo's forms); a bad or
        empty sort raises here, as in PyMongo (``find(sort=[])`` instead means no sort)."""
        if direction is not None:
            key_or_list = [(key_or_list, direction)]
        return self._change(sort=sort_document(key_or_list))

    def skip(self, skip: int) -> AsyncCursor[_DocumentType]:
        """Skip the first ``skip`` matching documents (``skip`` >= 0, else InvalidArgument); returns
        this cursor, for chaining. Raises InvalidOperation once the cursor has been read from (see
        ``rewind()``)."""
        return self._change(skip=skip)

    def limit(self, limit: int) -> AsyncCursor[_DocumentType]:
        """Return at most ``limit`` documents; 0 means no limit. Returns this cursor, for chaining.

        A negative limit asks for a single batch of at most ``abs(limit)`` documents, the server
        cursor closed after it (CRUD: a negative limit means singleBatch). Once the limit is reached
        the server cursor is killed. Raises InvalidOperation once the cursor has been read from (see
        ``rewind()``).
        """
        return self._change(limit=limit)

    def batch_size(self, batch_size: int) -> AsyncCursor[_DocumentType]:
        """The number of documents per batch the server returns (``find`` and each getMore); 0 (the
        default) leaves it to the server. It changes the number of round trips, not the results.
        Returns this cursor; a negative size raises InvalidArgument. Raises InvalidOperation once
        the cursor has been read from (see ``rewind()``)."""
        return self._change(batch_size=batch_size)

    def hint(self, index: Any) -> AsyncCursor[_DocumentType]:
        """Make the server use the index ``index``: its name (a str), or its keys as PyMongo takes
        them (a list of ``(key, direction)`` pairs, or a mapping); None removes the hint. An index
        that does not exist fails the query with OperationFailure. Returns this cursor. Raises
        InvalidOperation once the cursor has been read from (see ``rewind()``)."""
        return self._change(hint=index)

    def comment(self, comment: Any) -> AsyncCursor[_DocumentType]:
        """Attach ``comment`` (any BSON value) to the ``find`` and its getMores, where it shows in
        the server's logs, profiler and currentOp. Returns this cursor. Raises InvalidOperation once
        the cursor has been read from (see ``rewind()``)."""
        return self._change(comment=comment)

    def max_time_ms(self, max_time_ms: int | None) -> AsyncCursor[_DocumentType]:
        """The server-side time limit of the ``find``, in milliseconds (None: no limit); past it the
        server fails the query with ExecutionTimeout. It does not cover the getMores (see
        ``max_await_time_ms()``). Returns this cursor. Raises InvalidOperation once the cursor has
        been read from (see ``rewind()``)."""
        return self._change(max_time_ms=max_time_ms)

    def max_await_time_ms(self, max_await_time_ms: int | None) -> AsyncCursor[_DocumentType]:
        """How long each getMore of a ``CursorType.TAILABLE_AWAIT`` cursor waits on the server for
        new documents, in milliseconds (None: the server's default, one second). Ignored by other
        cursors. Returns this cursor. Raises InvalidOperation once the cursor has been read from
        (see ``rewind()``)."""
        self._change(max_await_time_ms=max_await_time_ms)
        if self._options.await_data:
            self._max_await_time_ms = max_await_time_ms
        return self

    def collation(self, collation: Mapping[str, Any] | None) -> AsyncCursor[_DocumentType]:
        """Compare strings with ``collation`` (a collation document such as ``{"locale": "fr"}``),
        for the filter and the sort; None removes it. Returns this cursor. Raises InvalidOperation
        once the cursor has been read from (see ``rewind()``)."""
        return self._change(collation=collation)

    def allow_disk_use(self, allow_disk_use: bool) -> AsyncCursor[_DocumentType]:
        """Let the server write temporary files for a sort larger than its memory limit (the
        ``allowDiskUse`` option of ``find``). Returns this cursor. Raises InvalidOperation once the
        cursor has been read from (see ``rewind()``)."""
        return self._change(allow_disk_use=allow_disk_use)

    def max(self, spec: Any) -> AsyncCursor[_DocumentType]:
        """The exclusive upper bound of the index keys to scan: a mapping, or a list of ``(key,
        value)`` pairs, over the keys of the index named by ``hint()`` (which the server requires
        with it). Returns this cursor. Raises InvalidOperation once the cursor has been read from
        (see ``rewind()``)."""
        return self._change(max=dict(spec) if not isinstance(spec, Mapping) else spec)

    def min(self, spec: Any) -> AsyncCursor[_DocumentType]:
        """The inclusive lower bound of the index keys to scan: a mapping, or a list of ``(key,
        value)`` pairs, over the keys of the index named by ``hint()`` (which the server requires
        with it). Returns this cursor. Raises InvalidOperation once the cursor has been read from
        (see ``rewind()``)."""
        return self._change(min=dict(spec) if not isinstance(spec, Mapping) else spec)

    def where(self, code: str) -> AsyncCursor[_DocumentType]:
        """Add a ``$where`` clause to the filter: only documents for which the JavaScript expression
        or function ``code`` is true are returned (replacing an earlier ``$where``). The server
        evaluates it for every document, so it is slow and cannot use an index; prefer query
        operators (or ``$expr``). Returns this cursor. Raises InvalidOperation once the cursor has
        been read from (see ``rewind()``)."""
        self._check_unstarted()
        base = dict(self._filter or {})
        base["$where"] = code
        self._filter = base
        return self

    def clone(self) -> AsyncCursor[_DocumentType]:
        """A new, unstarted cursor with the same options, in the same session."""
        mode = self._timeout_mode if self._timeout_ms is not None else None
        return AsyncCursor(self._collection, self._filter, self._options, self._session, mode)

    def rewind(self) -> AsyncCursor[_DocumentType]:
        """Forget the results: the next read runs ``find`` again (the old cursor is dropped;
        close it first to kill it on the server)."""
        self._buffer.clear()
        self._id = None
        self._address = None
        self._killed = False
        self._started = False
        self._retrieved = 0
        return self

    async def explain(self, verbosity: str | None = None) -> Mapping[str, Any]:
        """The server's explain output for this cursor's ``find`` (the cursor is not used).

        Under timeoutMS (the collection's, or an enclosing ``asyncmongo.timeout()`` block)
        the ``explain`` command carries what is left of it as its own maxTimeMS (CSOT
        "Explain"); a ``max_time_ms()`` of the cursor stays on the explained ``find``."""
        op: Explain[Mapping[str, Any]] = Explain(self._find(), verbosity)
        result = await self._runner._run(op, self._session, timeout_ms=self._timeout_ms)
        return result

    async def distinct(self, key: str) -> list[Any]:
        """The distinct values of ``key`` among the documents this cursor would return."""
        result: list[Any] = await self._collection.distinct(
            key, self._filter or {}, session=self._session, comment=self._options.comment
        )
        return result


def _checked_mode(
    mode: TimeoutMode | str | None, timeout_ms: int | None, options: FindOptions
) -> TimeoutMode:
    """A find cursor's timeoutMode; tailable awaitData: maxAwaitTimeMS < timeoutMS (CSOT)."""
    checked = timeout_mode_of(mode, timeout_ms, tailable=options.tailable)
    if options.await_data:
        _check_max_await(options.max_await_time_ms, timeout_ms)
    return checked


def _check_max_await(wait: int | None, timeout_ms: int | None) -> None:
    """CSOT "Tailable awaitData Cursors": maxAwaitTimeMS must be less than timeoutMS."""
    if timeout_ms and wait is not None and wait >= timeout_ms:
        raise InvalidArgument(
            f"max_await_time_ms ({wait}) must be less than timeoutMS ({timeout_ms})"
        )


def find_options(
    projection: Any = None,
    *,
    skip: int = 0,
    limit: int = 0,
    no_cursor_timeout: bool = False,
    cursor_type: CursorType | int = CursorType.NON_TAILABLE,
    sort: Any = None,
    allow_partial_results: bool = False,
    batch_size: int = 0,
    collation: Mapping[str, Any] | None = None,
    hint: Any = None,
    max_time_ms: int | None = None,
    max_await_time_ms: int | None = None,
    max: Mapping[str, Any] | None = None,
    min: Mapping[str, Any] | None = None,
    return_key: bool | None = None,
    show_record_id: bool | None = None,
    comment: Any = None,
    allow_disk_use: bool | None = None,
    let: Mapping[str, Any] | None = None,
    single_batch: bool = False,
    raw_data: bool | None = None,
) -> FindOptions:
    """PyMongo's ``find`` keywords as :class:`FindOptions` (False flags are not sent)."""
    if type(cursor_type) is not CursorType:
        try:
            cursor_type = CursorType(cursor_type)
        except ValueError:
            raise InvalidArgument(f"not a CursorType: {cursor_type!r}") from None
    return FindOptions(
        projection=projection_document(projection),
        sort=sort or None,  # PyMongo: an empty sort (``[]``, ``{}``) is no sort
        skip=skip,
        limit=limit,
        batch_size=batch_size,
        hint=hint,
        collation=collation,
        comment=comment,
        let=let,
        max_time_ms=max_time_ms,
        max_await_time_ms=max_await_time_ms,
        allow_disk_use=allow_disk_use,
        cursor_type=cursor_type,
        no_cursor_timeout=no_cursor_timeout or None,
        allow_partial_results=allow_partial_results or None,
        return_key=return_key or None,
        show_record_id=show_record_id or None,
        max=max,
        min=min,
        single_batch=single_batch,
        raw_data=raw_data,
    )


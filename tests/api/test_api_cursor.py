"""Cursor bookkeeping over a scripted runner: batches, limits, kills (no server)."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.bson import CodecOptions
from asyncmongo.core.operations.common import Namespace
from asyncmongo.core.operations.cursors import CursorPage, GetMore, KillCursors
from asyncmongo.core.operations.find import (
    DEFAULT_FIND_OPTIONS,
    Find,
    FindContext,
    FindOptions,
)
from asyncmongo.core.selection import PRIMARY
from asyncmongo.cursor import AsyncCommandCursor, AsyncCursor
from asyncmongo.errors import InvalidOperation

NS = Namespace("db", "coll")
ADDRESS = ("h", 1)


class ScriptedRunner:
    """Answers find with ``first`` and each getMore with the next of ``more``."""

    def __init__(self, first: CursorPage, more: list[CursorPage]) -> None:
        self.first = first
        self.more = list(more)
        self.ran: list[Any] = []
        self.dropped: list[KillCursors] = []

    async def _run(
        self, op: Any, session: Any = None, operation_id: int | None = None, **timing: Any
    ) -> Any:
        self.ran.append(op)
        if isinstance(op, GetMore):
            return self.more.pop(0)
        if isinstance(op, KillCursors):
            return None
        return self.first

    def _deadline_for(self, timeout_ms: int | None) -> float | None:
        return None  # timeoutMS unset

    def _cursor_dropped(self, kill: KillCursors) -> None:
        self.dropped.append(kill)


class Collection:
    def __init__(self, runner: ScriptedRunner) -> None:
        self.database = type("Db", (), {"client": runner, "name": "db"})()
        self.name = "coll"
        self.codec_options = CodecOptions()
        self.read_preference = PRIMARY
        from asyncmongo.core.concern import ReadConcern

        self.read_concern = ReadConcern()

    def _context_for_find(self) -> FindContext:
        return FindContext(NS, self.read_preference, self.read_concern, self.codec_options)


def page(cursor_id: int, documents: list[Any]) -> CursorPage:
    return CursorPage(cursor_id, NS, documents, address=ADDRESS)


async def test_limit_reached_with_an_open_server_cursor_keeps_the_documents() -> None:
    # 5.0+: a batch that ends exactly at the limit still has a cursor id (find_getmore spec)
    runner = ScriptedRunner(page(5, [1, 2]), [])
    cursor = AsyncCursor(Collection(runner), None, FindOptions(limit=2))
    assert await cursor.to_list() == [1, 2]
    kills = [op for op in runner.ran if isinstance(op, KillCursors)]
    assert len(kills) == 1 and kills[0].cursor_id == 5
    assert not cursor.alive


async def test_get_more_asks_for_what_the_limit_leaves() -> None:
    runner = ScriptedRunner(page(5, [1, 2]), [page(5, [3, 4]), page(5, [5])])
    cursor = AsyncCursor(Collection(runner), None, FindOptions(limit=5, batch_size=2))
    assert [doc async for doc in cursor] == [1, 2, 3, 4, 5]
    get_mores = [op for op in runner.ran if isinstance(op, GetMore)]
    assert [g.batch_size for g in get_mores] == [2, 1]
    assert all(g.target.address == ADDRESS for g in get_mores)
    assert isinstance(runner.ran[0], Find)


async def test_server_returning_more_than_the_limit_is_cut() -> None:
    runner = ScriptedRunner(page(0, [1, 2, 3]), [])
    cursor = AsyncCursor(Collection(runner), None, FindOptions(limit=2))
    assert await cursor.to_list() == [1, 2]


async def test_to_list_length_and_next() -> None:
    runner = ScriptedRunner(page(5, [1, 2, 3]), [page(0, [4])])
    cursor = AsyncCursor(Collection(runner), None, FindOptions())
    assert await cursor.to_list(2) == [1, 2]
    assert await cursor.next() == 3
    assert await cursor.to_list(5) == [4]
    assert not cursor.alive
    assert not [op for op in runner.ran if isinstance(op, KillCursors)]


async def test_to_list_length_ends_inside_a_later_batch() -> None:
    runner = ScriptedRunner(page(5, [1, 2, 3]), [page(0, [4, 5, 6])])
    cursor = AsyncCursor(Collection(runner), None, FindOptions())
    assert await cursor.to_list(4) == [1, 2, 3, 4]
    assert await cursor.to_list(1) == [5]
    assert await cursor.to_list() == [6]
    assert await cursor.to_list() == []


async def test_cursors_of_find_filter_share_the_default_options_untouched() -> None:
    runner = ScriptedRunner(page(0, []), [])
    collection = Collection(runner)
    user_filter = {"a": 1}
    first = AsyncCursor(collection, user_filter).limit(2).where("true")
    second = AsyncCursor(collection, user_filter)
    assert second._options is DEFAULT_FIND_OPTIONS and DEFAULT_FIND_OPTIONS.limit == 0
    assert user_filter == {"a": 1}  # where() built a new filter
    await first.to_list()
    await second.to_list()
    sent = [op.build(None).document for op in runner.ran if isinstance(op, Find)]
    assert sent == [
        {"find": "coll", "filter": {"a": 1, "$where": "true"}, "limit": 2},
        {"find": "coll", "filter": {"a": 1}},
    ]


async def test_close_kills_once_and_modifiers_refuse_after_start() -> None:
    runner = ScriptedRunner(page(5, [1]), [])
    cursor = AsyncCursor(Collection(runner), None, FindOptions())
    assert await cursor.next() == 1
    await cursor.close()
    await cursor.close()
    assert len([op for op in runner.ran if isinstance(op, KillCursors)]) == 1
    with pytest.raises(InvalidOperation):
        cursor.limit(3)
    assert "closed" in repr(cursor)


async def test_command_cursor_starts_with_its_first_batch() -> None:
    runner = ScriptedRunner(page(0, []), [page(0, [3])])
    cursor = AsyncCommandCursor(runner, page(9, [1, 2]), CodecOptions(), batch_size=2)
    assert cursor.cursor_id == 9 and cursor.address == ADDRESS
    assert await cursor.to_list() == [1, 2, 3]
    assert [op.batch_size for op in runner.ran if isinstance(op, GetMore)] == [2]


async def test_tailable_await_cursor_waits_with_max_await_time() -> None:
    from asyncmongo.cursor import CursorType, find_options

    runner = ScriptedRunner(page(5, [1]), [page(5, []), page(5, [2])])
    options = find_options(cursor_type=CursorType.TAILABLE_AWAIT, max_await_time_ms=50)
    cursor = AsyncCursor(Collection(runner), None, options)
    assert await cursor.next() == 1
    find = runner.ran[0]
    assert isinstance(find, Find)
    command = find.build(_Conn()).document
    assert command["tailable"] is True and command["awaitData"] is True
    assert "maxTimeMS" not in command  # maxAwaitTimeMS goes on getMore only
    # an empty batch: the cursor lives on, and next() (unlike try_next) waits for more
    assert await cursor.next() == 2
    assert cursor.alive
    get_mores = [op for op in runner.ran if isinstance(op, GetMore)]
    assert [g.max_time_ms for g in get_mores] == [50, 50]
    assert not [op for op in runner.ran if isinstance(op, KillCursors)]


class _Conn:
    max_wire_version = 21
    max_bson_object_size = 16 * 1024 * 1024
    max_message_size_bytes = 48_000_000
    max_write_batch_size = 100_000


async def test_try_next_returns_none_while_a_tailable_cursor_is_empty() -> None:
    runner = ScriptedRunner(page(0, []), [page(9, []), page(9, [7])])
    cursor = AsyncCommandCursor(runner, page(9, []), CodecOptions())
    assert await cursor.try_next() is None
    assert cursor.alive
    assert await cursor.try_next() == 7


async def test_a_cursor_dropped_while_open_hands_its_kill_cursors_to_the_client() -> None:
    runner = ScriptedRunner(page(9, [1, 2]), [])
    cursor = AsyncCommandCursor(runner, page(9, [1, 2]), CodecOptions())
    assert await cursor.next() == 1
    del cursor  # the server still holds cursor 9
    (kill,) = runner.dropped
    assert (kill.cursor_id, kill.target.address, kill.namespace) == (9, ADDRESS, NS)
    assert not [op for op in runner.ran if isinstance(op, KillCursors)]  # nothing awaited


async def test_a_cursor_exhausted_closed_or_never_run_hands_nothing() -> None:
    runner = ScriptedRunner(page(0, [1]), [])
    exhausted = AsyncCommandCursor(runner, page(0, [1]), CodecOptions())
    assert await exhausted.to_list() == [1]
    closed = AsyncCommandCursor(runner, page(9, [1, 2]), CodecOptions())
    await closed.close()
    never_run = AsyncCursor(Collection(runner), None, FindOptions())
    del exhausted, closed, never_run
    assert runner.dropped == []

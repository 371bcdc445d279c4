"""Tailable cursors end to end: find with cursor_type TAILABLE / TAILABLE_AWAIT on a capped
collection of the simulated server, a consumer that keeps receiving documents inserted after
it started, awaitData timing (max_await_time_ms as getMore's maxTimeMS), and close."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient, CommandStartedEvent, CursorType
from asyncmongo.errors import OperationFailure
from asyncmongo.testing import Standalone


@pytest.fixture
async def setup() -> AsyncIterator[tuple[Any, list[CommandStartedEvent]]]:
    events: list[CommandStartedEvent] = []

    def listen(event: Any) -> None:
        if isinstance(event, CommandStartedEvent):
            events.append(event)

    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[listen]) as client:
            db = client["tail"]
            await db.create_collection("capped", capped=True, size=4096, max=3)
            yield db, events


def started(events: list[CommandStartedEvent], name: str) -> list[Any]:
    return [e.command for e in events if e.command_name == name]


async def test_a_tailing_consumer_receives_documents_inserted_after_it_started(
        setup: tuple[Any, list[CommandStartedEvent]]) -> None:
    db, events = setup
    await db.capped.insert_one({"_id": 0})
    cursor = db.capped.find(cursor_type=CursorType.TAILABLE_AWAIT, max_await_time_ms=50)
    received: list[int] = []

    async def consume() -> None:
        async for document in cursor:
            received.append(document["_id"])
            if len(received) == 4:
                break

    consumer = asyncio.create_task(consume())
    for i in range(1, 4):
        await asyncio.sleep(0.08)  # past max_await_time_ms: empty batches in between
        await db.capped.insert_one({"_id": i})
    await asyncio.wait_for(consumer, 5)
    assert received == [0, 1, 2, 3]
    find = started(events, "find")[0]
    assert find["tailable"] is True and find["awaitData"] is True and "maxTimeMS" not in find
    get_mores = started(events, "getMore")
    assert get_mores and all(g["maxTimeMS"] == 50 for g in get_mores)
    assert started(events, "killCursors")  # leaving the loop early kills the cursor
    assert not cursor.alive


async def test_await_data_waits_on_the_server_then_returns_an_empty_batch(
        setup: tuple[Any, list[CommandStartedEvent]]) -> None:
    db, _ = setup
    await db.capped.insert_many([{"_id": 1}, {"_id": 2}])
    cursor = db.capped.find(cursor_type=CursorType.TAILABLE_AWAIT, max_await_time_ms=200)
    assert [await cursor.next(), await cursor.next()] == [{"_id": 1}, {"_id": 2}]
    began = time.monotonic()
    assert await cursor.try_next() is None  # one getMore, which waited 200 ms for data
    waited = time.monotonic() - began
    assert 0.18 <= waited < 1.0
    assert cursor.alive and cursor.cursor_id

    async def insert_later() -> None:
        await asyncio.sleep(0.05)
        await db.capped.insert_one({"_id": 3})

    inserter = asyncio.create_task(insert_later())
    began = time.monotonic()
    assert await cursor.try_next() == {"_id": 3}  # the waiting getMore answers at once
    assert time.monotonic() - began < 0.18
    await inserter
    await cursor.close()
    assert not cursor.alive


async def test_tailable_without_await_data_polls_and_next_keeps_waiting(
        setup: tuple[Any, list[CommandStartedEvent]]) -> None:
    db, events = setup
    await db.capped.insert_one({"_id": 1})
    cursor = db.capped.find(cursor_type=CursorType.TAILABLE)
    assert await cursor.next() == {"_id": 1}
    waiting = asyncio.create_task(cursor.next())
    await asyncio.sleep(0.25)
    assert not waiting.done()  # empty batches: next() does not end a live tailable cursor
    await db.capped.insert_one({"_id": 2})
    assert await asyncio.wait_for(waiting, 2) == {"_id": 2}
    assert all("maxTimeMS" not in g for g in started(events, "getMore"))
    await cursor.close()
    assert started(events, "killCursors")


async def test_closing_ends_a_waiting_loop_and_the_capped_collection_keeps_max(
        setup: tuple[Any, list[CommandStartedEvent]]) -> None:
    db, _ = setup
    await db.capped.insert_many([{"_id": i} for i in range(5)])
    assert [d["_id"] async for d in db.capped.find()] == [2, 3, 4]  # max 3: oldest removed
    cursor = db.capped.find(cursor_type=CursorType.TAILABLE_AWAIT, max_await_time_ms=30)
    seen: list[int] = []

    async def consume() -> None:
        async for document in cursor:
            seen.append(document["_id"])

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0.1)
    await cursor.close()
    await asyncio.wait_for(consumer, 2)  # the loop ends once the cursor is closed
    assert seen == [2, 3, 4]


async def test_tailable_on_an_empty_capped_collection_is_closed_at_once(
        setup: tuple[Any, list[CommandStartedEvent]]) -> None:
    db, _ = setup
    cursor = db.capped.find(cursor_type=CursorType.TAILABLE_AWAIT)
    assert await cursor.to_list() == []  # mongod keeps no tailable cursor on no records
    assert not cursor.alive


async def test_tailable_on_a_plain_collection_fails_as_on_mongod(
        setup: tuple[Any, list[CommandStartedEvent]]) -> None:
    db, _ = setup
    await db.plain.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as failure:
        await db.plain.find(cursor_type=CursorType.TAILABLE).to_list()
    assert failure.value.code == 2
    assert "tailable cursor requested on non capped collection" in str(failure.value)


async def test_capped_position_lost_when_the_cursor_falls_behind(
        setup: tuple[Any, list[CommandStartedEvent]]) -> None:
    db, _ = setup
    await db.capped.insert_one({"_id": 0})
    cursor = db.capped.find(cursor_type=CursorType.TAILABLE)
    assert await cursor.next() == {"_id": 0}
    await db.capped.insert_many([{"_id": i} for i in range(1, 5)])  # _id 0 rolls out
    with pytest.raises(OperationFailure) as failure:
        await cursor.try_next()
    assert failure.value.code == 136  # CappedPositionLost


async def test_a_tailable_find_run_through_cursor_command_also_waits_for_more(
        setup: tuple[Any, list[CommandStartedEvent]]) -> None:
    db, events = setup
    await db.capped.insert_one({"_id": 0})
    cursor = await db.cursor_command(
        {"find": "capped", "tailable": True, "awaitData": True}, max_await_time_ms=50
    )
    received: list[int] = []

    async def consume() -> None:
        async for document in cursor:  # an empty batch does not end it: it waits
            received.append(document["_id"])
            if len(received) == 3:
                break

    consumer = asyncio.create_task(consume())
    for i in range(1, 3):
        await asyncio.sleep(0.08)
        await db.capped.insert_one({"_id": i})
    await asyncio.wait_for(consumer, 5)
    assert received == [0, 1, 2]
    assert all(g["maxTimeMS"] == 50 for g in started(events, "getMore"))
    assert not cursor.alive

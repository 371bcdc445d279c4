"""Cancelling API calls at their awaits leaves no connection checked out and the client
working (DESIGN: cancellation is normal in async code)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient, CommandStartedEvent
from asyncmongo.testing import Standalone


def in_use(client: AsyncMongoClient) -> int:
    return sum(s.pool.statistics().in_use for s in client._topology_runtime.servers.values())


async def blocked(server: Standalone, command: str) -> Any:
    return server.fail_point(
        {"times": 1}, failCommands=[command], blockConnection=True, blockTimeMS=300
    )


@pytest.mark.parametrize(
    "call",
    ["find_one", "insert_one", "count_documents", "aggregate", "bulk_write", "to_list"],
)
async def test_cancelled_operation_gives_its_connection_back(call: str) -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            coll = client.db.coll
            await coll.insert_many([{"_id": i} for i in range(5)])
            from asyncmongo import InsertOne

            operations: dict[str, tuple[str, Callable[[], Coroutine[Any, Any, Any]]]] = {
                "find_one": ("find", lambda: coll.find_one({})),
                "insert_one": ("insert", lambda: coll.insert_one({})),
                "count_documents": ("aggregate", lambda: coll.count_documents({})),
                "aggregate": ("aggregate", lambda: coll.aggregate([])),
                "bulk_write": ("insert", lambda: coll.bulk_write([InsertOne({})])),
                "to_list": ("find", lambda: coll.find().to_list()),
            }
            command, make = operations[call]
            with await blocked(server, command):
                task = asyncio.create_task(make())
                await asyncio.sleep(0.05)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            assert in_use(client) == 0
            assert await coll.count_documents({}) >= 5  # the client still works


async def test_cancelled_get_more_leaves_the_pool_clean() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            coll = client.db.coll
            await coll.insert_many([{"_id": i} for i in range(10)])
            cursor = coll.find(batch_size=2)
            assert await cursor.next() is not None
            with await blocked(server, "getMore"):
                task = asyncio.create_task(cursor.to_list())
                await asyncio.sleep(0.05)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            assert in_use(client) == 0
            await cursor.close()
            kills = [
                e
                for e in events
                if isinstance(e, CommandStartedEvent) and e.command_name == "killCursors"
            ]
            assert len(kills) == 1
            assert await coll.count_documents({}) == 10

"""PyMongo (the independent client) against the simulator's capped collections with tailable
cursors, views, time series and find's returnKey/showRecordId: it must accept every reply."""

from __future__ import annotations

import asyncio
import datetime

import pytest
from pymongo import AsyncMongoClient, CursorType
from pymongo.errors import OperationFailure

from asyncmongo.testing.deployment import Standalone
from tests.support.pymongo_peer import PYMONGO_PEER_MARKS, collect_pymongo_leaks  # noqa: F401

pytestmark = [pytest.mark.timeout(60), *PYMONGO_PEER_MARKS]


async def test_pymongo_tails_a_capped_collection() -> None:
    async with Standalone() as server:
        client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(server.uri)
        try:
            db = client.db
            await db.create_collection("cap", capped=True, size=4096, max=10)
            await db.cap.insert_one({"_id": 0})
            cursor = db.cap.find(cursor_type=CursorType.TAILABLE_AWAIT).max_await_time_ms(50)
            assert await cursor.next() == {"_id": 0}
            with pytest.raises(StopAsyncIteration):
                await cursor.next()  # one getMore that waited: an empty batch, id kept
            assert cursor.alive
            await db.cap.insert_one({"_id": 1})
            assert await cursor.next() == {"_id": 1}
            await cursor.close()
            with pytest.raises(OperationFailure) as failure:
                await db.plain_coll.insert_one({"_id": 1})
                await db.plain_coll.find(cursor_type=CursorType.TAILABLE).to_list()
            assert failure.value.code == 2
        finally:
            await client.close()


async def test_pymongo_reads_views_and_time_series() -> None:
    async with Standalone() as server:
        client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(server.uri)
        try:
            db = client.db
            await db.c.insert_many([{"_id": i, "x": i} for i in range(1, 4)])
            await db.create_collection("v", viewOn="c", pipeline=[{"$match": {"x": {"$gt": 1}}}])
            assert await db.v.estimated_document_count() == 2
            assert await db.v.count_documents({}) == 2
            assert [d["_id"] async for d in db.v.find()] == [2, 3]
            with pytest.raises(OperationFailure) as failure:
                await db.v.insert_one({"_id": 9})
            assert failure.value.code == 166
            await db.create_collection("ts", timeseries={"timeField": "t"})
            when = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC).replace(tzinfo=None)
            await db.ts.insert_many([{"_id": 1, "t": when}, {"_id": 1, "t": when}])
            assert await db.ts.count_documents({}) == 2
            kinds = {c["name"]: c["type"] async for c in await db.list_collections()}
            assert kinds == {"c": "collection", "v": "view", "ts": "timeseries"}
            keys = await db.c.find({}, sort=[("_id", 1)], return_key=True).to_list()
            assert keys == [{"_id": 1}, {"_id": 2}, {"_id": 3}]
            shown = await db.c.find({}, show_record_id=True).to_list()
            assert all(isinstance(d["$recordId"], int) for d in shown)
        finally:
            await client.close()


async def test_pymongo_awaitdata_getmore_returns_when_a_document_arrives() -> None:
    async with Standalone() as server:
        client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(server.uri)
        try:
            db = client.db
            await db.create_collection("cap", capped=True, size=4096)
            await db.cap.insert_one({"_id": 0})
            cursor = db.cap.find(cursor_type=CursorType.TAILABLE_AWAIT).max_await_time_ms(2000)
            assert await cursor.next() == {"_id": 0}
            loop = asyncio.get_running_loop()

            async def insert_soon() -> None:
                await asyncio.sleep(0.1)
                await db.cap.insert_one({"_id": 1})

            task = asyncio.create_task(insert_soon())
            began = loop.time()
            assert await cursor.next() == {"_id": 1}
            assert loop.time() - began < 1.0  # well before the 2 s await time
            await task
            await cursor.close()
        finally:
            await client.close()

"""PyMongo's change streams against the simulated replica set: the independent client
accepts the simulator's change events, postBatchResumeToken and resume behaviour."""

from __future__ import annotations

import pytest

from asyncmongo.testing import ReplicaSet

pymongo = pytest.importorskip("pymongo")


async def test_pymongo_watches_and_resumes() -> None:
    async with ReplicaSet(members=2) as rs:
        client = pymongo.AsyncMongoClient(rs.uri, serverSelectionTimeoutMS=3000)
        try:
            coll = client.db.coll
            async with await coll.watch(max_await_time_ms=50) as stream:
                await coll.insert_one({"_id": 1})
                await coll.update_one({"_id": 1}, {"$set": {"x": 1}})
                first = await stream.next()
                with rs.fail_point({"times": 1}, failCommands=["getMore"],
                                   closeConnection=True):
                    await coll.insert_one({"_id": 2})
                    rest = [await stream.next(), await stream.next()]
                assert stream.resume_token == rest[-1]["_id"]
            assert [c["operationType"] for c in [first, *rest]] == [
                "insert", "update", "insert"]
            assert rest[0]["updateDescription"]["updatedFields"] == {"x": 1}
            async with await client.db.watch(start_after=first["_id"]) as again:
                assert (await again.next())["operationType"] == "update"
        finally:
            await client.close()

"""PyMongo (the independent client) against the simulator's session features: snapshot reads
see the session's first read time after later writes; $listLocalSessions lists the sessions
PyMongo used; onPrimaryTransactionalWrite closes the connection after the write is applied
and PyMongo's retry is answered from the retryable-write bookkeeping (applied once)."""

from __future__ import annotations

from typing import Any

import pytest
from pymongo import AsyncMongoClient

from asyncmongo.testing.deployment import ReplicaSet
from asyncmongo.testing.failpoint import FailPointMode
from tests.support.pymongo_peer import PYMONGO_PEER_MARKS, collect_pymongo_leaks  # noqa: F401

pytestmark = [pytest.mark.timeout(60), *PYMONGO_PEER_MARKS]


def _client(uri: str) -> AsyncMongoClient[dict[str, Any]]:
    return AsyncMongoClient(uri, serverSelectionTimeoutMS=5000, heartbeatFrequencyMS=500)


async def test_snapshot_session_keeps_its_read_time() -> None:
    async with ReplicaSet(3) as rs:
        client = _client(rs.uri)
        try:
            coll = client.db.coll
            await coll.insert_one({"_id": 1, "x": 1})
            async with client.start_session(snapshot=True) as session:
                assert await coll.find_one({"_id": 1}, session=session) == {"_id": 1, "x": 1}
                time = session._snapshot_time
                assert time is not None
                await coll.update_one({"_id": 1}, {"$inc": {"x": 1}})
                await coll.insert_one({"_id": 2, "x": 2})
                assert [d async for d in coll.find({}, session=session)] == [{"_id": 1, "x": 1}]
                assert await coll.distinct("x", session=session) == [1]
                assert await coll.count_documents({}, session=session) == 1
            assert await coll.count_documents({}) == 2
        finally:
            await client.close()


async def test_list_local_sessions_and_primary_write_fail_point() -> None:
    async with ReplicaSet(3) as rs:
        client = _client(rs.uri)
        try:
            await client.admin.command({"configureFailPoint": "onPrimaryTransactionalWrite",
                                        "mode": {"times": 1}})
            result = await client.db.coll.insert_one({"_id": 1})  # closed after applying
            assert result.inserted_id == 1
            assert await client.db.coll.count_documents({}) == 1  # applied exactly once
            assert rs.primary is not None
            point = rs.primary.fail_points["onPrimaryTransactionalWrite"]
            assert point.mode is FailPointMode.OFF  # it fired (times: 1 used up)
            cursor = await client.admin.aggregate([{"$listLocalSessions": {}}])
            sessions = [d async for d in cursor]
            assert sessions and all({"id", "uid"} <= set(d["_id"]) for d in sessions)
        finally:
            await client.close()

"""A cursor opened in an explicit session reports it, and so does its clone."""

from __future__ import annotations

from asyncmongo import AsyncMongoClient
from asyncmongo.testing import ReplicaSet


async def test_cursor_and_clone_keep_their_session() -> None:
    async with ReplicaSet(members=1) as rs, AsyncMongoClient(rs.uri) as client:
        coll = client.db.things
        await coll.insert_many([{"i": i} for i in range(3)])
        async with client.start_session() as session:
            cursor = coll.find({}, session=session).sort("i", 1)
            assert cursor.session is session
            clone = cursor.clone()
            assert clone.session is session
            assert [d["i"] for d in await clone.to_list()] == [0, 1, 2]
        assert coll.find({}).session is None

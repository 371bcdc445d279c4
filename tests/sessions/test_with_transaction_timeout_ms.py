"""with_transaction under timeoutMS, end to end against asyncmongo.testing (CSOT spec,
"Convenient Transactions API"): the session's timeoutMS bounds the whole call, including an
operation inside the callback that the server holds up, instead of each operation getting
a fresh timeoutMS."""

from __future__ import annotations

import time
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.errors import MongoError
from asyncmongo.testing import ReplicaSet

pytestmark = pytest.mark.timeout(30)


async def test_session_timeout_ms_bounds_the_whole_with_transaction_call() -> None:
    async with ReplicaSet(members=1) as rs:
        client = AsyncMongoClient(rs.uri)
        try:
            await client.db.c.insert_one({"_id": 0})
            await client.admin.command(
                {
                    "configureFailPoint": "failCommand",
                    "mode": {"times": 1},
                    "data": {
                        "failCommands": ["find"],
                        "blockConnection": True,
                        "blockTimeMS": 3000,
                    },
                }
            )
            calls = 0

            async def callback(session: Any) -> None:
                nonlocal calls
                calls += 1
                await client.db.c.insert_one({"_id": calls}, session=session)
                await client.db.c.find_one({"_id": 0}, session=session)  # held for 3 s

            began = time.monotonic()
            async with client.start_session(default_timeout_ms=400) as session:
                with pytest.raises(MongoError) as raised:
                    await session.with_transaction(callback)
                assert not session.in_transaction
            elapsed = time.monotonic() - began
            assert raised.value.timeout
            assert elapsed < 2.0  # not the 3 s the server held the find
            assert await client.db.c.count_documents({}) == 1  # the transaction was aborted
        finally:
            await client.close()


async def test_default_timeout_ms_bounds_commit_transaction() -> None:
    async with ReplicaSet(members=1) as rs:
        client = AsyncMongoClient(rs.uri)
        try:
            await client.db.c.insert_one({"_id": 0})
            async with client.start_session(default_timeout_ms=300) as session:
                session.start_transaction()
                await client.db.c.insert_one({"_id": 1}, session=session)
                await client.admin.command(
                    {
                        "configureFailPoint": "failCommand",
                        "mode": {"times": 2},
                        "data": {
                            "failCommands": ["commitTransaction"],
                            "blockConnection": True,
                            "blockTimeMS": 3000,
                        },
                    }
                )
                began = time.monotonic()
                with pytest.raises(MongoError) as raised:
                    await session.commit_transaction()
                elapsed = time.monotonic() - began
                assert raised.value.timeout
                assert elapsed < 2.0  # the session's 300 ms, not the server's 3 s
                assert session._session_deadline is None  # only while the commit ran
        finally:
            await client.close()

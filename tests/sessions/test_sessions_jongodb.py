"""Transactions against jongodb, an independent MongoDB-compatible server: what commits is
visible, what aborts is not, and with_transaction commits its callback's writes. Each test
uses its own collection (jongodb has no ``drop``)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from tests.support.jongodb import jongodb_uri  # noqa: F401 - the fixture

pytestmark = [pytest.mark.jongodb, pytest.mark.timeout(60)]


def _name() -> str:
    return f"txn_{uuid.uuid4().hex[:12]}"


async def test_commit_and_abort_on_jongodb(jongodb_uri: str) -> None:  # noqa: F811
    async with AsyncMongoClient(jongodb_uri) as client:
        coll = client.sessions_tests[_name()]
        await coll.insert_one({"_id": 0})
        async with client.start_session() as session:
            session.start_transaction()
            await coll.insert_one({"_id": 1}, session=session)
            await session.commit_transaction()
            session.start_transaction()
            await coll.insert_one({"_id": 2}, session=session)
            await session.abort_transaction()
        assert sorted(d["_id"] for d in await coll.find({}).to_list()) == [0, 1]


async def test_with_transaction_on_jongodb(jongodb_uri: str) -> None:  # noqa: F811
    async with AsyncMongoClient(jongodb_uri) as client:
        coll = client.sessions_tests[_name()]

        async def callback(session: Any) -> int:
            await coll.insert_one({"_id": "a"}, session=session)
            await coll.update_one({"_id": "a"}, {"$set": {"x": 1}}, session=session)
            return 7

        async with client.start_session() as session:
            assert await session.with_transaction(callback) == 7
        assert await coll.find({}).to_list() == [{"_id": "a", "x": 1}]


async def test_causal_session_on_jongodb(jongodb_uri: str) -> None:  # noqa: F811
    async with AsyncMongoClient(jongodb_uri) as client:
        coll = client.sessions_tests[_name()]
        async with client.start_session() as session:
            await coll.insert_one({"_id": 1}, session=session)
            assert await coll.find_one({"_id": 1}, session=session) == {"_id": 1}

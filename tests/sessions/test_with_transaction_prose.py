"""Convenient transactions API prose test "Retry Backoff is Enforced", against
asyncmongo.testing: 13 commitTransaction failures (NoSuchTransaction, a
TransientTransactionError) with the jitter at 0 and then at 1; the second run is slower by
the sum of the 13 backoffs (about 2.3 s), within half a second."""

from __future__ import annotations

import time
from typing import Any

import pytest

import asyncmongo.sessions.with_transaction as wt
from asyncmongo import AsyncMongoClient
from asyncmongo.testing import ReplicaSet

pytestmark = pytest.mark.timeout(60)


async def _timed_run(client: AsyncMongoClient) -> float:
    await client.admin.command(
        {
            "configureFailPoint": "failCommand",
            "mode": {"times": 13},
            "data": {"failCommands": ["commitTransaction"], "errorCode": 251},
        }
    )

    async def callback(session: Any) -> None:
        await client.db.c.insert_one({}, session=session)

    began = time.monotonic()
    async with client.start_session() as session:
        await session.with_transaction(callback)
    return time.monotonic() - began


async def test_retry_backoff_is_enforced(monkeypatch: pytest.MonkeyPatch) -> None:
    async with ReplicaSet(members=1) as rs:
        client = AsyncMongoClient(rs.uri)
        try:
            await client.db.c.insert_one({})  # connect and create the collection first
            monkeypatch.setattr(wt, "jitter", lambda: 0.0)
            no_backoff = await _timed_run(client)
            monkeypatch.setattr(wt, "jitter", lambda: 1.0)
            with_backoff = await _timed_run(client)
            assert await client.db.c.count_documents({}) == 3
        finally:
            await client.close()
    expected = sum(min(wt.BACKOFF_INITIAL_S * 1.5**n, wt.BACKOFF_MAX_S) for n in range(1, 14))
    assert expected == pytest.approx(2.3, abs=0.1)
    assert abs(with_backoff - (no_backoff + expected)) < 0.5

"""CSOT "Sessions": which timeout ends a session (end_session's abortTransaction) and the
client's endSessions on close, against asyncmongo.testing.

Precedence for commitTransaction/abortTransaction outside with_transaction: the operation's
own timeout (an ``asyncmongo.timeout()`` block), then the session's defaultTimeoutMS (0: no
limit), then the client's timeoutMS. Prose test 9 (each of the three alone) is in
tests/api/test_csot_prose.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import asyncmongo
from asyncmongo import AsyncMongoClient, CommandFailedEvent, CommandStartedEvent
from asyncmongo.errors import MongoError
from asyncmongo.testing import ReplicaSet

pytestmark = pytest.mark.timeout(60)


def of(events: list[Any], kind: type, name: str) -> list[Any]:
    return [e for e in events if isinstance(e, kind) and e.command_name == name]


async def end_in_transaction(client: AsyncMongoClient, rs: ReplicaSet, block_ms: int,
                             timeout_s: float | None = None, **session: Any) -> float:
    """Start a transaction, write in it, end the session with the abort held ``block_ms``;
    how long end_session took."""
    async with AsyncMongoClient(rs.uri) as internal:
        await internal.db.create_collection("coll")
    s = client.start_session(**session)
    s.start_transaction()
    await client.db.coll.insert_one({"x": 1}, session=s)
    with rs.fail_point({"times": 1}, failCommands=["abortTransaction"], blockConnection=True,
                       blockTimeMS=block_ms):
        began = time.monotonic()
        if timeout_s is None:
            await s.end_session()
        else:
            with asyncmongo.timeout(timeout_s):
                await s.end_session()
        elapsed = time.monotonic() - began
    assert s.has_ended
    return elapsed


async def test_default_timeout_ms_0_lifts_the_clients_timeout_ms() -> None:
    events: list[Any] = []
    async with ReplicaSet(members=1) as rs, AsyncMongoClient(
            rs.uri, timeoutMS=100, event_listeners=[events.append]) as client:
        await end_in_transaction(client, rs, 300, default_timeout_ms=0)
    (abort,) = of(events, CommandStartedEvent, "abortTransaction")
    assert "maxTimeMS" not in abort.command
    assert not of(events, CommandFailedEvent, "abortTransaction")


async def test_the_operations_own_timeout_beats_default_timeout_ms() -> None:
    events: list[Any] = []
    async with ReplicaSet(members=1) as rs, AsyncMongoClient(
            rs.uri, event_listeners=[events.append]) as client:
        elapsed = await end_in_transaction(client, rs, 1000, 0.15, default_timeout_ms=10_000)
    (failure,) = of(events, CommandFailedEvent, "abortTransaction")
    assert isinstance(failure.exception, MongoError) and failure.exception.timeout
    assert elapsed < 0.9


async def test_default_timeout_ms_beats_the_clients_timeout_ms() -> None:
    events: list[Any] = []
    async with ReplicaSet(members=1) as rs, AsyncMongoClient(
            rs.uri, timeoutMS=10_000, event_listeners=[events.append]) as client:
        elapsed = await end_in_transaction(client, rs, 1000, default_timeout_ms=150)
    (abort,) = of(events, CommandStartedEvent, "abortTransaction")
    assert 0 < abort.command["maxTimeMS"] <= 150
    assert of(events, CommandFailedEvent, "abortTransaction")
    assert elapsed < 0.9


async def test_end_sessions_on_close_is_bounded_by_the_clients_timeout_ms() -> None:
    events: list[Any] = []
    async with ReplicaSet(members=1) as rs:
        client = AsyncMongoClient(rs.uri, timeoutMS=150, event_listeners=[events.append])
        await client.db.coll.insert_one({"x": 1})  # a pooled server session to end
        with rs.fail_point({"times": 1}, failCommands=["endSessions"], blockConnection=True,
                           blockTimeMS=1500):
            began = time.monotonic()
            await client.close()
            elapsed = time.monotonic() - began
    (end,) = of(events, CommandStartedEvent, "endSessions")
    assert 0 < end.command["maxTimeMS"] <= 150
    assert elapsed < 1.2  # not the server's 1.5s block

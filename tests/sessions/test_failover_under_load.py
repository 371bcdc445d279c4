"""Failover under load: retryable writes hide a step-down and a member restart.

A simulated 3-member replica set; 100 concurrent tasks insert unique documents (retryable
writes, implicit sessions) while the primary steps down (a new one is elected) and the old
primary is stopped and started again. Afterwards every acknowledged insert is in the store
exactly once, and the number of errors that reached the application is reported (target:
zero). Bounded well under 30 s.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.errors import MongoError
from asyncmongo.testing import ReplicaSet

pytestmark = pytest.mark.timeout(60)

TASKS = 100
INSERTS_PER_TASK = 20


async def _writer(
    coll: object, task: int, acknowledged: list[str], errors: list[BaseException]
) -> None:
    for i in range(INSERTS_PER_TASK):
        key = f"{task}-{i}"
        try:
            await coll.insert_one({"key": key})  # type: ignore[attr-defined]
        except MongoError as exc:
            errors.append(exc)
        else:
            acknowledged.append(key)
        await asyncio.sleep(0.002)


async def _chaos(rs: ReplicaSet) -> None:
    await asyncio.sleep(0.15)
    old = rs.primary
    assert old is not None
    await rs.step_down()
    await asyncio.sleep(0.15)
    await old.stop()
    await asyncio.sleep(0.2)
    await old.start()


async def test_retryable_inserts_survive_step_down_and_restart() -> None:
    began = time.monotonic()
    async with ReplicaSet(members=3) as rs:
        failed: list[object] = []

        def listen(event: object) -> None:
            if type(event).__name__ == "CommandFailedEvent":
                failed.append(event)

        client = AsyncMongoClient(rs.uri, heartbeatFrequencyMS=500, event_listeners=[listen])
        async with client:
            coll = client.failover.docs
            await coll.insert_one({"key": "warm-up"})
            acknowledged: list[str] = ["warm-up"]
            errors: list[BaseException] = []
            writers = [_writer(coll, task, acknowledged, errors) for task in range(TASKS)]
            await asyncio.gather(_chaos(rs), *writers)
            stored = Counter(doc["key"] for doc in await coll.find({}).to_list())
    elapsed = time.monotonic() - began
    print(
        f"\nfailover under load: {len(acknowledged)} acknowledged inserts, "
        f"{len(errors)} errors surfaced, {len(failed)} failed attempts retried, {elapsed:.1f} s"
    )
    assert failed, "the chaos did not fail a single attempt: nothing was tested"
    assert not errors, f"{len(errors)} errors reached the application: {errors[:3]!r}"
    assert len(acknowledged) == TASKS * INSERTS_PER_TASK + 1
    for key in acknowledged:
        assert stored[key] == 1, f"{key} stored {stored[key]} times"
    assert sum(stored.values()) == len(acknowledged)
    assert elapsed < 30

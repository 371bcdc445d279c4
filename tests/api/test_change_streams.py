"""Change streams end to end against the simulated replica set: every event type, the
fullDocument options, resuming after a network error and a step-down without losing or
repeating an event, startAfter an invalidate, closing and cancelling (no server cursor left),
and the standalone's refusal."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient, CommandStartedEvent
from asyncmongo.change_stream import AsyncChangeStream, is_resumable
from asyncmongo.errors import AutoReconnect, OperationFailure
from asyncmongo.testing import LoadBalanced, ReplicaSet, Standalone

FAST = 50  # ms: how long an empty getMore waits on the server


@pytest.fixture
async def deployment() -> AsyncIterator[tuple[ReplicaSet, Any, list[CommandStartedEvent]]]:
    events: list[CommandStartedEvent] = []

    def listen(event: Any) -> None:
        if isinstance(event, CommandStartedEvent):
            events.append(event)

    async with ReplicaSet(members=2) as rs:
        async with AsyncMongoClient(rs.uri, event_listeners=[listen]) as client:
            yield rs, client, events


def _open_stream_cursors(rs: ReplicaSet | LoadBalanced) -> list[Any]:
    return [c for c in rs.store.cursors.cursors.values() if c.stream is not None]


async def _take(stream: AsyncChangeStream, count: int) -> list[Any]:
    return [await stream.next() for _ in range(count)]


async def test_every_event_type_then_invalidate(deployment: Any) -> None:
    rs, client, _ = deployment
    coll = client.db.coll
    async with await coll.watch(max_await_time_ms=FAST) as stream:
        await coll.insert_one({"_id": 1, "x": 1})
        await coll.update_one({"_id": 1}, {"$set": {"x": 2}, "$unset": {"missing": 1}})
        await coll.replace_one({"_id": 1}, {"y": 1})
        await coll.delete_one({"_id": 1})
        await coll.drop()
        changes = [change async for change in stream]
        assert not stream.alive
    assert [c["operationType"] for c in changes] == [
        "insert", "update", "replace", "delete", "drop", "invalidate"]
    insert, update, replace, delete = changes[:4]
    assert insert["fullDocument"] == {"_id": 1, "x": 1}
    assert insert["ns"] == {"db": "db", "coll": "coll"}
    assert update["updateDescription"] == {"updatedFields": {"x": 2}, "removedFields": [],
                                           "truncatedArrays": []}
    assert replace["fullDocument"] == {"_id": 1, "y": 1}
    assert delete["documentKey"] == {"_id": 1}
    assert all("clusterTime" in c and "wallTime" in c and "_data" in c["_id"] for c in changes)
    assert stream.resume_token == changes[-1]["_id"]
    assert _open_stream_cursors(rs) == []


async def test_full_document_update_lookup(deployment: Any) -> None:
    _, client, _ = deployment
    coll = client.db.coll
    await coll.insert_one({"_id": 1, "x": 1})
    async with await coll.watch(full_document="updateLookup") as stream:
        await coll.update_one({"_id": 1}, {"$inc": {"x": 1}})
        change = await stream.next()
    assert change["fullDocument"] == {"_id": 1, "x": 2}


async def test_database_and_client_streams(deployment: Any) -> None:
    rs, client, events = deployment
    async with await client.db.watch() as on_db, await client.watch() as on_all:
        await client.db.a.insert_one({"_id": 1})
        await client.other.b.insert_one({"_id": 2})
        assert (await on_db.next())["ns"] == {"db": "db", "coll": "a"}
        assert [c["ns"]["db"] for c in await _take(on_all, 2)] == ["db", "other"]
    assert _open_stream_cursors(rs) == []  # killCursors on "$cmd.aggregate" too
    aggregates = [e.command for e in events if e.command_name == "aggregate"]
    assert aggregates[0]["aggregate"] == 1 and aggregates[0]["pipeline"] == [
        {"$changeStream": {}}]
    assert aggregates[1]["pipeline"] == [{"$changeStream": {"allChangesForCluster": True}}]


async def test_resume_after_a_network_error_loses_and_repeats_nothing(deployment: Any) -> None:
    rs, client, events = deployment
    coll = client.db.coll
    stream = await coll.watch(batch_size=2, max_await_time_ms=FAST)
    await coll.insert_many([{"_id": i} for i in range(3)])
    first = await _take(stream, 2)
    with rs.fail_point({"times": 1}, failCommands=["getMore"], closeConnection=True):
        await coll.insert_many([{"_id": i} for i in range(3, 6)])
        rest = await _take(stream, 4)
    await stream.close()
    assert [c["documentKey"]["_id"] for c in first + rest] == list(range(6))
    resume = [e.command for e in events if e.command_name == "aggregate"][-1]
    assert resume["pipeline"][0]["$changeStream"]["resumeAfter"] == first[-1]["_id"]
    # The resumed cursor is killed by close(); the old one's killCursors is best effort
    # (spec: SHOULD) and finds the server's pool cleared by the network error, so the old
    # cursor is left to the server's idle timeout, as with PyMongo.
    left = _open_stream_cursors(rs)
    assert len(left) <= 1 and all(c.stream.position < (4, 0) for c in left)


async def test_resume_after_a_step_down(deployment: Any) -> None:
    rs, client, events = deployment
    coll = client.db.coll
    stream = await coll.watch(max_await_time_ms=FAST)
    await coll.insert_one({"_id": 0})
    assert (await stream.next())["documentKey"] == {"_id": 0}
    old = rs.primary
    new = await rs.step_down()
    assert old is not None and new is not None and new is not old
    # mongod interrupts the old primary's operations with a resumable, labelled error
    old.fail_point({"times": 1}, failCommands=["getMore"], errorCode=11602,
                   errorLabels=["ResumableChangeStreamError"])
    await client.db.coll.insert_one({"_id": 1})
    change = await stream.next()
    await stream.close()
    assert change["documentKey"] == {"_id": 1}
    resume = [e for e in events if e.command_name == "aggregate"][-1]
    assert f"{resume.connection_id[0]}:{resume.connection_id[1]}" == new.host


async def test_a_non_resumable_error_closes_the_stream(deployment: Any) -> None:
    rs, client, events = deployment
    stream = await client.db.coll.watch(max_await_time_ms=FAST)
    with rs.fail_point({"times": 1}, failCommands=["getMore"], errorCode=216):
        with pytest.raises(OperationFailure) as failure:
            await stream.next()
    assert failure.value.code == 216
    assert not stream.alive
    assert len([e for e in events if e.command_name == "aggregate"]) == 1
    assert _open_stream_cursors(rs) == []


async def test_start_after_an_invalidate(deployment: Any) -> None:
    _, client, _ = deployment
    coll = client.db.coll
    await coll.insert_one({"_id": 0})
    async with await coll.watch() as stream:
        await coll.drop()
        assert [c["operationType"] for c in await _take(stream, 2)] == ["drop", "invalidate"]
        token = stream.resume_token
    with pytest.raises(OperationFailure) as refused:
        await coll.watch(resume_after=token)
    assert refused.value.code == 260
    async with await coll.watch(start_after=token) as again:
        await coll.insert_one({"_id": 1})
        change = await again.next()
    assert change["operationType"] == "insert" and change["documentKey"] == {"_id": 1}


async def test_try_next_keeps_the_post_batch_resume_token(deployment: Any) -> None:
    _, client, _ = deployment
    coll = client.db.coll
    async with await coll.watch(max_await_time_ms=FAST) as stream:
        first_token = stream.resume_token
        assert first_token is not None  # the aggregate's postBatchResumeToken
        assert await stream.try_next() is None
        await client.db.other.insert_one({"_id": 1})  # another collection: not in the stream
        assert await stream.try_next() is None
        assert stream.resume_token != first_token  # moved past the other collection's insert
        async with await coll.watch(resume_after=stream.resume_token) as resumed:
            await coll.insert_one({"_id": 2})
            assert (await resumed.next())["documentKey"] == {"_id": 2}


async def test_close_and_cancellation_leave_no_cursor(deployment: Any) -> None:
    rs, client, events = deployment
    stream = await client.db.coll.watch(max_await_time_ms=2000)
    waiter = asyncio.create_task(stream.next())
    await asyncio.sleep(0.1)  # the getMore waits on the server
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert not stream.alive
    assert any(e.command_name == "killCursors" for e in events)
    assert _open_stream_cursors(rs) == []
    async with await client.db.coll.watch() as closed:
        pass
    assert not closed.alive and await closed.try_next() is None
    with pytest.raises(StopAsyncIteration):
        await closed.next()
    assert _open_stream_cursors(rs) == []


async def test_pipeline_stages_and_server_errors(deployment: Any) -> None:
    _, client, _ = deployment
    coll = client.db.coll
    matching = await coll.watch([{"$match": {"operationType": "delete"}}])
    await coll.insert_one({"_id": 1})
    await coll.delete_one({"_id": 1})
    assert (await matching.next())["operationType"] == "delete"
    await matching.close()
    with pytest.raises(OperationFailure) as unknown:
        await coll.watch([{"$unsupported": 1}])
    assert unknown.value.code == 40324
    projected = await coll.watch([{"$project": {"_id": 0}}])
    await coll.insert_one({"_id": 2})
    with pytest.raises(OperationFailure) as fatal:
        await projected.next()
    assert fatal.value.code == 280 and not projected.alive


async def test_a_standalone_refuses_change_streams() -> None:
    async with Standalone() as server, AsyncMongoClient(server.uri) as client:
        with pytest.raises(OperationFailure) as refused:
            await client.db.coll.watch()
    assert refused.value.code == 40573


def test_resumable_errors_per_the_spec() -> None:
    labelled = OperationFailure("x", 6, {"code": 6, "errorLabels": ["ResumableChangeStreamError"]})
    plain = OperationFailure("x", 6, {"code": 6})
    assert is_resumable(AutoReconnect("network"), 25)
    assert is_resumable(OperationFailure("x", 43, {"code": 43}), 25)
    assert is_resumable(labelled, 25) and not is_resumable(plain, 25)
    assert is_resumable(plain, 8)  # before 4.4: by code
    assert not is_resumable(OperationFailure("x", 216, {"code": 216}), 8)


async def test_load_balanced_get_mores_use_the_aggregates_connection() -> None:
    events: list[CommandStartedEvent] = []

    def listen(event: Any) -> None:
        if isinstance(event, CommandStartedEvent):
            events.append(event)

    async with LoadBalanced(services=2) as lb:
        async with AsyncMongoClient(lb.uri, event_listeners=[listen]) as client:
            coll = client.db.coll
            async with await coll.watch(max_await_time_ms=FAST) as stream:
                other = asyncio.create_task(coll.insert_one({"_id": 1}))
                assert (await stream.next())["documentKey"] == {"_id": 1}
                await other
                assert await stream.try_next() is None
            assert _open_stream_cursors(lb) == []
    opened = next(e for e in events if e.command_name == "aggregate")
    follow = [e for e in events if e.command_name in ("getMore", "killCursors")]
    assert follow and all(e.server_connection_id == opened.server_connection_id
                          and e.service_id == opened.service_id for e in follow)


async def test_a_failed_resume_closes_the_stream(deployment: Any) -> None:
    rs, client, events = deployment
    stream = await client.db.coll.watch(max_await_time_ms=FAST)
    # the getMore fails resumably, then so does the resume's aggregate and its retry (a
    # retryable read): the stream does not resume a second time
    with rs.fail_point({"times": 3}, failCommands=["getMore", "aggregate"], errorCode=6,
                       errorLabels=["ResumableChangeStreamError"]):
        with pytest.raises(OperationFailure) as failure:
            await stream.next()
    assert failure.value.code == 6 and not stream.alive
    assert [e.command_name for e in events].count("aggregate") == 3


async def test_start_at_a_write_replys_operation_time(deployment: Any) -> None:
    _, client, _ = deployment
    coll = client.db.coll
    async with client.start_session() as session:
        await coll.insert_one({"_id": 1}, session=session)
        after_first = session.operation_time
    await coll.insert_one({"_id": 2})
    async with await coll.watch(start_at_operation_time=after_first) as stream:
        change = await stream.next()
    assert change["documentKey"] == {"_id": 2}  # the first insert is older than its reply

"""Sessions, transactions and retries end to end against asyncmongo.testing.

What the commands carry (lsid, txnNumber, afterClusterTime, $clusterTime), the server
session pool (reuse, dirty sessions, endSessions on close), retryable writes and reads
(one retry, NoWritesPerformed, retryWrites=false, write concern errors), transactions and
with_transaction, cursors keeping their session, and cancellation at every await inside a
transaction leaving no connection checked out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.types import Timestamp
from asyncmongo.errors import (
    AutoReconnect,
    ConfigurationError,
    InvalidOperation,
    MongoError,
    NetworkTimeout,
    OperationFailure,
)
from asyncmongo.testing import ReplicaSet

pytestmark = pytest.mark.timeout(60)


class Recorder:
    """Command started/failed events, by name."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        if type(event).__name__ in ("CommandStartedEvent", "CommandFailedEvent"):
            self.events.append(event)

    def started(self, name: str) -> list[dict[str, Any]]:
        return [
            dict(e.command)
            for e in self.events
            if type(e).__name__ == "CommandStartedEvent" and e.command_name == name
        ]

    def clear(self) -> None:
        self.events.clear()


@pytest_asyncio.fixture
async def rs() -> AsyncIterator[ReplicaSet]:
    async with ReplicaSet(members=3) as deployment:
        yield deployment


async def _client(rs: ReplicaSet, **options: Any) -> tuple[AsyncMongoClient, Recorder]:
    recorder = Recorder()
    client = AsyncMongoClient(rs.uri, event_listeners=[recorder], **options)
    await client.aconnect()
    return client, recorder


def _fail(client: AsyncMongoClient, times: int, **data: Any) -> Any:
    return client.admin.command(
        {"configureFailPoint": "failCommand", "mode": {"times": times}, "data": data}
    )


def _in_use(client: AsyncMongoClient) -> int:
    topology = client._topology_runtime
    total = 0
    for address in topology.description.servers:
        server = topology.server(address)
        if server is not None:
            total += server.pool.statistics().in_use
    return total


# -- implicit and explicit sessions ------------------------------------------------------------


async def test_implicit_sessions_are_pooled_and_ended_on_close(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    coll = client.db.c
    await coll.insert_one({"_id": 1})
    await coll.find_one({"_id": 1})
    (first,) = recorder.started("insert")
    (find,) = recorder.started("find")
    assert first["lsid"] == find["lsid"]  # LIFO: the same server session again
    assert first["txnNumber"] == 1
    assert "txnNumber" not in find
    assert "$clusterTime" in find  # gossiped once a reply carried one
    await client.close()
    (ended,) = recorder.started("endSessions")
    assert ended["endSessions"] == [first["lsid"]]
    assert "lsid" not in ended


async def test_explicit_session_causal_consistency(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    coll = client.db.c
    async with client.start_session() as session:
        assert session.operation_time is None
        await coll.insert_one({"_id": 1}, session=session)
        assert isinstance(session.operation_time, Timestamp)
        await coll.find_one({"_id": 1}, session=session)
        (insert,) = recorder.started("insert")
        (find,) = recorder.started("find")
        assert insert["lsid"] == find["lsid"] == session.session_id
        assert find["readConcern"] == {"afterClusterTime": session.operation_time}
        assert "readConcern" not in insert  # the first operation has nothing to wait for
    assert session.has_ended
    with pytest.raises(InvalidOperation, match="ended session"):
        await coll.insert_one({"_id": 2}, session=session)
    await client.close()


async def test_advance_times_and_session_from_another_client(rs: ReplicaSet) -> None:
    client, _ = await _client(rs)
    other, _ = await _client(rs)
    session = client.start_session()
    session.advance_operation_time(Timestamp(5, 1))
    session.advance_operation_time(Timestamp(4, 9))
    assert session.operation_time == Timestamp(5, 1)
    session.advance_cluster_time({"clusterTime": Timestamp(7, 0), "signature": {}})
    assert session.cluster_time is not None
    with pytest.raises(InvalidOperation, match="another AsyncMongoClient"):
        await other.db.c.insert_one({"x": 1}, session=session)
    with pytest.raises(InvalidOperation):
        session.advance_cluster_time({"nope": 1})
    await session.end_session()
    await other.close()
    await client.close()


async def test_unacknowledged_write_with_explicit_session_is_refused(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs, w=0)
    async with client.start_session() as session:
        with pytest.raises(ConfigurationError, match="unacknowledged"):
            await client.db.c.insert_one({"x": 1}, session=session)
    await client.db.c.insert_one({"x": 2})  # implicit: sent without an lsid
    (insert,) = recorder.started("insert")
    assert "lsid" not in insert
    await client.close()


async def test_cursor_keeps_its_session_for_get_more(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    coll = client.db.c
    await coll.insert_many([{"_id": i} for i in range(10)])
    recorder.clear()
    documents = await coll.find({}, batch_size=3).to_list()
    assert len(documents) == 10
    (find,) = recorder.started("find")
    more = recorder.started("getMore")
    assert more and all(m["lsid"] == find["lsid"] for m in more)
    assert client._executor is not None
    assert not client._executor.cursor_sessions  # released when exhausted
    await client.close()


async def test_dirty_session_is_not_reused(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs, retryWrites=False)
    coll = client.db.c
    await _fail(client, 1, failCommands=["insert"], closeConnection=True)
    with pytest.raises(AutoReconnect):
        await coll.insert_one({"_id": 1})
    await coll.insert_one({"_id": 2})
    first, second = recorder.started("insert")
    assert first["lsid"] != second["lsid"]
    await client.close()


# -- retryable writes and reads ------------------------------------------------------------------


async def test_retryable_write_retries_once_with_the_same_txn_number(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    await _fail(client, 1, failCommands=["insert"], closeConnection=True)
    await client.db.c.insert_one({"_id": 1})
    first, retry = recorder.started("insert")
    assert first["txnNumber"] == retry["txnNumber"]
    assert first["lsid"] == retry["lsid"]
    assert await client.db.c.count_documents({}) == 1
    await client.close()


async def test_retry_writes_false_surfaces_the_error(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs, retryWrites=False)
    await _fail(client, 1, failCommands=["insert"], errorCode=91)
    with pytest.raises(MongoError):
        await client.db.c.insert_one({"_id": 1})
    assert len(recorder.started("insert")) == 1
    assert "txnNumber" not in recorder.started("insert")[0]
    await client.close()


async def test_a_second_failure_is_raised(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    await _fail(client, 2, failCommands=["insert"], errorCode=262)
    with pytest.raises(OperationFailure) as raised:
        await client.db.c.insert_one({"_id": 1})
    assert raised.value.code == 262
    assert raised.value.has_error_label("RetryableWriteError")
    assert len(recorder.started("insert")) == 2
    await client.close()


async def test_write_concern_error_is_retried(rs: ReplicaSet) -> None:
    # ShutdownInProgress marks the primary Unknown: a short heartbeat finds it again quickly.
    client, recorder = await _client(rs, heartbeatFrequencyMS=500)
    await _fail(
        client,
        1,
        failCommands=["insert"],
        errorLabels=["RetryableWriteError"],
        writeConcernError={"code": 91, "errmsg": "Replication is being shut down"},
    )
    result = await client.db.c.insert_one({"_id": 1})  # the retry gets the stored outcome
    assert result.inserted_id == 1
    assert len(recorder.started("insert")) == 2
    assert await client.db.c.count_documents({}) == 1
    await client.close()


async def test_retryable_read_retries_once(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    await client.db.c.insert_one({"_id": 1})
    await _fail(client, 1, failCommands=["find"], closeConnection=True)
    assert await client.db.c.find_one({"_id": 1}) == {"_id": 1}
    assert len(recorder.started("find")) == 2
    await _fail(client, 2, failCommands=["find"], closeConnection=True)
    with pytest.raises(AutoReconnect):
        await client.db.c.find_one({"_id": 1})
    await client.close()


# -- transactions --------------------------------------------------------------------------------


async def test_transaction_commit_and_abort(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    coll = client.db.c
    await coll.insert_one({"_id": 0})
    async with client.start_session() as session:
        session.start_transaction()
        assert session._transaction_state == "starting"
        await coll.insert_one({"_id": 1}, session=session)
        await coll.insert_one({"_id": 2}, session=session)
        assert session._transaction_state == "in_progress"
        await session.commit_transaction()
        assert session._transaction_state == "committed"
        first, second = recorder.started("insert")[1:]
        assert first["startTransaction"] is True and first["autocommit"] is False
        assert "startTransaction" not in second and second["txnNumber"] == first["txnNumber"]
        (commit,) = recorder.started("commitTransaction")
        assert commit["txnNumber"] == first["txnNumber"]
        session.start_transaction()
        await coll.insert_one({"_id": 3}, session=session)
        await session.abort_transaction()
        with pytest.raises(InvalidOperation, match="abortTransaction twice"):
            await session.abort_transaction()
    assert sorted(d["_id"] for d in await coll.find({}).to_list()) == [0, 1, 2]
    await client.close()


async def test_empty_transaction_sends_nothing(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    async with client.start_session() as session:
        async with session.start_transaction():
            pass
        assert session._transaction_state == "committed"
    assert not recorder.started("commitTransaction")
    await client.close()


async def test_with_transaction_retries_transient_errors(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    coll = client.db.c
    calls = 0

    async def callback(session: Any) -> str:
        nonlocal calls
        calls += 1
        await coll.insert_one({"n": calls}, session=session)
        return "done"

    await _fail(client, 1, failCommands=["insert"], closeConnection=True)
    async with client.start_session() as session:
        assert await session.with_transaction(callback) == "done"
    assert calls == 2  # the network error was transient: the whole transaction ran again
    assert [d["n"] for d in await coll.find({}).to_list()] == [2]
    assert len(recorder.started("abortTransaction")) == 1
    await client.close()


async def test_with_transaction_raises_other_errors(rs: ReplicaSet) -> None:
    client, _ = await _client(rs)

    async def callback(session: Any) -> None:
        raise ValueError("boom")

    async with client.start_session() as session:
        with pytest.raises(ValueError, match="boom"):
            await session.with_transaction(callback)
        assert session._transaction_state == "aborted"
    await client.close()


async def test_commit_retry_uses_majority(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    await _fail(client, 1, failCommands=["commitTransaction"], closeConnection=True)
    async with client.start_session() as session:
        session.start_transaction()
        await client.db.c.insert_one({"_id": 1}, session=session)
        await session.commit_transaction()
    first, retry = recorder.started("commitTransaction")
    assert "writeConcern" not in first
    assert retry["writeConcern"] == {"w": "majority", "wtimeout": 10_000}
    await client.close()


# -- cancellation ----------------------------------------------------------------------------------


async def test_cancellation_at_each_await_of_a_transaction(rs: ReplicaSet) -> None:
    client, _ = await _client(rs)
    coll = client.db.c
    await coll.insert_one({"_id": "seed"})

    async def transaction(session: Any, n: int) -> None:
        session.start_transaction()
        await coll.insert_one({"_id": n}, session=session)
        await coll.find_one({"_id": "seed"}, session=session)
        await coll.update_one({"_id": n}, {"$set": {"x": 1}}, session=session)
        await session.commit_transaction()

    outcomes: set[str] = set()
    for steps in range(0, 120, 3):
        session = client.start_session()
        task = asyncio.create_task(transaction(session, steps))
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        try:
            await task
            outcomes.add("completed")
        except asyncio.CancelledError:
            outcomes.add("cancelled")
            if session.in_transaction:
                await session.abort_transaction()
        assert _in_use(client) == 0, f"a connection is still checked out after {steps} steps"
        # The session is still usable: a whole new transaction goes through.
        session.start_transaction()
        await coll.insert_one({"_id": f"after-{steps}"}, session=session)
        await session.commit_transaction()
        await session.end_session()
        assert session._pinned_address is None
    assert outcomes == {"completed", "cancelled"}
    await client.close()


async def test_cancelled_with_transaction_leaves_the_session_usable(rs: ReplicaSet) -> None:
    client, _ = await _client(rs)
    coll = client.db.c
    started = asyncio.Event()

    async def slow(session: Any) -> None:
        await coll.insert_one({"_id": 1}, session=session)
        started.set()
        await asyncio.sleep(10)

    async with client.start_session() as session:
        task = asyncio.create_task(session.with_transaction(slow))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not session.in_transaction
        for _ in range(100):  # the client's background task aborts it on the server
            if _in_use(client) == 0:
                break
            await asyncio.sleep(0.01)
        assert _in_use(client) == 0

        async def quick(session: Any) -> None:
            await coll.insert_one({"_id": 2}, session=session)

        await session.with_transaction(quick)
    assert [d["_id"] for d in await coll.find({}).to_list()] == [2]
    await client.close()


async def test_cancelled_transaction_is_aborted_in_the_background(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    coll = client.db.c
    await coll.insert_one({"_id": 1, "n": 0})
    started = asyncio.Event()

    async def hold_a_lock() -> None:
        async with client.start_session() as session:
            session.start_transaction()
            await coll.update_one({"_id": 1}, {"$set": {"n": 1}}, session=session)
            started.set()
            await asyncio.sleep(10)

    task = asyncio.create_task(hold_a_lock())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):  # the client's background task sends abortTransaction
        if recorder.started("abortTransaction"):
            break
        await asyncio.sleep(0.01)
    (abort,) = recorder.started("abortTransaction")
    (update,) = recorder.started("update")
    assert abort["lsid"] == update["lsid"] and abort["txnNumber"] == update["txnNumber"]
    # The document lock is gone: a plain write does not conflict.
    await coll.update_one({"_id": 1}, {"$set": {"n": 2}})
    assert await coll.find_one({"_id": 1}) == {"_id": 1, "n": 2}
    assert _in_use(client) == 0
    await client.close()


async def test_load_balanced_transaction_pins_one_connection() -> None:
    from asyncmongo.testing import LoadBalanced

    async with LoadBalanced() as lb:
        recorder = Recorder()
        client = AsyncMongoClient(lb.uri, event_listeners=[recorder])
        coll = client.db.c
        await coll.insert_one({"_id": 0})
        recorder.clear()
        async with client.start_session() as session:
            session.start_transaction()
            others = [asyncio.create_task(coll.find_one({"_id": 0})) for _ in range(3)]
            await coll.insert_one({"_id": 1}, session=session)
            await asyncio.gather(*others)
            await coll.insert_one({"_id": 2}, session=session)
            assert session._pinned_address is not None
            assert _in_use(client) == 1  # the transaction's connection stays checked out
            await session.commit_transaction()
            in_transaction = [
                e.driver_connection_id
                for e in recorder.events
                if type(e).__name__ == "CommandStartedEvent"
                and e.command_name in ("insert", "commitTransaction")
            ]
            assert len(in_transaction) == 3 and len(set(in_transaction)) == 1
            await coll.find_one({"_id": 1}, session=session)  # outside: unpinned
            assert session._pinned_address is None
        assert _in_use(client) == 0
        assert await coll.count_documents({}) == 3
        await client.close()


async def test_load_balanced_cursor_pins_its_connection() -> None:
    from asyncmongo.testing import LoadBalanced

    async with LoadBalanced() as lb:
        recorder = Recorder()
        client = AsyncMongoClient(lb.uri, event_listeners=[recorder])
        coll = client.db.c
        await coll.insert_many([{"_id": i} for i in range(10)])
        recorder.clear()
        cursor = coll.find({}, batch_size=3)
        assert (await cursor.next()) == {"_id": 0}
        assert _in_use(client) == 1  # the open cursor keeps its connection
        assert await coll.find_one({"_id": 9}) == {"_id": 9}  # others use another one
        rest = await cursor.to_list()
        assert len(rest) == 9
        assert _in_use(client) == 0  # exhausted: the connection went back
        connections = {
            e.driver_connection_id
            for e in recorder.events
            if type(e).__name__ == "CommandStartedEvent" and e.command_name in ("getMore",)
        }
        assert len(connections) == 1
        cursor = coll.find({}, batch_size=2)
        await cursor.next()
        assert _in_use(client) == 1
        await cursor.close()
        assert _in_use(client) == 0  # killCursors gave it back
        await client.close()


async def test_with_transaction_gives_up_after_its_budget(
    rs: ReplicaSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncmongo.sessions.with_transaction as with_transaction_module

    client, _ = await _client(rs)
    clock = iter([0.0, 0.0, 200.0, 200.0, 200.0, 200.0])
    monkeypatch.setattr(with_transaction_module, "monotonic", lambda: next(clock, 200.0))
    calls = 0

    async def callback(session: Any) -> None:
        nonlocal calls
        calls += 1
        error = OperationFailure("conflict", 112, {"code": 112})
        error._add_error_label("TransientTransactionError")
        raise error

    async with client.start_session() as session:
        with pytest.raises(NetworkTimeout, match="conflict") as raised:
            await session.with_transaction(callback)
    assert calls == 1  # the 120-second budget was spent: no retry
    # Convenient API spec, "Timeout error propagation": a timeout error wrapping the last
    # error, with its labels.
    assert isinstance(raised.value.__cause__, OperationFailure)
    assert raised.value.has_error_label("TransientTransactionError")
    await client.close()


async def test_with_transaction_returns_the_callback_value_and_custom_errors(
    rs: ReplicaSet,
) -> None:
    client, _ = await _client(rs)

    class Custom(Exception):
        pass

    async def fails(session: Any) -> None:
        await client.db.c.insert_one({"_id": "x"}, session=session)
        raise Custom()

    async def works(session: Any) -> dict[str, int]:
        await client.db.c.insert_one({"_id": "y"}, session=session)
        return {"ok": 1}

    async with client.start_session() as session:
        with pytest.raises(Custom):
            await session.with_transaction(fails)
        assert await session.with_transaction(works) == {"ok": 1}
    assert [d["_id"] for d in await client.db.c.find({}).to_list()] == ["y"]
    await client.close()


async def test_load_balanced_cancellation_never_leaks_the_pinned_connection() -> None:
    from asyncmongo.testing import LoadBalanced

    async with LoadBalanced() as lb:
        client = AsyncMongoClient(lb.uri)
        coll = client.db.c
        await coll.insert_one({"_id": "seed"})

        async def transaction(n: int) -> None:
            async with client.start_session() as session:
                session.start_transaction()
                await coll.insert_one({"_id": n}, session=session)
                await coll.find_one({"_id": "seed"}, session=session)
                await session.commit_transaction()

        outcomes: set[str] = set()
        for steps in range(0, 90, 3):
            task = asyncio.create_task(transaction(steps))
            for _ in range(steps):
                await asyncio.sleep(0)
            task.cancel()
            try:
                await task
                outcomes.add("completed")
            except asyncio.CancelledError:
                outcomes.add("cancelled")
            for _ in range(200):  # a background abort may still hold it briefly
                if _in_use(client) == 0:
                    break
                await asyncio.sleep(0.005)
            assert _in_use(client) == 0, f"a pinned connection leaked after {steps} steps"
        assert outcomes == {"completed", "cancelled"}
        await client.close()


async def test_sharded_retry_goes_to_another_mongos() -> None:
    from asyncmongo.testing import ShardedCluster

    async with ShardedCluster(mongos=2) as cluster:
        recorder = Recorder()
        client = AsyncMongoClient(cluster.uri, event_listeners=[recorder])
        await client.db.c.insert_one({"_id": 1})
        for mongos in cluster.mongos:  # each router fails its next find once
            async with AsyncMongoClient(f"mongodb://{mongos.host}/?directConnection=true") as one:
                await _fail(one, 1, failCommands=["find"], closeConnection=True)
        recorder.clear()
        # The retry must avoid the mongos that failed, so it meets the other one's fault.
        with pytest.raises(AutoReconnect):
            await client.db.c.find_one({"_id": 1})
        first, retry = [
            e.connection_id
            for e in recorder.events
            if type(e).__name__ == "CommandStartedEvent" and e.command_name == "find"
        ]
        assert first != retry
        await client.close()


async def test_snapshot_session_reads_at_its_snapshot_time(rs: ReplicaSet) -> None:
    client, recorder = await _client(rs)
    async with client.start_session() as writer:
        await client.db.c.insert_one({"_id": 1}, session=writer)
        written = writer.operation_time  # a time the server still has a snapshot of
    assert written is not None
    with pytest.raises(ConfigurationError):
        client.start_session(snapshot_time=Timestamp(1, 1))
    async with client.start_session(snapshot=True, snapshot_time=written) as session:
        assert session.get_snapshot_time() == written
        with pytest.raises(InvalidOperation, match="snapshot"):
            session.start_transaction()
        recorder.clear()
        assert await client.db.c.find_one({"_id": 1}, session=session) == {"_id": 1}
        (find,) = recorder.started("find")
        assert find["readConcern"] == {"level": "snapshot", "atClusterTime": written}
    await client.close()

"""Client-side operations timeout: where timeoutMS comes from (client, database, collection,
``asyncmongo.timeout()``), validation, and the spec's prose tests that run against
asyncmongo.testing (client-side-operations-timeout/README.md: 1, 5, 8)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

import asyncmongo
from asyncmongo import AsyncMongoClient, CommandStartedEvent, CursorType
from asyncmongo.errors import InvalidArgument, MongoError, ServerSelectionTimeoutError
from asyncmongo.testing import ReplicaSet, Standalone


def started(events: list[Any], name: str) -> list[CommandStartedEvent]:
    return [e for e in events if isinstance(e, CommandStartedEvent) and e.command_name == name]


# -- inheritance and validation -------------------------------------------------------------

async def test_timeout_ms_is_inherited_and_overridden() -> None:
    client = AsyncMongoClient("mongodb://localhost:1/?timeoutMS=500")
    db = client.get_database("db")
    assert db.timeout_ms == 500
    coll = db.get_collection("coll", timeout_ms=0)
    assert coll.timeout_ms == 0
    assert coll.with_options(timeout_ms=20).timeout_ms == 20
    assert coll.with_options().timeout_ms == 0  # kept unless replaced
    assert db["other"].timeout_ms == 500
    await client.close()


async def test_negative_timeout_ms_is_refused() -> None:
    client = AsyncMongoClient("mongodb://localhost:1")
    with pytest.raises(InvalidArgument):
        client.get_database("db", timeout_ms=-1)
    with pytest.raises(InvalidArgument):
        client.db.coll.with_options(timeout_ms=-5)
    with pytest.raises(ValueError):
        asyncmongo.timeout(-1)
    await client.close()


async def test_timeout_blocks_nest_and_only_shorten() -> None:
    client = AsyncMongoClient("mongodb://localhost:1/?timeoutMS=10000")
    loop = asyncio.get_running_loop()
    assert client._deadline_for(None) == pytest.approx(loop.time() + 10, abs=0.5)
    with asyncmongo.timeout(5):
        outer = client._deadline_for(None)
        assert outer == pytest.approx(loop.time() + 5, abs=0.5)
        with asyncmongo.timeout(60):
            assert client._deadline_for(None) == outer  # a longer inner block: no longer
        with asyncmongo.timeout(1):
            assert client._deadline_for(None) < outer
        with asyncmongo.timeout(None):
            assert client._deadline_for(None) == outer
    with asyncmongo.timeout(None):
        assert client._deadline_for(None) == math.inf  # no limit, overriding the client's
    await client.close()


async def test_timeout_mode_needs_timeout_ms() -> None:
    client = AsyncMongoClient("mongodb://localhost:1")
    with pytest.raises(InvalidArgument):
        client.db.coll.find({}, timeout_mode="iteration")
    timed = client.db.get_collection("coll", timeout_ms=100)
    with pytest.raises(InvalidArgument):  # tailable: iteration only
        timed.find({}, cursor_type=CursorType.TAILABLE, timeout_mode="cursorLifetime")
    with pytest.raises(InvalidArgument):  # awaitData: maxAwaitTimeMS < timeoutMS
        timed.find({}, cursor_type=CursorType.TAILABLE_AWAIT, max_await_time_ms=100)
    await client.close()


# -- the deadline at work ---------------------------------------------------------------------

async def test_operation_block_sends_max_time_ms_and_times_out() -> None:
    events: list[Any] = []
    async with Standalone() as server, AsyncMongoClient(
            server.uri, event_listeners=[events.append]) as client:
        coll = client.db.coll
        await coll.insert_one({"_id": 1})
        assert "maxTimeMS" not in started(events, "insert")[0].command
        with asyncmongo.timeout(5):
            await coll.find_one({})
        assert 0 < started(events, "find")[-1].command["maxTimeMS"] <= 5000
        with server.fail_point({"times": 1}, failCommands=["find"], blockConnection=True,
                               blockTimeMS=300):
            with asyncmongo.timeout(0.1), pytest.raises(MongoError) as info:
                await coll.find_one({})
        assert info.value.timeout
        assert await coll.find_one({}) == {"_id": 1}  # the client works on


async def test_socket_timeout_is_ignored_under_timeout_ms() -> None:
    async with Standalone() as server, AsyncMongoClient(
            server.uri, socketTimeoutMS=50, timeoutMS=2000) as client:
        with server.fail_point({"times": 1}, failCommands=["ping"], blockConnection=True,
                               blockTimeMS=150):
            await client.db.command("ping")


# -- prose tests -----------------------------------------------------------------------------

async def test_prose_1_multi_batch_inserts() -> None:
    events: list[Any] = []
    # the spec's 1010ms block and 2000ms timeoutMS, scaled for a shared machine: the first
    # batch (48MB, which the simulator takes 2s or more to receive and store on a loaded
    # machine) must fit, the second cannot. With a block B and timeoutMS T that holds for
    # any first-batch time X with T - 2B < X < T - B: here X below 4.5s
    async with Standalone() as server, AsyncMongoClient(
            server.uri, timeoutMS=10000, event_listeners=[events.append]) as client:
        with server.fail_point({"times": 2}, failCommands=["insert"], blockConnection=True,
                               blockTimeMS=5500):
            with pytest.raises(MongoError) as info:
                await client.db.coll.insert_many([{"a": "x" * (1024 * 1024)} for _ in range(50)])
        assert info.value.timeout
        assert len(started(events, "insert")) == 2


async def test_prose_5_tailable_cursor_blocking_iteration() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as internal:
            await internal.db.create_collection("coll", capped=True, size=4096)
            await internal.db.coll.insert_one({"x": 1})
        async with AsyncMongoClient(server.uri, timeoutMS=200,
                                    event_listeners=[events.append]) as client:
            cursor = client.db.coll.find({}, {"_id": 0}, cursor_type=CursorType.TAILABLE)
            with server.fail_point("alwaysOn", failCommands=["getMore"], blockConnection=True,
                                   blockTimeMS=150):
                assert await cursor.next() == {"x": 1}
                assert not started(events, "getMore")
                with pytest.raises(MongoError) as info:
                    await cursor.next()
                assert info.value.timeout
            await cursor.close()
        assert len(started(events, "find")) == 1
        assert len(started(events, "getMore")) == 2


async def test_prose_5_change_stream_blocking_iteration() -> None:
    events: list[Any] = []
    async with ReplicaSet() as server, AsyncMongoClient(
            server.uri, timeoutMS=200, event_listeners=[events.append]) as client:
        # maxAwaitTimeMS: the simulated server's getMore returns (empty) after the block
        async with await client.db.coll.watch(max_await_time_ms=10) as stream:
            with server.fail_point("alwaysOn", failCommands=["getMore"], blockConnection=True,
                                   blockTimeMS=150):
                with pytest.raises(MongoError) as info:
                    await stream.next()
                assert info.value.timeout
        assert len(started(events, "aggregate")) == 1
        assert len(started(events, "getMore")) == 2


@pytest.mark.parametrize(("options", "bound_ms"), [
    ("serverSelectionTimeoutMS=10", 10),
    ("timeoutMS=10&serverSelectionTimeoutMS=20", 10),
    ("timeoutMS=20&serverSelectionTimeoutMS=10", 10),
    ("timeoutMS=0&serverSelectionTimeoutMS=10", 10),
])
async def test_prose_8_server_selection(options: str, bound_ms: int) -> None:
    async with AsyncMongoClient(f"mongodb://127.0.0.1:1/?{options}") as client:
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(ServerSelectionTimeoutError):
            await client.admin.command("ping")
        # the spec's 15ms, with room for a loaded machine
        assert (loop.time() - start) * 1000 < bound_ms + 200


# -- GridFS streams: timeoutMS caps the stream's lifetime ---------------------------------------

async def test_upload_stream_lifetime_is_capped_by_timeout_ms() -> None:
    from asyncmongo.gridfs import AsyncGridFSBucket

    async with Standalone() as server, AsyncMongoClient(server.uri, timeoutMS=1000) as client:
        bucket = AsyncGridFSBucket(client.db, chunk_size_bytes=4)
        quick = bucket.open_upload_stream("quick")
        await quick.write(b"12345678")  # two chunks stored within the lifetime
        await quick.close()
        slow = bucket.open_upload_stream("slow")
        await slow.write(b"1")
        await asyncio.sleep(1.1)  # every operation alone would fit in 1s; the stream not
        with pytest.raises(MongoError) as info:
            await slow.close()
        assert info.value.timeout
        assert await client.db["fs.files"].count_documents({"filename": "slow"}) == 0
        late = bucket.open_upload_stream("late")
        await asyncio.sleep(1.1)
        with pytest.raises(MongoError) as info:
            await late.abort()
        assert info.value.timeout
        with asyncmongo.timeout(None):  # an enclosing block is the stream's own timeout
            unlimited = bucket.open_upload_stream("unlimited")
        await asyncio.sleep(1.1)
        await unlimited.write(b"abcdefgh")
        await unlimited.close()
        assert await client.db["fs.files"].count_documents({"filename": "unlimited"}) == 1


async def test_download_stream_lifetime_is_capped_by_timeout_ms() -> None:
    from asyncmongo.gridfs import AsyncGridFSBucket

    async with Standalone() as server, AsyncMongoClient(server.uri, timeoutMS=300) as client:
        bucket = AsyncGridFSBucket(client.db, chunk_size_bytes=4)
        file_id = await bucket.upload_from_stream("f", b"line one\nline two\n")
        for read in ("read", "readline", "readchunk"):
            stream = await bucket.open_download_stream(file_id)
            assert await getattr(stream, read)()  # within the lifetime
            await stream.close()
            stream = await bucket.open_download_stream(file_id)
            await asyncio.sleep(0.4)  # the chunks are not fetched yet
            with pytest.raises(MongoError) as info:
                await getattr(stream, read)()
            assert info.value.timeout, read


async def test_timeout_errors_name_the_phase_and_the_time_it_had() -> None:
    # selection ended by timeoutMS (not serverSelectionTimeoutMS) says so; checkout and
    # connect are covered in tests/pool/test_pool.py
    async with AsyncMongoClient(
            "mongodb://127.0.0.1:1/?timeoutMS=100&serverSelectionTimeoutMS=5000") as client:
        with pytest.raises(ServerSelectionTimeoutError) as info:
            await client.admin.command("ping")
    assert "within the operation's timeoutMS (phase: selection, " in str(info.value)
    assert info.value.timeout


# -- explain: the remaining timeoutMS as the explain command's maxTimeMS ----------------------

async def test_explain_carries_the_remaining_timeout_ms_as_max_time_ms() -> None:
    events: list[Any] = []
    async with Standalone() as server, AsyncMongoClient(
            server.uri, event_listeners=[events.append]) as client:
        await client.db.coll.insert_many([{"x": i} for i in range(3)])
        plain = await client.db.coll.find({"x": {"$gt": 0}}).explain()
        assert plain["executionStats"]["nReturned"] == 2
        assert "maxTimeMS" not in started(events, "explain")[-1].command
        timed = client.db.get_collection("coll", timeout_ms=1000)
        await timed.find({}).max_time_ms(77).explain("queryPlanner")
        with asyncmongo.timeout(2):
            await client.db.coll.find({}).explain()
        by_collection, by_block = started(events, "explain")[-2:]
        assert 0 < by_collection.command["maxTimeMS"] <= 1000  # on explain, not on the find
        assert by_collection.command["explain"]["maxTimeMS"] == 77
        assert by_collection.command["verbosity"] == "queryPlanner"
        assert 1000 < by_block.command["maxTimeMS"] <= 2000
        assert "maxTimeMS" not in by_block.command["explain"]
        # the server enforces it: held longer than its maxTimeMS, the explain times out
        with server.fail_point({"times": 1}, failCommands=["explain"], blockConnection=True,
                               blockTimeMS=300):
            with pytest.raises(MongoError) as info:
                await client.db.get_collection("coll", timeout_ms=100).find({}).explain()
        assert info.value.timeout


# -- timeoutMode on every helper that makes a cursor ------------------------------------------

def _cursor_helpers(client: AsyncMongoClient) -> dict[str, Any]:
    """Each helper that creates a cursor, called with ``timeout_mode=mode``."""
    from asyncmongo.gridfs import AsyncGridFSBucket

    db, coll = client.db, client.db.coll

    async def find(mode: str) -> Any:
        return coll.find({}, timeout_mode=mode)

    async def gridfs_find(mode: str) -> Any:
        return AsyncGridFSBucket(db).find({}, timeout_mode=mode)

    return {
        "find": find,
        "aggregate": lambda mode: coll.aggregate([], timeout_mode=mode),
        "database aggregate": lambda mode: db.aggregate(
            [{"$documents": [{"a": 1}]}], timeout_mode=mode),
        "list_indexes": lambda mode: coll.list_indexes(timeout_mode=mode),
        "list_collections": lambda mode: db.list_collections(timeout_mode=mode),
        "list_databases": lambda mode: client.list_databases(timeout_mode=mode),
        "cursor_command": lambda mode: db.cursor_command(
            "find", "coll", timeout_mode=mode),
        "gridfs find": gridfs_find,
    }


async def test_every_cursor_helper_refuses_timeout_mode_without_timeout_ms() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            await client.db.coll.insert_one({"x": 1})
            for name, helper in _cursor_helpers(client).items():
                with pytest.raises(InvalidArgument, match="timeoutMS"):
                    cursor = await helper("iteration")
                    await cursor.to_list()  # a lazy cursor refuses at the latest here
                    pytest.fail(f"{name} accepted timeout_mode without timeoutMS")
        async with AsyncMongoClient(server.uri, timeoutMS=5000) as client:
            for name, helper in _cursor_helpers(client).items():
                for mode in ("iteration", "cursorLifetime"):
                    cursor = await helper(mode)
                    assert isinstance(await cursor.to_list(), list), name
                with pytest.raises(InvalidArgument):
                    await helper("bogus")
            with pytest.raises(InvalidArgument):  # CSOT: ITERATION and $out/$merge
                await client.db.coll.aggregate([{"$out": "other"}], timeout_mode="iteration")
            with pytest.raises(TypeError):  # CSOT: watch helpers take no timeoutMode
                await client.db.coll.watch(timeout_mode="iteration")  # type: ignore[call-arg]
            with pytest.raises(InvalidArgument):  # maxAwaitTimeMS < timeoutMS
                await client.db.coll.watch(max_await_time_ms=5000)

"""PyMongo idioms that behave here as under PyMongo's AsyncMongoClient.

Where it helps, the same call runs through PyMongo (a test-only peer) against the same
simulated server, and the two results are compared.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pymongo
import pytest
from pymongo import monitoring

from asyncmongo import AsyncMongoClient, CommandStartedEvent, DriverInfo
from asyncmongo.errors import ConfigurationError, InvalidOperation, OperationFailure
from asyncmongo.testing import ReplicaSet, SimServer, Standalone
from tests.support.pymongo_peer import PYMONGO_PEER_MARKS, collect_pymongo_leaks  # noqa: F401

pytestmark = [pytest.mark.timeout(60), *PYMONGO_PEER_MARKS]


class PeerCommands(monitoring.CommandListener):
    """The commands PyMongo sends."""

    def __init__(self) -> None:
        self.commands: list[dict[str, Any]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.commands.append(dict(event.command))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


async def _ids(coll: Any) -> list[Any]:
    return [doc["_id"] async for doc in coll.find({}, sort=[("_id", 1)])]


# -- transactions ------------------------------------------------------------------------------


async def test_async_with_await_start_transaction_commits_like_pymongo() -> None:
    async with ReplicaSet(members=1) as rs:
        async with AsyncMongoClient(rs.uri) as client, pymongo.AsyncMongoClient(rs.uri) as peer:
            ours, theirs = client.db.ours, peer.db.theirs
            async with client.start_session() as session:
                async with await session.start_transaction() as txn:
                    await ours.insert_one({"_id": 1}, session=session)
                assert txn is not None and not session.in_transaction
            async with peer.start_session() as peer_session:
                async with await peer_session.start_transaction():
                    await theirs.insert_one({"_id": 1}, session=peer_session)
            assert await _ids(ours) == await _ids(theirs) == [1]


async def test_both_transaction_forms_abort_on_error() -> None:
    async with ReplicaSet(members=1) as rs:
        async with AsyncMongoClient(rs.uri) as client:
            coll = client.db.c
            async with client.start_session() as session:
                with pytest.raises(ValueError):
                    async with await session.start_transaction():
                        await coll.insert_one({"_id": 1}, session=session)
                        raise ValueError
                with pytest.raises(ValueError):
                    async with session.start_transaction():
                        await coll.insert_one({"_id": 2}, session=session)
                        raise ValueError
                async with session.start_transaction():
                    await coll.insert_one({"_id": 3}, session=session)
            assert await _ids(coll) == [3]


async def test_awaiting_start_transaction_starts_nothing_more() -> None:
    async with ReplicaSet(members=1) as rs:
        async with AsyncMongoClient(rs.uri) as client:
            async with client.start_session() as session:
                context = session.start_transaction()
                number = session._server_session.txn_number
                assert await context is context
                assert session.in_transaction and session._server_session.txn_number == number
                await session.abort_transaction()


# -- anext() on cursors and change streams -----------------------------------------------------


async def test_anext_on_find_and_aggregate_cursors_matches_pymongo() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client, \
                pymongo.AsyncMongoClient(server.uri) as peer:
            await client.db.c.insert_many([{"_id": i} for i in range(5)])
            for db in (client.db, peer.db):
                cursor = db.c.find({}, sort=[("_id", 1)], batch_size=2)
                assert await anext(cursor) == {"_id": 0}
                assert await cursor.__anext__() == {"_id": 1}
                assert await cursor.next() == {"_id": 2}
                assert [doc["_id"] async for doc in cursor] == [3, 4]
                with pytest.raises(StopAsyncIteration):
                    await anext(cursor)
                assert await anext(cursor, "done") == "done"
                command_cursor = await db.c.aggregate([{"$sort": {"_id": -1}}], batchSize=2)
                assert await anext(command_cursor) == {"_id": 4}
                assert len(await command_cursor.to_list()) == 4
                with pytest.raises(StopAsyncIteration):
                    await anext(command_cursor)


async def test_anext_on_a_change_stream() -> None:
    async with ReplicaSet(members=1) as rs:
        async with AsyncMongoClient(rs.uri) as client:
            coll = client.db.c
            async with await coll.watch(max_await_time_ms=50) as stream:
                await coll.insert_one({"_id": 1})
                change = await anext(stream)
                assert change["operationType"] == "insert"
                await coll.drop()
                assert (await anext(stream))["operationType"] == "drop"
                assert (await anext(stream))["operationType"] == "invalidate"
                with pytest.raises(StopAsyncIteration):
                    await anext(stream)


# -- an empty sort -----------------------------------------------------------------------------


async def test_find_with_an_empty_sort_sends_no_sort_like_pymongo() -> None:
    ours: list[dict[str, Any]] = []
    theirs = PeerCommands()

    def listen(event: Any) -> None:
        if isinstance(event, CommandStartedEvent) and event.command_name == "find":
            ours.append(dict(event.command))

    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[listen]) as client, \
                pymongo.AsyncMongoClient(server.uri, event_listeners=[theirs]) as peer:
            await client.db.c.insert_many([{"_id": 2}, {"_id": 1}])
            for db in (client.db, peer.db):
                for empty in ([], {}):
                    assert len(await db.c.find({}, sort=empty).to_list()) == 2
                    assert await db.c.find_one({}, sort=empty) is not None
    finds = [c for c in theirs.commands if "find" in c]
    assert len(ours) == len(finds) == 4
    assert not any("sort" in command for command in ours + finds)


async def test_cursor_sort_with_nothing_raises_at_once_like_pymongo() -> None:
    client, peer = AsyncMongoClient("mongodb://h"), pymongo.AsyncMongoClient("mongodb://h")
    for empty in ([], {}):
        with pytest.raises(ValueError, match="must not be empty"):
            client.db.c.find().sort(empty)
        with pytest.raises(ValueError, match="must not be empty"):
            peer.db.c.find().sort(empty)
    await client.close()
    await peer.close()


# -- UpdateResult.raw_result -------------------------------------------------------------------


async def test_update_raw_result_is_pymongos() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client, \
                pymongo.AsyncMongoClient(server.uri) as peer:
            results = []
            for coll in (client.db.ours, peer.db.theirs):
                await coll.insert_many([{"_id": 1, "x": 0}, {"_id": 2, "x": 0}])
                results.append([
                    (await coll.update_one({"_id": 1}, {"$set": {"x": 1}})).raw_result,
                    (await coll.update_one({"_id": 1}, {"$set": {"x": 1}})).raw_result,
                    (await coll.update_many({}, {"$set": {"x": 2}})).raw_result,
                    (await coll.update_one({"_id": 9}, {"$set": {"x": 1}})).raw_result,
                    (await coll.update_one({"_id": 3}, {"$set": {"x": 1}}, upsert=True)
                     ).raw_result,
                    (await coll.replace_one({"_id": 4}, {"x": 1}, upsert=True)).raw_result,
                    (await coll.replace_one({"_id": 4}, {"x": 2})).raw_result,
                ])
            ours, theirs = results
            assert ours == theirs
            assert [raw["updatedExisting"] for raw in ours] == [
                True, True, True, False, False, False, True]
            assert ours[4]["upserted"] == 3


# -- dropping indexes of a collection that does not exist --------------------------------------


async def test_drop_indexes_of_a_missing_collection_succeed_like_pymongo() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client, \
                pymongo.AsyncMongoClient(server.uri) as peer:
            for coll in (client.db.missing, peer.db.missing):
                assert await coll.drop_indexes() is None
                assert await coll.drop_index("a_1") is None
                assert await coll.drop_index([("a", 1)]) is None
            await client.db.present.insert_one({})
            # a missing index of an existing collection is still an error (IndexNotFound)
            with pytest.raises(OperationFailure) as ours:
                await client.db.present.drop_index("a_1")
            with pytest.raises(pymongo.errors.OperationFailure) as theirs:
                await peer.db.present.drop_index("a_1")
            assert ours.value.code == theirs.value.code == 27


# -- the connect= and driver= keywords ---------------------------------------------------------


@pytest.mark.parametrize("connect", [True, False, "true", "false", None])
async def test_connect_is_accepted_and_connects_lazily_like_pymongos_async_client(
    connect: Any,
) -> None:
    async with SimServer() as server:
        client = AsyncMongoClient(f"mongodb://127.0.0.1:{server.port}", connect=connect)
        await asyncio.sleep(0.05)
        assert "not connected" in repr(client) and not server.network.connections
        await client.admin.command("ping")
        assert "not connected" not in repr(client)
        await client.close()
    with pytest.raises(ConfigurationError, match="connect"):
        AsyncMongoClient("mongodb://h", connect="yes")


@pytest.mark.parametrize("keyword", ["driver", "driver_info"])
async def test_driver_keyword_appends_to_the_handshake_metadata(keyword: str) -> None:
    async with SimServer() as server:
        info = DriverInfo("framework", "2.0", "Framework Platform")
        client = AsyncMongoClient(f"mongodb://127.0.0.1:{server.port}", **{keyword: info})
        try:
            await client.admin.command("ping")
            handshakes = [c.metadata for c in server.network.connections if c.metadata]
            assert handshakes and all(
                m["driver"]["name"] == "asyncmongo|framework"
                and m["driver"]["version"].endswith("|2.0")
                and m["platform"].endswith("|Framework Platform") for m in handshakes)
            assert client.options.driver_info == (info,)
        finally:
            await client.close()
    with pytest.raises(ConfigurationError, match="DriverInfo"):
        AsyncMongoClient("mongodb://h", driver=("framework", "2.0"))
    with pytest.raises(ConfigurationError, match="repeats"):
        AsyncMongoClient("mongodb://h", driver=info, driver_info=info)


# -- TopologyDescription and pool options under PyMongo's names --------------------------------


async def test_topology_description_server_descriptions_and_type_name_like_pymongo() -> None:
    async with ReplicaSet(members=2) as rs:
        async with AsyncMongoClient(rs.uri) as client, pymongo.AsyncMongoClient(rs.uri) as peer:
            await client.admin.command("ping")
            await peer.admin.command("ping")
            ours, theirs = client.topology_description, peer.topology_description
            servers = ours.server_descriptions()
            assert servers == dict(ours.servers) and servers is not ours.servers
            assert set(servers) == set(theirs.server_descriptions())
            assert all(servers[a].address == a for a in servers)
            assert ours.topology_type_name == theirs.topology_type_name
            assert ours.topology_type_name == "ReplicaSetWithPrimary"
    single = AsyncMongoClient("mongodb://h/?directConnection=true").topology_description
    assert single.topology_type_name == "Single"
    assert AsyncMongoClient("mongodb://h,i").topology_description.topology_type_name == "Unknown"


POOL_ATTRIBUTES = [
    "max_pool_size", "min_pool_size", "max_connecting", "max_idle_time_seconds",
    "wait_queue_timeout", "connect_timeout", "socket_timeout", "appname",
    "tls_allow_invalid_hostnames", "server_api", "pause_enabled",
]


@pytest.mark.parametrize("query", [
    "",
    "?maxPoolSize=7&minPoolSize=2&maxConnecting=3&maxIdleTimeMS=1500&waitQueueTimeoutMS=2500"
    "&connectTimeoutMS=1000&socketTimeoutMS=3000&appname=app",
    "?maxPoolSize=0&socketTimeoutMS=0&connectTimeoutMS=0",
])
async def test_pool_options_have_pymongos_names_and_values(query: str) -> None:
    uri = f"mongodb://h/{query}"
    client, peer = AsyncMongoClient(uri), pymongo.AsyncMongoClient(uri)
    try:
        ours, theirs = client.options.pool_options, peer.options.pool_options
        for name in POOL_ATTRIBUTES:
            assert getattr(ours, name) == getattr(theirs, name), name
        assert not ours.load_balanced and not theirs.load_balanced
    finally:
        await client.close()
        await peer.close()


# -- not on asyncio ----------------------------------------------------------------------------


def test_first_operation_under_trio_says_asyncmongo_runs_on_asyncio() -> None:
    pytest.importorskip("trio")
    import anyio

    client = AsyncMongoClient("mongodb://h")

    async def main() -> None:
        with pytest.raises(InvalidOperation, match="asyncmongo runs on asyncio"):
            await client.admin.command("ping")
        with pytest.raises(InvalidOperation, match="no asyncio event loop is running"):
            await client.db.c.find({}).to_list()
        await client.close()

    anyio.run(main, backend="trio")


def test_first_operation_outside_any_loop_says_asyncmongo_runs_on_asyncio() -> None:
    client = AsyncMongoClient("mongodb://h")
    ping = client.admin.command("ping")
    with pytest.raises(InvalidOperation, match="asyncmongo runs on asyncio"):
        ping.send(None)


async def test_dereference_and_validate_collection() -> None:
    import bson

    from asyncmongo.bson import DBRef

    async with Standalone() as server, AsyncMongoClient(server.uri) as client:
        db = client.db
        await db.c.insert_one({"_id": 1, "x": 1})
        assert await db.dereference(DBRef("c", 1)) == {"_id": 1, "x": 1}
        assert await db.dereference(bson.DBRef("c", 1, "db")) == {"_id": 1, "x": 1}
        assert await db.dereference(DBRef("c", 2)) is None
        with pytest.raises(ValueError, match="another database"):
            await db.dereference(DBRef("c", 1, "other"))
        with pytest.raises(TypeError):
            await db.dereference({"$ref": "c", "$id": 1})
        with pytest.raises(TypeError):
            await db.validate_collection(5)  # type: ignore[arg-type]


async def test_cursor_retrieved_counts_the_documents_returned() -> None:
    async with Standalone() as server, AsyncMongoClient(server.uri) as client:
        coll = client.db.c
        await coll.insert_many([{"_id": i} for i in range(5)])
        cursor = coll.find().batch_size(2)
        assert cursor.retrieved == 0
        await cursor.next()
        assert cursor.retrieved == 2
        await cursor.to_list()
        assert cursor.retrieved == 5

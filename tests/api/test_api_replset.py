"""Read preference at every level against a simulated replica set, and CRUD's $out/$merge
server rule; plus the ``$readPreference`` each topology type needs (server-selection spec)."""

from __future__ import annotations

import asyncio
from typing import Any

from asyncmongo import AsyncMongoClient, CommandStartedEvent, ReadPreference
from asyncmongo.core.selection import Mode
from asyncmongo.testing import ReplicaSet, Standalone

SECONDARY = ReadPreference(Mode.SECONDARY)


def started(events: list[Any], name: str) -> list[CommandStartedEvent]:
    return [e for e in events if isinstance(e, CommandStartedEvent) and e.command_name == name]


async def test_read_preference_is_inherited_and_sent() -> None:
    events: list[Any] = []
    async with ReplicaSet(members=3) as rs:
        async with AsyncMongoClient(rs.uri, event_listeners=[events.append]) as client:
            await client.db.coll.insert_one({"_id": 1})
            primary_read = await client.db.coll.find_one({"_id": 1})
            secondary_coll = client.db.get_collection("coll", read_preference=SECONDARY)
            await secondary_coll.find_one({})
            by_db = client.get_database("db", read_preference=SECONDARY)
            await by_db.coll.count_documents({})
            with_options = client.db.coll.with_options(read_preference=SECONDARY)
            assert with_options.write_concern == client.db.coll.write_concern
            await with_options.distinct("_id")
    assert primary_read == {"_id": 1}
    finds = started(events, "find")
    primary_host = rs.primary.host if rs.primary else ""
    assert "$readPreference" not in finds[0].command
    assert f"{finds[0].connection_id[0]}:{finds[0].connection_id[1]}" == primary_host
    assert finds[1].command["$readPreference"] == {"mode": "secondary"}
    assert f"{finds[1].connection_id[0]}:{finds[1].connection_id[1]}" != primary_host
    assert started(events, "aggregate")[0].command["$readPreference"] == {"mode": "secondary"}
    assert started(events, "distinct")[0].command["$readPreference"] == {"mode": "secondary"}
    # writes never carry a read preference
    assert "$readPreference" not in started(events, "insert")[0].command


async def test_get_more_goes_to_the_cursors_server() -> None:
    events: list[Any] = []
    async with ReplicaSet(members=3) as rs:
        async with AsyncMongoClient(rs.uri, event_listeners=[events.append]) as client:
            await client.db.coll.insert_many([{"_id": i} for i in range(9)])
            coll = client.db.get_collection("coll", read_preference=SECONDARY)
            assert len(await coll.find(batch_size=2).to_list()) == 9
    find = started(events, "find")[0]
    get_mores = started(events, "getMore")
    assert get_mores and all(g.connection_id == find.connection_id for g in get_mores)
    assert all("$readPreference" not in g.command for g in get_mores)


async def test_out_stage_may_run_on_a_secondary_of_a_5_0_set() -> None:
    # the simulated members are mongod 7.0 (wire 21 >= 13), so CRUD lets a secondary run $out
    events: list[Any] = []
    async with ReplicaSet(members=2) as rs:
        async with AsyncMongoClient(rs.uri, event_listeners=[events.append]) as client:
            await client.db.src.insert_many([{"_id": i} for i in range(3)])
            coll = client.db.get_collection("src", read_preference=SECONDARY)
            cursor = await coll.aggregate([{"$match": {}}, {"$out": "dst"}])
            assert await cursor.to_list() == []
            assert await client.db.dst.count_documents({}) == 3
    aggregate = started(events, "aggregate")[0]
    assert aggregate.command["$readPreference"] == {"mode": "secondary"}
    assert "batchSize" not in aggregate.command["cursor"]


async def test_direct_connection_to_a_secondary_sends_primary_preferred() -> None:
    events: list[Any] = []
    async with ReplicaSet(members=2) as rs:
        secondary = rs.secondaries[0]
        uri = f"mongodb://{secondary.host}/?directConnection=true"
        async with AsyncMongoClient(uri, event_listeners=[events.append]) as client:
            await client.db.coll.find_one({})
    assert started(events, "find")[0].command["$readPreference"] == {"mode": "primaryPreferred"}


async def test_standalone_gets_no_read_preference() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            await client.get_database("db", read_preference=SECONDARY).coll.find_one({})
    assert "$readPreference" not in started(events, "find")[0].command


async def test_deployment_properties() -> None:
    async with ReplicaSet(members=3) as rs:
        async with AsyncMongoClient(rs.uri) as client:
            await client.db.command("ping")
            for _ in range(200):  # every member is discovered by its monitor
                if len(client.nodes) == 3 and len(client.secondaries) == 2:
                    break
                await asyncio.sleep(0.01)
            assert rs.primary is not None
            assert client.primary == client.address
            assert client.primary is not None and f"{client.primary[0]}:{client.primary[1]}" == (
                rs.primary.host
            )
            assert len(client.secondaries) == 2 and client.arbiters == frozenset()
            assert client.is_primary and not client.is_mongos
            info = await client.server_info()
            assert "version" in info


async def test_properties_before_connecting() -> None:
    client = AsyncMongoClient("mongodb://127.0.0.1:1/?directConnection=true")
    assert client.nodes == frozenset() and client.address is None and client.primary is None
    await client.aclose()

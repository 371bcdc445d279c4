"""CRUD scenarios run against any server: the simulator (test_api_crud) and jongodb
(test_api_jongodb). Each takes a fresh collection that no other scenario uses (jongodb has
no ``drop``) and a list that receives the client's command events."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from asyncmongo import (
    ASCENDING,
    DESCENDING,
    AsyncCollection,
    CommandStartedEvent,
    DeleteMany,
    DeleteOne,
    IndexModel,
    InsertOne,
    ReplaceOne,
    ReturnDocument,
    UpdateMany,
    UpdateOne,
    WriteConcern,
)
from asyncmongo.errors import BulkWriteError, DuplicateKeyError, InvalidArgument, OperationFailure

Scenario = Callable[[AsyncCollection, list[Any]], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(function: Scenario) -> Scenario:
    SCENARIOS[function.__name__] = function
    return function


def started(events: list[Any], name: str) -> list[CommandStartedEvent]:
    return [e for e in events if isinstance(e, CommandStartedEvent) and e.command_name == name]


@scenario
async def insert_and_find_one(coll: AsyncCollection, events: list[Any]) -> None:
    document: dict[str, Any] = {"name": "a", "n": 1}
    result = await coll.insert_one(document)
    assert result.acknowledged and result.inserted_id == document["_id"]
    assert await coll.find_one({"name": "a"}) == document
    assert await coll.find_one(document["_id"]) == document  # a bare _id
    assert await coll.find_one({"name": "missing"}) is None
    find = started(events, "find")[-1].command
    assert find["limit"] == 1 and find["singleBatch"] is True


@scenario
async def insert_many_keeps_order_and_ids(coll: AsyncCollection, events: list[Any]) -> None:
    documents = [{"_id": i, "n": i} for i in range(5)] + [{"n": 5}]
    result = await coll.insert_many(documents)
    assert result.inserted_ids[:5] == [0, 1, 2, 3, 4] and len(result.inserted_ids) == 6
    assert await coll.count_documents({}) == 6
    found = await coll.find({}, sort=[("n", ASCENDING)]).to_list()
    assert [d["n"] for d in found] == [0, 1, 2, 3, 4, 5]


@scenario
async def find_options(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_many([{"_id": i, "n": i % 3, "s": str(i)} for i in range(10)])
    cursor = coll.find({"n": {"$gte": 1}}, sort=[("_id", DESCENDING)], skip=1, limit=3)
    documents = await cursor.to_list()
    assert [(d["_id"], d["n"]) for d in documents] == [(7, 1), (5, 2), (4, 1)]
    chained = coll.find().sort("_id", -1).skip(2).limit(2)
    assert [d["_id"] for d in await chained.to_list()] == [7, 6]
    assert [d["_id"] for d in await coll.find(projection=["_id"]).sort("_id").to_list(3)] == [
        0,
        1,
        2,
    ]


@scenario
async def cursor_batches_use_get_more(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_many([{"_id": i} for i in range(10)])
    seen = [d["_id"] async for d in coll.find(batch_size=3).sort("_id")]
    assert seen == list(range(10))
    get_mores = started(events, "getMore")
    assert len(get_mores) == 3 and all(e.command["batchSize"] == 3 for e in get_mores)


@scenario
async def limit_stops_the_cursor(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_many([{"_id": i} for i in range(10)])
    documents = await coll.find(batch_size=2, limit=5).sort("_id").to_list()
    assert [d["_id"] for d in documents] == [0, 1, 2, 3, 4]
    get_mores = started(events, "getMore")
    assert [e.command["batchSize"] for e in get_mores] == [2, 1]


@scenario
async def early_exit_kills_the_cursor(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_many([{"_id": i} for i in range(10)])
    cursor = coll.find(batch_size=2)
    async for _ in cursor:
        break
    # leaving ``async for`` early finalizes its async generator: asyncio runs its aclose()
    # (which kills the cursor) as a task right away; a few loop turns let it finish
    for _ in range(100):
        if started(events, "killCursors") and not cursor.alive:
            break
        await asyncio.sleep(0.001)
    kills = started(events, "killCursors")
    assert len(kills) == 1 and kills[0].command["cursors"] == [cursor.cursor_id]
    assert not cursor.alive
    async with coll.find(batch_size=2) as second:
        assert await second.next() is not None
    assert len(started(events, "killCursors")) == 2
    exhausted = coll.find(batch_size=20)
    await exhausted.to_list()
    await exhausted.close()
    assert len(started(events, "killCursors")) == 2  # nothing to kill once exhausted


@scenario
async def next_and_stop(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_one({"_id": 1})
    cursor = coll.find()
    assert await cursor.next() == {"_id": 1}
    with pytest.raises(StopAsyncIteration):
        await cursor.next()
    assert not cursor.alive


@scenario
async def updates(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_many([{"_id": i, "n": 0} for i in range(3)])
    one = await coll.update_one({"n": 0}, {"$inc": {"n": 1}})
    assert (one.matched_count, one.modified_count, one.upserted_id) == (1, 1, None)
    many = await coll.update_many({}, {"$set": {"tag": "x"}})
    assert (many.matched_count, many.modified_count) == (3, 3)
    upsert = await coll.update_one({"_id": 10}, {"$set": {"n": 5}}, upsert=True)
    assert upsert.upserted_id == 10 and upsert.matched_count == 0 and upsert.did_upsert
    replaced = await coll.replace_one({"_id": 1}, {"n": 42})
    assert replaced.modified_count == 1
    assert await coll.find_one({"_id": 1}) == {"_id": 1, "n": 42}
    with pytest.raises(InvalidArgument):
        await coll.update_one({}, {"n": 1})
    with pytest.raises(InvalidArgument):
        await coll.replace_one({}, {"$set": {"n": 1}})


@scenario
async def pipeline_update(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 2}])
    result = await coll.update_many({"_id": 2}, [{"$set": {"m": "$n"}}])
    assert result.modified_count == 1
    assert await coll.find_one({"_id": 2}) == {"_id": 2, "n": 2, "m": 2}


@scenario
async def deletes(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_many([{"_id": i, "even": i % 2 == 0} for i in range(6)])
    assert (await coll.delete_one({"even": True})).deleted_count == 1
    assert (await coll.delete_many({"even": False})).deleted_count == 3
    assert (await coll.delete_many({"nothing": 1})).deleted_count == 0
    assert await coll.count_documents({}) == 2


@scenario
async def find_one_and_modify(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 2}])
    before = await coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 10}})
    assert before == {"_id": 1, "n": 1}
    after = await coll.find_one_and_update(
        {"_id": 1}, {"$inc": {"n": 1}}, return_document=ReturnDocument.AFTER
    )
    assert after == {"_id": 1, "n": 12}
    replaced = await coll.find_one_and_replace(
        {"_id": 2}, {"n": 20}, return_document=ReturnDocument.AFTER
    )
    assert replaced == {"_id": 2, "n": 20}
    upserted = await coll.find_one_and_update(
        {"_id": 3}, {"$set": {"n": 3}}, upsert=True, return_document=ReturnDocument.AFTER
    )
    assert upserted == {"_id": 3, "n": 3}
    deleted = await coll.find_one_and_delete({}, sort=[("n", DESCENDING)])
    assert deleted == {"_id": 2, "n": 20}
    assert await coll.find_one_and_delete({"_id": 99}) is None


@scenario
async def projections(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_one({"_id": 1, "a": 1, "b": 2})
    assert await coll.find_one({}, {"b": 0}) == {"_id": 1, "a": 1}
    changed = await coll.find_one_and_update(
        {"_id": 1}, {"$inc": {"a": 1}}, projection={"_id": 0, "a": 1}, return_document=True
    )
    assert changed == {"a": 2}


@scenario
async def counts_and_distinct(coll: AsyncCollection, events: list[Any]) -> None:
    assert await coll.count_documents({}) == 0
    await coll.insert_many([{"k": i % 3} for i in range(9)])
    assert await coll.count_documents({"k": 1}) == 3
    assert await coll.count_documents({}, skip=2, limit=5) == 5
    assert await coll.estimated_document_count() == 9
    assert sorted(await coll.distinct("k")) == [0, 1, 2]
    assert await coll.distinct("k", {"k": {"$gt": 0}}) in ([1, 2], [2, 1])


@scenario
async def aggregate_pipeline(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_many([{"g": i % 2, "v": i} for i in range(6)])
    cursor = await coll.aggregate(
        [{"$group": {"_id": "$g", "total": {"$sum": "$v"}}}, {"$sort": {"_id": 1}}]
    )
    assert await cursor.to_list() == [{"_id": 0, "total": 6}, {"_id": 1, "total": 9}]
    batched = await coll.aggregate([{"$sort": {"v": 1}}], batchSize=2)
    assert [d["v"] async for d in batched] == list(range(6))
    assert len(started(events, "getMore")) in (2, 3)  # servers may close at the end early


@scenario
async def bulk_write_mixed(coll: AsyncCollection, events: list[Any]) -> None:
    result = await coll.bulk_write(
        [
            InsertOne({"_id": 1, "n": 1}),
            InsertOne({"_id": 2, "n": 2}),
            UpdateOne({"_id": 1}, {"$set": {"n": 10}}),
            UpdateMany({}, {"$inc": {"n": 1}}),
            ReplaceOne({"_id": 3}, {"n": 3}, upsert=True),
            DeleteOne({"_id": 2}),
            DeleteMany({"n": {"$gt": 100}}),
        ]
    )
    assert result.inserted_count == 2
    assert (result.matched_count, result.modified_count) == (3, 3)
    assert (result.deleted_count, result.upserted_count) == (1, 1)
    assert result.upserted_ids == {4: 3}
    commands = [
        e for e in events if isinstance(e, CommandStartedEvent) and e.command_name != "endSessions"
    ]
    assert [e.command_name for e in commands] == ["insert", "update", "delete"]
    operation_ids = {e.operation_id for e in commands}
    assert len(operation_ids) == 1  # one bulk, one operation id


@scenario
async def bulk_write_ordered_error(coll: AsyncCollection, events: list[Any]) -> None:
    with pytest.raises(BulkWriteError) as info:
        await coll.bulk_write([InsertOne({"_id": 1}), InsertOne({"_id": 1}), InsertOne({"_id": 2})])
    details = info.value.details
    assert details is not None
    assert [e["index"] for e in details["writeErrors"]] == [1]
    assert details["writeErrors"][0]["code"] == 11000
    assert details["nInserted"] == 1
    assert await coll.count_documents({}) == 1


@scenario
async def bulk_write_unordered_errors_keep_user_indexes(
    coll: AsyncCollection, events: list[Any]
) -> None:
    await coll.insert_one({"_id": 0})
    requests = [
        UpdateOne({"_id": 0}, {"$set": {"a": 1}}),
        InsertOne({"_id": 0}),
        DeleteOne({"_id": 5}),
        InsertOne({"_id": 1}),
        InsertOne({"_id": 1}),
    ]
    with pytest.raises(BulkWriteError) as info:
        await coll.bulk_write(requests, ordered=False)
    details = info.value.details
    assert details is not None
    assert [e["index"] for e in details["writeErrors"]] == [1, 4]
    assert (details["nInserted"], details["nModified"], details["nRemoved"]) == (1, 1, 0)


@scenario
async def insert_many_unordered_reports_indexes(coll: AsyncCollection, events: list[Any]) -> None:
    with pytest.raises(BulkWriteError) as info:
        await coll.insert_many([{"_id": 1}, {"_id": 1}, {"_id": 2}, {"_id": 2}], ordered=False)
    details = info.value.details
    assert details is not None
    assert [e["index"] for e in details["writeErrors"]] == [1, 3]
    assert await coll.count_documents({}) == 2


@scenario
async def duplicate_key_on_single_insert(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_one({"_id": 1})
    with pytest.raises(DuplicateKeyError) as info:
        await coll.insert_one({"_id": 1})
    assert info.value.code == 11000


@scenario
async def unacknowledged_writes(coll: AsyncCollection, events: list[Any]) -> None:
    w0 = coll.with_options(write_concern=WriteConcern(w=0))
    result = await w0.insert_one({"_id": 1})
    assert result.acknowledged is False and result.inserted_id == 1
    update = await w0.update_one({"_id": 1}, {"$set": {"a": 1}})
    assert update.acknowledged is False
    # an acknowledged read on the same pool sees both (one connection, in order)
    assert await coll.find_one({"_id": 1}) == {"_id": 1, "a": 1}
    insert = started(events, "insert")[0].command
    assert insert["writeConcern"] == {"w": 0}


@scenario
async def indexes(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_one({"a": 1, "b": 1})
    assert await coll.create_index([("a", ASCENDING), ("b", DESCENDING)]) == "a_1_b_-1"
    names = await coll.create_indexes([IndexModel("b", name="by_b", unique=True)])
    assert names == ["by_b"]
    info = await coll.index_information()
    assert sorted(await coll.index_names()) == sorted(info) == ["_id_", "a_1_b_-1", "by_b"]
    assert info["a_1_b_-1"]["key"] == [("a", 1), ("b", -1)]
    assert info["by_b"]["unique"] is True
    await coll.drop_index([("a", 1), ("b", -1)])
    assert sorted(i["name"] for i in await (await coll.list_indexes()).to_list()) == [
        "_id_",
        "by_b",
    ]
    await coll.drop_indexes()
    assert list(await coll.index_information()) == ["_id_"]
    with pytest.raises(OperationFailure):
        await coll.drop_index("no_such_index")


@scenario
async def database_and_run_command(coll: AsyncCollection, events: list[Any]) -> None:
    await coll.insert_one({"_id": 1})
    db = coll.database
    assert coll.name in await db.list_collection_names()
    infos = await (await db.list_collections(filter={"name": coll.name})).to_list()
    assert [info["name"] for info in infos] == [coll.name]
    assert (await db.command("ping"))["ok"] == 1
    count = await db.command("count", coll.name)
    assert count["n"] == 1
    with pytest.raises(OperationFailure):
        await db.command("noSuchCommandAtAll")
    assert db.name in await db.client.list_database_names()

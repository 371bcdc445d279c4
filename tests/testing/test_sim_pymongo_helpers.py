"""PyMongo's own helpers against the simulator, with mongod's reply shapes.

Indexes, collection options and catalog helpers, the aggregation helpers, GridFS and change
streams, each as an application calls them through PyMongo (the test-only peer); the replies
are checked field by field against what the MongoDB manual documents for mongod (createIndexes,
dropIndexes, listIndexes, listCollections, create, renameCollection, count, distinct, the
GridFS spec's files and chunks collections, change events).
"""

from __future__ import annotations

import datetime
import io
from collections.abc import AsyncIterator
from typing import Any

import bson
import pytest
from bson import Binary, ObjectId, Timestamp
from gridfs import AsyncGridFSBucket
from gridfs.errors import NoFile
from pymongo import ASCENDING, DESCENDING, TEXT, AsyncMongoClient, IndexModel
from pymongo.errors import CollectionInvalid, OperationFailure, WriteError

from asyncmongo.testing.deployment import ReplicaSet, Standalone
from tests.support.pymongo_peer import PYMONGO_PEER_MARKS, collect_pymongo_leaks  # noqa: F401

pytestmark = [pytest.mark.timeout(60), *PYMONGO_PEER_MARKS]


@pytest.fixture
async def client() -> AsyncIterator[AsyncMongoClient[dict[str, Any]]]:
    """PyMongo on a one-member replica set (change streams need one)."""
    async with ReplicaSet(1) as rs:
        peer: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            rs.uri, serverSelectionTimeoutMS=5000)
        try:
            yield peer
        finally:
            await peer.close()


async def failure(awaitable: Any) -> OperationFailure:
    with pytest.raises(OperationFailure) as caught:
        await awaitable
    return caught.value


# -- indexes --

async def test_create_and_list_indexes(client: AsyncMongoClient[dict[str, Any]]) -> None:
    coll = client.h.items
    await coll.insert_one({"a": 1, "s": "x"})
    assert await coll.create_index([("a", ASCENDING), ("s", DESCENDING)], sparse=True) == "a_1_s_-1"
    assert await coll.create_indexes([
        IndexModel("s", name="s_unique", unique=True),
        IndexModel([("s", TEXT)]),
        IndexModel("a", expireAfterSeconds=30, partialFilterExpression={"a": {"$gt": 0}}),
    ]) == ["s_unique", "s_text", "a_1"]
    listed = await (await coll.list_indexes()).to_list()
    # listIndexes: v, key and name first, then the options the index was created with
    assert [list(spec)[:3] for spec in listed] == [["v", "key", "name"]] * 5
    assert [spec["name"] for spec in listed] == ["_id_", "a_1_s_-1", "s_unique", "s_text", "a_1"]
    assert all(type(spec["v"]) is int and spec["v"] == 2 for spec in listed)
    by_name = {spec["name"]: spec for spec in listed}
    assert by_name["a_1_s_-1"]["sparse"] is True
    assert by_name["s_unique"]["unique"] is True
    assert by_name["a_1"]["expireAfterSeconds"] == 30
    assert by_name["a_1"]["partialFilterExpression"] == {"a": {"$gt": 0}}
    # a text index is listed in mongod's internal form
    text = by_name["s_text"]
    assert dict(text["key"]) == {"_fts": "text", "_ftsx": 1}
    assert (dict(text["weights"]), text["default_language"], text["language_override"],
            text["textIndexVersion"]) == ({"s": 1}, "english", "language", 3)
    information = await coll.index_information()
    assert information["_id_"] == {"v": 2, "key": [("_id", 1)]}
    assert information["a_1_s_-1"]["key"] == [("a", 1), ("s", -1)]


async def test_create_indexes_command_replies(client: AsyncMongoClient[dict[str, Any]]) -> None:
    db = client.h
    created = await db.command("createIndexes", "fresh", indexes=[{"key": {"z": 1},
                                                                   "name": "z_1"}])
    assert {key: created[key] for key in ("numIndexesBefore", "numIndexesAfter",
                                           "createdCollectionAutomatically", "ok")} == {
        "numIndexesBefore": 1, "numIndexesAfter": 2, "createdCollectionAutomatically": True,
        "ok": 1.0}
    again = await db.command("createIndexes", "fresh", indexes=[{"key": {"z": 1},
                                                                 "name": "z_1"}])
    assert again["note"] == "all indexes already exist"
    assert (again["numIndexesBefore"], again["numIndexesAfter"]) == (2, 2)
    assert again["createdCollectionAutomatically"] is False
    dropped = await db.command("dropIndexes", "fresh", index="z_1")
    assert dropped["nIndexesWas"] == 2 and dropped["ok"] == 1.0


async def test_index_errors_carry_mongod_codes(client: AsyncMongoClient[dict[str, Any]]) -> None:
    coll = client.h.items
    await coll.create_index("a", name="x")
    assert await coll.create_index("a", name="x") == "x"  # the same spec again is no error
    conflict = await failure(coll.create_index("b", name="x"))
    assert (conflict.code, conflict.details["codeName"]) == (86, "IndexKeySpecsConflict")
    renamed = await failure(coll.create_index("a", name="y"))
    assert (renamed.code, renamed.details["codeName"]) == (85, "IndexOptionsConflict")
    missing = await failure(coll.drop_index("nope"))
    assert (missing.code, missing.details["codeName"]) == (27, "IndexNotFound")
    assert missing.details["errmsg"] == "index not found with name [nope]"
    id_index = await failure(coll.drop_index("_id_"))
    assert (id_index.code, id_index.details["errmsg"]) == (72, "cannot drop _id index")


async def test_drop_index_helpers(client: AsyncMongoClient[dict[str, Any]]) -> None:
    coll = client.h.items
    await coll.create_indexes([IndexModel("a"), IndexModel([("b", 1), ("c", -1)])])
    await coll.drop_index([("b", 1), ("c", -1)])  # by key, as PyMongo names it
    assert sorted(await coll.index_information()) == ["_id_", "a_1"]
    await coll.drop_indexes()
    assert list(await coll.index_information()) == ["_id_"]


# -- collections --

async def test_create_collection_options(client: AsyncMongoClient[dict[str, Any]]) -> None:
    db = client.h
    await db.create_collection("capped", capped=True, size=1000, max=5)
    await db.create_collection("checked", validator={"a": {"$type": "int"}},
                               validationLevel="strict", validationAction="error")
    await db.create_collection("french", collation={"locale": "fr", "strength": 2})
    await db.create_collection("series", timeseries={"timeField": "t", "metaField": "m"})
    # PyMongo sends size as a double; mongod keeps it rounded up to a multiple of 256 and
    # lists size and max as integers
    capped = await db.capped.options()
    assert capped == {"capped": True, "size": 1024, "max": 5}
    assert type(capped["size"]) is int and type(capped["max"]) is int
    assert await db.checked.options() == {"validator": {"a": {"$type": "int"}},
                                          "validationLevel": "strict",
                                          "validationAction": "error"}
    french = (await db.french.options())["collation"]
    assert (french["locale"], french["strength"]) == ("fr", 2)
    series = (await db.series.options())["timeseries"]
    assert (series["timeField"], series["metaField"], series["granularity"]) == (
        "t", "m", "seconds")
    assert await db.nothing.options() == {}
    with pytest.raises(CollectionInvalid, match="collection capped already exists"):
        await db.create_collection("capped")
    await db.capped.insert_many([{"i": i} for i in range(8)])
    assert [d["i"] for d in await db.capped.find().to_list()] == [3, 4, 5, 6, 7]
    with pytest.raises(WriteError) as refused:
        await db.checked.insert_one({"a": "text"})
    assert refused.value.code == 121
    assert refused.value.details["errInfo"]["failingDocumentId"] is not None


async def test_unknown_create_option_is_refused(client: AsyncMongoClient[dict[str, Any]]) -> None:
    unknown = await failure(client.h.create_collection("odd", notAnOption=1))
    assert unknown.code == 40415
    assert unknown.details["errmsg"] == "BSON field 'create.notAnOption' is an unknown field."


async def test_list_collections_shapes(client: AsyncMongoClient[dict[str, Any]]) -> None:
    db = client.h
    await db.create_collection("plain")
    await db.create_collection("series", timeseries={"timeField": "t"})
    await db.create_collection("view", viewOn="plain", pipeline=[{"$match": {"a": 1}}])
    listed = {info["name"]: info for info in await (await db.list_collections()).to_list()}
    plain = listed["plain"]
    assert list(plain) == ["name", "type", "options", "info", "idIndex"]
    assert (plain["type"], plain["options"], plain["info"]["readOnly"]) == (
        "collection", {}, False)
    assert isinstance(plain["info"]["uuid"], Binary) and plain["info"]["uuid"].subtype == 4
    assert plain["idIndex"] == {"v": 2, "key": {"_id": 1}, "name": "_id_"}
    assert listed["series"]["type"] == "timeseries" and "idIndex" not in listed["series"]
    view = listed["view"]
    assert (view["type"], view["options"], view["info"]) == (
        "view", {"viewOn": "plain", "pipeline": [{"$match": {"a": 1}}]}, {"readOnly": True})
    names = await db.command("listCollections", nameOnly=True)
    assert sorted(names["cursor"]["firstBatch"], key=lambda info: info["name"]) == [
        {"name": "plain", "type": "collection"}, {"name": "series", "type": "timeseries"},
        {"name": "view", "type": "view"}]
    assert sorted(await db.list_collection_names()) == ["plain", "series", "view"]
    assert await db.list_collection_names(filter={"type": "view"}) == ["view"]


async def test_rename_and_drop(client: AsyncMongoClient[dict[str, Any]]) -> None:
    db = client.h
    await db.a.insert_one({"_id": 1})
    await db.b.insert_one({"_id": 2})
    exists = await failure(db.a.rename("b"))
    assert (exists.code, exists.details["codeName"]) == (48, "NamespaceExists")
    reply = await db.a.rename("b", dropTarget=True)
    assert reply["ok"] == 1.0
    assert await db.b.find().to_list() == [{"_id": 1}]
    missing = await failure(db.nothing.rename("c"))
    assert missing.code == 26  # NamespaceNotFound
    await db.create_collection("view", viewOn="b", pipeline=[])
    view = await failure(db.view.rename("view2"))
    assert (view.code, view.details["errmsg"]) == (166, "cannot rename view: h.view")
    await db.view.drop()
    await db.b.drop()
    await db.never.drop()  # dropping a missing collection succeeds
    assert await db.list_collection_names() == []


async def test_index_helpers_on_missing_collections_and_views(
        client: AsyncMongoClient[dict[str, Any]]) -> None:
    db = client.h
    missing = await failure(db.command("listIndexes", "missing"))
    assert (missing.code, missing.details["errmsg"]) == (26, "ns does not exist: h.missing")
    assert await db.missing.index_information() == {}  # PyMongo reads 26 as no indexes
    await db.create_collection("view", viewOn="base", pipeline=[])
    on_view = await failure(db.view.create_index("a"))
    assert on_view.code == 166  # CommandNotSupportedOnView


# -- aggregation helpers --

async def test_aggregation_helpers(client: AsyncMongoClient[dict[str, Any]]) -> None:
    coll = client.h.numbers
    await coll.insert_many([{"_id": i, "a": i % 3} for i in range(10)])
    pipeline: list[dict[str, Any]] = [{"$group": {"_id": "$a", "n": {"$sum": 1}}},
                                      {"$sort": {"_id": 1}}]
    assert await (await coll.aggregate(pipeline)).to_list() == [
        {"_id": 0, "n": 4}, {"_id": 1, "n": 3}, {"_id": 2, "n": 3}]
    batches = [batch async for batch in await coll.aggregate_raw_batches(
        [{"$sort": {"_id": 1}}], batchSize=3)]
    assert [len(bson.decode_all(batch)) for batch in batches] == [3, 3, 3, 1]
    assert [doc["_id"] for batch in batches for doc in bson.decode_all(batch)] == list(
        range(10))
    assert await coll.count_documents({"a": 1}) == 3
    assert await coll.count_documents({}, skip=2, limit=5) == 5
    assert await coll.count_documents({}, hint="_id_") == 10
    assert await coll.estimated_document_count() == 10
    assert sorted(await coll.distinct("a")) == [0, 1, 2]
    assert await coll.distinct("a", {"_id": {"$lt": 2}}) == [0, 1]
    count = await client.h.command("count", "numbers")
    assert (count["n"], type(count["n"])) == (10, int)
    distinct = await client.h.command("distinct", "numbers", key="a")
    assert sorted(distinct["values"]) == [0, 1, 2]
    empty = client.h.missing
    assert (await empty.count_documents({}), await empty.estimated_document_count(),
            await empty.distinct("a")) == (0, 0, [])


# -- GridFS --

async def test_gridfs_bucket(client: AsyncMongoClient[dict[str, Any]]) -> None:
    db = client.files
    bucket = AsyncGridFSBucket(db, chunk_size_bytes=1000)
    data = bytes(range(256)) * 10
    file_id = await bucket.upload_from_stream("a.bin", io.BytesIO(data), metadata={"k": 1})
    assert isinstance(file_id, ObjectId)
    out = io.BytesIO()
    await bucket.download_to_stream(file_id, out)
    assert out.getvalue() == data
    # the GridFS spec's files document, as the server stored it
    files = await db["fs.files"].find().to_list()
    assert len(files) == 1
    stored = files[0]
    assert (stored["_id"], stored["filename"], stored["length"], stored["chunkSize"],
            stored["metadata"]) == (file_id, "a.bin", len(data), 1000, {"k": 1})
    assert isinstance(stored["uploadDate"], datetime.datetime)
    chunks = await db["fs.chunks"].find({}, sort=[("n", 1)]).to_list()
    assert [chunk["n"] for chunk in chunks] == [0, 1, 2]
    assert b"".join(chunk["data"] for chunk in chunks) == data
    # the indexes PyMongo's GridFS creates on first write
    assert (await db["fs.chunks"].index_information())["files_id_1_n_1"]["unique"] is True
    assert (await db["fs.files"].index_information())["filename_1_uploadDate_1"]["key"] == [
        ("filename", 1), ("uploadDate", 1)]
    found = await bucket.find({"filename": "a.bin"}).to_list()
    assert [grid_out._id for grid_out in found] == [file_id]
    await bucket.rename(file_id, "b.bin")
    by_name = await bucket.open_download_stream_by_name("b.bin")
    assert await by_name.read() == data
    await bucket.delete(file_id)
    assert await db["fs.chunks"].count_documents({}) == 0
    with pytest.raises(NoFile):
        await bucket.delete(file_id)
    with pytest.raises(NoFile):
        await bucket.open_download_stream(file_id)


# -- change streams --

def _event_shape(event: dict[str, Any]) -> None:
    """The fields every change event carries (manual: Change Events)."""
    assert isinstance(event["_id"]["_data"], str)
    assert isinstance(event["clusterTime"], Timestamp)
    assert isinstance(event["wallTime"], datetime.datetime)


async def test_collection_change_stream(client: AsyncMongoClient[dict[str, Any]]) -> None:
    coll = client.h.watched
    async with await coll.watch(full_document="updateLookup") as stream:
        await coll.insert_one({"_id": 1, "x": 1, "l": [1, 2, 3]})
        await coll.update_one({"_id": 1}, {"$set": {"x": 2, "l": [1]}, "$unset": {"gone": ""}})
        inserted = await stream.next()
        updated = await stream.next()
        await coll.delete_one({"_id": 1})
        deleted = await stream.next()
    for event in (inserted, updated, deleted):
        _event_shape(event)
        assert (event["ns"], event["documentKey"]) == ({"db": "h", "coll": "watched"},
                                                      {"_id": 1})
    assert list(inserted) == ["_id", "operationType", "clusterTime", "wallTime",
                              "fullDocument", "ns", "documentKey"]
    assert inserted["fullDocument"] == {"_id": 1, "x": 1, "l": [1, 2, 3]}
    assert updated["operationType"] == "update"
    # mongod describes an update by the diff of the two documents: an array cut short to a
    # prefix of itself is a truncation, not a new value
    assert updated["updateDescription"] == {
        "updatedFields": {"x": 2}, "removedFields": [],
        "truncatedArrays": [{"field": "l", "newSize": 1}]}
    assert updated["fullDocument"] in ({"_id": 1, "x": 2, "l": [1]}, None)
    assert deleted["operationType"] == "delete" and "fullDocument" not in deleted


async def test_database_and_client_change_streams(
        client: AsyncMongoClient[dict[str, Any]]) -> None:
    async with await client.h.watch([{"$match": {"operationType": "insert"}}]) as stream:
        await client.h.one.insert_one({"_id": 1})
        event = await stream.next()
        token = stream.resume_token
    assert event["ns"] == {"db": "h", "coll": "one"}
    assert token == event["_id"]
    async with await client.watch(resume_after=token) as resumed:
        await client.other.two.insert_one({"_id": 2})
        later = await resumed.next()
    assert (later["ns"], later["documentKey"]) == ({"db": "other", "coll": "two"}, {"_id": 2})
    async with await client.h.one.watch(start_after=token) as after:
        await client.h.one.insert_one({"_id": 3})
        assert (await after.next())["documentKey"] == {"_id": 3}


async def test_change_streams_need_a_replica_set() -> None:
    async with Standalone() as standalone:
        peer: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
            standalone.uri, serverSelectionTimeoutMS=5000)
        try:
            refused = await failure(peer.h.c.watch())
        finally:
            await peer.close()
    assert refused.code == 40573
    assert refused.details["errmsg"] == (
        "The $changeStream stage is only supported on replica sets")


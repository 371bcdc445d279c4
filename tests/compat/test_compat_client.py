"""asyncmongo.compat.AsyncMongoClient hands back PyMongo's errors, results and idioms."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import bson.errors
import pymongo
import pymongo.errors
import pymongo.results
import pytest

import asyncmongo
import asyncmongo.errors
from asyncmongo import compat
from asyncmongo.testing import ReplicaSet, Standalone

pytestmark = pytest.mark.timeout(60)


async def test_errors_are_pymongos_and_asyncmongos() -> None:
    async with Standalone() as server, compat.AsyncMongoClient(server.uri) as client:
        coll = client.db.c
        await coll.insert_one({"_id": 1})
        with pytest.raises(pymongo.errors.DuplicateKeyError) as caught:
            await coll.insert_one({"_id": 1})
        error = caught.value
        assert isinstance(error, asyncmongo.errors.DuplicateKeyError)
        assert error.code == 11000 and error.details is not None
        assert error.details["code"] == 11000
        with pytest.raises(pymongo.errors.BulkWriteError) as bulk:
            await coll.insert_many([{"_id": 2}, {"_id": 1}])
        assert bulk.value.details is not None
        assert bulk.value.details["nInserted"] == 1
        with pytest.raises(pymongo.errors.OperationFailure) as failed:
            await client.db.command("noSuchCommand")
        assert failed.value.code == 59
        with pytest.raises(bson.errors.InvalidDocument):
            await coll.insert_one({"x": object()})
        cursor = coll.find()
        await cursor.to_list(None)
        with pytest.raises(pymongo.errors.InvalidOperation):
            cursor.limit(1)  # a client-side error, raised before any I/O


async def test_errors_at_construction_and_selection_are_pymongos() -> None:
    with pytest.raises(pymongo.errors.ConfigurationError):
        compat.AsyncMongoClient("mongodb://h/?w=-5&unknownOption=x&maxPoolSize=-1")
    client = compat.AsyncMongoClient(
        "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100&connectTimeoutMS=100"
    )
    try:
        with pytest.raises(pymongo.errors.ServerSelectionTimeoutError):
            await client.db.c.find_one()
    finally:
        await client.close()


async def test_results_and_api_objects_are_compatible() -> None:
    async with Standalone() as server, compat.AsyncMongoClient(server.uri) as client:
        db = client["db"]
        coll = db.c
        assert isinstance(db, compat.AsyncDatabase) and isinstance(db, asyncmongo.AsyncDatabase)
        assert isinstance(coll, compat.AsyncCollection)
        assert isinstance(client.get_database("x").get_collection("y"), compat.AsyncCollection)
        one = await coll.insert_one({"a": 1})
        assert isinstance(one, pymongo.results.InsertOneResult)
        many = await coll.insert_many([{"a": 2}, {"a": 3}])
        assert isinstance(many, pymongo.results.InsertManyResult)
        assert len(many.inserted_ids) == 2
        updated = await coll.update_many({}, {"$inc": {"a": 1}})
        assert isinstance(updated, pymongo.results.UpdateResult)
        assert (updated.matched_count, updated.raw_result["updatedExisting"]) == (3, True)
        deleted = await coll.delete_one({"a": 2})
        assert isinstance(deleted, pymongo.results.DeleteResult) and deleted.deleted_count == 1
        bulk = await coll.bulk_write([pymongo.InsertOne({"a": 9})])
        assert isinstance(bulk, pymongo.results.BulkWriteResult) and bulk.inserted_count == 1
        cursor = coll.find().sort("a")
        assert isinstance(cursor, compat.AsyncCursor)
        assert [doc["a"] async for doc in cursor] == [3, 4, 9]
        command_cursor = await coll.aggregate([{"$count": "n"}])
        assert isinstance(command_cursor, compat.AsyncCommandCursor)
        assert await command_cursor.to_list(None) == [{"n": 3}]
        async with client.start_session() as session:
            assert isinstance(session, compat.AsyncClientSession)
            assert await coll.count_documents({}, session=session) == 3


async def test_server_properties_are_awaited_as_in_pymongo() -> None:
    async with ReplicaSet(members=2) as rs:
        client = compat.AsyncMongoClient(rs.uri)
        peer = pymongo.AsyncMongoClient(rs.uri)
        try:
            assert await client.address == await peer.address
            assert await client.is_primary is await peer.is_primary is True
            assert await client.is_mongos is await peer.is_mongos is False
            assert await client.primary == await peer.primary
            # Secondaries are known once their monitor has checked them, in both drivers.
            for _ in range(200):
                if len(await client.secondaries) == len(await peer.secondaries) == 1:
                    break
                await asyncio.sleep(0.02)
            assert await client.secondaries == await peer.secondaries
            assert await client.arbiters == await peer.arbiters == set()
        finally:
            await client.close()
            await peer.close()


async def test_cursor_distinct_runs_in_the_cursors_session() -> None:
    async with ReplicaSet(members=1) as rs:
        for client_class in (asyncmongo.AsyncMongoClient, compat.AsyncMongoClient):
            started: list[Any] = []
            async with client_class(rs.uri, event_listeners=[started.append]) as client:
                coll = client.db.c
                await coll.insert_many([{"k": 1}, {"k": 2}])
                async with client.start_session() as session:
                    async with await session.start_transaction():
                        cursor = coll.find({"k": {"$gt": 1}}, session=session)
                        assert await cursor.distinct("k") == [2]
            (distinct,) = [
                e.command for e in started if isinstance(e, asyncmongo.CommandStartedEvent)
                and e.command_name == "distinct"
            ]
            assert distinct["query"] == {"k": {"$gt": 1}}
            assert "txnNumber" in distinct and distinct["startTransaction"] is True


async def test_values_read_back_are_pymongos_classes() -> None:
    import uuid

    import bson
    from bson.codec_options import CodecOptions as PyMongoCodecOptions
    from bson.son import SON

    document = {
        "_id": bson.ObjectId(),
        "i64": bson.Int64(7),
        "dec": bson.Decimal128("1.5"),
        "bin": bson.Binary(b"\x01\x02", 0),
        "uuid4": bson.Binary(uuid.uuid4().bytes, 4),
        "ref": bson.DBRef("other", 1),
        "re": bson.Regex("^a", "i"),
        "ts": bson.Timestamp(5, 1),
        "code": bson.Code("f()", {"x": 1}),
        "min": bson.MinKey(),
        "max": bson.MaxKey(),
        "when": datetime.datetime(2026, 11, 27, 1, 2, 3, 4000),
    }
    async with Standalone() as server:
        async with compat.AsyncMongoClient(server.uri) as client:
            coll = client.db.values
            await coll.insert_one(document)
            found = await coll.find_one()
            # The same document as PyMongo itself decodes it: equal, class for class
            # (PyMongo reads binary subtype 0 back as bytes).
            async with pymongo.AsyncMongoClient(server.uri) as peer:
                theirs = await peer.db.values.find_one()
            assert found == theirs and theirs is not None
            for key, value in theirs.items():
                assert type(found[key]) is type(value), key
            assert type(found["i64"]) is bson.Int64 and found["bin"] == b"\x01\x02"
            # PyMongo's CodecOptions on a child scope keep PyMongo's classes.
            aware = coll.with_options(codec_options=PyMongoCodecOptions(tz_aware=True))
            aware_found = await aware.find_one()
            assert isinstance(aware_found["_id"], bson.ObjectId)
            assert aware_found["when"].tzinfo is not None
        async with compat.AsyncMongoClient(
            server.uri, document_class=SON, uuidRepresentation="standard"
        ) as client:
            found = await client.db.values.find_one()
            assert isinstance(found, SON)
            assert isinstance(found["uuid4"], uuid.UUID)


async def test_ids_made_by_the_driver_are_pymongos_object_ids() -> None:
    import bson

    async with Standalone() as server, compat.AsyncMongoClient(server.uri) as client:
        coll = client.db.ids
        document: dict[str, Any] = {"a": 1}
        result = await coll.insert_one(document)
        assert type(result.inserted_id) is bson.ObjectId is type(document["_id"])
        many = await coll.insert_many([{"b": 1}, {"b": 2}])
        assert all(type(i) is bson.ObjectId for i in many.inserted_ids)
        # asyncmongo's generator makes them: valid, now, one process value, counting up
        first, second = many.inserted_ids
        assert first == bson.ObjectId(str(first)) and first < second
        assert abs(first.generation_time - datetime.datetime.now(datetime.UTC)).total_seconds() < 5
        assert first.binary[4:9] == second.binary[4:9] == asyncmongo.bson.ObjectId().binary[4:9]
        assert int.from_bytes(second.binary[9:], "big") - int.from_bytes(
            first.binary[9:], "big") in (1, 1 - 2**24)
        assert await coll.find_one({"_id": second}) == {"_id": second, "b": 2}
        model = pymongo.InsertOne({"c": 1})
        await coll.bulk_write([model])
        assert type(model._doc["_id"]) is bson.ObjectId
        bucket = compat.AsyncGridFSBucket(client.db)
        file_id = await bucket.upload_from_stream("f", b"data")
        assert type(file_id) is bson.ObjectId
    async with Standalone() as server, asyncmongo.AsyncMongoClient(server.uri) as plain:
        made = await plain.db.ids.insert_one({})
        assert type(made.inserted_id) is asyncmongo.bson.ObjectId


async def test_command_codec_options_keep_pymongos_classes() -> None:
    import bson
    from bson.codec_options import CodecOptions as PyMongoCodecOptions
    from bson.son import SON

    async with Standalone() as server, compat.AsyncMongoClient(server.uri) as client:
        await client.db.c.insert_one({"_id": 1, "i": bson.Int64(5)})
        options = PyMongoCodecOptions(document_class=SON)
        reply = await client.db.command("find", "c", codec_options=options)
        assert isinstance(reply, SON)
        assert type(reply["cursor"]["firstBatch"][0]["i"]) is bson.Int64
        cursor = await client.db.cursor_command("find", "c", codec_options=options)
        assert type((await cursor.next())["i"]) is bson.Int64


async def test_client_bulk_write_result_and_error_have_pymongos_shape() -> None:
    async with ReplicaSet(members=1) as rs, compat.AsyncMongoClient(rs.uri) as client:
        assert (client.HOST, client.PORT) == (pymongo.MongoClient.HOST, pymongo.MongoClient.PORT)
        result = await client.bulk_write([pymongo.InsertOne({"_id": 1}, namespace="db.c")])
        assert result.bulk_api_result["anySuccessful"] is True
        assert result.bulk_api_result["writeErrors"] == []
        with pytest.raises(pymongo.errors.ClientBulkWriteException) as caught:
            await client.bulk_write([pymongo.InsertOne({"_id": 1}, namespace="db.c")])
        assert caught.value.code == 65


async def test_gridfs_find_yields_grid_outs_as_pymongos() -> None:
    async with Standalone() as server, compat.AsyncMongoClient(server.uri) as client:
        bucket = compat.AsyncGridFSBucket(client.db)
        await bucket.upload_from_stream("a.txt", b"hello")
        cursor = bucket.find({"filename": "a.txt"})
        assert type(cursor).__name__ == "AsyncGridOutCursor"
        (grid_out,) = await cursor.to_list()
        assert grid_out.filename == "a.txt" and await grid_out.read() == b"hello"


async def test_unacknowledged_results_are_pymongos() -> None:
    from pymongo.write_concern import WriteConcern

    async with Standalone() as server, compat.AsyncMongoClient(server.uri) as client:
        coll = client.db.c.with_options(write_concern=WriteConcern(w=0))
        deleted = await coll.delete_many({})
        assert (deleted.acknowledged, deleted.raw_result) == (False, {"ok": 1})
        bulk = await coll.bulk_write([pymongo.InsertOne({"_id": 1})])
        assert (bulk.acknowledged, bulk.bulk_api_result) == (False, {})


async def test_grid_out_iterates_by_line_as_pymongos() -> None:
    async with Standalone() as server, compat.AsyncMongoClient(server.uri) as client:
        bucket = compat.AsyncGridFSBucket(client.db, chunk_size_bytes=5)
        await bucket.upload_from_stream_with_id(1, "f", b"one\ntwo\nend")
        grid_out = await bucket.open_download_stream(1)
        assert [line async for line in grid_out] == [b"one\n", b"two\n", b"end"]

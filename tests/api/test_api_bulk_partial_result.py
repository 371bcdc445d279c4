"""A failed collection bulk write tells what was already applied (issue #10).

Every error raised out of ``AsyncCollection.bulk_write`` / ``insert_many`` carries
``partial_result``: the BulkWriteResult of the commands the server acknowledged before it,
whatever the error's type (network error after the retry, server error, DocumentTooLarge,
BulkWriteError); None for an unacknowledged (w:0) write.
"""

from __future__ import annotations

import pytest

from asyncmongo import (
    AsyncMongoClient,
    DeleteOne,
    InsertOne,
    UpdateOne,
    WriteConcern,
)
from asyncmongo.errors import (
    AutoReconnect,
    BulkWriteError,
    DocumentTooLarge,
    OperationFailure,
)
from asyncmongo.results import BulkWriteResult
from asyncmongo.testing import Standalone

#: Larger than the server's maxBsonObjectSize (16 MiB): refused before it is sent.
HUGE = "x" * (17 * 1024 * 1024)


async def test_ordered_network_error_counts_the_first_command() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, retryWrites=False) as client:
            coll = client.db.c
            with server.fail_point({"times": 1}, failCommands=["update"], closeConnection=True):
                with pytest.raises(AutoReconnect) as info:
                    await coll.bulk_write([
                        InsertOne({"_id": 1}), InsertOne({"_id": 2}),
                        UpdateOne({"_id": 1}, {"$set": {"x": 1}}), DeleteOne({"_id": 2}),
                    ])
            partial = info.value.partial_result
            assert isinstance(partial, BulkWriteResult)
            assert partial.acknowledged
            assert (partial.inserted_count, partial.matched_count, partial.deleted_count) == (
                2, 0, 0)
            assert await coll.count_documents({}) == 2


async def test_ordered_network_error_after_the_retry_counts_what_went() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:  # retryable writes: retried once
            coll = client.db.c
            await coll.insert_one({"_id": 9})
            with server.fail_point({"times": 2}, failCommands=["delete"], closeConnection=True):
                with pytest.raises(AutoReconnect) as info:
                    await coll.bulk_write([
                        InsertOne({"_id": 1}),
                        UpdateOne({"_id": 9}, {"$set": {"x": 1}}, upsert=True),
                        UpdateOne({"_id": 7}, {"$set": {"x": 1}}, upsert=True),
                        DeleteOne({"_id": 1}),
                    ])
            partial = info.value.partial_result
            assert isinstance(partial, BulkWriteResult)
            assert partial.inserted_count == 1
            assert (partial.matched_count, partial.modified_count) == (1, 1)
            assert partial.upserted_ids == {2: 7}
            assert partial.deleted_count == 0


async def test_unordered_network_error_counts_the_other_runs() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, retryWrites=False) as client:
            coll = client.db.c
            with server.fail_point({"times": 1}, failCommands=["update"], closeConnection=True):
                with pytest.raises(AutoReconnect) as info:
                    await coll.bulk_write([
                        InsertOne({"_id": 1}),
                        UpdateOne({"_id": 1}, {"$set": {"x": 1}}),
                        InsertOne({"_id": 2}),
                    ], ordered=False)
            partial = info.value.partial_result
            assert isinstance(partial, BulkWriteResult)
            assert (partial.inserted_count, partial.matched_count) == (2, 0)


async def test_server_error_on_the_first_command_is_an_empty_partial_result() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            with server.fail_point({"times": 1}, failCommands=["insert"], errorCode=8):
                with pytest.raises(OperationFailure) as info:
                    await client.db.c.insert_many([{"_id": 1}, {"_id": 2}])
            assert not isinstance(info.value, BulkWriteError)
            partial = info.value.partial_result
            assert isinstance(partial, BulkWriteResult)
            assert partial.inserted_count == 0
            assert partial.upserted_ids == {}


async def test_document_too_large_in_a_later_command_counts_the_earlier() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            coll = client.db.c
            with pytest.raises(DocumentTooLarge) as info:
                await coll.bulk_write([
                    InsertOne({"_id": 1}), DeleteOne({"_id": 1}), InsertOne({"s": HUGE}),
                ])
            partial = info.value.partial_result
            assert isinstance(partial, BulkWriteResult)
            assert (partial.inserted_count, partial.deleted_count) == (1, 1)


async def test_bulk_write_error_has_details_and_the_same_partial_result() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            coll = client.db.c
            with pytest.raises(BulkWriteError) as info:
                await coll.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 1}, {"_id": 3}])
            error = info.value
            assert error.details is not None
            assert error.details["nInserted"] == 2
            partial = error.partial_result
            assert isinstance(partial, BulkWriteResult)
            assert partial.inserted_count == 2
            assert partial.bulk_api_result["writeErrors"][0]["index"] == 2


async def test_unacknowledged_bulk_error_has_no_partial_result() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            coll = client.db.get_collection("c", write_concern=WriteConcern(w=0))
            with pytest.raises(DocumentTooLarge) as info:
                await coll.bulk_write([
                    InsertOne({"_id": 1}), DeleteOne({"_id": 1}), InsertOne({"s": HUGE}),
                ])
            assert info.value.partial_result is None


async def test_errors_outside_a_bulk_write_have_no_partial_result() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            with server.fail_point({"times": 1}, failCommands=["find"], errorCode=8):
                with pytest.raises(OperationFailure) as info:
                    await client.db.c.find_one({})
            assert info.value.partial_result is None

"""PyMongo (the independent client) against the store, through a minimal wire front end.

Where PyMongo and the store disagree about a reply, the store is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.store.wire_front import StoreServer

pymongo = pytest.importorskip("pymongo")
from pymongo import ReturnDocument  # noqa: E402
from pymongo.errors import (  # noqa: E402
    BulkWriteError,
    DuplicateKeyError,
    OperationFailure,
)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with StoreServer() as server:
        client = pymongo.MongoClient(server.uri, serverSelectionTimeoutMS=3000)
        yield client
        client.close()


@pytest.fixture
def coll(client: Any, request: Any) -> Any:
    collection = client["pm"][request.node.name[:40]]
    collection.drop()
    return collection


def test_insert_find_and_cursors(coll: Any) -> None:
    result = coll.insert_many([{"_id": i, "v": i % 3} for i in range(250)])
    assert result.inserted_ids == list(range(250))
    found = list(coll.find({"v": 1}, {"_id": 1}).sort("_id", -1).skip(2).limit(60).batch_size(7))
    assert [d["_id"] for d in found][:3] == [241, 238, 235] and len(found) == 60
    assert len(list(coll.find())) == 250  # first batch 101, then getMore
    assert coll.find_one({"_id": 5}) == {"_id": 5, "v": 2}
    assert coll.count_documents({"v": 0}) == 84
    assert coll.estimated_document_count() == 250
    assert coll.distinct("v") == [0, 1, 2]


def test_updates_and_deletes(coll: Any) -> None:
    coll.insert_many([{"_id": 1, "n": 1}, {"_id": 2, "n": 2}])
    one = coll.update_one({"_id": 1}, {"$inc": {"n": 10}})
    assert (one.matched_count, one.modified_count, one.upserted_id) == (1, 1, None)
    many = coll.update_many({}, {"$set": {"tag": "x"}})
    assert (many.matched_count, many.modified_count) == (2, 2)
    upsert = coll.replace_one({"_id": 3}, {"n": 3}, upsert=True)
    assert upsert.upserted_id == 3 and upsert.matched_count == 0
    after = coll.find_one_and_update({"_id": 2}, {"$push": {"l": 1}},
                                     return_document=ReturnDocument.AFTER)
    assert after == {"_id": 2, "n": 2, "tag": "x", "l": [1]}
    assert coll.find_one_and_delete({"_id": 3}) == {"_id": 3, "n": 3}
    assert coll.delete_many({"tag": "x"}).deleted_count == 2


def test_write_errors_reach_pymongo(coll: Any) -> None:
    coll.create_index("u", unique=True)
    coll.insert_one({"_id": 1, "u": 1})
    with pytest.raises(DuplicateKeyError) as dup:
        coll.insert_one({"_id": 2, "u": 1})
    assert dup.value.details["keyValue"] == {"u": 1}
    with pytest.raises(BulkWriteError) as bulk:
        coll.insert_many([{"_id": 3, "u": 3}, {"_id": 4, "u": 1}, {"_id": 5, "u": 5}],
                         ordered=False)
    details = bulk.value.details
    assert details["nInserted"] == 2 and details["writeErrors"][0]["index"] == 1
    with pytest.raises(OperationFailure) as bad:
        coll.update_one({"_id": 1}, {"$set": {"_id": 9}})
    assert bad.value.code == 66


def test_bulk_write_result(coll: Any) -> None:
    result = coll.bulk_write([
        pymongo.InsertOne({"_id": 1}),
        pymongo.UpdateOne({"_id": 2}, {"$set": {"a": 1}}, upsert=True),
        pymongo.UpdateMany({}, {"$set": {"b": 1}}),
        pymongo.DeleteOne({"_id": 1}),
    ])
    assert (result.inserted_count, result.upserted_count, result.matched_count,
            result.modified_count, result.deleted_count) == (1, 1, 2, 2, 1)
    assert result.upserted_ids == {1: 2}


def test_aggregate(coll: Any) -> None:
    coll.insert_many([{"g": i % 2, "v": i} for i in range(10)])
    groups = list(coll.aggregate([{"$group": {"_id": "$g", "total": {"$sum": "$v"}}},
                                  {"$sort": {"_id": 1}}], batchSize=1))
    assert groups == [{"_id": 0, "total": 20}, {"_id": 1, "total": 25}]


def test_catalog_and_indexes(client: Any, coll: Any) -> None:
    coll.insert_one({"a": 1})
    assert coll.create_index([("a", 1), ("b", -1)], name="ab") == "ab"
    assert [i["name"] for i in coll.list_indexes()] == ["_id_", "ab"]
    coll.drop_index("ab")
    assert list(coll.index_information()) == ["_id_"]
    assert coll.name in client["pm"].list_collection_names()
    assert "pm" in client.list_database_names()
    client["pm"].create_collection("made_explicitly")
    client["pm"].drop_collection("made_explicitly")
    assert "made_explicitly" not in client["pm"].list_collection_names()


def test_unknown_command_fails(client: Any) -> None:
    with pytest.raises(OperationFailure) as failure:
        client["pm"].command("frobnicate")
    assert failure.value.code == 59


def test_transactions(client: Any, coll: Any) -> None:
    coll.insert_one({"_id": 1, "n": 0})
    with client.start_session() as session:
        with session.start_transaction():
            coll.insert_one({"_id": 2}, session=session)
            coll.update_one({"_id": 1}, {"$inc": {"n": 1}}, session=session)
            assert coll.count_documents({}) == 1  # outside the transaction
            assert coll.count_documents({}, session=session) == 2
        assert coll.find_one({"_id": 1}) == {"_id": 1, "n": 1}
        session.start_transaction()
        coll.delete_many({}, session=session)
        session.abort_transaction()
    assert coll.count_documents({}) == 2


def test_with_transaction_retries_nothing_when_clean(client: Any, coll: Any) -> None:
    def callback(session: Any) -> str:
        coll.insert_one({"_id": "t"}, session=session)
        return "done"

    with client.start_session() as session:
        assert session.with_transaction(callback) == "done"
    assert coll.find_one({"_id": "t"}) == {"_id": "t"}

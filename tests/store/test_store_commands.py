"""Store.handle: every command's reply shape and errors, as a MongoDB server sends them."""

from __future__ import annotations

import datetime
import random
from typing import Any

import pytest

from asyncmongo.bson import decode, encode
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.types import Int64
from asyncmongo.testing.store import SessionContext, Store

NOW = datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


@pytest.fixture
def store() -> Store:
    return Store(clock=lambda: NOW, rng=random.Random(1))


def run(store: Store, command: dict[str, Any], db: str = "db") -> dict[str, Any]:
    reply = store.handle(db, command)
    data = encode(reply)  # every reply is valid BSON, unchanged by a round trip
    assert encode(decode(data)) == data
    return reply


def seed(store: Store, docs: list[dict[str, Any]], coll: str = "c") -> None:
    assert run(store, {"insert": coll, "documents": docs})["n"] == len(docs)


def ids(reply: dict[str, Any], batch: str = "firstBatch") -> list[Any]:
    return [d["_id"] for d in reply["cursor"][batch]]


def test_unknown_command(store: Store) -> None:
    assert run(store, {"frobnicate": 1}) == {
        "ok": 0.0, "errmsg": "no such command: 'frobnicate'", "code": 59,
        "codeName": "CommandNotFound"}
    assert not store.supports("hello")


def test_insert_generates_ids_first(store: Store) -> None:
    assert run(store, {"insert": "c", "documents": [{"a": 1}]}) == {"n": 1, "ok": 1.0}
    doc = run(store, {"find": "c"})["cursor"]["firstBatch"][0]
    assert list(doc) == ["_id", "a"] and isinstance(doc["_id"], ObjectId)
    seed(store, [{"a": 2, "_id": 5}])
    assert list(run(store, {"find": "c", "filter": {"_id": 5}})["cursor"]["firstBatch"][0]) == [
        "_id", "a"]


def test_ordered_and_unordered_inserts(store: Store) -> None:
    docs = [{"_id": 1}, {"_id": 1}, {"_id": 2}]
    ordered = run(store, {"insert": "o", "documents": docs})
    assert ordered["n"] == 1
    assert ordered["writeErrors"] == [{
        "index": 1, "code": 11000, "keyPattern": {"_id": 1}, "keyValue": {"_id": 1},
        "errmsg": "E11000 duplicate key error collection: db.o index: _id_ dup key: { _id: 1 }",
    }]
    unordered = run(store, {"insert": "u", "documents": docs, "ordered": False})
    assert unordered["n"] == 2 and [e["index"] for e in unordered["writeErrors"]] == [1]


def test_insert_rejects_array_ids(store: Store) -> None:
    reply = run(store, {"insert": "c", "documents": [{"_id": [1]}]})
    assert reply["writeErrors"][0]["code"] == 53


def test_insert_rejects_dollar_prefixed_names_inside_ids(store: Store) -> None:
    # mongod's storage validation (crud insertOne-dots_and_dollars); a DBRef _id is fine
    for bad in ({"$a": 1}, {"x": {"$b": 1}}, {"x": [{"$c": 1}]}):
        reply = run(store, {"insert": "c", "documents": [{"_id": bad}]})
        assert reply["writeErrors"][0]["code"] == 52, reply
    reply = run(store, {"insert": "c", "documents": [{"_id": {"$ref": "c", "$id": 1}}]})
    assert reply["n"] == 1 and "writeErrors" not in reply


def test_snapshot_read_concern_only_on_snapshot_reads(store: Store) -> None:
    # mongod: outside a transaction only find/aggregate/distinct take {level: "snapshot"}
    snapshot = {"readConcern": {"level": "snapshot"}}
    for command in ({"insert": "c", "documents": [{"x": 1}]}, {"listCollections": 1},
                    {"delete": "c", "deletes": [{"q": {}, "limit": 0}]}):
        reply = run(store, {**command, **snapshot})
        assert reply["ok"] == 0 and reply["code"] == 72, reply
    assert run(store, {"find": "c", **snapshot})["ok"] == 1
    assert run(store, {"distinct": "c", "key": "x", **snapshot})["ok"] == 1


def test_find_options_and_get_more(store: Store) -> None:
    seed(store, [{"_id": i, "v": i % 3} for i in range(10)])
    reply = run(store, {"find": "c", "filter": {"v": {"$ne": 0}}, "sort": {"v": -1, "_id": 1},
                        "skip": 1, "limit": 5, "batchSize": 2, "projection": {"v": 0}})
    assert reply["cursor"]["firstBatch"] == [{"_id": 5}, {"_id": 8}]
    assert reply["cursor"]["ns"] == "db.c"
    cursor_id = reply["cursor"]["id"]
    assert isinstance(cursor_id, Int64) and cursor_id > 0
    more = run(store, {"getMore": cursor_id, "collection": "c", "batchSize": 2})
    assert ids(more, "nextBatch") == [1, 4] and more["cursor"]["id"] == cursor_id
    last = run(store, {"getMore": cursor_id, "collection": "c"})
    assert ids(last, "nextBatch") == [7] and last["cursor"]["id"] == 0
    gone = run(store, {"getMore": cursor_id, "collection": "c"})
    assert gone["code"] == 43 and gone["codeName"] == "CursorNotFound"


def test_default_first_batch_and_single_batch(store: Store) -> None:
    seed(store, [{"_id": i} for i in range(150)])
    reply = run(store, {"find": "c"})
    assert len(reply["cursor"]["firstBatch"]) == 101 and reply["cursor"]["id"] != 0
    single = run(store, {"find": "c", "batchSize": 5, "singleBatch": True})
    assert len(single["cursor"]["firstBatch"]) == 5 and single["cursor"]["id"] == 0
    negative = run(store, {"find": "c", "limit": -3})
    assert len(negative["cursor"]["firstBatch"]) == 3 and negative["cursor"]["id"] == 0
    empty_first = run(store, {"find": "c", "batchSize": 0})
    assert empty_first["cursor"]["firstBatch"] == [] and empty_first["cursor"]["id"] != 0


def test_kill_cursors(store: Store) -> None:
    seed(store, [{"_id": i} for i in range(5)])
    cursor_id = run(store, {"find": "c", "batchSize": 1})["cursor"]["id"]
    reply = run(store, {"killCursors": "c", "cursors": [cursor_id, Int64(999)]})
    assert reply == {"cursorsKilled": [cursor_id], "cursorsNotFound": [Int64(999)],
                     "cursorsAlive": [], "cursorsUnknown": [], "ok": 1.0}


def test_find_on_a_missing_collection_is_empty(store: Store) -> None:
    reply = run(store, {"find": "nothing"})
    assert reply["cursor"] == {"firstBatch": [], "id": Int64(0), "ns": "db.nothing"}


def test_bad_filter_is_an_error_reply(store: Store) -> None:
    reply = run(store, {"find": "c", "filter": {"a": {"$bogus": 1}}})
    assert reply == {"ok": 0.0, "errmsg": "unknown operator: $bogus", "code": 2,
                     "codeName": "BadValue"}


def test_update_reply_shapes(store: Store) -> None:
    seed(store, [{"_id": 1, "a": 1}, {"_id": 2, "a": 1}, {"_id": 3, "a": 2}])
    reply = run(store, {"update": "c", "updates": [
        {"q": {"a": 1}, "u": {"$set": {"b": 1}}, "multi": True},
        {"q": {"_id": 3}, "u": {"$set": {"a": 2}}},
        {"q": {"_id": 9, "k": "v"}, "u": {"$inc": {"n": 1}}, "upsert": True},
        {"q": {"_id": 1}, "u": {"$inc": {"a": "x"}}},
        {"q": {"_id": 2}, "u": {"$set": {"z": 1}}},
    ]})
    assert reply["n"] == 4 and reply["nModified"] == 2
    assert reply["upserted"] == [{"index": 2, "_id": 9}]
    assert reply["writeErrors"][0]["index"] == 3 and reply["writeErrors"][0]["code"] == 14
    upserted = run(store, {"find": "c", "filter": {"_id": 9}})["cursor"]["firstBatch"]
    assert upserted == [{"_id": 9, "k": "v", "n": 1}]


def test_update_replacement_and_pipeline(store: Store) -> None:
    seed(store, [{"_id": 1, "a": 1}])
    run(store, {"update": "c", "updates": [{"q": {}, "u": {"b": 2}}]})
    assert run(store, {"find": "c"})["cursor"]["firstBatch"] == [{"_id": 1, "b": 2}]
    run(store, {"update": "c", "updates": [{"q": {}, "u": [{"$set": {"c": {"$add": [
        "$b", 1]}}}]}]})
    assert run(store, {"find": "c"})["cursor"]["firstBatch"] == [{"_id": 1, "b": 2, "c": 3}]
    multi = run(store, {"update": "c", "updates": [{"q": {}, "u": {"x": 1}, "multi": True}]})
    assert multi["writeErrors"][0]["code"] == 9


def test_upsert_with_replacement_and_generated_id(store: Store) -> None:
    reply = run(store, {"update": "c", "updates": [{"q": {"a": 5}, "u": {"b": 1},
                                                     "upsert": True}]})
    assert isinstance(reply["upserted"][0]["_id"], ObjectId)
    assert run(store, {"find": "c", "projection": {"_id": 0}})["cursor"]["firstBatch"] == [
        {"b": 1}]


def test_current_date_uses_the_session_clock(store: Store) -> None:
    seed(store, [{"_id": 1}])
    later = NOW + datetime.timedelta(days=1)
    store.handle("db", {"update": "c", "updates": [{"q": {}, "u": {"$currentDate": {
        "t": True}}}]}, SessionContext(now=later))
    doc = run(store, {"find": "c"})["cursor"]["firstBatch"][0]
    assert doc["t"].replace(tzinfo=datetime.UTC) == later


def test_delete(store: Store) -> None:
    seed(store, [{"_id": i, "a": i % 2} for i in range(6)])
    reply = run(store, {"delete": "c", "deletes": [{"q": {"a": 0}, "limit": 1},
                                                   {"q": {"a": 1}, "limit": 0}]})
    assert reply == {"n": 4, "ok": 1.0}
    assert ids(run(store, {"find": "c"})) == [2, 4]
    bad = run(store, {"delete": "c", "deletes": [{"q": {}, "limit": 5}]})
    assert bad["writeErrors"][0]["code"] == 2


def test_find_and_modify(store: Store) -> None:
    seed(store, [{"_id": 1, "n": 1}, {"_id": 2, "n": 5}])
    before = run(store, {"findAndModify": "c", "query": {}, "sort": {"n": -1},
                         "update": {"$inc": {"n": 1}}})
    assert before == {"lastErrorObject": {"n": 1, "updatedExisting": True},
                      "value": {"_id": 2, "n": 5}, "ok": 1.0}
    after = run(store, {"findAndModify": "c", "query": {"_id": 2}, "update": {"$inc": {"n": 1}},
                        "new": True, "fields": {"_id": 0}})
    assert after["value"] == {"n": 7}
    upsert = run(store, {"findAndModify": "c", "query": {"_id": 3}, "update": {"$set": {
        "n": 0}}, "upsert": True, "new": True})
    assert upsert["lastErrorObject"] == {"n": 1, "updatedExisting": False, "upserted": 3}
    removed = run(store, {"findAndModify": "c", "query": {"_id": 1}, "remove": True})
    assert removed == {"lastErrorObject": {"n": 1}, "value": {"_id": 1, "n": 1}, "ok": 1.0}
    nothing = run(store, {"findAndModify": "c", "query": {"_id": 42}, "remove": True})
    assert nothing == {"lastErrorObject": {"n": 0}, "value": None, "ok": 1.0}
    both = run(store, {"findAndModify": "c", "remove": True, "update": {}})
    assert both["code"] == 9


def test_find_and_modify_duplicate_key_is_a_command_error(store: Store) -> None:
    run(store, {"createIndexes": "c", "indexes": [{"key": {"u": 1}, "name": "u_1",
                                                   "unique": True}]})
    seed(store, [{"_id": 1, "u": 1}, {"_id": 2, "u": 2}])
    reply = run(store, {"findAndModify": "c", "query": {"_id": 2}, "update": {"$set": {
        "u": 1}}})
    assert reply["code"] == 11000 and reply["keyPattern"] == {"u": 1}
    assert reply["keyValue"] == {"u": 1}
    assert reply["errmsg"] == ("E11000 duplicate key error collection: db.c index: u_1 dup key:"
                               " { u: 1 }")


def test_count_and_distinct(store: Store) -> None:
    seed(store, [{"_id": i, "t": [i % 2, "x"], "k": {"v": i % 3}} for i in range(6)])
    assert run(store, {"count": "c"}) == {"n": 6, "ok": 1.0}
    assert run(store, {"count": "c", "query": {"k.v": 0}, "skip": 1, "limit": 5})["n"] == 1
    assert run(store, {"count": "missing"})["n"] == 0
    assert run(store, {"distinct": "c", "key": "t"})["values"] == [0, 1, "x"]
    assert run(store, {"distinct": "c", "key": "k.v", "query": {"_id": {"$lt": 2}}})[
        "values"] == [0, 1]


def test_aggregate_command(store: Store) -> None:
    seed(store, [{"_id": i, "g": i % 2} for i in range(5)])
    reply = run(store, {"aggregate": "c", "pipeline": [{"$group": {"_id": "$g", "n": {
        "$sum": 1}}}, {"$sort": {"_id": 1}}], "cursor": {"batchSize": 1}})
    assert reply["cursor"]["firstBatch"] == [{"_id": 0, "n": 3}]
    more = run(store, {"getMore": reply["cursor"]["id"], "collection": "c"})
    assert more["cursor"]["nextBatch"] == [{"_id": 1, "n": 2}]
    assert run(store, {"aggregate": "c", "pipeline": []})["code"] == 9


def test_aggregate_out_merge_and_lookup(store: Store) -> None:
    seed(store, [{"_id": 1, "k": "a"}, {"_id": 2, "k": "b"}])
    seed(store, [{"_id": 10, "k": "a", "v": 1}, {"_id": 11, "k": "a", "v": 2}], "other")
    joined = run(store, {"aggregate": "c", "pipeline": [
        {"$lookup": {"from": "other", "localField": "k", "foreignField": "k", "as": "j"}},
        {"$project": {"n": {"$size": "$j"}}}], "cursor": {}})
    assert joined["cursor"]["firstBatch"] == [{"_id": 1, "n": 2}, {"_id": 2, "n": 0}]
    out = run(store, {"aggregate": "c", "pipeline": [{"$match": {"k": "a"}}, {"$out": "copy"}],
                      "cursor": {}})
    assert out["cursor"]["firstBatch"] == []
    assert run(store, {"find": "copy"})["cursor"]["firstBatch"] == [{"_id": 1, "k": "a"}]
    run(store, {"aggregate": "c", "pipeline": [{"$merge": {"into": "copy"}}], "cursor": {}})
    assert ids(run(store, {"find": "copy"})) == [1, 2]


def test_create_drop_and_list_collections(store: Store) -> None:
    assert run(store, {"create": "a", "capped": True, "size": 4096}) == {"ok": 1.0}
    assert run(store, {"create": "a", "capped": True, "size": 4096}) == {"ok": 1.0}
    exists = run(store, {"create": "a"})
    assert exists["code"] == 48 and exists["codeName"] == "NamespaceExists"
    seed(store, [{"_id": 1}], "b")
    listed = run(store, {"listCollections": 1})["cursor"]
    assert listed["ns"] == "db.$cmd.listCollections"
    info = listed["firstBatch"][0]
    assert info["name"] == "a" and info["options"] == {"capped": True, "size": 4096}
    assert info["info"]["uuid"].subtype == 4 and info["idIndex"]["name"] == "_id_"
    names = run(store, {"listCollections": 1, "nameOnly": True, "filter": {"name": "b"}})
    assert names["cursor"]["firstBatch"] == [{"name": "b", "type": "collection"}]
    assert run(store, {"drop": "a"}) == {"nIndexesWas": 1, "ns": "db.a", "ok": 1.0}
    assert run(store, {"drop": "a"}) == {"ok": 1.0}


def test_list_and_drop_databases(store: Store) -> None:
    seed(store, [{"_id": 1}], "c")
    store.handle("other", {"insert": "c", "documents": [{"_id": 1}]})
    reply = run(store, {"listDatabases": 1}, "admin")
    assert [d["name"] for d in reply["databases"]] == ["db", "other"]
    assert reply["totalSize"] > 0
    assert run(store, {"listDatabases": 1, "nameOnly": True, "filter": {"name": "db"}},
               "admin")["databases"] == [{"name": "db"}]
    assert run(store, {"dropDatabase": 1}, "other") == {"dropped": "other", "ok": 1.0}
    assert [d["name"] for d in run(store, {"listDatabases": 1}, "admin")["databases"]] == ["db"]


def test_indexes(store: Store) -> None:
    created = run(store, {"createIndexes": "c", "indexes": [
        {"key": {"a": 1}, "name": "a_1", "unique": True},
        {"key": {"b": -1, "c": 1}, "name": "b_-1_c_1"}]})
    assert created == {"numIndexesBefore": 1, "numIndexesAfter": 3,
                       "createdCollectionAutomatically": True, "ok": 1.0}
    again = run(store, {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1",
                                                           "unique": True}]})
    assert again["note"] == "all indexes already exist"
    assert run(store, {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "x",
                                                          "unique": True}]})["code"] == 85
    assert run(store, {"createIndexes": "c", "indexes": [{"key": {"z": 1}, "name": "a_1"}]})[
        "code"] == 86
    listed = run(store, {"listIndexes": "c"})["cursor"]["firstBatch"]
    assert listed == [{"v": 2, "key": {"_id": 1}, "name": "_id_"},
                      {"v": 2, "key": {"a": 1}, "name": "a_1", "unique": True},
                      {"v": 2, "key": {"b": -1, "c": 1}, "name": "b_-1_c_1"}]
    assert run(store, {"dropIndexes": "c", "index": "b_-1_c_1"}) == {"nIndexesWas": 3,
                                                                     "ok": 1.0}
    assert run(store, {"dropIndexes": "c", "index": "nope"})["code"] == 27
    assert run(store, {"dropIndexes": "c", "index": "_id_"})["code"] == 72
    assert run(store, {"dropIndexes": "c", "index": {"a": 1}})["ok"] == 1.0
    assert run(store, {"listIndexes": "missing"})["code"] == 26


def test_unique_index_enforcement(store: Store) -> None:
    run(store, {"createIndexes": "c", "indexes": [{"key": {"a": 1, "b": 1}, "name": "ab",
                                                   "unique": True}]})
    seed(store, [{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 1, "b": 2}])
    dup = run(store, {"insert": "c", "documents": [{"_id": 3, "a": 1.0, "b": 2}]})
    assert dup["writeErrors"][0]["keyValue"] == {"a": 1.0, "b": 2}
    moved = run(store, {"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$set": {"b": 3}}}]})
    assert moved["nModified"] == 1
    assert run(store, {"insert": "c", "documents": [{"_id": 3, "a": 1, "b": 2}]})["n"] == 1
    run(store, {"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 1}]})
    assert run(store, {"insert": "c", "documents": [{"_id": 4, "a": 1, "b": 1}]})["n"] == 1


def test_unique_index_on_existing_duplicates_fails(store: Store) -> None:
    seed(store, [{"_id": 1, "a": 1}, {"_id": 2, "a": 1}])
    reply = run(store, {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1",
                                                           "unique": True}]})
    assert reply["code"] == 11000


def test_sparse_and_partial_unique_indexes(store: Store) -> None:
    run(store, {"createIndexes": "c", "indexes": [
        {"key": {"s": 1}, "name": "s_1", "unique": True, "sparse": True},
        {"key": {"p": 1}, "name": "p_1", "unique": True,
         "partialFilterExpression": {"active": True}}]})
    seed(store, [{"_id": 1}, {"_id": 2}, {"_id": 3, "p": 1}, {"_id": 4, "p": 1}])
    seed(store, [{"_id": 5, "p": 2, "active": True}])
    dup = run(store, {"insert": "c", "documents": [{"_id": 6, "p": 2, "active": True}]})
    assert dup["writeErrors"][0]["code"] == 11000


def test_invalid_names(store: Store) -> None:
    assert run(store, {"insert": "", "documents": [{}]})["code"] == 73
    assert store.handle("bad.db", {"find": "c"})["code"] == 73


def test_batches_are_cut_near_16_mib(store: Store) -> None:
    big = "x" * (1024 * 1024)
    seed(store, [{"_id": i, "s": big} for i in range(40)])
    first = run(store, {"find": "c", "batchSize": 1000})
    assert 10 <= len(first["cursor"]["firstBatch"]) <= 16
    more = run(store, {"getMore": first["cursor"]["id"], "collection": "c"})
    assert len(more["cursor"]["nextBatch"]) <= 16


def test_document_validation(store: Store) -> None:
    assert run(store, {"create": "v", "validator": {"x": {"$type": "int"}}})["ok"] == 1.0
    bad = run(store, {"insert": "v", "documents": [{"_id": 1, "x": "s"}, {"_id": 2, "x": 1}],
                      "ordered": False})
    assert bad["n"] == 1 and bad["writeErrors"][0]["code"] == 121
    assert bad["writeErrors"][0]["errInfo"]["failingDocumentId"] == 1
    bypass = run(store, {"insert": "v", "documents": [{"_id": 3, "x": "s"}],
                         "bypassDocumentValidation": True})
    assert bypass["n"] == 1
    update = run(store, {"update": "v", "updates": [{"q": {"_id": 2}, "u": {"$set": {"x": "no"}}}]})
    assert update["writeErrors"][0]["code"] == 121
    fam = run(store, {"findAndModify": "v", "query": {"_id": 2}, "update": {"$set": {"x": "s"}}})
    assert fam["code"] == 121 and fam["errInfo"]["failingDocumentId"] == 2
    assert run(store, {"collMod": "v", "validationLevel": "moderate"})["ok"] == 1.0
    moderate = run(store, {"update": "v", "updates": [{"q": {"_id": 3}, "u": {"$set": {
        "y": 1}}}]})
    assert moderate["nModified"] == 1  # the old document was already invalid
    # $jsonSchema: enforced for the keywords of encryption schemas, other keywords refused
    assert run(store, {"collMod": "v", "validator": {"$jsonSchema": {"minimum": 1}}}
               )["code"] == 2
    assert run(store, {"collMod": "v", "validator": {"$or": [{"$jsonSchema": {}}]}}
               )["code"] == 2
    assert run(store, {"collMod": "missing", "validator": {}})["code"] == 26


def test_json_schema_validator_of_encrypted_fields() -> None:
    """An ``encrypt`` field must hold BinData subtype 6 (ciphertext), as mongod checks."""
    store = Store()
    schema = {"bsonType": "object", "required": ["_id"], "properties": {
        "ssn": {"encrypt": {"bsonType": "string"}},
        "n": {"bsonType": ["int", "long"]}}}
    assert run(store, {"create": "enc", "validator": {"$jsonSchema": schema}})["ok"] == 1
    ok = run(store, {"insert": "enc", "documents": [
        {"_id": 1, "ssn": Binary(b"\x01" + bytes(20), 6), "n": 1}]})
    assert ok["n"] == 1
    plain = run(store, {"insert": "enc", "documents": [{"_id": 2, "ssn": "clear"}]})
    assert plain["writeErrors"][0]["code"] == 121
    wrong = run(store, {"insert": "enc", "documents": [{"_id": 3, "n": "x"}]})
    assert wrong["writeErrors"][0]["code"] == 121


def test_documents_over_16_mib_are_not_stored() -> None:
    store = Store()
    reply = run(store, {"insert": "big", "documents": [
        {"_id": 1, "s": "a" * (16 * 1024 * 1024)}, ]})
    assert reply["writeErrors"][0]["code"] == 2
    assert run(store, {"insert": "big", "documents": [{"_id": 2, "s": "a" * 1000}]})["n"] == 1

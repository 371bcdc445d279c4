"""The store's views, time series and capped collections, tailable cursors and find's
returnKey/showRecordId: replies and errors as mongod 8.0 gives them."""

from __future__ import annotations

import datetime
import random
from typing import Any

import pytest

from asyncmongo.bson import decode, encode
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.types import Int64
from asyncmongo.testing.store import Store

NOW = datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
T1 = datetime.datetime(2019, 3, 18, 22, 53, 50, tzinfo=datetime.UTC)


@pytest.fixture
def store() -> Store:
    return Store(clock=lambda: NOW, rng=random.Random(1))


def run(store: Store, command: dict[str, Any], db: str = "db") -> dict[str, Any]:
    reply = store.handle(db, command)
    data = encode(reply)
    assert encode(decode(data)) == data
    return reply


def ok(store: Store, command: dict[str, Any]) -> dict[str, Any]:
    reply = run(store, command)
    assert reply["ok"] == 1.0, reply
    return reply


def error(store: Store, command: dict[str, Any]) -> tuple[int, str]:
    reply = run(store, command)
    assert reply["ok"] == 0.0, reply
    return reply["code"], reply["errmsg"]


def listed(store: Store, name: str) -> dict[str, Any]:
    batch = ok(store, {"listCollections": 1, "filter": {"name": name}})["cursor"]["firstBatch"]
    assert len(batch) == 1
    entry: dict[str, Any] = batch[0]
    return entry


# --- views -----------------------------------------------------------------------------------


@pytest.fixture
def with_view(store: Store) -> Store:
    ok(store, {"insert": "c", "documents": [{"_id": i, "x": i * 11} for i in (1, 2, 3)]})
    ok(store, {"create": "v", "viewOn": "c", "pipeline": [{"$match": {"_id": {"$gt": 1}}}]})
    return store


def test_reads_of_a_view_run_its_pipeline(with_view: Store) -> None:
    store = with_view
    assert ok(store, {"count": "v"})["n"] == 2
    assert ok(store, {"count": "v", "query": {"x": 33}})["n"] == 1
    found = ok(store, {"find": "v", "sort": {"_id": -1}, "projection": {"x": 1, "_id": 0}})
    assert found["cursor"]["firstBatch"] == [{"x": 33}, {"x": 22}]
    assert found["cursor"]["ns"] == "db.v"
    grouped = ok(store, {"aggregate": "v", "cursor": {},
                         "pipeline": [{"$group": {"_id": None, "n": {"$sum": 1}}}]})
    assert grouped["cursor"]["firstBatch"] == [{"_id": None, "n": 2}]
    assert ok(store, {"distinct": "v", "key": "x"})["values"] == [22, 33]
    ok(store, {"insert": "c", "documents": [{"_id": 4, "x": 44}]})
    assert ok(store, {"count": "v"})["n"] == 3  # a view is evaluated at every read


def test_a_view_on_a_view_and_on_a_missing_collection(with_view: Store) -> None:
    store = with_view
    ok(store, {"create": "vv", "viewOn": "v", "pipeline": [{"$match": {"x": {"$lt": 30}}}]})
    assert ok(store, {"count": "vv"})["n"] == 1
    ok(store, {"create": "nothing", "viewOn": "missing"})
    assert ok(store, {"count": "nothing"})["n"] == 0


def test_list_collections_shows_a_view(with_view: Store) -> None:
    assert listed(with_view, "v") == {
        "name": "v", "type": "view",
        "options": {"viewOn": "c", "pipeline": [{"$match": {"_id": {"$gt": 1}}}]},
        "info": {"readOnly": True}}
    names = ok(with_view, {"listCollections": 1, "nameOnly": True})["cursor"]["firstBatch"]
    assert {"name": "v", "type": "view"} in names


@pytest.mark.parametrize("command", [
    {"insert": "v", "documents": [{"_id": 9}]},
    {"update": "v", "updates": [{"q": {}, "u": {"$set": {"y": 1}}}]},
    {"delete": "v", "deletes": [{"q": {}, "limit": 0}]},
    {"findAndModify": "v", "query": {}, "remove": True},
    {"createIndexes": "v", "indexes": [{"key": {"x": 1}, "name": "x_1"}]},
    {"listIndexes": "v"},
])
def test_writes_and_indexes_on_a_view_fail_with_166(with_view: Store,
                                                     command: dict[str, Any]) -> None:
    code, message = error(with_view, command)
    assert code == 166 and "db.v" in message
    assert run(with_view, command)["codeName"] == "CommandNotSupportedOnView"
    assert ok(with_view, {"count": "c"})["n"] == 3


def test_view_options_are_checked(with_view: Store) -> None:
    store = with_view
    assert error(store, {"create": "w", "viewOn": 5})[0] == 14
    assert error(store, {"create": "w", "viewOn": "c", "pipeline": {}})[0] == 14
    assert error(store, {"create": "w", "viewOn": "c", "pipeline": [{"$bogus": 1}]})[0] == 40324
    assert error(store, {"create": "w", "viewOn": "c", "capped": True, "size": 10})[0] == 72
    assert error(store, {"create": "w", "pipeline": []})[0] == 72
    assert error(store, {"create": "c", "viewOn": "v"})[0] == 48
    ok(store, {"create": "v", "viewOn": "c", "pipeline": [{"$match": {"_id": {"$gt": 1}}}]})
    assert ok(store, {"drop": "v"})["ok"] == 1.0
    assert ok(store, {"listCollections": 1, "filter": {"name": "v"}})["cursor"]["firstBatch"] \
        == []


def test_a_view_cycle_is_refused(store: Store) -> None:
    ok(store, {"create": "a", "viewOn": "b"})
    code, message = error(store, {"create": "b", "viewOn": "a"})
    assert code == 150 and message == "View cycle detected: [db.b => db.a => db.b]"
    assert error(store, {"create": "s", "viewOn": "s"})[0] == 150
    codes = [run(store, {"create": f"v{i + 1}", "viewOn": f"v{i}"}).get("code")
             for i in range(25)]
    assert codes[:19] == [None] * 19 and codes[19] == 149  # mongod's depth limit: 20


# --- time series -----------------------------------------------------------------------------


def test_time_series_create_lists_and_allows_duplicate_ids(store: Store) -> None:
    ok(store, {"create": "ts", "expireAfterSeconds": 604800,
               "timeseries": {"timeField": "time", "metaField": "meta",
                              "granularity": "minutes"}})
    assert listed(store, "ts") == {
        "name": "ts", "type": "timeseries",
        "options": {"expireAfterSeconds": 604800,
                    "timeseries": {"timeField": "time", "metaField": "meta",
                                   "granularity": "minutes", "bucketMaxSpanSeconds": 86400}},
        "info": {"readOnly": False}}
    later = T1 + datetime.timedelta(milliseconds=1)
    reply = ok(store, {"insert": "ts", "documents": [{"_id": 1, "time": later},
                                                     {"_id": 1, "time": T1}]})
    assert reply == {"n": 2, "ok": 1.0}
    found = ok(store, {"find": "ts", "sort": {"time": 1}})["cursor"]["firstBatch"]
    assert found == [{"_id": 1, "time": T1}, {"_id": 1, "time": later}]
    indexes = ok(store, {"listIndexes": "ts"})["cursor"]["firstBatch"]
    assert indexes == [{"v": 2, "key": {"meta": 1, "time": 1}, "name": "meta_1_time_1"}]
    assert ok(store, {"delete": "ts", "deletes": [{"q": {"time": T1}, "limit": 1}]})["n"] == 1
    assert ok(store, {"count": "ts"})["n"] == 1


def test_time_series_needs_a_time_field_and_a_date(store: Store) -> None:
    assert error(store, {"create": "ts", "timeseries": {"metaField": "m"}})[0] == 40414
    assert error(store, {"create": "ts", "timeseries": {"timeField": 1}})[0] == 14
    assert error(store, {"create": "ts", "timeseries": {"timeField": "t", "metaField": "t"}}
                 )[0] == 72
    assert error(store, {"create": "ts", "timeseries": {"timeField": "t",
                                                        "granularity": "days"}})[0] == 2
    ok(store, {"create": "ts", "timeseries": {"timeField": "t", "bucketMaxSpanSeconds": 3600,
                                              "bucketRoundingSeconds": 3600}})
    assert listed(store, "ts")["options"]["timeseries"] == {
        "timeField": "t", "bucketRoundingSeconds": 3600, "bucketMaxSpanSeconds": 3600}
    assert ok(store, {"listIndexes": "ts"})["cursor"]["firstBatch"] == []
    reply = ok(store, {"insert": "ts", "documents": [{"_id": 1, "t": "not a date"}]})
    assert reply["n"] == 0 and reply["writeErrors"][0]["code"] == 2


# --- capped collections and tailable cursors ------------------------------------------------


@pytest.fixture
def capped(store: Store) -> Store:
    ok(store, {"create": "cap", "capped": True, "size": 4096, "max": 3})
    return store


def test_capped_keeps_the_newest_documents_in_insertion_order(capped: Store) -> None:
    ok(capped, {"insert": "cap", "documents": [{"_id": i} for i in (5, 1, 4, 2)]})
    found = ok(capped, {"find": "cap"})["cursor"]["firstBatch"]
    assert found == [{"_id": 1}, {"_id": 4}, {"_id": 2}]
    assert listed(capped, "cap")["options"] == {"capped": True, "size": 4096, "max": 3}
    assert error(capped, {"create": "x", "capped": True})[0] == 72


def test_capped_size_limit_removes_the_oldest(store: Store) -> None:
    ok(store, {"create": "small", "capped": True, "size": 100})  # mongod: 4096 at least
    ok(store, {"insert": "small", "documents": [{"_id": i, "s": "x" * 30} for i in range(5)]})
    assert ok(store, {"count": "small"})["n"] == 5
    ok(store, {"insert": "small", "documents": [{"_id": i, "s": "x" * 1000}
                                                for i in range(5, 10)]})
    found = ok(store, {"find": "small"})["cursor"]["firstBatch"]
    assert [d["_id"] for d in found] == [6, 7, 8, 9]  # about 4 KiB of the newest


def test_tailable_cursor_stays_open_and_sees_new_documents(capped: Store) -> None:
    ok(capped, {"insert": "cap", "documents": [{"_id": 1}, {"_id": 2}]})
    first = ok(capped, {"find": "cap", "tailable": True, "batchSize": 2})["cursor"]
    assert [d["_id"] for d in first["firstBatch"]] == [1, 2] and first["id"] != 0
    more = ok(capped, {"getMore": first["id"], "collection": "cap"})["cursor"]
    assert more["nextBatch"] == [] and more["id"] == first["id"]
    ok(capped, {"insert": "cap", "documents": [{"_id": 3}]})
    more = ok(capped, {"getMore": first["id"], "collection": "cap"})["cursor"]
    assert more["nextBatch"] == [{"_id": 3}] and more["id"] == first["id"]
    assert not capped.awaits_data({"getMore": first["id"]})
    killed = ok(capped, {"killCursors": "cap", "cursors": [first["id"]]})
    assert killed["cursorsKilled"] == [first["id"]]


def test_tailable_filter_projection_and_await_data(capped: Store) -> None:
    ok(capped, {"insert": "cap", "documents": [{"_id": 1, "k": 1}]})
    first = ok(capped, {"find": "cap", "tailable": True, "awaitData": True,
                        "filter": {"k": 2}, "projection": {"_id": 1}})["cursor"]
    assert first["firstBatch"] == [] and first["id"] != 0
    assert capped.awaits_data({"getMore": first["id"]})
    ok(capped, {"insert": "cap", "documents": [{"_id": 2, "k": 1}, {"_id": 3, "k": 2}]})
    more = ok(capped, {"getMore": first["id"], "collection": "cap", "maxTimeMS": 10})
    assert more["cursor"]["nextBatch"] == [{"_id": 3}]


def test_tailable_errors_as_mongod(capped: Store) -> None:
    ok(capped, {"insert": "plain", "documents": [{"_id": 1}]})
    code, message = error(capped, {"find": "plain", "tailable": True})
    assert code == 2 and "tailable cursor requested on non capped collection" in message
    assert error(capped, {"find": "cap", "awaitData": True})[0] == 9
    assert error(capped, {"find": "cap", "tailable": True, "sort": {"_id": 1}})[0] == 2
    # an empty capped collection: no cursor is kept
    assert ok(capped, {"find": "cap", "tailable": True})["cursor"]["id"] == 0
    ok(capped, {"insert": "cap", "documents": [{"_id": 1}]})
    cursor_id = ok(capped, {"find": "cap", "tailable": True})["cursor"]["id"]
    code, message = error(capped, {"getMore": cursor_id, "collection": "cap", "maxTimeMS": 5})
    assert code == 2 and "non-awaitData" in message


def test_a_tailable_cursor_that_falls_behind_is_dead(capped: Store) -> None:
    ok(capped, {"insert": "cap", "documents": [{"_id": 0}]})
    cursor_id = ok(capped, {"find": "cap", "tailable": True})["cursor"]["id"]
    ok(capped, {"insert": "cap", "documents": [{"_id": i} for i in range(1, 5)]})
    code, _ = error(capped, {"getMore": cursor_id, "collection": "cap"})
    assert code == 136
    assert error(capped, {"getMore": cursor_id, "collection": "cap"})[0] == 43  # killed


# --- returnKey / showRecordId -----------------------------------------------------------------


@pytest.fixture
def indexed(store: Store) -> Store:
    ok(store, {"insert": "c", "documents": [{"_id": i, "x": 10 * i, "y": i} for i in (1, 2, 3)]})
    ok(store, {"createIndexes": "c", "indexes": [{"key": {"x": 1}, "name": "x_1"}]})
    return store


def batch(store: Store, **find: Any) -> list[dict[str, Any]]:
    documents: list[dict[str, Any]] = ok(store, {"find": "c", **find})["cursor"]["firstBatch"]
    return documents


def test_return_key_returns_the_key_of_the_plan_index(indexed: Store) -> None:
    assert batch(indexed, sort={"_id": 1}, returnKey=True, showRecordId=True) == [
        {"_id": 1}, {"_id": 2}, {"_id": 3}]
    assert batch(indexed, filter={"x": {"$gte": 20}}, returnKey=True) == [{"x": 20}, {"x": 30}]
    assert batch(indexed, hint="x_1", returnKey=True, limit=1) == [{"x": 10}]
    assert batch(indexed, filter={"y": 2}, returnKey=True) == [{}]  # a collection scan


def test_show_record_id_adds_an_int64_after_the_projection(indexed: Store) -> None:
    documents = batch(indexed, projection={"x": 1, "_id": 0}, showRecordId=True)
    assert [list(d) for d in documents] == [["x", "$recordId"]] * 3
    record_ids = [d["$recordId"] for d in documents]
    assert all(type(r) is Int64 for r in record_ids) and record_ids == sorted(record_ids)
    ok(indexed, {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 5}}}]})
    again = batch(indexed, filter={"_id": 1}, showRecordId=True)
    assert again[0]["$recordId"] == record_ids[0]  # an update keeps the record id


# --- collMod index ----------------------------------------------------------------------------


def test_coll_mod_prepare_unique_then_unique(indexed: Store) -> None:
    store = indexed
    ok(store, {"insert": "c", "documents": [{"_id": 4, "x": 10}]})  # x 10 twice now
    change = {"collMod": "c", "index": {"keyPattern": {"x": 1}, "prepareUnique": True}}
    assert ok(store, change) == {"prepareUnique_old": False, "prepareUnique_new": True,
                                 "ok": 1.0}
    reply = ok(store, {"insert": "c", "documents": [{"_id": 5, "x": 20}]})
    assert reply["writeErrors"][0]["code"] == 11000  # a new duplicate is refused
    ok(store, {"insert": "c", "documents": [{"_id": 6, "x": 60}]})
    reply = run(store, {"collMod": "c", "index": {"name": "x_1", "unique": True}})
    assert reply["code"] == 359 and reply["codeName"] == "CannotConvertIndexToUnique"
    assert reply["violations"] == [{"ids": [1, 4]}]
    ok(store, {"delete": "c", "deletes": [{"q": {"_id": 4}, "limit": 1}]})
    assert ok(store, {"collMod": "c", "index": {"name": "x_1", "unique": True}}) == {
        "unique_old": False, "unique_new": True, "ok": 1.0}
    spec = ok(store, {"listIndexes": "c"})["cursor"]["firstBatch"][1]
    assert spec["unique"] is True and "prepareUnique" not in spec


def test_coll_mod_index_errors_and_hidden(indexed: Store) -> None:
    store = indexed
    assert error(store, {"collMod": "c", "index": {"name": "nope", "hidden": True}})[0] == 27
    assert error(store, {"collMod": "c", "index": {"name": "x_1", "unique": True}})[0] == 72
    assert error(store, {"collMod": "c", "index": {"name": "_id_", "hidden": True}})[0] == 2
    assert ok(store, {"collMod": "c", "index": {"name": "x_1", "hidden": True}}) == {
        "hidden_old": False, "hidden_new": True, "ok": 1.0}
    assert ok(store, {"listIndexes": "c"})["cursor"]["firstBatch"][1]["hidden"] is True


# --- $collStats -------------------------------------------------------------------------------


def test_coll_stats_storage_stats_of_a_capped_collection(capped: Store) -> None:
    ok(capped, {"insert": "cap", "documents": [{"_id": 1, "x": 11}]})
    reply = ok(capped, {"aggregate": "cap", "cursor": {}, "pipeline": [
        {"$collStats": {"storageStats": {}, "count": {}}},
        {"$project": {"capped": "$storageStats.capped", "maxSize": "$storageStats.maxSize",
                      "max": "$storageStats.max", "count": 1, "_id": 0}}]})
    assert reply["cursor"]["firstBatch"] == [{"count": 1, "capped": True, "maxSize": 4096,
                                              "max": 3}]
    stats = ok(capped, {"aggregate": "cap", "cursor": {}, "pipeline": [
        {"$collStats": {"storageStats": {"scale": 1024}}}]})["cursor"]["firstBatch"][0]
    assert stats["ns"] == "db.cap" and stats["storageStats"]["scaleFactor"] == 1024
    assert stats["storageStats"]["nindexes"] == 1


def test_coll_stats_errors(capped: Store) -> None:
    assert error(capped, {"aggregate": "missing", "cursor": {},
                          "pipeline": [{"$collStats": {"storageStats": {}}}]})[0] == 26
    assert error(capped, {"aggregate": "cap", "cursor": {},
                          "pipeline": [{"$match": {}}, {"$collStats": {}}]})[0] == 40602
    latency = ok(capped, {"aggregate": "missing", "cursor": {},
                          "pipeline": [{"$collStats": {"latencyStats": {}}}]})
    assert latency["cursor"]["firstBatch"][0]["latencyStats"]["reads"]["ops"] == 0


def test_no_writes_to_a_capped_collection_in_a_transaction(capped: Store) -> None:
    lsid = {"id": Binary(bytes(range(16)), 4)}
    reply = run(capped, {"insert": "cap", "documents": [{"_id": 1}], "lsid": lsid,
                         "txnNumber": Int64(1), "autocommit": False, "startTransaction": True})
    assert reply["code"] == 263 and "capped collection" in reply["errmsg"]
    found = run(capped, {"find": "cap", "lsid": lsid, "txnNumber": Int64(2),
                         "autocommit": False, "startTransaction": True})
    assert found["ok"] == 1.0  # reads are allowed

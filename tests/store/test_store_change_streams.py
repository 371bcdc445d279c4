"""The store's change event log and ``$changeStream`` cursors (store/change_streams.py)."""

from __future__ import annotations

import datetime
from typing import Any

from asyncmongo.bson.types import Timestamp
from asyncmongo.testing.store import Store

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def _store() -> Store:
    return Store(clock=lambda: NOW)


def _open(store: Store, db: str = "db", target: Any = "c", **options: Any) -> dict[str, Any]:
    reply = store.handle(db, {"aggregate": target, "cursor": {},
                              "pipeline": [{"$changeStream": options}]})
    assert reply["ok"] == 1.0, reply
    return reply


def _more(store: Store, reply: dict[str, Any], db: str = "db") -> dict[str, Any]:
    cursor = reply["cursor"]
    collection = cursor["ns"].split(".", 1)[1]
    return store.handle(db, {"getMore": cursor["id"], "collection": collection})


def _types(reply: dict[str, Any]) -> list[str]:
    batch = reply["cursor"].get("nextBatch", reply["cursor"].get("firstBatch"))
    return [event["operationType"] for event in batch]


def test_every_write_path_is_an_event() -> None:
    store = _store()
    opened = _open(store)
    assert opened["cursor"]["firstBatch"] == [] and opened["cursor"]["postBatchResumeToken"]
    store.handle("db", {"insert": "c", "documents": [{"_id": 1, "x": 1}]})
    store.handle("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 2}}}]})
    store.handle("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"y": 1}}]})
    store.handle("db", {"findAndModify": "c", "query": {"_id": 1}, "update": {"$inc": {"y": 1}}})
    store.handle("db", {"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 1}]})
    store.handle("db", {"drop": "c"})
    reply = _more(store, opened)
    assert _types(reply) == ["insert", "update", "replace", "update", "delete", "drop",
                             "invalidate"]
    batch = reply["cursor"]["nextBatch"]
    assert batch[0]["fullDocument"] == {"_id": 1, "x": 1}
    assert batch[1]["updateDescription"] == {"updatedFields": {"x": 2}, "removedFields": [],
                                             "truncatedArrays": []}
    assert batch[2]["fullDocument"] == {"_id": 1, "y": 1}
    assert batch[4]["documentKey"] == {"_id": 1}
    assert all(isinstance(e["clusterTime"], Timestamp) and "wallTime" in e for e in batch)
    assert reply["cursor"]["id"] == 0  # the invalidate closes the cursor
    assert reply["cursor"]["postBatchResumeToken"] == batch[-1]["_id"]


def test_update_description_diffs_arrays_and_reports_ambiguous_paths() -> None:
    store = _store()
    store.handle("db", {"insert": "c", "documents": [{"_id": 1, "a": {"1": 1}, "r": [1, 2, 3]}]})
    opened = _open(store, showExpandedEvents=True)
    store.handle("db", {"update": "c", "updates": [
        {"q": {"_id": 1}, "u": {"$set": {"a.1": 2, "r": [1]}, "$unset": {"zz": 1}}}]})
    event = _more(store, opened)["cursor"]["nextBatch"][0]
    assert event["updateDescription"] == {
        "updatedFields": {"a.1": 2}, "removedFields": [],
        "truncatedArrays": [{"field": "r", "newSize": 1}],
        "disambiguatedPaths": {"a.1": ["a", "1"]}}
    assert "collectionUUID" in event


def test_full_document_options() -> None:
    store = _store()
    store.handle("db", {"insert": "c", "documents": [{"_id": 1, "x": 1}]})
    lookup = _open(store, fullDocument="updateLookup")
    required = _open(store, fullDocument="required")
    before = _open(store, fullDocumentBeforeChange="whenAvailable")
    store.handle("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 2}}}]})
    assert _more(store, lookup)["cursor"]["nextBatch"][0]["fullDocument"] == {"_id": 1, "x": 2}
    assert _more(store, required)["code"] == 47  # no post-images on this collection
    assert _more(store, before)["cursor"]["nextBatch"][0]["fullDocumentBeforeChange"] is None
    store.handle("db", {"collMod": "c", "changeStreamPreAndPostImages": {"enabled": True}})
    images = _open(store, fullDocument="required", fullDocumentBeforeChange="required")
    store.handle("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"x": 3}}}]})
    event = _more(store, images)["cursor"]["nextBatch"][0]
    assert event["fullDocument"] == {"_id": 1, "x": 3}
    assert event["fullDocumentBeforeChange"] == {"_id": 1, "x": 2}


def test_resume_after_and_start_after() -> None:
    store = _store()
    opened = _open(store)
    store.handle("db", {"insert": "c", "documents": [{"_id": i} for i in range(3)]})
    batch = _more(store, opened)["cursor"]["nextBatch"]
    resumed = _open(store, resumeAfter=batch[0]["_id"])
    assert [e["documentKey"]["_id"] for e in resumed["cursor"]["firstBatch"]] == [1, 2]
    store.handle("db", {"drop": "c"})
    invalidate = _more(store, opened)["cursor"]["nextBatch"][-1]
    assert invalidate["operationType"] == "invalidate"
    refused = store.handle("db", {"aggregate": "c", "cursor": {}, "pipeline": [
        {"$changeStream": {"resumeAfter": invalidate["_id"]}}]})
    assert refused["code"] == 260
    after = _open(store, startAfter=invalidate["_id"])
    store.handle("db", {"insert": "c", "documents": [{"_id": 9}]})
    assert _types(_more(store, after)) == ["insert"]


def test_start_at_operation_time() -> None:
    store = _store()
    store.handle("db", {"insert": "c", "documents": [{"_id": 1}]})
    first = store.changes.events[-1].cluster_time
    store.handle("db", {"insert": "c", "documents": [{"_id": 2}]})
    reply = _open(store, startAtOperationTime=first)
    assert [e["documentKey"]["_id"] for e in reply["cursor"]["firstBatch"]] == [1, 2]


def test_database_and_cluster_streams() -> None:
    store = _store()
    database = _open(store, target=1)
    cluster = _open(store, db="admin", target=1, allChangesForCluster=True)
    store.handle("db", {"insert": "a", "documents": [{"_id": 1}]})
    store.handle("other", {"insert": "b", "documents": [{"_id": 1}]})
    assert [e["ns"] for e in _more(store, database)["cursor"]["nextBatch"]] == [
        {"db": "db", "coll": "a"}]
    assert [e["ns"] for e in _more(store, cluster, db="admin")["cursor"]["nextBatch"]] == [
        {"db": "db", "coll": "a"}, {"db": "other", "coll": "b"}]
    store.handle("db", {"dropDatabase": 1})
    assert _types(_more(store, database)) == ["drop", "dropDatabase", "invalidate"]
    refused = store.handle("admin", {"aggregate": 1, "cursor": {},
                                     "pipeline": [{"$changeStream": {}}]})
    assert refused["code"] == 73


def test_pipeline_may_not_change_the_resume_token() -> None:
    store = _store()
    opened = _open(store)
    store.handle("db", {"aggregate": "c", "cursor": {}, "pipeline": [
        {"$changeStream": {}}, {"$project": {"_id": 0}}]})
    projected = store.handle("db", {"aggregate": "c", "cursor": {}, "pipeline": [
        {"$changeStream": {}}, {"$project": {"_id": 0}}]})
    store.handle("db", {"insert": "c", "documents": [{"_id": 1}]})
    failed = _more(store, projected)
    assert failed["code"] == 280 and failed["errorLabels"] == ["NonResumableChangeStreamError"]
    assert _types(_more(store, opened)) == ["insert"]
    bad = store.handle("db", {"aggregate": "c", "cursor": {}, "pipeline": [
        {"$changeStream": {}}, {"$unsupported": 1}]})
    assert bad["code"] == 40324


def test_rename_expanded_events_and_batch_size() -> None:
    store = _store()
    opened = _open(store, showExpandedEvents=True)
    store.handle("db", {"create": "c"})
    store.handle("db", {"createIndexes": "c", "indexes": [{"key": {"x": 1}, "name": "x_1"}]})
    store.handle("db", {"dropIndexes": "c", "index": "x_1"})
    store.handle("db", {"collMod": "c"})
    store.handle("db", {"create": "d"})
    assert store.handle("admin", {"renameCollection": "db.c", "to": "db.d",
                                  "dropTarget": True})["ok"] == 1.0
    cursor = opened["cursor"]
    one = store.handle("db", {"getMore": cursor["id"], "collection": "c", "batchSize": 1})
    assert _types(one) == ["create"]
    rest = _more(store, opened)
    assert _types(rest) == ["createIndexes", "dropIndexes", "modify", "rename", "invalidate"]
    rename = rest["cursor"]["nextBatch"][3]
    assert rename["to"] == {"db": "db", "coll": "d"}
    assert "dropTarget" in rename["operationDescription"]
    plain = _open(store, target="d")
    store.handle("db", {"createIndexes": "d", "indexes": [{"key": {"y": 1}, "name": "y_1"}]})
    store.handle("db", {"insert": "d", "documents": [{"_id": 1}]})
    assert _types(_more(store, plain)) == ["insert"]  # no expanded events without the option


def test_awaits_data_and_kill() -> None:
    store = _store()
    opened = _open(store)
    command = {"getMore": opened["cursor"]["id"], "collection": "c"}
    assert store.awaits_data(command)
    store.handle("db", {"killCursors": "c", "cursors": [opened["cursor"]["id"]]})
    assert not store.awaits_data(command)
    assert store.handle("db", command)["code"] == 43


def test_transaction_writes_reach_the_log_at_commit() -> None:
    store = _store()
    store.handle("db", {"create": "c"})
    opened = _open(store)
    lsid = {"id": b"0123456789abcdef"}
    store.handle("db", {"insert": "c", "documents": [{"_id": 1}], "lsid": lsid,
                        "txnNumber": 1, "autocommit": False, "startTransaction": True})
    assert _types(_more(store, opened)) == []
    store.handle("admin", {"commitTransaction": 1, "lsid": lsid, "txnNumber": 1,
                           "autocommit": False})
    assert _types(_more(store, opened)) == ["insert"]


def test_a_transaction_creating_its_collection_reports_create_and_inserts() -> None:
    store = _store()
    opened = _open(store, target=1, showExpandedEvents=True)
    lsid = {"id": b"fedcba9876543210"}
    store.handle("db", {"insert": "new", "documents": [{"_id": 1}, {"_id": 2}], "lsid": lsid,
                        "txnNumber": 1, "autocommit": False, "startTransaction": True})
    store.handle("admin", {"commitTransaction": 1, "lsid": lsid, "txnNumber": 1,
                           "autocommit": False})
    assert _types(_more(store, opened)) == ["create", "insert", "insert"]

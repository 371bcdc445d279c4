"""The store's admin ``bulkWrite`` (MongoDB 8.0's client bulk write): per-op results in a
cursor, totals, ordered/unordered, errorsOnly, let, and the admin-only rule."""

from __future__ import annotations

from typing import Any

from asyncmongo.testing.store import Store

NS_INFO = [{"ns": "db.a"}, {"ns": "db.b"}]


def bulk(store: Store, ops: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    return store.handle("admin", {"bulkWrite": 1, "ops": ops, "nsInfo": NS_INFO, **options})


def test_mixed_namespaces_report_each_op_and_the_totals() -> None:
    store = Store()
    reply = bulk(store, [
        {"insert": 0, "document": {"_id": 1}},
        {"insert": 1, "document": {"_id": 1, "x": 1}},
        {"update": 0, "filter": {"_id": 1}, "updateMods": {"$set": {"x": 2}}},
        {"update": 1, "filter": {"_id": 9}, "updateMods": {"y": 1}, "upsert": True},
        {"delete": 1, "filter": {}, "multi": True},
    ])
    assert reply["ok"] == 1.0 and reply["cursor"]["id"] == 0
    assert reply["cursor"]["ns"] == "admin.$cmd.bulkWrite"
    assert reply["cursor"]["firstBatch"] == [
        {"ok": 1.0, "idx": 0, "n": 1},
        {"ok": 1.0, "idx": 1, "n": 1},
        {"ok": 1.0, "idx": 2, "n": 1, "nModified": 1},
        {"ok": 1.0, "idx": 3, "n": 1, "nModified": 0, "upserted": {"_id": 9}},
        {"ok": 1.0, "idx": 4, "n": 2},
    ]
    assert {k: reply[k] for k in ("nErrors", "nInserted", "nMatched", "nModified",
                                  "nUpserted", "nDeleted")} == {
        "nErrors": 0, "nInserted": 2, "nMatched": 1, "nModified": 1, "nUpserted": 1,
        "nDeleted": 2}
    found = store.handle("db", {"find": "a"})["cursor"]["firstBatch"]
    assert found == [{"_id": 1, "x": 2}]


def test_ordered_stops_at_the_first_error_unordered_goes_on() -> None:
    ops = [{"insert": 0, "document": {"_id": 1}}, {"insert": 0, "document": {"_id": 1}},
           {"insert": 0, "document": {"_id": 2}}]
    ordered = bulk(Store(), ops)
    entries = ordered["cursor"]["firstBatch"]
    assert [e["ok"] for e in entries] == [1.0, 0.0]
    assert entries[1]["code"] == 11000 and entries[1]["codeName"] == "DuplicateKey"
    assert entries[1]["idx"] == 1 and "errmsg" in entries[1]
    assert ordered["nErrors"] == 1 and ordered["nInserted"] == 1
    unordered = bulk(Store(), ops, ordered=False, errorsOnly=True)
    assert [e["idx"] for e in unordered["cursor"]["firstBatch"]] == [1]
    assert unordered["nErrors"] == 1 and unordered["nInserted"] == 2


def test_results_page_through_get_more() -> None:
    store = Store()
    ops = [{"insert": 0, "document": {"_id": i}} for i in range(5)]
    reply = bulk(store, ops, cursor={"batchSize": 2})
    assert len(reply["cursor"]["firstBatch"]) == 2 and reply["cursor"]["id"] != 0
    more = store.handle("admin", {"getMore": reply["cursor"]["id"],
                                  "collection": "$cmd.bulkWrite"})
    assert [e["idx"] for e in more["cursor"]["nextBatch"]] == [2, 3, 4]


def test_let_variables_reach_every_filter() -> None:
    store = Store()
    store.handle("db", {"insert": "a", "documents": [{"_id": 1}, {"_id": 2}]})
    reply = bulk(store, [
        {"update": 0, "filter": {"$expr": {"$eq": ["$_id", "$$one"]}},
         "updateMods": {"$set": {"x": 1}}},
        {"delete": 0, "filter": {"$expr": {"$eq": ["$_id", "$$two"]}}},
    ], let={"one": 1, "two": 2})
    assert reply["nMatched"] == 1 and reply["nDeleted"] == 1


def test_sort_picks_the_document_an_update_one_changes() -> None:
    store = Store()
    store.handle("db", {"insert": "a", "documents": [{"_id": 1, "x": 1}, {"_id": 2, "x": 2}]})
    bulk(store, [{"update": 0, "filter": {}, "updateMods": {"$set": {"hit": True}},
                  "sort": {"x": -1}}])
    assert store.handle("db", {"find": "a", "filter": {"hit": True}})["cursor"][
        "firstBatch"] == [{"_id": 2, "x": 2, "hit": True}]


def test_bad_commands_get_server_errors() -> None:
    store = Store()
    wrong_db = store.handle("db", {"bulkWrite": 1, "ops": [], "nsInfo": NS_INFO})
    assert wrong_db["ok"] == 0.0 and wrong_db["code"] == 13
    assert bulk(store, [{"insert": 5, "document": {}}])["cursor"]["firstBatch"][0]["ok"] == 0.0
    assert bulk(store, [{"frobnicate": 0}])["nErrors"] == 1
    no_ns = store.handle("admin", {"bulkWrite": 1, "ops": [], "nsInfo": []})
    assert no_ns["ok"] == 0.0 and no_ns["code"] == 2

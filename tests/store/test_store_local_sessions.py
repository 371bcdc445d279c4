"""$listLocalSessions lists the sessions the store has seen (endSessions removes them), and
killAllSessions aborts open transactions and closes session cursors but keeps retryable-write
bookkeeping (asyncmongo/testing/store/local_sessions.py, Store.kill_all_sessions)."""

from __future__ import annotations

import datetime
from typing import Any

from asyncmongo.bson.binary import Binary
from asyncmongo.testing.store import Store
from asyncmongo.testing.store.transactions import TransactionState

NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def _lsid(n: int) -> dict[str, Any]:
    return {"id": Binary(bytes([n]) * 16, 4)}


def _list(store: Store, pipeline: list[Any] | None = None, db: str = "admin",
          target: Any = 1) -> dict[str, Any]:
    return store.handle(db, {"aggregate": target, "pipeline": [{"$listLocalSessions": {}},
                                                                 *(pipeline or [])],
                             "cursor": {}})


def test_lists_every_session_seen_until_it_ends() -> None:
    store = Store(clock=lambda: NOW)
    store.handle("db", {"find": "c", "lsid": _lsid(1)})
    store.handle("db", {"insert": "c", "documents": [{}], "lsid": _lsid(2)})
    batch = _list(store)["cursor"]["firstBatch"]
    assert [d["_id"]["id"] for d in batch] == [_lsid(1)["id"], _lsid(2)["id"]]
    assert all(d["lastUse"] == NOW and len(d["_id"]["uid"]) == 32 for d in batch)
    store.handle("admin", {"endSessions": [_lsid(1)]})
    assert [d["_id"]["id"] for d in _list(store, [{"$limit": 5}])["cursor"]["firstBatch"]] == [
        _lsid(2)["id"]]


def test_stage_needs_aggregate_1_and_known_options() -> None:
    store = Store()
    assert _list(store, db="db")["ok"] == 1
    assert _list(store, target="c")["code"] == 73
    bad = store.handle("admin", {"aggregate": 1, "pipeline": [{"$listLocalSessions": {"x": 1}}],
                                 "cursor": {}})
    assert bad["ok"] == 0 and bad["code"] == 40415


def test_kill_all_sessions_aborts_transactions_and_keeps_retry_bookkeeping() -> None:
    store = Store()
    opened = store.handle("db", {"insert": "c", "documents": [{"_id": 1}], "lsid": _lsid(1),
                                 "txnNumber": 1, "autocommit": False,
                                 "startTransaction": True})
    assert opened["ok"] == 1
    retried = {"insert": "c", "documents": [{"_id": 2}], "lsid": _lsid(2), "txnNumber": 7}
    assert store.handle("db", retried)["n"] == 1
    cursor = store.handle("db", {"find": "c", "batchSize": 0, "lsid": _lsid(3)})["cursor"]
    store.kill_all_sessions()
    assert store.transaction_state(_lsid(1)) is TransactionState.ABORTED
    assert int(cursor["id"]) not in store.cursors.cursors
    assert store.handle("db", retried)["n"] == 1  # answered from the bookkeeping
    assert store.handle("db", {"count": "c"})["n"] == 1

"""Snapshot reads from the store's bounded history (asyncmongo/testing/store/snapshots.py):
a read at a cluster time keeps seeing that state after later writes, the reply reports the
time, an unretained past time is SnapshotTooOld and a future one InvalidOptions."""

from __future__ import annotations

from typing import Any

from asyncmongo.bson.types import Timestamp
from asyncmongo.testing.store import SessionContext, Store

SNAPSHOT = {"level": "snapshot"}


def _find(store: Store, now: Timestamp, at: Timestamp | None = None) -> dict[str, Any]:
    concern = {**SNAPSHOT, "atClusterTime": at} if at is not None else SNAPSHOT
    return store.handle("db", {"find": "c", "readConcern": concern},
                        SessionContext(cluster_time=now))


def _xs(reply: dict[str, Any]) -> list[Any]:
    return [d["x"] for d in reply["cursor"]["firstBatch"]]


def test_a_read_at_a_time_keeps_seeing_that_state() -> None:
    store = Store()
    store.handle("db", {"insert": "c", "documents": [{"_id": 1, "x": 1}]})
    first = _find(store, Timestamp(10, 1))
    assert first["cursor"]["atClusterTime"] == Timestamp(10, 1) and _xs(first) == [1]
    store.handle("db", {"update": "c", "updates": [{"q": {}, "u": {"$inc": {"x": 1}}}]})
    store.handle("db", {"insert": "c", "documents": [{"_id": 2, "x": 5}]})
    assert _xs(_find(store, Timestamp(12, 1), Timestamp(10, 1))) == [1]
    assert _xs(_find(store, Timestamp(12, 1))) == [2, 5]  # now: the current data
    assert _xs(store.handle("db", {"find": "c"})) == [2, 5]


def test_distinct_reports_the_time_at_top_level() -> None:
    store = Store()
    store.handle("db", {"insert": "c", "documents": [{"_id": 1, "x": 1}]})
    reply = store.handle("db", {"distinct": "c", "key": "x", "readConcern": SNAPSHOT},
                         SessionContext(cluster_time=Timestamp(3, 2)))
    assert reply["values"] == [1] and reply["atClusterTime"] == Timestamp(3, 2)


def test_unretained_past_is_too_old_and_future_is_refused() -> None:
    store = Store()
    store.handle("db", {"insert": "c", "documents": [{"_id": 1, "x": 1}]})
    assert _find(store, Timestamp(10, 1), Timestamp(9, 1))["code"] == 239
    assert _find(store, Timestamp(10, 1), Timestamp(11, 1))["code"] == 72
    _find(store, Timestamp(10, 1))
    # Nothing changed since the retained 10/1 snapshot: 10/5 is the same state.
    assert _xs(_find(store, Timestamp(10, 9), Timestamp(10, 5))) == [1]
    store.handle("db", {"insert": "c", "documents": [{"_id": 2, "x": 2}]})
    assert _find(store, Timestamp(11, 1), Timestamp(10, 7))["code"] == 239


def test_history_is_bounded() -> None:
    store = Store()
    history = store.transactions.history
    for second in range(history.limit + 5):
        _find(store, Timestamp(second + 1, 1))
    assert len(history) == history.limit
    assert _find(store, Timestamp(100, 1), Timestamp(1, 1))["code"] == 239


def test_without_a_cluster_time_a_snapshot_read_sees_current_data() -> None:
    store = Store()
    store.handle("db", {"insert": "c", "documents": [{"_id": 1, "x": 1}]})
    reply = store.handle("db", {"find": "c", "readConcern": SNAPSHOT})
    assert _xs(reply) == [1] and "atClusterTime" not in reply["cursor"]

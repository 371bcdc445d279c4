"""The simulated server's ``explain`` of a find (testing/store/explain.py): mongod's reply
layout, the plan the store's planner picks, execution stats from running the query, and
mongod's refusals."""

from __future__ import annotations

from asyncmongo.testing.store import Store


def test_explain_of_find_plans_and_counts() -> None:
    store = Store()
    store.handle("db", {"insert": "c", "documents": [{"_id": i, "x": i % 2} for i in range(5)]})
    store.handle("db", {"createIndexes": "c", "indexes": [{"key": {"x": 1}, "name": "x_1"}]})
    reply = store.handle("db", {"explain": {"find": "c", "filter": {"x": 1}, "batchSize": 1}})
    assert reply["ok"] == 1.0
    planner = reply["queryPlanner"]
    assert planner["namespace"] == "db.c"
    assert planner["parsedQuery"] == {"x": 1}
    assert planner["winningPlan"]["inputStage"]["indexName"] == "x_1"
    assert reply["command"] == {"find": "c", "filter": {"x": 1}, "batchSize": 1, "$db": "db"}
    assert reply["executionStats"]["nReturned"] == 2  # the whole result, not one batch
    scan = store.handle("db", {"explain": {"find": "c", "filter": {"_x": 1}},
                               "verbosity": "queryPlanner"})
    assert scan["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"
    assert "executionStats" not in scan
    assert not store.cursors.cursors  # the query ran as one batch: no cursor left open


def test_explain_refusals() -> None:
    store = Store()
    assert store.handle("db", {"explain": 1})["code"] == 2
    assert store.handle("db", {"explain": {"find": "c"}, "verbosity": "all"})["code"] == 2
    assert store.handle("db", {"explain": {"find": "c"}, "bogus": 1})["code"] == 40415
    assert store.handle("db", {"explain": {"count": "c"}})["code"] == 115

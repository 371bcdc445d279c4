"""Collation (approximated ICU strengths 1-3) for queries, sorts, distinct and writes."""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo.testing.store import Store

CI = {"locale": "en_US", "strength": 2}


@pytest.fixture
def store() -> Store:
    store = Store()
    store.handle("db", {"insert": "c", "documents": [
        {"_id": 1, "s": "ping"}, {"_id": 2, "s": "PING"}, {"_id": 3, "s": "Ping"},
        {"_id": 4, "s": "péng"}, {"_id": 5, "s": "b"}, {"_id": 6, "s": "B"}]})
    return store


def find_ids(store: Store, **options: Any) -> list[int]:
    reply = store.handle("db", {"find": "c", **options})
    return [d["_id"] for d in reply["cursor"]["firstBatch"]]


def test_simple_collation_is_binary(store: Store) -> None:
    assert find_ids(store, filter={"s": "ping"}) == [1]
    assert find_ids(store, filter={"s": "ping"}, collation={"locale": "simple"}) == [1]
    assert find_ids(store, sort={"s": 1}, projection={"_id": 1}) == [6, 2, 3, 5, 1, 4]


def test_strength_two_ignores_case(store: Store) -> None:
    assert find_ids(store, filter={"s": "ping"}, collation=CI) == [1, 2, 3]
    assert find_ids(store, filter={"s": {"$in": ["b"]}}, collation=CI) == [5, 6]
    assert find_ids(store, filter={"s": {"$gt": "p"}}, collation=CI) == [1, 2, 3, 4]


def test_strength_one_also_ignores_accents(store: Store) -> None:
    collation = {"locale": "fr", "strength": 1}
    assert find_ids(store, filter={"s": "peng"}, collation=collation) == [4]


def test_strength_three_sorts_lowercase_first(store: Store) -> None:
    collation = {"locale": "en_US", "strength": 3}
    assert find_ids(store, sort={"s": 1, "_id": 1}, collation=collation) == [5, 6, 4, 1, 3, 2]


def test_distinct_and_count_follow_the_collation(store: Store) -> None:
    reply = store.handle("db", {"distinct": "c", "key": "s", "collation": CI})
    assert len(reply["values"]) == 3
    assert store.handle("db", {"count": "c", "query": {"s": "b"}, "collation": CI})["n"] == 2


def test_statement_collation_for_writes(store: Store) -> None:
    reply = store.handle("db", {"update": "c", "updates": [
        {"q": {"s": "PING"}, "u": {"$set": {"hit": True}}, "multi": True, "collation": CI}]})
    assert reply["nModified"] == 3
    deleted = store.handle("db", {"delete": "c", "deletes": [
        {"q": {"s": "B"}, "limit": 0, "collation": CI}]})
    assert deleted["n"] == 2


def test_stored_keys_do_not_depend_on_the_collation(store: Store) -> None:
    store.handle("db", {"createIndexes": "c", "indexes": [{"key": {"u": 1}, "name": "u_1",
                                                           "unique": True}]})
    store.handle("db", {"update": "c", "updates": [
        {"q": {"_id": 1}, "u": {"$set": {"u": "x"}}, "collation": CI}]})
    reply = store.handle("db", {"insert": "c", "documents": [{"_id": 7, "u": "X"}]})
    assert reply["n"] == 1  # the unique index compares binary, whatever the writer's collation


def test_bad_collation(store: Store) -> None:
    assert store.handle("db", {"find": "c", "collation": {"strength": 2}})["ok"] == 0.0
    assert store.handle("db", {"find": "c", "collation": {"locale": "en", "strength": 9}})[
        "code"] == 2

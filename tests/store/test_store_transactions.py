"""Transactions (snapshot views, atomic commit, write conflicts) and retryable writes."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from asyncmongo.bson.binary import Binary
from asyncmongo.bson.types import Int64
from asyncmongo.testing.store import Store
from asyncmongo.testing.store.transactions import TransactionState


def new_lsid() -> dict[str, Any]:
    return {"id": Binary(uuid.uuid4().bytes, 4)}


class Session:
    """A test-side session: sends commands with lsid / txnNumber / autocommit as drivers do."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.lsid = new_lsid()
        self.txn_number = 0
        self.starting = False

    def start(self) -> None:
        self.txn_number += 1
        self.starting = True

    def run(self, command: dict[str, Any], db: str = "db") -> dict[str, Any]:
        full = {**command, "lsid": self.lsid, "txnNumber": Int64(self.txn_number),
                "autocommit": False}
        if self.starting:
            full["startTransaction"] = True
            self.starting = False
        return self.store.handle(db, full)

    def commit(self) -> dict[str, Any]:
        return self.run({"commitTransaction": 1}, "admin")

    def abort(self) -> dict[str, Any]:
        return self.run({"abortTransaction": 1}, "admin")


@pytest.fixture
def store() -> Store:
    store = Store()
    store.handle("db", {"insert": "c", "documents": [{"_id": 1, "n": 0}, {"_id": 2, "n": 0}]})
    return store


def outside(store: Store) -> list[dict[str, Any]]:
    return store.handle("db", {"find": "c"})["cursor"]["firstBatch"]


def test_writes_are_invisible_until_commit(store: Store) -> None:
    session = Session(store)
    session.start()
    assert session.run({"insert": "c", "documents": [{"_id": 3}]})["n"] == 1
    assert session.run({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {
        "n": 1}}}]})["nModified"] == 1
    inside = session.run({"find": "c"})["cursor"]["firstBatch"]
    assert inside == [{"_id": 1, "n": 1}, {"_id": 2, "n": 0}, {"_id": 3}]
    assert outside(store) == [{"_id": 1, "n": 0}, {"_id": 2, "n": 0}]
    assert session.commit() == {"ok": 1.0}
    assert outside(store) == inside
    assert session.commit() == {"ok": 1.0}  # a retried commit succeeds again
    assert session.abort()["code"] == 256
    assert store.transaction_state(session.lsid) is TransactionState.COMMITTED


def test_abort_discards(store: Store) -> None:
    session = Session(store)
    session.start()
    session.run({"delete": "c", "deletes": [{"q": {}, "limit": 0}]})
    assert session.abort() == {"ok": 1.0}
    assert len(outside(store)) == 2
    reply = session.commit()
    assert reply["code"] == 251 and reply["errorLabels"] == ["TransientTransactionError"]


def test_two_transactions_writing_one_document_conflict(store: Store) -> None:
    first, second = Session(store), Session(store)
    first.start()
    second.start()
    update = {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}
    assert first.run(update)["nModified"] == 1
    conflict = second.run(update)
    assert conflict["code"] == 112 and conflict["codeName"] == "WriteConflict"
    assert conflict["errorLabels"] == ["TransientTransactionError"]
    assert store.transaction_state(second.lsid) is TransactionState.ABORTED
    after = second.run({"find": "c"})
    assert after["code"] == 251 and "TransientTransactionError" in after["errorLabels"]
    assert first.commit() == {"ok": 1.0}
    assert outside(store)[0] == {"_id": 1, "n": 1}


def test_other_documents_do_not_conflict(store: Store) -> None:
    first, second = Session(store), Session(store)
    first.start()
    second.start()
    first.run({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}}]})
    second.run({"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$set": {"b": 1}}}]})
    assert first.commit()["ok"] == 1.0 and second.commit()["ok"] == 1.0
    assert outside(store) == [{"_id": 1, "n": 0, "a": 1}, {"_id": 2, "n": 0, "b": 1}]


def test_a_plain_write_to_a_locked_document_conflicts(store: Store) -> None:
    session = Session(store)
    session.start()
    session.run({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 1}}}]})
    reply = store.handle("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {
        "a": 2}}}]})
    assert reply["code"] == 112 and "errorLabels" not in reply
    assert session.commit()["ok"] == 1.0


def test_a_document_changed_since_the_snapshot_conflicts(store: Store) -> None:
    session = Session(store)
    session.start()
    assert len(session.run({"find": "c"})["cursor"]["firstBatch"]) == 2  # snapshot taken
    store.handle("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {
        "x": 1}}}]})
    store.handle("db", {"insert": "c", "documents": [{"_id": 9}]})
    assert len(session.run({"find": "c"})["cursor"]["firstBatch"]) == 2  # snapshot reads
    reply = session.run({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {
        "y": 1}}}]})
    assert reply["code"] == 112


def test_an_error_aborts_the_transaction(store: Store) -> None:
    session = Session(store)
    session.start()
    reply = session.run({"insert": "c", "documents": [{"_id": 1}]})
    assert reply["writeErrors"][0]["code"] == 11000
    assert session.run({"find": "c"})["code"] == 251


def test_transaction_number_rules(store: Store) -> None:
    session = Session(store)
    assert session.run({"find": "c"})["code"] == 251  # no transaction started
    session.start()
    session.run({"find": "c"})
    session.commit()
    session.txn_number -= 1
    session.starting = True
    assert session.run({"find": "c"})["code"] == 225


def test_commands_not_allowed_in_a_transaction(store: Store) -> None:
    session = Session(store)
    session.start()
    assert session.run({"count": "c"})["codeName"] == "OperationNotSupportedInTransaction"
    session.start()
    assert session.run({"listCollections": 1})["code"] == 263


def test_collections_created_in_a_transaction(store: Store) -> None:
    session = Session(store)
    session.start()
    session.run({"insert": "fresh", "documents": [{"_id": 1}]})
    assert store.handle("db", {"find": "fresh"})["cursor"]["firstBatch"] == []
    session.commit()
    assert store.handle("db", {"find": "fresh"})["cursor"]["firstBatch"] == [{"_id": 1}]


def test_end_sessions_aborts_open_transactions(store: Store) -> None:
    session = Session(store)
    session.start()
    session.run({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"z": 1}}}]})
    assert store.handle("admin", {"endSessions": [session.lsid]}) == {"ok": 1.0}
    assert store.handle("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {
        "z": 2}}}]})["nModified"] == 1


def retryable(store: Store, lsid: dict[str, Any], txn_number: int,
              command: dict[str, Any]) -> dict[str, Any]:
    return store.handle("db", {**command, "lsid": lsid, "txnNumber": Int64(txn_number)})


def test_a_retried_write_is_applied_once(store: Store) -> None:
    lsid = new_lsid()
    inc = {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}
    first = retryable(store, lsid, 1, inc)
    assert retryable(store, lsid, 1, inc) == first
    assert outside(store)[0]["n"] == 1
    insert = {"insert": "c", "documents": [{"_id": 7}]}
    assert retryable(store, lsid, 2, insert) == {"n": 1, "ok": 1.0}
    assert retryable(store, lsid, 2, insert) == {"n": 1, "ok": 1.0}  # no duplicate key error
    assert retryable(store, lsid, 1, inc)["code"] == 225
    fam = {"findAndModify": "c", "query": {"_id": 2}, "update": {"$inc": {"n": 5}}, "new": True}
    assert retryable(store, lsid, 3, fam)["value"] == {"_id": 2, "n": 5}
    assert retryable(store, lsid, 3, fam)["value"] == {"_id": 2, "n": 5}
    assert outside(store)[1] == {"_id": 2, "n": 5}


def test_writes_without_a_session_are_applied_every_time(store: Store) -> None:
    inc = {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}
    store.handle("db", inc)
    store.handle("db", inc)
    assert outside(store)[0]["n"] == 2


def test_repr_summarises_state(store: Store) -> None:
    session = Session(store)
    session.start()
    session.run({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"z": 1}}}]})
    assert "1 open transactions, 1 locked documents" in repr(store)


def test_a_transaction_reads_as_of_its_start(store: Store) -> None:
    session = Session(store)
    session.start()
    session.run({"find": "other"})  # the transaction starts here, touching only "other"
    store.handle("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {
        "late": True}}}]})
    store.handle("db", {"insert": "c", "documents": [{"_id": 3}]})
    store.handle("db", {"drop": "gone"})
    seen = session.run({"find": "c"})["cursor"]["firstBatch"]
    assert seen == [{"_id": 1, "n": 0}, {"_id": 2, "n": 0}]
    other = Session(store)
    other.start()
    other.run({"find": "c"})
    session.run({"insert": "c", "documents": [{"_id": 4}]})
    session.commit()
    assert len(other.run({"find": "c"})["cursor"]["firstBatch"]) == 3  # not the commit

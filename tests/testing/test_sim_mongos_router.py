"""The simulated mongos' transaction router: a recoveryToken on every reply of a transaction,
and commit recovery on a mongos that did not route the transaction (transactions spec,
mongos-recovery-token tests)."""

from __future__ import annotations

from typing import Any

from asyncmongo.bson import Binary, Int64
from asyncmongo.testing import ShardedCluster
from asyncmongo.testing.mongos_router import TransactionRouter
from asyncmongo.testing.store import Store
from tests.testing.raw_client import RawClient

LSID = {"id": Binary(bytes(16), 4)}


def _in_transaction(command: dict[str, Any], *, start: bool = False) -> dict[str, Any]:
    fields: dict[str, Any] = {"lsid": LSID, "txnNumber": Int64(1), "autocommit": False}
    if start:
        fields["startTransaction"] = True
    return {**command, **fields}


def test_commit_of_a_transaction_routed_elsewhere_and_not_committed_is_no_such_transaction(
) -> None:
    store = Store()
    routed_it, other = TransactionRouter(), TransactionRouter()
    insert = _in_transaction({"insert": "c", "documents": [{"_id": 1}]}, start=True)
    assert routed_it.refusal("insert", insert, store.transactions) is None
    assert store.handle("db", insert)["ok"]
    commit = _in_transaction({"commitTransaction": 1})
    assert routed_it.refusal("commitTransaction", commit, store.transactions) is None
    reply = other.refusal("commitTransaction", commit, store.transactions)
    assert reply is not None and reply["code"] == 251
    assert reply["codeName"] == "NoSuchTransaction"
    assert "TransientTransactionError" in reply["errorLabels"]
    # the recovery aborted it: the routing mongos cannot commit it any more
    assert not store.handle("admin", commit)["ok"]


def test_commit_of_a_committed_transaction_recovers_on_any_mongos() -> None:
    store = Store()
    insert = _in_transaction({"insert": "c", "documents": [{"_id": 1}]}, start=True)
    TransactionRouter().refusal("insert", insert, store.transactions)
    store.handle("db", insert)
    commit = _in_transaction({"commitTransaction": 1})
    assert store.handle("admin", commit)["ok"]
    assert TransactionRouter().refusal("commitTransaction", commit, store.transactions) is None


def test_commands_outside_a_transaction_are_not_routed() -> None:
    store = Store()
    plain = {"commitTransaction": 1, "lsid": LSID, "txnNumber": Int64(1)}
    assert TransactionRouter().refusal("commitTransaction", plain, store.transactions) is None


async def test_mongos_replies_in_a_transaction_carry_a_recovery_token() -> None:
    async with ShardedCluster(1) as cluster:
        client = await RawClient.connect(cluster.mongos[0].port)
        try:
            insert = _in_transaction({"insert": "c", "documents": [{"_id": 1}]}, start=True)
            await client.send_msg({**insert, "$db": "db"})
            reply = (await client.read()).document
            assert reply["ok"] and reply["recoveryToken"] == TransactionRouter.recovery_token()
            await client.send_msg({"insert": "c", "documents": [{"_id": 2}], "$db": "db"})
            plain = (await client.read()).document
            assert plain["ok"] and "recoveryToken" not in plain
        finally:
            await client.close()

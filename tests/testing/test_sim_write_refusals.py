"""Writes a member refuses or holds back as mongod does: a secondary refuses every write
command (collMod included); a plain write to a document an open transaction holds waits a
little for the transaction to end (mongod blocks on the document's lock) before WriteConflict."""

from __future__ import annotations

import asyncio
import time

import pytest

from asyncmongo.bson import Int64
from asyncmongo.testing import ReplicaSet, SimServer
from asyncmongo.testing.server.commands import LOCK_WAIT_PAUSES
from tests.testing.raw_client import RawClient

pytestmark = pytest.mark.timeout(15)


async def test_secondary_refuses_coll_mod() -> None:
    async with ReplicaSet(2) as rs:
        primary_client = await RawClient.connect(rs.members[0].port)
        client = await RawClient.connect(rs.members[1].port)
        try:
            created = await primary_client.command({"create": "c", "$db": "db"})
            assert created["ok"] == 1.0
            coll_mod = {"collMod": "c", "validator": {"a": {"$exists": True}}, "$db": "db"}
            reply = await client.command(coll_mod)
            assert (reply["ok"], reply["code"], reply["codeName"]) == (
                0.0, 10107, "NotWritablePrimary")
            assert (await primary_client.command(coll_mod))["ok"] == 1.0
        finally:
            await client.close()
            await primary_client.close()


SESSION = {"lsid": {"id": b"1" * 16}, "txnNumber": Int64(1)}


async def _hold_documents(client: RawClient, *keys: int) -> None:
    """Open a transaction that writes (upserts) documents ``keys``, so it holds their locks."""
    updates = [{"q": {"_id": key}, "u": {"$set": {"t": 1}}, "upsert": True} for key in keys]
    reply = await client.command({"update": "c", "updates": updates, "startTransaction": True,
                                  "autocommit": False, **SESSION, "$db": "db"})
    assert reply["ok"] == 1.0 and reply["n"] == len(keys)


async def test_plain_write_waits_for_the_transaction_holding_its_document() -> None:
    async with SimServer() as server:
        txn, plain = await RawClient.connect(server.port), await RawClient.connect(server.port)
        try:
            assert (await plain.command({"insert": "c", "documents": [{"_id": 1}],
                                         "$db": "db"}))["ok"] == 1.0
            await _hold_documents(txn, 1)
            write = asyncio.create_task(plain.command({
                "update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"p": 1}}}],
                "$db": "db"}))
            await asyncio.sleep(0.03)
            assert not write.done()             # blocked on the transaction's lock
            commit = {"commitTransaction": 1, "autocommit": False, **SESSION, "$db": "admin"}
            assert (await txn.command(commit))["ok"] == 1.0
            reply = await write
            assert (reply["ok"], reply["n"], reply["nModified"]) == (1.0, 1, 1)
            found = await plain.command({"find": "c", "$db": "db"})
            assert found["cursor"]["firstBatch"] == [{"_id": 1, "t": 1, "p": 1}]
        finally:
            await txn.close()
            await plain.close()


async def test_plain_write_gives_up_with_write_conflict_after_a_bounded_wait() -> None:
    async with SimServer() as server:
        txn, plain = await RawClient.connect(server.port), await RawClient.connect(server.port)
        try:
            assert (await plain.command({"insert": "c", "documents": [{"_id": 1}],
                                         "$db": "db"}))["ok"] == 1.0
            await _hold_documents(txn, 1, 2)
            started = time.monotonic()
            reply = await plain.command({"delete": "c", "deletes": [{"q": {"_id": 1},
                                                                     "limit": 1}],
                                         "$db": "db"})
            waited = time.monotonic() - started
            assert reply["code"] == 112 and "errorLabels" not in reply
            assert sum(LOCK_WAIT_PAUSES) * 0.9 <= waited < 2.0
            # a write that already wrote part of its statements is not tried again
            started = time.monotonic()
            partial = await plain.command({"insert": "c", "documents": [{"_id": 3}, {"_id": 2}],
                                           "$db": "db"})
            assert partial["code"] == 112 and time.monotonic() - started < 0.2
            # inside a transaction the conflict is immediate and labelled
            other = {"lsid": {"id": b"2" * 16}, "txnNumber": Int64(1)}
            conflict = await plain.command({
                "update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"o": 1}}}],
                "startTransaction": True, "autocommit": False, **other, "$db": "db"})
            assert (conflict["code"], conflict["errorLabels"]) == (
                112, ["TransientTransactionError"])
        finally:
            await txn.close()
            await plain.close()

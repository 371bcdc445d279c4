"""Writes a member refuses or holds back as mongod does: a secondary refuses every write
command (collMod included); a plain write to a document an open transaction holds waits a
little for the transaction to end (mongod blocks on the document's lock) before WriteConflict."""

from __future__ import annotations

import asyncio
import time

import pytest

from asyncmongo.bson import Int64
from asyncmongo.testing import ReplicaSet, SimServer
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

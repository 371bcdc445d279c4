"""asyncmongo.testing's public names: the deployments, the members and the store they share."""

from __future__ import annotations

import pytest

import asyncmongo.testing as testing
from asyncmongo.testing import SessionContext, Standalone, Store, StoreError
from asyncmongo.testing.store import commands, context, errors
from tests.testing.raw_client import RawClient


def test_store_names_are_re_exported() -> None:
    assert (Store, StoreError, SessionContext) == (
        commands.Store, errors.StoreError, context.SessionContext)
    assert {"Store", "StoreError", "SessionContext"} <= set(testing.__all__)
    for name in ("Store", "StoreError", "SessionContext"):
        assert f":class:`{name}`" in (testing.__doc__ or ""), name


def test_store_alone_answers_as_mongod() -> None:
    store = Store()
    assert store.handle("db", {"insert": "c", "documents": [{"_id": 1}]},
                        SessionContext()) == {"n": 1, "ok": 1.0}
    refused = store.handle("db", {"nosuch": 1})
    assert (refused["ok"], refused["code"]) == (0.0, 59)
    error = StoreError(112, "conflict", labels=("TransientTransactionError",))
    assert (error.code, error.labels) == (112, ("TransientTransactionError",))


@pytest.mark.timeout(10)
async def test_a_prefilled_store_serves_a_deployment() -> None:
    store = Store()
    store.handle("db", {"insert": "c", "documents": [{"_id": 7}]})
    async with Standalone(store=store) as deployment:
        assert deployment.store is store
        client = await RawClient.connect(deployment.server.port)
        try:
            reply = await client.command({"find": "c", "$db": "db"})
            assert reply["cursor"]["firstBatch"] == [{"_id": 7}]
        finally:
            await client.close()

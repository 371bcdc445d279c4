"""``$where`` in the simulator: the sleep/true/false scripts the spec tests send, their sleep
awaited per evaluated document without blocking the event loop (another connection is
answered meanwhile), maxTimeMS interrupting it, and any other JavaScript refused by name."""

from __future__ import annotations

import asyncio
import time

import pytest

from asyncmongo.bson.types import Code
from asyncmongo.testing import SimServer
from asyncmongo.testing.store import Store
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.where import WhereScript, javascript_sleeps, parse_where
from tests.testing.raw_client import RawClient

pytestmark = pytest.mark.timeout(15)


@pytest.mark.parametrize(("code", "script"), [
    ("sleep(2000) || true", WhereScript(2000.0, True)),
    ("  sleep( 50 )||false ", WhereScript(50.0, False)),
    ("true", WhereScript(0.0, True)),
    ("false || sleep(5) || true || sleep(100)", WhereScript(5.0, True)),
    ("function() { sleep(100); return true; }", WhereScript(100.0, True)),
    ("function(){sleep(1);sleep(2);return false}", WhereScript(3.0, False)),
    ("function() { sleep(7); }", WhereScript(7.0, False)),
    (Code("sleep(3) || true"), WhereScript(3.0, True)),
])
def test_parse_where_reads_the_spec_scripts(code: str, script: WhereScript) -> None:
    assert parse_where(code) == script


@pytest.mark.parametrize("code", [
    "this.a == 1", "function() { return this.a > 2; }", "sleep(1) && true",
    "function() { return true; sleep(5); }", 42, Code("true", {"x": 1}),
])
def test_other_javascript_is_refused_naming_the_limits(code: object) -> None:
    with pytest.raises(StoreError) as caught:
        parse_where(code)
    assert caught.value.code == 2 and "no JavaScript engine" in str(caught.value)


def test_store_records_the_sleep_of_every_evaluated_document() -> None:
    store = Store()
    store.handle("db", {"insert": "c", "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3}]})
    with javascript_sleeps() as slept:
        reply = store.handle("db", {"find": "c", "filter": {"$where": "sleep(10) || true"}})
    assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [1, 2, 3]
    assert slept.ms == 30.0
    refused = store.handle("db", {"find": "c", "filter": {"$where": "this._id > 1"}})
    assert refused["ok"] == 0 and refused["code"] == 2


async def test_server_awaits_the_sleep_without_blocking_others() -> None:
    async with SimServer() as server:
        slow, other = await RawClient.connect(server.port), await RawClient.connect(server.port)
        try:
            await slow.command({"insert": "c", "documents": [{"_id": 1}], "$db": "db"})
            started = time.monotonic()
            find = asyncio.create_task(slow.command(
                {"find": "c", "filter": {"$where": "sleep(300) || true"}, "$db": "db"}))
            await asyncio.sleep(0.02)
            assert (await other.command({"ping": 1, "$db": "admin"}))["ok"] == 1.0
            assert not find.done()              # the ping came back while the find sleeps
            reply = await find
            assert time.monotonic() - started >= 0.29
            assert reply["ok"] == 1.0 and reply["cursor"]["firstBatch"] == [{"_id": 1}]
        finally:
            await slow.close()
            await other.close()


async def test_max_time_ms_interrupts_the_sleep() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            await client.command({"insert": "c", "documents": [{"_id": 1}], "$db": "db"})
            started = time.monotonic()
            reply = await client.command({"find": "c", "filter": {"$where": "sleep(5000) || true"},
                                          "maxTimeMS": 100, "$db": "db"})
            assert time.monotonic() - started < 2
            assert (reply["ok"], reply["code"], reply["codeName"]) == (
                0.0, 50, "MaxTimeMSExpired")
        finally:
            await client.close()

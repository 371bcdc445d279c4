"""The per-operation fast paths (issue #9) send what the general paths send.

``find_one(filter)`` without options runs a :class:`FindOne` instead of a whole ``Find`` with
its options object; the command on the wire, the result and the cursor clean-up must not
change.
"""

from __future__ import annotations

from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson import CodecOptions
from asyncmongo.command_monitoring import CommandStartedEvent
from asyncmongo.core.concern import ReadConcern
from asyncmongo.core.operations.common import Namespace
from asyncmongo.core.operations.find import Find, FindOne, FindOptions
from asyncmongo.core.selection import PRIMARY
from asyncmongo.errors import InvalidArgument
from asyncmongo.testing import Standalone

NS = Namespace("db", "coll")


class Conn:
    max_wire_version = 21
    max_bson_object_size = 16 * 1024 * 1024
    max_message_size_bytes = 48_000_000
    max_write_batch_size = 100_000


@pytest.mark.parametrize("filter", [None, {}, {"_id": 1}, {"a": {"$gt": 1}, "b": "x"}])
@pytest.mark.parametrize(
    "read_concern", [ReadConcern(), ReadConcern("majority"), ReadConcern("local")]
)
def test_find_one_builds_what_find_builds(
    filter: dict[str, Any] | None, read_concern: ReadConcern
) -> None:
    options = FindOptions(filter, limit=1, single_batch=True)
    general = Find(NS, options, PRIMARY, read_concern, CodecOptions()).build(Conn())
    fast = FindOne(NS, filter, PRIMARY, read_concern, CodecOptions()).build(Conn())
    assert fast == general
    assert list(fast.document) == list(general.document)  # key order too


def test_find_one_refuses_a_non_mapping_filter() -> None:
    with pytest.raises(InvalidArgument):
        FindOne(NS, [("a", 1)], PRIMARY, ReadConcern(), CodecOptions())  # type: ignore[arg-type]


def test_find_one_parses_as_find() -> None:
    reply = {"ok": 1, "cursor": {"id": 0, "ns": "db.coll", "firstBatch": [{"_id": 1}]}}
    op = FindOne(NS, None, PRIMARY, ReadConcern(), CodecOptions())
    general = Find(NS, FindOptions(), PRIMARY, ReadConcern(), CodecOptions())
    assert op.parse(reply) == general.parse(reply)


async def test_find_one_sends_the_same_command_with_and_without_options() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            coll = client.db.coll
            await coll.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}])
            events.clear()
            assert await coll.find_one({"a": 2}) == {"_id": 2, "a": 2}
            assert await coll.find_one({"a": 2}, max_time_ms=None) == {"_id": 2, "a": 2}
            assert await coll.find_one(1) == {"_id": 1, "a": 1}
            assert await coll.find_one({"a": 3}) is None
            assert await coll.find_one() == {"_id": 1, "a": 1}
    started = [
        e.command
        for e in events
        if isinstance(e, CommandStartedEvent) and e.command_name == "find"
    ]
    shown = [{k: v for k, v in c.items() if k not in ("lsid", "$clusterTime")} for c in started]
    find = {"find": "coll", "limit": 1, "singleBatch": True, "$db": "db"}
    assert shown == [
        {**find, "filter": {"a": 2}},
        {**find, "filter": {"a": 2}},
        {**find, "filter": {"_id": 1}},
        {**find, "filter": {"a": 3}},
        {**find, "filter": {}},
    ]
    assert [list(c)[:4] for c in shown] == [["find", "filter", "limit", "singleBatch"]] * 5

"""The per-operation fast paths send what the general paths send.

``find_one(filter)`` without options runs ``FindOne`` (the collection's parts made once, the
batch of the closed cursor as its result) instead of a whole ``Find``; ``insert_one``
without options runs ``InsertOne`` instead of a batching ``WriteCommand``; ``db.command``
runs a ``RunCommand``; single writes share one default WriteOptions; the executor returns
selection's awaitable instead of awaiting it in one more coroutine. The commands on the
wire, the results and the errors must not change.
"""

from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson import CodecOptions, Int64, ObjectId
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.operations.base import Target
from asyncmongo.core.operations.common import Namespace
from asyncmongo.core.operations.cursors import CursorPage
from asyncmongo.core.operations.find import Find, FindContext, FindOne, FindOptions
from asyncmongo.core.operations.run_command import run_command
from asyncmongo.core.operations.statements import (
    StatementKind,
    WriteStatement,
    delete_statement,
    insert_statement,
    update_statement,
)
from asyncmongo.core.operations.write import (
    InsertOne,
    WriteCommand,
    WriteContext,
    WriteOne,
    WriteOptions,
    write_options,
)
from asyncmongo.core.selection import PRIMARY, Mode, ReadPreference
from asyncmongo.errors import (
    AutoReconnect,
    DocumentTooLarge,
    DuplicateKeyError,
    OperationFailure,
    ProtocolError,
    WriteError,
)
from asyncmongo.monitoring import CommandStartedEvent
from asyncmongo.runtime.attempt import is_retryable_write_operation
from asyncmongo.runtime.executor import Executor
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
    options = FindOptions(limit=1, single_batch=True)
    context = FindContext(NS, PRIMARY, read_concern, CodecOptions())
    general = Find(context, filter, options).build(Conn())
    fast = FindOne(context, filter).build(Conn())
    assert fast == general
    assert list(fast.document) == list(general.document)  # key order too


def test_find_one_runs_where_find_runs() -> None:
    codec = CodecOptions(tz_aware=True)
    op = FindOne(FindContext(NS, ReadPreference(Mode.SECONDARY), ReadConcern(), codec), {})
    general = Find(FindContext(NS, ReadPreference(Mode.SECONDARY), ReadConcern(), codec), {})
    assert (op.name, op.target, op.codec_options) == (general.name, general.target, codec)


def _reply(cursor_id: Any, batch_key: str = "firstBatch", **cursor: Any) -> dict[str, Any]:
    return {"ok": 1.0, "cursor": {batch_key: [{"_id": 1}], "id": cursor_id, **cursor}}


@pytest.mark.parametrize(
    "reply",
    [
        _reply(0, ns="db.coll"),
        _reply(Int64(0), ns="db.coll"),
        _reply(0),
        _reply(0, "nextBatch"),
        _reply(False),
        {"ok": True, "cursor": {"firstBatch": [], "id": 0}},
        {"ok": 1, "cursor": OrderedDict([("firstBatch", [{"_id": 2}]), ("id", 0)])},
    ],
)
def test_find_one_parses_a_closed_cursor_as_its_batch(reply: dict[str, Any]) -> None:
    """The usual reply gives FindOne the first batch, the documents of Find's page."""
    op = FindOne(FindContext(NS, PRIMARY, ReadConcern(), CodecOptions()), None)
    general = Find(FindContext(NS, PRIMARY, ReadConcern(), CodecOptions()), None)
    assert op.parse(reply) == general.parse(reply).documents
    assert type(op.parse(reply)) is list


@pytest.mark.parametrize("cursor_id", [5, Int64(5)])
def test_find_one_parses_an_open_cursor_as_finds_page(cursor_id: int) -> None:
    """A server that keeps a cursor open: the whole page (find_one closes its cursor)."""
    op = FindOne(FindContext(NS, PRIMARY, ReadConcern(), CodecOptions()), None)
    general = Find(FindContext(NS, PRIMARY, ReadConcern(), CodecOptions()), None)
    reply = _reply(cursor_id, ns="db.other")
    page = op.parse(reply)
    assert isinstance(page, CursorPage)
    assert page == general.parse(reply)
    assert page.cursor_id == 5 and page.namespace == Namespace("db", "other")


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ({"ok": 0, "code": 2, "errmsg": "bad"}, OperationFailure),
        ({"ok": False, "code": 2, "errmsg": "bad"}, OperationFailure),
        ({"ok": 1}, ProtocolError),
        ({"ok": 1, "cursor": []}, ProtocolError),
        ({"ok": 1, "cursor": {"firstBatch": {}, "id": 0}}, ProtocolError),
        ({"ok": 1, "cursor": {"firstBatch": [], "id": 0.0}}, ProtocolError),
        ({"ok": 1, "cursor": {"firstBatch": [], "id": None}}, ProtocolError),
        ({"ok": 1, "cursor": {"id": 0}}, ProtocolError),
    ],
)
def test_find_one_refuses_what_find_refuses(
    reply: dict[str, Any], error: type[Exception]
) -> None:
    op = FindOne(FindContext(NS, PRIMARY, ReadConcern(), CodecOptions()), None)
    general = Find(FindContext(NS, PRIMARY, ReadConcern(), CodecOptions()), None)
    with pytest.raises(error) as fast:
        op.parse(reply)
    with pytest.raises(error) as slow:
        general.parse(reply)
    assert str(fast.value) == str(slow.value)


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


# -- writes -------------------------------------------------------------------------------


def test_write_options_share_the_default_only_when_nothing_is_given() -> None:
    assert write_options() is write_options(True, None, None, None, None)
    assert write_options() == WriteOptions()
    assert write_options(False) == WriteOptions(False)
    assert write_options(1).ordered == 1  # type: ignore[arg-type]  # sent as given, not as True
    assert write_options(comment="c") == WriteOptions(comment="c")


@pytest.mark.parametrize(
    "options",
    [WriteOptions(), write_options(), WriteOptions(False, True, "c", {"x": 1})],
)
def test_write_command_document_is_the_same_with_the_shared_default(
    options: WriteOptions,
) -> None:
    statements = [insert_statement({"_id": 1})]
    command = WriteCommand(NS, StatementKind.INSERT, statements, WriteConcern(), CodecOptions())
    shared = WriteCommand(
        NS, StatementKind.INSERT, statements, WriteConcern(), CodecOptions(), options
    )
    expected: dict[str, Any] = {"insert": "coll", "ordered": options.ordered}
    for key, value in (
        ("bypassDocumentValidation", options.bypass_document_validation),
        ("comment", options.comment),
        ("let", options.let),
    ):
        if value is not None:
            expected[key] = value
    assert shared.build(Conn()).document == expected
    assert command.build(Conn()).document == {"insert": "coll", "ordered": True}
    assert shared.build(Conn()).sequences[0].identifier == "documents"


def test_write_command_acknowledged_follows_the_write_concern() -> None:
    statements = [insert_statement({"_id": 1})]
    w0 = WriteCommand(NS, StatementKind.INSERT, statements, WriteConcern(w=0), CodecOptions())
    w1 = WriteCommand(NS, StatementKind.INSERT, statements, WriteConcern(w=1), CodecOptions())
    assert (w0.acknowledged, w1.acknowledged) == (False, True)
    assert w0.build(Conn()).unacknowledged and not w1.build(Conn()).unacknowledged


@pytest.mark.parametrize(
    "concern", [WriteConcern(), WriteConcern(w="majority"), WriteConcern(w=1, journal=True)]
)
def test_insert_one_builds_what_the_write_command_builds(concern: WriteConcern) -> None:
    document = {"_id": 1, "x": "y"}
    codec = CodecOptions()
    general = WriteCommand(
        NS, StatementKind.INSERT, [insert_statement(document)], concern, codec
    ).build(Conn())
    context = WriteContext(NS, concern, codec, ObjectId)
    fast = InsertOne(context, document).build(Conn())
    assert fast == general
    assert list(fast.document) == list(general.document)  # key order too
    assert [s.identifier for s in fast.sequences] == ["documents"]
    op = InsertOne(context, document)
    assert (op.name, op.target, op.codec_options, op.acknowledged) == ("insert", Target.write(),
                                                                       codec, True)
    assert op.statements == (document,)


def _single_write(context: WriteContext, statement: WriteStatement) -> InsertOne | WriteOne:
    """The fast operation of a single write: insert_one's or the others'."""
    if statement.kind is StatementKind.INSERT:
        return InsertOne(context, statement.document)
    return WriteOne(context, statement)


@pytest.mark.parametrize(
    "statement",
    [
        insert_statement({"_id": 1, "x": "y" * 2048}),
        update_statement({"a": "y" * (1024 + 16384)}, {"$set": {"b": 1}}, multi=False),
        delete_statement({"a": "y" * (1024 + 16384)}, multi=False),
    ],
)
def test_a_single_write_too_large_raises_what_the_write_command_raises(
    statement: WriteStatement,
) -> None:
    class Small(Conn):
        max_bson_object_size = 1024

    context = WriteContext(NS, WriteConcern(), CodecOptions(), ObjectId)
    with pytest.raises(DocumentTooLarge) as fast:
        _single_write(context, statement).build(Small())
    general = WriteCommand(NS, statement.kind, [statement], WriteConcern(), CodecOptions())
    with pytest.raises(DocumentTooLarge) as slow:
        general.build(Small())
    assert str(fast.value) == str(slow.value)


@pytest.mark.parametrize(
    "statement",
    [insert_statement({"_id": 1, "x": "y" * 100}), delete_statement({"a": "y" * 100}, multi=False)],
)
def test_a_single_write_near_the_message_limit_is_built_exactly(
    statement: WriteStatement,
) -> None:
    class Tight(Conn):
        max_message_size_bytes = 4096  # below the fast path's allowance: the exact way

    context = WriteContext(NS, WriteConcern(), CodecOptions(), ObjectId)
    general = WriteCommand(NS, statement.kind, [statement], WriteConcern(), CodecOptions())
    assert _single_write(context, statement).build(Tight()) == general.build(Tight())


@pytest.mark.parametrize(
    "statement", [insert_statement({"_id": 1}), delete_statement({"a": 1}, multi=False)]
)
def test_a_single_write_parse_raises_the_command_error_and_returns_the_reply(
    statement: WriteStatement,
) -> None:
    op = _single_write(WriteContext(NS, WriteConcern(), CodecOptions(), ObjectId), statement)
    reply = {"ok": 1.0, "n": 0, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}]}
    assert op.parse(reply) is reply  # its write errors are the caller's to raise
    with pytest.raises(OperationFailure):
        op.parse({"ok": 0.0, "code": 2, "errmsg": "bad"})


_ONE_STATEMENTS = [
    update_statement({"a": 1}, {"$set": {"b": 2}}, multi=False),
    update_statement({"a": 1}, {"$set": {"b": 2}}, multi=True, upsert=True),
    update_statement(
        {"a": 1}, [{"$set": {"b": 2}}], multi=False, collation={"locale": "fr"}, hint="a_1",
        sort={"a": 1},
    ),
    update_statement({"a": 1}, {"$set": {"c.$[e]": 1}}, multi=False, array_filters=[{"e": 1}]),
    update_statement({"a": 1}, {"b": 2}, multi=False, replace=True, upsert=True),
    delete_statement({"a": 1}, multi=False),
    delete_statement({}, multi=True, collation={"locale": "fr"}, hint={"a": 1}),
]


@pytest.mark.parametrize("statement", _ONE_STATEMENTS)
@pytest.mark.parametrize("concern", [WriteConcern(), WriteConcern(w="majority", wtimeout_ms=5)])
def test_write_one_builds_what_the_write_command_builds(
    statement: WriteStatement, concern: WriteConcern
) -> None:
    codec = CodecOptions()
    general = WriteCommand(NS, statement.kind, [statement], concern, codec).build(Conn())
    context = WriteContext(NS, concern, codec, ObjectId)
    op = WriteOne(context, statement)
    fast = op.build(Conn())
    assert fast == general
    assert list(fast.document) == list(general.document)  # key order too
    assert [s.identifier for s in fast.sequences] == [statement.kind.sequence]
    assert (op.name, op.target, op.codec_options, op.acknowledged) == (
        statement.kind.value, Target.write(), codec, True
    )
    assert op.statements == (statement,)
    # the executor's retryable-write check sees what it sees of the write command
    assert is_retryable_write_operation(op) is is_retryable_write_operation(
        WriteCommand(NS, statement.kind, [statement], concern, codec)
    ) is (not statement.multi)


async def test_single_writes_send_the_same_command_with_and_without_options() -> None:
    """update_one, replace_one, delete_one and their _many forms: the usual call (WriteOne)
    and one with a command-level option (WriteCommand) send the same command but for that
    option, and give the same results and errors."""
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            coll = client.db.coll
            await coll.insert_many([{"_id": i, "n": i} for i in range(6)])
            for extra in ({}, {"comment": "c"}):
                updated = await coll.update_one({"_id": 0}, {"$inc": {"n": 1}}, **extra)
                assert (updated.matched_count, updated.modified_count) == (1, 1)
                upserted = await coll.update_one(
                    {"_id": 10 + len(extra)}, {"$set": {"n": 0}}, upsert=True, **extra
                )
                assert upserted.upserted_id == 10 + len(extra)
                replaced = await coll.replace_one({"_id": 1}, {"n": 9}, **extra)
                assert replaced.modified_count == 1
                many = await coll.update_many({"n": {"$gte": 0}}, {"$set": {"m": 1}}, **extra)
                assert many.matched_count == 7  # the six, less one deleted, and one upserted
                with pytest.raises(WriteError) as error:
                    await coll.update_one({"_id": 2}, {"$inc": {"m": "x"}}, **extra)
                assert error.value.code == 14  # TypeMismatch: $inc of a string
                deleted = await coll.delete_one({"_id": 3 + len(extra)}, **extra)
                assert deleted.deleted_count == 1
            assert (await coll.delete_many({"m": 1}, comment="c")).deleted_count == 6
            unacknowledged = await coll.with_options(
                write_concern=WriteConcern(w=0)
            ).delete_one({"_id": 10})
            assert not unacknowledged.acknowledged
    started = [
        {k: v for k, v in e.command.items() if k not in ("lsid", "$clusterTime", "txnNumber")}
        for e in events
        if isinstance(e, CommandStartedEvent) and e.command_name in ("update", "delete")
    ]
    plain, commented = started[:6], started[6:12]
    names = ["update"] * 5 + ["delete"]
    assert [list(c)[:2] for c in started[:12]] == [[name, "ordered"] for name in names * 2]
    for usual, with_comment in zip(plain, commented, strict=True):
        assert with_comment.pop("comment") == "c"
        if "updates" in usual:
            with_comment["updates"][0]["q"] = usual["updates"][0]["q"]
        else:
            with_comment["deletes"][0]["q"] = usual["deletes"][0]["q"]
        assert with_comment == usual
    assert plain[0] == {
        "update": "coll", "ordered": True, "$db": "db",
        "updates": [{"q": {"_id": 0}, "u": {"$inc": {"n": 1}}}],
    }
    assert started[-1]["writeConcern"] == {"w": 0}


def test_write_context_says_what_the_write_concern_sends() -> None:
    default = WriteContext(NS, WriteConcern(), CodecOptions(), ObjectId)
    assert (default.acknowledged, default.write_concern_sent) == (True, False)
    w0 = WriteContext(NS, WriteConcern(w=0), CodecOptions(), ObjectId)
    assert (w0.acknowledged, w0.write_concern_sent) == (False, True)


async def test_insert_one_sends_the_same_command_with_and_without_options() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            coll = client.db.coll
            first = await coll.insert_one({"_id": 1})
            second = await coll.insert_one({"_id": 2}, bypass_document_validation=False)
            third = await coll.insert_one({"x": 3})
            assert (first.inserted_id, second.inserted_id) == (1, 2)
            assert isinstance(third.inserted_id, ObjectId) and third.acknowledged
            with pytest.raises(DuplicateKeyError):
                await coll.insert_one({"_id": 1})
            with pytest.raises(DuplicateKeyError):
                await coll.insert_one({"_id": 1}, comment="c")
            unacknowledged = await coll.with_options(
                write_concern=WriteConcern(w=0)
            ).insert_one({"_id": 4})
            assert not unacknowledged.acknowledged
            assert await coll.count_documents({}) == 4
    started = [
        e.command
        for e in events
        if isinstance(e, CommandStartedEvent) and e.command_name == "insert"
    ]
    shown = [{k: v for k, v in c.items() if k not in ("lsid", "$clusterTime")} for c in started]
    assert [list(c)[:2] for c in shown] == [["insert", "ordered"]] * 6
    assert shown[0] == {"insert": "coll", "ordered": True, "$db": "db", "documents": [{"_id": 1}]}
    assert shown[1] == {**shown[0], "bypassDocumentValidation": False,
                        "documents": [{"_id": 2}]}
    assert shown[5]["writeConcern"] == {"w": 0}


# -- commands -----------------------------------------------------------------------------


def test_run_command_sends_the_document_as_written() -> None:
    document = {"ping": 1, "comment": "c"}
    op = run_command("admin", document, PRIMARY, CodecOptions())
    command = op.build(Conn())
    assert (command.database, command.document, command.sequences) == ("admin", document, ())
    assert not command.unacknowledged
    assert (op.name, op.generic, op.own_read_preference) == ("ping", True, False)
    assert op.target == Target.read(PRIMARY)


def test_run_command_parse() -> None:
    op = run_command("admin", {"ping": 1}, PRIMARY, CodecOptions())
    reply = {"ok": 1.0}
    assert op.parse(reply) is reply
    assert op.parse({}) == {"ok": 1}
    with pytest.raises(OperationFailure):
        op.parse({"ok": 0.0, "errmsg": "no", "code": 59})
    unchecked = run_command("admin", {"ping": 1}, PRIMARY, CodecOptions(), check=False)
    assert unchecked.parse({"ok": 0.0, "code": 59}) == {"ok": 0.0, "code": 59}


async def test_command_sends_each_form_of_the_command() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            assert (await client.admin.command("ping"))["ok"] == 1
            await client.admin.command("ping", comment="c")
            await client.admin.command({"ping": 1})
            await client.admin.command("ping", 2, maxTimeMS=500)
            await client.admin.command("ping", read_preference=PRIMARY)
    started = [e.command for e in events if isinstance(e, CommandStartedEvent)]
    shown = [{k: v for k, v in c.items() if k not in ("lsid", "$clusterTime", "$db")}
             for c in started if "ping" in c]
    assert shown == [
        {"ping": 1},
        {"ping": 1, "comment": "c"},
        {"ping": 1},
        {"ping": 2, "maxTimeMS": 500},
        {"ping": 1},
    ]


# -- the executor's selection seam -------------------------------------------------------


async def test_a_cursor_whose_server_left_the_topology_gets_autoreconnect() -> None:
    topology = SimpleNamespace(server=lambda address: None)
    executor = Executor(topology)  # type: ignore[arg-type]
    with pytest.raises(AutoReconnect, match="left the topology"):
        await executor._server_for(Target.pinned(("h", 1)), None, "getMore")


async def test_a_cursor_server_still_there_is_used() -> None:
    server = SimpleNamespace(address=("h", 1))
    topology = SimpleNamespace(server=lambda address: server)
    executor = Executor(topology)  # type: ignore[arg-type]
    assert await executor._server_for(Target.pinned(("h", 1)), None, "getMore") is server


# -- large messages -----------------------------------------------------------------------


async def test_large_documents_arrive_whole() -> None:
    """Messages over 256 KiB go out buffer by buffer (no joined copy); the server must still
    see every byte in order: one 1 MiB document, then a bulk of 64 KiB+ documents."""
    big = {"_id": 0, "x": "a" * (1024 * 1024)}
    many = [{"_id": i, "x": chr(97 + i) * (70 * 1024)} for i in range(1, 9)]
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            coll = client.db.big
            await coll.insert_one(big)
            await coll.insert_many(many)
            assert await coll.find_one({"_id": 0}) == big
            found = [doc async for doc in coll.find({"_id": {"$gte": 1}}).sort("_id", 1)]
            assert found == many

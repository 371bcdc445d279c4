"""Settings inheritance (codec options, concerns) and collection management on the simulator."""

from __future__ import annotations

import collections
import datetime
from typing import Any

import pytest

from asyncmongo import (
    AsyncMongoClient,
    CommandStartedEvent,
    ReadConcern,
    WriteConcern,
)
from asyncmongo.bson import CodecOptions
from asyncmongo.errors import (
    CollectionInvalid,
    ConfigurationError,
    InvalidName,
    InvalidOperation,
    OperationFailure,
)
from asyncmongo.testing import Standalone


def started(events: list[Any], name: str) -> list[CommandStartedEvent]:
    return [e for e in events if isinstance(e, CommandStartedEvent) and e.command_name == name]


async def test_codec_options_come_from_the_client_and_can_be_overridden() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(
            server.uri, document_class=collections.OrderedDict, tz_aware=True
        ) as client:
            coll = client.db.coll
            assert coll.codec_options.document_class is collections.OrderedDict
            when = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
            await coll.insert_one({"_id": 1, "when": when})
            found = await coll.find_one({"_id": 1})
            assert isinstance(found, collections.OrderedDict)
            assert found["when"] == when and found["when"].tzinfo is not None
            plain = coll.with_options(codec_options=CodecOptions())
            again = await plain.find_one({"_id": 1})
            assert type(again) is dict and again["when"].tzinfo is None


def test_bad_codec_keyword_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        AsyncMongoClient("mongodb://localhost", uuidRepresentation="nonsense")
    with pytest.raises(ConfigurationError):
        AsyncMongoClient("mongodb://localhost", document_class=list)


async def test_concerns_are_inherited_and_sent() -> None:
    events: list[Any] = []
    uri_suffix = "?w=majority&readConcernLevel=local"
    async with Standalone() as server:
        uri = server.uri.rstrip("/") + "/" + uri_suffix
        async with AsyncMongoClient(uri, event_listeners=[events.append]) as client:
            assert client.write_concern == WriteConcern(w="majority")
            coll = client.db.coll
            await coll.insert_one({"_id": 1})
            await coll.find_one({})
            quiet = client.get_database(
                "db", write_concern=WriteConcern(w=1), read_concern=ReadConcern()
            ).coll
            await quiet.insert_one({"_id": 2})
            await quiet.find_one({})
            await client.db.command("ping")
    inserts, finds = started(events, "insert"), started(events, "find")
    assert inserts[0].command["writeConcern"] == {"w": "majority"}
    assert finds[0].command["readConcern"] == {"level": "local"}
    assert inserts[1].command["writeConcern"] == {"w": 1}
    assert "readConcern" not in finds[1].command
    ping = started(events, "ping")[0].command  # run-command: nothing is added
    assert "writeConcern" not in ping and "readConcern" not in ping


async def test_collection_management() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            db = client.db
            coll = await db.create_collection("capped", capped=True, size=4096)
            assert (await coll.options())["capped"] is True
            with pytest.raises(CollectionInvalid):
                await db.create_collection("capped")
            await coll.insert_one({"_id": 1})
            await coll.rename("renamed", dropTarget=True)
            rename = started(events, "renameCollection")[0]
            assert rename.database_name == "admin"
            assert (rename.command["to"], rename.command["dropTarget"]) == ("db.renamed", True)
            assert await db.renamed.find_one() == {"_id": 1}
            assert "capped" not in await db.list_collection_names()
            await db.drop_collection("capped")
            await db.drop_collection("capped")  # a missing collection is not an error
            assert "capped" not in await db.list_collection_names()
            await db.other.insert_one({})
            await client.drop_database("db")
            assert "db" not in await client.list_database_names()


async def test_names_and_access() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri + "defaultdb") as client:
            assert client.get_default_database().name == "defaultdb"
            assert client.get_database().name == "defaultdb"
            assert client["a"]["b"].full_name == "a.b"
            assert client.a.b.c.full_name == "a.b.c"
            assert client.a.b == client["a"].get_collection("b")
            with pytest.raises(InvalidName):
                client["bad.name"]
            with pytest.raises(InvalidName):
                client.db["bad$name"]
            with pytest.raises(NotImplementedError):
                bool(client.db)
            with pytest.raises(AttributeError):
                client.db._private  # noqa: B018


async def test_search_index_helpers_send_no_concerns() -> None:
    from asyncmongo.operations import SearchIndexModel

    events: list[Any] = []
    async with Standalone() as server:
        uri = server.uri.rstrip("/") + "/?w=majority&readConcernLevel=majority"
        async with AsyncMongoClient(uri, event_listeners=[events.append]) as client:
            coll = client.db.coll
            definition = {"mappings": {"dynamic": True}}
            with pytest.raises(OperationFailure):  # the simulator is not Atlas
                await coll.create_search_index({"definition": definition, "name": "s"})
            with pytest.raises(OperationFailure):
                await coll.create_search_indexes([SearchIndexModel(definition)])
            with pytest.raises(OperationFailure):
                await coll.update_search_index("s", definition)
            with pytest.raises(OperationFailure):
                await coll.drop_search_index("s")
            with pytest.raises(OperationFailure):
                await coll.list_search_indexes("s")
    commands = [e.command for e in events if isinstance(e, CommandStartedEvent)]
    names = [next(iter(c)) for c in commands if next(iter(c)) != "endSessions"]
    assert names == [
        "createSearchIndexes",
        "createSearchIndexes",
        "updateSearchIndex",
        "dropSearchIndex",
        "aggregate",
    ]
    assert commands[0]["indexes"] == [{"name": "s", "definition": definition}]
    assert commands[4]["pipeline"] == [{"$listSearchIndexes": {"name": "s"}}]
    for command in commands:
        assert "readConcern" not in command and "writeConcern" not in command


async def test_cursor_command() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            await client.db.coll.insert_many([{"_id": i} for i in range(5)])
            cursor = await client.db.cursor_command(
                {"find": "coll", "batchSize": 2}, comment="c", batch_size=1
            )
            assert [d["_id"] async for d in cursor] == [0, 1, 2, 3, 4]
            with pytest.raises(InvalidOperation):
                await client.db.cursor_command("ping")
    get_mores = started(events, "getMore")
    assert get_mores and all(g.command["batchSize"] == 1 for g in get_mores)
    assert all(g.command["comment"] == "c" for g in get_mores)
    assert "comment" not in started(events, "find")[0].command


async def test_explain_wraps_the_find_command() -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            cursor = client.db.coll.find({"a": 1}, limit=2).sort("a")
            plan = await cursor.explain("queryPlanner")
            assert plan["queryPlanner"]["namespace"] == "db.coll"
            assert cursor.cursor_id is None  # explaining did not start the cursor
    explain = started(events, "explain")[0].command
    assert explain["explain"] == {"find": "coll", "filter": {"a": 1}, "sort": {"a": 1}, "limit": 2}
    assert explain["verbosity"] == "queryPlanner" and explain["$db"] == "db"

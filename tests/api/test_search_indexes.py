"""Search index helpers and list_indexes(batch_size) against asyncmongo.testing.

The simulator plays a mongod without Atlas Search: every search index command and the
``$listSearchIndexes`` stage fail with 31082 SearchNotEnabled after mongod's parse checks.
So these tests check what the driver sends (command monitoring), that read and write
concern are never sent (index-management "searchIndexIgnoresReadWriteConcern"), that keyword
arguments reach the command, and that the server's error surfaces as OperationFailure; the
reply parsing of a successful (Atlas) answer is checked on the operations themselves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient, CommandStartedEvent, SearchIndexModel
from asyncmongo.bson import CodecOptions
from asyncmongo.collection import AsyncCollection
from asyncmongo.core.operations import search_indexes as search_ops
from asyncmongo.core.operations.common import Namespace
from asyncmongo.errors import InvalidArgument, OperationFailure
from asyncmongo.testing import ReplicaSet, Standalone
from asyncmongo.testing.server import SimServer

SEARCH_NOT_ENABLED = 31082
DEFINITION = {"mappings": {"dynamic": True}}


class Recorder:
    """The commands a client started, by name (endSessions and monitoring aside)."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)

    def commands(self, name: str | None = None) -> list[dict[str, Any]]:
        return [
            dict(e.command)
            for e in self.events
            if isinstance(e, CommandStartedEvent)
            and e.command_name != "endSessions"
            and (name is None or e.command_name == name)
        ]

    def clear(self) -> None:
        self.events.clear()


@pytest.fixture
async def replica_set() -> AsyncIterator[ReplicaSet]:
    async with ReplicaSet(members=2) as rs:
        yield rs


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def coll(replica_set: ReplicaSet, recorder: Recorder) -> AsyncIterator[AsyncCollection]:
    """A collection whose client has a non-default read and write concern (majority)."""
    uri = replica_set.uri + ("&" if "?" in replica_set.uri else "/?")
    uri += "w=majority&readConcernLevel=majority"
    async with AsyncMongoClient(uri, event_listeners=[recorder]) as client:
        yield client.db.coll


def assert_search_not_enabled(exc: pytest.ExceptionInfo[OperationFailure]) -> None:
    assert exc.value.code == SEARCH_NOT_ENABLED
    assert (exc.value.details or {}).get("codeName") == "SearchNotEnabled"
    assert "Atlas" in str(exc.value)


def assert_no_concerns(command: dict[str, Any]) -> None:
    assert "readConcern" not in command
    assert "writeConcern" not in command


# -- what the helpers send ----------------------------------------------------------------


async def test_create_search_index_sends_one_model_and_no_concerns(
    coll: AsyncCollection, recorder: Recorder
) -> None:
    with pytest.raises(OperationFailure) as exc:
        await coll.create_search_index(
            SearchIndexModel(DEFINITION, name="s", type="search"), comment="why"
        )
    assert_search_not_enabled(exc)
    [command] = recorder.commands("createSearchIndexes")
    assert command["createSearchIndexes"] == "coll"
    assert command["indexes"] == [{"name": "s", "type": "search", "definition": DEFINITION}]
    assert command["comment"] == "why"
    assert command["$db"] == "db"
    assert_no_concerns(command)


async def test_create_search_index_takes_a_mapping_and_passes_kwargs_through(
    coll: AsyncCollection, recorder: Recorder
) -> None:
    with pytest.raises(OperationFailure):
        await coll.create_search_index(
            {"definition": DEFINITION, "name": "v", "type": "vectorSearch"},
            maxTimeMS=5000,
            someFutureOption=True,
        )
    [command] = recorder.commands("createSearchIndexes")
    assert command["indexes"] == [{"name": "v", "type": "vectorSearch", "definition": DEFINITION}]
    assert command["maxTimeMS"] == 5000
    assert command["someFutureOption"] is True


async def test_create_search_indexes_sends_every_model_in_order(
    coll: AsyncCollection, recorder: Recorder
) -> None:
    models = [SearchIndexModel(DEFINITION, name="a"), SearchIndexModel(DEFINITION)]
    with pytest.raises(OperationFailure) as exc:
        await coll.create_search_indexes(models, max_time_ms=100)
    assert_search_not_enabled(exc)
    [command] = recorder.commands("createSearchIndexes")
    assert command["indexes"] == [
        {"name": "a", "definition": DEFINITION},
        {"definition": DEFINITION},
    ]
    assert command["maxTimeMS"] == 100
    assert_no_concerns(command)


async def test_update_search_index_sends_name_and_definition(
    coll: AsyncCollection, recorder: Recorder
) -> None:
    with pytest.raises(OperationFailure) as exc:
        await coll.update_search_index("s", {"mappings": {"dynamic": False}}, comment=1, x=2)
    assert_search_not_enabled(exc)
    [command] = recorder.commands("updateSearchIndex")
    assert command["updateSearchIndex"] == "coll"
    assert command["name"] == "s"
    assert command["definition"] == {"mappings": {"dynamic": False}}
    assert (command["comment"], command["x"]) == (1, 2)
    assert_no_concerns(command)


async def test_drop_search_index_sends_the_name(coll: AsyncCollection, recorder: Recorder) -> None:
    with pytest.raises(OperationFailure) as exc:
        await coll.drop_search_index("s", maxTimeMS=7)
    assert_search_not_enabled(exc)
    [command] = recorder.commands("dropSearchIndex")
    assert command["dropSearchIndex"] == "coll"
    assert command["name"] == "s"
    assert command["maxTimeMS"] == 7
    assert_no_concerns(command)


async def test_list_search_indexes_is_an_aggregate_without_concerns(
    coll: AsyncCollection, recorder: Recorder
) -> None:
    with pytest.raises(OperationFailure) as exc:
        await coll.list_search_indexes()
    assert_search_not_enabled(exc)
    with pytest.raises(OperationFailure):
        await coll.list_search_indexes("s", batch_size=10, comment="c")
    with pytest.raises(OperationFailure):
        await coll.list_search_indexes("s", aggregation_options={"batchSize": 3})
    first, named, grouped = recorder.commands("aggregate")
    assert first["aggregate"] == "coll"
    assert first["pipeline"] == [{"$listSearchIndexes": {}}]
    assert named["pipeline"] == [{"$listSearchIndexes": {"name": "s"}}]
    assert named["cursor"] == {"batchSize": 10}
    assert named["comment"] == "c"
    assert grouped["cursor"] == {"batchSize": 3}
    for command in (first, named, grouped):
        assert_no_concerns(command)
        assert "$readPreference" not in command  # the primary, as in PyMongo


async def test_the_error_comes_whether_or_not_the_collection_exists(
    coll: AsyncCollection,
) -> None:
    await coll.insert_one({"_id": 1})
    for call in (
        coll.create_search_index({"definition": DEFINITION}),
        coll.update_search_index("s", DEFINITION),
        coll.drop_search_index("s"),
        coll.list_search_indexes(),
        coll.database.missing.drop_search_index("s"),
        coll.database.missing.list_search_indexes(),
    ):
        with pytest.raises(OperationFailure) as exc:
            await call
        assert_search_not_enabled(exc)


async def test_search_commands_in_a_session_carry_its_lsid(
    coll: AsyncCollection, recorder: Recorder
) -> None:
    async with coll.database.client.start_session() as session:
        with pytest.raises(OperationFailure):
            await coll.drop_search_index("s", session=session)
    [command] = recorder.commands("dropSearchIndex")
    assert command["lsid"] == session.session_id


# -- NamespaceNotFound: drop is idempotent, update ignores it as in PyMongo ---------------


async def test_drop_and_update_search_index_ignore_namespace_not_found(
    replica_set: ReplicaSet, coll: AsyncCollection
) -> None:
    primary = replica_set.primary
    assert isinstance(primary, SimServer)
    commands = ["dropSearchIndex", "updateSearchIndex"]
    with primary.fail_point({"times": 2}, failCommands=commands, errorCode=26):
        await coll.drop_search_index("s")  # the spec: drops are idempotent
        await coll.update_search_index("s", DEFINITION)  # PyMongo: allowable_errors=[26]
    with primary.fail_point({"times": 1}, failCommands=["updateSearchIndex"], errorCode=27):
        with pytest.raises(OperationFailure) as exc:
            await coll.update_search_index("s", DEFINITION)
    assert exc.value.code == 27


# -- bad arguments --------------------------------------------------------------------------


async def test_bad_arguments_are_refused_before_anything_is_sent(
    coll: AsyncCollection, recorder: Recorder
) -> None:
    with pytest.raises(InvalidArgument):
        await coll.create_search_indexes([{"name": "no definition"}])
    with pytest.raises(InvalidArgument):
        await coll.create_search_indexes(["not a model"])
    with pytest.raises(InvalidArgument):
        await coll.create_search_index(SearchIndexModel(DEFINITION), indexes=[])
    with pytest.raises(InvalidArgument):
        await coll.update_search_index("s", "not a document")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        await coll.list_search_indexes(aggregation_options=5)
    with pytest.raises(InvalidArgument):
        await coll.list_search_indexes(no_such_option=1)
    assert recorder.commands() == []


def test_search_index_model_is_pymongos() -> None:
    model = SearchIndexModel(DEFINITION, name="s", type="vectorSearch", extra=1)
    assert model.document == {
        "name": "s",
        "type": "vectorSearch",
        "definition": DEFINITION,
        "extra": 1,
    }
    assert SearchIndexModel(DEFINITION).document == {"definition": DEFINITION}
    assert "vectorSearch" in repr(model)
    with pytest.raises(InvalidArgument):
        SearchIndexModel([1, 2])  # type: ignore[arg-type]


def test_atlas_replies_are_parsed() -> None:
    """What Atlas answers on success: the created names in order; drop's and update's
    NamespaceNotFound is success, any other error is raised."""
    namespace = Namespace("db", "coll")
    codec = CodecOptions()
    create = search_ops.create_search_indexes(namespace, [], codec_options=codec)
    reply = {"ok": 1, "indexesCreated": [{"id": "1", "name": "a"}, {"id": "2", "name": "b"}]}
    assert create.parse(reply) == ["a", "b"]
    drop = search_ops.drop_search_index(namespace, "a", codec_options=codec)
    assert drop.parse({"ok": 0, "code": 26, "errmsg": "ns not found"}) is None
    assert drop.parse({"ok": 1}) is None
    with pytest.raises(OperationFailure):
        drop.parse({"ok": 0, "code": SEARCH_NOT_ENABLED, "errmsg": "Atlas"})
    update = search_ops.update_search_index(namespace, "a", {}, codec_options=codec)
    assert update.parse({"ok": 0, "code": 26, "errmsg": "ns not found"}) is None
    with pytest.raises(OperationFailure):
        update.parse({"ok": 0, "code": SEARCH_NOT_ENABLED, "errmsg": "Atlas"})


# -- the simulator's answers, also to PyMongo ---------------------------------------------


async def test_simulator_parses_the_command_before_refusing_it() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            db = client.db
            cases: list[tuple[dict[str, Any], int]] = [
                ({"createSearchIndexes": "c"}, 40414),
                ({"createSearchIndexes": "c", "indexes": {}}, 14),
                ({"createSearchIndexes": "c", "indexes": [1]}, 14),
                ({"createSearchIndexes": 5, "indexes": []}, 73),
                ({"updateSearchIndex": "c", "name": "s"}, 40414),
                ({"updateSearchIndex": "c", "name": "s", "definition": 1}, 14),
                ({"dropSearchIndex": "c", "name": 1}, 14),
                ({"aggregate": "c", "pipeline": [{"$listSearchIndexes": 1}], "cursor": {}}, 9),
                ({"aggregate": "c", "pipeline": [{"$listSearchIndexes": {}}]}, 9),
                ({"createSearchIndexes": "c", "indexes": []}, SEARCH_NOT_ENABLED),
                ({"dropSearchIndex": "c", "name": "s"}, SEARCH_NOT_ENABLED),
                ({"updateSearchIndex": "c", "name": "s", "definition": {}}, SEARCH_NOT_ENABLED),
                (
                    {
                        "aggregate": "c",
                        "pipeline": [{"$match": {}}, {"$listSearchIndexes": {"name": "s"}}],
                        "cursor": {},
                    },
                    SEARCH_NOT_ENABLED,
                ),
            ]
            for command, code in cases:
                with pytest.raises(OperationFailure) as exc:
                    await db.command(command)
                assert exc.value.code == code, command


async def test_pymongo_sees_the_same_error() -> None:
    """PyMongo, the independent client, gets mongod's answer from the simulator."""
    pymongo = pytest.importorskip("pymongo")
    from pymongo.errors import OperationFailure as PyMongoOperationFailure
    from pymongo.operations import SearchIndexModel as PyMongoSearchIndexModel

    async with Standalone() as server:
        client: Any = pymongo.AsyncMongoClient(server.uri)
        try:
            coll = client.db.coll
            for call in (
                coll.create_search_index(PyMongoSearchIndexModel(DEFINITION, name="s")),
                coll.update_search_index("s", DEFINITION),
                coll.drop_search_index("s"),
                coll.list_search_indexes(),
            ):
                with pytest.raises(PyMongoOperationFailure) as exc:
                    await call
                assert exc.value.code == SEARCH_NOT_ENABLED
                assert "Atlas" in str(exc.value)
        finally:
            await client.close()


# -- list_indexes(batch_size) -------------------------------------------------------------


async def test_list_indexes_batch_size_sends_batch_size_and_gets_more(
    coll: AsyncCollection, recorder: Recorder
) -> None:
    for field in "abcde":
        await coll.create_index(field)
    recorder.clear()
    cursor = await coll.list_indexes(batch_size=2)
    names = [index["name"] async for index in cursor]
    assert names == ["_id_", "a_1", "b_1", "c_1", "d_1", "e_1"]
    [listing] = recorder.commands("listIndexes")
    assert listing["cursor"] == {"batchSize": 2}
    get_mores = recorder.commands("getMore")
    assert len(get_mores) >= 2
    assert all(g["batchSize"] == 2 and g["collection"] == "coll" for g in get_mores)
    assert recorder.commands("killCursors") == []  # exhausted, so nothing to kill


async def test_list_indexes_without_batch_size_sends_an_empty_cursor_document(
    coll: AsyncCollection, recorder: Recorder
) -> None:
    await coll.create_index("a")
    recorder.clear()
    assert len(await (await coll.list_indexes()).to_list()) == 2
    assert len(await (await coll.list_indexes(batch_size=0)).to_list()) == 2
    plain, zero = recorder.commands("listIndexes")
    assert plain["cursor"] == {}
    assert zero["cursor"] == {"batchSize": 0}
    assert all("batchSize" not in g for g in recorder.commands("getMore"))


async def test_list_indexes_refuses_a_bad_batch_size(coll: AsyncCollection) -> None:
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(InvalidArgument):
            await coll.list_indexes(batch_size=bad)  # type: ignore[arg-type]


async def test_list_indexes_of_a_missing_collection_is_empty_with_a_batch_size(
    coll: AsyncCollection,
) -> None:
    assert await (await coll.database.missing.list_indexes(batch_size=1)).to_list() == []

"""client.bulk_write: pure batching/result merging, and end to end against a simulated
server taught the 8.0 ``bulkWrite`` command (the simulator itself plays 7.0)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from asyncmongo import (
    AsyncMongoClient,
    CommandStartedEvent,
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
    WriteConcern,
)
from asyncmongo.bson import CodecOptions, decode
from asyncmongo.core.operations.client_bulk import (
    ClientBulkOptions,
    ClientBulkWrite,
    ops_document,
)
from asyncmongo.errors import (
    ClientBulkWriteException,
    InvalidArgument,
    InvalidOperation,
    OperationFailure,
)
from asyncmongo.testing import Standalone, builtins, member
from asyncmongo.testing.server import SimServer
from tests.api.test_api_operations import Conn


def statements(models: list[Any]) -> list[Any]:
    return [(model.namespace, model._statement()) for model in models]


def test_ops_documents() -> None:
    update = UpdateOne({"a": 1}, {"$set": {"b": 1}}, upsert=True, namespace="db.c")
    assert ops_document(update._statement(), 3) == {
        "update": 3,
        "filter": {"a": 1},
        "updateMods": {"$set": {"b": 1}},
        "multi": False,
        "upsert": True,
    }
    assert ops_document(DeleteMany({"a": 1})._statement(), 0) == {
        "delete": 0,
        "filter": {"a": 1},
        "multi": True,
    }
    assert ops_document(InsertOne({"_id": 1})._statement(), 1) == {
        "insert": 1,
        "document": {"_id": 1},
    }


def test_batches_split_and_name_only_their_namespaces() -> None:
    models = [InsertOne({"_id": i}, namespace=f"db.c{i % 2}") for i in range(5)]
    command: ClientBulkWrite | None = ClientBulkWrite(
        statements(models), ClientBulkOptions(), WriteConcern(), CodecOptions()
    )
    batches = []
    while command is not None:
        built = command.build(Conn(max_wire_version=25, max_write_batch_size=2))
        ops, ns_info = built.sequences
        assert built.database == "admin" and built.document["errorsOnly"] is True
        batches.append(
            ([decode(d) for d in ops.documents], [decode(d)["ns"] for d in ns_info.documents])
        )
        command = command.rest(len(ops.documents))
    assert [len(ops) for ops, _ in batches] == [2, 2, 1]
    assert batches[2] == ([{"insert": 0, "document": {"_id": 4}}], ["db.c0"])
    assert batches[0][1] == ["db.c0", "db.c1"]


def test_client_side_refusals() -> None:
    one = statements([InsertOne({}, namespace="db.c")])
    with pytest.raises(InvalidArgument, match="unacknowledged write concern and ordered"):
        ClientBulkWrite(one, ClientBulkOptions(), WriteConcern(w=0), CodecOptions())
    with pytest.raises(InvalidArgument, match="unacknowledged write concern and verbose"):
        ClientBulkWrite(
            one,
            ClientBulkOptions(ordered=False, verbose_results=True),
            WriteConcern(w=0),
            CodecOptions(),
        )
    command = ClientBulkWrite(one, ClientBulkOptions(), WriteConcern(), CodecOptions())
    with pytest.raises(InvalidOperation, match=r"8\.0"):
        command.build(Conn(max_wire_version=21))


# -- end to end ---------------------------------------------------------------------------


async def fake_bulk_write(
    server: SimServer, conn: Any, db: str, command: dict[str, Any]
) -> dict[str, Any]:
    """bulkWrite as mongod 8.0 answers it, on top of the store's write commands."""
    namespaces = [info["ns"] for info in command["nsInfo"]]
    entries: list[dict[str, Any]] = []
    totals = dict.fromkeys(("nInserted", "nUpserted", "nMatched", "nModified", "nDeleted"), 0)
    for idx, op in enumerate(command["ops"]):
        kind = next(iter(op))
        database, _, collection = namespaces[op[kind]].partition(".")
        if kind == "insert":
            reply = server.store.handle(
                database, {"insert": collection, "documents": [op["document"]]}
            )
        elif kind == "update":
            statement = {
                "q": op["filter"],
                "u": op["updateMods"],
                "multi": op.get("multi", False),
                "upsert": op.get("upsert", False),
            }
            reply = server.store.handle(database, {"update": collection, "updates": [statement]})
        else:
            statement = {"q": op["filter"], "limit": 0 if op.get("multi") else 1}
            reply = server.store.handle(database, {"delete": collection, "deletes": [statement]})
        if reply.get("writeErrors"):
            error = reply["writeErrors"][0]
            entries.append({"ok": 0, "idx": idx, "code": error["code"], "errmsg": error["errmsg"]})
            if command.get("ordered", True):
                break
            continue
        entry: dict[str, Any] = {"ok": 1, "idx": idx, "n": reply["n"]}
        if kind == "insert":
            totals["nInserted"] += reply["n"]
        elif kind == "update":
            upserted = reply.get("upserted") or []
            entry["nModified"] = reply["nModified"]
            if upserted:
                entry["upserted"] = {"_id": upserted[0]["_id"]}
            totals["nUpserted"] += len(upserted)
            totals["nMatched"] += reply["n"] - len(upserted)
            totals["nModified"] += reply["nModified"]
        else:
            totals["nDeleted"] += reply["n"]
        if not command.get("errorsOnly"):
            entries.append(entry)
    errors = sum(1 for e in entries if not e["ok"])
    return {
        "ok": 1,
        "cursor": {"id": 0, "firstBatch": entries, "ns": "admin.$cmd.bulkWrite"},
        "nErrors": errors,
        **totals,
    }


@pytest.fixture
def mongod_8_0(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(member, "MAX_WIRE_VERSION", 25)
    monkeypatch.setitem(builtins.BUILTINS, "bulkWrite", fake_bulk_write)
    yield


async def test_client_bulk_write_across_collections(mongod_8_0: None) -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            result = await client.bulk_write(
                [
                    InsertOne({"_id": 1}, namespace="db.a"),
                    InsertOne({"_id": 1}, namespace="db.b"),
                    UpdateOne({"_id": 1}, {"$set": {"x": 1}}, namespace="db.a"),
                    UpdateMany({}, {"$set": {"y": 1}}, upsert=True, namespace="db.c"),
                    ReplaceOne({"_id": 1}, {"z": 1}, namespace="db.b"),
                    DeleteOne({"_id": 1}, namespace="db.a"),
                ],
                verbose_results=True,
            )
            assert await client.db.b.find_one({}) == {"_id": 1, "z": 1}
            assert await client.db.a.count_documents({}) == 0
    assert (result.inserted_count, result.matched_count, result.modified_count) == (2, 2, 2)
    assert (result.upserted_count, result.deleted_count) == (1, 1)
    assert result.insert_results[0].inserted_id == 1
    assert result.update_results[3].upserted_id is not None
    assert result.delete_results[5].deleted_count == 1
    started = [e for e in events if isinstance(e, CommandStartedEvent)]
    bulk = started[0].command
    assert bulk["bulkWrite"] == 1 and bulk["errorsOnly"] is False and bulk["ordered"] is True
    assert [ns["ns"] for ns in bulk["nsInfo"]] == ["db.a", "db.b", "db.c"]
    assert bulk["ops"][2] == {
        "update": 0,
        "filter": {"_id": 1},
        "updateMods": {"$set": {"x": 1}},
        "multi": False,
    }


async def test_client_bulk_write_errors(mongod_8_0: None) -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            models = [
                InsertOne({"_id": 1}, namespace="db.a"),
                InsertOne({"_id": 1}, namespace="db.a"),
                InsertOne({"_id": 2}, namespace="db.a"),
            ]
            with pytest.raises(ClientBulkWriteException) as ordered:
                await client.bulk_write(models)
            assert list(ordered.value.write_errors) == [1]
            assert ordered.value.write_errors[1]["code"] == 11000
            partial = ordered.value.partial_result
            assert partial is not None and partial.inserted_count == 1
            with pytest.raises(ClientBulkWriteException) as unordered:
                await client.bulk_write(
                    [InsertOne({"_id": 3}, namespace="db.a"), *models], ordered=False
                )
            assert sorted(unordered.value.write_errors) == [1, 2]
            assert await client.db.a.count_documents({}) == 3
            with pytest.raises(InvalidArgument, match="namespace"):
                await client.bulk_write([InsertOne({})])


@pytest.fixture
def mongod_7_0(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The simulator plays 8.0 by default; these tests need a server before bulkWrite."""
    monkeypatch.setattr(member, "MAX_WIRE_VERSION", 21)
    monkeypatch.setattr(builtins, "SERVER_VERSION", "7.0.0")
    yield


async def test_client_bulk_write_needs_8_0(mongod_7_0: None) -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            with pytest.raises(InvalidOperation, match=r"8\.0"):
                await client.bulk_write([InsertOne({}, namespace="db.a")])
            # the refusal left no connection checked out: the pool still works
            assert (await client.db.command("ping"))["ok"] == 1


async def test_too_large_document_leaves_the_pool_usable() -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, maxPoolSize=1) as client:
            from asyncmongo.errors import DocumentTooLarge

            with pytest.raises(DocumentTooLarge):
                await client.db.c.insert_one({"s": "x" * (17 * 1024 * 1024)})
            assert (await client.db.command("ping"))["ok"] == 1


async def test_top_level_error_without_results_is_raised_as_is(mongod_8_0: None) -> None:
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as client:
            with server.fail_point({"times": 1}, failCommands=["bulkWrite"], errorCode=8):
                with pytest.raises(OperationFailure) as info:
                    await client.bulk_write([InsertOne({}, namespace="db.a")])
            assert not isinstance(info.value, ClientBulkWriteException)
            assert info.value.code == 8

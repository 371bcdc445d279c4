"""PyMongo's objects are taken by asyncmongo's own client and by the compatible one."""

from __future__ import annotations

from typing import Any

import pymongo
import pytest
from pymongo import monitoring
from pymongo.driver_info import DriverInfo as PyMongoDriverInfo
from pymongo.read_concern import ReadConcern as PyMongoReadConcern
from pymongo.server_api import ServerApi as PyMongoServerApi
from pymongo.write_concern import WriteConcern as PyMongoWriteConcern

import asyncmongo
import asyncmongo.errors
from asyncmongo import compat
from asyncmongo._adopt import adopt_index_model, adopt_write_model
from asyncmongo.core.adopt import adopt_read_concern, adopt_write_concern
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.selection import ReadPreference
from asyncmongo.core.selection.read_preference import Mode, adopt_read_preference
from asyncmongo.errors import InvalidArgument
from asyncmongo.operations import IndexModel, InsertOne, UpdateMany, UpdateOne
from asyncmongo.testing import Standalone

pytestmark = pytest.mark.timeout(60)

CLIENTS = [asyncmongo.AsyncMongoClient, compat.AsyncMongoClient]


def test_read_preferences_become_asyncmongos() -> None:
    pref = pymongo.ReadPreference.SECONDARY_PREFERRED
    assert adopt_read_preference(pref) == ReadPreference(Mode.SECONDARY_PREFERRED)
    tagged = pymongo.read_preferences.Secondary(tag_sets=[{"dc": "ny"}], max_staleness=120)
    assert adopt_read_preference(tagged) == ReadPreference(Mode.SECONDARY, ({"dc": "ny"},), 120)
    ours = ReadPreference(Mode.NEAREST)
    assert adopt_read_preference(ours) is ours


def test_concerns_become_asyncmongos() -> None:
    assert adopt_write_concern(PyMongoWriteConcern(w="majority", wtimeout=50, j=True)) == (
        WriteConcern(w="majority", wtimeout_ms=50, journal=True)
    )
    assert adopt_write_concern(PyMongoWriteConcern()) == WriteConcern()
    assert adopt_read_concern(PyMongoReadConcern("majority")) == ReadConcern("majority")
    with pytest.raises(InvalidArgument, match="fsync"):
        adopt_write_concern(PyMongoWriteConcern(fsync=True))


def test_write_models_become_asyncmongos_with_every_field() -> None:
    update = pymongo.UpdateOne(
        {"a": 1}, {"$set": {"b": 1}}, upsert=True, array_filters=[{"x.y": 1}], hint="a_1"
    )
    assert adopt_write_model(update) == UpdateOne(
        {"a": 1}, {"$set": {"b": 1}}, True, None, [{"x.y": 1}], "a_1"
    )
    assert adopt_write_model(pymongo.InsertOne({"a": 1})) == InsertOne({"a": 1})
    assert adopt_write_model(pymongo.UpdateMany({}, {"$inc": {"n": 1}})) == UpdateMany(
        {}, {"$inc": {"n": 1}}
    )

    class LibraryInsert(pymongo.InsertOne):  # type: ignore[type-arg]
        """ODMs subclass PyMongo's models."""

    assert adopt_write_model(LibraryInsert({"z": 1})) == InsertOne({"z": 1})


def test_index_models_become_asyncmongos() -> None:
    theirs = pymongo.IndexModel([("a", pymongo.ASCENDING), ("b", -1)], unique=True, name="ab")
    assert adopt_index_model(theirs).document == IndexModel(
        [("a", 1), ("b", -1)], unique=True, name="ab"
    ).document


def test_lookalikes_are_not_taken_for_pymongos() -> None:
    class Impostor:
        document: dict[str, Any] = {"mode": "secondary"}

    impostor = Impostor()
    assert adopt_read_preference(impostor) is impostor
    assert adopt_write_model(impostor) is impostor


@pytest.mark.parametrize("client_class", CLIENTS)
async def test_pymongo_objects_work_in_every_api(client_class: Any) -> None:
    async with Standalone() as server:
        client = client_class(
            server.uri,
            driver=PyMongoDriverInfo("odm", "1.0"),
            server_api=PyMongoServerApi("1"),
        )
        try:
            client.append_metadata(PyMongoDriverInfo("plugin", "2.0"))
            db = client.get_database(
                "db",
                read_preference=pymongo.ReadPreference.PRIMARY_PREFERRED,
                write_concern=PyMongoWriteConcern(w=1),
                read_concern=PyMongoReadConcern("local"),
            )
            assert db.read_preference == ReadPreference(Mode.PRIMARY_PREFERRED)
            coll = db.get_collection("c").with_options(write_concern=PyMongoWriteConcern(w=1))
            assert coll.write_concern == WriteConcern(w=1)
            names = await coll.create_indexes([pymongo.IndexModel([("k", 1)], unique=True)])
            assert names == ["k_1"]
            result = await coll.bulk_write(
                [
                    pymongo.InsertOne({"_id": 1, "k": 1}),
                    pymongo.UpdateOne({"_id": 1}, {"$set": {"v": 2}}),
                    pymongo.ReplaceOne({"_id": 2}, {"k": 2}, upsert=True),
                    pymongo.DeleteMany({"k": 99}),
                ]
            )
            assert (result.inserted_count, result.modified_count, result.upserted_count) == (
                1,
                1,
                1,
            )
            assert await coll.find_one({"_id": 1}, {"_id": 0}) == {"k": 1, "v": 2}
            await coll.drop_index(pymongo.IndexModel([("k", 1)]))
            assert list(await coll.index_information()) == ["_id_"]
            async with client.start_session() as session:
                async with await session.start_transaction(
                    write_concern=PyMongoWriteConcern(w=1),
                    read_concern=PyMongoReadConcern("local"),
                ):
                    pass
        finally:
            await client.close()


class _Recorder(monitoring.CommandListener, monitoring.ConnectionPoolListener):
    """A PyMongo listener object of two kinds."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def started(self, event: Any) -> None:
        self.calls.append(("started", event.command_name))

    def succeeded(self, event: Any) -> None:
        self.calls.append(("succeeded", event.command_name))

    def failed(self, event: Any) -> None:
        self.calls.append(("failed", event.command_name))

    def pool_created(self, event: Any) -> None:
        self.calls.append(("pool_created", ""))

    def connection_checked_out(self, event: Any) -> None:
        self.calls.append(("connection_checked_out", ""))

    # PyMongo's base methods raise NotImplementedError: a listener implements them all.
    def _ignore(self, event: Any) -> None:
        pass

    pool_ready = pool_cleared = pool_closed = connection_created = connection_ready = _ignore
    connection_closed = connection_check_out_started = connection_check_out_failed = _ignore
    connection_checked_in = _ignore


@pytest.mark.parametrize("client_class", CLIENTS)
async def test_pymongo_listener_objects_get_their_methods_called(client_class: Any) -> None:
    recorder = _Recorder()
    async with Standalone() as server:
        client = client_class(server.uri, event_listeners=[recorder])
        try:
            await client.db.c.insert_one({"a": 1})
            with pytest.raises(asyncmongo.errors.OperationFailure):
                await client.db.command("noSuchCommand")
        finally:
            await client.close()
    assert ("pool_created", "") in recorder.calls
    assert ("connection_checked_out", "") in recorder.calls
    commands = [call for call in recorder.calls if call[1] and call[1] != "endSessions"]
    assert commands == [
        ("started", "insert"),
        ("succeeded", "insert"),
        ("started", "noSuchCommand"),
        ("failed", "noSuchCommand"),
    ]


async def test_the_compatible_client_adds_globally_registered_listeners(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorder = _Recorder()
    registry = monitoring._Listeners([], [], [], [], [])
    monkeypatch.setattr(monitoring, "_LISTENERS", registry)
    monitoring.register(recorder)
    async with Standalone() as server, compat.AsyncMongoClient(server.uri) as client:
        await client.db.c.find_one()
    assert ("started", "find") in recorder.calls

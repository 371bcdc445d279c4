"""The client-side encryption spec's "Create Collection Helper" and "Drop Collection Helper":
``create_collection``/``drop_collection``/``drop`` with ``encryptedFields``, given directly or
found in automatic encryption's ``encrypted_fields_map`` (and, for drop, in the collection's
options), create and drop the two state collections with the collection."""

from __future__ import annotations

import base64
import importlib.util
import uuid
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.binary import Binary
from asyncmongo.monitoring import CommandStartedEvent
from asyncmongo.testing import Standalone

FIELDS = {"fields": [{"path": "ssn", "bsonType": "string",
                      "keyId": Binary(uuid.uuid4().bytes, 4)}]}
STATE = ["enxcol_.people.ecoc", "enxcol_.people.esc"]


def started(events: list[Any], name: str) -> list[dict[str, Any]]:
    return [e.command for e in events
            if isinstance(e, CommandStartedEvent) and e.command_name == name]


async def names(client: AsyncMongoClient[Any]) -> list[str]:
    return sorted(await client.db.list_collection_names())


async def test_create_and_drop_with_encrypted_fields() -> None:
    events: list[Any] = []
    async with Standalone() as mongod:
        async with AsyncMongoClient(mongod.uri, event_listeners=[events.append]) as client:
            collection = await client.db.create_collection("people", encryptedFields=FIELDS)
            assert await names(client) == [*STATE, "people"]
            creates = started(events, "create")
            assert [c["create"] for c in creates] == ["enxcol_.people.esc",
                                                      "enxcol_.people.ecoc", "people"]
            assert creates[0]["clusteredIndex"] == {"key": {"_id": 1}, "unique": True}
            assert creates[2]["encryptedFields"]["fields"][0]["path"] == "ssn"
            indexes = await collection.index_information()
            assert any(key == [("__safeContent__", 1)]
                       for key in (info["key"] for info in indexes.values()))
            await client.db.drop_collection("people", encrypted_fields=FIELDS)
            assert await names(client) == []
            assert [d["drop"] for d in started(events, "drop")] == [
                "enxcol_.people.esc", "enxcol_.people.ecoc", "people"]


async def test_collection_drop_takes_encrypted_fields() -> None:
    async with Standalone() as mongod:
        async with AsyncMongoClient(mongod.uri) as client:
            collection = await client.db.create_collection("people", encryptedFields=FIELDS)
            await collection.drop(encrypted_fields=FIELDS)
            assert await names(client) == []


async def test_a_plain_client_drops_only_the_collection() -> None:
    """Without encrypted_fields and without automatic encryption nothing else is asked."""
    events: list[Any] = []
    async with Standalone() as mongod:
        async with AsyncMongoClient(mongod.uri, event_listeners=[events.append]) as client:
            await client.db.create_collection("people", encryptedFields=FIELDS)
            events.clear()
            await client.db.drop_collection("people")
            assert [d["drop"] for d in started(events, "drop")] == ["people"]
            assert started(events, "listCollections") == []
            assert await names(client) == STATE


@pytest.mark.skipif(importlib.util.find_spec("pymongocrypt") is None,
                    reason="pymongocrypt is not installed (asyncmongo[encryption])")
async def test_the_encrypted_fields_map_and_the_server_are_asked() -> None:
    from asyncmongo.encryption import AutoEncryptionOpts

    key = base64.b64decode(
        "Mng0NCt4ZHVUYUJCa1kxNkVyNUR1QURhZ2h2UzR2d2RrZzh0cFBwM3R6NmdWMDFBMUN3YkQ5aXRRMkhG"
        "RGdQV09wOGVNYUMxT2k3NjZKelhaQmRCZGJkTXVyZG9uSjFk")
    async with Standalone() as mongod:
        opts = AutoEncryptionOpts({"local": {"key": key}}, "keyvault.datakeys",
                                  bypass_auto_encryption=True,
                                  encrypted_fields_map={"db.people": FIELDS})
        async with AsyncMongoClient(mongod.uri, auto_encryption_opts=opts) as client:
            await client.db.create_collection("people")  # from the map
            assert await names(client) == [*STATE, "people"]
            await client.db.drop_collection("people")  # from the map
            assert await names(client) == []
            # Not in the map: drop reads the collection's options from the server.
            await client.db.create_collection("staff", encryptedFields=FIELDS)
            await client.db.drop_collection("staff")
            assert await names(client) == []

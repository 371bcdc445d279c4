"""AsyncClientEncryption against the simulated standalone, local KMS provider: round trips for
each algorithm, the spec's prose tests that need no KMS or server-side encryption (1, 13),
key management, the errors the spec names, cancellation, and the key vault's concerns."""

from __future__ import annotations

import asyncio
import base64
import datetime
import importlib.util
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.binary import UUID_SUBTYPE, Binary
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.concern import WriteConcern
from asyncmongo.encryption import Algorithm, AsyncClientEncryption, EncryptionError
from asyncmongo.errors import (
    AutoReconnect,
    ConfigurationError,
    DuplicateKeyError,
    InvalidArgument,
    InvalidOperation,
)
from asyncmongo.monitoring import CommandStartedEvent
from asyncmongo.testing import Standalone

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pymongocrypt") is None,
    reason="in-use encryption needs pymongocrypt (pip install 'asyncmongo[encryption]')",
)

#: The prose tests' LOCAL_MASTERKEY.
LOCAL_MASTER_KEY = base64.b64decode(
    "Mng0NCt4ZHVUYUJCa1kxNkVyNUR1QURhZ2h2UzR2d2RrZzh0cFBwM3R6NmdWMDFBMUN3YkQ5aXRRMkhGRGdQV09w"
    "OGVNYUMxT2k3NjZKelhaQmRCZGJkTXVyZG9uSjFk"
)
DETERMINISTIC = Algorithm.AEAD_AES_256_CBC_HMAC_SHA_512_Deterministic
RANDOM = Algorithm.AEAD_AES_256_CBC_HMAC_SHA_512_Random
KEY_VAULT = "keyvault.datakeys"


class Recorder:
    """An event listener keeping the events, and telling when a find has started."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.find_started = asyncio.Event()

    def __call__(self, event: Any) -> None:
        self.events.append(event)
        if isinstance(event, CommandStartedEvent) and event.command_name == "find":
            self.find_started.set()


class Env:
    """A client on a fresh simulated standalone, its ClientEncryption, the commands sent."""

    def __init__(self, server: Standalone, client: AsyncMongoClient[Any],
                 encryption: AsyncClientEncryption, recorder: Recorder) -> None:
        self.server = server
        self.client = client
        self.encryption = encryption
        self.recorder = recorder

    def new_encryption(self, master_key: bytes = LOCAL_MASTER_KEY,
                       codec_options: CodecOptions[Any] | None = None) -> AsyncClientEncryption:
        return AsyncClientEncryption({"local": {"key": master_key}}, KEY_VAULT, self.client,
                                     codec_options or CodecOptions())

    def started(self, name: str) -> list[dict[str, Any]]:
        return [dict(e.command) for e in self.recorder.events
                if isinstance(e, CommandStartedEvent) and e.command_name == name]


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    recorder = Recorder()
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[recorder]) as client:
            encryption = AsyncClientEncryption(
                {"local": {"key": LOCAL_MASTER_KEY}}, KEY_VAULT, client, CodecOptions()
            )
            async with encryption:
                yield Env(server, client, encryption, recorder)


# -- round trips ----------------------------------------------------------------------------

VALUES = [
    "457-55-5462",
    "",
    42,
    2**40,
    b"\x00\x01",
    Binary(b"\x00\x01", 5),
    ObjectId("5f1b8e3a9d1e8a2b3c4d5e6f"),
    datetime.datetime(2026, 1, 2, 3, 4, 5, 6000),
]
RANDOM_ONLY = [True, 1.5, {"a": [1, {"b": "c"}]}, [1, "two", None]]


@pytest.mark.parametrize("value", VALUES, ids=repr)
@pytest.mark.parametrize("algorithm", [DETERMINISTIC, RANDOM])
async def test_round_trip(env: Env, algorithm: str, value: Any) -> None:
    key_id = await env.encryption.create_data_key("local")
    encrypted = await env.encryption.encrypt(value, algorithm, key_id=key_id)
    assert isinstance(encrypted, Binary) and encrypted.subtype == 6
    assert await env.encryption.decrypt(encrypted) == value


@pytest.mark.parametrize("value", RANDOM_ONLY, ids=repr)
async def test_random_encrypts_what_deterministic_refuses(env: Env, value: Any) -> None:
    key_id = await env.encryption.create_data_key("local")
    encrypted = await env.encryption.encrypt(value, RANDOM, key_id=key_id)
    assert await env.encryption.decrypt(encrypted) == value
    with pytest.raises(EncryptionError, match="BSON type invalid for deterministic"):
        await env.encryption.encrypt(value, DETERMINISTIC, key_id=key_id)


async def test_deterministic_is_repeatable_and_random_is_not(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local")
    same = [await env.encryption.encrypt("v", DETERMINISTIC, key_id=key_id) for _ in range(2)]
    assert same[0] == same[1]
    different = [await env.encryption.encrypt("v", RANDOM, key_id=key_id) for _ in range(2)]
    assert different[0] != different[1]


async def test_key_id_as_uuid_and_by_alt_name(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local", key_alt_names=["ssn"])
    by_uuid = await env.encryption.encrypt(
        "x", DETERMINISTIC, key_id=uuid.UUID(bytes=bytes(key_id))
    )
    by_name = await env.encryption.encrypt("x", DETERMINISTIC, key_alt_name="ssn")
    assert by_uuid == by_name == await env.encryption.encrypt("x", DETERMINISTIC, key_id=key_id)


async def test_ciphertext_stored_and_read_back(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local")
    encrypted = await env.encryption.encrypt("secret", RANDOM, key_id=key_id)
    await env.client.db.coll.insert_one({"_id": 1, "ssn": encrypted})
    stored = await env.client.db.coll.find_one({"_id": 1})
    assert stored is not None and stored["ssn"] == encrypted
    assert await env.encryption.decrypt(stored["ssn"]) == "secret"


async def test_decrypt_uses_the_codec_options(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local")
    aware = env.new_encryption(codec_options=CodecOptions(tz_aware=True))
    async with aware:
        when = datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC)
        encrypted = await aware.encrypt(when, RANDOM, key_id=key_id)
        assert (await aware.decrypt(encrypted)).tzinfo is not None
        assert (await env.encryption.decrypt(encrypted)).tzinfo is None


# -- prose test 1: custom key material ------------------------------------------------------

async def test_prose_1_custom_key_material(env: Env) -> None:
    material = base64.b64decode(
        "xPTAjBRG5JiPm+d3fj6XLi2q5DMXUS/f1f+SMAlhhwkhDRL0kr8r9GDLIGTAGlvC+HVjSIgdL+RKwZCvpXSyxTIC"
        "WSXTUYsWYPyu3IoHbuBZdmw2faM3WhcRIgbMReU5"
    )
    key_id = await env.encryption.create_data_key("local", key_material=material)
    vault = env.client.keyvault.datakeys
    key = await vault.find_one({"_id": key_id})
    assert key is not None
    await vault.delete_one({"_id": key_id})
    key["_id"] = Binary(bytes(16), UUID_SUBTYPE)
    await vault.with_options(write_concern=WriteConcern(w="majority")).insert_one(key)
    encrypted = await env.encryption.encrypt("test", DETERMINISTIC, key_id=key["_id"])
    assert encrypted == Binary(base64.b64decode(
        "AQAAAAAAAAAAAAAAAAAAAAACz0ZOLuuhEYi807ZXTdhbqhLaS2/t9wLifJnnNYwiw79d75QYIZ6M/aYC1h9nCzCj"
        "Z7pGUpAuNnkUhnIXM3PjrA=="
    ), 6)


# -- key management -------------------------------------------------------------------------

async def test_create_data_key_document(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local", key_alt_names=["a", "b"])
    assert isinstance(key_id, Binary) and key_id.subtype == UUID_SUBTYPE
    key = await env.encryption.get_key(key_id)
    assert key is not None
    assert sorted(key["keyAltNames"]) == ["a", "b"]
    assert dict(key["masterKey"]) == {"provider": "local"}
    assert key["status"] == 0 and isinstance(key["keyMaterial"], bytes)


async def test_get_keys_and_get_key_by_alt_name(env: Env) -> None:
    first = await env.encryption.create_data_key("local", key_alt_names=["first"])
    second = await env.encryption.create_data_key("local")
    assert {k["_id"] for k in await env.encryption.get_keys().to_list()} == {first, second}
    found = await env.encryption.get_key_by_alt_name("first")
    assert found is not None and found["_id"] == first
    assert await env.encryption.get_key_by_alt_name("nobody") is None
    assert await env.encryption.get_key(Binary(bytes(16), UUID_SUBTYPE)) is None


async def test_add_and_remove_key_alt_names(env: Env) -> None:
    ce = env.encryption
    key_id = await ce.create_data_key("local")
    before = await ce.add_key_alt_name(key_id, "a")
    assert before is not None and "keyAltNames" not in before
    before = await ce.add_key_alt_name(key_id, "a")  # a set: adding twice keeps one
    assert before is not None and list(before["keyAltNames"]) == ["a"]
    await ce.add_key_alt_name(key_id, "b")
    before = await ce.remove_key_alt_name(key_id, "a")
    assert before is not None and list(before["keyAltNames"]) == ["a", "b"]
    before = await ce.remove_key_alt_name(key_id, "b")
    assert before is not None and list(before["keyAltNames"]) == ["b"]
    # The last name gone, the field is gone (no empty array left).
    after = await ce.get_key(key_id)
    assert after is not None and "keyAltNames" not in after
    assert await ce.remove_key_alt_name(key_id, "b") is not None
    missing = Binary(bytes(16), UUID_SUBTYPE)
    assert await ce.add_key_alt_name(missing, "x") is None
    assert await ce.remove_key_alt_name(missing, "x") is None


async def test_encrypt_by_added_alt_name(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local")
    await env.encryption.add_key_alt_name(key_id, "late")
    encrypted = await env.encryption.encrypt("v", RANDOM, key_alt_name="late")
    assert await env.encryption.decrypt(encrypted) == "v"


async def test_delete_key(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local")
    assert (await env.encryption.delete_key(key_id)).deleted_count == 1
    assert await env.encryption.get_key(key_id) is None
    assert (await env.encryption.delete_key(key_id)).deleted_count == 0


# -- prose test 13: unique index on keyAltNames ---------------------------------------------

@pytest.fixture
async def unique_env(env: Env) -> Env:
    await env.client.keyvault.command({
        "createIndexes": "datakeys",
        "indexes": [{"name": "keyAltNames_1", "key": {"keyAltNames": 1}, "unique": True,
                     "partialFilterExpression": {"keyAltNames": {"$exists": True}}}],
        "writeConcern": {"w": "majority"},
    })
    await env.encryption.create_data_key("local", key_alt_names=["def"])
    return env


async def test_prose_13_case_1_create_data_key(unique_env: Env) -> None:
    ce = unique_env.encryption
    await ce.create_data_key("local", key_alt_names=["abc"])
    for name in ("abc", "def"):
        with pytest.raises(EncryptionError) as info:
            await ce.create_data_key("local", key_alt_names=[name])
        assert isinstance(info.value.cause, DuplicateKeyError)
        assert info.value.cause.code == 11000


async def test_prose_13_case_2_add_key_alt_name(unique_env: Env) -> None:
    ce = unique_env.encryption
    key_id = await ce.create_data_key("local")
    await ce.add_key_alt_name(key_id, "abc")
    before = await ce.add_key_alt_name(key_id, "abc")
    assert before is not None and "abc" in before["keyAltNames"]
    with pytest.raises(DuplicateKeyError) as info:
        await ce.add_key_alt_name(key_id, "def")
    assert info.value.code == 11000
    existing = await ce.get_key_by_alt_name("def")
    assert existing is not None
    before = await ce.add_key_alt_name(existing["_id"], "def")
    assert before is not None and "def" in before["keyAltNames"]


# -- errors ---------------------------------------------------------------------------------

async def test_unknown_key_is_the_specs_error(env: Env) -> None:
    missing = Binary(os.urandom(16), UUID_SUBTYPE)
    with pytest.raises(EncryptionError, match="not all keys requested were satisfied") as info:
        await env.encryption.encrypt("v", RANDOM, key_id=missing)
    assert "MongoCryptError" in type(info.value.cause).__name__
    with pytest.raises(EncryptionError, match="not all keys requested were satisfied"):
        await env.encryption.encrypt("v", RANDOM, key_alt_name="nobody")


async def test_decrypt_after_the_key_is_deleted(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local")
    encrypted = await env.encryption.encrypt("v", RANDOM, key_id=key_id)
    await env.encryption.delete_key(key_id)
    async with env.new_encryption() as fresh:  # no cached key
        with pytest.raises(EncryptionError, match="not all keys requested were satisfied"):
            await fresh.decrypt(encrypted)


async def test_wrong_master_key_cannot_decrypt_the_data_key(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local")
    encrypted = await env.encryption.encrypt("v", RANDOM, key_id=key_id)
    async with env.new_encryption(master_key=os.urandom(96)) as other:
        with pytest.raises(EncryptionError, match="HMAC validation failure"):
            await other.decrypt(encrypted)
        with pytest.raises(EncryptionError, match="HMAC validation failure"):
            await other.encrypt("v", RANDOM, key_id=key_id)


async def test_tampered_ciphertext(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local")
    encrypted = bytearray(await env.encryption.encrypt("v", RANDOM, key_id=key_id))
    encrypted[-1] ^= 1
    with pytest.raises(EncryptionError, match="HMAC validation failure"):
        await env.encryption.decrypt(Binary(bytes(encrypted), 6))


async def test_bad_arguments(env: Env) -> None:
    ce = env.encryption
    key_id = await ce.create_data_key("local")
    with pytest.raises(InvalidArgument):
        await ce.decrypt(Binary(b"x", 0))
    with pytest.raises(TypeError):  # InvalidArgument is a TypeError, as PyMongo raises
        await ce.decrypt(b"x")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        await ce.encrypt("v", RANDOM, key_id=Binary(bytes(16), 0))
    with pytest.raises(EncryptionError):
        await ce.encrypt("v", RANDOM, key_id=key_id, key_alt_name="both")
    with pytest.raises(EncryptionError):
        await ce.encrypt("v", "no-such-algorithm", key_id=key_id)
    with pytest.raises(EncryptionError, match="keyMaterial should have length 96"):
        await ce.create_data_key("local", key_material=b"short")
    with pytest.raises(ConfigurationError, match="local key must be 96 bytes"):
        env.new_encryption(master_key=b"short")
    with pytest.raises(InvalidArgument, match="must contain 'key'"):
        AsyncClientEncryption({"local": {}}, KEY_VAULT, env.client, CodecOptions())
    with pytest.raises(InvalidArgument, match=r"database\.collection"):
        AsyncClientEncryption({"local": {"key": LOCAL_MASTER_KEY}}, "nodot", env.client,
                              CodecOptions())
    with pytest.raises(InvalidArgument, match="AsyncMongoClient"):
        AsyncClientEncryption({"local": {"key": LOCAL_MASTER_KEY}}, KEY_VAULT, object(),  # type: ignore[arg-type]
                              CodecOptions())


async def test_unreachable_kms_is_a_network_error_and_inserts_no_key(env: Env) -> None:
    aws = {"accessKeyId": "AKIA", "secretAccessKey": "secret"}
    master_key = {"region": "us-east-1", "key": "arn:aws:kms:us-east-1:1:key/1",
                  "endpoint": "127.0.0.1:1"}
    async with AsyncClientEncryption({"aws": aws}, KEY_VAULT, env.client, CodecOptions()) as ce:
        with pytest.raises(EncryptionError, match=r"127\.0\.0\.1:1") as info:
            await ce.create_data_key("aws", master_key=master_key)
    assert isinstance(info.value.cause, AutoReconnect)
    assert await env.encryption.get_keys().to_list() == []


async def test_closed(env: Env) -> None:
    ce = env.new_encryption()
    assert "open" in repr(ce)
    await ce.close()
    await ce.close()  # idempotent
    assert repr(ce) == (
        "AsyncClientEncryption(key vault 'keyvault.datakeys', providers ['local'], closed)"
    )
    with pytest.raises(InvalidOperation, match="closed"):
        await ce.create_data_key("local")
    with pytest.raises(InvalidOperation, match="closed"):
        ce.get_keys()
    with pytest.raises(InvalidOperation, match="closed"):
        await ce.decrypt(Binary(b"x", 6))


# -- the key vault, on the wire -------------------------------------------------------------

async def test_key_vault_reads_and_writes_are_majority(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local")
    async with env.new_encryption() as fresh:
        await fresh.encrypt("v", RANDOM, key_id=key_id)
    [insert] = env.started("insert")
    assert (insert["insert"], dict(insert["writeConcern"])) == ("datakeys", {"w": "majority"})
    [find] = env.started("find")
    assert (find["find"], dict(find["readConcern"])) == ("datakeys", {"level": "majority"})


async def test_keys_are_cached_by_libmongocrypt(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local")
    for _ in range(3):
        await env.encryption.encrypt("v", RANDOM, key_id=key_id)
    assert len(env.started("find")) == 1


async def test_cancelled_while_fetching_keys(env: Env) -> None:
    key_id = await env.encryption.create_data_key("local")
    async with env.new_encryption() as fresh:
        with env.server.fail_point({"times": 1}, failCommands=["find"],
                                   blockConnection=True, blockTimeMS=2000):
            task = asyncio.create_task(fresh.encrypt("v", RANDOM, key_id=key_id))
            await env.recorder.find_started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        # The cancelled context was released; the next one runs from the start.
        encrypted = await fresh.encrypt("v", RANDOM, key_id=key_id)
        assert await fresh.decrypt(encrypted) == "v"

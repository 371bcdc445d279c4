"""Automatic decryption: a client with AutoEncryptionOpts(bypass_auto_encryption=True) sends
commands as written and decrypts every reply (find, getMore, aggregate, findAndModify,
command), against the simulated standalone with the local KMS provider."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.raw import RawBSONDocument
from asyncmongo.encryption import (
    Algorithm,
    AsyncClientEncryption,
    AutoEncryptionOpts,
    EncryptionError,
)
from asyncmongo.errors import ConfigurationError
from asyncmongo.monitoring import CommandSucceededEvent
from asyncmongo.testing import Standalone

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pymongocrypt") is None,
    reason="in-use encryption needs pymongocrypt (pip install 'asyncmongo[encryption]')",
)

MASTER_KEY = bytes(range(96))
PROVIDERS = {"local": {"key": MASTER_KEY}}
KEY_VAULT = "keyvault.datakeys"
RANDOM = Algorithm.AEAD_AES_256_CBC_HMAC_SHA_512_Random


class Env:
    def __init__(self, plain: AsyncMongoClient[Any], auto: AsyncMongoClient[Any],
                 events: list[Any]) -> None:
        self.plain = plain
        self.auto = auto
        self.events = events


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri) as plain:
            async with AsyncClientEncryption(PROVIDERS, KEY_VAULT, plain, CodecOptions()) as ce:
                key_id = await ce.create_data_key("local")
                docs = [{"_id": i, "secret": await ce.encrypt(f"s{i}", RANDOM, key_id=key_id),
                         "nested": {"deep": [await ce.encrypt(i, RANDOM, key_id=key_id)]}}
                        for i in range(5)]
                await plain.db.coll.insert_many(docs)
            opts = AutoEncryptionOpts(PROVIDERS, KEY_VAULT, bypass_auto_encryption=True)
            async with AsyncMongoClient(server.uri, auto_encryption_opts=opts,
                                        event_listeners=[events.append]) as auto:
                yield Env(plain, auto, events)


def _expected(i: int) -> dict[str, Any]:
    return {"_id": i, "secret": f"s{i}", "nested": {"deep": [i]}}


async def test_find_and_get_more_decrypt(env: Env) -> None:
    docs = await env.auto.db.coll.find({}, batch_size=2, sort=[("_id", 1)]).to_list()
    assert docs == [_expected(i) for i in range(5)]
    assert [e.command_name for e in env.events if isinstance(e, CommandSucceededEvent)
            ].count("getMore") == 2


async def test_command_monitoring_sees_ciphertext(env: Env) -> None:
    await env.auto.db.coll.find_one({"_id": 1})
    [find] = [e for e in env.events  # the other find reads the key vault
              if isinstance(e, CommandSucceededEvent) and e.command_name == "find"
              and e.reply["cursor"]["ns"] == "db.coll"]
    [doc] = find.reply["cursor"]["firstBatch"]
    assert doc["secret"].subtype == 6


async def test_aggregate_find_and_modify_and_command_decrypt(env: Env) -> None:
    coll = env.auto.db.coll
    cursor = await coll.aggregate([{"$match": {"_id": 3}}])
    assert await cursor.to_list() == [_expected(3)]
    before = await coll.find_one_and_update({"_id": 2}, {"$set": {"seen": True}})
    assert before == _expected(2)
    reply = await env.auto.db.command({"find": "coll", "filter": {"_id": 4}})
    assert reply["cursor"]["firstBatch"] == [_expected(4)]


async def test_the_collections_codec_options_apply(env: Env) -> None:
    raw = env.auto.db.get_collection("coll", codec_options=CodecOptions(
        document_class=RawBSONDocument))
    doc = await raw.find_one({"_id": 0})
    assert isinstance(doc, RawBSONDocument) and doc["secret"] == "s0"


async def test_plain_client_still_sees_ciphertext(env: Env) -> None:
    doc = await env.plain.db.coll.find_one({"_id": 0})
    assert doc is not None and doc["secret"].subtype == 6


async def test_writes_are_sent_as_written(env: Env) -> None:
    await env.auto.db.other.insert_one({"_id": 1, "clear": "text"})
    assert await env.plain.db.other.find_one() == {"_id": 1, "clear": "text"}


async def test_missing_key_fails_the_read(env: Env) -> None:
    await env.plain.keyvault.datakeys.delete_many({})
    with pytest.raises(EncryptionError, match="not all keys requested were satisfied"):
        await env.auto.db.coll.find_one({"_id": 0})


def test_only_auto_encryption_opts_are_accepted() -> None:
    with pytest.raises(ConfigurationError, match="AutoEncryptionOpts"):
        AsyncMongoClient("mongodb://127.0.0.1:1", auto_encryption_opts={"kms": 1})

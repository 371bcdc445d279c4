"""The client-side-operations-timeout prose tests 2 and 3 (spec_tests/data/
client-side-operations-timeout/README.md): no maxTimeMS to mongocryptd, and ClientEncryption's
key vault operations bounded by the key vault client's timeoutMS.

mongocryptd is asyncmongo.testing's QueryAnalyzer, which answers hello with ``iscryptd: true``
as mongocryptd does. Timings: the README's 15ms block against timeoutMS=10 is scaled by 20 (a
300ms block against 200ms) so a shared two-core machine keeps them apart; the key vault
client's pool is warmed first, so the budget is spent on the blocked command, not on
connecting.
"""

from __future__ import annotations

import base64
import importlib.util
from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.encryption import AsyncClientEncryption
from asyncmongo.errors import MongoError
from asyncmongo.monitoring import CommandStartedEvent
from asyncmongo.testing import Standalone
from asyncmongo.testing.query_analyzer import QueryAnalyzer

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("pymongocrypt") is None,
                       reason="pymongocrypt is not installed (asyncmongo[encryption])"),
    pytest.mark.timeout(60),
]

LOCAL_MASTERKEY = base64.b64decode(
    "Mng0NCt4ZHVUYUJCa1kxNkVyNUR1QURhZ2h2UzR2d2RrZzh0cFBwM3R6NmdWMDFBMUN3YkQ5aXRRMkhGRGdQV09w"
    "OGVNYUMxT2k3NjZKelhaQmRCZGJkTXVyZG9uSjFk")
KMS = {"local": {"key": LOCAL_MASTERKEY}}
TIMEOUT_MS, BLOCK_MS = 200, 300
DETERMINISTIC = "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic"


def started(events: list[Any], name: str) -> list[CommandStartedEvent]:
    return [e for e in events if isinstance(e, CommandStartedEvent) and e.command_name == name]


async def test_prose_2_no_max_time_ms_for_mongocryptd() -> None:
    events: list[Any] = []
    async with QueryAnalyzer() as mongocryptd:
        async with AsyncMongoClient(f"{mongocryptd.uri}/?timeoutMS=1000",
                                    event_listeners=[events.append]) as client:
            await client.admin.command("ping")
    (ping,) = started(events, "ping")
    assert "maxTimeMS" not in ping.command


async def test_a_regular_server_still_gets_max_time_ms() -> None:
    """The contrast to prose 2: the same client against a mongod sends maxTimeMS."""
    events: list[Any] = []
    async with Standalone() as mongod:
        async with AsyncMongoClient(f"{mongod.uri}?timeoutMS=1000",
                                    event_listeners=[events.append]) as client:
            await client.admin.command("ping")
    assert "maxTimeMS" in started(events, "ping")[0].command


class Setup:
    """The README's setup: keyvault.datakeys recreated by ``internal``, a key vault client with
    timeoutMS, and a ClientEncryption over it."""

    def __init__(self, mongod: Standalone) -> None:
        self.mongod = mongod
        self.internal: AsyncMongoClient[Any] = AsyncMongoClient(mongod.uri)
        self.events: list[Any] = []
        self.key_vault_client: AsyncMongoClient[Any] | None = None
        self.encryption: AsyncClientEncryption | None = None

    async def open(self) -> AsyncClientEncryption:
        await self.close_encryption()
        self.events.clear()
        self.key_vault_client = AsyncMongoClient(
            f"{self.mongod.uri}?timeoutMS={TIMEOUT_MS}", event_listeners=[self.events.append])
        await self.key_vault_client.admin.command("ping")  # a ready connection in the pool
        self.encryption = AsyncClientEncryption(
            KMS, "keyvault.datakeys", self.key_vault_client,
            self.key_vault_client.codec_options)
        return self.encryption

    async def close_encryption(self) -> None:
        if self.encryption is not None:
            await self.encryption.close()
        if self.key_vault_client is not None:
            await self.key_vault_client.close()
        self.encryption = self.key_vault_client = None

    def block(self, command: str) -> Any:
        return self.mongod.fail_point({"times": 1}, failCommands=[command],
                                      blockConnection=True, blockTimeMS=BLOCK_MS)


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    async with Standalone() as mongod:
        state = Setup(mongod)
        await state.internal.keyvault.drop_collection("datakeys")
        await state.internal.keyvault.create_collection("datakeys")
        try:
            yield state
        finally:
            await state.close_encryption()
            await state.internal.close()


def is_timeout(exc: BaseException) -> bool:
    while exc is not None:
        if isinstance(exc, MongoError) and exc.timeout:
            return True
        exc = exc.__cause__  # EncryptionError wraps the key vault's error
    return False


async def test_prose_3_create_data_key(setup: Setup) -> None:
    encryption = await setup.open()
    with setup.block("insert"):
        with pytest.raises(Exception) as caught:
            await encryption.create_data_key("local")
    assert is_timeout(caught.value), repr(caught.value)
    inserts = started(setup.events, "insert")
    assert inserts and inserts[0].command["insert"] == "datakeys"
    assert inserts[0].database_name == "keyvault"


async def test_prose_3_encrypt(setup: Setup) -> None:
    encryption = await setup.open()
    key_id = await encryption.create_data_key("local")
    assert key_id.subtype == 4
    setup.events.clear()
    with setup.block("find"):
        with pytest.raises(Exception) as caught:
            await encryption.encrypt("hello", DETERMINISTIC, key_id=key_id)
    assert is_timeout(caught.value), repr(caught.value)
    finds = started(setup.events, "find")
    assert finds and finds[0].command["find"] == "datakeys"


async def test_prose_3_decrypt(setup: Setup) -> None:
    encryption = await setup.open()
    key_id = await encryption.create_data_key("local")
    encrypted = await encryption.encrypt("hello", DETERMINISTIC, key_id=key_id)
    assert encrypted.subtype == 6
    encryption = await setup.open()  # closed and re-created: no data key cached
    with setup.block("find"):
        with pytest.raises(Exception) as caught:
            await encryption.decrypt(encrypted)
    assert is_timeout(caught.value), repr(caught.value)
    finds = started(setup.events, "find")
    assert finds and finds[0].command["find"] == "datakeys"

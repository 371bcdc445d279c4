"""Client-side encryption prose test 14, "Decryption Events", cases 1-4, against
asyncmongo.testing's Standalone (its failCommand fail point) with its QueryAnalyzer as
mongocryptd.

Command monitoring sits between the wire and auto-decryption (spec, "Interaction with
Command Monitoring"): a command error and a network error surface as a CommandFailedEvent
and an exception; a reply that cannot be decrypted is still a CommandSucceededEvent (the
server answered) holding the ciphertext, and the exception comes from decryption; a reply
that decrypts is a CommandSucceededEvent holding the ciphertext too, never the plaintext.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.encryption import Algorithm, AsyncClientEncryption, AutoEncryptionOpts
from asyncmongo.errors import AutoReconnect, EncryptionError, OperationFailure
from asyncmongo.monitoring import CommandFailedEvent, CommandSucceededEvent
from asyncmongo.testing import QueryAnalyzer, Standalone
from spec_tests.unified.encryption import LOCAL_MASTER_KEY

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pymongocrypt") is None,
    reason="in-use encryption needs pymongocrypt (pip install 'asyncmongo[encryption]')",
)

KEY_VAULT = "keyvault.datakeys"
PROVIDERS = {"local": {"key": LOCAL_MASTER_KEY}}


@dataclass
class AggregateListener:
    """The spec's listener: the most recent aggregate CommandSucceededEvent reply and
    CommandFailedEvent failure."""

    succeeded: list[CommandSucceededEvent] = field(default_factory=list)
    failed: list[CommandFailedEvent] = field(default_factory=list)

    def __call__(self, event: Any) -> None:
        if isinstance(event, CommandSucceededEvent) and event.command_name == "aggregate":
            self.succeeded.append(event)
        elif isinstance(event, CommandFailedEvent) and event.command_name == "aggregate":
            self.failed.append(event)


@dataclass
class Setup:
    """The Test Setup: ``setup_client``, ``encrypted_client`` (retryReads=false, the
    listener), ``ciphertext`` ("hello", deterministic) and ``malformed_ciphertext`` (its
    last byte changed: a bad HMAC tag)."""

    setup_client: AsyncMongoClient[Any]
    encrypted_client: AsyncMongoClient[Any]
    listener: AggregateListener
    ciphertext: Binary
    malformed_ciphertext: Binary

    async def fail_aggregate_once(self, **data: Any) -> None:
        await self.setup_client.admin.command({
            "configureFailPoint": "failCommand", "mode": {"times": 1},
            "data": {"errorCode": 123, "failCommands": ["aggregate"], **data}})

    async def aggregate(self) -> list[Any]:
        cursor = await self.encrypted_client.db.decryption_events.aggregate([])
        return await cursor.to_list()

    def reply_encrypted_field(self) -> Any:
        """``cursor.firstBatch[0].encrypted`` of the last aggregate's succeeded reply."""
        [event] = self.listener.succeeded
        return event.reply["cursor"]["firstBatch"][0]["encrypted"]


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    async with Standalone() as server, QueryAnalyzer() as analyzer, \
            AsyncMongoClient(server.uri) as setup_client:
        await setup_client.db.decryption_events.drop()
        await setup_client.db.create_collection("decryption_events")
        async with AsyncClientEncryption(PROVIDERS, KEY_VAULT, setup_client,
                                         CodecOptions()) as client_encryption:
            key_id = await client_encryption.create_data_key("local")
            ciphertext = await client_encryption.encrypt(
                "hello", Algorithm.AEAD_AES_256_CBC_HMAC_SHA_512_Deterministic, key_id=key_id)
        raw = bytes(ciphertext)
        malformed = Binary(raw[:-1] + bytes([raw[-1] ^ 0xFF]), ciphertext.subtype)
        listener = AggregateListener()
        opts = AutoEncryptionOpts(PROVIDERS, KEY_VAULT, **analyzer.auto_encryption_options())
        async with AsyncMongoClient(server.uri, auto_encryption_opts=opts, retryReads=False,
                                    event_listeners=[listener]) as encrypted_client:
            yield Setup(setup_client, encrypted_client, listener, ciphertext, malformed)


async def test_case_1_command_error(setup: Setup) -> None:
    await setup.fail_aggregate_once()
    with pytest.raises(OperationFailure) as info:
        await setup.aggregate()
    assert info.value.code == 123
    assert len(setup.listener.failed) == 1 and not setup.listener.succeeded


async def test_case_2_network_error(setup: Setup) -> None:
    await setup.fail_aggregate_once(closeConnection=True)
    with pytest.raises(AutoReconnect):
        await setup.aggregate()
    assert len(setup.listener.failed) == 1 and not setup.listener.succeeded


async def test_case_3_decrypt_error(setup: Setup) -> None:
    await setup.encrypted_client.db.decryption_events.insert_one(
        {"encrypted": setup.malformed_ciphertext})
    with pytest.raises(EncryptionError):
        await setup.aggregate()
    assert not setup.listener.failed
    encrypted = setup.reply_encrypted_field()
    assert isinstance(encrypted, Binary) and encrypted == setup.malformed_ciphertext


async def test_case_4_decrypt_success(setup: Setup) -> None:
    await setup.encrypted_client.db.decryption_events.insert_one(
        {"encrypted": setup.ciphertext})
    [document] = await setup.aggregate()
    assert document["encrypted"] == "hello"
    assert not setup.listener.failed
    encrypted = setup.reply_encrypted_field()
    assert isinstance(encrypted, Binary) and encrypted == setup.ciphertext

"""Client-side encryption prose test 9, "Deadlock Tests", cases 1-8, against
asyncmongo.testing's Standalone with its QueryAnalyzer as mongocryptd.

An auto-encrypting client must not wait for a connection of its own bounded pool while a
command holds one (the spec's "keyVaultClient, metadataClient, and the internal
MongoClient"): with ``maxPoolSize`` 1 the key vault and listCollections go through one
internal client (never more than one), a ``key_vault_client`` given by the user carries the
key vault reads, and with an unbounded pool (``maxPoolSize`` 0) the client serves itself.
Each case asserts the exact command started events of ``client_encrypted`` (its internal
client shares its listeners, so they include the internal client's) and of
``client_keyvault``, and the number of clients, counted as distinct topologies opened
(TopologyOpeningEvent) among the listeners of ``client_encrypted``. (Case 3's text says
"three" events but lists two, as case 7's does; the two listed are asserted.)

The mongocryptd client (the connection to the query analyzer) is not counted: it is
created without the user's listeners, as the spec's mongocryptd client is a separate
thing from the "MongoClient objects" the cases count (drivers count the key vault,
metadata and encrypted clients).
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.encryption import Algorithm, AsyncClientEncryption, AutoEncryptionOpts
from asyncmongo.monitoring import CommandStartedEvent, TopologyOpeningEvent
from asyncmongo.testing import QueryAnalyzer, Standalone
from spec_tests.support.spec_json import load_spec_json
from spec_tests.unified.encryption import LOCAL_MASTER_KEY

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pymongocrypt") is None,
    reason="in-use encryption needs pymongocrypt (pip install 'asyncmongo[encryption]')",
)

EXTERNAL = (Path(__file__).resolve().parents[2] / "spec_tests" / "data"
            / "client-side-encryption" / "external")
KEY_VAULT = "keyvault.datakeys"
PROVIDERS = {"local": {"key": LOCAL_MASTER_KEY}}


def started(events: list[Any]) -> list[tuple[str, str]]:
    """The (command name, database) of every command started event, in order."""
    return [(e.command_name, e.database_name) for e in events
            if isinstance(e, CommandStartedEvent)]


def clients_opened(events: list[Any]) -> int:
    """The number of distinct clients (topologies) that opened with these listeners."""
    return len({e.topology_id for e in events if isinstance(e, TopologyOpeningEvent)})


@dataclass
class Setup:
    """The prose test's setup: ``client_test``, ``client_keyvault`` (maxPoolSize 1, its
    events captured), ``ciphertext`` ("string0" encrypted by the ``local`` key)."""

    uri: str
    analyzer: QueryAnalyzer
    client_test: AsyncMongoClient[Any]
    client_keyvault: AsyncMongoClient[Any]
    keyvault_events: list[Any]
    ciphertext: Binary


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    async with Standalone() as server, QueryAnalyzer() as analyzer:
        keyvault_events: list[Any] = []
        async with AsyncMongoClient(server.uri) as client_test, \
                AsyncMongoClient(server.uri, maxPoolSize=1,
                                 event_listeners=[keyvault_events.append]) as client_keyvault:
            await client_test.keyvault.datakeys.drop()
            await client_test.db.coll.drop()
            await client_test.keyvault.get_collection("datakeys").insert_one(
                load_spec_json(EXTERNAL / "external-key.json"))
            await client_test.db.create_collection("coll", validator={
                "$jsonSchema": load_spec_json(EXTERNAL / "external-schema.json")})
            async with AsyncClientEncryption(PROVIDERS, KEY_VAULT, client_test,
                                             CodecOptions()) as client_encryption:
                ciphertext = await client_encryption.encrypt(
                    "string0", Algorithm.AEAD_AES_256_CBC_HMAC_SHA_512_Deterministic,
                    key_alt_name="local")
            yield Setup(server.uri, analyzer, client_test, client_keyvault, keyvault_events,
                        ciphertext)


@dataclass(frozen=True)
class Case:
    """One case of the prose test: the client's settings and what it must have done."""

    max_pool_size: int
    bypass_auto_encryption: bool
    use_client_keyvault: bool
    encrypted_commands: list[tuple[str, str]]
    keyvault_commands: list[tuple[str, str]]
    expected_number_of_clients: int


LIST_DB = ("listCollections", "db")
LIST_KEYVAULT = ("listCollections", "keyvault")
FIND_KEYVAULT = ("find", "keyvault")
INSERT_DB = ("insert", "db")
FIND_DB = ("find", "db")

CASES = {
    "case1": Case(1, False, False, [LIST_DB, FIND_KEYVAULT, INSERT_DB, FIND_DB], [], 2),
    "case2": Case(1, False, True, [LIST_DB, INSERT_DB, FIND_DB], [FIND_KEYVAULT], 2),
    "case3": Case(1, True, False, [FIND_DB, FIND_KEYVAULT], [], 2),
    "case4": Case(1, True, True, [FIND_DB], [FIND_KEYVAULT], 1),
    "case5": Case(0, False, False,
                  [LIST_DB, LIST_KEYVAULT, FIND_KEYVAULT, INSERT_DB, FIND_DB], [], 1),
    "case6": Case(0, False, True, [LIST_DB, INSERT_DB, FIND_DB], [FIND_KEYVAULT], 1),
    "case7": Case(0, True, False, [FIND_DB, FIND_KEYVAULT], [], 1),
    "case8": Case(0, True, True, [FIND_DB], [FIND_KEYVAULT], 1),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_deadlock_case(setup: Setup, name: str) -> None:
    """The spec's "Running a test case": insert (through client_test with the ciphertext when auto
    encryption is bypassed), findOne, then the exact events and the client count."""
    case = CASES[name]
    events: list[Any] = []
    opts = AutoEncryptionOpts(
        PROVIDERS, KEY_VAULT,
        key_vault_client=setup.client_keyvault if case.use_client_keyvault else None,
        bypass_auto_encryption=case.bypass_auto_encryption,
        **setup.analyzer.auto_encryption_options())
    async with AsyncMongoClient(setup.uri, auto_encryption_opts=opts,
                                maxPoolSize=case.max_pool_size,
                                event_listeners=[events.append]) as client_encrypted:
        if case.bypass_auto_encryption:
            await setup.client_test.db.coll.insert_one({"_id": 0, "encrypted": setup.ciphertext})
        else:
            await client_encrypted.db.coll.insert_one({"_id": 0, "encrypted": "string0"})
        found = await client_encrypted.db.coll.find_one({"_id": 0})
        assert found == {"_id": 0, "encrypted": "string0"}
        assert started(events) == case.encrypted_commands
        assert started(setup.keyvault_events) == case.keyvault_commands
        assert clients_opened(events) == case.expected_number_of_clients

"""Client-side encryption prose test 4, "BSON Size Limits and Batch Splitting", with the
vendored limits files (spec_tests/data/client-side-encryption/limits), against the
simulator with asyncmongo.testing's QueryAnalyzer as mongocryptd. (Prose 6 "Corpus" is in
spec_tests/test_client_side_encryption_corpus.py; the KMS ones are in
tests/encryption/test_kms_providers.py, 8 "Bypass Spawning mongocryptd" in
tests/encryption/test_bypass_spawning_prose.py, 9 "Deadlock Tests" in
tests/encryption/test_deadlock_prose.py, 14 "Decryption Events" in
tests/encryption/test_decryption_events.py; bypass auto encryption, external key vault and
views are in tests/encryption/test_auto_encryption.py.)"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.errors import DocumentTooLarge, EncryptionError, OperationFailure
from asyncmongo.monitoring import CommandStartedEvent
from asyncmongo.testing import QueryAnalyzer, Standalone
from spec_tests.support.spec_json import load_spec_json
from spec_tests.unified.encryption import LOCAL_MASTER_KEY

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pymongocrypt") is None,
    reason="in-use encryption needs pymongocrypt (pip install 'asyncmongo[encryption]')",
)

LIMITS = Path(__file__).resolve().parent / "data" / "client-side-encryption" / "limits"
MIB2 = 2097152
MIB16 = 16777216


class Limits:
    def __init__(self, client: AsyncMongoClient[Any], events: list[Any]) -> None:
        self.coll = client.db.coll
        self.events = events

    def inserts(self) -> int:
        return sum(1 for e in self.events
                   if isinstance(e, CommandStartedEvent) and e.command_name == "insert")


@pytest.fixture
async def limits() -> AsyncIterator[Limits]:
    from asyncmongo.encryption import AutoEncryptionOpts

    events: list[Any] = []
    async with Standalone() as server, QueryAnalyzer() as analyzer:
        async with AsyncMongoClient(server.uri) as client:
            await client.db.create_collection(
                "coll", validator={"$jsonSchema": load_spec_json(LIMITS / "limits-schema.json")})
            await client.keyvault.datakeys.insert_one(load_spec_json(LIMITS / "limits-key.json"))
        opts = AutoEncryptionOpts({"local": {"key": LOCAL_MASTER_KEY}}, "keyvault.datakeys",
                                  **analyzer.auto_encryption_options())
        async with AsyncMongoClient(server.uri, auto_encryption_opts=opts,
                                    event_listeners=[events.append]) as encrypted:
            yield Limits(encrypted, events)


def _limits_doc(_id: str, size: int) -> dict[str, Any]:
    doc: dict[str, Any] = load_spec_json(LIMITS / "limits-doc.json")
    return {**doc, "_id": _id, "unencrypted": "a" * size}


async def test_over_2mib_under_16mib_single_inserts(limits: Limits) -> None:
    await limits.coll.insert_one({"_id": "over_2mib_under_16mib", "unencrypted": "a" * MIB2})
    await limits.coll.insert_one(_limits_doc("encryption_exceeds_2mib", MIB2 - 2000))
    stored = await limits.coll.find_one({"_id": "encryption_exceeds_2mib"})
    assert stored is not None and stored["00"] == _limits_doc("x", 0)["00"]


async def test_bulk_writes_split_after_the_first_document(limits: Limits) -> None:
    await limits.coll.insert_many([{"_id": "over_2mib_1", "unencrypted": "a" * MIB2},
                                   {"_id": "over_2mib_2", "unencrypted": "a" * MIB2}])
    assert limits.inserts() == 2
    await limits.coll.insert_many([_limits_doc("encryption_exceeds_2mib_1", MIB2 - 2000),
                                   _limits_doc("encryption_exceeds_2mib_2", MIB2 - 2000)])
    assert limits.inserts() == 4


async def test_just_under_16mib_succeeds_and_encryption_past_it_fails(limits: Limits) -> None:
    await limits.coll.insert_one({"_id": "under_16mib", "unencrypted": "a" * (MIB16 - 2000)})
    with pytest.raises((DocumentTooLarge, EncryptionError, OperationFailure)) as info:
        await limits.coll.insert_one(_limits_doc("encryption_exceeds_16mib", MIB16 - 2000))
    if isinstance(info.value, OperationFailure):
        assert info.value.code in (2, 10334)
    assert await limits.coll.count_documents({"_id": "encryption_exceeds_16mib"}) == 0


@pytest.mark.skip(reason="steps 7 and 8 insert into a Queryable Encryption collection "
                  "(limits-encryptedFields.json) with client bulkWrite: asyncmongo.testing has "
                  "no encrypted collections and its QueryAnalyzer no encryptedFields analysis")
async def test_queryable_encryption_bulk_write_splits() -> None:
    raise AssertionError("not run")

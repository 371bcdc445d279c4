"""Client-side encryption prose test 6, "Corpus Test", with the vendored corpus
(spec_tests/data/client-side-encryption/corpus), against asyncmongo.testing's Standalone,
its QueryAnalyzer as mongocryptd and the simulated aws, azure, gcp and kmip KMS servers, in
both schema modes of the test: the remote schema (the collection's ``$jsonSchema``
validator, read by listCollections) and the local one (``schema_map``, step 9).

Every row of corpus.json (714 of them: 5 KMS providers x BSON types x algorithms x auto or
explicit x key by id or by alternate name) is checked: an allowed value is encrypted (stored
as a subtype-6 Binary naming the corpus key and the row's algorithm) and decrypts back to
exactly the corpus value, its BSON type included; a disallowed explicit encryption raises
and the plaintext is stored; auto-decryption of the whole document gives back the corpus.

One departure, forced by the test data. The corpus keys of aws, azure, gcp and kmip were
wrapped by MongoDB's real cloud KMS keys (and KMIP key "1" of its test server), which the
simulators cannot unwrap; only the ``local`` key is wrapped by the published
LOCAL_MASTERKEY. So the local key is inserted as given and every local row gets the full
step 8, including byte equality of deterministic ciphertexts with corpus-encrypted.json and
decryption of corpus-encrypted.json's values. For the other providers the test creates data
keys through the simulated KMS servers and stores them under the corpus keys' ``_id`` UUIDs
and keyAltNames, so every key reference of the corpus (by UUID, by alternate name and by
the schema's JSON pointers) still resolves; their key material differs from the corpus
keys', so their deterministic ciphertexts cannot equal corpus-encrypted.json's bytes and
corpus-encrypted.json's ciphertexts for them cannot be decrypted. In place of those two
checks, each of their deterministic ciphertexts must equal an explicit deterministic
encryption of the corpus value with the same key (determinism, and automatic and explicit
encryption agreeing), and every allowed value must decrypt to the corpus value.
"""

from __future__ import annotations

import base64
import importlib.util
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson import encode
from asyncmongo.bson.binary import UUID_SUBTYPE, Binary
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.encryption import Algorithm, AsyncClientEncryption, AutoEncryptionOpts
from asyncmongo.errors import EncryptionError
from asyncmongo.testing import QueryAnalyzer, Standalone
from spec_tests.support.spec_json import load_spec_json
from spec_tests.unified.encryption import LOCAL_MASTER_KEY
from tests.encryption.kms_env import KmsCerts, KmsServers, kms_servers, make_certs

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pymongocrypt") is None,
    reason="in-use encryption needs pymongocrypt (pip install 'asyncmongo[encryption]')",
)

CORPUS = Path(__file__).resolve().parent / "data" / "client-side-encryption" / "corpus"
KEY_VAULT = "keyvault.datakeys"
PROVIDERS = ("local", "aws", "azure", "gcp", "kmip")
#: Step 5: the corpus keys' ``_id``s, by provider.
KEY_IDS = {name: Binary(base64.b64decode(f"{name.upper()}".ljust(22, "A") + "=="), UUID_SUBTYPE)
           for name in PROVIDERS}
ALGORITHMS = {"det": Algorithm.AEAD_AES_256_CBC_HMAC_SHA_512_Deterministic,
              "rand": Algorithm.AEAD_AES_256_CBC_HMAC_SHA_512_Random}
#: The first byte of an FLE1 ciphertext (BSON binary subtype 6), by algorithm.
CIPHERTEXT_TYPE = {"det": 1, "rand": 2}
#: Fields of the corpus that are not rows: copied as they are (step 5).
PLAIN_FIELDS = frozenset({"_id", *(f"altname_{name}" for name in PROVIDERS)})


def _bson(value: Any) -> bytes:
    """``value`` as BSON, so comparisons see its BSON type (True is not 1, a Symbol is not
    a str, an Int64 is not an int)."""
    return encode({"v": value})


def _same(actual: Any, expected: Any) -> bool:
    return _bson(actual) == _bson(expected)


@dataclass
class Tally:
    """What was checked, by provider and kind, for the report and the completeness check."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, what: str, row: Mapping[str, Any]) -> None:
        self.counts[f"{row['kms']}:{what}"] += 1

    def total(self, what: str) -> int:
        return sum(n for key, n in self.counts.items() if key.endswith(f":{what}"))


class Corpus:
    """The corpus test's objects: ``client`` (no encryption), ``client_encrypted``,
    ``client_encryption`` and the loaded corpus files."""

    def __init__(self, client: AsyncMongoClient[Any], client_encrypted: AsyncMongoClient[Any],
                 client_encryption: AsyncClientEncryption) -> None:
        self.client = client
        self.client_encrypted = client_encrypted
        self.client_encryption = client_encryption
        self.corpus: dict[str, Any] = load_spec_json(CORPUS / "corpus.json")
        self.tally = Tally()

    def rows(self) -> dict[str, dict[str, Any]]:
        return {name: row for name, row in self.corpus.items() if name not in PLAIN_FIELDS}

    async def copy_with_explicit_encryption(self) -> dict[str, Any]:
        """Step 5: ``corpus_copied``, the explicit rows encrypted by client_encryption."""
        copied: dict[str, Any] = {}
        for name, row in self.corpus.items():
            if name in PLAIN_FIELDS or row["method"] == "auto":
                copied[name] = row
                continue
            copied[name] = {**row, "value": await self.explicit(name, row)}
        return copied

    async def explicit(self, name: str, row: Mapping[str, Any]) -> Any:
        """The row's value encrypted (allowed), or the value itself after checking that
        encryption is refused (not allowed)."""
        kms = row["kms"]
        by = ({"key_id": KEY_IDS[kms]} if row["identifier"] == "id"
              else {"key_alt_name": kms})
        try:
            encrypted = await self.client_encryption.encrypt(
                row["value"], ALGORITHMS[row["algo"]], **by)
        except EncryptionError:
            assert not row["allowed"], f"{name}: allowed, but explicit encryption failed"
            self.tally.add("explicit refused", row)
            return row["value"]
        assert row["allowed"], f"{name}: not allowed, but explicit encryption succeeded"
        self.tally.add("explicit encrypted", row)
        return encrypted

    async def check_stored(self, stored: Mapping[str, Any],
                           expected: Mapping[str, Any]) -> None:
        """Step 8 for every row: ``stored`` is what the server holds (read by ``client``),
        ``expected`` is corpus-encrypted.json."""
        for name, row in self.rows().items():
            actual = stored[name]["value"]
            wanted = expected[name]["value"]
            if not row["allowed"]:
                assert _same(actual, row["value"]) and _same(actual, wanted), \
                    f"{name}: a disallowed value must be stored as it is"
                self.tally.add("stored plaintext", row)
                continue
            self.check_ciphertext(name, row, actual)
            if row["algo"] == "rand":
                assert actual != wanted, f"{name}: random ciphertexts must differ"
            decrypted = await self.client_encryption.decrypt(actual)
            assert _same(decrypted, row["value"]), f"{name}: decrypts to {decrypted!r}"
            if row["kms"] == "local":
                await self.check_against_corpus_ciphertext(name, row, actual, wanted)
            else:
                await self.check_determinism(name, row, actual)
            self.tally.add("stored ciphertext decrypted", row)

    def check_ciphertext(self, name: str, row: Mapping[str, Any], actual: Any) -> None:
        """An FLE1 ciphertext: subtype 6, the row's algorithm, the corpus key's UUID."""
        assert isinstance(actual, Binary) and actual.subtype == 6, f"{name}: not encrypted"
        raw = bytes(actual)
        assert raw[0] == CIPHERTEXT_TYPE[row["algo"]], f"{name}: wrong algorithm byte"
        assert raw[1:17] == bytes(KEY_IDS[row["kms"]]), f"{name}: encrypted with another key"

    async def check_against_corpus_ciphertext(self, name: str, row: Mapping[str, Any],
                                              actual: Binary, wanted: Any) -> None:
        """The local key is the corpus's own: deterministic ciphertexts equal
        corpus-encrypted.json's byte for byte, and its ciphertexts decrypt to the same
        value as ours."""
        if row["algo"] == "det":
            assert actual == wanted, f"{name}: deterministic ciphertext differs from the corpus"
            self.tally.add("deterministic equals corpus-encrypted", row)
        from_corpus = await self.client_encryption.decrypt(wanted)
        assert _same(from_corpus, row["value"]), f"{name}: corpus ciphertext decrypts wrongly"
        self.tally.add("corpus-encrypted decrypted", row)

    async def check_determinism(self, name: str, row: Mapping[str, Any],
                                actual: Binary) -> None:
        """aws, azure, gcp, kmip: the key material is the simulator-wrapped key's, not the
        corpus's (module docstring), so corpus-encrypted.json's bytes are out of reach;
        a deterministic ciphertext must equal a fresh explicit encryption with the same key."""
        if row["algo"] != "det":
            return
        again = await self.client_encryption.encrypt(
            row["value"], ALGORITHMS["det"], key_id=KEY_IDS[row["kms"]])
        assert again == actual, f"{name}: deterministic encryption is not deterministic"
        self.tally.add("deterministic equals re-encryption", row)


async def _set_up_key_vault(client: AsyncMongoClient[Any],
                            client_encryption: AsyncClientEncryption, kms: KmsServers) -> None:
    """Step 3: corpus-key-local.json as given; for the other providers a data key made by
    the simulated KMS, stored under the corpus key's ``_id`` and keyAltNames (the module
    docstring says why)."""
    vault = client.keyvault.datakeys
    await vault.drop()
    await vault.insert_one(load_spec_json(CORPUS / "corpus-key-local.json"))
    for name in PROVIDERS[1:]:
        corpus_key = load_spec_json(CORPUS / f"corpus-key-{name}.json")
        key_id = await client_encryption.create_data_key(name, kms.master_key(name))
        made = await vault.find_one({"_id": key_id})
        assert made is not None
        await vault.delete_one({"_id": key_id})
        assert corpus_key["_id"] == KEY_IDS[name]
        await vault.insert_one({**made, "_id": corpus_key["_id"],
                                "keyAltNames": corpus_key["keyAltNames"]})


@pytest.fixture(scope="module")
def kms_certs(tmp_path_factory: pytest.TempPathFactory) -> KmsCerts:
    return make_certs(tmp_path_factory.mktemp("corpus-kms-certs"))


@pytest.fixture(params=["remote_schema", "local_schema"])
async def corpus(request: pytest.FixtureRequest, kms_certs: KmsCerts) -> AsyncIterator[Corpus]:
    """Steps 1-4, with the schema read from the collection (``remote_schema``) or given in
    ``schema_map`` (``local_schema``, step 9)."""
    schema = load_spec_json(CORPUS / "corpus-schema.json")
    async with Standalone() as server, QueryAnalyzer() as analyzer, \
            kms_servers(kms_certs) as kms:
        providers = {"local": {"key": LOCAL_MASTER_KEY}, **kms.providers()}
        async with AsyncMongoClient(server.uri) as client:
            await client.db.coll.drop()
            await client.db.create_collection("coll", validator={"$jsonSchema": schema})
            async with AsyncClientEncryption(providers, KEY_VAULT, client, CodecOptions(),
                                             kms_tls_options=kms.tls_options()) as encryption:
                await _set_up_key_vault(client, encryption, kms)
                schema_map = {"db.coll": schema} if request.param == "local_schema" else None
                opts = AutoEncryptionOpts(providers, KEY_VAULT, schema_map=schema_map,
                                          kms_tls_options=kms.tls_options(),
                                          **analyzer.auto_encryption_options())
                async with AsyncMongoClient(server.uri, auto_encryption_opts=opts) as encrypted:
                    yield Corpus(client, encrypted, encryption)


async def test_corpus(corpus: Corpus) -> None:
    """Steps 5-8: every row encrypted as allowed, refused as not, stored encrypted,
    decrypted back to the corpus."""
    rows = corpus.rows()
    assert len(rows) == 714
    copied = await corpus.copy_with_explicit_encryption()
    await corpus.client_encrypted.db.coll.insert_one(copied)

    decrypted = await corpus.client_encrypted.db.coll.find_one({"_id": copied["_id"]})
    assert decrypted is not None
    assert list(decrypted) == list(corpus.corpus)
    for name, value in corpus.corpus.items():
        assert _same(decrypted[name], value), f"{name}: auto-decrypted {decrypted[name]!r}"
    assert _same(decrypted, corpus.corpus)

    stored = await corpus.client.db.coll.find_one({"_id": copied["_id"]})
    assert stored is not None
    await corpus.check_stored(stored, load_spec_json(CORPUS / "corpus-encrypted.json"))

    tally = corpus.tally
    explicit = [row for row in rows.values() if row["method"] == "explicit"]
    assert tally.total("explicit encrypted") == sum(row["allowed"] for row in explicit)
    assert tally.total("explicit refused") == sum(not row["allowed"] for row in explicit)
    assert (tally.total("stored ciphertext decrypted") + tally.total("stored plaintext")
            == len(rows))
    local_det = sum(1 for row in rows.values()
                    if row["kms"] == "local" and row["allowed"] and row["algo"] == "det")
    assert tally.total("deterministic equals corpus-encrypted") == local_det
    print(f"corpus rows checked: {len(rows)}; " + ", ".join(
        f"{key}={n}" for key, n in sorted(tally.counts.items())))
